#!/usr/bin/env python3
"""check_layers.py: every #include of the project's own headers points down the layers of
docs/ARCHITECTURE.md, never up. Run by scripts/test.sh; exits 1 and names each offending line.

  models, datasets            know nothing of harness (and models nothing of datasets' callers)
  harness floors, top down:   cli > sweep, baler > run > engine > report, monitor, power > energy, store > base
  an include may point within its own folder or to a lower floor; folders on one floor
  (report and power; energy and store) may not include each other.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOORS = {"cli": 7, "sweep": 6, "baler": 6, "run": 5, "engine": 4, "report": 3, "monitor": 3, "power": 3, "energy": 2, "store": 2,
          "base": 1}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(harness|models|datasets)/([^"/]+)/?([^"]*)"')


def folder_of(path):
    parts = os.path.relpath(path, ROOT).split(os.sep)
    if parts[0] == "harness":
        return ("harness", parts[1] if len(parts) > 2 else None)
    return (parts[0], None)


def check(path, problems):
    top, floor = folder_of(path)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target_top, target = m.group(1), m.group(2)
            where = f"{os.path.relpath(path, ROOT)}:{n}: {line.strip()}"
            if top in ("models", "datasets") and target_top == "harness":
                problems.append(f"{where}: {top}/ must not know harness/")
            elif top == "harness" and target_top == "harness" and floor and target in FLOORS:
                if target != floor and FLOORS[target] >= FLOORS[floor]:
                    problems.append(f"{where}: {floor}/ (floor {FLOORS[floor]}) includes {target}/ "
                                    f"(floor {FLOORS[target]}); hint: move the shared helper down, e.g. to base/")
            elif top == "harness" and floor and floor not in FLOORS:
                problems.append(f"{where}: harness/{floor}/ is not a known floor ({', '.join(FLOORS)})")


def main():
    problems, files = [], 0
    for top in ("harness", "models", "datasets"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if name.endswith((".h", ".cpp")):
                    files += 1
                    check(os.path.join(dirpath, name), problems)
    for p in problems:
        print(p)
    print(f"check_layers: {files} files, {len(problems)} include(s) pointing up a layer")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
