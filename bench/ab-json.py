#!/usr/bin/env python3
# Turn bench/gemm-ab.sh and bench/gemm-ab-dirs.sh logs into one JSON record (rows in log order):
#   python3 bench/ab-json.py --date D --device TEXT --notes TEXT RUN=COMMIT=LOG [RUN=COMMIT=LOG ...] > out.json
# A row: section ("pass N"), tree or variant (the "-- ..." line's tail), shape, ours_ms, cublas_ms, check.
import argparse, json, re

def rows(path):
    section, tree, out = None, None, []
    for line in open(path):
        if line.startswith('== '):
            section = line[3:].strip()
        elif line.startswith('-- '):
            t = line[3:].strip()
            tree = re.sub(r'^--shape \S+\s*', '', t).strip() or 'default'
        elif line.startswith('shape ') and not line.startswith('shape   '):
            f = line.split()
            if len(f) < 9 or not re.match(r'^\d', f[2]):
                continue
            try:
                ours, cublas = float(f[5]), float(f[7])
            except ValueError:
                continue
            check = 'PASS' if 'PASS' in line else ('FAIL' if 'FAIL' in line else None)
            out.append({'section': section, 'tree': tree, 'shape': f[1], 'ours_ms': ours, 'cublas_ms': cublas, 'check': check})
    return out

p = argparse.ArgumentParser()
p.add_argument('--date', required=True)
p.add_argument('--device', required=True)
p.add_argument('--notes', default='')
p.add_argument('runs', nargs='+', help='RUN=COMMIT=LOG (COMMIT may hold "="; LOG may not)')
a = p.parse_args()
doc = {'device': a.device, 'date': a.date, 'notes': a.notes, 'runs': {}}
for r in a.runs:
    name, rest = r.split('=', 1)
    commit, log = rest.rsplit('=', 1)
    doc['runs'][name] = {'commit': commit, 'source': log, 'rows': rows(log)}
print(json.dumps(doc, indent=1))
