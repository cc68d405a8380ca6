set -u
out=${OUT:-/tmp}
b() { bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --iters 10 --warmup-ms 500 --trace "$@" 2>&1 | grep -vE '^#|^$' | cut -c1-250; }
b --shape 129x4096x4096 --tile swap-ab-64x136-tma-store --split-last-wave off
b --shape 129x4096x4096 --tile swap-ab-64x136-tma-store --split-last-wave 2
b --shape 2049x4096x4096 --tile wide-tma-store --split-last-wave off
cd $out && rm -f trace-*-r1-*.json gemm-allreduce-*.json && ls
