#!/usr/bin/env bash
# run243 (2026-12-02): few tiles at short K (NOTES 28.7/28.8): forced 2- and 4-slice splits of the default where it
# makes 32-64 tiles at K = 1024-3072 (mostly the 64 x 64 swapped TMA-store tile, unsplit by today's rules), timed
# back to back (20 calls a step, host-gated; PDL on, as the default). Two passes (gemm-ab.sh).
# Pack: as run242 (the .gpu of run242). Call: carry [".gpu"]
set -u
export ITERS=20 WARMUP_MS=300
S=512x512x2048,256x512x2048,256x1024x3072,384x512x3072,512x256x2048,320x640x2560,512x512x1024,256x1024x2048
bash bench/gemm-ab.sh $S "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --split-last-wave 2"
S4=256x512x2048,512x256x2048,256x512x3072,128x1024x2048
bash bench/gemm-ab.sh $S4 "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --split-last-wave 4"
