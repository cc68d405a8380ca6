# run103: swapped-operand (swap-AB) tiles for small M, plain GEMM, one H200 (main + uncommitted tree, packed as .gpu).
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -25
S=1x8192x4096,16x8192x4096,32x8192x4096,64x8192x4096,100x8192x4096,127x8192x4096,129x8192x4096,192x8192x4096,256x8192x4096,32x28672x8192,128x5120x8192,64x8192x14336
for t in swap-ab swap-ab-c2 default; do
  echo "=== $t"
  if [[ $t == default ]]; then a=(); else a=(--tile $t); fi
  bash bench/device-run.sh bench gemm "${a[@]}" --shape $S --iters 30 --warmup-ms 300 --check 2>&1 | grep -v '^\s*$' | tail -14 | cut -c1-130
done
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
