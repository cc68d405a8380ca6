#!/usr/bin/env bash
# run317 (branch shift-rows): the GPU tests of the shifted last row block (a_row0), then main (.gpu-main, b026f1c)
# against the branch (.gpu): defaults (--check in pass 1) and the one-wave widths forced where the ragged bound
# (ONE_WAVE_COLS_RAGGED_MAX_ROWS) or the padding rule keeps them from the default, two passes, the second in
# reverse order. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=300 timeout 320 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:|past row|other bits" | head -30
D=321x3536x8192,1088x1280x8192,1440x960x8192,2081x704x8192,1056x1408x8192,1440x512x4096,2049x8192x4096,1025x4096x4096,1440x1024x8192,1440x896x4096,1056x1024x8192,1440x448x8192,129x8192x4096,300x1000x1000
F=("cols-128x88-tma-store:321x3536x8192,336x3536x8192,352x3536x8192,1440x960x8192,1440x896x4096"
   "cols-128x96-tma-store:1440x1024x8192" "cols-128x104-tma-store:1056x1408x8192"
   "cols-128x48-tma-store:1440x512x4096,1440x448x8192" "cols-128x80-tma-store:1056x1024x8192")
b() {  # b DIR ARGS...
  local d=$1; shift
  GPU_DIR=$d bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 200 --no-json "$@" 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-160
}
for pass in 1 2; do
  echo "== pass $pass"
  chk=""; [[ $pass == 1 ]] && chk="--check"
  if [[ $pass == 1 ]]; then order=".gpu-main .gpu"; else order=".gpu .gpu-main"; fi
  for d in $order; do
    echo "-- $d defaults"; b $d --shape $D $chk
    for f in "${F[@]}"; do echo "-- $d ${f%%:*}"; b $d --shape ${f##*:} --tile ${f%%:*} $chk; done
  done
done
