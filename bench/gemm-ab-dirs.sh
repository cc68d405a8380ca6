#!/usr/bin/env bash
# Device machine: `bench gemm` on SHAPES with each packed tree in DIRS (GPU_DIR folders, e.g. .gpu and a .gpu-old
# from bench/pack-rev.sh), two passes, the second in reverse order, so that two revisions' defaults compare on the
# same shapes under the same clocks (runs 249, 251 did this inline):
#   bash bench/gemm-ab-dirs.sh SHAPES "EXTRA ARGS" DIR...
#   e.g. bash bench/gemm-ab-dirs.sh 640x1024x2048,30x2048x1536 "--host-gate --back-to-back 20" .gpu-old .gpu
# Prints "-- DIR" and each run's shape rows (150 columns). Environment: ITERS (20), WARMUP_MS (300), CHECK_FIRST
# (1: --check in pass 1 only, as runs 317-321 did by hand).
set -u
shapes=${1:?usage: bash bench/gemm-ab-dirs.sh SHAPES "EXTRA ARGS" DIR...}; extra=${2:-}; shift 2 || exit 2
dirs=("$@"); (( ${#dirs[@]} >= 1 )) || { echo "gemm-ab-dirs.sh: no DIR given" >&2; exit 2; }
reversed=(); for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do reversed+=("${dirs[i]}"); done
for pass in 1 2; do
  echo "== pass $pass"
  if [[ $pass == 1 ]]; then order=("${dirs[@]}"); else order=("${reversed[@]}"); fi
  for d in "${order[@]}"; do
    echo "-- $d"
    chk=; [[ ${CHECK_FIRST:-0} == 1 && $pass == 1 ]] && chk=--check
    # shellcheck disable=SC2086
    GPU_DIR=$d bash bench/device-run.sh bench gemm --iters "${ITERS:-20}" --warmup-ms "${WARMUP_MS:-300}" --no-json $chk --shape "$shapes" $extra 2>&1 \
      | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-150
  done
done
