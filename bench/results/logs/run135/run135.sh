set -u
out=${OUT:-/tmp}
TEST_TIMEOUT=500 bash bench/device-run.sh tests gpu_gemm_allreduce clustered_tiles slices_spread split_last_wave traced 2>&1 | tail -30
grep -E '^test |^ok ' $out/test-logs/*.log | head -20
cd $out && tar czf logs.tgz test-logs 2>/dev/null; ls $out
