#!/usr/bin/env bash
# Cost of a demonstrator's ROS 2 node (`--ros2`) to the real-time side: the controller's CPU
# per sample p99 and its release latency p99, with and without `--ros2`, alternated in one
# invocation on the same CPUs (target: ros2/plain <= 1.05).
#
#   gimbal: `gimbal-demo` (the code of `preempt demo gimbal`), 10 kHz; CPU per sample:
#           `controller_cpu_per_sample_ns` (sample + the controllers it released); release
#           latency: `sample_lateness_ns` (sample's start - its release). Publishes
#           /gimbal/joint_states at 1 kHz.
#   uav:    `uav-demo` (the flight `preempt demo uav` flies), 250 Hz; CPU per sample: `control_exec_ns` (the control job's
#           CPU time, preempt's accounting); release latency: `latency` (the runtime's start -
#           release of `control`). Publishes /uav/pose, /uav/odom, /uav/reference at 250 Hz.
#
# Runs PAIRS pairs, one plain run and one with `--ros2`, swapping the order in every other
# pair so that a drift of the machine falls on both. Every run has an independent Cyclone DDS
# subscriber (scripts/ros2_cyclone_peer.py) taking the demo's topics, so the --ros2 runs
# really send and the plain runs carry the same extra process, and runs in a network
# namespace of its own with only loopback up (scripts/ros2_loopback.sh): no DDS traffic
# leaves the machine. Prints each run, the medians over the pairs and their ratios, and each
# pair's ratios.
#
# Usage: scripts/bench_ros2.sh [gimbal|uav] [PAIRS] [SECONDS]
#   gimbal|uav  the demonstrator (default gimbal)
#   PAIRS       alternating pairs (default 6)
#   SECONDS     length of each run (default 5)
# Needs root (SCHED_FIFO, the network namespaces) and python3 with cyclonedds (pip install
# cyclonedds).
# Environment: GIMBAL_DEMO=path to gimbal-demo, UAV_DEMO=path to uav-demo (uav-sim next to
# it), built with the `ros2` feature (default: build them in release mode, the configuration
# users run).
set -euo pipefail

DEMO=gimbal
if [[ ${1:-} == gimbal || ${1:-} == uav ]]; then
    DEMO=$1
    shift
fi
PAIRS=${1:-6}
SECS=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
target="$(cd "$here/.." && pwd)/${CARGO_TARGET_DIR:-target}/release"

if [[ $DEMO == gimbal ]]; then
    if [[ -z "${GIMBAL_DEMO:-}" ]]; then
        cargo build --release -q -p preempt-gimbal --features ros2 --bin gimbal-demo --bin gimbal-plant
        GIMBAL_DEMO="$target/gimbal-demo"
    fi
    cmd=("$GIMBAL_DEMO" --duration "$SECS")
    subs=(--sub /gimbal/joint_states=sensor_msgs/msg/JointState)
else
    if [[ -z "${UAV_DEMO:-}" ]]; then
        cargo build --release -q -p preempt-uav --features ros2 --bin uav-demo --bin uav-sim
        UAV_DEMO="$target/uav-demo"
    fi
    cmd=("$UAV_DEMO" --duration "$SECS")
    subs=(--sub /uav/pose=geometry_msgs/msg/PoseStamped --sub /uav/odom=nav_msgs/msg/Odometry
          --sub /uav/reference=geometry_msgs/msg/PoseStamped)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# $(uname -srvm)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "# $(rustc --version 2>/dev/null || echo 'rustc ?'), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# command: scripts/bench_ros2.sh $DEMO $PAIRS $SECS"
echo "# each run: ${cmd[*]} [--ros2] (+ a Cyclone DDS subscriber), own netns, lo only"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"

one() { # variant pair
    local extra=() out="$work/$1-$2"
    [[ $1 == ros2 ]] && extra=(--ros2)
    "$here/ros2_loopback.sh" "$out" "${subs[@]}" --duration $((SECS + 60)) -- \
        "${cmd[@]}" "${extra[@]}" --out "$out/run" >/dev/null 2>"$out.err" || {
        echo "bench_ros2: the $1 run of pair $2 failed:" >&2
        cat "$out.err" >&2
        exit 1
    }
}

for p in $(seq 1 "$PAIRS"); do
    if (( p % 2 )); then one plain "$p"; one ros2 "$p"; else one ros2 "$p"; one plain "$p"; fi
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "$PAIRS" "$DEMO" <<'PY'
import json, statistics, sys
work, pairs, demo = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def load(variant, p):
    """(soft or interrupted, cpu summary, latency summary, missed, ros2 counts, peer count)."""
    d = json.load(open(f"{work}/{variant}-{p}/run/{demo}.json"))["data"]
    peer = json.load(open(f"{work}/{variant}-{p}/peer.json"))
    got = sum(t["count"] for t in peer["topics"].values())
    if demo == "gimbal":
        return (d["soft"] or d["interrupted"], d["controller_cpu_per_sample_ns"],
                d["sample_lateness_ns"], d["samples"]["missed"], d.get("ros2") or {}, got)
    c = d["cells"][0]
    return (c["soft"] or c["interrupted"], c["control_exec_ns"], c["latency"],
            c["missed_periods"], c.get("ros2") or {}, got)

rows = {"plain": [], "ros2": []}
print(f"{'run':<9}{'cpu p50':>9}{'cpu p99':>9}{'late p50':>10}{'late p99':>10}{'missed':>8}{'published':>11}{'dropped':>9}{'peer got':>10}")
for p in range(1, pairs + 1):
    for v in ("plain", "ros2"):
        bad, c, l, missed, r, got = load(v, p)
        if bad:
            sys.exit(f"bench_ros2: the {v} run of pair {p} was soft or interrupted: not comparable")
        rows[v].append((c["p99"], l["p99"]))
        print(f"{v}-{p:<4}{c['p50']/1e3:>9.2f}{c['p99']/1e3:>9.2f}{l['p50']/1e3:>10.2f}{l['p99']/1e3:>10.2f}"
              f"{missed:>8}{r.get('published', '-'):>11}{r.get('dropped', '-'):>9}{got:>10}")
print("(times in us; cpu: controller CPU per sample; late: release latency)")
for i, name in ((0, "controller CPU per sample p99"), (1, "release latency p99")):
    plain = statistics.median(x[i] for x in rows["plain"])
    ros2 = statistics.median(x[i] for x in rows["ros2"])
    pairs_r = [r[i] / q[i] for q, r in zip(rows["plain"], rows["ros2"])]
    print(f"{name}: median plain {plain/1e3:.2f} us, ros2 {ros2/1e3:.2f} us, ratio ros2/plain "
          f"{ros2/plain:.3f} (target <= 1.05); per pair {', '.join(f'{r:.3f}' for r in pairs_r)}")
PY
