#!/usr/bin/env bash
# run334: the branch half-height-fewer-slices (the 64 x 128 tile in fewer slices, down to none, in place of the
# few-tiles split's 128 x 128 / 64 x 256 tiles in 2-4) — gpu_gemm in full, then main 82d08db against the branch on
# 20 fresh shapes the rule moves (random M 257-4096, N % 8 == 0, K 4096-14336 step 512; 14 unsplit, 6 in 2 slices),
# two passes in both orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm 2>&1 | tail -40
S=265x2464x11264,2601x352x11776,961x992x6144,2055x384x7168,428x2104x13824,309x2232x7680,291x1696x5120,982x616x5632,821x1112x8704,1383x688x4608,563x1720x7680,913x768x12288,875x1024x6144,994x944x12288,676x584x9216,680x552x10752,1560x232x4096,436x920x11264,932x376x4096,258x1568x9216
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "" .gpu-main .gpu
