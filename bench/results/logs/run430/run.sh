#!/usr/bin/env bash
# Run 430 (session 58, one GPU): ring attention's compute loop on wgmma (branch attn-wgmma:
# 2402e8d the plain loop in .gpu-basic, cf9c3cc with the intra-warpgroup overlap in .gpu)
# against main's mma.sync loop (334e0f5, packed in .gpu-main), and PyTorch
# SDPA's backends as the yardstick of one-GPU attention rates. The branch's MoE and
# all-gather tests double as the check of main's review tidy (host code the branch shares).
# Pack: cp -r .gpu .gpu-main (main's pack) then, on each branch commit (.gpu-basic: mv .gpu),
#   ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_ring_attention \
#       --test gpu_moe_dispatch_gemm --test gpu_allgather_gemm
# carry [".gpu", ".gpu-basic", ".gpu-main"], command "bash bench/results/logs/run430/run.sh [ring|rest|all]".
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
out=${OUT:-/tmp}; mkdir -p "$out/json" "$out/json-main"
t() {  # t NAME SECONDS [FILTER]: one test binary of $G (default .gpu), its log under $out, a summary here
  local g=${G:-.gpu} bin; bin=$(ls $g/tests/$1-* | head -1)
  timeout "$2" "$bin" --test-threads=1 --nocapture ${3:-} > "$out/$1${3:+-$3}${G:+$G}.log" 2>&1
  echo "== $g $1 ${3:-} rc=$?"; grep -E "^test |panicked|FAIL|^ok |mismatch" "$out/$1${3:+-$3}${G:+$G}.log" | cut -c1-240 | head -14
}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
part=${1:-all}
if [[ $part != rest ]]; then
G=.gpu-basic t gpu_ring_attention 120 attention_matches_the_reference_on_one_gpu
t gpu_ring_attention 120 attention_matches_the_reference_on_one_gpu
echo "== branch bench (wgmma, overlapped softmax)"
timeout 150 .gpu/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --check --out-dir "$out/json" 2>&1 | grep -v "^# wrote" | tail -9
echo "== branch bench (wgmma, plain)"
mkdir -p "$out/json-basic"
timeout 150 .gpu-basic/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --out-dir "$out/json-basic" 2>&1 | grep -v "^# wrote" | tail -9
echo "== main bench (mma.sync)"
timeout 150 .gpu-main/bin/mkernel bench ring-attention --share-gpu --iters 10 --warmup 2 --out-dir "$out/json-main" 2>&1 | grep -v "^# wrote" | tail -9
echo "== torch SDPA"
timeout 150 python3 bench/probes/torch_sdpa.py --json "$out/json/torch_sdpa.json" 2>&1 | tail -18
t gpu_ring_attention 240 ring_attention_
t gpu_ring_attention 120 many_units_per_cta
t gpu_ring_attention 120 epochs_back_to_back
t gpu_ring_attention 60 missing_peer
t gpu_ring_attention 60 bad_arguments
fi
[[ $part == ring ]] && exit 0
t gpu_moe_dispatch_gemm 130
t gpu_allgather_gemm 200
