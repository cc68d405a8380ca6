#!/usr/bin/env bash
# run325: branch s39 (the one-wave split steps wider where 2W's slices overfill one wave, run 324) against main
# a3c8593 on 18 shapes the change moves (sampled by a CPU scan over M = 257-4096, K = 6912-14336; none of run 324's),
# two passes in both orders, --check in pass 1; then gpu_gemm on the branch. carry [".gpu", ".gpu-main"].
set -u
S=1475x688x6912,1511x688x7168,2882x232x7680,3167x264x8192,2105x320x8192,1748x560x8192,1712x552x8704,2207x304x8704,1190x600x9728,1775x432x9728,1241x800x10240,3239x224x10240,2141x392x10752,2993x232x11264,1169x608x11776,3062x280x12800,3089x208x13312,1277x784x14336
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "" .gpu-main .gpu
TEST_TIMEOUT=300 bash bench/device-run.sh tests gpu_gemm 2>&1 | grep -E "^test |test result|panicked|FAILED|failed" | tail -40
