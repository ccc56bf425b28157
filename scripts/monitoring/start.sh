#!/usr/bin/env bash
# start.sh: Prometheus and InfluxDB for balerbench on this machine, from
# Debian's packages (installed by scripts/setup.sh), on loopback:
#   Prometheus  http://127.0.0.1:9090  scraping 127.0.0.1:9464 and :9465
#   InfluxDB    http://127.0.0.1:8086  database "balerbench" (created on first write)
# State and logs go under $STATE (default /tmp/bb-monitoring). Stop with:
#   scripts/monitoring/start.sh stop
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${STATE:-/tmp/bb-monitoring}"
mkdir -p "$STATE"

if [ "${1:-}" = "stop" ]; then
  for name in prometheus influxd; do
    if [ -f "$STATE/$name.pid" ]; then kill "$(cat "$STATE/$name.pid")" 2>/dev/null || true; rm -f "$STATE/$name.pid"; fi
  done
  echo "stopped"
  exit 0
fi

for bin in prometheus influxd; do
  command -v "$bin" >/dev/null || { echo "start.sh: $bin not found (hint: scripts/setup.sh installs it)" >&2; exit 2; }
done

sed -e "s#/tmp/bb-influxdb#$STATE/influxdb#g" "$HERE/influxdb.conf" > "$STATE/influxdb.conf"
influxd -config "$STATE/influxdb.conf" > "$STATE/influxd.log" 2>&1 &
echo $! > "$STATE/influxd.pid"
prometheus --config.file="$HERE/prometheus.yml" --storage.tsdb.path="$STATE/prometheus" \
  --web.listen-address=127.0.0.1:9090 > "$STATE/prometheus.log" 2>&1 &
echo $! > "$STATE/prometheus.pid"

for i in $(seq 1 50); do
  if curl -fs http://127.0.0.1:9090/-/ready >/dev/null 2>&1 && curl -fs http://127.0.0.1:8086/ping >/dev/null 2>&1; then
    echo "Prometheus http://127.0.0.1:9090 (scrapes 127.0.0.1:9464 and :9465), InfluxDB http://127.0.0.1:8086"
    echo "state and logs in $STATE; stop with: $0 stop"
    exit 0
  fi
  sleep 0.2
done
echo "start.sh: servers did not come up; see $STATE/*.log" >&2
exit 1
