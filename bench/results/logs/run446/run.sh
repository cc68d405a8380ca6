#!/usr/bin/env bash
# Run 446 (session 62, one GPU): branch attn-cond-rescale (.gpu-cr: conditional rescaling of O,
# FlashAttention-4's, and each block's place found before its waits) against main (.gpu), the
# ring-attention tests of the branch first (a new case: growing / shrinking row maxima).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_moe_gemm_combine --test gpu_ring_attention
#       bash bench/pack-rev.sh attn-cond-rescale .gpu-cr gpu_ring_attention
# carry [".gpu", ".gpu-cr"], command "bash bench/results/logs/run446/run.sh".
# Expected: tests pass; D = 128 3-8% faster (64 FMULs and the correction's ex2 off each block's
# critical path), D = 64 2-6% (6.5% fewer issue slots; MUFU unchanged).
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
GPU_DIR=.gpu-cr TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rel_fro" | cut -c1-300 | tail -24
shapes=1x8192x16x16x64,1x8192x16x16x64c,1x2048x16x16x64,1x8192x16x16x64cz,1x4096x64x8x128,1x4096x64x8x128c
b() { local dir=$1; shift; echo "== $dir"; GPU_DIR=$dir timeout 120 bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 "$@" 2>&1 | grep -E "^shape [0-9]|FAIL|rror" | cut -c1-230; }
b .gpu-cr --check --shape $shapes
b .gpu --no-json --shape $shapes
b .gpu-cr --no-json --shape $shapes
b .gpu --no-json --shape $shapes
b .gpu-cr --no-json --shape $shapes
