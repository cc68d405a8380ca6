set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- 2>&1 | tail -2
for t in default narrow; do
  extra=""; [ "$t" != default ] && extra="--tile $t"
  bash bench/device-run.sh bench gemm --check --iters 30 --warmup-ms 300 --no-json --shape 224x8192x4096,256x8192x4096,256x7168x9216,240x1000x200 $extra 2>&1 | grep '^shape ' | sed "s/^/$t /" | awk '{print $1, $3, $7, $9, $11, $12}'
done
