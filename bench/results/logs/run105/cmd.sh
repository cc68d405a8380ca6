# run105: two waves of swapped-operand tiles against the heuristic's default, one H200.
set -u
S=64x9216x7168,16x14336x4096,128x9216x4096,32x8704x4096,64x8192x4096
for t in default swap-ab default; do
  echo "=== $t"
  if [[ $t == default ]]; then a=(); else a=(--tile $t); fi
  bash bench/device-run.sh bench gemm "${a[@]}" --shape $S --iters 30 --warmup-ms 300 --check 2>&1 | grep -v '^\s*$' | tail -7 | cut -c1-150
done
