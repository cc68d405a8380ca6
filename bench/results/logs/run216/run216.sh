#!/usr/bin/env bash
# run216 (2026-12-02): after helper-51's review of the local path (one rank): gpu_gemm_allreduce again (the traced
# test now traces the one-shot kernel by name on one rank and checks the local path's refusal; the four two-GPU tests
# fail by design on one GPU), then the bench on one rank with --trace (the local path is skipped with a note) and a
# forced plain-GEMM tile (cols-128x176-tma-store-c2 on the local path), --check.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run216/run216.sh
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce > /dev/null 2>&1
grep -E "^test .*(ok|FAILED)$|^test result" $OUT/test-logs/*.log | sed 's/^.*\.log://'
grep -E "needed|panicked at" $OUT/test-logs/*.log | sed 's/^.*\.log://' | head -12
bash bench/device-run.sh bench gemm-allreduce --check --gpus 1 --trace --filter "M=129" 2>&1 | cut -c1-220 | tail -6
bash bench/device-run.sh bench gemm-allreduce --check --gpus 1 --shape 2048x7168x9216 --tile cols-128x176-tma-store-c2 2>&1 | cut -c1-220 | tail -4
