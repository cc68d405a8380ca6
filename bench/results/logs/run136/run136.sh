set -u
out=${OUT:-/tmp}
b() { bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --check --iters 30 --warmup-ms 1000 "$@" 2>&1 | grep -vE '^#|^$' | cut -c1-220; }
b --shape 129x4096x4096 --tile swap-ab-64x136-tma-store --sweep-split 2,3,4 --sweep-same
b --shape 1024x4096x4096 --tile narrow-tma-store --sweep-split 2,4 --sweep-same
b --shape 2049x4096x4096 --sweep-tiles swap-ab-128x208-tma-store --sweep-same
b --shape 2048x4096x4096 --sweep-tiles wide-tma-store --sweep-same
b --shape 129x4096x4096 --tile swap-ab-64x136-tma-store --sweep-split 2,3,4 --sweep-same
b --shape 1024x4096x4096 --tile narrow-tma-store --sweep-split 2,4 --sweep-same
ls $out
