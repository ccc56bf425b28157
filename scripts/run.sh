#!/usr/bin/env bash
# run.sh: the main job. Sets up, then runs one quick Baler cycle on synthetic
# CMS-like data: list the energy meters this machine has, then generate,
# train, compress, decompress (each prints its phase energies and writes
# energy_report.json and emissions.csv), and print sizes, compression ratios
# and the reconstruction error.
#
#   scripts/run.sh                 # 50,000 jets, experiments/quickstart.json
#   ROWS=520000 scripts/run.sh     # the size of Baler's CMS example file
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BALERBENCH_BUILD_DIR:-$ROOT/build}"
ROWS="${ROWS:-50000}"
OUT="${OUT:-$ROOT/output/quickstart}"

"$ROOT/scripts/setup.sh"
BB="$BUILD_DIR/harness/balerbench"
CONFIG="$ROOT/experiments/quickstart.json"
DATA="$ROOT/output/data/cms_like.npz"

echo; echo "== energy meters on this machine"
"$BB" meters
echo; echo "== generate: $ROWS CMS-like jets"
"$BB" data generate --kind cms --rows "$ROWS" --seed 0 --out "$DATA"
echo; echo "== train"
"$BB" train --config "$CONFIG" --out "$OUT" --influx-file "$OUT/live_metrics.lp"   # live metrics as InfluxDB line protocol
echo; echo "== compress"
"$BB" compress --config "$CONFIG" --out "$OUT"
echo; echo "== decompress"
"$BB" decompress --config "$CONFIG" --out "$OUT"
echo; echo "== info"
"$BB" info --config "$CONFIG" --out "$OUT"
echo; echo "outputs under $OUT"
