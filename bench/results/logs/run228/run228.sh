#!/usr/bin/env bash
# run228 (2026-12-02): the 8-column small-N tile's slices of >= 4 K blocks (SMALL_N8_MIN_SPLIT_K_BLOCKS) as the
# default: gpu_gemm (split cases against the reference), then the default against 8 slices forced on N = 8 shapes
# with 1-4 tiles at K = 4096-5120 (3-4 tiles in 16 slices not timed at K = 4096 before), host-gated, two passes.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"]
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | head -10
bash bench/gemm-ab.sh 64x8x4096,256x8x4096,384x8x4096,512x8x4096,64x8x5120,200x8x4608,1024x8x4096 "--host-gate" "--host-gate --split-last-wave 8"
