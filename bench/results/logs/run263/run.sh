#!/usr/bin/env bash
# run263 (prepared 2026-12-03 for the next session; one H200, the .gpu of main): NOTES 31.5's leads, probes only.
# (1) M = 256 on N = 3584-7168 (0.74-0.84 of cuBLAS on 128 x 128 tiles, 96-112 of them, or 56-64 split in 2): tiles
#     that read less from L2 (NOTES 19.1: L2-bound) against the default: the 128 x 128 tiles in 2-CTA clusters
#     sharing B, the 128-row swapped tile holding all 256 rows of A (48 tiles, split as the few-tiles rule would, and
#     in clusters sharing A), the wide tile split, 96-column tiles filling the SMs.
# (2) M <= 64 on N = 5120 at K <= 6912 (80 swapped tiles unsplit, 0.80-0.86): fewer, larger tiles split as the
#     few-tiles rule would, and two rounds of thirds below K = 13824.
# Back to back x20, gated, two passes (the first --check). Carry [".gpu"]. ~5 min.
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 256x6144x4096,256x4096x4096,256x7168x4096,256x3584x4096,256x5120x8192,256x4096x7168 "$B" \
  "$B --tile narrow-tma-store-c2" "$B --tile swap-ab-128x256-tma-store --split-like-rule" \
  "$B --tile swap-ab-128x256-tma-store-c2" "$B --tile wide-tma-store --split-like-rule" "$B --tile cols-128x96-tma-store"
bash bench/gemm-ab.sh 64x5120x5120,64x5120x6912,64x5120x3456,16x5120x6912,1x5120x5120 "$B" \
  "$B --tile m64-wide-tma-store --split-like-rule" "$B --tile swap-ab-128x64-tma-store --split-like-rule" "$B --split-last-wave 3"
