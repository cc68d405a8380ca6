#!/usr/bin/env bash
# run411 (session 54, branch ag-gemm; one GPU, 2 ranks sharing it): the all-gather + GEMM with the push items dealt
# evenly (run 410: with an aligned shard every other push CTA was dealt only skipped own-chunk items) and ~256 KiB
# chunks by default (16 rows at K = 8192); its tests, then the bench beside run 410's settings.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp}; mkdir -p $OUT/logs
( export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
  timeout 150 .gpu/tests/gpu_allgather_gemm-* --test-threads=1 --nocapture > $OUT/logs/gpu_allgather_gemm.log 2>&1; echo "gpu_allgather_gemm rc=$?" )
grep -hE "panicked|test result|^test " $OUT/logs/gpu_allgather_gemm.log | cut -c1-200 | head -12
# (the default tile is now the plain GEMM's wave-fitted choice where this kernel has it, e.g. 128 x 168 at
# 1024x5120x8192; --tile wide-tma-store is the old default)
for flags in "" "--tile wide-tma-store" "--chunk-rows 128" "--push-ctas 2" "--push-ctas 16"; do
  echo "== allgather-gemm $flags"
  timeout 60 bash bench/device-run.sh bench allgather-gemm --share-gpu --check --iters 10 --no-json --shape 1024x5120x8192,4096x8192x4096 $flags 2>&1 | grep -E "^shape|error" | cut -c1-200
done
