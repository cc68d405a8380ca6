#!/usr/bin/env bash
# run205 (prepared 2026-12-02): few-tile shapes (N = 128-1024, small M, long K) whose default runs on 28-112 CTAs
# (the few-tiles split: at most 8 slices of at least 16 K blocks): the 64 x 64 swapped tiles (16 KiB fp32 slots)
# and finer forced splits (4-8 K blocks per slice, up to 28 slices) against the default, gated, two passes; then the
# GPU GEMM tests (the small-N rule at M = 64 among them).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run205/run205.sh
set -u
g="--host-gate"
s64="$g --tile swap-ab-64x64-tma-store --split-last-wave"
s128="$g --tile swap-ab-64x128-tma-store --split-last-wave"
nar="$g --tile narrow-tma-store --split-last-wave"
export ITERS=30 WARMUP_MS=200
# default: 4 tiles of swap-ab-64x128 in 7 slices (28 CTAs)
bash bench/gemm-ab.sh 128x256x7168 "$g" "$s64 7" "$s64 14" "$s64 16" "$s128 14" "$nar 28"
# default: 4 narrow tiles in 7 (28 CTAs)
bash bench/gemm-ab.sh 256x256x7168 "$g" "$s64 4" "$s64 8" "$s128 16" "$nar 14"
# default: 8 narrow tiles in 7 (56 CTAs)
bash bench/gemm-ab.sh 512x256x7168 "$g" "$s64 4" "$nar 16"
bash bench/gemm-ab.sh 256x512x7168 "$g" "$s64 4" "$nar 16"
# default: 16 narrow tiles in 4 (64 CTAs); 16 swap-ab-64x128 in 4
bash bench/gemm-ab.sh 512x512x4096 "$g" "$s64 2" "$nar 8"
bash bench/gemm-ab.sh 128x1024x4096 "$g" "$s64 4" "$s128 8"
# default: 16 narrow tiles in 7 (112 CTAs)
bash bench/gemm-ab.sh 1024x256x7168 "$g" "$s64 2" "$nar 8"
bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
