#!/usr/bin/env bash
# run217 (2026-12-02): the session's final main (review mend: CommPath::fused_for, TileConfig::cols_clusters; same
# kernels and picks per the CPU tests) on one H200: gpu_gemm, gpu_gemm_allreduce (the four two-GPU tests fail by
# design on one GPU), and README command 1 (one rank: the local path), --check.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run217/run217.sh
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result" $OUT/test-logs/*.log
grep -hE "^test .*FAILED$|needed" $OUT/test-logs/*.log | head -10
timeout 120 bash bench/device-run.sh bench gemm-allreduce --check 2>&1 | cut -c1-160 | tail -20
