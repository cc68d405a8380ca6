#!/usr/bin/env bash
# run267 (2026-12-03, one H200; main with the two-row-blocks rule at K = 2048..14336): 32.4's lead, two K-slices of
# twice the rule's width where that width is at most 160 columns (5 stages), at K >= 6912: the rule's one-wave
# width W unsplit (forced: the packed binary's rule stops at K = 8192) against 2W split in 2. Back to back x20, gated, two passes (the first --check).
# Carry [".gpu"]. ~2.5 min.
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
T() { echo "$B --tile cols-128x$1-tma-store${2:+ --split-last-wave $2}"; }
bash bench/gemm-ab.sh 256x3072x8192,256x3072x14336 "$(T 48)" "$(T 96 2)"
bash bench/gemm-ab.sh 256x3584x8192,256x3584x14336 "$(T 56)" "$(T 112 2)"
bash bench/gemm-ab.sh 256x4352x8192,256x4352x6912 "$(T 72)" "$(T 144 2)"
bash bench/gemm-ab.sh 256x4608x8192,256x4608x14336,256x4608x6912 "$(T 72)" "$(T 144 2)"
bash bench/gemm-ab.sh 224x5120x8192,256x5120x14336,200x5120x6912 "$(T 80)" "$(T 160 2)"
