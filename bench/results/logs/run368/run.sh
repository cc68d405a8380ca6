#!/usr/bin/env bash
# run368: wgmma groups in flight. The consumer waits for the previous K block's wgmmas (wait_group 1) before it
# releases that stage; if a group's latency (issue to completion) is near two K blocks' time, the loop runs at half
# the latency, not at the tensor cores' rate (64 x 64 swapped: 369 cycles a K block against cuBLAS's 294, run 343).
# main (.gpu-main, 1 in flight) against 2 (.gpu-2, branch mma-depth) and 3 (.gpu-3, mma-depth3; at most STAGES - 1):
# defaults, then forced unsplit tiles; back to back x20 behind the host gate, two passes (the second reversed),
# --check in pass 1. carry [".gpu-main", ".gpu-2", ".gpu-3"].
set -u
B="--host-gate --back-to-back 20"
echo "#### defaults"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x1536x4096,64x4096x3584,64x256x7168,1024x256x7168,735x256x12480,256x896x5120,24x256x14336,128x2048x4096,256x1280x8192,1024x768x4096,256x5120x1280,2048x8192x4096,8192x8192x4096,1x8192x4096 "$B" .gpu-main .gpu-2 .gpu-3
echo "#### swap-ab-64x64-tma-store unsplit"
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 256x1536x4096,256x1280x8192,64x4096x3584,128x2048x4096 "--tile swap-ab-64x64-tma-store --split-last-wave off $B" .gpu-main .gpu-2 .gpu-3
