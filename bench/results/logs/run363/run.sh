#!/usr/bin/env bash
# run363 (branch clusters-2d): the swapped 64-row tiles in clusters along one or both dimensions
# (TileConfig::swapped_tma_store_clustered). 1) gpu_gemm in full (the engine's producer masks, stage-empty arrivals
# and scheduler changed for every clustered kernel), with the new clustered_swapped_tiles_match_reference.
# 2) back to back x20 behind the host gate, two passes, --check in pass 1: the default against the unclustered swapped
# 64 x 64 / 64 x 32 tile unsplit and its clustered twins. carry [".gpu"].
set -u
TEST_TIMEOUT=450 bash bench/device-run.sh tests gpu_gemm
grep -E "^test |test result" "$OUT/test-logs/"*gpu_gemm*.log
B="--host-gate --back-to-back 20"
F="--split-last-wave off $B"
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
ab 256x1536x4096,256x1280x8192,256x1792x5120,256x1024x4096,256x768x4096,128x2048x4096,192x1536x4096 "$B" \
  "--tile swap-ab-64x64-tma-store $F" "--tile swap-ab-64x64-tma-store-c2 $F" "--tile swap-ab-64x64-tma-store-c4 $F" \
  "--tile swap-ab-64x64-tma-store-c2x2 $F" "--tile swap-ab-64x64-tma-store-c4x2 $F" "--tile swap-ab-64x64-tma-store-c2x4 $F"
ab 64x4096x3584,64x2048x7168,64x1536x4096,64x6144x4096 "$B" \
  "--tile swap-ab-64x64-tma-store $F" "--tile swap-ab-64x64-tma-store-c2 $F" "--tile swap-ab-64x64-tma-store-c4 $F" \
  "--tile swap-ab-64x32-tma-store $F" "--tile swap-ab-64x32-tma-store-c4 $F" "--tile swap-ab-64x32-tma-store-c2x2 $F" \
  "--tile swap-ab-64x32-tma-store-c4x2 $F"
