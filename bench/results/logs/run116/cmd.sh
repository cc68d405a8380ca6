# run116 (2x H200): main 834e1cf (mid-M rule, column rule, fused narrow TMA-store default on the epilogue path, review fixes):
# the GPU tests. Expect gpu_gemm 4/4, gpu_gemm_allreduce 12/12 (the swapped test now reaches its two 128-row cases:
# the first check of 128-row swapped TMA-store tiles on the epilogue path), gpu_multiprocess 2/2.
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_ 2>&1 | grep -v '^test .* ok$' | tail -10
grep -h '^ok GemmShape\|^ok .*swap-ab-128' "$OUT"/test-logs/gpu_gemm_allreduce*.log | tail -4 | cut -c1-160
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
