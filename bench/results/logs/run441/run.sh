#!/usr/bin/env bash
# Run 441 (session 61, one GPU): branch moe-combine (.gpu): bench moe-gemm-combine's first run,
# two ranks sharing the GPU (so against cuBLAS per expert only), --check, both default shapes;
# then the dispatch's bench on the same GPU for its ratio next to it.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine
# carry [".gpu"], command "bash bench/results/logs/run441/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
timeout 250 bash bench/device-run.sh bench moe-gemm-combine --share-gpu --check 2>&1 | tail -25
timeout 120 bash bench/device-run.sh bench moe-dispatch-gemm --share-gpu 2>&1 | tail -8
ls "${OUT:-/tmp}"
