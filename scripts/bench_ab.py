#!/usr/bin/env python3
"""bench_ab.py: two builds of a Google Benchmark binary side by side, in alternating rounds.

Each round runs A then B (or B then A on odd rounds) with the same filter, one process each, and keeps
every run's JSON. The summary gives, per benchmark and build, the median time with its range over
the rounds; for bench_engine it also gives, per run, the fused engine's steady epoch over its
products floor (BM_EngineSteadyEpoch/<p>/<t> against BM_GemmFloor/<p>/<t>/1) and two threads against
one, as medians with ranges over the runs (a ratio of two figures measured minutes apart in one
process, not of two medians).

  /usr/bin/python3 scripts/bench_ab.py --a before/bench_engine --b build/tests/bench_engine \
      --filter 'EngineSteadyEpoch|GemmFloor/(32|64)/[12]/1' --rounds 5 --out results/.../ab
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def run(binary, flt, path):
    with open(path + ".tmp", "w") as out:
        subprocess.run([binary, "--benchmark_filter=" + flt, "--benchmark_format=json"], stdout=out,
                       stderr=subprocess.DEVNULL, check=True)
    os.replace(path + ".tmp", path)
    with open(path) as f:
        data = json.load(f)
    return {re.sub(r"/min_time:[0-9.]+|/manual_time", "", b["name"]): b["real_time"] for b in data["benchmarks"]
            if b.get("run_type", "iteration") == "iteration"}


def spread(values, fmt):
    return (fmt % statistics.median(values)) + " (" + (fmt % min(values)) + "-" + (fmt % max(values)) + ")"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="benchmark binary A (e.g. the build before a change)")
    ap.add_argument("--b", required=True, help="benchmark binary B")
    ap.add_argument("--filter", required=True, help="--benchmark_filter for both")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", required=True, help="folder for each run's JSON and summary.md")
    args = ap.parse_args()
    for b in (args.a, args.b):
        if not os.access(b, os.X_OK):
            sys.exit("bench_ab.py: %s is not an executable file (hint: build it first)" % b)
    if args.rounds < 1:
        sys.exit("bench_ab.py: --rounds must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    runs = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
        for side in order:
            binary = args.a if side == "A" else args.b
            runs[side].append(run(binary, args.filter, os.path.join(args.out, "round%d_%s.json" % (r + 1, side))))
            print("round %d %s done" % (r + 1, side), file=sys.stderr)
    lines = ["# %s (A) against %s (B)" % (args.a, args.b), "",
             "Filter `%s`, %d alternating rounds; ms, median (range) over the rounds." % (args.filter, args.rounds), "",
             "| benchmark | A | B | B / A |", "|---|---:|---:|---:|"]
    names = sorted(set(runs["A"][0]) | set(runs["B"][0]))
    for n in names:
        a = [x[n] for x in runs["A"] if n in x]
        b = [x[n] for x in runs["B"] if n in x]
        if a and b:
            lines.append("| %s | %s | %s | %.3f |" % (n, spread(a, "%.1f"), spread(b, "%.1f"),
                                                    statistics.median(b) / statistics.median(a)))
    ratios = []
    for side in ("A", "B"):
        for p in ("32", "64"):
            per_run = [x for x in runs[side] if all(k in x for k in (
                "BM_EngineSteadyEpoch/%s/1" % p, "BM_EngineSteadyEpoch/%s/2" % p, "BM_GemmFloor/%s/1/1" % p,
                "BM_GemmFloor/%s/2/1" % p))]
            if not per_run:
                continue
            s1 = [x["BM_EngineSteadyEpoch/%s/1" % p] for x in per_run]
            s2 = [x["BM_EngineSteadyEpoch/%s/2" % p] for x in per_run]
            f1 = [x["BM_GemmFloor/%s/1/1" % p] for x in per_run]
            f2 = [x["BM_GemmFloor/%s/2/1" % p] for x in per_run]
            ratios.append("| %s | fp%s | %s | %s | %s |" % (
                side, p, spread([a / b for a, b in zip(s1, s2)], "%.2f"),
                spread([a / b for a, b in zip(s1, f1)], "%.3f"), spread([a / b for a, b in zip(s2, f2)], "%.3f")))
    if ratios:
        lines += ["", "Per run (steady epoch and floor of the same process):", "",
                  "| build | precision | two threads / one | fused / floor, one | fused / floor, two |",
                  "|---|---|---:|---:|---:|"] + ratios
    summary = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.md.tmp"), "w") as f:
        f.write(summary)
    os.replace(os.path.join(args.out, "summary.md.tmp"), os.path.join(args.out, "summary.md"))
    print(summary)


if __name__ == "__main__":
    main()
