#!/usr/bin/env bash
# run149: small-M long-K plain GEMM probe: does our time scale with the tile count (per-SM bound) and what
# does cuBLAS run (split-K?). One H200.
set -u
S=129x7168x9216,129x8448x9216,129x8192x14336,256x7168x9216,256x8448x9216,192x8192x14336,64x7168x9216,129x7168x4096
bash bench/device-run.sh spans gemm --shape $S --iters 30 --warmup-ms 300 > $OUT/spans.txt 2>&1
tail -40 $OUT/spans.txt
python3 - <<'PY'
import csv, gzip, statistics, collections, os
rows = list(csv.DictReader(gzip.open(os.environ['OUT'] + '/spans.csv.gz', 'rt')))
rows.sort(key=lambda r: int(r['start_ns']))
# distinct kernels in order of first appearance, with median duration
d = collections.OrderedDict()
for r in rows:
    d.setdefault(r['grid_x'] + ' ' + r['name'][:110], []).append((int(r['end_ns']) - int(r['start_ns'])) / 1000)
for k, v in d.items():
    print(f"{len(v):5d} {statistics.median(v):9.2f} us  {k}")
PY
