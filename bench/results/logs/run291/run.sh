#!/usr/bin/env bash
# run291: carry [".gpu", ".gpu-pw", ".gpu-pc"] (.gpu-pc: producer-warp + consumer-issue, bin only; lib folders left out: no binary links them).
set -u
GPU_DIR=.gpu-pw TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm > $OUT/tests.log 2>&1
grep -E "FAILED|panicked|test result" $OUT/tests.log | grep -v "2 needed" | tail -8
export ITERS=10 WARMUP_MS=200
timeout 300 bash bench/gemm-ab-dirs.sh 1024x1280x8192,512x2560x4096,1024x1536x8192,1024x2048x8192,1024x768x4096,1024x5120x5120,4096x4096x4096,8192x8192x8192,1x14336x4096,64x8192x4096 "--host-gate --back-to-back 20" .gpu .gpu-pw .gpu-pc > $OUT/ab.log 2>&1
cut -c1-100 $OUT/ab.log
mkdir -p /tmp/x
GPU_DIR=.gpu-pw OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu pw --shape 1024x1280x8192 --tile cols-128x80-tma-store > /tmp/x/pw.log 2>&1
python3 bench/probes/ncu_compare.py /tmp/x/pw.ours.raw.csv /tmp/x/pw.cublas.raw.csv | head -12
cp /tmp/x/pw.ours.raw.csv /tmp/x/pw.ours.sass.csv $OUT/
