#!/usr/bin/env bash
# run275 part 0 (session 32): what cuBLAS runs where our one-wave narrow tiles trail it (CUPTI names, grids, medians).
set -u
S=1024x1280x8192,384x3072x8192,900x1152x6912,1024x1536x8192,512x2560x4096
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
