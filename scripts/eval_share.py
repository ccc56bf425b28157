#!/usr/bin/env python3
"""eval_share.py: each trial's evaluation share of its epochs, from a results database.

usage: scripts/eval_share.py results.sqlite

Per trial: epochs run, median epoch seconds and median evaluation seconds (first epoch left out: it
holds the warm-up and the graph capture), their ratio, and the first epoch (from 1) at the target.
"""
import sqlite3
import statistics
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    print("| trial | precision | batch | epochs | median epoch s | median eval s | eval share | first epoch at target |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for tid, prec, batch, status in db.execute("SELECT id, precision, batch_size, status FROM trials ORDER BY id"):
        rows = db.execute("SELECT epoch, duration_s, eval_s, target_met FROM epochs WHERE trial_id=? ORDER BY epoch",
                          (tid,)).fetchall()
        if not rows:
            print(f"| {tid} | {prec} | {batch} | 0 ({status}) | - | - | - | - |")
            continue
        steady = rows[1:] or rows
        d = statistics.median(r[1] for r in steady)
        e = statistics.median(r[2] or 0 for r in steady)
        hit = next((r[0] + 1 for r in rows if r[3]), None)  # epochs are stored from 0
        print(f"| {tid} | {prec} | {batch} | {len(rows)} | {d:.4f} | {e:.4f} | {100 * e / d:.1f}% | "
              f"{hit if hit is not None else 'missed'} |")


if __name__ == "__main__":
    main()
