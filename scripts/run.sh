#!/usr/bin/env bash
# run.sh: the main job. Sets up (Debian packages + Release build), lists the
# energy meters this machine has, then runs experiments/quickstart.json: a
# small sweep of precision x batch size on synthetic CMS-like jets, 2 repeats,
# into the SQLite results database, and prints the precision (T3) and Zeus
# cost tables from it. A second run resumes: finished trials are skipped.
#
#   scripts/run.sh                                   # results/balerbench.sqlite
#   DB=/tmp/q.sqlite scripts/run.sh                  # another database
#   EXPERIMENT=experiments/t3_precision.json scripts/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BALERBENCH_BUILD_DIR:-$ROOT/build}"
EXPERIMENT="${EXPERIMENT:-$ROOT/experiments/quickstart.json}"
DB="${DB:-$ROOT/results/balerbench.sqlite}"

"$ROOT/scripts/setup.sh"
BB="$BUILD_DIR/harness/balerbench"

echo; echo "== energy meters on this machine"
"$BB" meters
echo; echo "== sweep: $EXPERIMENT"
"$BB" run "$EXPERIMENT" --db "$DB" --progress lines
echo; echo "every table: $BB report --db $DB"
