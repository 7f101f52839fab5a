#!/usr/bin/env bash
# Memory growth of the monitor engine (issue 17: RSS after one hour within 1 MiB of RSS after
# one minute). Runs the engine (crates/preempt-metrics/examples/monitor_engine.rs) on every
# online CPU at the default 1 ms interval for DURATION seconds, scraped every 10 s as a
# Prometheus would, and samples VmRSS every 10 s.
#
#   scripts/monitor_rss.sh [DURATION_S=3600] [OUT=target/monitor_rss.csv]
#
# Prints RSS at 60 s and at the end and the difference; needs root or CAP_SYS_NICE.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-3600}
out=${2:-target/monitor_rss.csv}
cargo build --release -p preempt-metrics --example monitor_engine >&2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
target/release/examples/monitor_engine "127.0.0.1:$port" "$duration" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
echo "t_s,vmrss_kib" > "$out"
start=$(date +%s)
rss_at_60=""
while kill -0 $pid 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || true)
  [ -n "$rss" ] || break
  echo "$now,$rss" >> "$out"
  if [ -z "$rss_at_60" ] && [ "$now" -ge 60 ]; then rss_at_60=$rss; fi
  curl -s "http://127.0.0.1:$port/metrics" > /dev/null || true
  rss_last=$rss
  sleep 10
done
wait $pid || true
echo "machine: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "VmRSS at 60 s: ${rss_at_60:-n/a} KiB; at the end (${duration} s): ${rss_last:-n/a} KiB"
if [ -n "$rss_at_60" ]; then
  echo "growth: $(( rss_last - rss_at_60 )) KiB (bound: 1024 KiB)"
fi
