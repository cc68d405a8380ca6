#!/usr/bin/env bash
# run375: at M = 256 (two 128-row blocks) the model map's unsplit rows run 0.87-0.93 of cuBLAS (run 357). Does the
# 2-CTA twin (B multicast between the two row blocks: TileConfig::clustered_instead_of takes it only from M = 1024,
# NOTES 17.4 / 25.2) pay here? Per shape: the default, the default's tile forced unclustered, and its -c2 twin, back
# to back x20 behind the host gate, two passes (--check in the first). main 73b9faf. carry [".gpu"].
set -u
one() { # SHAPE TILE
  PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile $2" \
    "--host-gate --back-to-back 20 --tile $2-c2"
}
one 256x14336x4096 cols-128x224-tma-store
one 256x14336x8192 cols-128x224-tma-store
one 256x8192x2048 narrow-tma-store
one 256x8192x4096 narrow-tma-store
one 256x8192x8192 narrow-tma-store
one 256x8192x14336 narrow-tma-store
one 256x7168x4096 cols-128x112-tma-store
one 256x7168x5120 cols-128x112-tma-store
one 256x6144x4096 cols-128x96-tma-store
one 256x5120x5120 cols-128x80-tma-store
one 256x27648x5120 cols-128x224-tma-store
