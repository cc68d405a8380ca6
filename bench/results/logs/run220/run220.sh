#!/usr/bin/env bash
# run220 (2026-12-02): the small-N column tiles' finer few-tiles split (TileConfig::few_tiles_slices, slices of 8
# K blocks within SMs / 2) as the default, on one H200: gpu_gemm, then bench gemm --check --host-gate on run 219's
# small-N shapes (expect the forced-8 column of run 219: 0.0086-0.0095 ms at K = 4096), and one rank's
# gemm-allreduce on two of them (the local path takes the same split).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run220/run220.sh
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm- > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$" $OUT/test-logs/*.log | head -10
bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json --check --host-gate --shape 64x8x4096,256x8x4096,1024x8x4096,128x16x4096,512x16x4096,256x8x7168,1024x8x7168,256x32x4096,1024x32x7168,2048x8x4096,1024x16x7168 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-170
timeout 100 bash bench/device-run.sh bench gemm-allreduce --gpus 1 --check --shape 64x8x4096,1024x8x4096 2>&1 | cut -c1-220 | tail -4
