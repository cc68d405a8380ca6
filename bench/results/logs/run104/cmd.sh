# run104: the plain GEMM's heuristic with swapped-operand tiles for small M (load_cost), one H200.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -3
bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 500 --check 2>&1 | grep -v '^\s*$' | tail -24 | cut -c1-150
S=1x8192x4096,16x8192x4096,32x8192x4096,64x8192x4096,100x8192x4096,127x8192x4096,129x8192x4096,192x8192x4096,256x8192x4096,32x28672x8192,128x5120x8192,64x8192x14336,8x7168x9216,64x9216x7168,160x8192x4096,224x8192x4096
bash bench/device-run.sh bench gemm --shape $S --iters 30 --warmup-ms 300 --check 2>&1 | grep -v '^\s*$' | tail -18 | cut -c1-150
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
