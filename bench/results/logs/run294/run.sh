#!/usr/bin/env bash
# run294 (proposed): carry [".gpu-cn"], packed from branch cluster-n-port-2
# (bash bench/pack-rev.sh cluster-n-port-2 .gpu-cn gpu_gemm).
set -u
# Run 281's tests and A/B, unchanged (it reads the same .gpu-cn).
bash bench/results/logs/run281/run.sh
# The counters: ncu on the unclustered and -n2 128 x 80 kernels (L2 read sectors, cycles).
export GPU_DIR=.gpu-cn
mkdir -p /tmp/x
OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu u80 --shape 1024x1280x8192 --tile cols-128x80-tma-store > /dev/null 2>&1
OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu n80 --shape 1024x1280x8192 --tile cols-128x80-tma-store-n2 > /dev/null 2>&1
python3 bench/probes/ncu_compare.py /tmp/x/u80.ours.raw.csv /tmp/x/n80.ours.raw.csv /tmp/x/u80.cublas.raw.csv | head -10
