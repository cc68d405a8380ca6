#!/usr/bin/env bash
# Run 443 (session 61, one GPU): branch moe-combine (.gpu) after the push's second rework: a warp a tile,
# no CTA barrier): the combine's tests, then its bench
# (two ranks sharing the GPU) at 8 / 16 / 24 push CTAs on both default shapes.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine
# carry [".gpu"], command "bash bench/results/logs/run443/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_moe_gemm_combine 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed" | cut -c1-400 | tail -20
for pc in 8 16; do
  timeout 150 bash bench/device-run.sh bench moe-gemm-combine --share-gpu --push-ctas $pc $([[ $pc == 8 ]] && echo --check) 2>&1 | grep -E "like|FAIL|error" | cut -c1-260
done
ls "${OUT:-/tmp}"
