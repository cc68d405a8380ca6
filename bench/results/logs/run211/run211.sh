#!/usr/bin/env bash
# run211 (prepared 2026-12-02, not yet run): two leads of bench/NOTES.md 24.5, gated, two passes; then the GPU GEMM
# tests (the two default-tile tests now share defaults_match_reference: re-run them).
# (1) Few tiles past the rule's K (K > 14336) with small operands (A + B 14-29 MB): the default's split (4-8 tiles in
#     8 slices) against the 64 x 64 swapped tile in its own slices (forced, --split-like-rule).
# (2) N = 256 (DeepSeek-V3's router) at M >= 4096, K = 7168, 0.84-0.93 of cuBLAS on 128 x 128 tiles (compute-bound:
#     8192 x 256 x 7168 is 30 GFLOP, ~45 us at 660 TFLOP/s; cuBLAS 0.048-0.053 ms): 64 x 256 tiles (A read once,
#     128 tiles at M = 8192), 128 x 256 ones split as the few-tiles rule would (64 tiles at M = 8192 in 2 slices),
#     and 128 x 128 ones in 2-CTA clusters sharing B.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run211/run211.sh
set -u
export ITERS=30 WARMUP_MS=200
g="--host-gate"
bash bench/gemm-ab.sh "128x256x28672,256x256x28672,128x512x16384,192x384x24576" "$g" "$g --tile swap-ab-64x64-tma-store --split-like-rule"
WARMUP_MS=600 bash bench/gemm-ab.sh "4096x256x7168,8192x256x7168,16384x256x7168" "$g" "$g --tile m64-wide-tma-store" \
  "$g --tile wide-tma-store --split-like-rule" "$g --tile narrow-tma-store-c2"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
