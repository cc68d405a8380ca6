#!/usr/bin/env bash
# run331 (prepared in session 39, not yet run): the model map's lowest rows of run 328 (one call per step) again,
# back to back x20 behind the host gate, so the GPU's time alone; then alternatives at 1024 x 896 x 5120 (128 x 128 in
# 2, 112 CTAs, 0.79 of cuBLAS): 112 columns in 2 (128 CTAs; run 329: 7% faster, outside the rule), 56 unsplit, the
# 64 x 128 tile unsplit (112 tiles). carry [".gpu"].
set -u
L="64x768x4096,256x896x5120,64x256x7168,1024x256x7168,1024x896x5120,256x1536x4096,256x768x4096,256x1792x5120,64x4096x3584,1024x768x4096"
PASSES=2 bash bench/gemm-ab.sh "$L" "" "--host-gate --back-to-back 20"
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
ab 1024x896x5120 "" "--tile cols-128x112-tma-store --split-last-wave 2" "--tile cols-128x56-tma-store --split-last-wave off" "--tile m64-narrow-tma-store --split-last-wave off"
