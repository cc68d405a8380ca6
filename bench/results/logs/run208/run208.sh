#!/usr/bin/env bash
# run208 (2026-12-02): the few-tiles rule's 64 x 64 tiles up to K = 14336 (A + B <= 32 MiB) as the default: the GPU
# GEMM tests (its picks at K = 12288 and 14336 among them), and the default on run 207's shapes (the rule's tile
# where A + B <= 32 MiB, the 128 x 128 one above), gated, one pass.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run208/run208.sh
set -u
PASSES=1 ITERS=30 WARMUP_MS=200 bash bench/gemm-ab.sh "256x256x14336,128x512x14336,384x384x9216,192x768x14336,512x256x57344,256x512x28672,200x600x12288" "--host-gate"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
