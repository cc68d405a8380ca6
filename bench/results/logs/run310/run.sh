#!/usr/bin/env bash
# Ran on ebffed8 (probe-spans with the raster-group override MKERNEL_PROBE_RASTER_GROUP; equal-groups removed the
# override when it made equal groups the rule: to rerun, check out ebffed8).
# run310 (branch probe-spans): run 309's spans showed the ragged row block's CTAs finishing last at 1088x1280x8192
# (96 columns; row block 8, alone in the scheduler's second raster group of 8 row blocks, ends at 49-56 us against
# 38-41) and, at 1440x960x8192 (88), some column blocks late in slow calls. Does the raster group change that?
# Groups of 8 (the default), equal groups (0), 16 and 4, per-CTA spans in $OUT/gG/cta-spans.csv.
# carry [".gpu"]
set -u
export MKERNEL_PROBE_CTA_SPANS=1
root=$OUT
for g in 8 0 16 4; do
  mkdir -p "$root/g$g"
  echo "== group $g"
  for v in "1088x1280x8192:cols-128x96-tma-store" "1440x960x8192:cols-128x88-tma-store" "1440x1024x8192:cols-128x96-tma-store" \
           "1600x960x8192:cols-128x96-tma-store" "2081x704x8192:cols-128x104-tma-store"; do
    MKERNEL_PROBE_RASTER_GROUP=$g OUT=$root/g$g bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 100 --no-json \
      --shape "${v%%:*},${v%%:*}" --tile "${v#*:}" 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-110
  done
done
rm -f "$root"/g*/bench.log
ls -la "$root" "$root"/g*
