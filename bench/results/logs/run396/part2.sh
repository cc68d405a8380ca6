#!/usr/bin/env bash
# run396 part 2 (same warm H200): the old pair defaults that are swapped-operand tiles, with N halved instead of M
# (the swapped tiles pad M, so M halved changes their tiles per CTA; N halved keeps them, and the column tiles' too
# where the width divides N/2: 192 at 4608; 184 at 1440 makes 8 blocks against the pair's 16, the swapped tiles 12
# against 23). Pair shape: old -> new: 1024x9216x4096 swap-152 -> 192-c2; 1024x2880x4096 swap-208 -> 184.
set -u
export GPU_DIR=.gpu
b() { timeout 120 bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 1000 --no-json "$@" 2>&1 | grep -E "^shape [0-9]|path tile|error" | cut -c1-330; }
b --shape 1024x4608x4096 --sweep-tiles swap-ab-128x152-tma-store,cols-128x192-tma-store-c2
b --shape 1024x1440x4096 --sweep-tiles swap-ab-128x208-tma-store,cols-128x184-tma-store
b --shape 1024x4608x4096 --sweep-tiles cols-128x192-tma-store-c2,swap-ab-128x152-tma-store
b --shape 1024x1440x4096 --sweep-tiles cols-128x184-tma-store,swap-ab-128x208-tma-store
