#!/usr/bin/env bash
# run234 (2026-12-02): the fixed cost of a small call, ours against cuBLAS: tiny shapes (one K block up to 8, no
# split), host-gated (GPU time only), two passes (pass 1 --check), to split NOTES 28.5's ~6.6 us "fixed" part.
# Pack: the .gpu of run232. Call: run with carry [".gpu"]
set -u
ITERS=50 bash bench/gemm-ab.sh 128x8x64,128x32x64,128x32x512,64x64x64,128x128x64,128x32x2048 "--host-gate"
