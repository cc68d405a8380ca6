#!/usr/bin/env bash
# Run 445 (session 62, one GPU; main f4dd32f): (1) the combine's tests, rerunning run 444's
# different-tiles case after its test-only fix (both kernels loaded before the ranks wait on
# each other); (2) run 439 as prepared in session 60: SASS-level stall samples of the attention
# loop at D = 128 full and D = 64 full.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine --test gpu_ring_attention
# carry [".gpu"], command "bash bench/results/logs/run445/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_moe_gemm_combine 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rank [0-9]" | cut -c1-400 | tail -20
bash bench/results/logs/run439/run.sh 2>&1 | grep -v "^==PROF==" | tail -30
