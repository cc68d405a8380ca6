#!/usr/bin/env bash
# run319 (branch shift-rows, the 64 x 256 replacement): gpu_gemm; main (.gpu-main, b026f1c) against the branch on
# 13 sampled shapes whose default changes with the 64 x 256 replacement (10) or from 2W in 2 to W unsplit (3), and
# runs 277-278's three 2W-in-2 shapes; then W = 48 against 128 x 128 in 2 slices at long K (branch only).
# carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=300 timeout 320 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "ok  |FAIL|test result|panicked|left:|right:|past row|other bits" | head -30
D=396x3584x2048,275x3904x4096,906x1728x4096,794x1728x7168,651x2112x8192,902x1792x4096,686x1984x7168,680x2304x2048,532x2240x14336,692x2240x14336,300x3520x8192,527x1984x14336,561x1856x8192,520x1808x8192,654x1544x8192,899x1040x8192
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
W=2944x224x14336,2959x224x14336,1807x384x4096,1024x768x8192,1440x512x4096,1440x448x8192
for pass in 1 2; do
  echo "== w48 pass $pass"
  echo "-- default"; b .gpu --shape $W
  echo "-- narrow-tma-store in 2"; b .gpu --shape $W --tile narrow-tma-store --split-last-wave 2
done
