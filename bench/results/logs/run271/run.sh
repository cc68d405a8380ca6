#!/usr/bin/env bash
# run271 (2026-12-03, one H200): run 270's follow-up (the one-wave-cols rule without the 64 x 256 tile's places, and in
# place of split 128 x 128 tiles above M = 256 only where it cuts a quarter): gpu_gemm with the new cases; the model
# map at M = 1024 (JSON to $OUT); old (ec58f0a, .gpu-old) against new on the split shapes. Carry [".gpu", ".gpu-old"].
set -u
B="--host-gate --back-to-back 20"
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm- 2>&1 | grep -E "^ok|^FAIL|passed|test result|panicked|left:|right:" | head -20
echo "== model map M=1024"
bash bench/device-run.sh bench gemm --models --filter "M=1024 " --check $B --iters 10 --warmup-ms 200 2>&1 | grep -E "^M=|error|FAIL|panic" | cut -c1-200
ITERS=10 WARMUP_MS=200 bash bench/gemm-ab-dirs.sh 1024x896x5120,1024x768x4096,1000x760x4096,900x1152x6912,320x3584x8192 "--check $B" .gpu-old .gpu
