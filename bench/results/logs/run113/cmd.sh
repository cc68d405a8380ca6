# run113 (2x H200), branch swap-ab-128 (89df426) binary: data for two default rules.
# (1) plain GEMM default vs swap-ab-128-fit over M = 257..8192 (the busiest SM's work model says fit <= default
#     everywhere but 64-row tiles are less efficient per MAC than 128-row ones; expect fit wins where M % 128 is small).
# (2) fused, M = 128..256 (default takes one-shot with 128x128 Registers tiles): epilogue path with narrow TMA-store
#     or swapped 64xR TMA-store tiles; expect swapped ~0.045 ms at M=128 (M=129's 0.046) against one-shot 0.055.
# (3) fused, M > 256: default vs the fitted 128-row swapped TMA-store tile per shape.
set -u
L=257x8192x4096,300x8192x4096,384x8192x4096,520x8192x4096,640x8192x4096,777x8192x4096,1000x8192x4096,1500x8192x4096,2049x8192x4096,3000x8192x4096,4097x8192x4096,5000x8192x4096,8192x8192x4096,2049x7168x9216,3000x7168x9216,2049x8192x14336
G=.gpu-s128
GPU_DIR=$G bash bench/device-run.sh bench gemm --iters 15 --shape $L 2>&1 | grep '^shape' | awk '{print $2, $6, $8, $10}' > "$OUT/plain-default.txt"
GPU_DIR=$G bash bench/device-run.sh bench gemm --iters 15 --tile swap-ab-128-fit --shape $L 2>&1 | grep '^shape' | awk '{print $2, $6, $8, $10}' > "$OUT/plain-fit.txt"
paste "$OUT/plain-default.txt" "$OUT/plain-fit.txt"
GPU_DIR=$G bash bench/device-run.sh bench gemm-allreduce --iters 30 --shape 128x8192x4096,192x8192x4096,256x8192x4096,256x7168x9216,128x8192x14336 --sweep-tiles narrow-tma-store,swap-ab-64x128-tma-store,swap-ab-64x192-tma-store,swap-ab-64x256-tma-store 2>&1 | grep -v '^#' | cut -c1-200
for st in 300x8192x4096:152 520x8192x4096:136 640x8192x4096:160 777x8192x4096:200 1000x8192x4096:168 2049x8192x14336:208 2049x7168x9216:152 3000x8192x4096:216 5000x8192x4096:152; do
  GPU_DIR=$G bash bench/device-run.sh bench gemm-allreduce --iters 30 --shape ${st%:*} --sweep-tiles swap-ab-128x${st#*:}-tma-store 2>&1 | grep -v '^#' | grep -v '^shape  ' | cut -c1-200
done
ls "$OUT"
