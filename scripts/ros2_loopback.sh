#!/usr/bin/env bash
# Runs a command (a preempt demo with --ros2) next to the independent Cyclone DDS peer
# (scripts/ros2_cyclone_peer.py), with DDS confined to the loopback interface: both run in a
# network namespace of their own whose only interface is lo (multicast on, for RTPS
# discovery), and CYCLONEDDS_URI pins Cyclone to lo as well. No DDS traffic leaves the machine.
#
# Usage: scripts/ros2_loopback.sh DIR PEER_ARGS... -- COMMAND...
#   DIR        where the peer writes peer.json (and ready, done, peer.err, udp.txt)
#   PEER_ARGS  the peer's --sub/--pub/--pub-after/--duration (default 120 s; it gets --ready,
#              --until, --out)
#   COMMAND    run once the peer's readers exist; its exit status is this script's
# Makes the namespace itself (`unshare --net`, as root; else `unshare --map-root-user --net`)
# unless ROS2_LOOPBACK_NETNS=1 says the caller is in one already (scripts/bench_ros2.sh runs
# several commands in one). Used by the gimbal's and the UAV's ROS 2 interop tests and by
# scripts/bench_ros2.sh.
set -euo pipefail

if [[ "${ROS2_LOOPBACK_NETNS:-}" != 1 ]]; then
    export ROS2_LOOPBACK_NETNS=1
    if unshare --net true 2>/dev/null; then
        exec unshare --net "$0" "$@"
    fi
    exec unshare --map-root-user --net "$0" "$@"
fi

dir=$1
shift
peer_args=()
while [[ $# -gt 0 && $1 != -- ]]; do
    peer_args+=("$1")
    shift
done
[[ $# -gt 1 ]] || { echo "usage: $0 DIR PEER_ARGS... -- COMMAND..." >&2; exit 2; }
shift

ip link set lo up
ip link set lo multicast on
ip route replace 224.0.0.0/4 dev lo
export CYCLONEDDS_URI='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces><AllowMulticast>true</AllowMulticast></General></Domain></CycloneDDS>'

mkdir -p "$dir"
rm -f "$dir/ready" "$dir/done"
python3 "$(dirname "$0")/ros2_cyclone_peer.py" --duration 120 "${peer_args[@]}" \
    --ready "$dir/ready" --until "$dir/done" --out "$dir/peer.json" 2>"$dir/peer.err" &
peer=$!
for _ in $(seq 100); do [[ -e "$dir/ready" ]] && break; sleep 0.1; done
[[ -e "$dir/ready" ]] || { echo "ros2_loopback: the peer did not start:" >&2; cat "$dir/peer.err" >&2; exit 1; }
status=0
"$@" || status=$?
touch "$dir/done"
wait "$peer" || { echo "ros2_loopback: the peer failed:" >&2; cat "$dir/peer.err" >&2; exit 1; }
# UDP datagrams the receivers' sockets dropped (full buffers) in this namespace.
grep Udp: /proc/net/snmp >"$dir/udp.txt"
exit "$status"
