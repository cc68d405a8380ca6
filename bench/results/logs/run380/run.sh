#!/usr/bin/env bash
# run380: runs 375/379 had the 128 x 128 TMA-store tile in 2-CTA clusters (B multicast to the two row blocks) 1-3%
# faster at 256 x 8192 x 8192 / 14336, even at K = 4096, 3% slower at 2048. On fresh shapes whose default is that tile
# unsplit in one wave (M 193-256, K 7168-28672): the default against narrow-tma-store-c2; and two one-wave 128 x 112
# defaults against their twin. Back to back x20 behind the host gate, two passes (--check first). main 73b9faf.
set -u
one() { PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile $2"; }
{
for s in 193x8104x14336 197x7872x16384 200x7104x28672 204x8176x10240 206x8184x12288 211x8136x8192 216x7944x12288 \
         230x6000x16384 256x6144x16384 209x8184x7168 256x8192x7168; do
  one $s narrow-tma-store-c2
done
one 245x7000x9216 cols-128x112-tma-store-c2
one 228x7168x14336 cols-128x112-tma-store-c2
} > "$OUT/bench380.log" 2>&1
grep -cE "^shape [0-9]" "$OUT/bench380.log"; grep -c PASS "$OUT/bench380.log"
