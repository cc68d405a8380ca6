set -u
out=${OUT:-/tmp}
for m in 256 192; do
for t in default swap-ab-128x${m} swap-ab-128x${m}-tma-store narrow narrow-tma-store m64-wide m64-wide-tma-store; do
  extra=""; [ "$t" != default ] && extra="--tile $t"
  bash bench/device-run.sh bench gemm --check --iters 30 --warmup-ms 300 --no-json --shape ${m}x8192x4096,${m}x8192x14336,${m}x7168x9216 $extra 2>&1 | grep '^shape ' | sed "s/^/$t /" | awk '{print $1, $3, $7, $9, $11, $12}'
done
done
