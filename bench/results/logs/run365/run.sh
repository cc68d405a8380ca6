#!/usr/bin/env bash
# run365 (main a288f03, one H200): M <= 64 with N large enough that B streams from DRAM (64 x 4096 x 3584: B is
# 29 MB, ~6-7 us at 4-4.8 TB/s; ours 12.7 on the 64 x 64 swapped tile in 2 slices, cuBLAS 11.5; the 64 x 32 tile
# unsplit 11.3 in runs 363-364). The default against the swapped tile of two row blocks of ceil(M / 2) (rounded up to
# 8) unsplit, and at M = 64 the 64 x 64 tile unsplit; back to back x20 behind the host gate, two passes, --check in
# pass 1. carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
F="--split-last-wave off $B"
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
ab 64x4096x3584,64x3072x4096,64x3584x4096,64x4096x4096,64x4096x7168,64x4096x2048,64x4096x1024,56x2560x8192,64x2560x8192,64x3072x14336,60x3328x6144,64x2048x4096,64x8192x4096 \
  "$B" "--tile swap-ab-64x32-tma-store $F" "--tile swap-ab-64x64-tma-store $F"
ab 48x4096x4096,40x3584x7168,36x4096x5120,48x3072x8192 "$B" "--tile swap-ab-64x24-tma-store $F"
ab 32x4096x4096,32x3584x7168,32x3072x4096 "$B" "--tile swap-ab-64x16-tma-store $F"
ab 16x4096x4096,16x3584x7168 "$B" "--tile swap-ab-64x8-tma-store $F"
