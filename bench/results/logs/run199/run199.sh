#!/usr/bin/env bash
# run199 (2026-12-02, one H200): host time per GEMM call and the GPU time alone. Two builds of the scratch branch
# (bench gemm with a host-time column and --host-gate): .gpu-a without, .gpu-b with the host-path change
# (device attributes read once per device; the workspace's addresses taken once, not through cudarc's per-call
# stream events). Each build ungated and gated, alternating a/b, two passes.
# Pack: release builds of the two scratch commits copied to .gpu-a/bin and .gpu-b/bin (stripped).
# Call: run with carry [".gpu", ".gpu-a", ".gpu-b"], bash bench/results/logs/run199/run199.sh
set -u
S="512x8x7168,1024x8x4096,2048x8x7168,200x128x7168,512x128x4096,64x4096x4096,1x8192x4096,4096x4096x4096"
for pass in 1 2; do
  for gate in "" "--host-gate"; do
    for g in .gpu-a .gpu-b; do
      echo "-- pass $pass $g $gate"
      # shellcheck disable=SC2086
      GPU_DIR=$g bash bench/device-run.sh bench gemm --iters 50 --warmup-ms 200 --no-json --shape "$S" $gate 2>&1 \
        | grep -E "^shape|error|panic"
    done
  done
done
