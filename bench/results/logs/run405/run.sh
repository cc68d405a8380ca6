#!/usr/bin/env bash
# run405 (session 53; one GPU): where the reduce-scatter's head row block still costs (run 404 on one H100, M = 1040:
# all-reduce 0.2487 ms, reduce-scatter main 0.2858, rs-head-red 0.2751, while at M = 1024 the reduce-scatter is 19 us
# faster than the all-reduce). .gpu = rs-head-red2 (27b450f: copy_out stores the head tile's own rows, reuse_staging
# TMA-loads the peer's copy, store_head_rows only adds it by red), .gpu-red = rs-head-red (7e5cfbf), .gpu-main = main
# bf0a8fd. First the 7 reduce-scatter tests on rs-head-red2 (the head tiles equal the all-reduce's in bits). Then each
# variant in one process: the default (1040: swapped 128 x 208, A multicast; 130: 64 x 256, split last wave), the
# same again (A/A), diag 2 (no load or add of the peer's copy: the head tiles then store their own rows only), and
# at 1040 the 128 x 256 clustered tile; one traced call at 1040 (where the time went).
# Expected: red2 < red < main at 1040 and 130, red2 within ~10 us of the all-reduce at 1040; diag 2 rows close
# together (the head tiles' adds are what costs).
# As run: the first call passed --out-dir twice at 1040 (device-run.sh passes its own), so the 1040 rows failed
# there; a second call on the warm machine ran them (logs in b/) with the tests skipped. This file is the fixed script.
set -u
nvidia-smi -L
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm_reduce_scatter --nocapture 2>&1 | grep -E "^ok|^FAIL|panicked|test result" | cut -c1-300
mkdir -p "$OUT/traces"
for shape in 1040x8192x4096 130x8192x4096; do
  extra=""; [[ $shape == 1040x* ]] && extra="--sweep-tiles wide-tma-store-c2 --trace"
  for v in AR RS-main RS-red RS-red2; do
    chk=""
    case $v in
      AR) op=gemm-allreduce; dir=.gpu;;
      RS-main) op=gemm-reduce-scatter; dir=.gpu-main;;
      RS-red) op=gemm-reduce-scatter; dir=.gpu-red;;
      RS-red2) op=gemm-reduce-scatter; dir=.gpu; chk="--check --check-reps 3";;
    esac
    echo "== $v $shape"
    GPU_DIR=$dir timeout 120 bash bench/device-run.sh bench $op --share-gpu --comm-path epilogue --iters 50 --warmup-ms 500 --no-json \
      --shape $shape --sweep-diag 2 --sweep-same $chk $extra 2>&1 | grep -vE "^# (mkernel|wrote)|^shape  " | cut -c1-300
  done
done
