#!/usr/bin/env bash
# run204 (2026-12-02): the small-N rule taking the column tile N wide for N <= 32 (run 203) as the default,
# against the swapped tiles it took before (same split rule), on shapes run 203 did not time; the column tiles
# for N = 40-56 (forced) against the default's swapped ones; M <= 64 (the small-M rules' ground) forced; finer
# forced splits of the column tiles; then the GPU GEMM tests (the default's new tiles, unsplit and split).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run204/run204.sh
set -u
r="--host-gate --split-like-rule"
g="--host-gate"
export ITERS=30 WARMUP_MS=200
# A. New default against the swapped tiles of 64 / 128 / 256 rows of A the rule took before.
bash bench/gemm-ab.sh "256x8x4096,300x16x7168,1024x24x4096,2048x24x7168,3000x32x7168,4096x32x4096" "$g" "--tile swap-ab-64x64-tma-store $r"
bash bench/gemm-ab.sh "6144x8x4096,8192x32x7168,12288x24x7168,16384x16x4096" "$g" "--tile swap-ab-64x128-tma-store $r"
bash bench/gemm-ab.sh "65536x8x4096,24576x16x7168,32768x32x4096" "$g" "--tile swap-ab-64x256-tma-store $r"
# B. N = 40, 48, 56: the column tile N wide (forced) against the default's swapped tiles.
bash bench/gemm-ab.sh "2048x40x7168,8192x40x4096,16384x40x7168" "$g" "--tile cols-128x40-tma-store $r"
bash bench/gemm-ab.sh "1024x48x4096,4096x48x7168,16384x48x4096" "$g" "--tile cols-128x48-tma-store $r"
bash bench/gemm-ab.sh "2048x56x7168,8192x56x4096,12288x56x7168" "$g" "--tile cols-128x56-tma-store $r"
# C. M <= 64 (the small-M rules' tiles by default).
bash bench/gemm-ab.sh "1x8x4096,16x8x7168,64x8x7168" "$g" "--tile cols-128x8-tma-store $r"
bash bench/gemm-ab.sh "16x32x4096,64x32x7168" "$g" "--tile cols-128x32-tma-store $r"
# D. Finer splits than MIN_SPLIT_K_BLOCKS allows (forced), against the default's.
bash bench/gemm-ab.sh 1024x8x4096 "$g" "$g --tile cols-128x8-tma-store --split-last-wave 8" "$g --tile cols-128x8-tma-store --split-last-wave 16"
bash bench/gemm-ab.sh 2048x8x4096 "$g" "$g --tile cols-128x8-tma-store --split-last-wave 8"
bash bench/gemm-ab.sh 1024x16x7168 "$g" "$g --tile cols-128x16-tma-store --split-last-wave 14"
bash bench/gemm-ab.sh 256x8x7168 "$g" "$g --tile cols-128x8-tma-store --split-last-wave 16" "$g --tile cols-128x8-tma-store --split-last-wave 28"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
