#!/usr/bin/env bash
# run419 (session 55; one GPU, 2 ranks sharing it): rs-own-last with ragged shapes kept on the common order. Tests,
# then the reduce-scatter, main 7dff6d1 (.gpu-main) against the branch, twice, aligned and ragged shapes; --check.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ 2>&1 | grep -E "^ok|^FAIL|panicked|test result|passed" | cut -c1-300
shapes=1024x8192x4096,2048x8192x4096,4096x8192x4096,2048x7168x9216,2050x8192x4096,2056x8192x14336
run() { local g=$1; shift; echo "== $g $*"; GPU_DIR=$g timeout 150 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --iters 20 --no-json --shape $shapes "$@" 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-150; }
for rep in 1 2; do run .gpu-main; run .gpu; done
run .gpu --check --check-reps 3
