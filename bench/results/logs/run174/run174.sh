#!/usr/bin/env bash
# run174: 128-row column tiles in clusters of 2 / 4 CTAs along N sharing A (cols-128xC-tma-store-n2/-n4) against the
# default (the one-row-block rule's unclustered cols tile) at M = 112-128, N = 8704-14336, two passes (the first
# with --check); then gpu_gemm (the new clusters_along_n_match_reference, and every older case: the scheduler
# changed). One H200.
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-130; }
A=128x8704x4096,128x9216x4096,128x9216x7168,112x9216x7168,120x9216x14336
B=128x10240x4096,128x10240x7168
C=128x12288x7168
D=128x14336x7168,128x14336x4096
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $A
  for t in cols-128x72-tma-store-n2 cols-128x72-tma-store-n4 cols-128x80-tma-store-n2 cols-128x80-tma-store-n4; do b $chk --shape $A --tile $t; done
  b $chk --shape $B
  for t in cols-128x80-tma-store-n2 cols-128x80-tma-store-n4; do b $chk --shape $B --tile $t; done
  b $chk --shape $C
  for t in cols-128x96-tma-store-n2 cols-128x96-tma-store-n4; do b $chk --shape $C --tile $t; done
  b $chk --shape $D
  for t in cols-128x112-tma-store-n2 cols-128x112-tma-store-n4; do b $chk --shape $D --tile $t; done
done
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
