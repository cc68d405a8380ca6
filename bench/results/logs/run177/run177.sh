#!/usr/bin/env bash
# run177: run176 found 128-row tiles wide enough to make <= SMs/2 tiles, split 2 along K, 9-11% faster than the
# default at 128 x 9216 x 14336 (and 120 x ...), even or slower at K <= 7168 and at N = 12288-14336. Where is the
# edge? M = 112-128 at N = 7168 / 8192 / 9216 (the default's 72-112-column tiles) and K = 7168-28672: the default
# against the width making 53-64 tiles, split 2. Two passes (first --check).
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-130; }
A=128x8192x14336,120x8192x14336,112x8192x14336,128x8192x28672,128x8192x10240,128x8192x7168
B=128x9216x10240,128x9216x28672,112x9216x14336
C=128x7168x18432,128x7168x14336,128x7168x9216
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $A
  b $chk --shape $A --tile narrow-tma-store --split-last-wave 2
  b $chk --shape $B
  b $chk --shape $B --tile cols-128x144-tma-store --split-last-wave 2
  b $chk --shape $C
  b $chk --shape $C --tile cols-128x112-tma-store --split-last-wave 2
  b $chk --shape $C --tile cols-128x136-tma-store --split-last-wave 2
done
