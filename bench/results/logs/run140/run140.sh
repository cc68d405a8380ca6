set -u
out=${OUT:-/tmp}
b() { bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 800 "$@" 2>&1 | grep -vE '^#|^$' | cut -c1-200; }
for pass in 1 2; do
b --shape 4096x4096x4096,8192x4096x4096,1024x4096x14336,2048x4096x14336,4096x3584x9216 --sweep-tiles wide-tma-store
b --shape 2049x4096x4096,2049x4096x14336 --sweep-tiles swap-ab-128x208-tma-store
done
ls $out
