# run120 (one H200; the pair not lent), branch cols-tma (4254240): column-fitted tiles with the TMA-store epilogue
# (one unswizzled staging box). Expect gpu_gemm 4/4 (the cols cases now with both epilogues); TMA store 3-8% faster
# than the Registers cols tiles (as 128 x 256 TMA-store vs Registers), e.g. 2048x7168x9216 ~0.93 of cuBLAS (0.896).
set -u
G=.gpu-cols
GPU_DIR=$G TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -3
L=2048x7168x9216,8192x7168x9216,1024x7168x9216,4096x7168x9216,2048x5120x8192,4096x2880x4096,2048x9216x7168,2048x28672x8192,2048x8192x4096,8192x5120x8192,16384x7168x9216
for t in "" "--tile cols-fit" "--tile cols-fit-tma-store"; do
  echo "== ${t:-default}"
  GPU_DIR=$G bash bench/device-run.sh bench gemm --iters 15 $t --shape $L 2>&1 | grep '^shape ' | awk '{print $2, $6, $8, $10}'
done
GPU_DIR=$G bash bench/device-run.sh bench gemm --check --iters 3 --tile cols-fit-tma-store --shape $L 2>&1 | grep -c PASS
cd "$OUT" && tar czf logs.tgz bench.log *.json test-logs 2>/dev/null; rm -rf test-logs *.json; ls
