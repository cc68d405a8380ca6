#!/usr/bin/env bash
# run196 (2026-12-02, one H200): (1) MoE routers with N = 96-256 experts (DeepSeek-V3: 256 x 7168; Qwen3: 128),
# where the small-N rule does not reach: the default against 128-row tiles covering all of N in one column of
# tiles (wide 128 x 256, swapped 128 x R with B's rows in the 128-row slot) and the 64-row swapped tiles, each
# split as the few-tiles rule would split it; (2) M = 65-256 with N <= 64, where the small-N rule took over from the
# small-M rules: the rule against the tile the default took before. Two passes, 3 at (2).
# Pack: ../shared/tools/gpu-pack --bin mkernel --no-tests && bash bench/pack-libs.sh (at the small-N rule's commit)
# Call: run with carry [".gpu"], bash bench/results/logs/run196/run196.sh
set -u
S="128x256x7168,512x256x7168,2048x256x7168,4096x256x7168,8192x256x7168,16384x256x7168"
S="$S,512x128x4096,4096x128x7168,8192x128x4096,4096x160x5120,4096x96x4096"
r="--split-like-rule"
ITERS=20 WARMUP_MS=200 bash bench/gemm-ab.sh "$S" "" "--tile wide-tma-store $r" "--tile narrow-tma-store $r" \
  "--tile swap-ab-128x128-tma-store $r" "--tile swap-ab-128x256-tma-store $r" "--tile swap-ab-64x128-tma-store $r"
echo "== M 65-256, N <= 64"
PASSES=3 ITERS=50 bash bench/gemm-ab.sh 100x8x7168 "" "--tile swap-ab-64x104-tma-store $r"
PASSES=3 ITERS=50 bash bench/gemm-ab.sh 200x32x7168,256x64x7168 "" "--tile narrow-tma-store $r"
PASSES=3 ITERS=50 bash bench/gemm-ab.sh 130x16x4096 "" "--tile swap-ab-64x136-tma-store $r"
