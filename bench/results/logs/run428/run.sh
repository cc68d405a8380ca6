#!/usr/bin/env bash
# Run 428 (session 56): after helper-104's fixes (counts region at a fixed offset, max_tokens
# compared, chunks clamped, scratch by max_tokens): MoE tests (a max_tokens disagreement
# added), all-gather tests, then the bench with --check (ranks sharing one H100).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
for t in gpu_moe_dispatch_gemm gpu_allgather_gemm; do
  bin=$(ls .gpu/tests/$t-* | head -1)
  timeout 150 "$bin" --test-threads=1 --nocapture > "$out/$t.log" 2>&1
  echo "== $t rc=$?"; grep -E "^test |panicked|FAIL" "$out/$t.log" | cut -c1-200 | head -8
done
timeout 150 .gpu/bin/mkernel bench moe-dispatch-gemm --share-gpu --iters 8 --warmup 2 --check --out-dir "$out/json" 2>&1 | grep -v "^#" | tail -3
