#!/usr/bin/env bash
# run152: L2 prefetch ahead of the TMA loads (GemmParams::l2_prefetch), plain GEMM, small M, one H200.
set -u
S=129x7168x9216,129x8192x14336,64x7168x9216,256x7168x9216,129x8192x4096,1x8192x4096,32x28672x8192,2048x8192x4096
for pass in 1 2; do
  for p in off 4:b 8:b 16:b 32:b 8:ab; do
    extra=(); [[ $p != off ]] && extra=(--l2-prefetch $p)
    echo "== l2-prefetch $p (pass $pass)"
    bash bench/device-run.sh bench gemm --shape $S --iters 30 --warmup-ms 300 --no-json "${extra[@]}" 2>&1 | grep -E "^shape|error"
  done
done
