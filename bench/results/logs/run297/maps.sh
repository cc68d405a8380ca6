#!/usr/bin/env bash
# run297 call 2: carry [".gpu", ".gpu-rules"]; the model maps at M = 256 and 1024 on both trees (JSON to $OUT).
set -u
for m in 256 1024; do
  for d in .gpu .gpu-rules; do
    echo "-- $d M=$m"
    GPU_DIR=$d bash bench/device-run.sh bench gemm --models --filter "M=$m " --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 2>&1 | grep -E "^M=|FAIL|error" | cut -c1-140 > /tmp/map-$m$d.txt
    grep -c PASS /tmp/map-$m$d.txt
  done
done
