#!/usr/bin/env bash
# Cost of `preempt latency --explain` (issue 13, item 5): the p50/p99 wake-up latency with and
# without kernel tracing, alternated in one session on the same CPUs.
#
# Runs PAIRS pairs of `preempt latency` (default flags: every online CPU measured and traced,
# SCHED_FIFO 80, 1000 us interval, memory locked, cpu_dma_latency held at 0; or one CPU with
# the trace reader kept off it), one plain and one with `--explain`,
# swapping the order in every other pair so that a slow drift of the machine (other load,
# thermal) falls on both. Prints each run, the medians over the pairs, and the headline: the
# p50 and p99 of all wake-ups of each variant pooled (the runs' histograms merged), their
# ratio explain/plain (target for p99: <= 1.10) and a 90 % interval for it from resampling
# the pairs, with the load average before and after. One run's p99 rests on its ~50 slowest
# of ~5 000 wake-ups, so on a VM one host stall moves it by tens of percent; the pooled p99
# rests on PAIRS times as many.
#
# Usage: scripts/bench_explain.sh [PAIRS] [SECONDS] [CPU]
#   PAIRS    alternating pairs (default 8)
#   SECONDS  length of each run (default 5)
#   CPU      measured CPU, or `all` (default: all, which is `preempt latency` without -a)
# Needs root (SCHED_FIFO, tracefs).
# Environment: PREEMPT=path to the preempt binary (default: build it in release mode).
set -euo pipefail

PAIRS=${1:-8}
SECS=${2:-5}
CPU=${3:-all}
cpu_args=()
[[ $CPU == all ]] || cpu_args=(-a "$CPU")

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
echo "# each run: $PREEMPT latency -D ${SECS}s ${cpu_args[*]} [--explain]"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"

one() { # variant pair
    local extra=()
    [[ $1 == explain ]] && extra=(--explain)
    "$PREEMPT" latency -D "${SECS}s" "${cpu_args[@]}" --no-progress --no-history "${extra[@]}" \
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
import json, random, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])

def load(variant, p):
    return json.load(open(f"{work}/{variant}-{p}.json"))["data"]

def run(d):
    s = d["latency_all"]
    x = d.get("explain") or {}
    return s["p50_ns"] / 1e3, s["p99_ns"] / 1e3, s["max_ns"] / 1e3, x.get("explained")

def buckets(d):
    # Every thread's histogram (one thread per run here): (upper_ns, count) pairs.
    return [(b["upper_ns"], b["count"]) for t in d["threads"] for b in t["latency"]["histogram"]["buckets"]]

def pooled(runs, q):
    # The q-quantile of all wake-ups of these runs together: their histograms merged.
    merged = {}
    for r in runs:
        for upper, n in r:
            merged[upper] = merged.get(upper, 0) + n
    total = sum(merged.values())
    seen = 0
    for upper in sorted(merged):
        seen += merged[upper]
        if seen >= q * total:
            return upper / 1e3
    return float("nan")

print("| pair | plain p50 us | plain p99 us | plain max us | explain p50 us | explain p99 us | explain max us | outliers explained |")
print("|---|---|---|---|---|---|---|---|")
rows, hist = [], []
for p in range(1, pairs + 1):
    da, db = load("plain", p), load("explain", p)
    a, b = run(da), run(db)
    rows.append((a, b))
    hist.append((buckets(da), buckets(db)))
    print(f"| {p} | {a[0]:.1f} | {a[1]:.1f} | {a[2]:.1f} | {b[0]:.1f} | {b[1]:.1f} | {b[2]:.1f} | {b[3]} |")
med = statistics.median
p50a, p99a = med([r[0][0] for r in rows]), med([r[0][1] for r in rows])
p50b, p99b = med([r[1][0] for r in rows]), med([r[1][1] for r in rows])
pair_ratio = med([r[1][1] / r[0][1] for r in rows if r[0][1] > 0])
print()
print(f"median over {pairs} pairs: plain p50 {p50a:.1f} us, p99 {p99a:.1f} us; "
      f"explain p50 {p50b:.1f} us, p99 {p99b:.1f} us")
print(f"  ratios of the medians: p50 {p50b / p50a:.3f}, p99 {p99b / p99a:.3f} "
      f"(median of per-pair p99 ratios {pair_ratio:.3f})")

# The headline: every wake-up of each variant pooled (one run's p99 rests on its ~50 slowest
# of ~5 000 wake-ups, and on this VM one host stall moves it by tens of percent; the pooled
# p99 rests on PAIRS times as many). Its uncertainty: the pairs resampled with replacement.
def ratios(sample):
    a = [h[0] for h in sample]
    b = [h[1] for h in sample]
    return pooled(b, 0.50) / pooled(a, 0.50), pooled(b, 0.99) / pooled(a, 0.99)
pa50, pa99 = pooled([h[0] for h in hist], 0.50), pooled([h[0] for h in hist], 0.99)
pb50, pb99 = pooled([h[1] for h in hist], 0.50), pooled([h[1] for h in hist], 0.99)
rng = random.Random(13)
boot = sorted(ratios([rng.choice(hist) for _ in hist])[1] for _ in range(2000))
lo, hi = boot[int(0.05 * len(boot))], boot[int(0.95 * len(boot)) - 1]
r99 = pb99 / pa99
print(f"pooled over all wake-ups: plain p50 {pa50:.1f} us, p99 {pa99:.1f} us; "
      f"explain p50 {pb50:.1f} us, p99 {pb99:.1f} us")
print(f"p50 ratio explain/plain {pb50 / pa50:.3f}; p99 ratio {r99:.3f} "
      f"(90 % interval over resampled pairs {lo:.3f}-{hi:.3f}); target p99 ratio <= 1.10: "
      f"{'met' if r99 <= 1.10 else 'MISSED'}")
PY
