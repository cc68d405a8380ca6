#!/usr/bin/env bash
# run276 (2026-12-03, one H200): programmatic dependent launch, where does it lose? main (griddepcontrol.launch_dependents
# right after the wait) against .gpu-exit (branch pdl-trigger-at-exit: no explicit trigger, the next grid launches as
# this one's CTAs exit); each row also prints the serialized launch. Back to back x20, host-gated, two passes
# (the second in reverse order). Carry [".gpu", ".gpu-exit"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
# defaults: partial grids that lost under PDL in runs 265-275, then full grids and short calls that gained
bash bench/gemm-ab-dirs.sh 520x1808x8192,654x1544x8192,780x1592x8192,899x1040x4096,200x5120x8192,650x1400x8192,900x1152x8192,1024x1536x8192,4096x4096x4096,1024x8192x4096,128x8192x4096,64x8x4096,512x512x2048,256x32x7168,1x8192x4096 "$B" .gpu .gpu-exit
# one tile (128 x 128, TMA store) over grids of 64-128 CTAs, M a multiple of 128 and ragged
bash bench/gemm-ab-dirs.sh 1024x1024x8192,1024x1280x8192,1024x1536x8192,1024x1792x8192,1024x2048x8192,1000x1280x8192,1000x2048x8192,520x2312x8192 "$B --tile narrow-tma-store" .gpu .gpu-exit
