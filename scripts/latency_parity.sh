#!/usr/bin/env bash
# Parity of `preempt latency` with cyclictest (issue 5, "Trust").
#
# Runs both tools alternately, ROUNDS times each, with the same policy (SCHED_FIFO), priority,
# interval, loop count and CPU, both with memory locked and /dev/cpu_dma_latency held at 0,
# then prints the median of each round's median and p99 for each tool and their ratio.
# Alternating spreads slow drifts of the machine (other load, thermal) over both tools.
#
# Usage: scripts/latency_parity.sh [ROUNDS] [LOOPS] [INTERVAL_US] [PRIORITY] [CPU]
# Needs root (SCHED_FIFO) and cyclictest (apt-get install rt-tests).
# Environment: PREEMPT=path to the preempt binary (default: build it in release mode).
set -euo pipefail

ROUNDS=${1:-5}
LOOPS=${2:-20000}
INTERVAL=${3:-1000}
PRIO=${4:-80}
CPU=${5:-$(( $(nproc) - 1 ))}

command -v cyclictest >/dev/null || { echo "latency_parity: cyclictest not found (apt-get install rt-tests)" >&2; exit 1; }
if [[ -z "${PREEMPT:-}" ]]; then
    cargo build --release -q -p preempt-cli
    PREEMPT="${CARGO_TARGET_DIR:-target}/release/preempt"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# $(uname -srvm)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "# preempt $("$PREEMPT" --version | cut -d' ' -f2), $(cyclictest --help 2>&1 | head -1)"
echo "# SCHED_FIFO $PRIO, interval $INTERVAL us, $LOOPS loops, CPU $CPU, $ROUNDS alternating rounds"

for r in $(seq 1 "$ROUNDS"); do
    "$PREEMPT" latency --policy fifo --priority "$PRIO" --interval "$INTERVAL" --loops "$LOOPS" \
        --cpus "$CPU" --no-progress --json >"$work/preempt-$r.json" 2>/dev/null
    cyclictest --mlockall --priority="$PRIO" --interval="$INTERVAL" --loops="$LOOPS" \
        --affinity="$CPU" --threads=1 --quiet --histogram=100000 --histfile="$work/cyclictest-$r.hist" \
        >/dev/null
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def preempt_round(r):
    s = json.load(open(f"{work}/preempt-{r}.json"))["data"]["latency_all"]
    return s["p50_ns"] / 1000, s["p99_ns"] / 1000, s["max_ns"] / 1000

def cyclictest_round(r):
    # Histogram lines: "<us> <count>" (1 us buckets, latency truncated to whole us).
    counts = {}
    mx = 0.0
    for line in open(f"{work}/cyclictest-{r}.hist"):
        if line.startswith("#"):
            if "Max Latencies" in line:
                mx = float(line.split(":")[1].split()[0])
            continue
        parts = line.split()
        if len(parts) >= 2:
            counts[int(parts[0])] = counts.get(int(parts[0]), 0) + int(parts[1])
    total = sum(counts.values())
    def q(p):
        rank, seen = max(1, -(-p * total // 1)), 0
        for us in sorted(counts):
            seen += counts[us]
            if seen >= rank:
                return us + 0.5  # bucket midpoint: cyclictest truncates to whole us
        return float("nan")
    return q(0.5), q(0.99), mx

p = [preempt_round(r) for r in range(1, rounds + 1)]
c = [cyclictest_round(r) for r in range(1, rounds + 1)]
print(f"{'round':>5} {'preempt p50':>12} {'cyclictest p50':>15} {'preempt p99':>12} {'cyclictest p99':>15}   (us)")
for i, (a, b) in enumerate(zip(p, c), 1):
    print(f"{i:>5} {a[0]:>12.1f} {b[0]:>15.1f} {a[1]:>12.1f} {b[1]:>15.1f}")
med = lambda xs: statistics.median(xs)
pm, cm = med([x[0] for x in p]), med([x[0] for x in c])
p99, c99 = med([x[1] for x in p]), med([x[1] for x in c])
print(f"median of medians: preempt {pm:.1f} us, cyclictest {cm:.1f} us, ratio {pm / cm:.3f}")
print(f"median of p99:     preempt {p99:.1f} us, cyclictest {c99:.1f} us, ratio {p99 / c99:.3f}")
print(f"max (all rounds):  preempt {max(x[2] for x in p):.1f} us, cyclictest {max(x[2] for x in c):.1f} us")
PY
