#!/usr/bin/env bash
# run239 (2026-12-02): the 64 x 64 swapped TMA-store tiles below K = 4096 split where at most SMs / 8 of them leave
# 4-8 slices of >= 8 K blocks (run238): gpu_gemm (new cases 200 x 136 x 2048 in 4, 256 x 128 x 3072 in 6), then the
# rule against --split-last-wave off (the former default), host-gated, two passes (pass 1 --check), on picks not
# timed in run238.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: carry [".gpu"]
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | head -10
ITERS=30 bash bench/gemm-ab.sh 256x256x2048,128x512x3072,256x128x3072,128x256x2048,192x256x2048,1024x64x2048,200x136x2048,256x384x2560 \
  "--host-gate" "--host-gate --split-last-wave off"
