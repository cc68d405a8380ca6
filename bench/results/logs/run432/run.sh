#!/usr/bin/env bash
# Run 432 (session 59, one GPU): ring attention with two Q stages and the consumer warpgroups'
# ping-pong turns (branch attn-pingpong, .gpu), against two Q stages alone (.gpu-q2) and main's
# 5fdaa71 (.gpu-main), then PyTorch's SDPA backends on the same GPU.
# carry [".gpu", ".gpu-q2", ".gpu-main"], command "bash bench/results/logs/run432/run.sh".
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}; mkdir -p "$out/json"
t() {  # t NAME SECONDS [FILTER]: one test binary of .gpu, its log under $out, a summary here
  local bin; bin=$(ls .gpu/tests/$1-* | head -1)
  timeout "$2" "$bin" --test-threads=1 --nocapture ${3:-} > "$out/$1${3:+-$3}.log" 2>&1
  echo "== $1 ${3:-} rc=$?"; grep -E "^test |panicked|FAIL|^ok |mismatch" "$out/$1${3:+-$3}.log" | cut -c1-240 | head -14
}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
t gpu_ring_attention 60 attention_matches_the_reference_on_one_gpu
echo "== pingpong bench"
timeout 120 .gpu/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --check --out-dir "$out/json" 2>&1 | grep -v "^# wrote" | tail -7
echo "== q2 bench"
timeout 90 .gpu-q2/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --no-json 2>&1 | tail -6
echo "== main bench"
timeout 90 .gpu-main/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --no-json 2>&1 | tail -6
t gpu_ring_attention 120 ring_attention_
t gpu_ring_attention 60 many_units_per_cta
t gpu_ring_attention 60 epochs_back_to_back
t gpu_ring_attention 30 missing_peer
t gpu_ring_attention 30 bad_arguments
echo "== pingpong bench again (order effects)"
timeout 100 .gpu/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --no-json 2>&1 | tail -6
echo "== torch sdpa"
timeout 150 python3 bench/probes/torch_sdpa.py --json "$out/json/torch_sdpa.json" 2>&1 | tail -12
