# run115 (one H200), branch fit-n (4d1e20b): 128-row tiles fitted to N (Registers epilogue) against the default
# (128x256 TMA-store) and the 128x256 Registers tile. Expect: gpu_gemm 4/4; DeepSeek down t2048 (2048x7168x9216):
# waves x cols 880 vs 1024 -> up to ~14% less work per SM, but Registers stores cost ~5% on wide shapes; hope ~0.37 ms
# against 0.399 (cuBLAS 0.334).
set -u
G=.gpu-fitn
GPU_DIR=$G TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -3
L=2048x7168x9216,8192x7168x9216,1024x7168x9216,4096x7168x9216,2048x5120x8192,4096x2880x4096,2048x9216x7168,2048x28672x8192,2048x8192x4096
for t in "" "--tile wide" "--tile cols-fit" "--tile cols-128x224" "--tile cols-128x192"; do
  echo "== ${t:-default}"
  GPU_DIR=$G bash bench/device-run.sh bench gemm --iters 15 $t --shape $L 2>&1 | grep '^shape ' | awk '{print $2, $6, $8, $10}'
done
GPU_DIR=$G bash bench/device-run.sh bench gemm --check --iters 5 --tile cols-fit --shape $L 2>&1 | grep -c PASS
cd "$OUT" && tar czf logs.tgz bench.log *.json test-logs 2>/dev/null; ls
