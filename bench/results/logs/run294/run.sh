#!/usr/bin/env bash
# run294: carry [".gpu", ".gpu-cn"], .gpu-cn packed from branch cluster-n-port-2
# (bash bench/pack-rev.sh cluster-n-port-2 .gpu-cn gpu_gemm). The branch's tests run only if it wins.
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
# Run 281's A/B (the -n2 tiles against their unclustered twins), on the branch's binary.
GPU_DIR=.gpu-cn bash bench/gemm-ab.sh 1024x1280x8192,512x2560x4096,384x3072x8192 "$B" "$B --tile cols-128x80-tma-store" "$B --tile cols-128x80-tma-store-n2"
GPU_DIR=.gpu-cn bash bench/gemm-ab.sh 1024x1536x8192,768x2048x8192 "$B" "$B --tile cols-128x96-tma-store" "$B --tile cols-128x96-tma-store-n2"
GPU_DIR=.gpu-cn bash bench/gemm-ab.sh 1024x2048x8192,2048x1024x8192 "$B" "$B --tile narrow-tma-store" "$B --tile narrow-tma-store-n2"
# The counters: ncu on the unclustered and -n2 128 x 80 kernels (L2 read sectors, cycles).
mkdir -p /tmp/x
GPU_DIR=.gpu-cn OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu u80 --shape 1024x1280x8192 --tile cols-128x80-tma-store > /dev/null 2>&1
GPU_DIR=.gpu-cn OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu n80 --shape 1024x1280x8192 --tile cols-128x80-tma-store-n2 > /dev/null 2>&1
python3 bench/probes/ncu_compare.py /tmp/x/u80.ours.raw.csv /tmp/x/n80.ours.raw.csv /tmp/x/u80.cublas.raw.csv | head -12
