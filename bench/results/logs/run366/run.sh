#!/usr/bin/env bash
# run366: run 364's two-chains experiment again with the commit inside each branch (run 364's build closed each K
# block's group with an empty wgmma after the branches, so the wait<1> waited for that K block's own wgmmas).
# main (.gpu-main) against two-chains (.gpu-x): defaults, then forced unsplit 64 x 64 / 64 x 32 swapped tiles; back to
# back x20 behind the host gate, two passes (the second reversed), --check in pass 1. carry [".gpu-main", ".gpu-x"].
set -u
B="--host-gate --back-to-back 20"
echo "#### defaults"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x1536x4096,64x4096x3584,64x256x7168,64x768x4096,1024x256x7168,735x256x12480,256x896x5120,24x256x14336,128x2048x4096,256x1280x8192,64x4096x7168,1024x768x4096 "$B" .gpu-main .gpu-x
echo "#### swap-ab-64x64-tma-store unsplit"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x1536x4096,256x1280x8192,64x4096x3584,128x2048x4096 "--tile swap-ab-64x64-tma-store --split-last-wave off $B" .gpu-main .gpu-x
echo "#### swap-ab-64x32-tma-store unsplit"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 64x4096x3584,64x1536x4096 "--tile swap-ab-64x32-tma-store --split-last-wave off $B" .gpu-main .gpu-x
