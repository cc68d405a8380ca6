# run122 (one H200): gpu_gemm at main with one more column-fitted case (192 columns: three swizzled TMA-store boxes).
# Expect 4/4.
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -3
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
