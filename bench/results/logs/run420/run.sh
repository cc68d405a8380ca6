#!/usr/bin/env bash
# run420 (session 55; one GPU, 2 ranks sharing it): rs-own-last after helper-101's review (split slices' trace ids,
# groups dividing shards of more than 8 pairs, a rank-ordered split test case). Tests; main against the branch once
# on the aligned shapes plus M = 3072 (12 pairs: groups of 6 now) and M = 6144; --check.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ 2>&1 | grep -E "^ok|^FAIL|panicked|test result|passed" | cut -c1-300
shapes=2048x8192x4096,4096x8192x4096,3072x8192x4096,6144x8192x4096,2048x7168x9216
run() { local g=$1; shift; echo "== $g $*"; GPU_DIR=$g timeout 150 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --iters 20 --no-json --shape $shapes "$@" 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-100; }
run .gpu-main; run .gpu; run .gpu-main
run .gpu --check --check-reps 3
grep -E "^shape [0-9]" $OUT/bench.log | tail -5 | grep -oE "(PASS|FAIL)[^|]*$"
