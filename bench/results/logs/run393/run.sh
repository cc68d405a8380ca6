#!/usr/bin/env bash
# run393 (session 48, one H200): why the column-fitted tiles lost inside the fused kernel in run 391 (144 columns +12%
# at 2048 x 4096 x 4096 with two ranks on one GPU, 168 +23% at M=1024). .gpu from c2-wide-odd after
# one-wave-wide-long-k (both merged next), with gpu_gemm and gpu_gemm_allreduce.
# 1) The plain GEMM on the shapes the pair's ranks run (o-proj M=2048 and M=1024, 2048 x 7168 x 9216 halved along N
#    as run 391's --share-gpu did, i.e. the same tiles per CTA on 132 SMs): the fused sweep's tiles forced, behind the
#    host gate, back to back x20, two passes. Expected (NOTES 48.2's model): 144 columns within ~2% of the default at
#    o-proj M=2048 (1.6% less work on the busiest SM, a wgmma of n=144 no slower per column); if so, the fused loss
#    is the fused epilogue's (copy_out's unswizzled box, the staging), not the tile's GEMM.
# 2) gpu_gemm and gpu_gemm_allreduce on the merged tree (expected: 25 pass; 12 pass and the 4 two-GPU ones fail with
#    "1 GPU(s) present, 2 needed").
set -u
v="--host-gate --back-to-back 20"
PASSES=2 bash bench/gemm-ab.sh 2048x8192x4096,1024x8192x4096,2048x7168x9216 "$v" "$v --tile wide-tma-store-c2" \
  "$v --tile cols-128x144-tma-store" "$v --tile cols-128x144-tma-store-c2" "$v --tile cols-128x168-tma-store" \
  "$v --tile cols-128x176-tma-store-c2" "$v --tile narrow-tma-store" > "$OUT/ab393.log" 2>&1
grep -c PASS "$OUT/ab393.log"
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm
grep -hE "^test |test result" "$OUT/test-logs/"*.log | grep -v " ok$"
