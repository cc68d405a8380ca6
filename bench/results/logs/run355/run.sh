#!/usr/bin/env bash
# run355 (main 79132ec, .gpu-main): the swapped 128 x 64 tile (128 rows of B by 64 of A) in place of the few-tiles
# split's 64 x 64 swapped tile in S slices at M = 450-2000, N = 128 and 256 (run 352: 4-25% faster at N = 256 in
# place of 2 slices): in 2S slices (the same CTAs: half the tiles) and in S. Back to back x20 behind the host gate,
# two passes (--check in pass 1). carry [".gpu-main"].
set -u
export GPU_DIR=.gpu-main
B="--host-gate --back-to-back 20"
W="--tile swap-ab-128x64-tma-store"
echo "#### 1024x256x7168"; bash bench/gemm-ab.sh 1024x256x7168 "$B" "$W --split-last-wave 4 $B" "$W --split-last-wave 2 $B"
echo "#### 1024x256x4096"; bash bench/gemm-ab.sh 1024x256x4096 "$B" "$W --split-last-wave 4 $B" "$W --split-last-wave 2 $B"
echo "#### 900x256x6144"; bash bench/gemm-ab.sh 900x256x6144 "$B" "$W --split-last-wave 4 $B" "$W --split-last-wave 2 $B"
echo "#### 450x256x8192"; bash bench/gemm-ab.sh 450x256x8192 "$B" "$W --split-last-wave 8 $B" "$W --split-last-wave 4 $B"
echo "#### 520x256x10240"; bash bench/gemm-ab.sh 520x256x10240 "$B" "$W --split-last-wave 6 $B" "$W --split-last-wave 3 $B"
echo "#### 640x256x4096"; bash bench/gemm-ab.sh 640x256x4096 "$B" "$W --split-last-wave 6 $B" "$W --split-last-wave 3 $B"
echo "#### 812x256x11264"; bash bench/gemm-ab.sh 812x256x11264 "$B" "$W --split-last-wave 4 $B" "$W --split-last-wave 2 $B"
echo "#### 1000x256x5120"; bash bench/gemm-ab.sh 1000x256x5120 "$B" "$W --split-last-wave 4 $B" "$W --split-last-wave 2 $B"
echo "#### 800x128x7168"; bash bench/gemm-ab.sh 800x128x7168 "$B" "$W --split-last-wave 10 $B" "$W --split-last-wave 5 $B"
echo "#### 1024x128x9216"; bash bench/gemm-ab.sh 1024x128x9216 "$B" "$W --split-last-wave 8 $B" "$W --split-last-wave 4 $B"
echo "#### 640x128x12288"; bash bench/gemm-ab.sh 640x128x12288 "$B" "$W --split-last-wave 12 $B" "$W --split-last-wave 6 $B"
echo "#### 1500x128x5120"; bash bench/gemm-ab.sh 1500x128x5120 "$B" "$W --split-last-wave 4 $B" "$W --split-last-wave 2 $B"
echo "#### 2000x128x7168"; bash bench/gemm-ab.sh 2000x128x7168 "$B" "$W --split-last-wave 4 $B" "$W --split-last-wave 2 $B"
echo "#### 1024x128x4096"; bash bench/gemm-ab.sh 1024x128x4096 "$B" "$W --split-last-wave 8 $B" "$W --split-last-wave 4 $B"
