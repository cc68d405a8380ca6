#!/usr/bin/env bash
# run359: two row blocks (M 129-256), K < 4096, where the default is the 128 x 128 tile unsplit on at most 88 tiles
# (2/3 of 132 SMs): the column-fitted tile for one wave (--tile cols-fit-tma-store, unsplit) against it, on 10 random
# such shapes (4% of random M 129-256, N 1024-8192, K 512-4095) and run 358's 256 x 5120 x 1280 (128 x 80: 21% faster).
# Back to back x20 behind the host gate, two passes, --check in pass 1. carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
for s in 237x4904x576 231x4776x1344 254x4256x704 218x4776x1216 217x4784x1920 255x4936x1408 255x5136x1984 253x4864x1024 238x4472x960 219x4400x1216 256x5120x1280; do
  echo "#### $s"; bash bench/gemm-ab.sh "$s" "$B" "--tile cols-fit-tma-store --split-last-wave off $B"
done
