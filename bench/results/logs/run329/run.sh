#!/usr/bin/env bash
# run329: branch few-narrower (the few-tiles rule's split 128 x 128 tile -> the narrowest 128-row tile <= 112 columns
# whose tiles in as many slices fit one wave, 257 <= M <= 4096, K = 4096-14336) against main bd9eadd, on 24 shapes
# sampled from the 202k the CPU scan moves, and 1024 x 896 x 5120 (Qwen2.5-32B qkv on 8 GPUs, 1024 tokens); two passes
# in both orders, --check in pass 1; then gpu_gemm on the branch. carry [".gpu", ".gpu-main"].
set -u
S=1166x448x4096,1190x632x4096,1226x408x4096,1406x256x4096,1550x552x4096,1586x280x4096,1718x328x4096,383x1008x4096,449x688x4096,482x656x4096,584x824x4096,608x392x4096,629x808x4096,740x368x4096,1024x896x5120,1016x432x7168,1064x744x7168,1139x184x7168,962x840x7168,971x392x7168,1403x632x8192,2198x216x8192,332x2016x9216,2801x216x14336,620x1304x14336
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "" .gpu-main .gpu
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^test |test result|panicked|FAILED|failed" | tail -40
