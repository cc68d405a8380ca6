#!/usr/bin/env bash
# run294 (proposed): carry [".gpu-cn"]; GPU_DIR=.gpu-cn = branch cluster-n-port-2 (bash bench/pack-rev.sh cluster-n-port-2 .gpu-cn gpu_gemm).
set -u
export GPU_DIR=.gpu-cn
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|^FAIL|test result|FAILED|failed|panicked|passed" | tail -20
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 1024x1280x8192,512x2560x4096,384x3072x8192 "$B" "$B --tile cols-128x80-tma-store" "$B --tile cols-128x80-tma-store-n2"
bash bench/gemm-ab.sh 1024x1536x8192,768x2048x8192 "$B" "$B --tile cols-128x96-tma-store" "$B --tile cols-128x96-tma-store-n2"
bash bench/gemm-ab.sh 1024x2048x8192,2048x1024x8192 "$B" "$B --tile narrow-tma-store" "$B --tile narrow-tma-store-n2"
bash bench/gemm-ab.sh 1024x1280x8192,512x2560x4096 "$B --tile cols-128x64-tma-store" "$B --tile cols-128x64-tma-store-n2"
# The counters: ncu on the unclustered and -n2 128 x 80 kernels (L2 read sectors, cycles).
mkdir -p /tmp/x
OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu u80 --shape 1024x1280x8192 --tile cols-128x80-tma-store > /dev/null 2>&1
OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu n80 --shape 1024x1280x8192 --tile cols-128x80-tma-store-n2 > /dev/null 2>&1
python3 bench/probes/ncu_compare.py /tmp/x/u80.ours.raw.csv /tmp/x/n80.ours.raw.csv /tmp/x/u80.cublas.raw.csv | head -10
