#!/usr/bin/python3
"""bench_vs_pytorch.py: balerbench against Baler's own Python loop, same data, same LibTorch.

Runs Baler's training epoch the way Baler's HEAD does it (a DataLoader over the
tensor, batch 512, no shuffle, nn.MSELoss(reduction="sum") / n_features,
loss.item() every batch) in Debian's python3-torch, and Baler's compress and
decompress (DataLoader batches, encode/decode under no_grad, np.concatenate
onto the output after every batch). It then runs the same work with
`balerbench train/compress/decompress` on the same file and prints the ratios.
Training is compared in three precisions: fp64 (Baler's AE), fp32 (target:
balerbench at least 2.5x faster) and amp_bf16 (torch.autocast on the CPU in
Python, the amp_bf16 policy in balerbench; --no-bf16 skips it).
tqdm (Baler wraps its loops in it) is left out, which flatters Python.

Threads: by default each side runs with its own default (balerbench: every
CPU in the affinity mask; PyTorch: torch.get_num_threads()); --threads N gives
both sides N. Shared cloud machines drift by tens of percent between minutes,
so the two sides are measured in alternating rounds (--repeats) and each
speed-up is the median of the per-round ratios, with its range.

Whole process: with --process-epochs N (default 10) each round also times `balerbench train` and
Baler's training as a fresh Python process (start-up, loading and normalizing the .npz, N epochs,
the saved model), fp32 and fp64.

usage: /usr/bin/python3 scripts/bench_vs_pytorch.py [--rows 100000] [--epochs 5] [--repeats 3]
           [--codec-rows 100000,520000] [--threads N] [--no-bf16] [--engine auto|libtorch|fused]
           [--compare-engines] [--process-epochs 10] [--build build] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# The BLAS kernel before numpy and torch load OpenBLAS: Python runs on the kernel balerbench runs on.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import same_blas_kernel  # noqa: E402

_BUILD = next((sys.argv[i + 1] for i, arg in enumerate(sys.argv[:-1]) if arg == "--build"),
              os.path.join(os.path.dirname(__file__), "..", "build"))
KERNEL_NOTE = (same_blas_kernel.align(os.path.join(_BUILD, "harness", "balerbench"))
               if "--python-process" not in sys.argv else "")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402


class AE(nn.Module):
    """baler/modules/models.py AE (HEAD): float64, LeakyReLU(0.01)."""

    def __init__(self, n_features, z_dim, dtype=torch.float64):
        super().__init__()
        self.en1 = nn.Linear(n_features, 200, dtype=dtype)
        self.en2 = nn.Linear(200, 100, dtype=dtype)
        self.en3 = nn.Linear(100, 50, dtype=dtype)
        self.en4 = nn.Linear(50, z_dim, dtype=dtype)
        self.de1 = nn.Linear(z_dim, 50, dtype=dtype)
        self.de2 = nn.Linear(50, 100, dtype=dtype)
        self.de3 = nn.Linear(100, 200, dtype=dtype)
        self.de4 = nn.Linear(200, n_features, dtype=dtype)

    def encode(self, x):
        return self.en4(F.leaky_relu(self.en3(F.leaky_relu(self.en2(F.leaky_relu(self.en1(x)))))))

    def decode(self, z):
        return self.de4(F.leaky_relu(self.de3(F.leaky_relu(self.de2(F.leaky_relu(self.de1(z)))))))

    def forward(self, x):
        return self.decode(self.encode(x))


def mse_sum_loss(true_data, reconstructed_data):
    """Baler's mse_sum_loss_l1 with validate=True (the L1 term is never added)."""
    return nn.MSELoss(reduction="sum")(reconstructed_data, true_data) / true_data.shape[1]


def python_epochs(x, epochs, dtype, autocast_bf16=False):
    """Baler's training loop; autocast_bf16 wraps the forward pass and loss in
    torch.autocast("cpu", bfloat16), the AMP recipe for CPUs (float32 master weights)."""
    torch.manual_seed(0)
    model = AE(x.shape[1], 15, dtype)
    train_dl = DataLoader(torch.tensor(x, dtype=dtype), batch_size=512, shuffle=False, drop_last=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.train()
        running = 0.0
        for inputs in train_dl:
            opt.zero_grad()
            if autocast_bf16:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = mse_sum_loss(inputs, model(inputs).float())
            else:
                loss = mse_sum_loss(inputs, model(inputs))
            loss.backward()
            opt.step()
            running += loss.item()
        _ = running / len(train_dl)
        times.append(time.perf_counter() - t0)
    return times, model


def baler_batched(fn, array):
    """Baler's helper.compress/decompress loop: DataLoader batches, fn under no_grad,
    np.concatenate onto the output after every batch. Returns (output, seconds)."""
    t0 = time.perf_counter()
    dl = DataLoader(torch.tensor(array, dtype=torch.float64), batch_size=512, shuffle=False)
    with torch.no_grad():
        for idx, batch in enumerate(dl):
            part = fn(batch).to("cpu")
            out = part if idx == 0 else np.concatenate((out, part))
    return out, time.perf_counter() - t0


def python_codec(model, x):
    model.eval()
    compressed, t_compress = baler_batched(model.encode, x)
    decompressed, t_decompress = baler_batched(model.decode, compressed)
    assert decompressed.shape == x.shape
    return t_compress, t_decompress


def python_process(data, epochs, dtype_name, out):
    """Baler's whole training run as a process: load the .npz, min-max normalize, train `epochs`
    epochs, save the model (torch.save of the state dict). Run in a fresh interpreter, so the time
    includes Python's and PyTorch's start-up, as a user's `baler --mode train` would."""
    dtype = torch.float64 if dtype_name == "fp64" else torch.float32
    raw = np.load(data)["data"]
    mn, mx = raw.min(axis=0), raw.max(axis=0)
    x = (raw - mn) / np.where(mx - mn == 0, 1.0, mx - mn)
    _, model = python_epochs(x, epochs, dtype)
    torch.save(model.state_dict(), out)


def timed(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return time.perf_counter() - t0


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return json.loads(r.stdout)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--python-process":  # the child of the whole-process rows
        python_process(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100000)
    p.add_argument("--epochs", type=int, default=5, help="epochs per side; the first is a warm-up and not counted")
    p.add_argument("--repeats", type=int, default=3, help="alternating rounds of both sides")
    p.add_argument("--codec-rows", default="100000,520000",
                   help="row counts for the compress/decompress comparison (520000 = Baler's CMS file)")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads for both sides (0: each side's default)")
    p.add_argument("--no-bf16", dest="bf16", action="store_false",
                   help="skip the amp_bf16 rows (bfloat16 autocast is slow on CPUs without AVX512-BF16/AMX)")
    p.add_argument("--engine", default="auto", choices=["auto", "libtorch", "fused"],
                   help="balerbench's training engine (auto: fused where it can)")
    p.add_argument("--process-epochs", type=int, default=10,
                   help="whole-process rows: start-up, data, this many epochs and the saved model, each side "
                        "a fresh process (0 skips them)")
    p.add_argument("--compare-engines", action="store_true",
                   help="also time balerbench's libtorch engine in the same rounds (fp64 and fp32 rows)")
    p.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    p.add_argument("--json", help="also write the results to this file")
    a = p.parse_args()
    if a.epochs < 2:
        sys.exit("--epochs must be at least 2 (the first is a warm-up)")
    bb = os.path.join(a.build, "harness", "balerbench")
    if not os.path.exists(bb):
        sys.exit(f"{bb} not found (hint: run scripts/setup.sh first)")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    py_threads = torch.get_num_threads()

    def balerbench_config(tmp, rows, epochs, precision="fp64", engine=None):
        engine = engine or a.engine
        data = os.path.join(tmp, f"cms_{rows}.npz")
        if not os.path.exists(data):
            subprocess.run([bb, "data", "generate", "--kind", "cms", "--rows", str(rows), "--out", data],
                           check=True, capture_output=True)
        cfg = os.path.join(tmp, f"c_{rows}_{precision}_{engine}.json")
        with open(cfg, "w") as f:
            json.dump({"input_path": data, "model_name": "AE", "compression_ratio": 1.6, "epochs": epochs,
                       "batch_size": 512, "progress": "none", "threads": a.threads, "precision": precision, "engine": engine,
                       "energy": {"enabled": False}}, f)
        return data, cfg

    def balerbench_train(tmp, rows, epochs, precision, engine=None):
        _, cfg = balerbench_config(tmp, rows, epochs, precision, engine)
        return run_json([bb, "train", "--json", "--config", cfg, "--out", os.path.join(tmp, f"out_{precision}")])

    def balerbench_cycle(tmp, rows, epochs):
        data, cfg = balerbench_config(tmp, rows, epochs)
        out = os.path.join(tmp, f"out_{rows}")
        train = run_json([bb, "train", "--json", "--config", cfg, "--out", out])
        comp = run_json([bb, "compress", "--json", "--config", cfg, "--out", out])
        decomp = run_json([bb, "decompress", "--json", "--config", cfg, "--out", out])
        raw = np.load(data)["data"]
        mn, mx = raw.min(axis=0), raw.max(axis=0)
        x = (raw - mn) / np.where(mx - mn == 0, 1.0, mx - mn)
        return train, comp, decomp, x

    rounds = {}  # measure -> list of (balerbench_s, python_s)

    def record(name, ours, theirs):
        rounds.setdefault(name, []).append((ours, theirs))

    train_name = f"training epoch, fp64, {a.rows} rows (s)"
    train32_name = f"training epoch, fp32, {a.rows} rows (s)"
    trainbf16_name = f"training epoch, amp_bf16, {a.rows} rows (s)"

    def epoch_s(report):
        return statistics.median(e["duration_s"] for e in report["epochs"][1:])

    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.repeats):
            train, comp, decomp, x = balerbench_cycle(tmp, a.rows, a.epochs)
            bb_threads = train["versions"]["threads"]
            bb_engine = train.get("engine", {}).get("name", "libtorch")
            py64, model = python_epochs(x, a.epochs, torch.float64)
            record(train_name, epoch_s(train), statistics.median(py64[1:]))
            t32 = balerbench_train(tmp, a.rows, a.epochs, "fp32")
            py32, _ = python_epochs(x, a.epochs, torch.float32)
            record(train32_name, epoch_s(t32), statistics.median(py32[1:]))
            if a.process_epochs > 0:
                for prec in ("fp32", "fp64"):
                    data, cfg = balerbench_config(tmp, a.rows, a.process_epochs, prec)
                    ours = timed([bb, "train", "--config", cfg, "--out", os.path.join(tmp, f"proc_{prec}")])
                    theirs = timed([sys.executable, os.path.abspath(__file__), "--python-process", data,
                                    str(a.process_epochs), prec, os.path.join(tmp, f"py_{prec}.pt")])
                    record(f"whole process, {prec}, {a.process_epochs} epochs (s)", ours, theirs)
            if a.compare_engines:
                for prec, py in (("fp64", py64), ("fp32", py32)):
                    lt = balerbench_train(tmp, a.rows, a.epochs, prec, "libtorch")
                    record(f"training epoch, {prec}, libtorch engine (s)", epoch_s(lt), statistics.median(py[1:]))
            if a.bf16:
                tbf = balerbench_train(tmp, a.rows, a.epochs, "amp_bf16")
                pybf, _ = python_epochs(x, a.epochs, torch.float32, autocast_bf16=True)
                record(trainbf16_name, epoch_s(tbf), statistics.median(pybf[1:]))
        for rows in [int(r) for r in a.codec_rows.split(",") if r]:
            # Baler's quadratic concatenation makes big sizes slow in Python: one round there.
            for _ in range(a.repeats if rows <= 200000 else 1):
                _, comp, decomp, x = balerbench_cycle(tmp, rows, 1)
                py_c, py_d = python_codec(model, x)
                record(f"compress, {rows} rows (s)", comp["encode_duration_s"], py_c)
                record(f"decompress, {rows} rows (s)", decomp["decode_duration_s"], py_d)
                record(f"compress + decompress, {rows} rows (s)",
                       comp["encode_duration_s"] + decomp["decode_duration_s"], py_c + py_d)

    targets = {train_name: 2.5, train32_name: 2.5, f"whole process, fp32, {a.process_epochs} epochs (s)": 2.5,
               f"whole process, fp64, {a.process_epochs} epochs (s)": 2.5}
    print(f"balerbench vs Baler's Python loop: CMS-like rows, AE 24->15, batch 512, LibTorch {torch.__version__};"
          f" balerbench engine {bb_engine} (--engine {a.engine});"
          f" threads: balerbench {bb_threads}, Python {py_threads}; epoch times are medians of {a.epochs - 1} epochs"
          f" after a warm-up; {a.repeats} alternating round(s)")
    print()
    print(f"{KERNEL_NOTE}; Python runs OpenBLAS kernel {same_blas_kernel.describe()}")
    print(f"| {'measure':42} | {'balerbench':>10} | {'Python':>8} | {'speed-up (range)':>18} | target |")
    print(f"|{'-' * 44}|{'-' * 12}|{'-' * 10}|{'-' * 20}|--------|")
    out = []
    for name, pairs in rounds.items():
        ratios = [t / o for o, t in pairs]
        speedup = statistics.median(ratios)
        ours = statistics.median(o for o, _ in pairs)
        theirs = statistics.median(t for _, t in pairs)
        target = targets.get(name, 10.0 if name.startswith("compress + decompress") else None)
        verdict = "" if target is None else (f">= {target:g}x {'MET' if speedup >= target else 'MISSED'}")
        spread = f"{speedup:5.1f}x ({min(ratios):.1f}-{max(ratios):.1f})"
        print(f"| {name:42} | {ours:10.4f} | {theirs:8.3f} | {spread:>18} | {verdict} |")
        out.append({"measure": name, "balerbench_s": ours, "python_s": theirs, "speedup_median": speedup,
                    "speedup_min": min(ratios), "speedup_max": max(ratios), "rounds": len(pairs), "target": target})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": a.rows, "epochs": a.epochs, "repeats": a.repeats, "engine": bb_engine,
                       "threads_balerbench": bb_threads,
                       "threads_python": py_threads, "torch": torch.__version__, "cpu": cpu_model(),
                       "blas_kernel_python": same_blas_kernel.describe(), "blas_kernel_note": KERNEL_NOTE,
                       "results": out}, f, indent=2)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
