#!/usr/bin/env bash
# run215 (2026-12-02): one rank's fused call is the plain GEMM alone (CommPath::Local; uncommitted build on b70a043).
# Run 214 timed README command 1 on one H200 (world size 1): the fused one-shot kernel at 0.63-0.97x of cuBLAS + NCCL
# (its communication CTAs only copy the own partial). Expected now: fused = our plain default GEMM unsplit, so
# ~0.92-1.02x (our GEMM against cuBLAS; NCCL's one-rank all-reduce is ~2 us).
# (1) The README's first command again. (2) gpu_gemm_allreduce (one GPU: the four two-GPU tests fail by design under
# MKERNEL_REQUIRE_GPU=1, "2 needed"; the others, one_rank_runs_the_plain_gemm new, must pass).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run215/run215.sh
set -u
timeout 200 bash bench/device-run.sh bench gemm-allreduce --check 2>&1 | cut -c1-220 | tail -40
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce 2>&1 | grep -E "^ok|passed|failed|panicked|FAIL|needed" | tail -20
grep -E "^ok |^test .*(ok|FAILED)" $OUT/test-logs/*.log | head -30
