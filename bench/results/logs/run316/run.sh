#!/usr/bin/env bash
# (The experiment.diff beside this script is the diagnostic build it ran: branch shift-exp, not merged.)
# run316 (branch shift-exp): the last row block's A box shifted up to end at row M (MKERNEL_EXPERIMENT_SHIFT_ROWS=1:
# no out-of-bounds A rows; the store rewrites the overlap rows with the same values) against the unshifted build,
# same binary, one process per mode, alternating, three passes; --check in pass 1. carry [".gpu"].
set -u
export ITERS=30
F=321x3536x8192,336x3536x8192,352x3536x8192,384x3536x8192
D=321x3536x8192,1088x1280x8192,1440x960x8192,2081x704x8192,1056x1408x8192,1440x512x4096,2049x8192x4096,1025x4096x4096,4097x4096x4096,2049x8192x14336,1440x1024x8192
b() {  # b MODE ARGS...
  local mode=$1; shift
  echo "-- $mode $*" | cut -c1-120
  if [[ $mode == shift ]]; then export MKERNEL_EXPERIMENT_SHIFT_ROWS=1; else unset MKERNEL_EXPERIMENT_SHIFT_ROWS; fi
  bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 200 --no-json "$@" 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-160
}
for pass in 1 2 3; do
  echo "== pass $pass"
  chk=""; [[ $pass == 1 ]] && chk="--check"
  if (( pass % 2 )); then order="base shift"; else order="shift base"; fi
  for mode in $order; do
    b $mode --shape $F --tile cols-128x88-tma-store $chk
    b $mode --shape $D $chk
  done
done
export MKERNEL_EXPERIMENT_SHIFT_ROWS=1
TEST_TIMEOUT=300 timeout 320 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:" | head -30
