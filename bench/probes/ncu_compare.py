#!/usr/bin/env python3
"""Side by side: the counters that located run 285's gap, from `ncu --page raw --csv` exports
(`bash bench/device-run.sh ncu NAME ...` writes NAME.ours.raw.csv and NAME.cublas.raw.csv).

    python3 bench/probes/ncu_compare.py A.raw.csv B.raw.csv [more.raw.csv ...]

Prints cycles, instructions, pipe and L2/crossbar traffic, then the warp stall samples
(smsp__pcsamp_warps_issue_stalled_*), one column per file (its first kernel)."""
import csv
import sys

KEYS = [
    ("kernel", "Kernel Name"),
    ("duration us", "gpu__time_duration.sum"),
    ("SM cycles", "sm__cycles_elapsed.avg"),
    ("instructions", "smsp__inst_executed.sum"),
    ("tensor realtime %", "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed"),
    ("L2 throughput %", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("L2 read sectors", "lts__t_sectors_srcunit_tex_op_read.sum"),
    ("L2 fabric sectors", "lts__t_sectors_srcunit_ltcfabric.sum"),
    ("xbar->SM TB/s", "l1tex__m_xbar2l1tex_read_bytes.sum.per_second"),
    ("samples", "smsp__pcsamp_sample_count"),
]
STALL = "smsp__pcsamp_warps_issue_stalled_"


def first_kernel(path):
    rows = list(csv.reader(open(path, newline="")))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    # a units row follows the header
    return dict(zip(rows[head], rows[head + 2]))


def main(paths):
    cols = [first_kernel(p) for p in paths]
    width = 18
    for label, key in KEYS:
        print(f"{label:24s}" + "".join(f"{c.get(key, '-')[:width]:>{width + 2}s}" for c in cols))
    stalls = sorted({k for c in cols for k in c if k.startswith(STALL) and not k.endswith("_not_issued")})
    print("stall samples:")
    for k in stalls:
        vals = [c.get(k, "-") for c in cols]
        if all(v in ("0", "-", "") for v in vals):
            continue
        print(f"  {k[len(STALL):][:22]:22s}" + "".join(f"{v:>{width + 2}s}" for v in vals))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
