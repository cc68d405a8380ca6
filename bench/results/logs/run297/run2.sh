#!/usr/bin/env bash
# run297 call 2 (after the boundary fix on rules-296): carry [".gpu", ".gpu-rules"]. The branch's gpu_gemm tests,
# then ncu of the same 123 tiles of 128 x 88 unsplit at M = 321 (0.051 ms) and M = 352 (0.037 ms): why the padded rows cost.
set -u
echo "### tests (branch)"
GPU_DIR=.gpu-rules TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|^FAIL|passed|failed|panicked" | tail -8
echo "### ncu"
mkdir -p /tmp/x
OUT=/tmp/x NCU_COUNT=2 timeout 150 bash bench/device-run.sh ncu m321 --shape 321x3536x8192 --tile cols-128x88-tma-store > /dev/null 2>&1
OUT=/tmp/x NCU_COUNT=2 timeout 150 bash bench/device-run.sh ncu m352 --shape 352x3536x8192 --tile cols-128x88-tma-store > /dev/null 2>&1
python3 bench/probes/ncu_compare.py /tmp/x/m321.ours.raw.csv /tmp/x/m352.ours.raw.csv 2>&1 | head -40
for n in m321 m352; do echo "== $n"; python3 bench/probes/sass_waits.py /tmp/x/$n.ours.sass.csv 2>&1 | head -30; gzip -c /tmp/x/$n.ours.raw.csv > $OUT/$n.ours.raw.csv.gz; gzip -c /tmp/x/$n.ours.sass.csv > $OUT/$n.ours.sass.csv.gz; done
