#!/usr/bin/env bash
# run417 (session 55; one GPU, 2 ranks sharing it): ag-gemm-next after helper-100's review (a __syncwarp after the
# lanes' vote; shards of 1-3 pairs keep raster groups of 8). Tests, then main against the branch with --check.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}; mkdir -p $OUT/logs
( export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
  timeout 150 .gpu/tests/gpu_allgather_gemm-* --test-threads=1 --nocapture > $OUT/logs/gpu_allgather_gemm.log 2>&1; echo "gpu_allgather_gemm rc=$?" )
grep -hE "panicked|test result|^test " $OUT/logs/gpu_allgather_gemm.log | cut -c1-200 | head -12
shapes=1024x5120x8192,1024x28672x8192,1536x8192x8192,2048x3584x8192,1024x4096x4096
run() { local g=$1; shift; echo "== $g $*"; GPU_DIR=$g timeout 120 bash bench/device-run.sh bench allgather-gemm --share-gpu --iters 20 --no-json --shape $shapes "$@" 2>&1 | grep -E "^shape [0-9]|rror" | cut -c1-200; }
run .gpu-main
run .gpu --check
run .gpu --gpus 4 --check
