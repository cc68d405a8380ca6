#!/usr/bin/env bash
# run163: one half-full wave (M = 128 at N = 8704-9216: 68-72 tiles of 128 x 128 on 132 SMs, 0.73-0.80 of cuBLAS):
# spread K-slices (R x S > SMs, several shorter waves) on the default's tile, 5 and 7 slices. One H200, two passes.
set -u
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error" | cut -c1-130; }
S=128x9216x7168,128x8704x8192,128x9216x14336,112x9216x7168
for pass in 1 2; do
  echo "== default (pass $pass)"; b --shape $S
  for sl in 3 5 7; do echo "== narrow-tma-store split $sl"; b --shape $S --tile narrow-tma-store --split-last-wave $sl; done
done
