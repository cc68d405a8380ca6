#!/usr/bin/env bash
# run292: main 5eafd60 (producer warp + consumer descriptors). carry [".gpu"].
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm > $OUT/tests.log 2>&1
grep -E "FAILED|panicked|test result" $OUT/tests.log | grep -v "2 needed" | tail -8
mkdir -p /tmp/x
OUT=/tmp/x NCU_COUNT=2 timeout 120 bash bench/device-run.sh ncu r80 --shape 1024x1280x8192 --tile cols-128x80-tma-store > /tmp/x/r80.log 2>&1
python3 bench/probes/ncu_compare.py /tmp/x/r80.ours.raw.csv /tmp/x/r80.cublas.raw.csv > $OUT/ncu-r80.txt 2>&1; head -10 $OUT/ncu-r80.txt
timeout 200 bash bench/device-run.sh bench gemm --models --filter "M=1024 " --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 > $OUT/models.log 2>&1
python3 -c 'import json,glob,statistics,sys; r=json.load(open(sorted(glob.glob(sys.argv[1]+"/gemm-*.json"))[-1]))["rows"]; x=[a["ratio_to_cublas"] for a in r]; print(len(r), "rows, median", round(statistics.median(x),3), "below 0.9:", sum(v<0.9 for v in x))' "$OUT"
