#!/usr/bin/env bash
# run289 part 2: ncu on both trees' 128 x 80 kernel, side by side with cuBLAS's.
set -u
NCU_COUNT=2 timeout 250 bash bench/device-run.sh ncu r80main --shape 1024x1280x8192 --tile cols-128x80-tma-store > $OUT/ncu-main.log 2>&1; echo "main rc $?"
NCU_COUNT=2 GPU_DIR=.gpu-ci timeout 250 bash bench/device-run.sh ncu r80ci --shape 1024x1280x8192 --tile cols-128x80-tma-store > $OUT/ncu-ci.log 2>&1; echo "ci rc $?"
tail -3 $OUT/ncu-main.log $OUT/ncu-ci.log
python3 bench/probes/ncu_compare.py $OUT/r80main.ours.raw.csv $OUT/r80ci.ours.raw.csv $OUT/r80main.cublas.raw.csv
