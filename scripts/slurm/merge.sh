#!/usr/bin/env bash
# merge.sh: join the shard databases of one experiment (written by
# sweep_array.sbatch) into results/<name>.sqlite and print its tables.
#
#   scripts/slurm/merge.sh experiments/batch_size_sweep.json
#SBATCH --job-name=balerbench-merge
#SBATCH --time=00:10:00
#SBATCH --output=%x_%j.log
set -euo pipefail
EXPERIMENT="${1:?usage: merge.sh EXPERIMENT.json}"
ROOT="${BALERBENCH_ROOT:-${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}}"
BB="${BALERBENCH_BIN:-$ROOT/build/harness/balerbench}"
NAME="$(basename "$EXPERIMENT" .json)"
shopt -s nullglob
shards=("$ROOT"/results/slurm/"${NAME}"_shard*.sqlite)
if [ "${#shards[@]}" -eq 0 ]; then
  echo "merge.sh: no shard databases results/slurm/${NAME}_shard*.sqlite" >&2
  exit 2
fi
"$BB" merge "${shards[@]}" --out "$ROOT/results/${NAME}.sqlite" --force
"$BB" report --db "$ROOT/results/${NAME}.sqlite"
