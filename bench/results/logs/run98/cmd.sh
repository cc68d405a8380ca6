# run 98: branch pingpong (+ narrow-tma-store-pp, on double-staging) packed as .gpu-pp; carry [".gpu-pp"] alone.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export GPU_DIR=.gpu-pp
R=$OUT/r; mkdir -p "$R"/{g0,g1,f1,f2,f3}; S=$(date +%s)
t() { echo "== t=$(( $(date +%s) - S )) s: $*"; }
t tests; OUT=$R TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm- odd_shapes
OUT=$R TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm_allreduce double_staging
SH=1024x8192x4096,2048x8192x4096,2049x8192x4096,129x8192x4096,4096x8192x4096,1025x8192x4096,2048x7168x9216
t gemm-default; OUT=$R/g0 timeout 80 bash bench/device-run.sh bench gemm --shape $SH | grep -vE '^#' | cut -c1-120
t gemm-pp; OUT=$R/g1 timeout 80 bash bench/device-run.sh bench gemm --shape $SH --tile narrow-tma-store-pp --check | grep -vE '^#' | cut -c1-140
B="--iters 30 --warmup-ms 1500 --sweep-same --sweep-tiles narrow-tma-store-pp,m64-wide-tma-store-pp"
t f-o1024; OUT=$R/f1 timeout 90 bash bench/device-run.sh bench gemm-allreduce --filter "o M=1024" $B --trace | grep -vE '^#' | cut -c1-250
t f-o2048; OUT=$R/f2 timeout 90 bash bench/device-run.sh bench gemm-allreduce --filter "o M=2048" $B | grep -vE '^#' | cut -c1-250
t f-odd; OUT=$R/f3 timeout 90 bash bench/device-run.sh bench gemm-allreduce --filter "odd M" $B | grep -vE '^#' | cut -c1-250
t done; tar -C "$OUT" -czf "$OUT/logs.tgz" r && rm -rf "$R"
