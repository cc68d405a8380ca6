#!/usr/bin/env bash
# run376: M = 256 with wide N, where the default's 128-row column tiles (128 x 224 / 216, 3 stages) run 0.86-0.91 of
# cuBLAS (run 375: 256 x 14336 x 4096 53.5 us vs 46.2). Each B tile is read by two CTAs (the two row blocks); the
# swapped 128 x 256 tile covers all 256 rows of A in one tile, so B crosses once. Per shape: the default,
# swap-ab-128xR-tma-store (R = M) and its -c2 twin (pairs sharing A), wide-tma-store and wide-tma-store-c2, back to back
# x20 behind the host gate, two passes (--check in the first). main 73b9faf. carry [".gpu"].
set -u
one() { # SHAPE R
  PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" \
    "--host-gate --back-to-back 20 --tile swap-ab-128x$2-tma-store" \
    "--host-gate --back-to-back 20 --tile swap-ab-128x$2-tma-store-c2" \
    "--host-gate --back-to-back 20 --tile wide-tma-store" \
    "--host-gate --back-to-back 20 --tile wide-tma-store-c2"
}
one 256x14336x4096 256
one 256x14336x8192 256
one 256x27648x5120 256
one 256x28672x4096 256
one 256x8192x8192 256
one 256x5120x8192 256
one 240x14336x4096 240
one 224x10240x8192 224
