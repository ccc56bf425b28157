#!/usr/bin/env python3
"""report_page_test.py: the HTML report (balerbench report --format html) in a real browser.

Makes three results databases with the real binary on tiny synthetic experiments (12 trials on a
simulated GPU at two power limits, with codecs, a warm-up, and amp_fp16 trials that fail on a CPU;
one trial that fails; none at all), writes each one's page and JSON report, and opens the pages
in Debian's headless Chromium through Selenium (python3-selenium, chromium-driver). It checks:
  - the page loads with no error on the console;
  - every table of the JSON report is on the page with the same rows and the same values;
  - every figure is drawn as SVG with the data marks it must have (points, bars, lines, labels);
  - a click on a column's name sorts the table, a second click the other way;
  - failed and warm-up trials are marked; a database with only failed trials, or none, says so.

Registered with ctest (label integration) by tests/CMakeLists.txt; scripts/setup.sh --browser
installs the browser. Exits 77 (ctest: skipped) where Chromium, its driver or Selenium is missing.

  /usr/bin/python3 tests/integration/report_page_test.py --balerbench build/harness/balerbench
  /usr/bin/python3 tests/integration/report_page_test.py --page PAGE.html --screenshot OUT.png
      # only a screenshot of the top of PAGE.html (after it loads with no console error), as the docs' one
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SKIP = 77

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    webdriver = None

PAGE_EXPERIMENT = {
    "schema_version": 1, "name": "page",
    "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "training": {"test_size": 0.2},
    "sweep": {"batch_size": [256], "precision": ["fp32", "fp64", "amp_fp16"], "power_limit_w": [300, 150],
              "epochs": [3], "repeats": 2, "warmup_trials": 1},
    "target": {"relative_error": 0.9},
    "energy": {"meters": ["simulated_gpu"], "simulated_gpu": {"load": 1.0}, "sample_hz": 20},
    "allow_power_limit_changes": True,
    "codecs": {"enabled": True, "min_window_s": 0},
    "cost": {"eta": [0, 0.5, 1], "max_power_w": 300},
}
# Every figure the page experiment gives.
PAGE_FIGURES = {"time_energy", "ratio_to_fp32", "power_limit", "loss", "phase_energy", "codecs", "fidelity",
                "feature_residuals", "feature_responses", "feature_boxes"}
# No NVML here, whatever the machine has: the power limits are the simulated GPU's.
ENV = dict(os.environ, BALERBENCH_NVML_LIB="/nonexistent/libnvidia-ml.so.1")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(cmd, cwd, ok=(0,)):
    r = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=240)
    if r.returncode not in ok:
        raise Failure(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def make_databases(bb, work):
    """page.sqlite, failed.sqlite, empty.sqlite; returns {name: (html, json or None, failed trials expected)}."""
    with open(os.path.join(work, "page.json"), "w") as f:
        json.dump(PAGE_EXPERIMENT, f)
    # amp_fp16 needs CUDA: on a CPU its trials fail (exit 3) and the sweep goes on.
    r = run([bb, "run", "page.json", "--db", "page.sqlite", "--progress", "none", "--tables", "none"], work, ok=(0, 3))
    cuda = r.returncode == 0
    failed = dict(PAGE_EXPERIMENT, name="failed")
    failed["sweep"] = {"batch_size": [256], "precision": ["amp_fp16"], "epochs": [1]}
    failed.pop("codecs")
    with open(os.path.join(work, "failed.json"), "w") as f:
        json.dump(failed, f)
    empty = dict(failed, name="empty")
    empty["sweep"] = {"batch_size": [256], "precision": ["fp32"], "epochs": [1]}
    with open(os.path.join(work, "empty.json"), "w") as f:
        json.dump(empty, f)
    run([bb, "run", "failed.json", "--db", "failed.sqlite", "--progress", "none", "--tables", "none"], work, ok=(0, 3))
    # Shard 1 of 2 of a one-trial grid runs nothing: a database with no trial.
    run([bb, "run", "empty.json", "--db", "empty.sqlite", "--progress", "none", "--tables", "none", "--shard", "1/2"],
        work)
    pages = {}
    for db in ("page", "failed", "empty"):
        run([bb, "report", "--db", f"{db}.sqlite", "--format", "html", "--out", f"{db}.html"], work)
        report = None
        if db != "empty":
            report = json.loads(run([bb, "report", "--db", f"{db}.sqlite", "--format", "json"], work).stdout)
        pages[db] = (os.path.join(work, f"{db}.html"), report)
    return pages, cuda


def browser(profile):
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    # Headless as root on a machine with no network: without these Chromium stalls.
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1280,2000", f"--user-data-dir={profile}"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)


def load(driver, path):
    driver.get("file://" + path)
    until = time.time() + 30
    while driver.execute_script("return document.documentElement.getAttribute('data-figures')") != "done":
        check(time.time() < until, f"{path}: the figures were not all tried within 30 s")
        time.sleep(0.05)
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    check(not errors, f"{os.path.basename(path)}: errors on the console: {errors}")


def page_tables(driver, experiment):
    """{table name: [[cell values]]} of one experiment's section, read from the cells' data-v."""
    return driver.execute_script("""
        const section = Array.from(document.querySelectorAll('section.bb-experiment'))
            .find(s => s.dataset.experiment === arguments[0]);
        const out = {};
        section.querySelectorAll('section.bb-table').forEach(t => {
            out[t.dataset.table] = {
                columns: Array.from(t.querySelectorAll('thead th')).map(th => th.textContent),
                rows: Array.from(t.querySelectorAll('tbody tr')).map(
                    tr => Array.from(tr.cells).map(td => JSON.parse(td.dataset.v))),
                marks: Array.from(t.querySelectorAll('tbody tr')).map(tr => tr.className)};
        });
        return out;""", experiment)


def check_tables(driver, report):
    """Every table of the JSON report on the page: its columns, its rows, each value."""
    by_experiment = {}
    for t in report["tables"]:
        by_experiment.setdefault(t["experiment"], []).append(t)
    for experiment, tables in by_experiment.items():
        on_page = page_tables(driver, experiment)
        check(set(on_page) == {t["table"] for t in tables},
              f"{experiment}: tables on the page {sorted(on_page)} != the JSON report's {[t['table'] for t in tables]}")
        for t in tables:
            p = on_page[t["table"]]
            check(p["columns"] == t["columns"], f"{t['table']}: columns {p['columns']} != {t['columns']}")
            check(len(p["rows"]) == len(t["rows"]),
                  f"{t['table']}: {len(p['rows'])} rows on the page, {len(t['rows'])} in the JSON report")
            for i, row in enumerate(t["rows"]):
                check(p["rows"][i] == [row.get(c) for c in t["columns"]],
                      f"{t['table']} row {i}: page {p['rows'][i]} != JSON {row}")
    return by_experiment


def figure_marks(driver):
    """[{kind, rendered, expect, counts: {mark type: data items drawn}}] for every figure."""
    return driver.execute_script("""
        return Array.from(document.querySelectorAll('figure.bb-figure')).map(f => {
            const counts = {};
            for (const type of ['symbol', 'rule', 'line', 'rect', 'text', 'area']) {
                const tag = type === 'rule' ? 'line' : type === 'text' ? 'text' : 'path';
                counts[type] = f.querySelectorAll(`svg g.mark-${type}.role-mark > ${tag}`).length;
            }
            counts.frontier = f.querySelectorAll('svg g.mark-symbol.frontier_marks > path').length;
            return {kind: f.dataset.kind, rendered: f.dataset.rendered, expect: JSON.parse(f.dataset.expect),
                    counts: counts};
        });""")


def check_figures(driver, tables, expect_kinds):
    figures = figure_marks(driver)
    kinds = {f["kind"] for f in figures}
    check(expect_kinds <= kinds, f"figures drawn: {sorted(kinds)}; missing: {sorted(expect_kinds - kinds)}")
    for f in figures:
        check(f["rendered"] == "yes", f"figure {f['kind']}: not drawn ({f['rendered']})")
        for mark, n in f["expect"].items():
            if mark == "frontier":
                check(f["counts"][mark] == n, f"figure {f['kind']}: {f['counts'][mark]} frontier rings, expected {n}")
            else:
                check(f["counts"][mark] >= n, f"figure {f['kind']}: {f['counts'][mark]} {mark} marks, expected {n}")
        check(sum(f["counts"].values()) > 0, f"figure {f['kind']}: no data mark in its SVG")
    by_name = {t["table"]: t for t in tables}
    # The same numbers: a point per ratio the precision table gives (the FP32 rows are the 1) ...
    ratios = sum(1 for r in by_name["precision"]["rows"] for c in ("time_vs_fp32", "energy_vs_fp32")
                 if isinstance(r[c], (int, float)) and r[c.replace("vs_fp32", "verdict")] != "baseline")
    ratio_figure = next(f for f in figures if f["kind"] == "ratio_to_fp32")
    check(ratio_figure["counts"]["symbol"] == ratios,
          f"ratio figure: {ratio_figure['counts']['symbol']} points, the precision table has {ratios} ratios")
    # ... and a ring on the frontier for each configuration of the cost_pareto table.
    front = len(by_name["cost_pareto"]["rows"])
    te = next(f for f in figures if f["kind"] == "time_energy")
    check(front >= 1 and te["counts"]["frontier"] == front,
          f"time-energy figure: {te['counts']['frontier']} frontier rings, the cost_pareto table has {front} rows")


def layout_problems(driver):
    """What a reader would see cut or crowded in the figures at the window's width: a text outside its
    figure or cut with an ellipsis (a legend's label), two labels of one axis on each other, and a
    time-energy point outside its plot (the axes stretched by an interval)."""
    return driver.execute_script("""
        const out = [];
        const visible = t => t.getAttribute('opacity') !== '0' && getComputedStyle(t).opacity !== '0'
                             && t.getBoundingClientRect().width > 0;
        document.querySelectorAll('figure.bb-figure').forEach(f => {
            const svg = f.querySelector('svg');
            if (!svg) return;
            const box = svg.getBoundingClientRect();
            svg.querySelectorAll('text').forEach(t => {
                if (!visible(t)) return;
                const r = t.getBoundingClientRect();
                if (r.right > box.right + 1 || r.left < box.left - 1)
                    out.push(`${f.dataset.kind}: "${t.textContent}" reaches outside its figure`);
                if (t.textContent.endsWith('\u2026')) out.push(`${f.dataset.kind}: "${t.textContent}" is cut`);
            });
            svg.querySelectorAll('g.role-axis-label').forEach(g => {
                const rs = Array.from(g.querySelectorAll('text')).filter(visible).map(t => t.getBoundingClientRect());
                for (let i = 0; i < rs.length; ++i)
                    for (let j = i + 1; j < rs.length; ++j) {
                        const a = rs[i], b = rs[j];
                        if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
                            out.push(`${f.dataset.kind}: axis labels "${g.querySelectorAll('text')[i].textContent}" overlap`);
                    }
            });
            if (f.dataset.kind === 'time_energy') {
                const area = (svg.querySelector('g.role-frame path') || svg).getBoundingClientRect();
                svg.querySelectorAll('g.mark-symbol.role-mark > path').forEach(p => {
                    const r = p.getBoundingClientRect();
                    const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
                    if (cx < area.left - 1 || cx > area.right + 1 || cy < area.top - 1 || cy > area.bottom + 1)
                        out.push('time_energy: a point outside the plot');
                });
            }
        });
        return out;""")


def check_layout(driver, path):
    """Every figure read at the widths readers use: 1000 and 1400 CSS pixels."""
    for width in (1000, 1400):
        driver.set_window_size(width, 1600)
        load(driver, path)
        problems = layout_problems(driver)
        check(not problems, f"at {width} px: " + "; ".join(sorted(set(problems))))


def check_sorting(driver, experiment, table, column):
    def values():
        return driver.execute_script("""
            const t = Array.from(document.querySelectorAll('section.bb-experiment'))
                .find(s => s.dataset.experiment === arguments[0])
                .querySelector(`section.bb-table[data-table="${arguments[1]}"] table`);
            const i = Array.from(t.tHead.rows[0].cells).findIndex(th => th.textContent === arguments[2]);
            return Array.from(t.tBodies[0].rows).map(tr => JSON.parse(tr.cells[i].dataset.v));""",
                                     experiment, table, column)

    def header():
        return [b for b in driver.find_elements(By.CSS_SELECTOR, f'section.bb-table[data-table="{table}"] th button')
                if b.text == column][0]

    def blank(v):
        return v is None or v in ("-", "")

    before = values()
    for descending in (False, True):
        header().click()
        after = values()
        filled = [v for v in after if not blank(v)]
        check(sorted(after, key=json.dumps) == sorted(before, key=json.dumps), f"sorting {column} lost or added rows")
        check(filled == sorted(filled, reverse=descending), f"{table} by {column}, descending={descending}: {after}")
        check(all(blank(v) for v in after[len(filled):]), f"{table} by {column}: blanks not last: {after}")
        check(len(set(map(json.dumps, filled))) > 1, f"{table} by {column}: nothing to sort")


def check_page(driver, path, report, cuda):
    check_layout(driver, path)
    driver.set_window_size(1280, 2000)
    load(driver, path)
    tables = check_tables(driver, report)["page"]
    check_figures(driver, tables, PAGE_FIGURES)
    check_sorting(driver, "page", "trials", "time_s")
    check_sorting(driver, "page", "trials", "precision")
    marks = page_tables(driver, "page")["trials"]["marks"]
    check(any("bb-warmup" in m for m in marks), f"the warm-up trial is not marked: {marks}")
    if not cuda:
        check(sum("bb-failed" in m for m in marks) == 4, f"the 4 failed amp_fp16 trials are not marked: {marks}")
    check(driver.find_element(By.CSS_SELECTOR, "section.bb-experiment .bb-table").get_attribute("data-table")
          == "systems", "the systems table does not come first")
    summary = driver.find_element(By.CSS_SELECTOR, ".bb-summary").text
    check("trials stored" in summary and "Grid:" in summary, f"summary: {summary}")


def check_failed_page(driver, path, report):
    load(driver, path)
    check_tables(driver, report)
    text = driver.find_element(By.CSS_SELECTOR, ".bb-summary").text
    check("No trial finished" in text, f"the page of failed trials does not say so: {text}")
    check("No figure" in driver.find_element(By.CSS_SELECTOR, ".bb-figures").text, "figures section: no 'No figure'")
    check(not driver.find_elements(By.CSS_SELECTOR, "figure.bb-figure"), "figures drawn from failed trials")
    marks = page_tables(driver, "failed")["trials"]["marks"]
    check(marks and all("bb-failed" in m for m in marks), f"failed trials not marked: {marks}")


def check_empty_page(driver, path):
    load(driver, path)
    text = driver.find_element(By.CSS_SELECTOR, ".bb-no-trials").text
    check("holds no trials" in text, f"the page of an empty database does not say so: {text}")


def screenshot(page, out):
    """The top of `page` (1280 x 1400 CSS pixels), once it has loaded with no console error."""
    with tempfile.TemporaryDirectory(prefix="bb-shot-") as profile:
        driver = browser(profile)
        try:
            driver.set_window_size(1280, 1400)
            load(driver, os.path.abspath(page))
            driver.save_screenshot(out)
        finally:
            driver.quit()
    print(f"wrote {out}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--balerbench", help="the balerbench binary (the test)")
    ap.add_argument("--page", help="instead of the test, only a screenshot of this page (with --screenshot)")
    ap.add_argument("--screenshot", help="where the screenshot of --page goes (PNG)")
    ap.add_argument("--keep", help="copy the test's databases and pages into this folder")
    a = ap.parse_args()
    if bool(a.page) != bool(a.screenshot) or bool(a.page) == bool(a.balerbench):
        ap.error("give --balerbench (the test), or --page and --screenshot")
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if webdriver is None or missing:
        print(f"SKIPPED: no {'python3-selenium' if webdriver is None else ', '.join(missing)} "
              "(hint: scripts/setup.sh --browser installs chromium, chromium-driver and python3-selenium)")
        return SKIP
    if a.page:
        return screenshot(a.page, a.screenshot)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="bb-page-") as work:
        pages, cuda = make_databases(os.path.abspath(a.balerbench), work)
        made = time.time()
        driver = browser(os.path.join(work, "profile"))
        try:
            check_page(driver, pages["page"][0], pages["page"][1], cuda)
            if not cuda:
                check_failed_page(driver, pages["failed"][0], pages["failed"][1])
            check_empty_page(driver, pages["empty"][0])
        finally:
            driver.quit()
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            for name in os.listdir(work):
                if name.endswith((".html", ".sqlite")):
                    shutil.copy(os.path.join(work, name), a.keep)
    print(f"report pages: every check passed (databases {made - start:.1f} s, browser {time.time() - made:.1f} s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAILED: {e}")
        sys.exit(1)
