#!/usr/bin/env bash
# run166: cuBLAS runs M = 128 at N = 9216 on 80 x 128 tiles in its column-major view (run165: nvjet 80x128, 4x1
# clusters): 128 rows of M by 80 columns of N, 116 CTAs. Our new opt-in narrow column-fitted tiles (128 x 64..120,
# either epilogue) against the default, same pass, two passes (the first with --check). One H200.
set -u
S=128x9216x7168,128x8704x8192,128x9216x14336,112x9216x7168,64x9216x7168,129x7168x9216
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json --shape $S "$@" 2>&1 | grep -E "^shape|error|FAIL" | cut -c1-130; }
for pass in 1 2; do
  echo "== pass $pass"
  chk=; [[ $pass == 1 ]] && chk=--check
  b $chk
  for c in 64 72 80 88 96 104 112 120; do
    b $chk --tile cols-128x$c-tma-store
  done
  for c in 72 80 96; do b $chk --tile cols-128x$c; done
done
