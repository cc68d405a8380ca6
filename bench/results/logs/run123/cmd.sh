# run123: main f016248 (read-through refactor, host only) on one H200 (the pair not lent)
# pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce --test gpu_multiprocess && bash bench/pack-libs.sh
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- ; bash bench/device-run.sh bench gemm --check --iters 15; cd $OUT && tar czf run123.tgz *.json bench.log test-logs
