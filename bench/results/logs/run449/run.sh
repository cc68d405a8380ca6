#!/usr/bin/env bash
# Run 449 (session 62, one GPU): integ-62 after helper-118's review and helper-119's changes:
# the ring-attention tests (softmax scale bound, the one-GPU cases through unfused_round), the
# dispatch's tests (MoeRouting's total accessors), `bench moe-dispatch-gemm --share-gpu --check`
# (now also every entry's dest_rows against the model).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_dispatch_gemm --test gpu_ring_attention
# carry [".gpu"], command "bash bench/results/logs/run449/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ 2>&1 | grep -E "^ok |^FAIL|panicked|passed|failed" | cut -c1-300 | tail -10
timeout 100 bash bench/device-run.sh bench moe-dispatch-gemm --share-gpu --check 2>&1 | grep -E "like|FAIL|PASS|rror" | awk '{print substr($0,1,100) " ... " substr($0,length($0)-140)}'
