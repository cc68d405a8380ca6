#!/usr/bin/env bash
# run289 (proposed): carry [".gpu", ".gpu-ci"].
set -u
GPU_DIR=.gpu-ci TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|^FAIL|passed|panicked" | tail -5
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
bash bench/gemm-ab-dirs.sh 1024x1280x8192,512x2560x4096,1024x1536x8192,1024x2048x8192,1024x768x4096,1024x5120x5120,4096x4096x4096,8192x8192x8192,1x14336x4096,64x8192x4096 "$B" .gpu .gpu-ci
for d in .gpu .gpu-ci; do
  mkdir -p "$OUT/models$d"
  OUT=$OUT/models$d GPU_DIR=$d bash bench/device-run.sh bench gemm --models --filter "M=1024 " --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 > /dev/null 2>&1
  python3 -c 'import json,glob,statistics,sys; r=json.load(open(glob.glob(sys.argv[1]+"/gemm-*.json")[0]))["rows"]; x=[a["ratio_to_cublas"] for a in r]; print(sys.argv[1], len(r), "rows, median", round(statistics.median(x),3), "below 0.9:", sum(v<0.9 for v in x), "check fails:", sum(1 for a in r if a.get("check") not in (None, "PASS") and not str(a.get("check")).startswith("PASS")))' "$OUT/models$d"
done
GPU_DIR=.gpu-ci TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce 2>&1 | grep -E "^ok|^FAIL|passed" | tail -3
# The counters behind it: ncu on both trees' 128 x 80 kernel (bench/probes/ncu_compare.py on the raw CSVs after).
NCU_COUNT=2 bash bench/device-run.sh ncu r80main --shape 1024x1280x8192 --tile cols-128x80-tma-store > /dev/null 2>&1
NCU_COUNT=2 GPU_DIR=.gpu-ci bash bench/device-run.sh ncu r80ci --shape 1024x1280x8192 --tile cols-128x80-tma-store > /dev/null 2>&1
python3 bench/probes/ncu_compare.py $OUT/r80main.ours.raw.csv $OUT/r80ci.ours.raw.csv $OUT/r80main.cublas.raw.csv
