#!/usr/bin/env bash
# run275 (2026-12-03, one H200; main cf11f50): NOTES 33.3's lead, more shapes: where the 64 x 256 TMA-store tile is the
# default unsplit at ragged M > 512 (more than half the SMs' tiles), against 128 x 128, the one-wave width W unsplit
# and 2W in 2 slices. Gated, back to back x20, two passes (the first --check). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
T() { echo "$B --tile cols-128x$1-tma-store${2:+ --split-last-wave $2}"; }
bash bench/gemm-ab.sh 520x1808x8192,654x1544x8192,899x1040x8192,654x1544x4096,899x1040x4096 "$B" "$B --tile narrow" "$(T 72)" "$(T 144 2)"
bash bench/gemm-ab.sh 520x2312x8192,654x1952x8192,780x1592x8192,913x1424x8192,780x1592x4096,913x1424x4096 "$B" "$B --tile narrow" "$(T 96)" "$(T 192 2)"
# Part 3 (33.4's other lead): W = 96 unsplit (the default) against 192 columns in 2 slices, K = 6912-14336, M = 384-1024.
bash bench/gemm-ab.sh 1024x1536x6912,1024x1536x8192,1024x1536x14336,768x2048x8192,768x2048x6912,512x3072x8192,512x3072x14336,384x4096x8192,384x4096x6912 "$B" "$(T 192 2)"
