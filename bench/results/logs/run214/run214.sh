#!/usr/bin/env bash
# run214 (2026-12-02): main b70a043 on one H200. (1) The whole plain default table at sustained clocks (JSON in $OUT),
# the first since run 129 (17.4) with every rule of sessions 16-23. (2) The README's first command on one GPU, as a
# new user with one H200 would run it (world size 1: the fused call's reduce is a copy; NCCL all-reduce of one rank).
# (3) gpu_gemm and gpu_gemm_allreduce (one GPU: its two-rank tests run on GPU 0).
# Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm --test gpu_gemm_allreduce && bash bench/pack-libs.sh
# Call: run with carry [".gpu"], bash bench/results/logs/run214/run214.sh
set -u
bash bench/device-run.sh bench gemm --check --iters 20 --warmup-ms 800 2>&1 | cut -c1-160
timeout 200 bash bench/device-run.sh bench gemm-allreduce --check 2>&1 | cut -c1-200 | tail -40
TEST_TIMEOUT=240 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^ok|passed|failed|panic|FAIL" | tail -20
