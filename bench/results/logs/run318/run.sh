#!/usr/bin/env bash
# run318 (branch shift-rows at the rule commit): gpu_gemm; main (.gpu-main, b026f1c) against the branch's defaults on
# 26 shapes whose default changes (20 sampled from the 39.9k of 1.46M scanned, M = 257-4160, plus runs 316-317's),
# --check in pass 1, two passes in both orders; then, on the branch, the one-wave width forced where the default is
# the unsplit 64 x 256 tile at ragged M (run 270's comparison, before the shift). carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=300 timeout 320 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:|past row|other bits" | head -30
D=3984x384x4096,1174x1152x8192,2957x320x14336,2700x640x2048,2821x352x7168,1675x896x4096,3845x288x4096,2207x480x7168,2841x448x14336,2591x512x7168,2566x704x7168,3602x192x8192,3482x192x7168,1807x384x4096,2959x224x14336,329x3392x14336,321x3264x14336,325x3712x8192,3995x288x7168,2457x448x7168,1440x960x8192,1056x1024x8192,1440x1024x8192,1056x1408x8192,1440x512x4096,321x3536x8192
b() {  # b DIR ARGS...
  local d=$1; shift
  GPU_DIR=$d bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 200 --no-json "$@" 2>&1 | grep -E "^shape [0-9]|error|FAIL|panic" | cut -c1-160
}
for pass in 1 2; do
  echo "== pass $pass"
  chk=""; [[ $pass == 1 ]] && chk="--check"
  if [[ $pass == 1 ]]; then order=".gpu-main .gpu"; else order=".gpu .gpu-main"; fi
  for d in $order; do echo "-- $d defaults"; b $d --shape $D $chk; done
done
M64="408x3776x14336 562x2240x8192 800x1984x8192 297x3968x8192 658x2240x8192 651x1664x4096"
W=(120 88 112 96 104 80)
for pass in 1 2; do
  echo "== m64 pass $pass"
  i=0
  for s in $M64; do
    echo "-- $s default / cols-128x${W[i]}"; b .gpu --shape $s; b .gpu --shape $s --tile cols-128x${W[i]}-tma-store
    i=$((i + 1))
  done
done
