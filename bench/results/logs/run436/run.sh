#!/usr/bin/env bash
# Run 436 (session 60, one GPU): branch attn-d64-3wg (.gpu: three consumer warpgroups, 192-row
# units at D = 64) against attn-ffma (.gpu-ffma: two), the ring-attention tests first.
# carry [".gpu", ".gpu-ffma"], command "bash bench/results/logs/run436/run.sh".
# Expected: tests pass; D = 64 5-15% faster (FlashAttention-3's reason for 192 rows: a
# warpgroup's softmax, ~512 MUFU cycles, as long as its MMAs); D = 128 unchanged (same code).
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rel_fro" | cut -c1-300 | tail -20
shapes=1x8192x16x16x64,1x8192x16x16x64c,1x2048x16x16x64,1x8192x16x16x64cz,1x4096x64x8x128
b() { local dir=$1; shift; echo "== $dir"; GPU_DIR=$dir timeout 120 bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 "$@" 2>&1 | grep -E "^shape [0-9]" | cut -c1-230; }
b .gpu --check --shape $shapes
b .gpu-ffma --no-json --shape $shapes
b .gpu --no-json --shape $shapes
b .gpu-ffma --no-json --shape $shapes
