#!/usr/bin/env bash
# run305: ONE_WAVE_COLS_MAX_M 2048 -> 4096 (branch owc-max-m, .gpu) against cn-rule at 8a9e4d9 (.gpu-head);
# 16 shapes sampled across the scan's changes at M = 2049-4224. carry [".gpu", ".gpu-head"]
set -u
export ITERS=10 WARMUP_MS=200
S=3489x384x7168,2625x576x4096,3617x320x8192,4033x320x4096,2113x768x4096,3584x448x4096,3297x192x7168,3968x448x8192,3297x320x8192,3937x192x4096,2560x512x2048,2081x704x8192,2432x448x8192,2816x512x8192,2688x704x7168,3617x320x7168
bash bench/gemm-ab-dirs.sh $S "--check --host-gate --back-to-back 20" .gpu-head .gpu
