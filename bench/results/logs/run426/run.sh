#!/usr/bin/env bash
# Run 426 (session 56): one system-scope fence per pushed chunk (thread 0, after the barrier)
# instead of one in every thread; chunk lengths 16-128 tokens (2 ranks sharing one H100).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
b() { timeout 100 .gpu/bin/mkernel bench moe-dispatch-gemm --share-gpu --iters 8 --warmup 2 --out-dir "$out/json" "$@" 2>&1 | grep -v "^#" | tail -2; }
for c in 16 32 64 128; do echo "chunks of $c"; b --chunk-rows $c; done
echo "one expert a rank, chunks of 128"; b --experts 2 --filter mixtral --chunk-rows 128
