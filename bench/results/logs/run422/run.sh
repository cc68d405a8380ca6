#!/usr/bin/env bash
# Run 422 (session 56): first GPU run of the fused MoE dispatch + grouped GEMM (ranks sharing
# one GPU), and the all-gather's tests after the engine's kGroupsB change.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}
nvidia-smi --query-gpu=index,name,memory.used,utilization.gpu --format=csv,noheader || true
for t in gpu_moe_dispatch_gemm gpu_allgather_gemm; do
  bin=$(ls .gpu/tests/$t-* | head -1)
  timeout ${LIMIT:-200} "$bin" --test-threads=1 --nocapture > "$out/$t.log" 2>&1
  echo "== $t rc=$?"
  grep -E "^test |^ok |panicked|SKIP|FAIL|assert" "$out/$t.log" | cut -c1-400 | head -40
done
