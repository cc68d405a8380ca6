#!/usr/bin/env bash
# run341: branch half-height-two-row-blocks (the 64 x 128 tile's fewer slices in place of 128 x 128 splits at M
# 193-256 up to K = 14336): gpu_gemm's split/default tests, then main d20d683 against it on 10 fresh shapes of
# M 193-256, K 5632-14336 that it picks the 64 x 128 tile for (some are the half-height rule's on main too). Two
# passes in both orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference few_tiles_half_height_default_matches_reference gemm_kept_workspaces 2>&1 | tail -8
S=214x3736x10240,255x3912x12800,210x1088x6144,204x2752x5632,202x3760x5632,256x1520x6144,249x3872x10240,256x2096x5632,238x1872x12288,226x4120x11776
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "" .gpu-main .gpu
