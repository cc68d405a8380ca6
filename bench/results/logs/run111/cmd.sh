# run111: main bb08386 (unrun commits 4889ca4, 5dd87b4, bb08386; device code as ce72add) GPU tests on the 2x H200,
# then branch swap-ab-128 (89df426) gpu_gemm (128-row swapped tiles). Expect: 4/4, 12/12, 2/2, branch gpu_gemm 4/4.
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_ 2>&1 | grep -v '^test .* ok$' | tail -12
mv "$OUT"/test-logs "$OUT"/test-logs-main
GPU_DIR=.gpu-s128 TEST_TIMEOUT=200 bash bench/device-run.sh tests 'gpu_gemm-' 2>&1 | tail -12
cd "$OUT" && tar czf test-logs.tgz test-logs* && rm -rf test-logs test-logs-main; ls
