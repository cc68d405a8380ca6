# run112 (2x H200): branch swap-ab-128 (89df426): 128-row swapped tiles in the plain GEMM (fit vs default) and the fused
# kernel at M=2049; main bb08386: decode-sized fused calls via --shape. Then branch gpu_gemm_allreduce.
# Expect: M=2049x8192x4096 plain 0.228 -> ~0.19 ms (cuBLAS 0.184); fused M=2049 0.259 -> ~0.23 ms.
set -u
GPU_DIR=.gpu-s128 bash bench/device-run.sh bench gemm --check --iters 15 --tile swap-ab-128-fit --shape 2049x8192x4096,1000x8192x4104,300x8192x4096,3000x7168x9216 2>&1 | grep -v '^#' | tail -12
GPU_DIR=.gpu-s128 bash bench/device-run.sh bench gemm --check --iters 15 --shape 2049x8192x4096,1000x8192x4104,300x8192x4096,3000x7168x9216 2>&1 | grep -v '^#' | tail -8
GPU_DIR=.gpu-s128 bash bench/device-run.sh bench gemm-allreduce --check --filter "M=2049" --iters 30 --warmup-ms 1500 --sweep-tiles swap-ab-128x208-tma-store,swap-ab-128x176-tma-store,swap-ab-128x256-tma-store 2>&1 | grep -v '^#' | tail -12
bash bench/device-run.sh bench gemm-allreduce --check --iters 30 --shape 1x8192x4096,8x8192x4096,32x8192x4096,64x8192x4096,128x8192x4096,256x8192x4096,64x8192x14336,32x7168x9216 2>&1 | grep -v '^#' | tail -14
GPU_DIR=.gpu-s128 TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce 2>&1 | tail -6
cd "$OUT" && tar czf test-logs.tgz test-logs && rm -rf test-logs; ls
