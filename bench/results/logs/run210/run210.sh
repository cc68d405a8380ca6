#!/usr/bin/env bash
# run210 (2026-12-02): the 64 x 64 swapped tile as the unsplit default for few tiles at K < 4096
# (TileConfig::few_tiles_unsplit_smaller_instead_of): the default on run 209's shapes, gated, one pass with --check;
# then the GPU GEMM tests (few_tiles_unsplit_default_matches_reference among them).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run210/run210.sh
set -u
PASSES=1 ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh "256x256x2048,512x512x2048,384x384x3072,256x1024x1024,1024x256x2048,128x512x3072,192x768x2048,640x384x1024" "--host-gate"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
