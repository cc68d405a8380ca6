#!/usr/bin/env bash
# run295 part 2: carry [".gpu"]; ncu of the split default at 256 x 1536 x 4096 (ours and cuBLAS's kernels).
set -u
mkdir -p /tmp/s
OUT=/tmp/s NCU_COUNT=6 timeout 150 bash bench/device-run.sh ncu s1536 --shape 256x1536x4096
for f in s1536.txt s1536.ours.raw.csv s1536.cublas.raw.csv s1536.ours.sass.csv; do gzip -c /tmp/s/$f > "$OUT/$f.gz"; done
grep -E "^  [a-zA-Z_]|Duration|Elapsed Cycles|Grid Size|Registers Per" /tmp/s/s1536.txt | head -60
python3 bench/probes/sass_waits.py /tmp/s/s1536.ours.sass.csv 2>&1 | head -60
