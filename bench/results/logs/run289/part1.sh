#!/usr/bin/env bash
# run289 part 1: the branch's GEMM tests (gate), then main vs branch back to back.
set -u
GPU_DIR=.gpu-ci TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm > $OUT/tests.log 2>&1
grep -E "FAILED|panicked|test result" $OUT/tests.log | tail -8; echo "ok lines: $(grep -c ' ok$' $OUT/tests.log)"
export ITERS=10 WARMUP_MS=200
timeout 330 bash bench/gemm-ab-dirs.sh 1024x1280x8192,512x2560x4096,1024x1536x8192,1024x2048x8192,1024x768x4096,1024x5120x5120,4096x4096x4096,8192x8192x8192,1x14336x4096,64x8192x4096 "--host-gate --back-to-back 20" .gpu .gpu-ci | tee $OUT/ab.log
