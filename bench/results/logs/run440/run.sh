#!/usr/bin/env bash
# Run 440 (session 61, one GPU): branch moe-combine (.gpu): the new fused MoE grouped GEMM +
# combine's GPU tests (2-4 ranks sharing the GPU) and the dispatch's (its routing model moved
# to mkernel-tests::moe).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine --test gpu_moe_dispatch_gemm
# carry [".gpu"], command "bash bench/results/logs/run440/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=420 bash bench/device-run.sh tests gpu_moe 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|missing peer|rank [0-9]" | cut -c1-400 | tail -60
