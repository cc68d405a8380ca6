# run 92: branch double-staging (f8e41ff) packed as .gpu-ds; carry [".gpu-ds"] alone.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT/r; mkdir -p "$R"/{o1024,m129,ds1024}; S=$(date +%s)
t() { echo "== t=$(( $(date +%s) - S )) s: $*"; }
export GPU_DIR=.gpu-ds
t tests; OUT=$R TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
B="--iters 30 --warmup-ms 1500 --trace --sweep-same"
t o1024; OUT=$R/o1024 timeout 110 bash bench/device-run.sh bench gemm-allreduce --filter "o M=1024" $B --sweep-tiles narrow-tma-store-db | grep -vE '^#' | tail -25
t m129; OUT=$R/m129 timeout 110 bash bench/device-run.sh bench gemm-allreduce --filter "M=129" $B --sweep-tiles m64-wide-tma-store-db,m64-narrow-tma-store | grep -vE '^#' | tail -25
t ds1024; OUT=$R/ds1024 timeout 80 bash bench/device-run.sh bench gemm-allreduce --filter "deepseek-v3 M=1024" --iters 30 --warmup-ms 1500 --trace | grep -vE '^#' | tail -12
t done; tar -C "$OUT" -czf "$OUT/logs.tgz" r && rm -rf "$R"
