#!/usr/bin/env python3
"""bench_fused_cuda.py: the fused CUDA engine against the libtorch engine and PyTorch's best, 1000 epochs.

For each precision, in one run on the GPU (issue 38), trains Baler's AE (24-200-100-50-15-50-100-
200-24, batch 512, Adam lr 1e-3, loss sum((x_hat - x)^2) / n_features) on the same rows and reports
seconds and NVML joules for 1000 epochs, extrapolated from a measured window of at least --window-s
seconds (default 30), and the ratio to the best PyTorch variant:

  fused     `balerbench train --engine fused` (harness/engine/cuda/: two kernels per step, three for
            amp_fp16's loss scaling; tf32, amp_bf16 and amp_fp16 on tensor cores)
  libtorch  `balerbench train --engine libtorch` (autograd, one CUDA graph per step)
  graph     PyTorch, the step captured once as a CUDA graph and replayed per batch
  compiled  torch.compile'd model inside the graph

balerbench variants: a 3-epoch run sizes the measured run (enough epochs for the window, plus one);
seconds are the epochs' own durations after the first (evaluation excluded), joules NVML's total
energy counter read around the process, scaled by the epochs' share of the process's time (stated
as such: start-up and data loading are at the GPU's idle power). PyTorch variants: one warm-up
epoch, then whole epochs until the window is full, NVML's counter read at the window's edges, the
device synchronised on both. The GPU's power limit and clocks are read, never set.

A variant that cannot run (no torch.compile, a precision the GPU lacks) is listed as skipped with its
reason. Precisions: fp32, tf32, amp_bf16, amp_fp16 (and amp_fp16_noscale); scripts/gpu_check.sh
fusedbench runs them one per process, as many as its time budget holds.

usage: scripts/bench_fused_cuda.py --balerbench build-gpu/harness/balerbench [--rows 520000]
         [--window-s 30] [--precisions fp32,tf32,amp_bf16,amp_fp16] [--variants fused,libtorch,graph,compiled] [--json out.json]
"""
import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu_amp import BATCH, Step  # noqa: E402

EPOCHS = 1000


class Nvml:
    """NVML's total energy counter (millijoules since the driver loaded; Volta and later), via ctypes."""

    def __init__(self, index=0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise RuntimeError("nvmlInit failed")
        self.handle = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) != 0:
            raise RuntimeError(f"no NVML device {index}")

    def energy_j(self):
        mj = ctypes.c_ulonglong()
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(mj)) != 0:
            raise RuntimeError("nvmlDeviceGetTotalEnergyConsumption failed")
        return mj.value / 1000.0

    def power_limit_w(self):
        mw = ctypes.c_uint()
        return mw.value / 1000.0 if self.lib.nvmlDeviceGetEnforcedPowerLimit(self.handle, ctypes.byref(mw)) == 0 else None


def balerbench_run(binary, data, engine, precision, epochs, workdir):
    """(epoch seconds after the first, process seconds, the JSON) of one `balerbench train`."""
    cfg = os.path.join(workdir, "bench.json")
    with open(cfg, "w") as f:
        json.dump({"input_path": data, "model_name": "AE", "compression_ratio": 1.6, "epochs": epochs,
                   "batch_size": BATCH, "device": "cuda", "progress": "none", "early_stopping": False,
                   "lr_scheduler": False, "apply_normalization": False, "test_size": 0}, f)
    t0 = time.perf_counter()
    out = subprocess.run([binary, "train", "--json", "--config", cfg, "--out", os.path.join(workdir, "out"),
                          "--precision", precision, "--engine", engine], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
    r = json.loads(out.stdout)
    return [e["duration_s"] - e.get("eval_duration_s", 0.0) for e in r["epochs"]][1:], wall, r


def balerbench_variant(binary, data, engine, precision, window_s, workdir, nvml):
    sizing, _, _ = balerbench_run(binary, data, engine, precision, 3, workdir)
    epochs = max(2, math.ceil(window_s / (sum(sizing) / len(sizing)))) + 1
    e0 = nvml.energy_j()
    times, wall, r = balerbench_run(binary, data, engine, precision, epochs, workdir)
    joules = (nvml.energy_j() - e0) * sum(times) / wall
    status = (r.get("engine") or {})
    return {"epochs": len(times), "window_s": sum(times), "window_j": joules,
            "note": f"{status.get('name', engine)}; {status.get('products', '')}".strip("; ")}


def torch_variant(variant, precision, x, window_s, nvml):
    if variant == "compiled" and not hasattr(torch, "compile"):
        raise RuntimeError(f"torch.compile is not in PyTorch {torch.__version__}")
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    step = Step(precision, x, compiled=variant == "compiled", capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):  # warm-up steps before capture
            step.static_x.copy_(step.x[i * BATCH:(i + 1) * BATCH])
            step(step.static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(step.static_x)
    rows = (x.shape[0] // BATCH) * BATCH

    def epoch():
        step.loss_sum.zero_()
        for s in range(0, rows, BATCH):
            step.static_x.copy_(step.x[s:s + BATCH], non_blocking=True)
            graph.replay()
        step.loss_sum.item()

    epoch()  # warm-up
    torch.cuda.synchronize()
    e0, t0, n = nvml.energy_j(), time.perf_counter(), 0
    while n == 0 or time.perf_counter() - t0 < window_s:
        epoch()
        n += 1
    torch.cuda.synchronize()
    t, joules = time.perf_counter() - t0, nvml.energy_j() - e0
    torch.backends.cuda.matmul.allow_tf32 = False
    return {"epochs": n, "window_s": t, "window_j": joules, "note": f"PyTorch {torch.__version__}"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--balerbench", required=True, help="the balerbench binary, built with the CUDA fused engine")
    p.add_argument("--rows", type=int, default=520000)
    p.add_argument("--window-s", type=float, default=30.0)
    p.add_argument("--precisions", default="fp32")
    p.add_argument("--variants", default="fused,libtorch,graph,compiled")
    p.add_argument("--json", help="also write the results as JSON to this file")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_fused_cuda.py: no CUDA device")
    nvml = Nvml()
    x_np = np.random.default_rng(0).random((a.rows, 24))
    rows, skipped = [], {}
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "rows.npz")
        np.savez(data, data=x_np, names=np.array([f"f{i}" for i in range(24)]))
        x = torch.tensor(x_np, dtype=torch.float64, device="cuda")
        for pr in a.precisions.split(","):
            for v in a.variants.split(","):
                try:
                    r = (balerbench_variant(a.balerbench, data, v, pr, a.window_s, work, nvml) if v in ("fused", "libtorch")
                         else torch_variant(v, pr, x, a.window_s, nvml))
                    r.update(precision=pr, variant=v, s_1000=r["window_s"] / r["epochs"] * EPOCHS,
                             j_1000=r["window_j"] / r["epochs"] * EPOCHS)
                    rows.append(r)
                except Exception as e:  # recorded, not fatal
                    skipped[(pr, v)] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
                print(f"{pr} {v} done", file=sys.stderr)
    print(f"{torch.cuda.get_device_name(0)}, power limit {nvml.power_limit_w()} W as found, PyTorch {torch.__version__}; "
          f"{a.rows} rows, batch {BATCH}; {EPOCHS} epochs extrapolated from a window of at least {a.window_s:g} s")
    print("| precision | variant | s / 1000 epochs | J / 1000 epochs | measured | vs best PyTorch (s) | vs best PyTorch (J) |")
    print("|---|---|---:|---:|---|---:|---:|")
    for pr in a.precisions.split(","):
        torch_rows = [r for r in rows if r["precision"] == pr and r["variant"] in ("graph", "compiled")]
        best_s = min((r["s_1000"] for r in torch_rows), default=None)
        best_j = min((r["j_1000"] for r in torch_rows), default=None)
        for r in (r for r in rows if r["precision"] == pr):
            ratio_s = f"{r['s_1000'] / best_s:.2f}x" if best_s else "-"
            ratio_j = f"{r['j_1000'] / best_j:.2f}x" if best_j else "-"
            print(f"| {pr} | {r['variant']} | {r['s_1000']:.1f} | {r['j_1000']:.0f} | {r['epochs']} epochs, "
                  f"{r['window_s']:.1f} s | {ratio_s} | {ratio_j} |")
    for (pr, v), why in skipped.items():
        print(f"- {pr} {v}: skipped ({why})")
    for r in rows:
        print(f"- {r['precision']} {r['variant']}: {r['note']}")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "power_limit_w": nvml.power_limit_w(),
                       "torch": torch.__version__, "rows": a.rows, "batch": BATCH, "window_s": a.window_s,
                       "results": rows, "skipped": [{"precision": k[0], "variant": k[1], "why": w}
                                                    for k, w in skipped.items()]}, f, indent=2)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
