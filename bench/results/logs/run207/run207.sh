#!/usr/bin/env bash
# run207 (2026-12-02): the 64 x 64 swapped TMA-store tile in the few-tiles rule's slices (forced, --split-like-rule)
# against the default at K > 7168, where the few-tiles rule's smaller tile (TileConfig::few_tiles_smaller_instead_of)
# does not apply yet; gated, two passes. (Default CTAs -> 64 x 64 CTAs: 32 -> 128, 64 -> 128, 72 -> 108, 96 -> 108,
# 64 -> 128 with twice the K blocks per CTA, 64 -> 128 likewise.)
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run207/run207.sh
set -u
export ITERS=30 WARMUP_MS=200
bash bench/gemm-ab.sh "256x256x14336,128x512x14336,384x384x9216,192x768x14336,512x256x57344,256x512x28672" \
  "--host-gate" "--host-gate --tile swap-ab-64x64-tma-store --split-like-rule"
