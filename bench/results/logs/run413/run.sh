#!/usr/bin/env bash
# run413 (session 55; one GPU, 2 ranks sharing it): ag-gemm-next + the producer's arrival waits polled by all
# lanes at once and a row block seen whole not waited for again (run 412: 16-row chunks cost 0.15 ms at
# 2048x8192x8192, 8 flags read in a row per tile). Tests, then main (.gpu-main) against the branch with its
# default, 128-row chunks, and the 128x256 tile with and without 2-CTA clusters.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}; mkdir -p $OUT/logs
( export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
  timeout 150 .gpu/tests/gpu_allgather_gemm-* --test-threads=1 --nocapture > $OUT/logs/gpu_allgather_gemm.log 2>&1; echo "gpu_allgather_gemm rc=$?" )
grep -hE "panicked|test result|^test " $OUT/logs/gpu_allgather_gemm.log | cut -c1-200 | head -12
shapes=1024x5120x8192,4096x8192x4096,2048x8192x8192,2048x3584x8192
run() { local g=$1; shift; echo "== $g $*"; GPU_DIR=$g timeout 90 bash bench/device-run.sh bench allgather-gemm --share-gpu --iters 20 --no-json --shape $shapes "$@" 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-200; }
run .gpu-main
run .gpu
run .gpu --chunk-rows 128
run .gpu --tile wide-tma-store
run .gpu --tile wide-tma-store-c2
run .gpu --tile wide-tma-store --chunk-rows 128
run .gpu-main
run .gpu --check
