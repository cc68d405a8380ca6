#!/usr/bin/env python3
"""Per-CTA spans of plain GEMM calls (`cta-spans.csv`, written by `bench gemm` with
MKERNEL_PROBE_CTA_SPANS set): for each call, the last CTA's end, the median CTA's, and the
mean end per row block and per column block of the tile each CTA ran (one tile per CTA:
the grid is one wave; tile t's blocks as sm90_gemm.cuh's TileScheduler with groups of
--group row blocks, 8 by default; 0: equal groups, as the plain GEMM takes from run 311), so a slow call shows whether a few tiles, a row block or every CTA ran late.

    python3 bench/probes/cta_spans.py cta-spans.csv[.gz] --tile SHAPE:BN[:CM[:CN]] ...
    e.g. --tile 1440x960x8192:88 --tile 1088x1280x8192:96"""
import argparse
import csv
import gzip
import statistics
from collections import defaultdict


def coords(t, num_m, num_n, cm=1, cn=1, group=8):
    size = cm * cn
    if group == 0:  # the plain GEMM's equal groups: the fewest of at most 8, all but the last of one size
        groups = -(-(-(-num_m // cm)) // 8)
        group = -(-(-(-num_m // cm)) // groups) if groups else 8
    member, pair = t % size, t // size
    num_pm, num_pn = -(-num_m // cm), -(-num_n // cn)
    per_group = group * num_pn
    g = pair // per_group
    first_m = g * group
    gm = min(num_pm - first_m, group)
    r = pair - g * per_group
    return (first_m + r % gm) * cm + member % cm, (r // gm) * cn + member % cn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--tile", action="append", default=[], help="SHAPE:BN[:CM[:CN]] (BM = --bm)")
    ap.add_argument("--group", type=int, default=None,
                    help="raster group (0: equal groups); default: as the plain GEMM takes it (equal groups for"
                         " unclustered tiles filling one wave on --sms SMs at K >= 7168, else 8)")
    ap.add_argument("--sms", type=int, default=132, help="SMs of the GPU the spans came from")
    ap.add_argument("--bm", type=int, default=128, help="rows of A per tile (64 for the m64 tiles)")
    args = ap.parse_args()
    tiles = {}
    for t in args.tile:
        shape, *rest = t.split(":")
        assert rest, f"--tile {t}: SHAPE:BN[:CM[:CN]]"
        bn, cm, cn = (int(x) for x in rest + ["1"] * (3 - len(rest)))
        tiles[(shape, bn)] = (cm, cn)
    calls = defaultdict(list)
    order = []
    with (gzip.open(args.csv, "rt") if args.csv.endswith(".gz") else open(args.csv)) as f:
        for r in csv.DictReader(f):
            key = (r["shape"], r["median_ms"], r["set"], r["rep"])
            if key not in calls:
                order.append(key)
            calls[key].append((int(r["cta"]), int(r["sm"]), int(r["start_ns"]), int(r["end_ns"])))
    for key in order:
        shape = key[0].split()[-1]
        m, n, k = (int(x) for x in shape.split("x"))
        spans = calls[key]
        ends = sorted(e for _, _, _, e in spans)
        line = f"{shape} median {key[1]} set {key[2]} rep {key[3]}: {len(spans)} CTAs, end last {ends[-1] / 1e3:.1f} us, median {statistics.median(ends) / 1e3:.1f}, first {ends[0] / 1e3:.1f}, start last {max(s for _, _, s, _ in spans) / 1e3:.1f}"
        match = [(bn, cmcn) for (s, bn), cmcn in tiles.items() if s == shape]
        if match:
            bn, (cm, cn) = match[0]
            num_m, num_n = -(-m // args.bm), -(-n // bn)
            group = args.group
            if group is None:
                one_wave = -(-num_m // cm) * cm * -(-num_n // cn) * cn <= args.sms
                group = 0 if cm * cn == 1 and one_wave and k >= 7168 else 8
            by_m, by_n = defaultdict(list), defaultdict(list)
            for cta, _, _, e in spans:
                mb, nb = coords(cta, num_m, num_n, cm, cn, group)
                by_m[mb].append(e)
                by_n[nb].append(e)
            line += "\n  row blocks: " + " ".join(f"{mb}:{statistics.mean(v) / 1e3:.1f}" for mb, v in sorted(by_m.items()))
            line += "\n  col blocks: " + " ".join(f"{nb}:{statistics.mean(v) / 1e3:.1f}" for nb, v in sorted(by_n.items()))
        print(line)


if __name__ == "__main__":
    main()
