#!/usr/bin/env python3
"""Per-tile times and SM cycles of a fused call's event trace (the JSON `bench
gemm-allreduce --trace` writes per rank): for every CTA, the interval between its CTA
start and its first TileStaged event, then between consecutive TileStaged events; per
tile index (the CTA's first, second, ... tile), the median interval, the median SM clock
over it (%clock cycles per %globaltimer microsecond) and their product, the cycles per
tile. More cycles per tile at the same clock than our GEMM alone is work the all-reduce
adds to the GEMM (bench/NOTES.md 11.2).

    python3 bench/probes/trace_tiles.py trace-*.json"""
import argparse
import json
import statistics
from collections import defaultdict


def tile_rows(path: str) -> str:
    with open(path) as f:
        d = json.load(f)
    events = d["trace"]["events"]
    start = {e["cta"]: e for e in events if e["kind"] == "CtaStart"}
    staged = defaultdict(list)
    for e in events:
        if e["kind"] == "TileStaged":
            staged[e["cta"]].append(e)
    times, clocks = defaultdict(list), defaultdict(list)
    for cta, evs in staged.items():
        prev = start.get(cta)
        if prev is None:
            continue
        for i, e in enumerate(sorted(evs, key=lambda e: e["t_us"])):
            dt = e["t_us"] - prev["t_us"]
            if dt > 0:
                times[i].append(dt)
                clocks[i].append(((e.get("sm_clock", 0) - prev.get("sm_clock", 0)) % 2**32) / dt)
            prev = e
    cells = []
    for i in sorted(times):
        t, mhz = statistics.median(times[i]), statistics.median(clocks[i])
        cells.append(f"tile {i}: {t:.1f} us at {mhz:.0f} MHz = {t * mhz / 1000:.0f}k cycles (n={len(times[i])})")
    return f"{d.get('shape', path)} rank {d.get('rank', '?')}: " + " | ".join(cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    for p in args.traces:
        print(tile_rows(p))


if __name__ == "__main__":
    main()
