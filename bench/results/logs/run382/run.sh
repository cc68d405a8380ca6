#!/usr/bin/env bash
# run382: run 381's largest gaps to cuBLAS (0.79-0.82) are one wave of 94-104 128 x 128 tiles (71-79% of 132 SMs) at
# M = 211-256, K = 16384-20480, past the one-wave-cols rule's measured K (<= 14336). The one-wave width (ceil(N / 66)
# rounded up to 8) forced unclustered, and in 2-CTA clusters where it has them, against the default (branch two-row-c2
# 1402cf4 or later, .gpu), back to back x20 behind the host gate, two passes. carry [".gpu"].
set -u
one() { PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile cols-128x$2-tma-store" ${3:+"--host-gate --back-to-back 20 --tile cols-128x$2-tma-store-c2"}; }
{
one 211x6088x16384 96 c2
one 256x6144x16384 96 c2
one 214x5696x16384 88
one 255x6520x20480 104
one 255x6808x20480 104
} > "$OUT/bench382.log" 2>&1
grep -c PASS "$OUT/bench382.log"
