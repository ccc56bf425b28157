#!/usr/bin/env python3
"""docs_samples.py: the sample outputs in the README and docs/, each made by the command it names.

A sample is the text between two markers in a Markdown file:

    <!-- sample: report --db results/reference/M/quickstart.sqlite --experiment quickstart --table precision keep=table -->
    | precision | ... |
    <!-- /sample -->

    <!-- sample: file results/reference/M/quickstart_run.txt lines=1-9,55-57 -->
    ```
    ...
    ```
    <!-- /sample -->

`sample: ARGS` runs `balerbench ARGS` (build/harness/balerbench, or $BALERBENCH_BIN) in the
repository root and takes its standard output; `sample: file PATH` takes a file that a script wrote
(scripts/measure_cpu_amp.sh writes the quickstart's run log and keeps its database). Options after
the command: `keep=table` keeps only the lines of Markdown tables; `lines=A-B,C-D` keeps those lines
(1-based), with a line "..." between ranges; `fence` puts the text in a ``` block.

    scripts/docs_samples.py --write    # remake every sample from its command
    scripts/docs_samples.py --check    # exit 1 naming each sample that differs from what its command
                                       # gives now (scripts/check_docs.py runs this when the binary is built)
"""
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^<!-- sample: (.+?) -->\n(.*?)^<!-- /sample -->\n", re.M | re.S)


def binary():
    return os.environ.get("BALERBENCH_BIN", os.path.join(ROOT, "build", "harness", "balerbench"))


def split_options(spec):
    words = shlex.split(spec)
    options = {}
    while words and re.fullmatch(r"(keep|lines)=\S+|fence", words[-1]):
        key, _, value = words.pop().partition("=")
        options[key] = value
    return words, options


def keep_lines(text, ranges):
    lines = text.splitlines()
    kept = []
    for i, r in enumerate(ranges.split(",")):
        a, _, b = r.partition("-")
        if i:
            kept.append("...")
        kept.extend(lines[int(a) - 1:int(b or a)])
    return "\n".join(kept) + "\n"


def produce(spec, where):
    words, options = split_options(spec)
    if words and words[0] == "file":
        path = os.path.join(ROOT, words[1])
        if not os.path.isfile(path):
            raise SystemExit(f"docs_samples.py: {where}: {words[1]} is missing (hint: the script that writes it)")
        text = open(path, encoding="utf-8").read()
    else:
        r = subprocess.run([binary()] + words, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"docs_samples.py: {where}: balerbench {' '.join(words)} exited {r.returncode}:\n"
                             f"{r.stdout}{r.stderr}")
        text = r.stdout
    if options.get("keep") == "table":  # between blank lines: a Markdown table apart from the markers
        text = "\n" + "".join(line + "\n" for line in text.splitlines() if line.startswith("|")) + "\n"
    if "lines" in options:
        text = keep_lines(text, options["lines"])
    if "fence" in options:
        text = "```\n" + text + "```\n"
    return text


def markdown_files():
    yield os.path.join(ROOT, "README.md")
    for dirpath, _, names in os.walk(os.path.join(ROOT, "docs")):
        for n in sorted(names):
            if n.endswith(".md"):
                yield os.path.join(dirpath, n)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "--check"
    if mode not in ("--check", "--write"):
        raise SystemExit("usage: docs_samples.py --check | --write")
    stale = []
    for path in markdown_files():
        text = open(path, encoding="utf-8").read()
        changed = False

        def remake(m):
            nonlocal changed
            where = f"{os.path.relpath(path, ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            now = produce(m.group(1), where)
            if now != m.group(2):
                stale.append(where)
                changed = True
            return f"<!-- sample: {m.group(1)} -->\n{now}<!-- /sample -->\n"

        new = MARKER.sub(remake, text)
        if changed and mode == "--write":
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(new)
            os.replace(tmp, path)
    verb = "remade" if mode == "--write" else "differs from what its command gives now"
    for where in stale:
        print(f"docs_samples.py: {where}: the sample {verb}")
    if stale and mode == "--check":
        print("hint: scripts/docs_samples.py --write remakes them (and git diff shows what changed)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
