set -u
out=${OUT:-/tmp}
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm_allreduce slices_spread split_last_wave 2>&1 | tail -3
b() { bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 800 "$@" 2>&1 | grep -vE '^#|^$' | cut -c1-200; }
for pass in 1 2; do
b --shape 129x4096x4096 --tile swap-ab-64x136-tma-store --sweep-split 2,4
b --shape 1024x4096x4096 --tile narrow-tma-store --sweep-split 2,4
b --shape 2049x4096x4096 --tile wide-tma-store --sweep-split 1
done
ls $out
