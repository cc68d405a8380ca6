#!/usr/bin/env bash
# run202 (2026-12-02, one H200): more stages for small tiles. .gpu-s: a scratch build of 602a8d2 with the ring's cap
# raised from 8 to 16 stages (fitted tiles take as many as fit: swap-ab-64x64-tma-store 13 instead of 8), against
# .gpu (602a8d2's kernels), gated (GPU time alone), the defaults, alternating, two passes.
# Pack: .gpu as run 200's; .gpu-s: the scratch build's release binary (stripped) in .gpu-s/bin.
# Call: run with carry [".gpu", ".gpu-s"], bash bench/results/logs/run202/run202.sh
set -u
S="64x8x1024,64x8x4096,512x8x7168,1024x8x4096,2048x8x7168,4096x8x4096,8192x64x2048,16384x8x4096,8x9216x7168"
S="$S,64x4096x14336,300x56x2048,32x4096x4096"
for pass in 1 2; do
  for g in .gpu .gpu-s; do
    echo "-- pass $pass $g"
    chk=; [[ $pass == 1 && $g == .gpu-s ]] && chk=--check
    # shellcheck disable=SC2086
    GPU_DIR=$g bash bench/device-run.sh bench gemm --iters 50 --warmup-ms 200 --no-json --host-gate $chk --shape "$S" 2>&1 \
      | grep -E "^shape|error|panic|FAIL"
  done
done
