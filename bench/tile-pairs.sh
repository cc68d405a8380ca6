#!/usr/bin/env bash
# Device machine: `bench gemm` per shape, the default then a forced tile, in two passes (the first with --check),
# one process each, so each pair compares ours / cuBLAS within its own processes:
#   bash bench/tile-pairs.sh "SHAPE:TILE ..."
#   e.g. bash bench/tile-pairs.sh "4096x7168x9216:cols-128x176-tma-store-c2 8192x8192x4096:wide-tma-store-c2"
# Environment: PASSES (default 2), ITERS (20), WARMUP_MS (300). Prints each run's shape rows (170 columns).
set -u
cases=${1:?usage: bash bench/tile-pairs.sh "SHAPE:TILE ..."}
for c in $cases; do
  [[ $c == ?*:?* ]] || { echo "tile-pairs: '$c' is not SHAPE:TILE" >&2; exit 2; }
done
for ((pass = 1; pass <= ${PASSES:-2}; pass++)); do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  for c in $cases; do
    for v in "" "--tile ${c##*:}"; do
      # shellcheck disable=SC2086
      bash bench/device-run.sh bench gemm --iters "${ITERS:-20}" --warmup-ms "${WARMUP_MS:-300}" --no-json $chk --shape "${c%%:*}" $v 2>&1 \
        | grep -E "^shape|error|FAIL|panic" | cut -c1-170
    done
  done
done
