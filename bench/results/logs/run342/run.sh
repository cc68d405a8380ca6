#!/usr/bin/env bash
# run342: helper-77's evidence gap: M 193-255 at K 4096-5120, which the branch moves (128 x 128 in 2-4 -> 64 x 128
# unsplit or in 2) on the strength of M = 256 and M >= 300. main d20d683 against the branch, two passes in both
# orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
S=200x4224x4096,210x2600x5120,245x1800x4608,199x2048x4096
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "" .gpu-main .gpu
