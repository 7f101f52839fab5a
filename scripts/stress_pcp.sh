#!/usr/bin/env bash
# Repeats the PCP mutex's random nested-lock stress test (crates/preempt-sync/tests/pcp_stress.rs,
# `random_nested_orders_many_threads`: six threads at SCHED_FIFO 11-14, random chains of up to
# three of six resources) RUNS times, each in its own process under a TIMEOUT, and counts the
# runs that hung (a livelock or deadlock) or failed. Needs root (or CAP_SYS_NICE) for the
# SCHED_FIFO priorities; without them the test runs under SCHED_OTHER and says so.
#
#   scripts/stress_pcp.sh [RUNS=200] [TIMEOUT_S=60] [SCALE=1]
#
# SCALE multiplies the test's iterations (PREEMPT_STRESS_SCALE). Exit status: 0 if every run
# passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
timeout_s=${2:-60}
scale=${3:-1}

cargo build --release -p preempt-sync --tests --quiet
bin=$(cargo test --release -p preempt-sync --test pcp_stress --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "pcp_stress":
        print(m["executable"])')
[ -x "$bin" ] || { echo "stress_pcp.sh: cannot find the pcp_stress test binary" >&2; exit 2; }

hung=0 failed=0 passed=0
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  set +e
  PREEMPT_STRESS_SCALE=$scale timeout --signal=KILL "$timeout_s" \
    "$bin" --exact random_nested_orders_many_threads >/tmp/stress_pcp.$$.log 2>&1
  rc=$?
  set -e
  case $rc in
    0) passed=$((passed + 1)) ;;
    137) hung=$((hung + 1)); echo "run $i: HUNG (killed after ${timeout_s}s)" ;;
    *) if grep -q WATCHDOG /tmp/stress_pcp.$$.log; then
         hung=$((hung + 1)); echo "run $i: HUNG ($(grep WATCHDOG /tmp/stress_pcp.$$.log))"
         continue
       fi
       failed=$((failed + 1)); echo "run $i: FAILED (exit $rc)"; tail -5 /tmp/stress_pcp.$$.log ;;
  esac
done
rm -f /tmp/stress_pcp.$$.log
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "random_nested_orders_many_threads x $runs (scale $scale, timeout ${timeout_s}s): $passed passed, $hung hung, $failed failed; $(( $(date +%s) - start )) s; CPU: $cpu; $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$hung" -eq 0 ] && [ "$failed" -eq 0 ]
