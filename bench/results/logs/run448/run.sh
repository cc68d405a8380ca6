#!/usr/bin/env bash
# Run 448 (session 62, one GPU): the integration branch integ-62 as it lands (helper-117's host
# routing model now behind both MoE tests and both MoE benches' --check; the attention with
# conditional rescaling): the MoE tests and the ring-attention tests, then both MoE benches
# with --check on the shared GPU.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine --test gpu_moe_dispatch_gemm --test gpu_ring_attention
# carry [".gpu"], command "bash bench/results/logs/run448/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_moe 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rank [0-9]" | cut -c1-300 | tail -16
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|panicked|passed|failed" | cut -c1-300 | tail -6
for b in moe-dispatch-gemm moe-gemm-combine; do
  timeout 100 bash bench/device-run.sh bench $b --share-gpu --check 2>&1 | grep -E "like|FAIL|PASS|rror" | awk '{print substr($0,1,100) " ... " substr($0,length($0)-140)}'
done
