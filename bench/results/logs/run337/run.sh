#!/usr/bin/env bash
# run337: per-CTA spans (MKERNEL_PROBE_CTA_SPANS, the diagnostic build) of the 64 x 128 tile unsplit where runs
# 334-335 had it 10-24% slower than 128 x 128 in 2 (994 x 944 x 8192: 128 tiles, 16 row blocks; 2601 x 352 x 8192:
# 123 tiles, 41 row blocks) against where it was faster (1280 x 768 x 8192: 120 tiles; 1024 x 1024 x 5120). Which
# CTAs end late: a row block, a column block, or all of them? carry [".gpu"].
set -u
export MKERNEL_PROBE_CTA_SPANS=1
bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 200 --no-json --tile m64-narrow-tma-store --split-last-wave off \
  --shape 994x944x8192,2601x352x8192,1280x768x8192,1024x1024x5120 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-110
python3 bench/probes/cta_spans.py "$OUT/cta-spans.csv" --bm 64 --tile 994x944x8192:128 --tile 2601x352x8192:128 \
  --tile 1280x768x8192:128 --tile 1024x1024x5120:128 2>&1 | head -80
gzip -f "$OUT/cta-spans.csv"
