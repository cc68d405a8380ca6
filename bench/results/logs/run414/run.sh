#!/usr/bin/env bash
# run414 (session 55; one GPU, 2 ranks sharing it): ag-gemm-next with no clustered default tile on a shared GPU;
# main (.gpu-main) against the branch's default, alternated twice, on six shapes; --check once.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}
shapes=1024x5120x8192,4096x8192x4096,2048x8192x8192,2048x3584x8192,8192x5120x8192,1024x28672x8192
run() { local g=$1; shift; echo "== $g $*"; GPU_DIR=$g timeout 120 bash bench/device-run.sh bench allgather-gemm --share-gpu --iters 20 --no-json --shape $shapes "$@" 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-200; }
run .gpu-main
run .gpu
run .gpu-main
run .gpu --check
