#!/usr/bin/env bash
# Run 437 (session 60, one GPU): D = 128 with one Q stage and three K/V stages (.gpu-q1, branch
# d128-q1s3) against attn-d64-3wg (.gpu: two and two), interleaved; then Nsight Compute summaries
# of our D = 128 and D = 64 loops (.gpu), text only.
# carry [".gpu", ".gpu-q1"], command "bash bench/results/logs/run437/run.sh".
# Expected: cuDNN keeps ~3 K/V stages at D = 128 (232 KB); 0-5% either way (two Q stages
# helped short units 3-9%, 63.2: stages did nothing at D = 64).
set -u
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
shapes=1x4096x64x8x128,1x4096x64x8x128c,1x1024x64x8x128c,1x16384x64x8x128cz
b() { local dir=$1; shift; echo "== $dir"; GPU_DIR=$dir timeout 120 bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 "$@" 2>&1 | grep -E "^shape [0-9]" | cut -c1-200; }
b .gpu-q1 --check --no-json --shape $shapes
b .gpu --no-json --shape $shapes
b .gpu-q1 --no-json --shape $shapes
b .gpu --no-json --shape $shapes
echo "== ncu"
for sh in 1x4096x64x8x128 1x8192x16x16x64; do
  NCU_BENCH=ring-attention NCU_KERNELS=regex:mkernel_attention_d NCU_OURS=mkernel_attention NCU_COUNT=1 timeout 100 \
    bash bench/device-run.sh ncu "ours-$sh" --share-gpu --iters 1 --warmup 0 --shape $sh
  rm -f "$out/ours-$sh.ncu-rep" "$out/ours-$sh.run.log" "$out/ours-$sh.ours.raw.csv" "$out/ours-$sh.ours.sass.csv"
done
grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Issue Slots|Eligible Warps|Warp Cycles Per Issued|L2 Cache Throughput|Tensor|pipeline|Registers Per|Local Memory" "$out"/ours-*.txt | cut -c1-170
