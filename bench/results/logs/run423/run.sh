#!/usr/bin/env bash
# Run 423 (session 56): the MoE dispatch after helper-103's review (flags in the ready inbox,
# input errors in fields of their own and reported by synchronize only, ranks' arguments
# compared on the device), the all-gather and all-reduce tests (KernelStatus grew), then
# bench moe-dispatch-gemm with cuBLAS per expert as the reference (ranks sharing one GPU).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}
nvidia-smi --query-gpu=index,name,memory.used,utilization.gpu --format=csv,noheader || true
for t in gpu_moe_dispatch_gemm gpu_allgather_gemm gpu_gemm_allreduce; do
  bin=$(ls .gpu/tests/$t-* | head -1)
  timeout ${LIMIT:-170} "$bin" --test-threads=1 --nocapture > "$out/$t.log" 2>&1
  echo "== $t rc=$?"
  grep -E "^test |panicked|FAIL|assert" "$out/$t.log" | cut -c1-300 | head -30
done
mkdir -p "$out/json"
timeout 200 .gpu/bin/mkernel bench moe-dispatch-gemm --share-gpu --iters 10 --warmup 2 --check --out-dir "$out/json" 2>&1 | tail -4
