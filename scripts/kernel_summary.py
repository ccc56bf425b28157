#!/usr/bin/env python3
"""kernel_summary.py: the kernels of one training step, from Nsight Compute CSV logs.

usage: scripts/kernel_summary.py kernels_ours_fp32.csv kernels_torch_fp32.csv ...

Each file is `ncu --csv --page raw --metrics gpu__time_duration.sum` over a window of graph replays
(scripts/gpu_check.sh kernels). The step is found as the period of the kernel sequence: the window's
kernel names repeat with it. Prints, per file, the kernels of one step in order with their durations,
then a table comparing the files: kernels per step and summed kernel time per step.
"""
import csv
import io
import sys


def read(path):
    text = open(path, errors="replace").read()
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit(f"{path}: no ncu CSV table in it")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
    to_ns = 1.0
    out = []
    for r in rows:
        name = r.get("Kernel Name") or r.get("Function Name") or ""
        dur = (r.get("gpu__time_duration.sum") or "").replace(",", "")
        try:
            out.append((name, float(dur) * to_ns))
        except ValueError:  # the units row
            to_ns = scale.get(dur.strip(), to_ns)
    return out


def period(names):
    """Smallest p such that the sequence repeats with period p over the window (after a lead-in)."""
    n = len(names)
    for p in range(1, n // 2 + 1):
        for lead in range(0, p):
            seq = names[lead:]
            if len(seq) >= 2 * p and all(seq[i] == seq[i + p] for i in range(len(seq) - p)):
                return lead, p
    return 0, n


def short(name, width=90):
    return name if len(name) <= width else name[:width - 3] + "..."


def main():
    summary = []
    for path in sys.argv[1:]:
        k = read(path)
        if not k:
            print(f"{path}: no kernels recorded")
            continue
        lead, p = period([n for n, _ in k])
        step = k[lead:lead + p]
        total = sum(d for _, d in step)
        print(f"\n### {path}: {p} kernels per step, {total / 1000:.1f} us of kernel time per step\n")
        for i, (n, d) in enumerate(step):
            print(f"{i:3d} {d / 1000:7.2f} us  {short(n)}")
        summary.append((path, p, total / 1000))
    print("\n| log | kernels per step | kernel time per step (us) |\n|---|---:|---:|")
    for path, p, t in summary:
        print(f"| {path.rsplit('/', 1)[-1]} | {p} | {t:.1f} |")


if __name__ == "__main__":
    main()
