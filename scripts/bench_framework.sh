#!/usr/bin/env bash
# scripts/bench_framework.sh: issue 3's framework benchmark, side by side in ONE run.
#
# Measures preempt's framework figures against the peer crates from crates.io (linux-rtic 0.1.1,
# futex-queue 0.1.1, pcp-mutex 0.2.0, built in the separate workspace bench/peers) and against
# raw kernel/data-structure baselines. Each rep runs every family of figures (same-priority
# switch, cross-priority switch unpinned and pinned, uncontended lock, contended unlock unpinned
# and pinned) as peer / ours / baseline runs back to back, rotating which side goes first; after
# --reps reps it prints a Markdown table of medians and the ratios issue 3 sets targets for:
#
#   same-priority switch      preempt_switch_same / rtic_switch_same                 <= 0.25
#   cross-priority switch     preempt_switch_cross / raw_futex_pingpong              <= 1.1
#                             preempt_switch_cross_pinned / raw_futex_pingpong_pinned <= 1.1
#   uncontended lock+unlock   preempt_lock_uncontended / raw_pi_cas                  <= 1.3
#   contended unlock          preempt_contended_unlock / raw_unlock_pi               <= 1.1
#   memory                    peak RSS (VmHWM) of the Listing-1 app                   < 8 MiB
#
# The report starts with the machine, kernel, rustc, git revision and the exact command
# (STYLE.md: every committed benchmark run records them). "_pinned" figures ran under
# `taskset -c 0`. Every run is bounded by `timeout -k 2`; a run that hangs or fails is listed
# as a failed run of its figure (the peer's Listing 2 pinned to one CPU is known to hang).
#
# HOW PREEMPT'S ("ours") FIGURES ARE FOUND. The script builds `-p preempt --examples` in the main
# workspace and runs:
#   * listing1_same_priority    -> preempt_switch_same   (size: PREEMPT_EXAMPLE_ITERATIONS)
#   * listing1_cross_priority   -> preempt_switch_cross  (size: PREEMPT_EXAMPLE_ITERATIONS),
#                                  also pinned
#   * listing2_contended_unlock -> preempt_contended_unlock (size: PREEMPT_EXAMPLE_SAMPLES),
#                                  also pinned
#   * every other example in crates/preempt/examples/ or crates/preempt-sync/examples/ whose
#     source contains `figure=preempt_`, with both environment variables set (ITERATIONS = the
#     lock size), and every `harness = false` bench in crates/preempt{,-sync}/benches/ whose
#     source (the file or the directory of the same name) contains `figure=preempt_`, run as
#     `cargo bench -p <crate> --bench <name> --` (plus `--quick` in quick mode). This is where
#     the uncontended lock+unlock figure, `preempt_lock_uncontended`, is expected to come from.
#     A figure name must belong to one measurement method: an extra program must not reuse the
#     names the three listings produce.
# Accepted output, per run (bench_table normalize):
#   * preferred: lines `figure=<name> ns_per_op=<f64> samples=<n>` (any extra key=value fields),
#     names as in the table above; the script adds `_pinned` for pinned runs if missing;
#   * or the thesis examples' human output: `Time: <Duration Debug>` + `Switches: <n>`
#     (-> total / n), or `Release time: <Duration Debug>` + `... after <n> samples` (-> mean).
# The Listing-1 app's RSS is VmHWM read from /proc/<pid>/status when its main thread stops in
# exit (bench/peers `peak_rss`, ptrace PTRACE_O_TRACEEXIT), so the example needs no cooperation.
#
# Usage: scripts/bench_framework.sh [--quick] [--reps N] [--no-ours] [--out FILE]
#   --quick    small sizes and 3 reps: a few minutes at most (default: full sizes, 5 reps)
#   --reps N   repetitions of the peer/ours/baseline cycle
#   --no-ours  peer and baseline figures only
#   --out FILE also write the report to FILE
# Environment: CARGO_TARGET_DIR (default <repo>/target/bench-framework); BENCH_GIT_REV, the
# revision to record when the tree is not a git checkout (e.g. a `git archive` snapshot, the
# way to measure the committed state while others edit the work tree). Needs SCHED_FIFO:
# run as root or with CAP_SYS_NICE. Needs taskset (util-linux) and timeout (coreutils).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMMAND=$(printf '%q ' "$0" "$@")
QUICK=0
REPS=
OURS=1
OUT=

while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) QUICK=1 ;;
        --reps)
            [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "error: --reps needs a positive integer" >&2; exit 2; }
            REPS=$2; shift ;;
        --no-ours) OURS=0 ;;
        --out)
            [[ $# -ge 2 ]] || { echo "error: --out needs a file name" >&2; exit 2; }
            OUT=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

for tool in taskset timeout cargo rustc; do
    command -v "$tool" >/dev/null || { echo "error: '$tool' not found in PATH" >&2; exit 1; }
done

# Sizes. Full = the thesis's sizes where they are affordable (10 M same-priority switches,
# 50 000 contended unlocks); cross-thread hand-offs cost 1-30 us here, so 1 M of them.
# Listing 1 starts its clock in `init`, before the executors exist, so app start-up is inside
# the figure: ~15 ms for preempt (mlockall, prefaulted stacks), well under 1 ms for linux-rtic.
# Quick mode therefore keeps 10 M same-priority switches (15 ms / 10 M = 1.5 ns; at 1 M it
# was 15 ns, half of preempt's figure) and 200 k cross-priority hand-offs (75 ns of ~2.4 us).
if [[ $QUICK == 1 ]]; then
    ITER_SAME=10000000 ITER_CROSS=200000 ITER_LOCK=1000000 ITER_VEC=10000000 SAMPLES=5000
    REPS=${REPS:-3} TIMEOUT=60 HANG_TIMEOUT=10
else
    ITER_SAME=10000000 ITER_CROSS=1000000 ITER_LOCK=10000000 ITER_VEC=100000000 SAMPLES=50000
    REPS=${REPS:-5} TIMEOUT=300 HANG_TIMEOUT=30
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target/bench-framework}
BIN=$CARGO_TARGET_DIR/release
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RESULTS=$WORK/results.txt
REPORT=$WORK/report.md
: >"$RESULTS"

say() { printf '%s\n' "$*" | tee -a "$REPORT"; }

# ---------------------------------------------------------------- what this run is
say "# preempt framework benchmark (issue 3)"
say ""
say "- command: \`$COMMAND\` (cwd \`$PWD\`)"
say "- date (UTC): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
    say "- git: $(git -C "$REPO" rev-parse --short HEAD), $(git -C "$REPO" status --porcelain | wc -l) uncommitted paths"
else
    say "- git: not a checkout; revision given by BENCH_GIT_REV: ${BENCH_GIT_REV:-unknown}"
fi
say "- machine: $(uname -m), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs usable, $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
say "- kernel: $(uname -srv)"
say "- PREEMPT_RT (/sys/kernel/realtime): $(cat /sys/kernel/realtime 2>/dev/null || echo absent), preempt mode: $(cat /sys/kernel/debug/sched/preempt 2>/dev/null || echo unreadable)"
say "- rustc: $(rustc -V), $(cargo -V)"
say "- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
say "- sizes: same-priority $ITER_SAME switches, cross-priority $ITER_CROSS hand-offs, lock $ITER_LOCK, VecDeque $ITER_VEC, contended unlock $SAMPLES samples; $REPS reps; timeouts ${TIMEOUT}s (peer pinned Listing 2: ${HANG_TIMEOUT}s)"
say ""

# ---------------------------------------------------------------- build
echo "building bench/peers (release) into $CARGO_TARGET_DIR ..." >&2
cargo build --quiet --release --manifest-path "$REPO/bench/peers/Cargo.toml" --bins

OURS_EXAMPLES=() # extra figure programs: "<crate>:<example>"
OURS_BENCHES=()  # extra figure programs: "<crate>:<bench>"
if [[ $OURS == 1 ]]; then
    echo "building preempt's examples (bench profile: codegen-units = 1, thin LTO) ..." >&2
    if ! cargo build --quiet --profile bench --manifest-path "$REPO/Cargo.toml" -p preempt --examples; then
        say "**warning: building preempt's examples failed (see stderr); its figures are missing below.**"
        OURS=0
    fi
fi
if [[ $OURS == 1 ]]; then
    for crate in preempt preempt-sync; do
        dir=$REPO/crates/$crate
        for src in "$dir"/examples/*.rs; do
            [[ -e $src ]] || continue
            name=$(basename "$src" .rs)
            case $crate:$name in
                preempt:listing1_same_priority|preempt:listing1_cross_priority|preempt:listing2_contended_unlock) continue ;;
            esac
            grep -q 'figure=preempt_' "$src" || continue
            if cargo build --quiet --profile bench --manifest-path "$REPO/Cargo.toml" -p "$crate" --example "$name"; then
                OURS_EXAMPLES+=("$crate:$name")
            else
                say "**warning: building example $crate:$name failed; its figures are missing below.**"
            fi
        done
        for src in "$dir"/benches/*.rs; do
            [[ -e $src ]] || continue
            name=$(basename "$src" .rs)
            grep -rqs 'figure=preempt_' "$src" "$dir/benches/$name" || continue
            if cargo bench --quiet --no-run --manifest-path "$REPO/Cargo.toml" -p "$crate" --bench "$name"; then
                OURS_BENCHES+=("$crate:$name")
            else
                say "**warning: building bench $crate:$name failed; its figures are missing below.**"
            fi
        done
    done
    extra=("${OURS_EXAMPLES[@]}" "${OURS_BENCHES[@]}")
    say "- preempt figure programs: the three thesis listings${extra[*]:+ plus ${extra[*]}}"
fi

# ---------------------------------------------------------------- running
# run FIGURE PINNED(0|1) TIMEOUT_S [ENV=VALUE ...] -- COMMAND ARGS...
# Appends the run's normalized figure lines, or a failure line, to $RESULTS.
run() {
    local figure=$1 pinned=$2 limit=$3
    shift 3
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    local name=$figure pre=() norm=(normalize --figure "$figure")
    if [[ $pinned == 1 ]]; then
        name=${figure}_pinned pre=(taskset -c 0) norm+=(--pinned)
    fi
    echo "  $name" >&2
    local rc=0
    env "${envs[@]}" timeout -k 2 "$limit" "${pre[@]}" "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
    if [[ $rc == 0 ]]; then
        if ! "$BIN/bench_table" "${norm[@]}" <"$WORK/out" >>"$RESULTS" 2>>"$WORK/err"; then
            echo "failure=$name reason=no-figure" >>"$RESULTS"
            sed 's/^/    /' "$WORK/err" >&2
        fi
    else
        local reason=exit-$rc
        [[ $rc == 124 || $rc == 137 ]] && reason=timeout
        echo "failure=$name reason=$reason" >>"$RESULTS"
        [[ $reason == timeout ]] || tail -n 5 "$WORK/err" | sed 's/^/    /' >&2
    fi
}

# One function per (family, side). Within a family the peer, preempt and baseline runs follow
# each other directly, so they see nearly the same host load; the order of the three sides
# rotates from rep to rep so no side always runs first.
EX=$BIN/examples

same_peer() {
    run rtic_switch_same 0 "$TIMEOUT" -- \
        "$BIN/peak_rss" --label rtic_switch_same -- "$BIN/rtic_switch_same" --iterations "$ITER_SAME"
    run futex_queue_send_recv 0 "$TIMEOUT" -- "$BIN/futex_queue_send_recv" --iterations "$ITER_SAME"
}
same_ours() {
    run preempt_switch_same 0 "$TIMEOUT" PREEMPT_EXAMPLE_ITERATIONS="$ITER_SAME" -- \
        "$BIN/peak_rss" --label preempt_switch_same -- "$EX/listing1_same_priority"
}
same_base() {
    run vecdeque_push_pop 0 "$TIMEOUT" -- "$BIN/vecdeque" --iterations "$ITER_VEC"
}

cross_peer() {
    run rtic_switch_cross "$1" "$TIMEOUT" -- "$BIN/rtic_switch_cross" --iterations "$ITER_CROSS"
    run futex_queue_pingpong "$1" "$TIMEOUT" -- "$BIN/futex_queue_pingpong" --iterations "$ITER_CROSS"
}
cross_ours() {
    run preempt_switch_cross "$1" "$TIMEOUT" PREEMPT_EXAMPLE_ITERATIONS="$ITER_CROSS" -- \
        "$EX/listing1_cross_priority"
}
cross_base() {
    run raw_futex_pingpong "$1" "$TIMEOUT" -- "$BIN/raw_futex_pingpong" --iterations "$ITER_CROSS"
}

lock_peer() {
    run pcp_mutex_uncontended 0 "$TIMEOUT" -- "$BIN/pcp_mutex_uncontended" --iterations "$ITER_LOCK"
}
lock_ours() {
    local entry quick=()
    [[ $QUICK == 1 ]] && quick=(--quick)
    for entry in "${OURS_EXAMPLES[@]}"; do
        run "preempt_${entry#*:}" 0 "$TIMEOUT" PREEMPT_EXAMPLE_ITERATIONS="$ITER_LOCK" \
            PREEMPT_EXAMPLE_SAMPLES="$SAMPLES" -- "$EX/${entry#*:}"
    done
    for entry in "${OURS_BENCHES[@]}"; do
        run "preempt_${entry#*:}" 0 "$TIMEOUT" PREEMPT_EXAMPLE_ITERATIONS="$ITER_LOCK" \
            PREEMPT_EXAMPLE_SAMPLES="$SAMPLES" -- cargo bench --quiet \
            --manifest-path "$REPO/Cargo.toml" -p "${entry%%:*}" --bench "${entry#*:}" -- "${quick[@]}"
    done
}
lock_base() {
    run raw_pi_cas 0 "$TIMEOUT" -- "$BIN/raw_pi_cas" --iterations "$ITER_LOCK"
}

unlock_peer() {
    # Pinned, the peer livelocks in about one run of three: bounded by the short timeout.
    local limit=$TIMEOUT
    [[ $1 == 1 ]] && limit=$HANG_TIMEOUT
    run rtic_contended_unlock "$1" "$limit" -- "$BIN/rtic_contended_unlock" --samples "$SAMPLES"
}
unlock_ours() {
    run preempt_contended_unlock "$1" "$TIMEOUT" PREEMPT_EXAMPLE_SAMPLES="$SAMPLES" -- \
        "$EX/listing2_contended_unlock"
}
unlock_base() {
    run raw_unlock_pi "$1" "$TIMEOUT" -- "$BIN/raw_unlock_pi" --samples "$SAMPLES"
}

SIDES=(peer ours base)
[[ $OURS == 1 ]] || SIDES=(peer base)
for rep in $(seq 1 "$REPS"); do
    # Rotate the sides: rep 1 peer,ours,base; rep 2 ours,base,peer; rep 3 base,peer,ours; ...
    shift_by=$(( (rep - 1) % ${#SIDES[@]} ))
    order=("${SIDES[@]:shift_by}" "${SIDES[@]:0:shift_by}")
    echo "rep $rep/$REPS (order: ${order[*]})" >&2
    for family in same cross:0 cross:1 lock unlock:0 unlock:1; do
        for side in "${order[@]}"; do
            if [[ $family == *:* ]]; then
                "${family%:*}_$side" "${family#*:}"
            else
                "${family}_$side"
            fi
        done
    done
done

# ---------------------------------------------------------------- report
say "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
say ""
"$BIN/bench_table" summarize "$RESULTS" | tee -a "$REPORT"
say ""
say "<details><summary>raw results ($(wc -l <"$RESULTS") lines)</summary>"
say ""
say '```'
tee -a "$REPORT" <"$RESULTS"
say '```'
say "</details>"
if [[ -n $OUT ]]; then
    cp "$REPORT" "$OUT"
    echo "report written to $OUT" >&2
fi
