#!/usr/bin/env bash
# Memory growth of `preempt monitor` (issue 17: RSS after one hour within 1 MiB of RSS after
# one minute). Runs the release `preempt monitor` as users run it (default 1 ms interval,
# default window and re-check) on the CPUs in CPUS for DURATION seconds, scrapes /metrics every
# 10 s as a Prometheus would, and samples VmRSS every 10 s into a CSV.
#
#   scripts/monitor_rss.sh [DURATION_S=3600] [CPUS=0] [OUT=target/monitor_rss.csv]
#
# Prints VmRSS at 60 s and at the end and the difference; needs root or CAP_SYS_NICE
# (SCHED_FIFO). The run's JSON result goes to OUT with .json; it is not recorded in history.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-3600}
cpus=${2:-0}
out=${3:-target/monitor_rss.csv}
cargo build --release -p preempt-cli >&2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
target/release/preempt monitor --listen "127.0.0.1:$port" --cpus "$cpus" \
  --duration "${duration}s" --export-json "${out%.csv}.json" --no-history &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
echo "t_s,vmrss_kib" > "$out"
start=$(date +%s)
rss_at_60=""
rss_last=""
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
status=0
wait $pid || status=$?
echo "preempt monitor exited with status $status"
echo "machine: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "VmRSS at 60 s: ${rss_at_60:-n/a} KiB; at the end (${duration} s): ${rss_last:-n/a} KiB"
if [ -n "$rss_at_60" ]; then
  echo "growth: $(( rss_last - rss_at_60 )) KiB (bound: 1024 KiB)"
fi
