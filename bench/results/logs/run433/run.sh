#!/usr/bin/env bash
# Run 433 (session 59, one GPU): ring attention over zigzag shards (branch attn-zigzag, .gpu):
# every ring-attention test, then the bench with --check on causal shapes, contiguous and zigzag.
# carry [".gpu"], command "bash bench/results/logs/run433/run.sh".
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
t() {  # t NAME SECONDS [FILTER]: one test binary of .gpu, its log under $out, a summary here
  local bin; bin=$(ls .gpu/tests/$1-* | head -1)
  timeout "$2" "$bin" --test-threads=1 --nocapture ${3:-} > "$out/$1${3:+-$3}.log" 2>&1
  echo "== $1 ${3:-} rc=$?"; grep -E "^test |panicked|FAIL|^ok |mismatch" "$out/$1${3:+-$3}.log" | cut -c1-200 | head -24
}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
t gpu_ring_attention 90 attention_matches_the_reference_on_one_gpu
t gpu_ring_attention 200 ring_attention_
t gpu_ring_attention 60 many_units_per_cta
t gpu_ring_attention 60 epochs_back_to_back
t gpu_ring_attention 30 missing_peer
t gpu_ring_attention 30 bad_arguments
echo "== bench"
timeout 200 .gpu/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --check --out-dir "$out/json" --shape 1x1024x64x8x128cz,1x4096x64x8x128c,1x4096x64x8x128cz,1x16384x64x8x128c,1x16384x64x8x128cz 2>&1 | grep -v "^# wrote" | tail -7
