#!/usr/bin/env bash
# run324: where the one-wave width W = 48-64 stays unsplit because 2W in 2 slices overfills one wave (K >= 6912):
# the narrowest width >= 2W whose tiles x 2 fit one wave (W2) in 2 slices, and x 3 (W3, <= 200 columns) in 3, against
# the default (run 323: 112 in 2 and 152-168 in 3 were 10-23% ahead of W = 48 at K = 14336). carry [".gpu"].
set -u
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
ab 2994x224x8192 "" "--tile cols-128x112-tma-store --split-last-wave 2"  # W=48 W2=112 (96 CTAs) W3=224
ab 2049x296x8192 "" "--tile cols-128x104-tma-store --split-last-wave 2" "--tile cols-128x152-tma-store --split-last-wave 3"  # W=48 W2=104 (102 CTAs) W3=152
ab 1454x496x8192 "" "--tile cols-128x104-tma-store --split-last-wave 2" "--tile cols-128x168-tma-store --split-last-wave 3"  # W=48 W2=104 (120 CTAs) W3=168
ab 1265x608x8192 "" "--tile cols-128x104-tma-store --split-last-wave 2" "--tile cols-128x152-tma-store --split-last-wave 3"  # W=48 W2=104 (120 CTAs) W3=152
ab 1720x560x8192 "" "--tile cols-128x144-tma-store --split-last-wave 2" "--tile cols-128x192-tma-store --split-last-wave 3"  # W=64 W2=144 (112 CTAs) W3=192
ab 2126x400x8192 "" "--tile cols-128x136-tma-store --split-last-wave 2" "--tile cols-128x200-tma-store --split-last-wave 3"  # W=64 W2=136 (102 CTAs) W3=200
ab 2917x320x8192 "" "--tile cols-128x160-tma-store --split-last-wave 2"  # W=64 W2=160 (92 CTAs) W3=None
ab 1510x512x7168 "" "--tile cols-128x104-tma-store --split-last-wave 2" "--tile cols-128x176-tma-store --split-last-wave 3"  # W=48 W2=104 (120 CTAs) W3=176
ab 2861x296x7168 "" "--tile cols-128x152-tma-store --split-last-wave 2"  # W=64 W2=152 (92 CTAs) W3=None
ab 2259x400x6912 "" "--tile cols-128x136-tma-store --split-last-wave 2" "--tile cols-128x200-tma-store --split-last-wave 3"  # W=64 W2=136 (108 CTAs) W3=200
ab 3043x240x14336 "" "--tile cols-128x120-tma-store --split-last-wave 2"  # W=48 W2=120 (96 CTAs) W3=240
ab 2889x312x14336 "" "--tile cols-128x160-tma-store --split-last-wave 2"  # W=64 W2=160 (92 CTAs) W3=None
ab 1454x496x14336 "" "--tile cols-128x104-tma-store --split-last-wave 2" "--tile cols-128x168-tma-store --split-last-wave 3"  # W=48 W2=104 (120 CTAs) W3=168
ab 1202x584x14336 "" "--tile cols-128x104-tma-store --split-last-wave 2" "--tile cols-128x152-tma-store --split-last-wave 3"  # W=48 W2=104 (120 CTAs) W3=152
