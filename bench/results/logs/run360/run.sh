#!/usr/bin/env bash
# run360: as run 359, but the column width for one wave at two row blocks given explicitly (cols-fit took another):
# C = ceil(N / (132 / 2)) rounded up to 8 (run 358: 128 x 80 at 256 x 5120 x 1280, 21% faster). carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
echo "#### 237x4904x576"; bash bench/gemm-ab.sh 237x4904x576 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
echo "#### 231x4776x1344"; bash bench/gemm-ab.sh 231x4776x1344 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
echo "#### 254x4256x704"; bash bench/gemm-ab.sh 254x4256x704 "$B" "--tile cols-128x72-tma-store --split-last-wave off $B"
echo "#### 218x4776x1216"; bash bench/gemm-ab.sh 218x4776x1216 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
echo "#### 217x4784x1920"; bash bench/gemm-ab.sh 217x4784x1920 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
echo "#### 255x4936x1408"; bash bench/gemm-ab.sh 255x4936x1408 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
echo "#### 255x5136x1984"; bash bench/gemm-ab.sh 255x5136x1984 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
echo "#### 253x4864x1024"; bash bench/gemm-ab.sh 253x4864x1024 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
echo "#### 238x4472x960"; bash bench/gemm-ab.sh 238x4472x960 "$B" "--tile cols-128x72-tma-store --split-last-wave off $B"
echo "#### 219x4400x1216"; bash bench/gemm-ab.sh 219x4400x1216 "$B" "--tile cols-128x72-tma-store --split-last-wave off $B"
echo "#### 256x5120x1280"; bash bench/gemm-ab.sh 256x5120x1280 "$B" "--tile cols-128x80-tma-store --split-last-wave off $B"
