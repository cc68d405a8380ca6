#!/usr/bin/env bash
# run192 (2026-12-02): small N, where a GEMM is an MoE router (N = experts: 8 for Mixtral, 64, 256 for DeepSeek-V3;
# K = hidden 2048-7168; M = tokens): the default against cuBLAS, two passes (the first with --check). Information for
# a tile family narrower than 64 columns; no change measured here.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run192/run192.sh
set -u
bash bench/gemm-ab.sh 1024x8x4096,4096x8x4096,16384x8x4096,1024x64x2048,8192x64x2048,8x256x7168,128x256x7168,4096x256x7168,16384x256x7168 ""
# (second call) the swapped tiles forced on the small-N shapes: B's few rows in the 64-row slot, M along the tile's
# 128-256 columns (bandwidth-bound on A).
# PASSES=1 bash bench/gemm-ab.sh 1024x8x4096,4096x8x4096,16384x8x4096,1024x64x2048,8192x64x2048,128x256x7168 "--tile swap-ab-64x256-tma-store" "--tile swap-ab-64x128-tma-store" "--tile swap-ab-64x256-tma-store --split-last-wave 4"
