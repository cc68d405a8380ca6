#!/usr/bin/env bash
# run265 (2026-12-03, one H200): validation of two_row_blocks_cols_instead_of (main 60dd265 + the uncommitted rule):
# gpu_gemm whole (the new two_row_blocks_cols_default_matches_reference among them), the new defaults against the
# old tiles forced on shapes run 264 did not time (M = 193-224; 128 x 256 defaults at N = 8704-12288), then the
# model map at M = 256 (--check). Back to back x20, gated; ~6 min. Carry [".gpu"].
set -u
export ITERS=10 WARMUP_MS=200
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm- 2>&1 | grep -E "test result|passed|failed|FAIL|panicked|skip" | head -20
B="--host-gate --back-to-back 20"
bash bench/gemm-ab.sh 256x8704x4096,256x9216x4096,256x12288x4096,224x10240x8192,193x9216x3456,256x9216x8192 "$B" "$B --tile wide-tma-store"
bash bench/gemm-ab.sh 224x7168x4096,200x5120x8192,208x6144x4096,240x3584x4096 "$B" "$B --tile narrow-tma-store --split-like-rule"
bash bench/device-run.sh bench gemm --models --filter "M=256 " --check --host-gate --back-to-back 20 --iters 10 --warmup-ms 200 2>&1 | grep -E "^shape|error|FAIL|panic" | cut -c1-170
