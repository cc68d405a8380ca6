# run106: swapped-operand tiles on the fused kernel's epilogue path, 2x H200 (main c3c64d4 + uncommitted tree).
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -2
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm_allreduce swapped 2>&1 | tail -12
bash bench/device-run.sh bench gemm-allreduce --filter "M=129" --iters 30 --warmup-ms 1500 --sweep-tiles swap-ab-64x136-tma-store 2>&1 | grep -v '^\s*$' | tail -12 | cut -c1-220
bash bench/device-run.sh bench gemm-allreduce --filter "M=129" --tile swap-ab-64x136-tma-store --check --check-reps 20 --iters 20 2>&1 | grep -v '^\s*$' | tail -6 | cut -c1-220
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
