#!/usr/bin/env python3
"""An independent ROS 2 peer on Eclipse Cyclone DDS (PyPI `cyclonedds`, the DDS under ROS 2's
rmw_cyclonedds_cpp), with no ROS installation: its IDL types are written from the ROS 2 message
definitions (sensor_msgs/JointState, std_msgs/Float64, geometry_msgs/PoseStamped,
nav_msgs/Odometry) under the names ROS 2 gives them on the wire (`pkg::msg::dds_::Type_`,
topics `rt/...`).

It subscribes to a preempt demo's topics, optionally publishes setpoints (a std_msgs/Float64
value) or waypoints (a geometry_msgs/PoseStamped position x,y,z), each once, in order, once its
writer has matched the demo's reader (the i-th after --pub-after + i x PUB_GAP messages on the
first --sub topic), and writes what it received to --out as JSON:

    {"topics": {"/gimbal/joint_states": {"type": ..., "count": N, "samples": [...]}},
     "published": [{"topic": ..., "data": ..., "after_received": N}]}

Used by crates/preempt-gimbal/tests/ros2_interop.rs, crates/preempt-uav/tests/ros2_interop.rs
(which compare it with the demos' own JSON and MCAP) and scripts/bench_ros2.sh (as a live
subscriber). Run it where DDS is confined
to the loopback interface (CYCLONEDDS_URI below; the test runs it in its own network
namespace).
"""

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field

from cyclonedds.core import Qos, Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float64, int32, sequence, uint32
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic


@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32 = 0
    nanosec: uint32 = 0


@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time = field(default_factory=Time)
    frame_id: str = ""


@dataclass
class JointState(IdlStruct, typename="sensor_msgs::msg::dds_::JointState_"):
    header: Header = field(default_factory=Header)
    name: sequence[str] = field(default_factory=list)
    position: sequence[float64] = field(default_factory=list)
    velocity: sequence[float64] = field(default_factory=list)
    effort: sequence[float64] = field(default_factory=list)


@dataclass
class Float64(IdlStruct, typename="std_msgs::msg::dds_::Float64_"):
    data: float64 = 0.0


@dataclass
class Point(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Quaternion(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@dataclass
class Pose(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    position: Point = field(default_factory=Point)
    orientation: Quaternion = field(default_factory=Quaternion)


@dataclass
class PoseStamped(IdlStruct, typename="geometry_msgs::msg::dds_::PoseStamped_"):
    header: Header = field(default_factory=Header)
    pose: Pose = field(default_factory=Pose)


@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Twist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3 = field(default_factory=Vector3)
    angular: Vector3 = field(default_factory=Vector3)


@dataclass
class PoseWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::PoseWithCovariance_"):
    pose: Pose = field(default_factory=Pose)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class TwistWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::TwistWithCovariance_"):
    twist: Twist = field(default_factory=Twist)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class Odometry(IdlStruct, typename="nav_msgs::msg::dds_::Odometry_"):
    header: Header = field(default_factory=Header)
    child_frame_id: str = ""
    pose: PoseWithCovariance = field(default_factory=PoseWithCovariance)
    twist: TwistWithCovariance = field(default_factory=TwistWithCovariance)


TYPES = {
    "sensor_msgs/msg/JointState": JointState,
    "std_msgs/msg/Float64": Float64,
    "geometry_msgs/msg/PoseStamped": PoseStamped,
    "nav_msgs/msg/Odometry": Odometry,
}

# rmw_qos_profile_sensor_data (best effort, keep last) for state; a deep history so that a
# reader taking every 10 ms keeps every sample of a 1 kHz topic.
SENSOR_QOS = Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(10000),
                 Policy.Durability.Volatile)
# A setpoint: reliable, transient-local, keep last 1 (matches the demo's reliable volatile
# reader; a late-matching reader still gets the value).
SETPOINT_QOS = Qos(Policy.Reliability.Reliable(max_blocking_time=1_000_000_000),
                   Policy.History.KeepLast(1), Policy.Durability.TransientLocal)


# Messages received between two --pub values: apart, so that the keep-last-1 writer has sent
# (and the reader acknowledged) one before the next replaces it in its history.
PUB_GAP = 100


def stamp_ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def summary(msg):
    """What the checks need of one received message."""
    if isinstance(msg, JointState):
        return {"stamp_ns": stamp_ns(msg), "frame_id": msg.header.frame_id, "name": list(msg.name),
                "position": list(msg.position), "velocity": list(msg.velocity)}
    if isinstance(msg, PoseStamped):
        p, q = msg.pose.position, msg.pose.orientation
        return {"stamp_ns": stamp_ns(msg), "frame_id": msg.header.frame_id,
                "position": [p.x, p.y, p.z], "orientation": [q.x, q.y, q.z, q.w]}
    if isinstance(msg, Odometry):
        p, v = msg.pose.pose.position, msg.twist.twist.linear
        return {"stamp_ns": stamp_ns(msg), "frame_id": msg.header.frame_id,
                "child_frame_id": msg.child_frame_id, "position": [p.x, p.y, p.z],
                "linear": [v.x, v.y, v.z]}
    return {"data": msg.data}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sub", action="append", default=[], metavar="TOPIC=TYPE",
                    help="subscribe, e.g. /gimbal/joint_states=sensor_msgs/msg/JointState")
    ap.add_argument("--pub", action="append", default=[], metavar="TOPIC=VALUE",
                    help="publish once matched: a std_msgs/Float64 (/gimbal/setpoint/pan=0.3) or, "
                         "given x,y,z, a geometry_msgs/PoseStamped (/uav/waypoint=0.5,-0.5,1.2); "
                         "repeatable: published in order, PUB_GAP received messages apart")
    ap.add_argument("--pub-after", type=int, default=100,
                    help="messages to receive on the first --sub topic before publishing")
    ap.add_argument("--duration", type=float, required=True, help="seconds to listen")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ready", help="file created once the readers exist")
    ap.add_argument("--until", help="stop listening 0.5 s after this file appears")
    args = ap.parse_args()

    domain = int(os.environ.get("ROS_DOMAIN_ID", "0") or "0")
    dp = DomainParticipant(domain)
    readers = []
    for spec in args.sub:
        topic, typ = spec.split("=", 1)
        t = Topic(dp, "rt" + topic, TYPES[typ])
        readers.append((topic, typ, DataReader(dp, t, qos=SENSOR_QOS), []))
    writers, to_publish, published = {}, [], []
    for spec in args.pub:
        topic, value = spec.split("=", 1)
        xyz = [float(v) for v in value.split(",")]
        if len(xyz) == 3:
            msg = PoseStamped(header=Header(frame_id="map"),
                              pose=Pose(position=Point(x=xyz[0], y=xyz[1], z=xyz[2])))
            data = xyz
        else:
            (data,) = xyz
            msg = Float64(data=data)
        if topic not in writers:
            writers[topic] = DataWriter(dp, Topic(dp, "rt" + topic, type(msg)), qos=SETPOINT_QOS)
        to_publish.append((topic, data, msg))
    if args.ready:
        open(args.ready, "w").close()

    end = time.monotonic() + args.duration
    while time.monotonic() < end:
        if args.until and os.path.exists(args.until):
            end = min(end, time.monotonic() + 0.5)
            args.until = None
        for _, _, reader, got in readers:
            for s in reader.take(N=10000):
                if s.sample_info.valid_data:
                    got.append(summary(s))
        if to_publish and readers:
            first = len(readers[0][3])
            topic, data, msg = to_publish[0]
            due = args.pub_after + PUB_GAP * len(published)
            if first >= due and writers[topic].get_matched_subscriptions():
                writers[topic].write(msg)
                published.append({"topic": topic, "data": data, "after_received": first})
                to_publish.pop(0)
        time.sleep(0.01)

    out = {"domain_id": domain, "topics": {}, "published": published}
    for topic, typ, _, got in readers:
        out["topics"][topic] = {"type": typ, "count": len(got), "samples": got}
    with open(args.out, "w") as f:
        json.dump(out, f)
    print(f"ros2 peer: {', '.join(f'{t}: {len(g)}' for t, _, _, g in readers)}; "
          f"published {len(published)}", file=sys.stderr)


if __name__ == "__main__":
    main()
