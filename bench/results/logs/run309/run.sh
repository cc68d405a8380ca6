#!/usr/bin/env bash
# run309 (branch probe-spans): per-CTA spans (MKERNEL_PROBE_CTA_SPANS) of the narrow tiles' two speeds at ragged M.
# Run 308 showed the speed is fixed per allocation (one process timed 1440x960x8192 on 88 columns at 0.049, 0.041
# and 0.055 ms with other shapes' buffers allocated between). Which CTAs finish late in the slow mode?
# carry [".gpu"]
set -u
export MKERNEL_PROBE_CTA_SPANS=1 ITERS=40
for i in 1 2 3; do
  bash bench/device-run.sh bench gemm --iters 40 --warmup-ms 200 --no-json --tile cols-128x88-tma-store \
    --shape 1440x960x8192,1000x1000x1000,1440x960x8192,3000x2000x3000,1440x960x8192 2>&1 | grep -E "^shape 1440|# cta spans shape 1440|error|FAIL|panic" | cut -c1-110
  echo "--"
done
for v in "1088x1280x8192:--tile cols-128x96-tma-store" "1088x1280x8192:--tile cols-128x112-tma-store" "1440x960x8192:" "1024x1536x8192:--tile cols-128x96-tma-store"; do
  # shellcheck disable=SC2086
  bash bench/device-run.sh bench gemm --iters 40 --warmup-ms 200 --no-json --shape "${v%%:*},${v%%:*}" ${v#*:} 2>&1 | grep -E "^shape [0-9]|# cta spans|error|FAIL|panic" | cut -c1-110
done
ls -la "$OUT"
