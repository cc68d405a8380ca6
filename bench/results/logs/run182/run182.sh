#!/usr/bin/env bash
# run182: the few-tiles split rule (TileConfig::split_few_tiles_for) in the default, against --split-last-wave off, on
# shapes beyond run 181's (a swapped small-M default, a Registers default's twin, K at the 9216 bound, 3 slices), two
# passes (first --check); then gpu_gemm (new default-path cases). One H200.
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
S=256x4096x9216,256x4096x14336,1024x1024x16384,1000x1000x16384,512x2048x16384,64x4096x14336,200x2056x9224,128x4096x14336,384x2048x28672
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $S
  b $chk --shape $S --split-last-wave off
done
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
