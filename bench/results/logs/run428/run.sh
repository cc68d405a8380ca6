#!/usr/bin/env bash
# Run 428 (session 56): after helper-104's fixes (counts region at a fixed offset, max_tokens
# compared, chunks clamped, scratch by max_tokens): MoE tests (a max_tokens disagreement
# added), then the bench at the Mixtral-like shape with --check (ranks sharing one GPU).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
bin=$(ls .gpu/tests/gpu_moe_dispatch_gemm-* | head -1)
timeout 130 "$bin" --test-threads=1 --nocapture > "$out/gpu_moe_dispatch_gemm.log" 2>&1
echo "== gpu_moe_dispatch_gemm rc=$?"; grep -E "^test |panicked|FAIL" "$out/gpu_moe_dispatch_gemm.log" | cut -c1-200 | head -8
timeout 60 .gpu/bin/mkernel bench moe-dispatch-gemm --share-gpu --iters 8 --warmup 2 --check --filter mixtral --out-dir "$out/json" 2>&1 | grep -v "^#" | tail -2
