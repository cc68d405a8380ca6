#!/usr/bin/env bash
# run221 (2026-12-02): before a rule takes them (NOTES 26.4), the picks of a column-fitted 2-CTA rule (the
# 4- or 5-stage cols-128xC-tma-store-c2 width, C = 144..208, with the fewest waves x columns, where that saves >= 1.5%
# against the clustered wide tile) on shapes run 219 did not time, against the default (wide-tma-store-c2). Two
# passes, the first with --check; per shape the default then the pick. Then small N with 1-2 tiles at K >= 7168:
# the default's 8 slices against 16 (run 219: 256 x 8 x 7168 ran best in 16), host-gated.
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce && bash bench/pack-libs.sh
set -u
# (as run: the per-shape loop of run219.sh, since moved into bench/tile-pairs.sh, which runs the same commands)
t=tma-store-c2
bash bench/tile-pairs.sh "8192x8192x4096:cols-128x192-$t 8192x8192x4096:cols-128x144-$t 4096x8192x14336:cols-128x144-$t 4096x8192x4096:cols-128x144-$t 16384x8192x4096:cols-128x192-$t 16384x7168x9216:cols-128x176-$t 2048x8192x14336:cols-128x144-$t"
bash bench/gemm-ab.sh 64x8x7168,256x8x7168,128x16x7168,256x16x7168,64x8x14336,256x32x7168,128x8x9216 "--host-gate" "--host-gate --split-last-wave 16"
