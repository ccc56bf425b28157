#!/usr/bin/env bash
# run.sh: the main job. Sets up what it needs (Debian packages + the binary's Release build:
# scripts/setup.sh --main, one line a step, the details in build/setup.log), lists the
# energy meters this machine has, then runs experiments/quickstart.json: a
# small sweep of precision x batch size on synthetic CMS-like jets, 3 repeats,
# into the SQLite results database, prints the precision (T3) and Zeus
# cost tables from it, and writes the experiment's HTML page (every table and the
# figures) to results/quickstart.html where the page's plotting library is installed (where npm is
# there already, or with PAGE=1, which installs Debian's npm: some 360 packages more). A second run
# resumes: finished trials are skipped.
#
#   scripts/run.sh                                   # results/balerbench.sqlite
#   PAGE=1 scripts/run.sh                            # and the HTML page, installing npm if missing
#   DB=/tmp/q.sqlite scripts/run.sh                  # another database
#   EXPERIMENT=experiments/t3_precision.json HTML=results/t3.html scripts/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BALERBENCH_BUILD_DIR:-$ROOT/build}"
EXPERIMENT="${EXPERIMENT:-$ROOT/experiments/quickstart.json}"
DB="${DB:-$ROOT/results/balerbench.sqlite}"
HTML="${HTML:-$ROOT/results/$(basename "$EXPERIMENT" .json).html}"

# The experiment is checked before the set-up, which takes minutes the first time.
[ -f "$EXPERIMENT" ] || { echo "run.sh: error: EXPERIMENT=$EXPERIMENT: no such file (hint: an experiment FILE.json, e.g. experiments/quickstart.json)" >&2; exit 2; }
SETUP=(--main)
case "${PAGE:-auto}" in
  1) SETUP+=(--page) ;;
  0) SETUP+=(--no-page) ;;
  auto) ;;
  *) echo "run.sh: error: PAGE is 1, 0 or auto, not '$PAGE'" >&2; exit 2 ;;
esac
"$ROOT/scripts/setup.sh" "${SETUP[@]}"
BB="$BUILD_DIR/harness/balerbench"

echo; echo "== energy meters on this machine"
"$BB" meters
echo; echo "== sweep: $EXPERIMENT"
# The page needs the plotting library that setup.sh installs with npm; where that failed, the tables alone.
HTML_ARGS=()
if [ -f "$ROOT/harness/report/html/node_modules/vega-lite/build/vega-lite.min.js" ]; then HTML_ARGS=(--html "$HTML"); fi
"$BB" run "$EXPERIMENT" --db "$DB" --progress lines "${HTML_ARGS[@]}"
echo; echo "every table: $BB report --db $DB [--wide]"
if [ "${#HTML_ARGS[@]}" -gt 0 ]; then
  echo "every table and the figures, in a browser: $HTML"
elif [ -f "$BUILD_DIR/npm-ci-failed" ]; then
  echo "no page: npm ci could not install its plotting library ($(cat "$BUILD_DIR/npm-ci-failed"); log: $BUILD_DIR/setup.log;" \
       "behind a proxy that re-signs TLS: NODE_EXTRA_CA_CERTS=its-ca.pem PAGE=1 scripts/run.sh)"
else
  echo "the page with every table and the figures: PAGE=1 scripts/run.sh (installs npm and the plotting library; the trials are not run again)"
fi
