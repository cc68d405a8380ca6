#!/usr/bin/env bash
# run340: two row blocks (M 193-256) above K = 5120, where the few-tiles rule splits 128 x 128 tiles in 2 or 4:
# the 64 x 128 tile unsplit or in 2 (forced) against the rule. M = 256 was 4-10% faster in all 4 measured (NOTES
# 42.5). Sampled from the picks on 132 SMs. carry [".gpu"].
set -u
S2=237x3768x11776,256x3936x10752,203x3952x6144,251x3840x12800,252x4136x6144,206x3752x14336,256x4096x8192,224x3584x9216
bash bench/gemm-ab.sh "$S2" "" "--tile m64-narrow-tma-store --split-last-wave off"
S4=237x1864x6656,239x1960x9216,214x1960x11264,218x1936x5632,206x1776x12800,240x2040x13312
bash bench/gemm-ab.sh "$S4" "" "--tile m64-narrow-tma-store --split-last-wave 2"
