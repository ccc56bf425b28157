#!/usr/bin/env bash
# docs.sh: the documentation site in docs/, built with MkDocs and the Material theme (Debian 12's
# mkdocs and mkdocs-material, installed here when missing).
#
#   scripts/docs.sh build    mkdocs build --strict into site/ (git-ignored), then scripts/check_docs.py
#                            (pages left out of the nav, links to missing files or headings); CI runs it
#   scripts/docs.sh serve    a local preview with live reload: http://127.0.0.1:8000 (DOCS_ADDR=host:port)
#   scripts/docs.sh config   rewrite docs/configuration.md from `balerbench config reference` (needs build/)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BB="${BALERBENCH_BIN:-$ROOT/build/harness/balerbench}"

install_mkdocs() {
  local p missing=()
  for p in mkdocs mkdocs-material; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "docs: installing Debian's ${missing[*]}"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
}

case "${1:-}" in
  build)
    install_mkdocs
    # Debian's mkdocs runs on Debian's python3, whatever python3 comes first on the PATH.
    /usr/bin/python3 -m mkdocs build --strict --clean --site-dir "$ROOT/site"
    /usr/bin/python3 scripts/check_docs.py
    ;;
  serve)
    install_mkdocs
    exec /usr/bin/python3 -m mkdocs serve --strict --dev-addr "${DOCS_ADDR:-127.0.0.1:8000}"
    ;;
  config)
    if [ ! -x "$BB" ]; then
      echo "docs.sh: error: $BB is not built (hint: scripts/setup.sh, or BALERBENCH_BIN=PATH)" >&2
      exit 2
    fi
    "$BB" config reference --format markdown > docs/configuration.md.tmp
    mv docs/configuration.md.tmp docs/configuration.md
    echo "docs: wrote docs/configuration.md"
    ;;
  *)
    echo "usage: scripts/docs.sh build|serve|config" >&2
    exit 2
    ;;
esac
