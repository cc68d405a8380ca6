#!/usr/bin/env bash
# run227 (2026-12-02): with run 224's fix-up (16 slices in one L2 round trip at 128 x 8), do finer slices than the
# rule's (slices of >= 8 K blocks, <= 16) now pay on small N? The default against 16 and 32 slices forced, host-gated,
# two passes (gemm-ab.sh; the first with --check). Run 219 (old fix-up): 16 lost to 8 at K = 4096.
# Call: run with carry [".gpu"] (run 224's pack)
set -u
bash bench/gemm-ab.sh 64x8x4096,256x8x4096,1024x8x4096,128x16x4096,512x16x4096,64x8x7168,256x16x7168,64x8x14336,128x8x9216,256x32x4096 "--host-gate" "--host-gate --split-last-wave 16" "--host-gate --split-last-wave 32"
