#!/usr/bin/env bash
# run181: run 180 timed 256 x 4096 x 57344 at 0.56 of cuBLAS (64 tiles of 128 x 128 on 132 SMs, one long K loop
# each). Does the split (the same one the one-row-block rule takes) carry to any GEMM whose tiles fill at most half
# the SMs with a long K? Default against the default's tile split S = SMs / tiles (2-4), two passes. One H200.
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-130; }
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape 256x4096x57344,256x4096x14336,1024x1024x65536,256x2048x32768 --split-last-wave off
  b $chk --shape 256x4096x57344,256x4096x14336,1024x1024x65536 --tile narrow-tma-store --split-last-wave 2
  b $chk --shape 256x2048x32768 --tile narrow-tma-store --split-last-wave 4
  b $chk --shape 256x4096x57344,256x4096x14336 --tile wide-tma-store --split-last-wave 4
done
