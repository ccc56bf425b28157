#!/usr/bin/env python3
"""bench_gpu_amp.py: balerbench's training step against PyTorch's best, per precision, side by side.

For each precision mode and each variant, in alternating rounds (the machine's load moves between
minutes), trains Baler's AE (24-200-100-50-15-50-100-200-24, batch 512, Adam lr 1e-3, loss
sum((x_hat - x)^2) / n_features) on the same rows, data already on the device, and reports the
median seconds per epoch over the rounds (each run's first epoch is a warm-up) with the range:

  balerbench  `balerbench train --json` (its own engine; one CUDA graph per step on CUDA)
  eager       PyTorch eager steps, Adam(fused=True) where this PyTorch has it, no host read per step
  graph       the same step captured once as a CUDA graph and replayed per batch (CUDA only)
  compiled    torch.compile'd model inside the graph (PyTorch 2 and CUDA only)

Precisions: fp64, fp32, tf32 (TF32 matmuls), amp_fp16_noscale / amp_bf16 (autocast, float32
master weights), amp_fp16 (autocast + GradScaler). A variant that cannot run here (no CUDA, no
torch.compile, a capture error) is reported as skipped with its reason, never as a number.

usage: scripts/bench_gpu_amp.py --balerbench build-gpu/harness/balerbench [--rows 520000] [--epochs 4]
         [--rounds 3] [--precisions fp32,amp_bf16] [--variants balerbench,eager,graph,compiled]
         [--device cuda] [--json out.json]
On the CPU (--device cpu) the eager variant and balerbench run: a check of the script itself.
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_vs_pytorch import AE  # noqa: E402

BATCH = 512
AMP = {"amp_fp16": torch.float16, "amp_fp16_noscale": torch.float16, "amp_bf16": torch.bfloat16}


def loss_fn(x_hat, x):
    return ((x_hat.float() if x_hat.dtype != x.dtype else x_hat) - x).pow(2).sum() / x.shape[1]


class Step:
    """One training step of one precision: model, optimiser, scaler, static batch."""

    def __init__(self, precision, x, compiled=False, capturable=False):
        dev = x.device
        dtype = torch.float64 if precision == "fp64" else torch.float32
        torch.manual_seed(0)
        self.model = AE(x.shape[1], 15, dtype).to(dev)
        self.fwd = torch.compile(self.model) if compiled else self.model
        kw = {}
        if dev.type == "cuda" and "fused" in torch.optim.Adam.__init__.__code__.co_varnames:
            kw["fused"] = True
        if capturable:
            kw["capturable"] = True
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3, **kw)
        self.autocast = AMP.get(precision)
        self.scaler = torch.cuda.amp.GradScaler() if precision == "amp_fp16" else None
        self.x = x.to(dtype)
        self.static_x = torch.empty((BATCH, x.shape[1]), dtype=dtype, device=dev)
        self.loss_sum = torch.zeros((), dtype=torch.float32, device=dev)

    def __call__(self, xb):
        self.opt.zero_grad(set_to_none=False)
        ctx = torch.autocast(xb.device.type, dtype=self.autocast) if self.autocast else contextlib.nullcontext()
        with ctx:
            loss = loss_fn(self.fwd(xb), xb)
        if self.scaler:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        self.loss_sum += loss.detach().float()


def torch_epochs(precision, x, epochs, variant):
    """Seconds per epoch of one run of a PyTorch variant."""
    cuda = x.device.type == "cuda"
    if variant in ("graph", "compiled") and not cuda:
        raise RuntimeError("CUDA graphs need a CUDA device")
    if variant == "compiled" and not hasattr(torch, "compile"):
        raise RuntimeError(f"torch.compile is not in PyTorch {torch.__version__}")
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    step = Step(precision, x, compiled=variant == "compiled", capturable=variant != "eager")
    rows = (x.shape[0] // BATCH) * BATCH  # full batches: the graph replays one shape
    graph = None
    if variant != "eager":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(3):  # warm-up steps before capture, as PyTorch's whole-network recipe
                step.static_x.copy_(step.x[i * BATCH:(i + 1) * BATCH])
                step(step.static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step(step.static_x)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times = []
    for _ in range(epochs):
        sync()
        t0 = time.perf_counter()
        step.loss_sum.zero_()
        for s in range(0, rows, BATCH):
            if graph is None:
                step(step.x[s:s + BATCH])
            else:
                step.static_x.copy_(step.x[s:s + BATCH], non_blocking=True)
                graph.replay()
        step.loss_sum.item()  # one host read per epoch, as balerbench
        sync()
        times.append(time.perf_counter() - t0)
    torch.backends.cuda.matmul.allow_tf32 = False
    return times


def balerbench_epochs(binary, data, precision, epochs, device, workdir):
    cfg = os.path.join(workdir, "bench.json")
    with open(cfg, "w") as f:
        json.dump({"input_path": data, "model_name": "AE", "compression_ratio": 1.6, "epochs": epochs,
                   "batch_size": BATCH, "device": device, "progress": "none", "early_stopping": False,
                   "lr_scheduler": False, "apply_normalization": False}, f)
    out = subprocess.run([binary, "train", "--json", "--config", cfg, "--out", os.path.join(workdir, "out"),
                          "--precision", precision], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
    return [e["duration_s"] - e.get("eval_duration_s", 0.0) for e in json.loads(out.stdout)["epochs"]]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--balerbench", help="the balerbench binary (leave out to skip that variant)")
    p.add_argument("--rows", type=int, default=520000)
    p.add_argument("--epochs", type=int, default=4, help="epochs per run; the first is a warm-up")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--precisions", default="fp32,tf32,amp_fp16_noscale,amp_fp16,amp_bf16")
    p.add_argument("--variants", default="balerbench,eager,graph,compiled")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--json", help="also write the results as JSON to this file")
    a = p.parse_args()
    if a.epochs < 2:
        sys.exit("bench_gpu_amp.py: error: --epochs must be at least 2 (the first is a warm-up)")
    dev = torch.device(a.device)
    rng = np.random.default_rng(0)
    x_np = rng.random((a.rows, 24))
    variants = [v for v in a.variants.split(",") if v != "balerbench" or a.balerbench]
    precisions = a.precisions.split(",")
    results = {(pr, v): [] for pr in precisions for v in variants}
    skipped = {}
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "rows.npz")
        np.savez(data, data=x_np, names=np.array([f"f{i}" for i in range(24)]))
        x = torch.tensor(x_np, dtype=torch.float64, device=dev)
        for r in range(a.rounds):  # alternating: every variant once per round
            for pr in precisions:
                for v in variants:
                    if (pr, v) in skipped:
                        continue
                    try:
                        t = (balerbench_epochs(a.balerbench, data, pr, a.epochs, a.device, work) if v == "balerbench"
                             else torch_epochs(pr, x, a.epochs, v))
                        results[(pr, v)].append(statistics.median(t[1:]))
                    except Exception as e:  # recorded, not fatal: the other variants still run
                        skipped[(pr, v)] = f"{type(e).__name__}: {e}".splitlines()[0][:160]
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print(f"{name}, PyTorch {torch.__version__}; {a.rows} rows, batch {BATCH}; seconds per epoch, "
          f"median of {a.rounds} alternating rounds (range)")
    print("| precision | " + " | ".join(variants) + " | balerbench / best PyTorch |")
    print("|---|" + "---:|" * (len(variants) + 1))
    out = []
    for pr in precisions:
        cells, best = [], None
        for v in variants:
            vals = results[(pr, v)]
            if (pr, v) in skipped:
                cells.append("skipped")
            else:
                m = statistics.median(vals)
                cells.append(f"{m:.4f} ({min(vals):.4f}-{max(vals):.4f})")
                if v != "balerbench":
                    best = m if best is None else min(best, m)
            out.append({"precision": pr, "variant": v, "epoch_s": vals, "skipped": skipped.get((pr, v))})
        ours = results.get((pr, "balerbench"))
        ratio = f"{statistics.median(ours) / best:.2f}x" if ours and best else "-"
        print(f"| {pr} | " + " | ".join(cells) + f" | {ratio} |")
    for (pr, v), why in skipped.items():
        print(f"- {pr} {v}: skipped ({why})")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "rows": a.rows, "batch": BATCH,
                       "rounds": a.rounds, "results": out}, f, indent=2)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
