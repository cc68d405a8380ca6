#!/usr/bin/env bash
# Session 49: runs 394 (short) and 395 in one device call, since each start is scarce (four refused before this).
# carry [".gpu", ".gpu-wc2"]: .gpu = main 2eedaa9 (gpu_gemm, gpu_gemm_allreduce), .gpu-wc2 = one-wave-wide-c2 61766cc
# (gpu_gemm). Each part is bounded so the whole stays inside one call's 600 s; the most wanted first.
set -u
# 1) run 394 short (the fair fused sweep at M halved; expectations in run.sh), then the bench::alloc check.
timeout 230 bash bench/results/logs/run394/run.sh short > "$OUT/run394-short.log" 2>&1; echo "run394 rc=$?"
grep -E "^ *(shape|M=|[0-9]+ x)|waves|PASS|FAIL|error" "$OUT/run394-short.log" | tail -40
timeout 40 env GPU_DIR=.gpu bash bench/device-run.sh bench gemm-allreduce --share-gpu --iters 1 --shape 393216x393216x4096 2>&1 | tail -3
# 2) run 395 part 1: main against the branch (expectations in bench/results/logs/run395/run.sh).
timeout 170 env CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 236x11400x15360,250x12000x16384,205x12800x18432,256x13824x15360,230x14600x17408,222x11600x19456,248x13104x16384,213x12352x20480 "--host-gate --back-to-back 20" .gpu .gpu-wc2 > "$OUT/ab395.log" 2>&1
echo "ab395 rc=$? PASS=$(grep -c PASS "$OUT/ab395.log")"; cat "$OUT/ab395.log" | cut -c1-140
# 3) gpu_gemm on the branch (includes run 393's spot check with its K-aware floor, and the new 184/216-c2 cases).
TEST_TIMEOUT=130 GPU_DIR=.gpu-wc2 bash bench/device-run.sh tests gpu_gemm | tail -3
# 4) gpu_gemm_allreduce on main, if time is left (expected 12 passed, the 4 two-GPU ones failing).
TEST_TIMEOUT=75 bash bench/device-run.sh tests gpu_gemm_allreduce | tail -3
grep -hE "^test .*FAIL|panicked|test result" "$OUT/test-logs/"*.log | head -20
