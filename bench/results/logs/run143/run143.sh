set -u
for pass in 1 2; do
for m in 208 224 240 256; do
for t in default narrow-tma-store; do
  extra=""; [ "$t" != default ] && extra="--tile $t"
  bash bench/device-run.sh bench gemm --check --iters 30 --warmup-ms 300 --no-json --shape ${m}x8192x4096,${m}x8192x14336,${m}x7168x9216 $extra 2>&1 | grep '^shape ' | sed "s/^/p$pass $t /" | awk '{print $1, $2, $4, $8, $10, $12, $13}'
done
done
done
