#!/usr/bin/env bash
# run330: few-narrower as committed (narrower tiles only where they compute fewer elements) against main bd9eadd on 14
# shapes it moves, sampled anew (none of run 329's); two passes in both orders, --check in pass 1.
# carry [".gpu", ".gpu-main"].
set -u
S=362x1560x4096,629x440x4096,728x552x4096,1001x304x6144,1355x304x8192,1745x208x8192,491x1168x8192,2144x184x9216,479x672x9216,485x520x12288,851x520x14336,869x976x14336,881x624x14336,887x296x14336
ITERS=20 WARMUP_MS=200 CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh "$S" "" .gpu-main .gpu
