#!/usr/bin/env bash
# run323: long K, narrow N, few row blocks (run322: 128 x 128 in 2 slices 1-19% ahead of the one-wave 48-56 columns
# at K = 14336, mixed at 8192; cuBLAS 10-30% ahead of both at K = 14336). Variants: N covered by one or two column
# tiles with more K slices (A read once or twice), against the default and 128 x 128 in 2. carry [".gpu"].
set -u
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
T=--tile
ab 2994x224x14336 "" "$T narrow-tma-store --split-last-wave 2" "$T cols-128x224-tma-store --split-last-wave 4" "$T cols-128x224-tma-store --split-last-wave 5" "$T cols-128x112-tma-store --split-last-wave 2"
ab 1454x496x14336 "" "$T narrow-tma-store --split-last-wave 2" "$T cols-128x248-tma-store --split-last-wave 4" "$T cols-128x248-tma-store --split-last-wave 5" "$T cols-128x168-tma-store --split-last-wave 3"
ab 1202x584x14336 "" "$T narrow-tma-store --split-last-wave 2" "$T cols-128x200-tma-store --split-last-wave 4" "$T cols-128x152-tma-store --split-last-wave 3"
ab 2203x328x14336 "" "$T narrow-tma-store --split-last-wave 2" "$T cols-128x168-tma-store --split-last-wave 3" "$T cols-128x112-tma-store --split-last-wave 2"
ab 2994x224x8192 "" "$T narrow-tma-store --split-last-wave 2" "$T cols-128x224-tma-store --split-last-wave 4" "$T cols-128x224-tma-store --split-last-wave 5"
ab 1454x496x8192 "" "$T narrow-tma-store --split-last-wave 2" "$T cols-128x248-tma-store --split-last-wave 4" "$T cols-128x248-tma-store --split-last-wave 5"
