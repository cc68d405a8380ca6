#!/usr/bin/env bash
# run379: run 378 had 128 x 112 in 2-CTA clusters (half the default's 224 columns: two waves of tiles, B multicast to
# both row blocks, 6 stages instead of 3) 3-5% faster at M = 240-256, N = 14336-28672. Does "half the width, in
# clusters" hold where the default is a one-wave 128-row tile at M = 129-256, K >= 4096? Per shape: the default, the
# half-width -c2 tile, the default's own -c2 twin; back to back x20 behind the host gate, two passes. main 73b9faf.
set -u
one() { # SHAPE HALF TWIN
  PASSES=2 bash bench/gemm-ab.sh "$1" "--host-gate --back-to-back 20" "--host-gate --back-to-back 20 --tile $2" \
    "--host-gate --back-to-back 20 --tile $3"
}
{
one 256x8192x8192 cols-128x64-tma-store-c2 narrow-tma-store-c2
one 256x8192x4096 cols-128x64-tma-store-c2 narrow-tma-store-c2
one 256x6144x4096 cols-128x48-tma-store-c2 cols-128x96-tma-store-c2
one 256x14336x4096 cols-128x112-tma-store-c2 cols-128x224-tma-store-c2
one 256x10240x8192 cols-128x80-tma-store-c2 cols-128x160-tma-store-c2
one 256x12288x4096 cols-128x96-tma-store-c2 cols-128x192-tma-store-c2
one 200x14336x4096 cols-128x112-tma-store-c2 cols-128x224-tma-store-c2
} > "$OUT/bench379.log" 2>&1
grep -cE "^shape [0-9]" "$OUT/bench379.log"
