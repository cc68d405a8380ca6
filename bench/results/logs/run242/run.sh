#!/usr/bin/env bash
# run242 (2026-12-02): programmatic dependent launch (PDL) for the plain GEMM (griddepcontrol.wait after the
# set-up, launch_dependents after it; cuLaunchKernelEx with programmatic stream serialization; default on).
# 1. gpu_gemm with the new back-to-back chain test (RAW and WAR between consecutive calls, splits, a graph).
# 2. bench gemm --back-to-back 20: ours with PDL, ours serialized, cuBLAS, per call, host-gated, --check.
# 3. the same on three shapes with cudarc's event tracking on (do its event records between calls stop PDL?).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm && bash bench/pack-libs.sh
# Call: carry [".gpu"]
set -u
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm > /dev/null 2>&1
grep -hE "^test result|^test .*FAILED$|panicked|^ok: " "$OUT"/test-logs/*.log | head -12
S=1x8192x4096,8x9216x7168,64x8x4096,256x32x7168,128x32x2048,256x128x3072,512x512x2048,128x8192x4096,129x8192x4096,1024x8192x4096,2048x8192x4096,4096x4096x4096
bash bench/device-run.sh bench gemm --check --host-gate --back-to-back 20 --iters 30 --warmup-ms 300 --shape $S 2>&1 \
  | grep -E "^shape|error|FAIL|panic|^#" | cut -c1-230
bash bench/device-run.sh bench gemm --host-gate --back-to-back 20 --iters 30 --warmup-ms 300 --event-tracking --no-json \
  --shape 64x8x4096,128x32x2048,512x512x2048 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-230
# one call per step (an event pair around each call: nothing to overlap), as a control
bash bench/device-run.sh bench gemm --host-gate --iters 30 --warmup-ms 300 --no-json \
  --shape 64x8x4096,512x512x2048,1024x8192x4096 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-200
