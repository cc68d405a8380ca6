#!/usr/bin/env bash
# run255 (2026-12-03, one H200): the worst classes of run254's model map.
# A: M = 256-1024 on 128 x 128 / 128 x 256 tiles with 80 tiles (or a 36-tile last wave) on 132 SMs: forced split
#    counts (slices over more than one wave) against the default. Gated single calls, two passes.
# B: decode at N = 5120 (80 swapped 64-row tiles on 132 SMs, bytes in flight per SM): fitted tiles with up to 16
#    stages (.gpu-deep: branch deep-stages-16) against main's 8 (.gpu), back to back x20, gated, both orders.
# C: the same decode shapes on the swapped TMA-store twin, forced split counts.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh;
#       bash bench/pack-rev.sh deep-stages-16 .gpu-deep. Carry [".gpu", ".gpu-deep"].
set -u
export ITERS=10 WARMUP_MS=200
echo "#### A"
bash bench/gemm-ab.sh 256x5120x27648,256x5120x6912,256x3584x5120,256x1536x4096,256x10240x8192,256x55296x5120 \
  "--host-gate" "--host-gate --split-last-wave off" "--host-gate --split-last-wave 2" "--host-gate --split-last-wave 3" "--host-gate --split-last-wave 6"
bash bench/gemm-ab.sh 1024x1280x8192,1024x768x4096 "--host-gate" "--host-gate --tile narrow-tma-store --split-last-wave off" \
  "--host-gate --tile narrow-tma-store --split-last-wave 2" "--host-gate --tile narrow-tma-store --split-last-wave 3"
echo "#### B"
bash bench/gemm-ab-dirs.sh 1x5120x27648,16x5120x27648,64x5120x27648,1x5120x6912,1x5120x5120,64x5120x5120,1x8192x28672,1x4096x14336,16x14336x4096,64x768x4096,8x1024x3072 \
  "--host-gate --back-to-back 20 --check" .gpu .gpu-deep
echo "#### C"
bash bench/gemm-ab.sh 1x5120x27648,1x5120x6912,1x14336x4096 "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile swap-ab-64x8-tma-store --split-last-wave off" \
  "--host-gate --back-to-back 20 --tile swap-ab-64x8-tma-store --split-last-wave 3" "--host-gate --back-to-back 20 --tile swap-ab-64x8-tma-store --split-last-wave 8" \
  "--host-gate --back-to-back 20 --tile swap-ab-64x8-tma-store --split-last-wave 13"
for t in 16x5120x13824:swap-ab-64x16-tma-store 64x5120x6912:swap-ab-64x64-tma-store; do
  bash bench/gemm-ab.sh ${t%%:*} "--host-gate --back-to-back 20" \
    "--host-gate --back-to-back 20 --tile ${t#*:} --split-last-wave 3" "--host-gate --back-to-back 20 --tile ${t#*:} --split-last-wave 8"
done
