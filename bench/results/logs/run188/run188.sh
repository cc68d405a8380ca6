#!/usr/bin/env bash
# run188 (2026-12-02): the fused kernel on one H200 (two ranks sharing it), unchanged since session 16 but its crate
# has moved under it (helper-44's review, the plain GEMM's rules): gpu_gemm_allreduce without its four two-GPU
# tests (last run: run 148), then --share-gpu --check on run 140's shapes, to compare with run 140's defaults.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], OUT=$OUT bash bench/results/logs/run188/run188.sh
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce --skip swapped_operand_tiles_on_the_epilogue_path \
  --skip paths_interleaved_back_to_back --skip missing_peer_times_out_naming_it --skip calls_queued_behind_a_timeout_do_nothing
b() { bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 800 "$@" 2>&1 | grep -vE '^#|^$' | cut -c1-200; }
b --shape 4096x4096x4096,8192x4096x4096,1024x4096x14336,2048x4096x14336,4096x3584x9216,2049x4096x4096,2049x4096x14336
