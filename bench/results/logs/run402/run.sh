#!/usr/bin/env bash
# run402 (session 52, the H100 of run 401, still warm; .gpu = a9a40fe's code, built as 6a5efa8-dirty). The bench's
# ragged reduce-scatter shapes on the epilogue path (head tiles on rank 1), then the all-reduce's epilogue-path tests.
GPU_DIR=.gpu timeout 100 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --check --check-reps 3 --iters 10 --no-json --filter ragged 2>&1 | tail -4 | cut -c1-330
OUT=$OUT/ar TEST_TIMEOUT=120 bash bench/device-run.sh tests gpu_gemm_allreduce split_last_wave_on_two_ranks_of_one_gpu column_fitted_tiles_on_the_epilogue_path clustered_tiles_on_the_epilogue_path
