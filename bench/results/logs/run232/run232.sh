#!/usr/bin/env bash
# run232 (2026-12-02): the small-N column tiles of 24 and 32 columns split in up to 16 slices (of >= 8 K blocks;
# run231 measured 16 faster than 8 at K >= 7168): gpu_gemm (new cases 200 x 32 x 9216 in 16, 300 x 24 x 7168 in 14),
# then the rule's default against 8 slices forced, host-gated, two passes (pass 1 --check), K = 5120-14336.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: run with carry [".gpu"]
set -u
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked" "$OUT"/test-logs/*.log | head -10
grep -hE "^ok GemmShape \{ m: (200, n: 32|300, n: 24)" "$OUT"/test-logs/*.log | head -4
ITERS=30 bash bench/gemm-ab.sh 256x32x5120,256x32x6144,256x32x7168,384x32x14336,512x32x8192,128x32x9216,300x24x7168,128x24x6144,256x24x9216 \
  "--host-gate" "--host-gate --split-last-wave 8"
