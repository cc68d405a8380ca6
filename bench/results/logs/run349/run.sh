#!/usr/bin/env bash
# run349: M 193-2048, where the few-tiles split takes the 64 x 64 swapped tile in 2 or 3 slices (random shapes,
# half with M / N or N / M >= 3): against the 128 x 64 tiles, swapped (128 rows of B) and not (128 rows of A), in
# twice the slices (as many CTAs, half the tiles; run 348: 1024 x 256 and 256 x 896 faster with the 128 rows along
# the shorter side, 512 x 512 not). Back to back x20 behind the host gate, two passes. carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
ab 1298x160x5120 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 3 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 905x216x7744 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 197x792x12096 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 795x200x10880 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 236x808x9024 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 448x488x7232 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 302x568x7360 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 489x384x11840 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 434x408x6976 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 331x696x6144 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 3 $B" "--tile cols-128x64-tma-store --split-last-wave 4 $B"
ab 894x192x7104 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 6 $B"
ab 875x192x10304 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 4 $B" "--tile cols-128x64-tma-store --split-last-wave 6 $B"
ab 790x168x6656 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 5 $B" "--tile cols-128x64-tma-store --split-last-wave 6 $B"
ab 332x384x14336 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 6 $B" "--tile cols-128x64-tma-store --split-last-wave 6 $B"
ab 218x560x6336 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 6 $B" "--tile cols-128x64-tma-store --split-last-wave 6 $B"
ab 368x408x6720 "$B" "--tile swap-ab-128x64-tma-store --split-last-wave 5 $B" "--tile cols-128x64-tma-store --split-last-wave 6 $B"
