#!/usr/bin/env bash
# run410 (session 54, branch ag-gemm 51a3ba8; one GPU, 2 ranks sharing it): why the fused all-gather + GEMM ran
# at ~0.5x of cuBLAS on the shared GPU in run 409. The same GEMM per rank (1024x5120x8192 and 4096x8192x4096)
# side by side: the all-reduce's fused kernel on the epilogue path (same GEMM size per rank) as a
# yardstick of a shared GPU's fused kernel, and the all-gather with other push CTAs and chunk sizes.
# First the all-gather + GEMM tests again after helper-98's fixes (chunk count, one timeout per a_operand, the
# plan's small grids, the back-to-back test with two input sets and checked all-reduces).
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}; mkdir -p $OUT/logs
( export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
  timeout 150 .gpu/tests/gpu_allgather_gemm-* --test-threads=1 --nocapture > $OUT/logs/gpu_allgather_gemm.log 2>&1; echo "gpu_allgather_gemm rc=$?" )
grep -hE "panicked|test result|^test |ok .*116|M64|chunks of 200" $OUT/logs/gpu_allgather_gemm.log | cut -c1-250 | head -20
for flags in "" "--push-ctas 2" "--push-ctas 24" "--chunk-rows 512"; do
  echo "== allgather-gemm $flags"
  timeout 60 bash bench/device-run.sh bench allgather-gemm --share-gpu --iters 10 --no-json --shape 1024x5120x8192,4096x8192x4096 $flags 2>&1 | grep -E "^shape|error" | cut -c1-200
done
echo "== gemm-allreduce epilogue, per rank 1024x5120x8192 and 4096x8192x4096"
timeout 90 bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --iters 20 --no-json --shape 1024x5120x8192,4096x8192x4096 2>&1 | grep -E "^shape|rror" | cut -c1-200
