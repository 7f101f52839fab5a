#!/usr/bin/env bash
# Cost of `preempt latency --explain` (issue 13, item 5): the p50/p99 wake-up latency with and
# without kernel tracing, alternated in one session on the same CPU.
#
# Runs PAIRS pairs of `preempt latency` (default app and flags: SCHED_FIFO 80, 1000 us
# interval, memory locked, cpu_dma_latency held at 0), one plain and one with `--explain`,
# swapping the order in every other pair so that a slow drift of the machine (other load,
# thermal) falls on both. Prints each run, then the median over the pairs of p50 and p99 for
# each variant and the ratio p99(explain) / p99(plain) (target: <= 1.10), with the load
# average before and after.
#
# Usage: scripts/bench_explain.sh [PAIRS] [SECONDS] [CPU]
#   PAIRS    alternating pairs (default 8)
#   SECONDS  length of each run (default 5)
#   CPU      measured CPU (default: the last online CPU)
# Needs root (SCHED_FIFO, tracefs).
# Environment: PREEMPT=path to the preempt binary (default: build it in release mode).
set -euo pipefail

PAIRS=${1:-8}
SECS=${2:-5}
CPU=${3:-$(( $(nproc) - 1 ))}

if [[ -z "${PREEMPT:-}" ]]; then
    cargo build --release -q -p preempt-cli --bin preempt
    PREEMPT="${CARGO_TARGET_DIR:-target}/release/preempt"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# $(uname -srvm)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "# preempt $("$PREEMPT" --version | cut -d' ' -f2), $(rustc --version 2>/dev/null || echo 'rustc ?')"
echo "# command: scripts/bench_explain.sh $PAIRS $SECS $CPU"
echo "# each run: $PREEMPT latency -D ${SECS}s -a $CPU [--explain]"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"

one() { # variant pair
    local extra=()
    [[ $1 == explain ]] && extra=(--explain)
    "$PREEMPT" latency -D "${SECS}s" -a "$CPU" --no-progress --no-history "${extra[@]}" \
        --export-json "$work/$1-$2.json" >/dev/null 2>"$work/$1-$2.err" || {
        echo "bench_explain: the $1 run of pair $2 failed:" >&2
        cat "$work/$1-$2.err" >&2
        exit 1
    }
}

for p in $(seq 1 "$PAIRS"); do
    if (( p % 2 )); then one plain "$p"; one explain "$p"; else one explain "$p"; one plain "$p"; fi
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "$PAIRS" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])

def run(variant, p):
    d = json.load(open(f"{work}/{variant}-{p}.json"))["data"]
    s = d["latency_all"]
    x = d.get("explain") or {}
    return s["p50_ns"] / 1e3, s["p99_ns"] / 1e3, s["max_ns"] / 1e3, x.get("explained")

print("| pair | plain p50 us | plain p99 us | plain max us | explain p50 us | explain p99 us | explain max us | outliers explained |")
print("|---|---|---|---|---|---|---|---|")
rows = []
for p in range(1, pairs + 1):
    a, b = run("plain", p), run("explain", p)
    rows.append((a, b))
    print(f"| {p} | {a[0]:.1f} | {a[1]:.1f} | {a[2]:.1f} | {b[0]:.1f} | {b[1]:.1f} | {b[2]:.1f} | {b[3]} |")
med = lambda v: statistics.median(v)
p50a, p99a = med([r[0][0] for r in rows]), med([r[0][1] for r in rows])
p50b, p99b = med([r[1][0] for r in rows]), med([r[1][1] for r in rows])
pair_ratio = med([r[1][1] / r[0][1] for r in rows if r[0][1] > 0])
print()
print(f"median over {pairs} pairs: plain p50 {p50a:.1f} us, p99 {p99a:.1f} us; "
      f"explain p50 {p50b:.1f} us, p99 {p99b:.1f} us")
print(f"p50 ratio explain/plain {p50b / p50a:.3f}; p99 ratio {p99b / p99a:.3f} "
      f"(median of per-pair ratios {pair_ratio:.3f}); target p99 ratio <= 1.10: "
      f"{'met' if p99b / p99a <= 1.10 else 'MISSED'}")
PY
