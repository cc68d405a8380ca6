#!/usr/bin/env bash
# run400 (session 52, one GPU; .gpu as run399, 105ce02). Run 399 found the reduce-scatter tests failing on one H100:
# a kernel hit CUDA_ERROR_ILLEGAL_INSTRUCTION (sticky) in epilogue_path_keeps_each_ranks_rows, and every later test of
# that process failed at its first allocation. Here each test runs in a process of its own, with its eprintln lines
# (the last "ok <shape> <plan>" names the case before the failing one), then the failing one under compute-sanitizer.
set -u
nvidia-smi -L
base=${OUT:-/tmp}
for t in bad_arguments_are_named cuda_graph_replays_advance_epochs epilogue_path_keeps_each_ranks_rows \
         hundred_back_to_back_epochs_with_fresh_data missing_peer_times_out_naming_it one_rank_keeps_every_row \
         two_phase_paths_at_world_sizes_2_3_4_8; do
  echo "=== $t"
  OUT=$base/t-$t TEST_TIMEOUT=150 bash bench/device-run.sh tests gpu_gemm_reduce_scatter --exact "$t" --nocapture > /dev/null 2>&1
  grep -hE "^ok |panicked|Error|error|test result" $base/t-$t/test-logs/*.log | cut -c1-700 | tail -12
done
echo "=== single shapes, each in a process of its own (rank 1's first tile straddles the ranks' rows where M / 2 % 128 != 0)"
for shape in 1024x8192x512 2048x8192x512 130x8192x512 400x1000x200 2x512x64 512x8192x512 520x8192x512; do
  timeout 60 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --check --iters 3 --warmup-ms 50 --no-json --shape $shape 2>&1 | grep -E "^shape|rror" | cut -c1-300
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
echo "=== compute-sanitizer: ${cs:-none}"
if [[ -n $cs ]] && grep -q "panicked" $base/t-epilogue_path_keeps_each_ranks_rows/test-logs/*.log; then
  export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 MKERNEL_CACHE_DIR=/tmp/mkernel-jit
  timeout 240 "$cs" --tool memcheck --print-limit 20 .gpu/tests/gpu_gemm_reduce_scatter-* --exact epilogue_path_keeps_each_ranks_rows --nocapture --test-threads=1 > $base/sanitizer.log 2>&1
  echo "rc=$?"; grep -vE "^\s+#|^=========     Host Frame" $base/sanitizer.log | head -60 | cut -c1-400
fi
