#!/usr/bin/env bash
# run154: where do 128-row swapped TMA-store tiles (unsplit: one wave where the 64-row ones take two; split 2
# ways: one wave of half tiles) beat the small-M default? One H200, two passes.
set -u
b() { bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json "$@" 2>&1 | grep -E "^shape|error"; }
for pass in 1 2; do
  echo "== default (pass $pass)"
  b --shape 129x14336x8192,160x14336x8192,192x14336x8192,256x14336x8192,129x9216x7168,129x14336x4096,144x8192x14336,160x8192x14336,176x8192x14336,129x8192x8192,160x8192x8192
  echo "== unsplit 128-row swapped, one wave"
  b --shape 129x14336x8192,129x9216x7168,129x14336x4096 --tile swap-ab-128x136-tma-store
  b --shape 160x14336x8192 --tile swap-ab-128x160-tma-store
  b --shape 192x14336x8192 --tile swap-ab-128x192-tma-store
  b --shape 256x14336x8192 --tile swap-ab-128x256-tma-store
  echo "== split 2"
  b --shape 129x8192x8192 --tile swap-ab-128x136-tma-store --split-last-wave 2
  b --shape 144x8192x14336 --tile swap-ab-128x144-tma-store --split-last-wave 2
  b --shape 160x8192x14336,160x8192x8192 --tile swap-ab-128x160-tma-store --split-last-wave 2
  b --shape 176x8192x14336 --tile swap-ab-128x176-tma-store --split-last-wave 2
done
