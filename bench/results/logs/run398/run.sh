#!/usr/bin/env bash
# run398 (prepared in session 51; one H200 or the pair; ~4 min). Branch gemm-rs: the fused GEMM + reduce-scatter
# (NOTES 54), never run on a GPU before. Pack here:
#   ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm_reduce_scatter --test gpu_gemm_allreduce
# then run with carry [".gpu"]: bash bench/results/logs/run398/run.sh
# Expected: every reduce-scatter test passes (each rank's rows against the fp32 reference, the all-reduce's bits on
# the same path); the all-reduce tests that run on one GPU still pass (their kernels' code is unchanged: kScatter is a
# template parameter, and the engine's c_store_row gives row0). On one H200 the bench rows compare nothing (no NCCL
# with --share-gpu); they check through the bench's own path.
set -u
export GPU_DIR=.gpu
echo "== reduce-scatter tests"
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_reduce_scatter
echo "== all-reduce tests on the engine's changed storer (c_store_row)"
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm_allreduce split_last_wave_on_two_ranks_of_one_gpu column_fitted_tiles_on_the_epilogue_path clustered_tiles_on_the_epilogue_path
echo "== bench gemm-reduce-scatter --check"
if nvidia-smi -L | grep -c GPU | grep -q '^1$'; then
  timeout 200 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --check --check-reps 3 --iters 10 --no-json --filter "M=1024" 2>&1 | tail -8
  timeout 100 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --gpus 4 --check --iters 5 --no-json --filter "ragged" 2>&1 | tail -6
else
  timeout 300 bash bench/device-run.sh bench gemm-reduce-scatter --check --check-reps 10 --iters 30 --warmup-ms 1500 2>&1 | tail -22
fi
