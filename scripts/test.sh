#!/usr/bin/env bash
# test.sh: set up (packages + Release build, and the browser the HTML report's test drives) and
# run the whole test suite. Extra arguments go to ctest, e.g. scripts/test.sh -L unit
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BALERBENCH_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh" --browser
python3 "$ROOT/scripts/check_layers.py"  # includes point down the layers (docs/ARCHITECTURE.md)
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" "$@"
