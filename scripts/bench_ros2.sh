#!/usr/bin/env bash
# Cost of the gimbal demo's ROS 2 node (`--ros2`) to the real-time side: the controller's CPU
# per sample p99 and its release latency (`sample` start - release) p99, with and without
# `--ros2`, alternated in one invocation on the same CPUs (target: ros2/plain <= 1.05).
#
# Runs PAIRS pairs of the gimbal demo (`gimbal-demo`, the code of `preempt demo gimbal`),
# one plain and one with `--ros2`, swapping the order in every other pair so that a drift of
# the machine falls on both. During every run an independent Cyclone DDS subscriber
# (scripts/ros2_cyclone_peer.py) takes /gimbal/joint_states, so the --ros2 runs really send
# (1 kHz) and the plain runs carry the same extra process. Everything runs in a network
# namespace of its own with only loopback up (multicast on): no DDS traffic leaves the machine.
# Prints each run, the medians over the pairs and their ratios, and each pair's ratios.
#
# Usage: scripts/bench_ros2.sh [PAIRS] [SECONDS]
#   PAIRS    alternating pairs (default 6)
#   SECONDS  length of each run (default 5)
# Needs root (SCHED_FIFO, the network namespace) and python3 with cyclonedds (pip install
# cyclonedds).
# Environment: GIMBAL_DEMO=path to gimbal-demo built with --features ros2 (default: build it in
# release mode, the configuration users run).
set -euo pipefail

PAIRS=${1:-6}
SECS=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)

if [[ -z "${BENCH_ROS2_NETNS:-}" ]]; then
    if [[ -z "${GIMBAL_DEMO:-}" ]]; then
        cargo build --release -q -p preempt-gimbal --features ros2 --bin gimbal-demo --bin gimbal-plant
        GIMBAL_DEMO="$(cd "$here/.." && pwd)/${CARGO_TARGET_DIR:-target}/release/gimbal-demo"
    fi
    export GIMBAL_DEMO BENCH_ROS2_NETNS=1
    exec unshare --net "$0" "$@"
fi
ip link set lo up
ip link set lo multicast on
ip route add 224.0.0.0/4 dev lo
export CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces><AllowMulticast>true</AllowMulticast></General></Domain></CycloneDDS>'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# $(uname -srvm)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "# $(rustc --version 2>/dev/null || echo 'rustc ?'), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# command: scripts/bench_ros2.sh $PAIRS $SECS"
echo "# each run: $GIMBAL_DEMO --duration $SECS [--ros2] (+ a Cyclone DDS subscriber), own netns, lo only"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"

one() { # variant pair
    local extra=() out="$work/$1-$2"
    [[ $1 == ros2 ]] && extra=(--ros2)
    mkdir -p "$out"
    python3 "$here/ros2_cyclone_peer.py" --sub /gimbal/joint_states=sensor_msgs/msg/JointState \
        --duration $((SECS + 60)) --until "$out/done" --ready "$out/ready" --out "$out/peer.json" \
        2>"$out/peer.err" &
    local peer=$!
    for _ in $(seq 100); do [[ -e "$out/ready" ]] && break; sleep 0.1; done
    "$GIMBAL_DEMO" --duration "$SECS" "${extra[@]}" --out "$out" >/dev/null 2>"$out/err" || {
        echo "bench_ros2: the $1 run of pair $2 failed:" >&2
        cat "$out/err" >&2
        exit 1
    }
    touch "$out/done"
    wait "$peer"
}

for p in $(seq 1 "$PAIRS"); do
    if (( p % 2 )); then one plain "$p"; one ros2 "$p"; else one ros2 "$p"; one plain "$p"; fi
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "$PAIRS" <<'PY'
import json, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])

def load(variant, p):
    d = json.load(open(f"{work}/{variant}-{p}/gimbal.json"))["data"]
    peer = json.load(open(f"{work}/{variant}-{p}/peer.json"))
    got = peer["topics"]["/gimbal/joint_states"]["count"]
    return d, got

rows = {"plain": [], "ros2": []}
print(f"{'run':<9}{'cpu p50':>9}{'cpu p99':>9}{'late p50':>10}{'late p99':>10}{'missed':>8}{'published':>11}{'dropped':>9}{'peer got':>10}")
for p in range(1, pairs + 1):
    for v in ("plain", "ros2"):
        d, got = load(v, p)
        if d["soft"] or d["interrupted"]:
            sys.exit(f"bench_ros2: the {v} run of pair {p} was soft or interrupted: not comparable")
        c, l = d["controller_cpu_per_sample_ns"], d["sample_lateness_ns"]
        r = d.get("ros2") or {}
        rows[v].append((c["p99"], l["p99"]))
        print(f"{v}-{p:<4}{c['p50']/1e3:>9.2f}{c['p99']/1e3:>9.2f}{l['p50']/1e3:>10.2f}{l['p99']/1e3:>10.2f}"
              f"{d['samples']['missed']:>8}{r.get('published', '-'):>11}{r.get('dropped', '-'):>9}{got:>10}")
print("(times in us; cpu: controller CPU per sample; late: sample release latency)")
for i, name in ((0, "controller CPU per sample p99"), (1, "release latency p99")):
    plain = statistics.median(x[i] for x in rows["plain"])
    ros2 = statistics.median(x[i] for x in rows["ros2"])
    pairs_r = [r[i] / q[i] for q, r in zip(rows["plain"], rows["ros2"])]
    print(f"{name}: median plain {plain/1e3:.2f} us, ros2 {ros2/1e3:.2f} us, ratio ros2/plain "
          f"{ros2/plain:.3f} (target <= 1.05); per pair {', '.join(f'{r:.3f}' for r in pairs_r)}")
PY
