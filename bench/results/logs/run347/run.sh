#!/usr/bin/env bash
# run347: branch few-tiles-narrower-swapped with the 0.4 us least gain and the padding bound: gpu_gemm's split test
# (its three new shapes), then main 204e73b against it on the 10 shapes of runs 343-346 whose new pick was not
# timed, and 14 fresh shapes it moves (M 17-64, N 128-2048, K 4096-14336, operands <= 12 MiB), back to back x20
# behind the host gate, two passes in both orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference 2>&1 | grep -E "^test |test result|FAILED|panicked" | head
S=64x256x7168,44x352x10112,45x592x7232,45x304x11520,46x344x5632,48x648x4160,36x280x9152,48x376x14016,36x304x12480,35x616x6144,25x584x7744,47x392x13376,17x376x6464,45x608x4608,37x232x7552,53x144x13312,59x576x5504,19x808x6336,20x216x8064,49x920x5824,43x296x12800,28x336x9600,21x984x4672,63x832x6592
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "--host-gate --back-to-back 20" .gpu-main .gpu
