#!/usr/bin/env bash
# run293: model maps at M = 256, 64 (back to back x20) and 4096 (x1), main 5eafd60. carry [".gpu"].
set -u
m() {  # m M B2B WARMUP
  timeout 110 bash bench/device-run.sh bench gemm --models --filter "M=$1 " --check --host-gate --back-to-back $2 --iters 10 --warmup-ms $3 > $OUT/models-$1.log 2>&1
  python3 -c 'import json,glob,statistics,sys; f=sorted(glob.glob(sys.argv[1]+"/gemm-*.json"))[-1]; r=json.load(open(f))["rows"]; x=[a["ratio_to_cublas"] for a in r]; print("M="+sys.argv[2], f[-22:], len(r), "rows, median", round(statistics.median(x),3), "below 0.9:", sum(v<0.9 for v in x), "checks not PASS:", sum(not str(a.get("check","")).startswith("PASS") for a in r))' "$OUT" $1
}
m 256 20 200
m 64 20 200
m 4096 1 300
