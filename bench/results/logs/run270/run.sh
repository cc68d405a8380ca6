#!/usr/bin/env bash
# run270 (2026-12-03, one H200): the one-wave-cols rule from M = 193 to 2048 (run 269's lead), main ec58f0a + the
# change (.gpu) against ec58f0a (.gpu-old, bench/pack-rev.sh): (1) gpu_gemm with the new cases; (2) the two
# revisions' defaults on shapes whose pick changed (the 128 x 128 register-epilogue tile, the 64 x 256 and 128 x 256
# TMA-store tiles, split and unsplit, K = 2048-14336), two passes in both orders, --check; (3) the model map at
# M = 1024 with both revisions (JSON of the new one to $OUT). Carry [".gpu", ".gpu-old"].
set -u
export ITERS=10 WARMUP_MS=200
B="--host-gate --back-to-back 20"
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm- 2>&1 | grep -E "^ok|^FAIL|passed|test result|panicked|left:|right:" | head -20
S1=320x3584x8192,320x4096x4096,257x2072x4096,400x2560x2048,448x3072x4096,777x2040x2048,512x6144x8192,512x7168x4096,321x8456x2048,512x7936x4096,1024x1280x2048,512x3072x3072
S2=768x2048x14336,1024x1536x14336,1024x768x4096,512x1536x4096,1024x896x5120,1024x768x8192,512x1536x8192,1500x1280x8192,1024x1280x3072,640x2048x2048,1024x1280x8192,384x3072x8192
bash bench/gemm-ab-dirs.sh "$S1" "--check $B" .gpu-old .gpu
bash bench/gemm-ab-dirs.sh "$S2" "--check $B" .gpu-old .gpu
for d in .gpu-old .gpu; do
  echo "== model map M=1024, $d"
  GPU_DIR=$d bash bench/device-run.sh bench gemm --models --filter "M=1024 " --check $B --iters 10 --warmup-ms 200 $([[ $d == .gpu-old ]] && echo --no-json) 2>&1 | grep -E "^M=|error|FAIL|panic" | cut -c1-200
done
