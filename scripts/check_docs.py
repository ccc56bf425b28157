#!/usr/bin/env python3
"""check_docs.py: what `mkdocs build --strict` does not check in MkDocs 1.4 (Debian 12's). Fails
(exit 1, one line per problem) for:
  - a page in docs/ that mkdocs.yml's nav leaves out, or a nav entry with no page (1.4 only logs the
    first at INFO level, which --strict lets through);
  - a relative link, in docs/*.md or README.md, to a file that does not exist;
  - a link to a heading (page.md#anchor, #anchor) that the page does not have (1.4 does not check
    anchors at all);
  - a column count stated in prose ("all 22 columns"), which drifts as tables grow: say "every
    column" (the note under a table counts them);
  - a pasted table whose terminal-view note ("the columns to decide by, 15 of 26") counts other
    columns than its header shows (an interval's cell counts its two ends);
  - a marked sample (<!-- sample: ... -->) that differs from what its command gives now, or a marker
    that does not parse (scripts/docs_samples.py --check; without build/harness/balerbench, the
    samples taken from files only).
Run by scripts/docs.sh build.
"""
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def nav_pages(nav):
    for item in nav:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                yield from (nav_pages(value) if isinstance(value, list) else [value])


def slug(heading):
    # Python-Markdown's toc slugify: drop what is not a word character, space or hyphen; spaces to '-'.
    text = re.sub(r"`|\*\*|\*", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def prose_lines(path):
    """The lines outside fenced code blocks, with their numbers."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                yield n, line


def anchors(path):
    return {slug(line.lstrip("#").strip()) for _, line in prose_lines(path) if re.match(r"#{1,6} ", line)}


def check_links(path, problems):
    here = os.path.dirname(path)
    for n, line in prose_lines(path):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(here, file_part)) if file_part else path
            where = f"{os.path.relpath(path, ROOT)}:{n}: {target}"
            if not os.path.exists(dest):
                problems.append(f"{where}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{where}: no heading '#{anchor}' in {os.path.relpath(dest, ROOT)}")


COUNT_IN_PROSE = re.compile(r"\ball \d+\b(?=[^.]*\bcolumns?\b)|--wide[^.]*\ball \d+\b|#\s*all \d+\b")
VIEW_NOTE = re.compile(r"the columns to decide by, (\d+) of (\d+)")


def check_counts(path, problems):
    """Column counts that drift: stated in prose, or a pasted view note that its table contradicts."""
    header = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if COUNT_IN_PROSE.search(line):
                problems.append(f"{os.path.relpath(path, ROOT)}:{n}: a column count in prose drifts as tables "
                                "grow; say 'every column' (the note under a table counts them)")
            if line.startswith("| ") and header is None:
                header = [c.strip() for c in line.strip().strip("|").split("|")]
            elif not line.startswith("|") and line.strip() and not line.startswith("- "):
                header = None if not VIEW_NOTE.search(line) else header
            m = VIEW_NOTE.search(line)
            if m and header is not None:
                shown = len(header) + header.count("95% interval")
                if shown != int(m.group(1)):
                    problems.append(f"{os.path.relpath(path, ROOT)}:{n}: the note counts {m.group(1)} columns, its "
                                    f"table shows {shown}: paste the table and its note from one run")
            if line.startswith("### "):
                header = None


def check_samples(problems):
    """The samples marked in the README and docs are what their commands give now
    (scripts/docs_samples.py --check; without the binary, the file samples only)."""
    samples = os.path.join(ROOT, "scripts", "docs_samples.py")
    r = subprocess.run([sys.executable, samples, "--check"], capture_output=True, text=True)
    print((r.stdout.splitlines() or [""])[-1] if r.returncode == 0 else "", end="\n" if r.returncode == 0 else "")
    if r.returncode != 0:
        problems.extend(line for line in (r.stdout + r.stderr).splitlines() if line.strip())


def main():
    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    in_nav = set(nav_pages(config["nav"]))
    pages = {os.path.relpath(os.path.join(d, n), DOCS) for d, _, names in os.walk(DOCS) for n in names if n.endswith(".md")}
    problems = [f"docs/{p}: not in mkdocs.yml's nav (add it there)" for p in sorted(pages - in_nav)]
    problems += [f"mkdocs.yml: nav names {p}, which docs/ does not have" for p in sorted(in_nav - pages)]
    for p in sorted(pages):
        check_links(os.path.join(DOCS, p), problems)
    check_links(os.path.join(ROOT, "README.md"), problems)
    for p in sorted(pages):
        check_counts(os.path.join(DOCS, p), problems)
    check_counts(os.path.join(ROOT, "README.md"), problems)
    check_samples(problems)
    for p in problems:
        print(p)
    print(f"check_docs: {len(pages)} pages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
