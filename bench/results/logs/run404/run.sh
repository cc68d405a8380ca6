#!/usr/bin/env bash
# run404 (session 53; one GPU). .gpu = branch rs-head-red (head row block: own rows stored by hand, the peer's copy
# TMA-loaded into the staging tile and added with red.add.v4.bf16x2); .gpu-main = main bf0a8fd (run 403's binaries).
# Expected: the 7 reduce-scatter tests pass (the head tiles' rows equal the all-reduce's in bits: the red's rounding);
# the reduce-scatter at M = 1040 (run 403: 0.2824 ms against the all-reduce's 0.2280, both ranks on one H200) within a
# few us of the all-reduce (estimate: own-row stores ~2 us, TMA load ~2 us, reds ~2 us a head tile instead of ~54),
# and at M = 1024 / 2048 unchanged (no head tiles). Each rank has half the SMs: times compare the variants only.
set -u
nvidia-smi -L
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm_reduce_scatter --nocapture 2>&1 | grep -E "^ok|^FAIL|panicked|test result" | cut -c1-300
for shape in 1024x8192x4096 1040x8192x4096 2064x8192x4096 130x8192x4096; do
  timeout 60 bash bench/device-run.sh bench gemm-allreduce --share-gpu --comm-path epilogue --iters 30 --warmup-ms 300 --no-json --shape $shape 2>&1 | grep -E "^shape [0-9]|rror" | sed "s/^/AR      /" | cut -c1-200
  GPU_DIR=.gpu-main timeout 60 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --iters 30 --warmup-ms 300 --no-json --shape $shape 2>&1 | grep -E "^shape [0-9]|rror" | sed "s/^/RS-main /" | cut -c1-200
  timeout 90 bash bench/device-run.sh bench gemm-reduce-scatter --share-gpu --comm-path epilogue --iters 30 --warmup-ms 300 --no-json --check --check-reps 3 --shape $shape 2>&1 | grep -E "^shape [0-9]|rror" | sed "s/^/RS-new  /" | cut -c1-420
done
