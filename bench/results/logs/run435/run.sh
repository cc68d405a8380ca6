#!/usr/bin/env bash
# Run 435 (session 60, one GPU): attn-ffma 2b552fb+ (.gpu: segment maps, the one-FFMA softmax
# without the sign select, positive scales only) against zigzag-segment-maps (.gpu-seg), and
# D = 64 with 3 and 4 K/V stages (.gpu-s3, .gpu-s4: branches d64-stages3/4); PyTorch's cuDNN
# and FA2 on the same GPU; Nsight Compute summaries of our D = 64 and D = 128 loops.
# carry [".gpu", ".gpu-seg", ".gpu-s3", ".gpu-s4"], command "bash bench/results/logs/run435/run.sh".
# Expected: tests pass; ffma ~8% faster at D = 64 (run 434), D = 128 full no longer slower (the
# FSEL a score is gone); 3-4 stages at D = 64: 0-5%.
set -u
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rel_fro" | cut -c1-300 | tail -20
shapes=1x4096x64x8x128c,1x16384x64x8x128cz,1x4096x64x8x128,1x8192x16x16x64,1x8192x16x16x64c,1x2048x16x16x64
d64=1x8192x16x16x64,1x8192x16x16x64c,1x2048x16x16x64
b() { local dir=$1; shift; echo "== $dir"; GPU_DIR=$dir timeout 120 bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 "$@" 2>&1 | grep -E "^shape [0-9]" | cut -c1-110; }
b .gpu --check --shape $shapes
b .gpu-seg --no-json --shape $shapes
b .gpu-s3 --no-json --shape $d64
b .gpu-s4 --no-json --shape $d64
b .gpu --no-json --shape $shapes
b .gpu-seg --no-json --shape $shapes
b .gpu-s4 --no-json --shape $d64
b .gpu-s3 --no-json --shape $d64
echo "== torch"
timeout 120 python3 bench/probes/torch_sdpa.py --shape 1x16384x16x16x64 --shape 1x16384x16x16x64c --shape 1x8192x64x8x128 --shape 1x4096x16x16x64 --backend cudnn --backend flash --json "$out/torch_sdpa.json" 2>&1 | tail -9
echo "== ncu"
for sh in 1x8192x16x16x64 1x4096x64x8x128; do
  NCU_BENCH=ring-attention NCU_KERNELS=regex:mkernel_attention_d NCU_OURS=mkernel_attention NCU_COUNT=1 timeout 100 \
    bash bench/device-run.sh ncu "ours-$sh" --share-gpu --iters 1 --warmup 0 --shape $sh
  rm -f "$out/ours-$sh.ncu-rep" "$out/ours-$sh.run.log" "$out/ours-$sh.ours.raw.csv"
done
grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Issue Slots|Eligible Warps|Warp Cycles Per Issued|L2 Cache Throughput|Mem Pipes" "$out"/ours-*.txt | cut -c1-140
