# run 94: main + uncommitted half-row-block change (TileOrder: idle warpgroup skips its wgmmas; halves balanced).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT/r; mkdir -p "$R"/{g0,g1,g2,g3,f}; S=$(date +%s)
t() { echo "== t=$(( $(date +%s) - S )) s: $*"; }
t tests; OUT=$R TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
SH=2048x8192x4096,2049x8192x4096,1025x8192x4096,3073x8192x4096,4097x8192x4096,2049x7168x9216,8193x8192x4096,129x8192x4096,1x8192x4096
t gemm-default; OUT=$R/g0 timeout 90 bash bench/device-run.sh bench gemm --shape $SH --check | grep -vE '^#' | cut -c1-150
t gemm-wide; OUT=$R/g1 timeout 90 bash bench/device-run.sh bench gemm --shape $SH --tile wide-tma-store | grep -vE '^#' | cut -c1-150
t gemm-narrow; OUT=$R/g2 timeout 90 bash bench/device-run.sh bench gemm --shape $SH --tile narrow-tma-store | grep -vE '^#' | cut -c1-150
t fused; OUT=$R/f timeout 150 bash bench/device-run.sh bench gemm-allreduce --filter "M=2049" --iters 30 --warmup-ms 1500 --sweep-same --sweep-split 1 --trace | grep -vE '^#' | cut -c1-250
t done; tar -C "$OUT" -czf "$OUT/logs.tgz" r && rm -rf "$R"
