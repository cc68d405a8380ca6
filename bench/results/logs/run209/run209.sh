#!/usr/bin/env bash
# run209 (2026-12-02): few-tile shapes with K < 4096 (never split): the default (4-16 tiles of 128 x 128, or 8-12
# swapped 64-row ones) against the 64 x 64 swapped TMA-store tile (4x the tiles, unsplit), gated, two passes.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run209/run209.sh
set -u
ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh "256x256x2048,512x512x2048,384x384x3072,256x1024x1024,1024x256x2048,128x512x3072,192x768x2048,640x384x1024" \
  "--host-gate" "--host-gate --tile swap-ab-64x64-tma-store"
