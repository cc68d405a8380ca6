#!/usr/bin/env bash
# run197 (2026-12-02, one H200): the small-N rule extended to 64 < N <= 160 where its 64- or 128-row tiles fit one
# wave, as the default, against the tile the default took there before (128 x 128 TMA-store split as the few-tiles
# rule splits it, on every shape listed), three passes; 16384 x 128 x 4096 (outside the rule) as a control; then
# the GPU GEMM tests of the rule.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run197/run197.sh
set -u
S="512x128x4096,2048x128x7168,4096x128x7168,8192x128x4096,2048x120x4096,4096x96x4096,6144x96x7168"
S="$S,1024x160x5120,4096x160x5120,200x128x7168,16384x128x4096"
PASSES=3 ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh "$S" "" "--tile narrow-tma-store --split-like-rule"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL|skip" | tail -20
