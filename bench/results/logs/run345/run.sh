#!/usr/bin/env bash
# run345: branch few-tiles-narrower-swapped (narrower swapped tiles in more slices at M 17-64): gpu_gemm (all tests,
# the split test with its three new shapes), then main 204e73b against it on 18 fresh random shapes it moves (M 17-64,
# N 128-2048, K 4096-14336, operands <= 12 MiB), back to back x20 behind the host gate, two passes in both orders,
# --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^test |test result|FAILED|panicked" | head -40
S=31x312x8128,58x776x5376,25x280x13248,40x488x8384,44x352x10112,20x712x6464,41x576x8192,45x592x7232,62x384x12480,32x1040x5376,18x128x14272,36x808x5824,51x416x12544,44x584x8576,45x304x11520,46x344x5632,41x184x12032,24x976x4096
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "--host-gate --back-to-back 20" .gpu-main .gpu
