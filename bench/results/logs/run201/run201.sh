#!/usr/bin/env bash
# run201 (2026-12-02, one H200): the fixed cost of our GEMM kernel against cuBLAS's, GPU time alone (--host-gate):
# shapes from one K block (64 x 8 x 64) up, each on the default and unsplit, two passes.
# Pack: ../shared/tools/gpu-pack --bin mkernel --no-tests && bash bench/pack-libs.sh (at 602a8d2's kernels)
# Call: run with carry [".gpu"], bash bench/results/logs/run201/run201.sh
set -u
S="1x8x64,64x8x64,64x8x1024,64x8x4096,64x64x4096,512x8x64,512x8x1024,512x8x7168,4096x8x64"
ITERS=50 WARMUP_MS=200 bash bench/gemm-ab.sh "$S" "--host-gate" "--host-gate --split-last-wave off"
