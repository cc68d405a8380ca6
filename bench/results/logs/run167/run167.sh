#!/usr/bin/env bash
# run167: before a rule for the narrow column-fitted tiles (run166: 128 x 72/80 TMA-store tiles 5-8% faster than the
# default 128 x 128 at M = 112-128, N = 8704-9216): default against cols-128xW-tma-store, W the narrowest width
# (a multiple of 8) whose tiles fit one wave, over M = 80, 96, 128, K = 4096, 7168, N = 8704..14336. Two passes,
# the first with --check. One H200.
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL" | cut -c1-130; }
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  for nw in 8704:72 9216:72 10240:80 12288:96 14336:112; do
    n=${nw%:*}; w=${nw#*:}
    S=80x${n}x4096,80x${n}x7168,96x${n}x4096,96x${n}x7168,128x${n}x4096,128x${n}x7168
    echo "== pass $pass N=$n"
    b $chk --shape $S
    b $chk --shape $S --tile cols-128x$w-tma-store
  done
done
