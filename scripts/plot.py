#!/usr/bin/env python3
"""plot.py: print figures (PDF, PNG and SVG) from a balerbench results database (or a report's CSV),
for a paper or a talk, with matplotlib. To look at results, `balerbench report --format html --out
report.html` makes one page with every table and the interactive figures (docs/report_page.md);
this script makes the static files a paper's LaTeX or a slide includes.

Writes PDF, PNG and SVG files into --out:
  loss_per_epoch.*      relative error (or validation loss) per epoch, one line per precision and batch size
  power_over_time.*     the sampler's power series of one trial, coloured by phase
  vs_batch_size.*       training time and energy against batch size (mean, 95% interval bars)
  vs_power_limit.*      training time and energy against the GPU power limit
  pareto.*              every configuration's time and energy, the Pareto frontier joined
  precision_bars.*      time and energy per precision mode, as bars
  codecs.*              compression ratio against max abs error, one point per codec (Baler, ZFP,
                        Zstandard, downcasts), labelled with energy per MB: from a sweep with
                        "codecs", or from `balerbench codecs`' report (--codecs-report)

  scripts/plot.py --db results/balerbench.sqlite --experiment quickstart --out results/plots
  balerbench report --table precision --format csv > p.csv; scripts/plot.py --csv p.csv --out plots
  scripts/plot.py --codecs-report output/codecs/codecs_report.json --out plots

A chart whose data the experiment does not have (one batch size, no power
limits) is skipped with a note. Every chart draws what the results page draws:
means over the repeats with their 95% confidence interval (Student t, cut at 0;
none with one repeat), and names the system the trials ran on and whether the
energy was measured, estimated or simulated. Uses Debian's python3-matplotlib
and python3-scipy (scripts/setup.sh installs them); no network.
"""
import argparse
import collections
import csv
import os
import json
import sqlite3
import statistics
import sys

try:
    import matplotlib
except ImportError:
    print("plot.py: error: matplotlib is missing (hint: apt-get install python3-matplotlib, or pip install "
          "matplotlib; for a page with the figures, balerbench report --format html needs neither)", file=sys.stderr)
    sys.exit(2)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from scipy.stats import t as student_t  # noqa: E402

PRECISION_ORDER = ["fp32", "amp_fp16_noscale", "amp_fp16", "fp64", "tf32", "amp_bf16", "auto"]


def save(fig, out_dir, name, written):
    for ext in ("pdf", "png", "svg"):
        path = os.path.join(out_dir, f"{name}.{ext}")
        tmp = path + ".partial." + ext
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
        os.replace(tmp, path)
        written.append(path)
    plt.close(fig)


def mean_ci95(values):
    """(mean, lower half-width, upper half-width) of the 95% confidence interval of the mean, as the
    tables and the results page give it (Student t, cut at 0); no bar with fewer than two values."""
    v = [x for x in values if x is not None]
    if not v:
        return float("nan"), 0.0, 0.0
    m = statistics.fmean(v)
    if len(v) < 2:
        return m, 0.0, 0.0
    half = student_t.ppf(0.975, len(v) - 1) * statistics.stdev(v) / len(v) ** 0.5
    return m, min(half, m) if m > 0 else half, half


def system_line(trials):
    """'on AMD EPYC (2 CPUs), OpenBLAS 0.3.21 Haswell (system f3ebac03897b)', from the trials' provenance."""
    labels = set()
    for t in trials:
        p = json.loads(t.get("provenance_json") or "{}")
        fp = p.get("system_fingerprint") or t.get("system_fingerprint")
        label = p.get("system_label") or p.get("cpu_model") or "an unrecorded system"
        labels.add(f"{label} (system {fp})" if fp else label)
    return "on " + ("; ".join(sorted(labels)) if labels else "an unrecorded system")


def kind_label(kinds):
    kinds = {k for k in kinds if k}
    if not kinds:
        return ""
    marks = [k for k in sorted(kinds) if k != "measured"]
    return f" (energy: {', '.join(sorted(kinds))})" if marks else " (energy: measured)"


def load_trials(db, experiment, system=None, notes=None):
    """The experiment's finished trials of one system, warm-ups left out (as balerbench report does)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    exps = [r[0] for r in con.execute("SELECT experiment FROM trials GROUP BY experiment ORDER BY min(id)")]
    if not exps:
        sys.exit(f"plot.py: error: {db}: no trials stored (hint: balerbench run EXPERIMENT.json first)")
    if experiment is None:
        experiment = exps[-1]
    elif experiment not in exps:
        sys.exit(f"plot.py: error: {db}: no experiment '{experiment}' (stored: {', '.join(exps)})")
    trials = [dict(r) for r in con.execute(
        "SELECT * FROM trials WHERE experiment=? AND status='ok' ORDER BY id", (experiment,))]
    trials = [t for t in trials if not (json.loads(t.get("result_json") or "{}").get("run_design") or {}).get("warmup")]
    # One system per chart (schema 5 records it; older trials are one unknown system).
    by_system = collections.defaultdict(list)
    for t in trials:
        by_system[t.get("system_fingerprint") or "unrecorded"].append(t)
    if system is not None:
        if system not in by_system:
            sys.exit(f"plot.py: error: {db}: no trials of system '{system}' in '{experiment}' "
                     f"(stored: {', '.join(sorted(by_system))}; hint: balerbench report --table systems)")
        trials = by_system[system]
    elif len(by_system) > 1:
        system = max(by_system, key=lambda k: len(by_system[k]))
        trials = by_system[system]
        if notes is not None:
            notes.append(f"{len(by_system)} systems in '{experiment}': plotted {system}; the others "
                         f"({', '.join(sorted(k for k in by_system if k != system))}) with --system FINGERPRINT")
    epochs = collections.defaultdict(list)
    for r in con.execute("SELECT e.* FROM epochs e JOIN trials t ON t.id=e.trial_id WHERE t.experiment=? "
                         "ORDER BY e.trial_id, e.epoch", (experiment,)):
        epochs[r["trial_id"]].append(dict(r))
    return con, experiment, trials, epochs


def group(trials, key):
    g = collections.OrderedDict()
    for t in trials:
        g.setdefault(key(t), []).append(t)
    return g


def precision_rank(p):
    return PRECISION_ORDER.index(p) if p in PRECISION_ORDER else len(PRECISION_ORDER)


def plot_loss(trials, epochs, experiment, out, written, notes):
    # baler_sum grows with the batch size, so curves of different batch sizes are kept apart;
    # the relative error (stored when it is the target) is comparable across them.
    several_bs = len({t["batch_size"] for t in trials}) > 1
    use_rel = all(e["relative_error"] is not None for t in trials for e in epochs[t["id"]])
    key = lambda t: (precision_rank(t["precision"]), t["batch_size"])  # noqa: E731
    by_p = group(sorted(trials, key=key),
                 lambda t: t["precision"] + (f", batch {t['batch_size']}" if several_bs else ""))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, ts in by_p.items():
        series = [[e["relative_error" if use_rel else "val_loss"] for e in epochs[t["id"]]] for t in ts]
        n = min(len(s) for s in series)
        if n == 0:
            continue
        mean = [statistics.fmean(s[i] for s in series) for i in range(n)]
        ax.plot(range(1, n + 1), mean, marker="o", ms=3, label=f"{label} ({len(ts)} runs)")
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel(("relative reconstruction error" if use_rel else "validation loss") + " (mean over runs)")
    ax.set_title(f"{experiment}: {'relative error' if use_rel else 'loss'} per epoch per precision"
                 f"\n{system_line(trials)}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save(fig, out, "loss_per_epoch", written)


def plot_power(con, trials, experiment, out, written, notes):
    if not trials:
        return
    t = trials[0]
    rows = list(con.execute("SELECT t_s, phase, power_w FROM power_samples WHERE trial_id=? ORDER BY t_s", (t["id"],)))
    if not rows:
        notes.append("power_over_time: no sampler series stored (energy.sample_hz 0?)")
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    colours = {"idle": "tab:gray", "train": "tab:blue", "compress": "tab:orange", "decompress": "tab:green"}
    for phase in ["idle", "train", "compress", "decompress"]:
        pts = [(r[0], r[2]) for r in rows if r[1] == phase]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=6, label=phase, color=colours[phase])
    ax.plot([r[0] for r in rows], [r[2] for r in rows], color="black", lw=0.5, alpha=0.4)
    ax.set_xlabel("time since the trial's meters opened (s)")
    ax.set_ylabel("power (W)")
    ax.set_title(f"{experiment}: power over time, trial {t['id']} ({t['precision']}, batch {t['batch_size']})"
                 f"{kind_label([t['energy_kind']])}\n{system_line([t])}", fontsize=9)
    ax.legend(markerscale=3)
    ax.grid(alpha=0.3)
    save(fig, out, "power_over_time", written)


def plot_axis(trials, experiment, out, written, notes, column, name, xlabel):
    usable = [t for t in trials if t[column] is not None]
    g = group(sorted(usable, key=lambda t: t[column]), lambda t: t[column])
    if len(g) < 2:
        notes.append(f"{name}: fewer than two values of {column}; skipped")
        return
    xs = list(g.keys())
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, col, ylabel in ((axes[0], "train_s", "training time (s)"), (axes[1], "train_energy_j", "training energy (J)")):
        means, lo, hi = [], [], []
        for x in xs:
            m, low, high = mean_ci95(t[col] for t in g[x])
            means.append(m)
            lo.append(low)
            hi.append(high)
        ax.errorbar(xs, means, yerr=[lo, hi], marker="o", capsize=3)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if column == "batch_size":
            ax.set_xscale("log", base=2)
    fig.suptitle(f"{experiment}: time and energy against {xlabel} (mean, 95% interval)"
                 f"{kind_label(t['energy_kind'] for t in usable)}\n{system_line(usable)}", fontsize=10)
    save(fig, out, name, written)


def plot_pareto(trials, experiment, out, written, notes):
    g = group(trials, lambda t: (t["batch_size"], t["precision"], t["power_limit_w"], t["epochs"]))
    pts = []
    for k, ts in g.items():
        tm = [t["train_s"] for t in ts if t["train_s"] is not None]
        en = [t["train_energy_j"] for t in ts if t["train_energy_j"] is not None]
        if tm and en:
            pl = "as found" if k[2] is None else f"{k[2]:g} W"
            pts.append((statistics.fmean(tm), statistics.fmean(en), f"bs {k[0]}, {k[1]}, {pl}, {k[3]} ep",
                        mean_ci95(tm), mean_ci95(en)))
    if len(pts) < 2:
        notes.append("pareto: fewer than two configurations with energy; skipped")
        return
    front, best = [], float("inf")
    for p in sorted(pts):
        if p[1] < best:
            front.append(p)
            best = p[1]
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.errorbar([p[0] for p in pts], [p[1] for p in pts], xerr=[[p[3][1] for p in pts], [p[3][2] for p in pts]],
                yerr=[[p[4][1] for p in pts], [p[4][2] for p in pts]], fmt="none", ecolor="tab:gray", alpha=0.6,
                capsize=2)
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], color="tab:gray", label="configurations (95% intervals)")
    ax.plot([p[0] for p in front], [p[1] for p in front], color="tab:red", marker="o", label="Pareto frontier")
    for p in pts:
        ax.annotate(p[2], (p[0], p[1]), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("training time (s, mean)")
    ax.set_ylabel("training energy (J, mean)")
    ax.set_title(f"{experiment}: time-energy Pareto frontier{kind_label(t['energy_kind'] for t in trials)}"
                 f"\n{system_line(trials)}", fontsize=9)
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, out, "pareto", written)


def bars(labels, times, energies, ci_t, ci_e, title, out, written):
    """Means with their 95% intervals: ci_t, ci_e as [lower half-widths, upper half-widths]."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].bar(labels, times, yerr=ci_t, capsize=3, color="tab:blue")
    axes[0].set_ylabel("training time (s)")
    axes[1].bar(labels, energies, yerr=ci_e, capsize=3, color="tab:orange")
    axes[1].set_ylabel("training energy (J)")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    save(fig, out, "precision_bars", written)


def plot_precision(trials, experiment, out, written, notes):
    g = group(sorted(trials, key=lambda t: precision_rank(t["precision"])), lambda t: t["precision"])
    labels, tm, en, ct, ce = [], [], [], [[], []], [[], []]
    for p, ts in g.items():
        labels.append(p)
        for column, means, ci in (("train_s", tm, ct), ("train_energy_j", en, ce)):
            m, lo, hi = mean_ci95(x[column] for x in ts)
            means.append(m if m == m else 0)
            ci[0].append(lo)
            ci[1].append(hi)
    bars(labels, tm, en, ct, ce, f"{experiment}: precision comparison (mean, 95% interval)"
         f"{kind_label(t['energy_kind'] for t in trials)}\n{system_line(trials)}", out, written)


CODEC_COLOURS = {"baler": "C0", "zfp_accuracy": "C1", "zfp_columns": "C2", "zfp_rate": "C3", "zstd": "C4",
                 "float16": "C5", "bfloat16": "C6"}  # the same colour for a codec in every chart


def codec_points(comparisons, notes=None):
    """Per codec, in the first comparison's order: the medians of ratio, max abs error and cost per MB
    over the comparisons (repeats), with the cost's unit."""
    first = comparisons[0]
    energy = first.get("basis") == "energy"
    key, unit = ("j_per_mb", "J/MB") if energy else ("s_per_mb", "s/MB")
    points = []
    for row in first["codecs"]:
        name = row["codec"]
        rows = [r for c in comparisons for r in c["codecs"] if r["codec"] == name]
        med = lambda get: statistics.median(v for v in map(get, rows) if v is not None)  # noqa: E731
        try:
            ratio = med(lambda r: r.get("ratio"))
            err = med(lambda r: r["error"].get("max_abs"))
            cost = med(lambda r: r.get(key))
        except statistics.StatisticsError:  # infinite errors (an overflowing downcast) are null
            if notes is not None:
                notes.append(f"codecs: {name} left out of the chart: its error is infinite (values overflow its range)")
            continue
        points.append((name, ratio, err, cost, row.get("lossless", False)))
        if name == "baler" and row.get("ratio_with_decoder"):  # what a reader must also be sent
            points.append(("baler with its decoder", med(lambda r: r.get("ratio_with_decoder")), err, cost, False))
    return points, unit


def plot_codecs(comparisons, title, out, written, notes):
    if not comparisons:
        notes.append("codecs: no trial measured the codecs (add \"codecs\": {} to the experiment); chart skipped")
        return
    points, unit = codec_points(comparisons, notes)
    lossy = [p[2] for p in points if p[2] > 0]
    floor = min(lossy) / 10 if lossy else 1e-12  # lossless codecs sit at the left edge
    fig, ax = plt.subplots(figsize=(7, 4.5))
    import math
    xs = [(p[2] if p[2] > 0 else floor) for p in points]

    def crowded_from_above(i):  # another point just above this one: this label goes below
        def above(j):  # higher, or as high and further left
            r = points[j][1] / points[i][1]
            return 1 < r < 1.6 or (r == 1 and xs[j] < xs[i])
        return any(j != i and above(j) and abs(math.log10(xs[j] / xs[i])) < 1.2 for j in range(len(points)))

    for i, (name, ratio, err, cost, lossless) in enumerate(points):
        x = xs[i]
        marker = "*" if name.startswith("baler") else ("s" if lossless else "o")
        hollow = name == "baler with its decoder"
        colour = "C0" if name.startswith("baler") else CODEC_COLOURS.get(name, "C7")
        ax.scatter([x], [ratio], s=60, marker=marker, zorder=3, facecolors="none" if hollow else colour,
                   edgecolors=colour)
        # Each label in its point's colour, above its point unless another point sits just above.
        ax.annotate(f"{name}\n{cost:.3g} {unit}" + (" (lossless)" if err == 0 else ""), (x, ratio),
                    textcoords="offset points", xytext=(7, -19 if crowded_from_above(i) else 3), fontsize=8,
                    color=colour)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("max abs error (log)")
    ax.set_ylabel("compression ratio (log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title, fontsize=9)
    save(fig, out, "codecs", written)


def codecs_from_db(trials):
    """The codec comparisons of the first configuration that has them (one chart: one configuration)."""
    by_config = collections.OrderedDict()
    for t in trials:
        res = json.loads(t.get("result_json") or "{}")
        if "codecs" in res:
            by_config.setdefault((t["batch_size"], t["precision"], t.get("engine"), t["epochs"]), []).append(res["codecs"])
    if not by_config:
        return [], None
    config, comparisons = next(iter(by_config.items()))
    return comparisons, config


def plot_from_csv(path, out, written):
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    if not rows or "time_s" not in rows[0] or "energy_j" not in rows[0]:
        sys.exit(f"plot.py: error: {path}: not a precision table (hint: balerbench report --table precision "
                 "--format csv)")
    num = lambda v: float(v) if v not in ("", None, "-") else 0.0  # noqa: E731

    def half_width(r, ci_column, sd_column):
        if r.get(ci_column) not in ("", None, "-"):
            return num(r[ci_column])
        n = int(num(r.get("n")))
        return student_t.ppf(0.975, n - 1) * num(r.get(sd_column)) / n ** 0.5 if n > 1 else 0.0

    ht = [half_width(r, "time_ci95_s", "time_sd_s") for r in rows]
    he = [half_width(r, "energy_ci95_j", "energy_sd_j") for r in rows]
    tm, en = [num(r["time_s"]) for r in rows], [num(r["energy_j"]) for r in rows]
    bars([r.get("precision", r.get("mode")) for r in rows], tm, en,
         [[min(h, m) for h, m in zip(ht, tm)], ht], [[min(h, m) for h, m in zip(he, en)], he],
         f"precision comparison from {os.path.basename(path)} (mean, 95% interval; energy: "
         f"{', '.join(sorted({r.get('energy', '') for r in rows}))})", out, written)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--db", help="results database")
    src.add_argument("--csv", help="a precision table from balerbench report --format csv")
    src.add_argument("--codecs-report", help="a codecs_report.json from balerbench codecs")
    ap.add_argument("--experiment", help="experiment name (default: the last one stored)")
    ap.add_argument("--system", help="system fingerprint (balerbench report --table systems); default: the one "
                                     "with the most trials, as charts never mix systems")
    ap.add_argument("--out", default="results/plots", help="output folder (default results/plots)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    written, notes = [], []
    if a.codecs_report:
        try:
            with open(a.codecs_report) as f:
                report = json.load(f)
            comparison = report["comparison"]
            comparison["codecs"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"plot.py: error: {a.codecs_report}: not a codecs report ({e}; hint: balerbench codecs "
                     "--config C --out DIR writes DIR/codecs/codecs_report.json)")
        data = (report.get("dataset") or {}).get("path", "the data")
        plot_codecs([comparison], f"codecs at matched error: {os.path.basename(str(data))}", a.out, written, notes)
    elif a.csv:
        if not os.path.exists(a.csv):
            sys.exit(f"plot.py: error: {a.csv}: no such file")
        plot_from_csv(a.csv, a.out, written)
    else:
        if not os.path.exists(a.db):
            sys.exit(f"plot.py: error: {a.db}: no such database (hint: balerbench run EXPERIMENT.json first)")
        con, experiment, trials, epochs = load_trials(a.db, a.experiment, a.system, notes)
        if not trials:
            sys.exit(f"plot.py: error: {a.db}: experiment '{experiment}' has no finished trial")
        plot_loss(trials, epochs, experiment, a.out, written, notes)
        plot_power(con, trials, experiment, a.out, written, notes)
        plot_axis(trials, experiment, a.out, written, notes, "batch_size", "vs_batch_size", "batch size")
        plot_axis(trials, experiment, a.out, written, notes, "power_limit_w", "vs_power_limit", "power limit (W)")
        plot_pareto(trials, experiment, a.out, written, notes)
        plot_precision(trials, experiment, a.out, written, notes)
        comparisons, config = codecs_from_db(trials)
        if comparisons:
            plot_codecs(comparisons, f"{experiment}: codecs at matched error (bs {config[0]}, {config[1]}, "
                        f"{config[3]} epochs; medians of {len(comparisons)})", a.out, written, notes)
    for n in notes:
        print(f"note: {n}")
    for w in written:
        print(f"wrote {w}")


if __name__ == "__main__":
    main()
