#!/usr/bin/env bash
# Run 429 (prepared in session 57, no GPU lent then): the first run of ring attention
# (bench/NOTES.md 60), then run 428's MoE checks, then the all-gather's tests (arrival_flag moved
# to sync/wait.cuh). One GPU is enough (ranks share it). Pack first:
#   ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_ring_attention \
#       --test gpu_moe_dispatch_gemm --test gpu_allgather_gemm
# then run with carry [".gpu"], command "bash bench/results/logs/run429/run.sh".
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
t() {  # t NAME SECONDS [FILTER]: one test binary, its log under $out, a summary here
  local bin; bin=$(ls .gpu/tests/$1-* | head -1)
  timeout "$2" "$bin" --test-threads=1 --nocapture ${3:-} > "$out/$1${3:+-$3}.log" 2>&1
  echo "== $1 ${3:-} rc=$?"; grep -E "^test |panicked|FAIL|^ok |mismatch" "$out/$1${3:+-$3}.log" | cut -c1-240 | head -14
}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
part=${1:-all}  # ring (1-3), rest (4-5), all
if [[ $part != rest ]]; then
# 1. The unfused loop alone (one GPU, no peer): the compute core.
t gpu_ring_attention 120 attention_matches_the_reference_on_one_gpu
# 2. The fused kernel: 2-4 ranks sharing the GPU, epochs, a missing peer, bad arguments.
t gpu_ring_attention 240 ring_attention_
t gpu_ring_attention 120 many_units_per_cta
t gpu_ring_attention 120 epochs_back_to_back
t gpu_ring_attention 60 missing_peer
t gpu_ring_attention 60 bad_arguments
# 3. The protocol's speed on a shared GPU (not vs NCCL): two ranks, checked.
timeout 120 .gpu/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --check --out-dir "$out/json" 2>&1 | grep -v "^# wrote" | tail -8
fi
[[ $part == ring ]] && exit 0
# 4. Run 428: the MoE tests and its bench at the Mixtral-like shape.
t gpu_moe_dispatch_gemm 130
timeout 60 .gpu/bin/mkernel bench moe-dispatch-gemm --share-gpu --iters 8 --warmup 2 --check --filter mixtral --out-dir "$out/json" 2>&1 | grep -v "^#" | tail -2
# 5. The all-gather (its arrival_flag now lives in sync/wait.cuh).
t gpu_allgather_gemm 200
