#!/usr/bin/env bash
# bench/peers/repro.sh: reproduces issue 3's observations about linux-rtic 0.1.1.
#
#   1. The thesis's Listing 2 (contended unlock, 50 000 samples) pinned to one CPU
#      (`taskset -c 0`) often never finishes: pcp-mutex 0.2.0 busy-waits at SCHED_FIFO on a
#      state that only a lower-priority thread on the same CPU can change. Each run is bounded by
#      `timeout -k 2 TIMEOUT`; the script counts the runs that hung. For contrast it also runs
#      Listing 2 unpinned the same number of times.
#   2. Same-priority tasks do not run in spawn order (rtic_spawn_order).
#
# Usage: bench/peers/repro.sh [RUNS (default 15)] [TIMEOUT_S (default 20)] [SAMPLES (default 50000)]
# A pinned run that finishes takes about SAMPLES x 40 us (2 s at 50 000 here), so the default
# timeout is 10x that. Prints the machine/kernel/rustc header, one line per run and a summary.
# Environment: CARGO_TARGET_DIR (default <repo>/target/bench-framework). Needs SCHED_FIFO (root).
set -euo pipefail

RUNS=${1:-15}
LIMIT=${2:-20}
SAMPLES=${3:-50000}
for v in "$RUNS" "$LIMIT" "$SAMPLES"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "error: '$v' is not a positive integer (usage: $0 [RUNS] [TIMEOUT_S] [SAMPLES])" >&2; exit 2; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target/bench-framework}
BIN=$CARGO_TARGET_DIR/release
cargo build --quiet --release --manifest-path "$HERE/Cargo.toml" --bins

echo "command: $(printf '%q ' "$0" "$@")"
echo "date (UTC): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(uname -m), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs"
echo "kernel: $(uname -srv); /sys/kernel/realtime: $(cat /sys/kernel/realtime 2>/dev/null || echo absent)"
echo "rustc: $(rustc -V)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# listing2 LABEL [taskset args...]: RUNS runs, counting hangs (timeout) and failures.
listing2() {
    local label=$1
    shift
    local hung=0 failed=0 ok=0 rc
    for i in $(seq 1 "$RUNS"); do
        rc=0
        out=$(timeout -k 2 "$LIMIT" "$@" "$BIN/rtic_contended_unlock" --samples "$SAMPLES" 2>&1) || rc=$?
        case $rc in
            0) ok=$((ok + 1)); echo "$label run $i: finished: $out" ;;
            124|137) hung=$((hung + 1)); echo "$label run $i: HUNG (killed after ${LIMIT}s)" ;;
            *) failed=$((failed + 1)); echo "$label run $i: FAILED (exit $rc): $out" ;;
        esac
    done
    echo "summary: $label: $hung of $RUNS runs hung, $failed failed, $ok finished ($SAMPLES samples each, timeout ${LIMIT}s)"
    echo
}

listing2 "linux-rtic Listing 2, taskset -c 0" taskset -c 0
listing2 "linux-rtic Listing 2, unpinned"

for spawns in 16 8 4; do
    timeout -k 2 "$LIMIT" "$BIN/rtic_spawn_order" --spawns "$spawns"
done
