#!/usr/bin/env bash
# What the kernel trace loses under load, and what the trace reader costs a 10 kHz task:
# crates/preempt-trace/examples/trace_under_load.rs with the reader at SCHED_OTHER and at
# SCHED_FIFO 1 (the default), alternated, and once without tracing, next to
# `stress-ng --cpu 2 --io 2 --vm 1` (LOAD=none: idle). Needs root (tracefs, SCHED_FIFO) and
# stress-ng (apt-get install stress-ng).
#
#   scripts/bench_trace_loss.sh [SECONDS per run, default 10] [ROUNDS, default 2]
set -euo pipefail
secs="${1:-10}"
rounds="${2:-2}"
cargo build --release -q -p preempt-trace --example trace_under_load
bin="${CARGO_TARGET_DIR:-target}/release/examples/trace_under_load"
stress_pid=""
cleanup() { [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
if [ "${LOAD:-stress}" != none ]; then
    stress-ng --cpu 2 --io 2 --vm 1 --quiet &
    stress_pid=$!
    sleep 2
fi
echo "# $(uname -r), load ${LOAD:-stress}, $(date -u +%FT%TZ), uptime: $(uptime)"
for r in $(seq "$rounds"); do
    "$bin" "$secs" --reader other
    "$bin" "$secs" --reader fifo1
done
"$bin" "$secs" --no-trace
echo "# after: $(uptime)"
