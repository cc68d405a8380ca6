#!/usr/bin/env bash
# Run 427 (session 56): the push copies a token row a warp (no 64-bit division per 16 bytes,
# 8 vectors a lane in flight) and chunks of 512 KiB by default; MoE tests, then the bench
# (Mixtral-like at chunks of 16 and the default; DeepSeek-like default), ranks sharing one H100.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
bin=$(ls .gpu/tests/gpu_moe_dispatch_gemm-* | head -1)
timeout 150 "$bin" --test-threads=1 --nocapture > "$out/gpu_moe_dispatch_gemm.log" 2>&1
echo "== gpu_moe_dispatch_gemm rc=$?"; grep -E "^test |panicked|FAIL" "$out/gpu_moe_dispatch_gemm.log" | cut -c1-200 | head
b() { timeout 120 .gpu/bin/mkernel bench moe-dispatch-gemm --share-gpu --iters 8 --warmup 2 --out-dir "$out/json" "$@" 2>&1 | grep -v "^#" | tail -2; }
echo "mixtral, chunks of 16"; b --filter mixtral --chunk-rows 16
echo "default (check)"; b --check
