#!/usr/bin/env bash
# run219 (2026-12-02): the column-fitted 2-CTA tiles (cols-128xC-tma-store-c2, C a multiple of 16) against the
# default (wide-tma-store-c2) on M >= 4096 shapes where the fit of multiples of 16 saves 1-3% of the waves x
# columns (NOTES 25.5). Two passes, the first with --check; per shape the default then the fitted c2 tile.
# Pack: (the run218 pack) ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm_allreduce && bash bench/pack-libs.sh
set -u
cases="4096x7168x9216:176 8192x7168x9216:176 4096x9216x7168:208 8192x9216x7168:240 4096x8192x14336:224 8192x8192x4096:224 4096x28672x8192:176 2048x8192x4096:144"
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  for c in $cases; do
    s=${c%%:*}; w=${c##*:}
    for v in "" "--tile cols-128x${w}-tma-store-c2"; do
      # shellcheck disable=SC2086
      bash bench/device-run.sh bench gemm --iters 20 --warmup-ms 300 --no-json $chk --shape $s $v 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-170
    done
  done
done
# Part 2: small N (MoE routers, N <= 32) with few tiles: the split's slices are at least 16 K blocks (NOTES 24.2:
# finer slices were ~1 us faster where the split makes <= ~64 CTAs, slower near a full wave). The default against
# forced 8, 16 and 32 slices, two passes (gemm-ab.sh; the first with --check).
bash bench/gemm-ab.sh 64x8x4096,256x8x4096,1024x8x4096,128x16x4096,512x16x4096,256x8x7168,1024x8x7168,256x32x4096,1024x32x7168,2048x8x4096,1024x16x7168 "--host-gate" "--host-gate --split-last-wave 8" "--host-gate --split-last-wave 16" "--host-gate --split-last-wave 32"
