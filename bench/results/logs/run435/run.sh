#!/usr/bin/env bash
# Run 435 (session 60, one GPU): attn-ffma 2b552fb+ (.gpu: segment maps, the one-FFMA softmax
# without the sign select, positive scales only) against zigzag-segment-maps (.gpu-seg), and
# D = 64 with 3 and 4 K/V stages (.gpu-s3, .gpu-s4: branches d64-stages3/4)
# (the torch and Nsight Compute steps were dropped before it ran: the device budget).
# carry [".gpu", ".gpu-seg", ".gpu-s3", ".gpu-s4"], command "bash bench/results/logs/run435/run.sh".
# Expected: tests pass; ffma ~8% faster at D = 64 (run 434), D = 128 full no longer slower (the
# FSEL a score is gone); 3-4 stages at D = 64: 0-5%.
set -u
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rel_fro" | cut -c1-300 | tail -20
shapes=1x4096x64x8x128c,1x16384x64x8x128cz,1x4096x64x8x128,1x8192x16x16x64,1x8192x16x16x64c,1x2048x16x16x64
d64=1x8192x16x16x64,1x8192x16x16x64c,1x2048x16x16x64
b() { local dir=$1; shift; echo "== $dir"; GPU_DIR=$dir timeout 120 bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 "$@" 2>&1 | grep -E "^shape [0-9]" | cut -c1-230; }
b .gpu --check --shape $shapes
b .gpu-seg --no-json --shape $shapes
b .gpu-s3 --no-json --shape $d64
b .gpu-s4 --no-json --shape $d64
b .gpu --no-json --shape $shapes
b .gpu-seg --no-json --shape $shapes
b .gpu-s4 --no-json --shape $d64
b .gpu-s3 --no-json --shape $d64
