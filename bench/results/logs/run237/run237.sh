#!/usr/bin/env bash
# run237 (2026-12-02): the committed form of the short-K small-N split (S >= 4 below K = 4096) on one rank's
# local path of gemm_allreduce (which plans with the plain GEMM's split rules) and in bench gemm, --check.
# Pack: ../shared/tools/gpu-pack --no-tests --bin mkernel && bash bench/pack-libs.sh. Call: carry [".gpu"]
set -u
bash bench/device-run.sh bench gemm-allreduce --gpus 1 --check --iters 20 --no-json \
  --shape 128x32x2048,2048x16x2048,64x16x3584,4096x8x2048,100x8x1024 2>&1 | grep -vE '^\s*$' | tail -n 14
ITERS=30 bash bench/gemm-ab.sh 128x32x2048,2048x16x2048,4096x8x2048,4096x32x1024,1152x32x2048 "--host-gate" "--host-gate --split-last-wave off"
