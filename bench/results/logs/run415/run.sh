#!/usr/bin/env bash
# run415 (session 55; one GPU, 2 ranks sharing it): run 414 had the branch slower at M = 1024 only (1024x28672x8192
# 1.68 against main's 1.49 ms), with a 128 x 248 tile and 16-row chunks where main has 128 x 256 and 128-row
# chunks: the tile and the chunk length apart, twice.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}
shapes=1024x5120x8192,1024x28672x8192
run() { local g=$1; shift; echo "== $g $*"; GPU_DIR=$g timeout 120 bash bench/device-run.sh bench allgather-gemm --share-gpu --iters 20 --no-json --shape $shapes "$@" 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-200; }
for rep in 1 2; do
  run .gpu-main
  for t in wide-tma-store cols-128x248-tma-store; do
    for c in 16 128; do run .gpu --tile $t --chunk-rows $c; done
  done
done
