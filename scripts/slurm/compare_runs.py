#!/usr/bin/env python3
"""compare_runs.py: checks on results databases for scripts/slurm/local_cluster.sh test.

  compare_runs.py --count DB                       print how many trials DB holds
  compare_runs.py --expect-trials N --once DB      every trial of an N-trial grid stored exactly once, all ok
  compare_runs.py --bb BIN --experiment NAME --expect-trials N MERGED ONE
      MERGED (shards of a Slurm array, merged) equals ONE (a one-process run of the same experiment)
      apart from timings: the same trial keys, grid positions and statuses; per epoch the same losses,
      relative errors and learning rates; and the same configuration rows in `report --table precision`.

Exit code 0 when the check holds; 1 with one line per difference.
"""
import argparse
import csv
import io
import sqlite3
import subprocess
import sys

# Columns of `report --table precision` that are measurements of time or energy (they differ run to run).
TIMING_PREFIXES = ("time", "energy", "tta", "eta", "co2", "cost", "power")
TIMING_SUFFIXES = ("_s", "_j", "_w", "_kwh", "_g", "_verdict")


def is_timing(name):
    name = name.lower()
    return name.startswith(TIMING_PREFIXES) or name.endswith(TIMING_SUFFIXES) or name == "energy"


def trials(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT trial_key, grid_index, repeat, batch_size, precision, epochs, status, engine "
                       "FROM trials").fetchall()
    epochs = {}
    for key, epoch, train_loss, val_loss, rel, lr in con.execute(
            "SELECT t.trial_key, e.epoch, e.train_loss, e.val_loss, e.relative_error, e.lr "
            "FROM epochs e JOIN trials t ON t.id = e.trial_id ORDER BY e.epoch"):
        epochs.setdefault(key, []).append((epoch, train_loss, val_loss, rel, lr))
    con.close()
    return rows, epochs


def check_once(db, expected, problems):
    rows, _ = trials(db)
    grid = [r[1] for r in rows]
    if len(rows) != expected:
        problems.append(f"{db}: {len(rows)} trials stored, expected {expected}")
    if len(set(grid)) != len(grid):
        problems.append(f"{db}: a grid position stored twice: {sorted(grid)}")
    bad = [r for r in rows if r[6] != "ok"]
    if bad:
        problems.append(f"{db}: trials not ok: {bad}")


def configuration_rows(bb, db, experiment):
    out = subprocess.run([bb, "report", "--db", db, "--experiment", experiment, "--table", "precision",
                          "--format", "csv"], check=True, capture_output=True, text=True).stdout
    table = list(csv.reader(io.StringIO(out)))
    keep = [i for i, name in enumerate(table[0]) if not is_timing(name)]
    return [[row[i] for i in keep] for row in table]


def compare(args, problems):
    merged, one = args.dbs
    check_once(merged, args.expect_trials, problems)
    check_once(one, args.expect_trials, problems)
    m_rows, m_epochs = trials(merged)
    o_rows, o_epochs = trials(one)
    if sorted(m_rows) != sorted(o_rows):
        problems.append(f"trials differ:\n  merged {sorted(m_rows)}\n  one    {sorted(o_rows)}")
    for key, series in o_epochs.items():
        if m_epochs.get(key) != series:
            problems.append(f"trial {key}: epochs differ:\n  merged {m_epochs.get(key)}\n  one    {series}")
    if args.bb:
        a, b = configuration_rows(args.bb, merged, args.experiment), configuration_rows(args.bb, one, args.experiment)
        if a != b:
            problems.append(f"report --table precision differs apart from timings:\n  merged {a}\n  one    {b}")
        else:
            print(f"compare_runs: report --table precision: {len(a) - 1} configuration rows equal "
                  f"(columns {', '.join(a[0])})")
    if not problems:
        n_epochs = sum(len(s) for s in o_epochs.values())
        print(f"compare_runs: {len(o_rows)} trials, each once, with the same keys, statuses and {n_epochs} epochs "
              "of losses, relative errors and learning rates in both databases")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--count", action="store_true")
    p.add_argument("--once", action="store_true")
    p.add_argument("--expect-trials", type=int)
    p.add_argument("--bb")
    p.add_argument("--experiment")
    p.add_argument("dbs", nargs="+")
    args = p.parse_args()
    problems = []
    if args.count:
        print(len(trials(args.dbs[0])[0]))
        return 0
    if args.once:
        check_once(args.dbs[0], args.expect_trials, problems)
    else:
        compare(args, problems)
    for line in problems:
        print(f"compare_runs: {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
