#!/usr/bin/env bash
# run390 (session 45): at two row blocks (M 193-256) with K > 14336 (ONE_WAVE_COLS_MAX_K) the default stays the 128 x 256
# TMA-store tile where it fills more than two thirds of one wave unsplit (N ~ 10000-16900 on 132 SMs: 94-126 tiles); the
# one-wave-cols rule's extension above 14336 (run 382) replaced only 128 x 128. Forced: the narrowest 128-row width
# whose tiles fill one wave (184, 184, 224, 216, 192, 208 columns: the busiest SM's columns cut by 28, 28, 12, 16, 25,
# 19%), back to back x20 behind the host gate, two passes, --check in pass 1. .gpu from e3b9350 (no tile of these
# changed since). Expected: faster about in proportion to the cut where it is >= 12% (run 264 at K <= 14336: 25% at a
# 37% cut), bounded by the 3-stage pipeline of the wide tile's TMA-store twin at these widths.
set -u
# (where the width is a multiple of 16, its 2-CTA twin too: runs 384-389 had 80-120 columns 2-7% faster in clusters at
# two row blocks; run 375 had 224 columns in clusters 0-1% at K = 4096-8192)
one() { PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile $2" ${3:+"--host-gate --back-to-back 20 --tile $2-c2"}; }
{
one 233x11888x16256 cols-128x184-tma-store
one 256x12288x16384 cols-128x192-tma-store c2
one 246x11824x14784 cols-128x184-tma-store
one 224x13312x20480 cols-128x208-tma-store c2
one 242x14000x18432 cols-128x216-tma-store
one 247x14280x20288 cols-128x224-tma-store c2
} > "$OUT/bench390.log" 2>&1
grep -c PASS "$OUT/bench390.log"
