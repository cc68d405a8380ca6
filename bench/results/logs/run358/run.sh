#!/usr/bin/env bash
# run358: the model map's lowest rows after run 357, back to back x20 behind the host gate (GPU time), two passes,
# --check in pass 1, against forced tiles: 256 x 5120 x 1280 (qwen2.5-32b tp4 o; 80 tiles of 128 x 128 unsplit),
# 256 x 1536 x 4096 (llama3-8b tp4 qkv; 64 x 128 in 2), 64 x 4096 x 3584 (llama3-8b tp4 down; 64 x 64 swapped in 2).
# carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
ab 256x5120x1280 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B" "--tile m64-narrow-tma-store --split-last-wave off $B" \
  "--tile cols-128x96-tma-store --split-last-wave off $B" "--tile swap-ab-128x128-tma-store --split-last-wave off $B"
ab 256x1536x4096 "$B" "--tile cols-128x64-tma-store --split-last-wave 2 $B" "--tile cols-128x48-tma-store --split-last-wave 2 $B" \
  "--tile swap-ab-64x64-tma-store --split-last-wave 2 $B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B"
ab 64x4096x3584 "$B" "--tile swap-ab-64x32-tma-store --split-last-wave off $B" "--tile swap-ab-64x64-tma-store --split-last-wave off $B" \
  "--tile swap-ab-64x16-tma-store --split-last-wave off $B"
