#!/usr/bin/env bash
# Run 434 (session 60, one GPU): branch attn-ffma (.gpu: the zigzag TMA maps per segment, then
# the one-FFMA softmax) against zigzag-segment-maps alone (.gpu-seg, bench only).
# carry [".gpu", ".gpu-seg"], command "bash bench/results/logs/run434/run.sh".
# Expected: tests pass (incl. zigzag_blocks_stay_within_their_segment, negative scales);
# ffma 5-10% faster at D = 64 (softmax-bound), 0-4% at D = 128.
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
shapes=1x4096x64x8x128c,1x16384x64x8x128cz,1x4096x64x8x128,1x8192x16x16x64,1x8192x16x16x64c
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed" | cut -c1-200 | tail -20
for i in 1 2; do
  echo "== ffma ($i)"
  bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 $([[ $i == 1 ]] && echo --check) --shape $shapes 2>&1 | grep -v "^# wrote" | tail -7
  echo "== seg ($i)"
  GPU_DIR=.gpu-seg bash bench/device-run.sh bench ring-attention --share-gpu --iters 10 --warmup 2 --no-json --shape $shapes 2>&1 | tail -7
done
# Profiles of the D = 64 loop (ours after the FFMA change; cuDNN's through PyTorch) and of D = 128 full, for
# where the 0.71x at D = 64 goes (tensor pipe, MUFU, stalls).
echo "== ncu"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
out=${OUT:-/tmp}
for sh in 1x8192x16x16x64 1x4096x64x8x128; do
  NCU_BENCH=ring-attention NCU_KERNELS=regex:mkernel_attention_d NCU_OURS=mkernel_attention NCU_COUNT=1 timeout 100 \
    bash bench/device-run.sh ncu "ours-$sh" --share-gpu --iters 1 --warmup 0 --shape $sh
done
for sh in 1x16384x16x16x64 1x8192x64x8x128; do
  timeout 100 "$ncu" --clock-control none --cache-control none --set full -k 'regex:sdpa|fmha|flash|attn|cudnn' -c 1 -f -o "$out/cudnn-$sh" \
    python3 bench/probes/torch_sdpa.py --shape $sh --backend cudnn --iters 1 > "$out/cudnn-$sh.run.log" 2>&1
  echo "cudnn $sh ncu rc $?"; "$ncu" --import "$out/cudnn-$sh.ncu-rep" --page details > "$out/cudnn-$sh.txt" 2>&1
done
grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Registers Per|Block Size|Grid Size|Dynamic Shared" "$out"/ours-*.txt "$out"/cudnn-*.txt | cut -c1-160 | head -60
