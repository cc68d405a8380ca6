#!/usr/bin/env bash
# run372 (main 3c2180d): M = 208-256 few-tiles shapes whose default is the 64 x 128 tile in 2 slices (the half-height
# rule): per NOTES 45.7 a 64-row tile's CTA is bound by the bytes into its SM (~53 B a cycle), so fewer bytes per CTA
# over more CTAs should help: 128 x 48 in 2 (run 358: 12.7 -> 12.15 us at 256 x 1536 x 4096), 128 x 56 in 2, and 64 x
# 128 in 3 where it fits one wave. Back to back x20 behind the host gate, two passes, --check in pass 1. carry [".gpu"].
set -u
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 256x1536x4096,256x1280x8192,256x1792x5120,256x1152x4096,256x1408x6144,240x1600x4096,224x1536x7168,208x1792x4096 \
  "$B" "--tile cols-128x48-tma-store --split-last-wave 2 $B" "--tile cols-128x56-tma-store --split-last-wave 2 $B" "--tile m64-narrow-tma-store --split-last-wave 3 $B"
