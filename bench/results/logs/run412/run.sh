#!/usr/bin/env bash
# run412 (session 55; one GPU, 2 ranks sharing it): A/B of the all-gather + GEMM, main 7dff6d1 (.gpu-main: push
# items dealt round-robin per kind, 128-row chunks, 128x256 default) against ag-gemm-next (.gpu: even deal,
# ~256 KiB chunks, wave-fitted default tile), alternated twice on four shapes; then CUPTI kernel spans of the
# branch at 1024x5120x8192 (each rank's kernel time, apart from the step's skew).
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}
shapes=1024x5120x8192,4096x8192x4096,2048x8192x8192,2048x3584x8192
for rep in 1 2; do
  for g in .gpu-main .gpu; do
    echo "== rep $rep $g"
    GPU_DIR=$g timeout 90 bash bench/device-run.sh bench allgather-gemm --share-gpu --iters 20 --no-json --shape $shapes 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-230
  done
done
echo "== branch --chunk-rows 128"
timeout 90 bash bench/device-run.sh bench allgather-gemm --share-gpu --iters 20 --no-json --shape $shapes --chunk-rows 128 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-230
echo "== spans, branch, 1024x5120x8192"
timeout 120 bash bench/device-run.sh spans allgather-gemm --share-gpu --iters 40 --no-json --shape 1024x5120x8192 2>&1 | grep -vE "^#|^$" | cut -c1-260 | tail -14
