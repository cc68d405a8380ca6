#!/usr/bin/env bash
# run406 (session 53; one GPU; .gpu = rs-head-red2 after helper-96's review): the reduce-scatter tests with head tiles
# in the graph replays and the 30 alternating calls (M = 1040 on 128 x 256 tiles) and a split last wave whose slices
# are head tiles (2 x 41472 x 512); then --check on ragged shapes of the three models (head tiles on the default plans).
# Expected: all pass.
set -u
nvidia-smi -L
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm_reduce_scatter --nocapture 2>&1 | grep -E "^ok|^FAIL|panicked|test result" | cut -c1-300
timeout 200 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --iters 10 --no-json --check --check-reps 3 \
  --shape 136x8192x4096,2056x8192x4096,1040x7168x9216,2056x8192x14336,4104x8192x4096 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-420
