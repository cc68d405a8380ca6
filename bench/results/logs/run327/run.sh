#!/usr/bin/env bash
# run327: cuBLAS runs these shapes as one wave of small tiles unsplit, 64 x R with R ~ 80-104 and 10-11 stages in
# clusters (nvjet ..._64x104_64x10_4x2, run 326); our nearest: the swapped 64 x R tiles (64 rows of B, R of A), one
# wave, unsplit, with the TMA store or in 2-CTA clusters sharing A. carry [".gpu"].
set -u
ab() { echo "#### $1"; bash bench/gemm-ab.sh "$@"; }
T=--tile
ab 2994x224x8192 "" "$T swap-ab-64x104-tma-store" "$T swap-ab-64x96-tma-store" "$T swap-ab-64x96-c2" "$T swap-ab-64x112-c2"
ab 2994x224x14336 "" "$T swap-ab-64x104-tma-store" "$T swap-ab-64x96-c2"
ab 2049x296x8192 "" "$T swap-ab-64x88-tma-store" "$T swap-ab-64x80-tma-store" "$T swap-ab-64x80-c2"
ab 2105x320x8192 "" "$T swap-ab-64x88-tma-store" "$T swap-ab-64x96-tma-store" "$T swap-ab-64x96-c2"
ab 1190x600x9728 "" "$T swap-ab-64x104-tma-store" "$T swap-ab-64x96-tma-store" "$T swap-ab-64x96-c2"
ab 1454x496x14336 "" "$T swap-ab-64x96-tma-store" "$T swap-ab-64x96-c2"
