#!/usr/bin/env bash
# run322 (prepared in session 38, not yet run): W = 48-56 unsplit (the one-wave rule's default where 2W in 2 slices
# would overfill one wave) against 128 x 128 in 2 slices forced, at K = 8192 and 14336 (NOTES 40.4: 2959 x 224 x 14336
# 9-12% behind the split). Two passes, one process per variant, --check in pass 1. carry [".gpu"].
set -u
S=1202x584x14336,1258x592x8192,1454x496x14336,1517x504x8192,2049x296x8192,2203x328x14336,2994x224x14336,3120x240x8192
for pass in 1 2; do
  echo "== pass $pass"
  chk=""; [[ $pass == 1 ]] && chk="--check"
  for v in "" "--tile narrow-tma-store --split-last-wave 2"; do
    echo "-- ${v:-default}"
    # shellcheck disable=SC2086
    bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 200 --no-json --shape $S $v $chk 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-160
  done
done
