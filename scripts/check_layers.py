#!/usr/bin/env python3
"""check_layers.py: every #include of the project's own headers points down the floors of
docs/ARCHITECTURE.md, never up. The floors are read from that page's table (between its
"<!-- floors" and "<!-- /floors -->" markers), so the page and the check cannot disagree. Run by
scripts/test.sh; exits 1 and names each offending line.

  common                      includes nothing of the project (below everything)
  models, datasets            may include common; know nothing of harness (models nothing of datasets)
  harness floors              an include may point within its own folder or to a lower floor;
                              folders on one floor may not include each other
  tests, fuzz                 above every floor: may include any header of the project; tests/ may
                              include its own helpers (tests/test_util.h, tests/fakes/...), and
                              nothing outside tests/ may include them (fuzz/ has no headers)
.h, .cpp and .inc files are read (an .inc obeys its folder's floor, as a header there does).

One reader of /proc: outside harness/base/proc_fs.*, no source of harness/, models/, datasets/ or
common/ spells a path under /proc as a string literal ("/proc/self/exe"); the root "/proc" itself,
passed to proc_fs's readers (tests give a fake tree), and words about /proc in messages are fine.
A self-check of that rule runs first, on lines it must and must not flag.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCHITECTURE = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
ROW = re.compile(r"^\|\s*(\d+)\s*\|([^|]*)\|")


def read_floors(path=ARCHITECTURE):
    """{folder: floor} from the table of floors in docs/ARCHITECTURE.md."""
    floors, inside = {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("<!-- floors"):
                inside = True
            elif line.startswith("<!-- /floors"):
                inside = False
            elif inside and (m := ROW.match(line)):
                for folder in re.findall(r"`([a-z_]+)`", m.group(2)):
                    floors[folder] = int(m.group(1))
    if not floors:
        sys.exit(f"check_layers: no table of floors in {path} (hint: the rows between '<!-- floors' and "
                 "'<!-- /floors -->' name each floor's folders in backquotes)")
    return floors


FLOORS = read_floors()
INCLUDE = re.compile(r'^\s*#\s*include\s+"(harness|models|datasets|common|tests|fuzz)/([^"/]+)/?([^"]*)"')
SOURCES = (".h", ".cpp", ".inc")
TOPS = ("harness", "models", "datasets", "common", "tests", "fuzz")


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
            if target_top in ("tests", "fuzz") and top != "tests":
                problems.append(f"{where}: only tests/ may include a header of {target_top}/ "
                                "(hint: what the harness needs goes into harness/, not tests/)")
            elif top == "tests" and target_top == "fuzz":
                problems.append(f"{where}: fuzz/ has no headers to include")
            elif top in ("tests", "fuzz"):
                continue  # above every floor: any header of the project
            elif top == "common" and target_top != "common":
                problems.append(f"{where}: common/ is below everything and includes nothing of {target_top}/")
            elif top in ("models", "datasets") and target_top == "harness":
                problems.append(f"{where}: {top}/ must not know harness/")
            elif top == "models" and target_top == "datasets":
                problems.append(f"{where}: models/ must not know datasets/ (hint: what both need goes to common/)")
            elif top == "harness" and target_top == "harness" and floor and target in FLOORS:
                if target != floor and FLOORS[target] >= FLOORS[floor]:
                    problems.append(f"{where}: {floor}/ (floor {FLOORS[floor]}) includes {target}/ "
                                    f"(floor {FLOORS[target]}); hint: move the shared helper down, e.g. to base/")
            elif top == "harness" and floor and floor not in FLOORS:
                problems.append(f"{where}: harness/{floor}/ is not a known floor ({', '.join(FLOORS)})")


# A string literal that is a path under /proc: "/proc/self/exe", "/proc/stat".
PROC_PATH = re.compile(r'"/proc/[A-Za-z0-9_.{}/-]*"')
PROC_READER = ("harness/base/proc_fs.h", "harness/base/proc_fs.cpp")


def proc_path_literal(line):
    """The /proc path a line of code spells as a string literal, or None (comments are not code)."""
    code = line.split("//", 1)[0] if not line.lstrip().startswith("//") else ""
    m = PROC_PATH.search(code)
    return m.group(0) if m else None


def check_proc(path, problems):
    rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
    if rel.split("/")[0] in ("tests", "fuzz") or rel in PROC_READER:
        return
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if literal := proc_path_literal(line):
                problems.append(f"{rel}:{n}: {line.strip()}: spells the /proc path {literal} (hint: read it "
                                "through harness/base/proc_fs.h, the one reader of /proc, adding a function there)")


def self_check():
    """The /proc rule on lines it must flag and lines it must let pass; exits 2 when it is wrong."""
    must = ['  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);',
            'std::ifstream in("/proc/stat");']
    must_not = ['CpuActivity read_cpu_activity(const std::string& proc_root = "/proc");',
                '  reason = "no VmHWM in /proc/self/status";',
                '  return read_proc_text(proc_root + "/meminfo");  // "/proc/meminfo" in a comment',
                '// readlink("/proc/self/exe") is read by proc_fs']
    wrong = [l for l in must if not proc_path_literal(l)] + [l for l in must_not if proc_path_literal(l)]
    if wrong:
        sys.exit("check_layers: self-check failed on: " + " | ".join(wrong))


def main():
    self_check()
    problems, files = [], 0
    for top in TOPS:
        for dirpath, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "corpus")]
            for name in sorted(names):
                if name.endswith(SOURCES):
                    files += 1
                    check(os.path.join(dirpath, name), problems)
                    check_proc(os.path.join(dirpath, name), problems)
    for folder in sorted(os.listdir(os.path.join(ROOT, "harness"))):
        if os.path.isdir(os.path.join(ROOT, "harness", folder)) and folder not in FLOORS:
            problems.append(f"harness/{folder}/ is on no floor of docs/ARCHITECTURE.md (hint: add it to the table)")
    for folder in sorted(FLOORS):
        if not os.path.isdir(os.path.join(ROOT, "harness", folder)):
            problems.append(f"docs/ARCHITECTURE.md lists harness/{folder}/, which does not exist")
    for p in problems:
        print(p)
    print(f"check_layers: {files} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
