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
repository root and takes its standard output (only `report`, which reads and writes nothing, so that
--check changes no file); `sample: file PATH` takes a file that a script wrote
(scripts/measure_cpu_amp.sh writes the quickstart's run log and keeps its database). Options after
the command: `keep=table` keeps only the lines of Markdown tables; `lines=A-B,C-D` keeps those lines
(1-based), with a line "..." between ranges; `fence` puts the text in a ``` block.

    scripts/docs_samples.py --write    # remake every sample from its command
    scripts/docs_samples.py --check    # exit 1 naming each sample that differs from what its command
                                       # gives now (scripts/check_docs.py runs this; without the binary,
                                       # the `file` samples only)
A marker that does not parse, an opening marker inside a sample or without its closing one, and a
sample that comes out empty are errors (exit 2), never skipped.
"""
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPEN = re.compile(r"^<!-- sample: (.+?) -->$")
CLOSE = "<!-- /sample -->"


class SampleError(Exception):
    pass


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
    """The sample's text, or None when it needs the binary and there is none."""
    words, options = split_options(spec)
    if words and words[0] == "file" and len(words) == 2:
        path = os.path.join(ROOT, words[1])
        if not os.path.isfile(path):
            raise SampleError(f"{where}: {words[1]} is missing (hint: the script that writes it)")
        text = open(path, encoding="utf-8").read()
    elif words and words[0] == "report":
        if not os.access(binary(), os.X_OK):
            return None
        r = subprocess.run([binary()] + words, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            raise SampleError(f"{where}: balerbench {' '.join(words)} exited {r.returncode}: "
                              f"{(r.stdout + r.stderr).strip()}")
        text = r.stdout
    else:
        raise SampleError(f"{where}: '{spec}': a sample is `file PATH` or a `report ...` command")
    if options.get("keep") == "table":  # between blank lines: a Markdown table apart from the markers
        text = "\n" + "".join(line + "\n" for line in text.splitlines() if line.startswith("|")) + "\n"
    if "lines" in options:
        text = keep_lines(text, options["lines"])
    if not text.strip():
        raise SampleError(f"{where}: the sample comes out empty (check keep= and lines=)")
    if "fence" in options:
        text = "```\n" + text + "```\n"
    return text


def samples(path, text):
    """(spec, first line index of the body, index of the closing marker) for each sample of a file."""
    rel = os.path.relpath(path, ROOT)
    if "\r\n" in text:
        raise SampleError(f"{rel}: CRLF line endings; the markers are read in LF files only")
    lines = text.split("\n")
    found, open_at = [], None
    for i, line in enumerate(lines):
        if line.startswith("<!-- sample") or line.startswith("<!-- /sample"):
            m = OPEN.match(line)
            if line == CLOSE:
                if open_at is None:
                    raise SampleError(f"{rel}:{i + 1}: a closing marker without its opening one")
                found.append((OPEN.match(lines[open_at]).group(1), open_at + 1, i))
                open_at = None
            elif m and open_at is None:
                open_at = i
            elif m:
                raise SampleError(f"{rel}:{i + 1}: a sample opens inside the one opened at line {open_at + 1}")
            else:
                raise SampleError(f"{rel}:{i + 1}: not a marker: '{line}' (hint: '<!-- sample: ... -->', '{CLOSE}')")
    if open_at is not None:
        raise SampleError(f"{rel}:{open_at + 1}: the sample is never closed ('{CLOSE}')")
    return lines, found


def markdown_files():
    yield os.path.join(ROOT, "README.md")
    for dirpath, _, names in os.walk(os.path.join(ROOT, "docs")):
        for n in sorted(names):
            if n.endswith(".md"):
                yield os.path.join(dirpath, n)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "--check"
    if mode not in ("--check", "--write"):
        print("usage: docs_samples.py --check | --write", file=sys.stderr)
        return 2
    stale, checked, unchecked = [], 0, 0
    try:
        for path in markdown_files():
            text = open(path, encoding="utf-8").read()
            lines, found = samples(path, text)
            for spec, body, close in reversed(found):  # from the end: earlier indices stay valid
                where = f"{os.path.relpath(path, ROOT)}:{body}"
                now = produce(spec, where)
                if now is None:
                    unchecked += 1
                    continue
                checked += 1
                if "\n".join(lines[body:close]) + ("\n" if close > body else "") != now:
                    stale.append(where)
                    lines[body:close] = now.split("\n")[:-1]
            if mode == "--write" and "\n".join(lines) != text:
                tmp = path + ".tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines))
                os.replace(tmp, path)
    except SampleError as e:
        print(f"docs_samples.py: error: {e}", file=sys.stderr)
        return 2
    verb = "remade" if mode == "--write" else "differs from what its command gives now"
    for where in sorted(stale):
        print(f"docs_samples.py: {where}: the sample {verb}")
    print(f"docs_samples.py: {checked} sample(s) checked, {len(stale)} {'remade' if mode == '--write' else 'stale'}"
          + (f"; {unchecked} not checked: {binary()} is not built" if unchecked else ""))
    if stale and mode == "--check":
        print("hint: scripts/docs_samples.py --write remakes them (and git diff shows what changed)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
