#!/usr/bin/env bash
# Run 425 (session 56): where the MoE dispatch + GEMM's time goes at the Mixtral-like shape
# (2 ranks sharing one H100): the default, one expert a rank (no grouping), more push CTAs,
# longer chunks, 128 x 128 tiles.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
b() { timeout 100 .gpu/bin/mkernel bench moe-dispatch-gemm --share-gpu --iters 8 --warmup 2 --filter mixtral --out-dir "$out/json" "$@" 2>&1 | grep -v "^#" | tail -1; }
echo "default";            b
echo "one expert a rank";  b --experts 2
echo "24 push CTAs";       b --push-ctas 24
echo "chunks of 128";      b --chunk-rows 128
echo "128x128 tiles";      b --tile narrow-tma-store
echo "K 1024";             b --k 1024
