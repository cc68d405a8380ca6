#!/usr/bin/env bash
# Device machine: `bench gemm` on SHAPES once per variant, in two passes (the first with --check), every variant in
# the same process order within a pass, so that variants compare within a pass (clocks move between passes):
#   bash bench/gemm-ab.sh SHAPES [VARIANT ...]
#   e.g. bash bench/gemm-ab.sh 8x9216x4096,1x8704x4096 "" "--split-last-wave off"
# A VARIANT is extra `bench gemm` arguments ("" = the default). Prints each run's shape rows (150 columns).
# Environment: PASSES (default 2), ITERS (20), WARMUP_MS (300).
set -u
shapes=${1:?usage: bash bench/gemm-ab.sh SHAPES [VARIANT ...]}; shift
variants=("$@"); [[ ${#variants[@]} == 0 ]] && variants=("")
for ((pass = 1; pass <= ${PASSES:-2}; pass++)); do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  for v in "${variants[@]}"; do
    echo "-- --shape $shapes $chk $v"
    # shellcheck disable=SC2086
    bash bench/device-run.sh bench gemm --iters "${ITERS:-20}" --warmup-ms "${WARMUP_MS:-300}" --no-json $chk --shape "$shapes" $v 2>&1 \
      | grep -E "^shape|error|FAIL|panic" | cut -c1-150
  done
done
