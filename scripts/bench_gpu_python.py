#!/usr/bin/env python3
"""bench_gpu_python.py: Baler's own Python training loop on a CUDA GPU, for the
GPU speed-up figure of scripts/gpu_check.sh.

Baler's HEAD on a GPU: a DataLoader over a CPU tensor (batch 512, no shuffle),
each batch moved to the device, nn.MSELoss(reduction="sum") / n_features,
loss.item() every batch; amp_fp16 adds torch.autocast(float16) and a
GradScaler (the T3 study's recipe). Prints one JSON object: seconds per epoch
(median after a warm-up epoch) per precision.

usage: python3 scripts/bench_gpu_python.py [--rows 520000] [--epochs 3] [--precisions fp32,amp_fp16]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.dirname(__file__))
from bench_vs_pytorch import AE, mse_sum_loss  # noqa: E402


def epochs_on_gpu(x, epochs, precision):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = AE(x.shape[1], 15, torch.float32).to(dev)
    dl = DataLoader(torch.tensor(x, dtype=torch.float32), batch_size=512, shuffle=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    amp = precision == "amp_fp16"
    scaler = torch.cuda.amp.GradScaler(enabled=amp)
    times = []
    for _ in range(epochs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        running = 0.0
        for inputs in dl:
            inputs = inputs.to(dev)
            opt.zero_grad()
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                loss = mse_sum_loss(inputs, model(inputs).float())
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            running += loss.item()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=520000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--precisions", default="fp32,amp_fp16")
    p.add_argument("--data", help=".npz with 'data' (default: uniform random rows)")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_gpu_python.py: no CUDA GPU visible to PyTorch")
    if a.data:
        raw = np.load(a.data)["data"]
        mn, mx = raw.min(axis=0), raw.max(axis=0)
        x = (raw - mn) / np.where(mx - mn == 0, 1.0, mx - mn)
    else:
        x = np.random.default_rng(0).random((a.rows, 24))
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": int(x.shape[0]),
           "epochs": a.epochs, "epoch_s": {}}
    for prec in a.precisions.split(","):
        t = epochs_on_gpu(x, a.epochs, prec)
        out["epoch_s"][prec] = statistics.median(t[1:]) if len(t) > 1 else t[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
