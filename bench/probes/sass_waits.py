#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's SASS page with stall samples
(`bash bench/device-run.sh ncu NAME ...` writes NAME.ours.sass.csv):

    python3 bench/probes/sass_waits.py NAME.ours.sass.csv [MIN_SAMPLES]

Prints every mbarrier try-wait (SYNCS.PHASECHK) with how often it ran and the samples on
it and on the branch after it (a warp blocked on the barrier is sampled there), every TMA
load, and every instruction with at least MIN_SAMPLES (default 40) samples. A producer whose
empty-barrier wait never retries (its second try-wait ran 0 times) while the consumers'
full-barrier branch holds many samples is the pipeline's bound (bench/NOTES.md 36.3)."""
import csv
import sys


def main(path, min_samples):
    rows = list(csv.reader(open(path, newline="")))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    cols = rows[head]
    src, samples, executed = cols.index("Source"), cols.index("Warp Stall Sampling (All Samples)"), cols.index("Instructions Executed")
    data = [r for r in rows[head + 1:] if len(r) == len(cols)]
    total = sum(int(r[samples] or 0) for r in data)
    print(f"{len(data)} instructions, {total} samples")
    print(f"{'#':>5} {'samples':>8} {'executed':>10}  instruction")
    for i, r in enumerate(data):
        text = r[src].strip()
        s = int(r[samples] or 0)
        after = int(data[i + 1][samples] or 0) if i + 1 < len(data) else 0
        if "SYNCS.PHASECHK" in text:
            print(f"{i:5d} {s:8d} {r[executed]:>10s}  {text[:70]}   (next: {after} samples)")
        elif "UTMALDG" in text or s >= min_samples:
            print(f"{i:5d} {s:8d} {r[executed]:>10s}  {text[:70]}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
