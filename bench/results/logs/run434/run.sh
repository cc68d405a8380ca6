#!/usr/bin/env bash
# Run 434 (session 59, one GPU): zigzag TMA maps per segment (branch zigzag-segment-maps, .gpu):
# the ring-attention tests, then the bench's zigzag and contiguous causal S=4096 with --check.
# carry [".gpu"], command "bash bench/results/logs/run434/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^test |panicked|passed|failed" | cut -c1-200 | tail -20
bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 --check --shape 1x4096x64x8x128c,1x4096x64x8x128cz 2>&1 | grep -v "^# wrote" | tail -3
