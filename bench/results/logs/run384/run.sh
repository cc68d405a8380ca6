#!/usr/bin/env bash
# run384 (prepared in session 44, not yet run): the one-wave-cols tiles' 2-CTA twins at two row blocks. Run 382 had
# 96 columns in clusters 4-5% faster than unclustered at K = 16384 (two shapes), run 380 112 columns 1-3% at K =
# 9216-14336; runs 375/379 96 and 80 columns even at K = 4096-5120. Per shape (random, M 193-256, default 96 or 112
# columns unsplit, K 8192-20480): the default against its -c2 twin forced, back to back x20 behind the host gate, two
# passes (--check in the first). Pack: ../shared/tools/gpu-pack --bin mkernel -- -p mkernel-tests --test gpu_gemm.
# carry [".gpu"].
set -u
one() { PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile $2-c2"; }
{
one 245x6048x14400 cols-128x96-tma-store
one 217x6200x20480 cols-128x96-tma-store
one 235x6064x16384 cols-128x96-tma-store
one 222x7352x20480 cols-128x112-tma-store
one 219x7336x16384 cols-128x112-tma-store
one 197x7192x8192 cols-128x112-tma-store
one 202x7200x12288 cols-128x112-tma-store
one 212x6992x10240 cols-128x112-tma-store
one 215x6272x10240 cols-128x96-tma-store
one 248x6232x12288 cols-128x96-tma-store
} > "$OUT/bench384.log" 2>&1
grep -c PASS "$OUT/bench384.log"
