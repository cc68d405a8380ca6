#!/usr/bin/env bash
# run387 (session 45): where the 2-CTA twins of the one-wave-cols tiles can go at two row blocks (M = 193-256).
# Run 384: the twins of 96 and 112 columns forced were 3-6% faster on all 10 shapes at K = 8192-20480. Clusters along
# M need a width that is a multiple of 16 (each CTA loads half of B's rows in whole swizzle atoms), so
# A) at K >= 8192 where the default is 88, 104, 120 or 136 columns, the next multiple of 16 in clusters forced (9, 7.7,
#    6.7, 5.9% more columns on the busiest SM against ~4% gained by sharing B);
# B) below K = 8192 (6144, 7168, 4096) the twins of 80, 96, 112 forced (runs 375/379: 80 and 96 even at 4096-5120);
# C) branch fixup-batch (.gpu-fb) against main (.gpu) on fresh split defaults of 128-row tiles in 3-8 slices (run 386:
#    2-4% faster at 128 x 128 in 3-5 slices, even at 64 x 128).
# All back to back x20 behind the host gate, two passes, --check in pass 1. Pack: gpu-pack --bin mkernel (main) and
# bash bench/pack-rev.sh fixup-batch .gpu-fb; carry [".gpu", ".gpu-fb"].
set -u
one() { PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile $2"; }
{
one 254x5304x9216 cols-128x96-tma-store-c2
one 222x5520x14336 cols-128x96-tma-store-c2
one 225x6480x8192 cols-128x112-tma-store-c2
one 245x6664x9216 cols-128x112-tma-store-c2
one 228x7560x10240 narrow-tma-store-c2
one 197x7896x10240 narrow-tma-store-c2
one 201x8600x10240 cols-128x144-tma-store-c2
one 238x8856x14336 cols-128x144-tma-store-c2
} > "$OUT/a387.log" 2>&1
{
one 216x5848x7168 cols-128x96-tma-store-c2
one 231x6288x6144 cols-128x96-tma-store-c2
one 228x6312x4096 cols-128x96-tma-store-c2
one 225x7176x6144 cols-128x112-tma-store-c2
one 244x7056x4096 cols-128x112-tma-store-c2
one 247x5192x6144 cols-128x80-tma-store-c2
one 241x5272x4096 cols-128x80-tma-store-c2
} > "$OUT/b387.log" 2>&1
CHECK_FIRST=1 bash bench/gemm-ab-dirs.sh 252x4616x19328,198x1848x20992,224x920x25728,255x1584x8256,242x2088x14400,337x1136x12096,345x1712x6976,723x896x8576,475x1216x13184,349x1144x6144,588x576x15808,331x592x14848 "--host-gate --back-to-back 20" .gpu .gpu-fb > "$OUT/c387.log" 2>&1
grep -c PASS "$OUT/a387.log" "$OUT/b387.log" "$OUT/c387.log"
