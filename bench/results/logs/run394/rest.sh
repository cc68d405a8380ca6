#!/usr/bin/env bash
# Session 49, the same warm H200 right after both.sh: what both.sh cut short or got wrong.
set -u
# gpu_gemm's last test on the branch (both.sh's 130 s bound ran out in it).
TEST_TIMEOUT=100 GPU_DIR=.gpu-wc2 bash bench/device-run.sh tests gpu_gemm two_row_blocks_c2_default_matches_reference | tail -2
# bench::alloc on a shape inside the 2^37-element rule but beyond the GPU (C alone 256 GiB): expected exit 1 naming
# shape, rank, buffer and size.
timeout 40 env GPU_DIR=.gpu bash bench/device-run.sh bench gemm-allreduce --share-gpu --iters 1 --shape 131072x1048576x4096 2>&1 | tail -3
# run 394's two further shapes (o-proj down-projection M=2048 and DeepSeek M=4096, M halved).
timeout 200 env GPU_DIR=.gpu bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 \
  --warmup-ms 1500 --shape 1024x8192x14336,2048x7168x9216 \
  --sweep-tiles wide-tma-store-c2,cols-128x144-tma-store-c2,cols-128x176-tma-store-c2,cols-128x168-tma-store > "$OUT/share394b.log" 2>&1
echo "rc=$?"; grep -E "^shape|path tile" "$OUT/share394b.log" | cut -c1-330
