#!/usr/bin/env python3
"""Summarise a kernel_spans.so CSV (bench/probes/kernel_spans.c): per GPU and kernel
class, the median kernel time and the median gap since the previous kernel on that GPU
ended (launch latency, plus idle time if the host fell behind), and the shared memory
the kernels ran with.

    python3 bench/probes/kernel_spans.py spans.csv [--skip N]

--skip drops each GPU's first N kernels (JIT warm-up, checks)."""
import argparse
import csv
import statistics
from collections import defaultdict


def kernel_class(name: str) -> str:
    if name.startswith("mkernel_gemm_allreduce_"):
        return "fused " + name[len("mkernel_gemm_allreduce_"):]
    if name.startswith("mkernel_gemm_"):
        return "our gemm " + name[len("mkernel_gemm_"):]
    if "nccl" in name.lower():
        return "nccl"
    if name.startswith("mkernel_"):
        return name
    return "cublas/other"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--skip", type=int, default=0)
    args = ap.parse_args()
    per_dev = defaultdict(list)
    with open(args.csv, newline="") as f:
        for row in csv.DictReader(f):
            per_dev[int(row["device"])].append(row)
    for dev in sorted(per_dev):
        rows = sorted(per_dev[dev], key=lambda r: int(r["start_ns"]))[args.skip:]
        stats = defaultdict(lambda: {"dur": [], "gap": [], "prev": defaultdict(int), "smem": set()})
        prev_end, prev_cls = None, None
        for r in rows:
            cls = kernel_class(r["name"])
            s, e = int(r["start_ns"]), int(r["end_ns"])
            st = stats[cls]
            st["dur"].append((e - s) / 1000)
            if prev_end is not None:
                st["gap"].append((s - prev_end) / 1000)
                st["prev"][prev_cls] += 1
            st["smem"].add(r["smem_executed"])
            prev_end, prev_cls = e, cls
        print(f"GPU {dev}: {len(rows)} kernels")
        ends = defaultdict(list)
        for prev, r in zip(rows, rows[1:]):
            ends[kernel_class(r["name"])].append((int(r["end_ns"]) - int(prev["end_ns"])) / 1000)
        for cls, st in sorted(stats.items(), key=lambda kv: -len(kv[1]["dur"])):
            gaps = st["gap"] or [float("nan")]
            after = ", ".join(f"{k} x{v}" for k, v in sorted(st["prev"].items(), key=lambda kv: -kv[1])[:2])
            e2e = statistics.median(ends[cls]) if ends[cls] else float("nan")
            print(f"  {cls:44s} n={len(st['dur']):4d}  kernel median {statistics.median(st['dur']):9.2f} us"
                  f"  (end to previous end {e2e:8.2f})"
                  f"  gap before: median {statistics.median(gaps):7.2f} us, p90 {sorted(gaps)[int(0.9 * (len(gaps) - 1))]:7.2f}"
                  f"  smem executed {'/'.join(sorted(st['smem']))}  (after {after})")

    # Kernels of one class on two GPUs, paired in order (the i-th on each): how much
    # later the second GPU started, and each one's duration (a fused kernel on the GPU
    # that started first waits for its peer).
    if len(per_dev) >= 2:
        d0, d1 = sorted(per_dev)[:2]
        for cls in sorted({kernel_class(r["name"]) for r in per_dev[d0]}):
            a = [r for r in sorted(per_dev[d0], key=lambda r: int(r["start_ns"]))[args.skip:] if kernel_class(r["name"]) == cls]
            b = [r for r in sorted(per_dev[d1], key=lambda r: int(r["start_ns"]))[args.skip:] if kernel_class(r["name"]) == cls]
            n = min(len(a), len(b))
            if n < 3:
                continue
            skew = sorted((int(b[i]["start_ns"]) - int(a[i]["start_ns"])) / 1000 for i in range(n))
            print(f"pair {cls:44s} n={n:4d}  start skew GPU {d1} - GPU {d0}: median {statistics.median(skew):7.2f} us,"
                  f" p10 {skew[n // 10]:7.2f}, p90 {skew[(9 * n) // 10]:7.2f}")


if __name__ == "__main__":
    main()
