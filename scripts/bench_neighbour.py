#!/usr/bin/python3
"""bench_neighbour.py: balerbench's training and codec with and without a busy neighbour process.

Issue 31's third item: with a busy process on one core, the default thread choice must be no slower
than one worker. This runs `balerbench train`, `compress` and `decompress` (fp32 and fp64, the fused
engine) with threads 1, 2 and the default (0: calibrated, then the fused engine's governor), each
quiet and beside a neighbour: a CPU-bound process pinned to the last CPU (`taskset`), at nice 0 or 19
(--nice). Rounds alternate the settings; each figure is the median over the rounds, with the range.

Seconds: the training report's train_s (per epoch), and each codec report's encode_duration_s or decode_duration_s.

usage: /usr/bin/python3 scripts/bench_neighbour.py [--rows 100000] [--epochs 3] [--rounds 3]
           [--nice 0] [--precisions fp32,fp64] [--products auto] [--build build] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_neighbour: {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-800:]}")
    return json.loads(r.stdout)


def start_neighbour(nice):
    cpu = os.cpu_count() - 1
    return subprocess.Popen(["taskset", "-c", str(cpu), "nice", "-n", str(nice), sys.executable, "-c",
                             "while True: pass"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--nice", type=int, default=0, help="the neighbour's nice value")
    p.add_argument("--precisions", default="fp32,fp64")
    p.add_argument("--products", default="auto", help="fused_products for every run")
    p.add_argument("--threads", default="1,2,0", help="thread settings (0: the default)")
    p.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    p.add_argument("--json", help="also write the results here")
    a = p.parse_args()
    bb = os.path.join(a.build, "harness", "balerbench")
    system = run_json([bb, "system", "--json"])
    blas = system.get("blas", {})
    work = tempfile.mkdtemp(prefix="bench_neighbour_")
    data = os.path.join(work, "cms.npz")
    subprocess.run([bb, "data", "generate", "--kind", "cms", "--rows", str(a.rows), "--seed", "0", "--out", data],
                   check=True, capture_output=True)
    cache = os.path.join(work, "cache")  # a fresh thread cache: each run calibrates as a first run would
    settings = [(prec, int(t), n) for n in (False, True) for prec in a.precisions.split(",")
                for t in a.threads.split(",")]
    times = {s: {"train_epoch_s": [], "compress_s": [], "decompress_s": []} for s in settings}
    notes = {}
    for r in range(a.rounds):
        for s in (settings if r % 2 == 0 else list(reversed(settings))):
            prec, threads, busy = s
            cfg = os.path.join(work, "c.json")
            out = os.path.join(work, "out")
            json.dump({"input_path": data, "model_name": "AE", "compression_ratio": 1.6, "epochs": a.epochs,
                       "batch_size": 512, "progress": "none", "early_stopping": False, "lr_scheduler": False,
                       "threads": threads, "engine": "fused", "fused_products": a.products,
                       "energy": {"enabled": False}}, open(cfg, "w"))
            env = dict(os.environ, BALERBENCH_CACHE_DIR=os.path.join(cache, str(r)))
            neighbour = start_neighbour(a.nice) if busy else None
            try:
                time.sleep(0.2 if busy else 0)
                common = ["--config", cfg, "--out", out, "--precision", prec, "--json"]
                tr = json.loads(subprocess.run([bb, "train"] + common, capture_output=True, text=True, env=env,
                                               check=True).stdout)
                co = json.loads(subprocess.run([bb, "compress"] + common, capture_output=True, text=True, env=env,
                                               check=True).stdout)
                de = json.loads(subprocess.run([bb, "decompress"] + common, capture_output=True, text=True, env=env,
                                               check=True).stdout)
            finally:
                if neighbour:
                    neighbour.kill()
                    neighbour.wait()
            times[s]["train_epoch_s"].append(tr["train_s"] / a.epochs)
            times[s]["compress_s"].append(co["encode_duration_s"])
            times[s]["decompress_s"].append(de["decode_duration_s"])
            eng = tr.get("engine", {})
            notes[s] = {"threads": tr.get("threads"), "products": eng.get("products"), "governor": eng.get("threads"),
                        "codec_engine": co.get("engine")}
    def cell(v):
        return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"
    cpu = system.get("cpu", {})
    print(f"CPU: {cpu.get('model_name')} (family {cpu.get('family')} model {cpu.get('model')}), {os.cpu_count()} CPUs; "
          f"OpenBLAS kernel {blas.get('core')}; {a.rows} CMS-like rows, AE, batch 512, {a.epochs} epochs; "
          f"neighbour: one busy process on CPU {os.cpu_count() - 1} at nice {a.nice}; medians of {a.rounds} "
          f"alternating rounds (range); fused_products {a.products}")
    print("| precision | threads | neighbour | train s/epoch | compress s | decompress s | chosen |")
    print("|---|---|---|---:|---:|---:|---|")
    for s in settings:
        prec, threads, busy = s
        t = times[s]
        chosen = notes[s]["threads"] or {}
        chosen_text = f"{chosen.get('threads')} ({chosen.get('source')})" if isinstance(chosen, dict) else str(chosen)
        print(f"| {prec} | {threads or 'default'} | {'busy' if busy else 'quiet'} | {cell(t['train_epoch_s'])} | "
              f"{cell(t['compress_s'])} | {cell(t['decompress_s'])} | {chosen_text} |")
    if a.json:
        json.dump({"settings": [{"precision": s[0], "threads": s[1], "neighbour": s[2], **times[s],
                                 "notes": notes[s]} for s in settings],
                   "rows": a.rows, "epochs": a.epochs, "rounds": a.rounds, "nice": a.nice,
                   "cpu": system.get("cpu"), "blas": blas}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
