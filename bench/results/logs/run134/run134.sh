set -u
out=${OUT:-/tmp}
TEST_TIMEOUT=500 bash bench/device-run.sh tests gpu_gemm_allreduce --skip swapped_operand_tiles_on_the_epilogue_path --skip paths_interleaved --skip missing_peer --skip calls_queued 2>&1 | tail -40
grep -E '^test |^ok ' $out/test-logs/*.log | head -40
cd $out && tar czf logs.tgz test-logs 2>/dev/null; ls $out
