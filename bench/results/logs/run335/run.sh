#!/usr/bin/env bash
# run335: run 334's three losses of the 64 x 128 tile (2601 x 352 x 11776, 994 x 944 x 12288: 128 x 128 in 2 ->
# unsplit, 22-24% slower; 436 x 920 x 11264: 64 x 256 in 4 -> 2, 15%) swept in K, forced both ways, to find where
# the gain turns. carry [".gpu"].
set -u
A=2601x352x6144,2601x352x8192,2601x352x10240,2601x352x11776,2601x352x14336,994x944x6144,994x944x8192,994x944x10240,994x944x12288,994x944x14336
bash bench/gemm-ab.sh "$A" "--tile narrow-tma-store --split-last-wave 2" "--tile m64-narrow-tma-store --split-last-wave off"
B=436x920x7168,436x920x9216,436x920x11264,436x920x14336
bash bench/gemm-ab.sh "$B" "--tile m64-wide-tma-store --split-last-wave 4" "--tile m64-narrow-tma-store --split-last-wave 2"
