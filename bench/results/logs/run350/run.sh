#!/usr/bin/env bash
# run350: branch few-tiles-narrower-swapped with few_tiles_two_warpgroups_instead_of (the 128 x 64 tile in 4 slices in
# place of the 64 x 64 swapped one in 2 at M 193-384, N >= 3M/2): gpu_gemm's split test (236 x 808 x 9024 new), then
# main 204e73b against it on 14 fresh shapes it moves and on 256 x 1024 x 4096 and 256 x 896 x 5120 (the model map's
# row), back to back x20 behind the host gate, two passes in both orders, --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_gemm split_rule_default_matches_reference 2>&1 | grep -E "^test |test result|FAILED|panicked" | head
S=199x880x11136,221x1008x6528,213x720x5440,303x672x8064,235x856x7488,256x712x14208,256x904x4416,237x936x7680,213x712x7424,326x536x6976,198x1008x5696,333x512x10176,199x760x4544,268x648x6464,256x1024x4096,256x896x5120
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "--host-gate --back-to-back 20" .gpu-main .gpu
