#!/usr/bin/env bash
# run357: the model map (bench gemm --models, M = 1-4096, one call per step, as run 328) on main 1a2edb5, --check,
# JSON to $OUT. carry [".gpu"].
set -u
OUT=$OUT bash bench/device-run.sh bench gemm --models --check --iters 20 --warmup-ms 100 2>&1 | grep -E "^shape|^M=|error|FAIL|panic" | cut -c1-170
