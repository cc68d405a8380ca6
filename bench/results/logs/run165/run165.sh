#!/usr/bin/env bash
# run165: M = 112-128 at N = 8704-9216 (a half-full wave of 128 x 128 tiles, 0.65-0.82 of cuBLAS): what cuBLAS
# runs (CUPTI names and grids), then every catalog tile that could fill the SMs, against the default in the same
# pass, two passes. One H200.
set -u
S=128x9216x7168,128x8704x8192,128x9216x14336,112x9216x7168
bash bench/device-run.sh spans gemm --shape $S --iters 20 --warmup-ms 300 > $OUT/spans.txt 2>&1
grep -E "^shape|error" $OUT/spans.txt | cut -c1-130
python3 - <<'PY'
import csv, gzip, statistics, collections, os
rows = list(csv.DictReader(gzip.open(os.environ['OUT'] + '/spans.csv.gz', 'rt')))
rows.sort(key=lambda r: int(r['start_ns']))
d = collections.OrderedDict()
for r in rows:
    d.setdefault(r['grid_x'] + ' ' + r['name'][:110], []).append((int(r['end_ns']) - int(r['start_ns'])) / 1000)
for k, v in d.items():
    print(f"{len(v):5d} {statistics.median(v):9.2f} us  {k}")
PY
b() { echo "-- $*"; bash bench/device-run.sh bench gemm --iters 30 --warmup-ms 300 --no-json --shape $S "$@" 2>&1 | grep -E "^shape|error" | cut -c1-130; }
for pass in 1 2; do
  echo "== pass $pass"
  b
  for t in swap-ab-64x128-tma-store swap-ab-64x128-c2 swap-ab-64x128 m64-narrow-tma-store m64-wide-tma-store m64-wide-tma-store-c2 \
           swap-ab-128x128-tma-store swap-ab-128x128-tma-store-c2 narrow-tma-store-c2 narrow; do
    b --tile $t
  done
done
