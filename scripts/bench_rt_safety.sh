#!/usr/bin/env bash
# scripts/bench_rt_safety.sh: what the real-time safety checks (preempt::rt_safety) cost a
# debug build, the configuration in which they are on by default.
#
# Runs the thesis's Listing 1 examples (same-priority and cross-priority task switches: the
# shortest possible jobs, so the checks' share is the largest it can be) from the debug build,
# alternating PREEMPT_RT_SAFETY=off and =warn ROUNDS times, and prints each run's time per
# switch and the warn/off ratio of the medians. The release build's cost of "off" is the
# instruction-count gate's business (scripts/icount.sh): nothing in the dispatch path.
#
# Usage: scripts/bench_rt_safety.sh [ROUNDS] [ITERATIONS]   (defaults 5, 200000)
# Needs the debug examples (`cargo build -p preempt --examples`) and real-time privileges
# (root); without them it runs with PREEMPT_SOFT=1 and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
ITER=${2:-200000}
BIN=target/debug/examples
for ex in listing1_same_priority listing1_cross_priority; do
  [ -x "$BIN/$ex" ] || { echo "bench_rt_safety.sh: $BIN/$ex missing: cargo build -p preempt --examples" >&2; exit 2; }
done
if [ "$(id -u)" != 0 ]; then
  echo "note: not root: PREEMPT_SOFT=1 (SCHED_OTHER)" >&2
  export PREEMPT_SOFT=1
fi
echo "host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "rounds: $ROUNDS, switches per run: $ITER, debug build"

# Time per switch, ns, of one run.
per_switch() { # example mode
  local out
  out=$(PREEMPT_RT_SAFETY=$2 PREEMPT_EXAMPLE_ITERATIONS=$ITER "$BIN/$1" 2>/dev/null)
  python3 - "$out" "$ITER" <<'EOF'
import re, sys
text, n = sys.argv[1], int(sys.argv[2])
m = re.search(r"Time: ([0-9.]+)(ns|µs|ms|s)\b", text)
scale = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
print(f"{float(m.group(1)) * scale / n:.1f}")
EOF
}

for ex in listing1_same_priority listing1_cross_priority; do
  offs=(); warns=()
  for _ in $(seq "$ROUNDS"); do
    offs+=("$(per_switch "$ex" off)")
    warns+=("$(per_switch "$ex" warn)")
  done
  python3 - "$ex" "${offs[*]}" "${warns[*]}" <<'EOF'
import statistics, sys
ex, offs, warns = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
mo, mw = statistics.median(offs), statistics.median(warns)
print(f"{ex}: off {offs} ns/switch, warn {warns} ns/switch")
print(f"{ex}: median off {mo:.1f} ns, warn {mw:.1f} ns: +{mw - mo:.1f} ns per job, ratio {mw / mo:.2f}")
EOF
done
