#!/usr/bin/env bash
# run236 (2026-12-02): the small-N column tiles split from K = 1024 (up to 8 slices of >= 2 K blocks below K = 4096,
# within half the SMs; run235 timed 1-8 tiles forced): gpu_gemm (new cases 200 x 32 x 2048 in 8, 100 x 8 x 1024 in 8),
# then the rule's default against --split-last-wave off (the former default), host-gated, two passes (pass 1
# --check), on run235's shapes and on 16-64 tiles (2-4 slices, not timed before).
# Pack (worktree of the change): CARGO_TARGET_DIR=/tmp/wt-target ../shared/tools/gpu-pack --bin mkernel -- -p
#   mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh, copied to .gpu-short. Call: carry [".gpu-short"]
set -u
export GPU_DIR=.gpu-short
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | head -10
ITERS=30 bash bench/gemm-ab.sh 128x32x2048,512x16x2048,1024x8x2048,256x8x1024,128x32x1024,64x16x3584,512x24x2048,2048x16x2048,2048x32x3072,4096x32x1024,3000x16x1536,8192x8x2048,4096x8x2048 \
  "--host-gate" "--host-gate --split-last-wave off"
