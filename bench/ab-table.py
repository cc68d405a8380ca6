#!/usr/bin/env python3
# Tabulate a bench/gemm-ab.sh log: per shape, cuBLAS (fastest seen) and each variant's times, one per pass.
#   python3 bench/ab-table.py bench/results/logs/runNNN/run.log
import sys,re,collections
# parse gemm-ab.sh output: "== pass N", "-- --shape ... VARIANT", "shape LABEL M N K ours ms ..."
vals=collections.defaultdict(lambda: collections.defaultdict(list)); cub=collections.defaultdict(list)
var=None; order=[]
for line in open(sys.argv[1]):
    if line.startswith('-- '):
        v=line.split('--check',1)[-1] if '--check' in line else line
        v=re.sub(r'^-- --shape \S+\s*','',v).replace('--host-gate --back-to-back 20','').strip() or 'default'
        v=re.sub(r'--tile swap-ab-64x\d+-tma-store','swap',v).replace('--tile m64-wide-tma-store','m64w').replace('--split-last-wave','slw').replace('--split-like-rule','likerule')
        v=re.sub(r'--tile cols-128x(\d+)-tma-store',r'c\1',v).replace('--tile narrow-tma-store','narrow').replace('--tile wide-tma-store','wide').replace('--tile ','')
        var=v
        if var not in order: order.append(var)
    elif line.startswith('shape ') and not line.startswith('shape   '):
        f=line.split()
        if len(f)<9 or not re.match(r'^\d',f[2]): continue
        try: ours=float(f[5]); cb=float(f[7])
        except: continue
        vals[f[1]][var].append(ours); cub[f[1]].append(cb)
        if 'FAIL' in line: print('FAIL',line.strip())
print('%-18s %-8s'%('shape','cuBLAS')+''.join('%-22s'%o[:21] for o in order))
for s in vals:
    print('%-18s %-8.4f'%(s,min(cub[s]))+''.join('%-22s'%('-'.join('%.4f'%x for x in vals[s][o])) for o in order))
print('variants:',order)
