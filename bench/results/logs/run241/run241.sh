#!/usr/bin/env bash
# run241 (2026-12-02): the review mend (one short-K rule, `short_k_slices`: same picks, checked on the CPU over
# 1.39 M shapes) on the GPU: gpu_gemm, then bench gemm --check --host-gate on the session's changed shapes with JSON.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: carry [".gpu"]
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | head -10
bash bench/device-run.sh bench gemm --check --host-gate --iters 30 --warmup-ms 300 \
  --shape 256x32x7168,512x16x8192,384x32x14336,512x32x8192,128x32x2048,64x16x3584,2048x16x2048,1024x8x2048,256x256x2048,256x128x3072,64x1024x3072,128x512x3072 2>&1 \
  | grep -E "^shape|error|FAIL|panic|^#" | cut -c1-190
