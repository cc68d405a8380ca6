#!/usr/bin/env bash
# run240 (2026-12-02): (1) the short-K 64 x 64 split (run239) where the default is the small-M rule's swapped
# Registers tile (M <= 64), which the split replaces by its TMA-store twin: the rule against --split-last-wave off;
# (2) for the next session: 2 and 4 slices forced on other few-tile defaults below K = 4096 (128 x 128 and the
# swapped 64-row tiles, 16-32 tiles). Host-gated, two passes (pass 1 --check).
# Pack: the .gpu of run239 (f4feebb). Call: carry [".gpu"]
set -u
ITERS=30 bash bench/gemm-ab.sh 64x1024x3072,64x512x2048,48x1024x2048,64x1024x2048 "--host-gate" "--host-gate --split-last-wave off"
ITERS=30 PASSES=1 bash bench/gemm-ab.sh 256x2048x3072,16x2048x3072,64x2048x2048,128x2048x2048 "--host-gate" "--host-gate --split-last-wave 2" "--host-gate --split-last-wave 4"
