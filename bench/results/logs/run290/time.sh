#!/usr/bin/env bash
# run290 part 2: timings of raster variants, two passes (the order reversed in the second).
#   bash time.sh "DIR|NAME|TILE|DEFINES" ...   (TILE "-" = default tiles); SHAPES from the environment.
set -u
args=("$@"); rev=(); for ((i=${#args[@]}-1;i>=0;i--)); do rev+=("${args[i]}"); done
for pass in 1 2; do
  if [[ $pass == 1 ]]; then list=("${args[@]}"); else list=("${rev[@]}"); fi
  for spec in "${list[@]}"; do
    IFS='|' read -r dir name tile defs <<< "$spec"
    t=(); [[ $tile != - ]] && t=(--tile "$tile")
    echo "-- $name pass $pass"
    GPU_DIR=$dir MKERNEL_EXP_DEFINES="$defs" bash bench/device-run.sh bench gemm --iters 10 --warmup-ms 200 --no-json --check --host-gate --back-to-back 20 --shape "$SHAPES" "${t[@]}" 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-110
  done
done
