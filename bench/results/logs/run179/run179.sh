#!/usr/bin/env bash
# run179: (1) the check's new floor (6 sqrt(K) 2^-24 rms) on long-K unsplit shapes (run 178's call of it had a
# duplicated --iters); (2) does run 175's DRAM finding carry to M <= 64? The default's 64-row swapped tiles bring 8 KiB
# of B per stage; 128-row swapped tiles (16 KiB) making SMs / 2 tiles, split 2 along K, against the default at long K.
# Two passes. One H200.
set -u
echo "== long K, unsplit, --check (the floor)"
bash bench/device-run.sh bench gemm --check --iters 5 --no-json --split-last-wave off --shape 128x8192x28672,128x9216x28672,1024x8192x28672,256x4096x57344,64x8192x57344,2048x2048x65536 2>&1 | grep -E "^shape|error|panic" | cut -c1-260
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-130; }
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape 64x8192x14336,64x8192x28672,64x7168x18432
  b $chk --shape 64x8192x14336,64x8192x28672,64x7168x18432 --tile swap-ab-128x64-tma-store --split-last-wave 2
  b $chk --shape 32x8192x14336,32x8192x28672,32x7168x18432
  b $chk --shape 32x8192x14336,32x8192x28672,32x7168x18432 --tile swap-ab-128x64-tma-store --split-last-wave 2
  b $chk --shape 96x8192x14336,80x8192x14336,96x7168x18432
  b $chk --shape 96x8192x14336,80x8192x14336,96x7168x18432 --tile swap-ab-128x96-tma-store --split-last-wave 2
done
