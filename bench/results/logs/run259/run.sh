#!/usr/bin/env bash
# run259 (2026-12-03, one H200; the .gpu of run 258): NOTES 30.3's second lead: tiles between half a wave and one
# wave (67-131 tiles on 132 SMs, unsplit by default) at long K, every tile in S = 3, 4 or 6 K-slices over more than
# one wave of slices (rounds x K / S: 2/3 of the unsplit chain at S = 3 or 6 for 80 tiles). Back to back x20, gated,
# two passes (the first --check). Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
bash bench/gemm-ab.sh 1x5120x8192,1x5120x13824,1x5120x27648,16x5120x13824,64x5120x27648,1x6144x13824,1x7168x14336,256x5120x13824,256x5120x27648,256x6144x14336,256x10240x13824 \
  "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --split-last-wave 3" \
  "--host-gate --back-to-back 20 --split-last-wave 4" "--host-gate --back-to-back 20 --split-last-wave 6"
# The router (N = 256, K = 7168; 0.67-0.81 of cuBLAS, NOTES 30.1): its 4-16 tiles of 64 x 8..64 (swapped) in finer
# K-slices than the 7 of 16 K blocks the few-tiles rule gives them (run 205's finer slices predate the fix-up of
# run 224, which sums up to 8 slices in one L2 round trip).
bash bench/gemm-ab.sh 1x256x7168,16x256x7168,64x256x7168,256x256x7168 \
  "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --split-last-wave 14" \
  "--host-gate --back-to-back 20 --split-last-wave 16" "--host-gate --back-to-back 20 --split-last-wave 28"
