#!/usr/bin/env bash
# run171: the padding rule (TileConfig::swapped_short_instead_of) on its edges: the default (now the rule's short
# swapped tile) against the old default (narrow-tma-store) at M = 65, 72, 88, 111 and N = 9216 / 14336, two passes
# (the first with --check); then gpu_gemm with the new cases. One H200.
set -u
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error|FAIL" | cut -c1-130; }
S=65x9216x7168,72x9216x7168,88x9216x7168,111x9216x7168,65x14336x7168,88x14336x7168,96x14336x7168,111x14336x4096
for pass in 1 2; do
  chk=; [[ $pass == 1 ]] && chk=--check
  echo "== pass $pass"
  b $chk --shape $S
  b $chk --shape $S --tile narrow-tma-store
done
TEST_TIMEOUT=400 bash bench/device-run.sh tests gpu_gemm
