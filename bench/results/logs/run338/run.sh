#!/usr/bin/env bash
# run338: does the 64 x 128 tile pay above K = 5120 at few row blocks? Runs 332-335's 128 x 128 moves at K > 5120
# won 4-10% at M <= 384 (4 shapes) and lost only at 994 x 944 and 2601 x 352 (16 and 41 row blocks of 64, run 337's
# stragglers). Rule (128 x 128 in 2 or 4) against the 64 x 128 tile unsplit or in 2, M 256-512, K 6144-14336,
# sampled from the picks on 132 SMs, plus the model map's 256 x 4096 x 7168. carry [".gpu"].
set -u
S2=472x1736x10240,328x2144x10240,496x1640x14336,360x2432x6144,488x1808x7168,384x2576x8192,472x2008x10240,256x4096x7168,512x2048x8192,256x4096x12288
bash bench/gemm-ab.sh "$S2" "" "--tile m64-narrow-tma-store --split-last-wave off"
S4=328x1408x14336,456x968x6144,368x1288x14336,472x840x6144,472x976x6144,352x1280x12288,512x984x6144
bash bench/gemm-ab.sh "$S4" "" "--tile m64-narrow-tma-store --split-last-wave 2"
