# run110: main ce72add's kernels (the entry-gate experiment of run 109 reverted) + the new interleaved-paths test, 2x H200.
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm_allreduce 2>&1 | tail -5
grep -h 'interleaved\|^ok .*60 calls' "$OUT"/test-logs/*.log | head -5
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
