#!/usr/bin/env bash
# run409 (session 54, branch ag-gemm; one GPU, ranks sharing it): the fused all-gather + GEMM's first GPU run
# (gpu_allgather_gemm: world 2-4, 100 epochs with all-reduces between, missing peer, bad arguments), then
# bench allgather-gemm --share-gpu --check, then the engine change's regression check (TileScheduler::rot_pm, the
# producer's hook, the shared call start/end helpers): gpu_gemm_reduce_scatter, gpu_gemm_allreduce, gpu_gemm.
set -u
nvidia-smi -L
export OUT=${OUT:-/tmp} LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export MKERNEL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 RUST_BACKTRACE=1
mkdir -p $OUT/logs
t0=$(date +%s)
timeout 240 .gpu/tests/gpu_allgather_gemm-* --test-threads=1 --nocapture > $OUT/logs/gpu_allgather_gemm.log 2>&1; echo "gpu_allgather_gemm rc=$? ($(( $(date +%s) - t0 )) s)"
grep -hE "^ok|panicked|FAIL|test result|missing peer|^test " $OUT/logs/gpu_allgather_gemm.log | cut -c1-300 | head -40
timeout 100 bash bench/device-run.sh bench allgather-gemm --share-gpu --check --iters 10 --no-json 2>&1 | tail -8 | cut -c1-300
for t in gpu_gemm_reduce_scatter gpu_gemm_allreduce gpu_gemm; do
  left=$(( 560 - ($(date +%s) - t0) )); [[ $left -lt 30 ]] && { echo "no time left for $t"; break; }
  timeout $left .gpu/tests/$t-* --test-threads=1 > $OUT/logs/$t.log 2>&1; echo "$t rc=$? ($(( $(date +%s) - t0 )) s): $(grep -E '^test result' $OUT/logs/$t.log | tail -1)"
  grep -E "panicked|^test .* FAILED" $OUT/logs/$t.log | head -8 | cut -c1-300
done
