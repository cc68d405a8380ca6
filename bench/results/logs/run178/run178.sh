#!/usr/bin/env bash
# run178: the one-row-block split rule (TileConfig::split_row_block_for) in the default, against the same shapes
# with --split-last-wave off (the old default), two passes (first --check); the check's new floor (6 sqrt(K) 2^-24
# rms) on long-K unsplit shapes; gpu_gemm (the rule's default-path cases). One H200.
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-150; }
S=128x9216x14336,112x9216x14336,128x9216x10240,128x8192x14336,120x8192x14336,128x8192x28672,128x7168x18432,128x7168x9216,128x8704x10240,128x7680x14336
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $S
  b $chk --shape $S --split-last-wave off
done
echo "== long K, unsplit, --check (the floor)"
b --check --iters 3 --shape 128x8192x28672,128x9216x28672,1024x8192x28672,256x4096x57344,64x8192x57344 --split-last-wave off
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
