#!/usr/bin/env bash
# run405 (session 53; one GPU): where the reduce-scatter's head row block still costs (run 404 on one H100, M = 1040:
# all-reduce 0.2487 ms, reduce-scatter main 0.2858, rs-head-red 0.2751, while at M = 1024 the reduce-scatter is 19 us
# faster than the all-reduce). .gpu = rs-head-red, .gpu-main = main bf0a8fd. Each line of a variant in one process:
# the default (swapped 128 x 208, A multicast), the same again (A/A), diag 2 (no load or add of the peer's copy:
# the head tiles then store their own rows only, one pass), and the 128 x 256 clustered tile; then one traced call
# (where the time went). Expected if the head tiles' passes cost: diag 2 narrows the reduce-scatter's gap to the
# all-reduce's diag 2 by the red pass; the wide tile (N / 256 = 32 head tiles of 128 x 256, S % 128 = 8) shows the same gap.
set -u
nvidia-smi -L
mkdir -p "$OUT/traces"
for shape in 1040x8192x4096 130x8192x4096; do
  tr=""; [[ $shape == 1040x* ]] && tr="--trace --out-dir $OUT/traces"
  for v in AR RS-main RS-new; do
    case $v in
      AR) op=gemm-allreduce; dir=.gpu;;
      RS-main) op=gemm-reduce-scatter; dir=.gpu-main;;
      RS-new) op=gemm-reduce-scatter; dir=.gpu;;
    esac
    echo "== $v $shape"
    GPU_DIR=$dir timeout 120 bash bench/device-run.sh bench $op --share-gpu --comm-path epilogue --iters 50 --warmup-ms 500 --no-json \
      --shape $shape --sweep-diag 2 --sweep-same --sweep-tiles wide-tma-store-c2 $tr 2>&1 | grep -vE "^# (mkernel|wrote)" | cut -c1-260
  done
done
