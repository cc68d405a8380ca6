#!/usr/bin/env bash
# run264 (one H200, the .gpu of main 60d716b): M = 256 (two row blocks of 128) where the default's 128 x 128 or
# 128 x 256 tiles leave SMs idle or need more than one wave: column-fitted 128-row TMA-store tiles sized so the
# tiles fill one wave (W_u, unsplit) or half of one (W_s, every tile in 2 K-slices), against the default.
# Back to back x20, gated, two passes (the first --check). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
T() { echo "$B --tile cols-128x$1-tma-store${2:+ --split-last-wave $2}"; }
N() { echo "$B --tile narrow-tma-store${1:+ --split-last-wave $1}"; }
bash bench/gemm-ab.sh 256x5120x8192,256x5120x5120,256x5120x6912,256x5120x3456 "$B" "$(T 80)" "$(T 160 2)"
bash bench/gemm-ab.sh 256x6144x4096,256x6144x8192 "$B" "$(T 96)" "$(T 192 2)"
bash bench/gemm-ab.sh 256x7168x4096,256x7168x8192,256x7168x5120 "$B" "$(T 112)" "$(T 224 2)"
bash bench/gemm-ab.sh 256x6912x5120 "$B" "$(T 112)" "$(T 216 2)"
bash bench/gemm-ab.sh 256x10240x8192,256x10240x4096 "$B" "$(T 160)" "$(T 248)"
bash bench/gemm-ab.sh 256x14336x4096,256x14336x8192 "$B" "$(T 224)" "$(T 112 2)"
bash bench/gemm-ab.sh 256x3584x4096,256x3584x5120 "$B" "$(T 56)" "$(T 112 2)"
bash bench/gemm-ab.sh 256x4096x4096,256x4096x7168 "$B" "$(T 64)" "$(N 2)"
bash bench/gemm-ab.sh 256x3072x4096 "$B" "$(T 48)" "$(T 96 2)"
