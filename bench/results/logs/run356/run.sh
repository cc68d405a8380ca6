#!/usr/bin/env bash
# run356 (branch tall-swapped): gpu_gemm (the split test with 1024 x 256 x 7168, 900 x 256 x 6144, 1500 x 128 x 5120 on
# the new rule), then main (79132ec) against the branch on 14 fresh random shapes the rule moves (9 at N = 256, 5 at
# N = 128) and the router 1024 x 256 x 7168, back to back x20 behind the host gate, two passes (the second in reverse
# order), --check in pass 1. carry [".gpu", ".gpu-main"].
set -u
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 813x256x10304,797x256x9280,750x256x13440,902x256x6720,764x256x5696,935x256x8000,894x256x5312,780x256x13440,761x256x7872,2032x128x8128,1762x128x12032,1969x128x7872,1455x128x12160,1439x128x10624,1024x256x7168 "--host-gate --back-to-back 20" .gpu-main .gpu
