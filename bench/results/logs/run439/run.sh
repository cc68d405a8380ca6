#!/usr/bin/env bash
# Run 439 (prepared in session 60, not run): where the attention loop's cycles go. Nsight Compute
# with SASS-level stall samples of our D = 128 full and D = 64 full loops (main's .gpu), kept to the
# device's 8 returned files: each profile's details page and its SASS table only.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_ring_attention
# carry [".gpu"], command "bash bench/results/logs/run439/run.sh".
# Read: gunzip, then python3 bench/probes/sass_waits.py ours-SHAPE.ours.sass.csv (waits and hot instructions).
set -u
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
for sh in 1x4096x64x8x128 1x8192x16x16x64; do
  NCU_BENCH=ring-attention NCU_KERNELS=regex:mkernel_attention_d NCU_OURS=mkernel_attention NCU_COUNT=1 timeout 150 \
    bash bench/device-run.sh ncu "ours-$sh" --share-gpu --iters 1 --warmup 0 --shape $sh
  rm -f "$out/ours-$sh.ncu-rep" "$out/ours-$sh.run.log" "$out/ours-$sh.ours.raw.csv"
  gzip -f "$out/ours-$sh.ours.sass.csv"
done
ls -la "$out"
