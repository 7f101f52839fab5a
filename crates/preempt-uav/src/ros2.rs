//! The UAV on ROS 2 (cargo feature `ros2`, flag `--ros2`): a ROS 2 node on the
//! non-real-time side, on the same path as the gimbal's (`preempt-gimbal`'s `ros2` module):
//!
//! ```text
//!  recorder thread ── every record (250 Hz) ──► /uav/pose      geometry_msgs/PoseStamped
//!                                            ├► /uav/odom      nav_msgs/Odometry
//!                                            └► /uav/reference geometry_msgs/PoseStamped
//!  /uav/waypoint (geometry_msgs/PoseStamped, m)
//!      └─► ros2-sub thread ─► bridge ─► control (try_recv, next step) ─► position setpoint
//! ```
//!
//! Node `preempt_uav` in `/`, domain `ROS_DOMAIN_ID` (0 if unset). Every message is stamped
//! with its control step's release on the app's 250 Hz grid, as wall-clock time: step `k` is
//! `base + k·4 ms`, the instant the MCAP logs it at, so a ROS 2 recording and the MCAP line
//! up step for step. The pose is the sensed one (the simulator's motion-capture reading) in
//! frame `map` (x, y on the ground, z up, origin at take-off); the odometry's twist is in
//! the body frame `base_link` (REP 105); the reference is the position the cascade tracked
//! at that step (the mission's, or the live waypoint's), at yaw 0 (the mission's). A
//! waypoint's position counts (its orientation is not used); it must lie in the flight box
//! (`control::check_waypoint`); one the controller takes is counted in `live_waypoints`, the
//! refused ones by reason in `ros2.setpoints_refused` (their stderr lines are rate-limited).

use std::sync::Arc;

use preempt::bridge::Sender;
use preempt_rig::intake::Intake;
use preempt_rig::result::Ros2Counts;
use preempt_ros2::msg::{
    Covariance, Header, Odometry, Point, Pose, PoseStamped, PoseWithCovariance, Quaternion, Time,
    Twist, TwistWithCovariance, Vector3,
};
use preempt_ros2::{NodeConfig, Publisher, Qos, Ros2Node, SubscriptionHandle};

use crate::control::{PERIOD_NS, check_waypoint};
use crate::model::{V3, quat_rpy, rot_rpy};
use crate::record::FlightRecord;

/// The node's name.
pub const NODE: &str = "preempt_uav";
/// The sensed pose's topic.
pub const POSE: &str = "/uav/pose";
/// The odometry's topic.
pub const ODOM: &str = "/uav/odom";
/// The tracked reference's topic.
pub const REFERENCE: &str = "/uav/reference";
/// The waypoint topic.
pub const WAYPOINT: &str = "/uav/waypoint";
/// The world frame.
pub const FRAME: &str = "map";
/// The body frame (the odometry's twist).
pub const BODY_FRAME: &str = "base_link";
/// Messages queued per topic for its publisher thread before one is dropped: 1 s at 250 Hz.
const QUEUE: usize = 250;

/// Checks everything `--ros2` needs before anything starts: `ROS_DOMAIN_ID`, the names, a
/// network interface.
///
/// # Errors
/// What is wrong, naming the variable or the fix.
pub fn check() -> Result<NodeConfig, String> {
    NodeConfig::checked(NODE, &[POSE, ODOM, REFERENCE, WAYPOINT])
}

/// The running node.
#[derive(Debug)]
pub struct Ros2Live {
    node: Ros2Node,
    pose: Publisher<PoseStamped>,
    odom: Publisher<Odometry>,
    reference: Publisher<PoseStamped>,
    waypoints: SubscriptionHandle,
    intake: Arc<Intake<V3>>,
    base_ns: u64,
}

impl Ros2Live {
    /// Joins the domain; waypoints go to `waypoints`. `base_ns` is the wall-clock time of
    /// grid time 0 (the MCAP's).
    ///
    /// # Errors
    /// [`check`]'s, or DDS refusing to start.
    pub fn start(base_ns: u64, waypoints: Sender<V3>) -> Result<Ros2Live, String> {
        let intake = Arc::new(Intake::new("uav: ROS 2 waypoint", waypoints));
        let cfg = check()?;
        let mut node = Ros2Node::start(&cfg)?;
        let pose = node.publisher(POSE, Qos::SensorData, QUEUE)?;
        let odom = node.publisher(ODOM, Qos::SensorData, QUEUE)?;
        let reference = node.publisher(REFERENCE, Qos::SensorData, QUEUE)?;
        let i = Arc::clone(&intake);
        let handle =
            node.subscribe::<PoseStamped>(WAYPOINT, Qos::Command, move |m| deliver(&i, &m))?;
        node.spawn_subscriptions()?;
        Ok(Ros2Live {
            node,
            pose,
            odom,
            reference,
            waypoints: handle,
            intake,
            base_ns,
        })
    }

    /// The node's domain.
    pub fn domain_id(&self) -> u16 {
        self.node.config().domain_id
    }

    /// Publishes step `r` on the three topics (never blocks).
    pub fn state(&mut self, r: &FlightRecord) {
        let (pose, odom, reference) = messages(self.base_ns, r);
        self.pose.publish(pose);
        self.odom.publish(odom);
        self.reference.publish(reference);
    }

    /// Publishes what is queued, leaves the domain, returns the counts (the three topics'
    /// summed; the waypoints as the inbound commands).
    pub fn finish(self) -> Ros2Counts {
        let domain_id = self.domain_id();
        let published = [
            self.pose.finish(),
            self.odom.finish(),
            self.reference.finish(),
        ];
        self.node.stop();
        // After the subscription thread stopped: nothing arrives any more.
        let waypoints = self.waypoints.counts();
        let refused = self.intake.finish().refused;
        Ros2Counts::of(
            NODE,
            domain_id,
            published.into_iter().sum(),
            waypoints,
            refused,
        )
    }
}

/// The three messages of step `r`, stamped `base_ns + k·4 ms`: the sensed pose, the
/// odometry, the tracked reference.
pub fn messages(base_ns: u64, r: &FlightRecord) -> (PoseStamped, Odometry, PoseStamped) {
    let header = Header {
        stamp: Time::from_nanos(base_ns + r.k * PERIOD_NS),
        frame_id: FRAME.into(),
    };
    let s = &r.sensors;
    let f = |a: [f32; 3]| a.map(f64::from);
    let (p, v, rpy, w) = (f(s.p), f(s.v), f(s.rpy), f(s.w));
    let [qw, qx, qy, qz] = quat_rpy(rpy);
    let pose = Pose {
        position: point(p),
        orientation: Quaternion {
            x: qx,
            y: qy,
            z: qz,
            w: qw,
        },
    };
    // The twist in the body frame: Rᵀ v (R: body to world); the rates are body rates already.
    let rm = rot_rpy(rpy);
    let vb: V3 = std::array::from_fn(|i| (0..3).map(|j| rm[j][i] * v[j]).sum());
    let odom = Odometry {
        header: header.clone(),
        child_frame_id: BODY_FRAME.into(),
        pose: PoseWithCovariance {
            pose,
            covariance: Covariance::default(),
        },
        twist: TwistWithCovariance {
            twist: Twist {
                linear: vector(vb),
                angular: vector(w),
            },
            covariance: Covariance::default(),
        },
    };
    let reference = PoseStamped {
        header: header.clone(),
        pose: Pose {
            position: point(f(r.setpoint)),
            orientation: Quaternion::default(),
        },
    };
    (PoseStamped { header, pose }, odom, reference)
}

fn point(p: V3) -> Point {
    Point {
        x: p[0],
        y: p[1],
        z: p[2],
    }
}

fn vector(v: V3) -> Vector3 {
    Vector3 {
        x: v[0],
        y: v[1],
        z: v[2],
    }
}

/// Hands a waypoint's position to the controller's bridge; refuses (counted by reason,
/// logged at a bounded rate) one outside the flight box, a NaN, or a full queue.
fn deliver(intake: &Intake<V3>, m: &PoseStamped) -> bool {
    let p = &m.pose.position;
    intake.offer(
        check_waypoint([p.x, p.y, p.z])
            .map_err(|(why, e)| (why, format!("{WAYPOINT} refused: {e}"))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::SensorFrame;

    #[test]
    fn a_step_becomes_pose_odometry_and_reference_stamped_on_the_grid() {
        let r = FlightRecord {
            k: 25,
            sensors: SensorFrame {
                p: [0.5, -0.25, 1.0],
                v: [1.0, 0.0, 0.0],
                rpy: [0.0, 0.0, std::f32::consts::FRAC_PI_2],
                w: [0.0, 0.0, 0.5],
                ..SensorFrame::default()
            },
            setpoint: [1.0, 0.0, 1.0],
            ..FlightRecord::default()
        };
        let (pose, odom, reference) = messages(1_000_000_000, &r);
        assert_eq!(pose.header.stamp, Time::from_nanos(1_100_000_000));
        assert_eq!(pose.header.frame_id, "map");
        assert_eq!((pose.pose.position.x, pose.pose.position.z), (0.5, 1.0));
        // Yaw 90°: (0, 0, sin 45°, cos 45°).
        let q = pose.pose.orientation;
        assert!(
            (q.z - q.w).abs() < 1e-7 && (q.w - 0.5_f64.sqrt()).abs() < 1e-7,
            "{q:?}"
        );
        assert_eq!(odom.header, pose.header);
        assert_eq!(odom.child_frame_id, "base_link");
        assert_eq!(odom.pose.pose, pose.pose);
        // World +x seen from a body yawed by 90°: body -y.
        let l = odom.twist.twist.linear;
        assert!(
            l.x.abs() < 1e-7 && (l.y + 1.0).abs() < 1e-7 && l.z.abs() < 1e-7,
            "{l:?}"
        );
        assert_eq!(odom.twist.twist.angular.z, 0.5);
        assert_eq!(reference.header, pose.header);
        assert_eq!(reference.pose.position.x, 1.0);
        assert_eq!(reference.pose.orientation, Quaternion::default());
    }

    fn at(x: f64, z: f64) -> PoseStamped {
        PoseStamped {
            pose: Pose {
                position: Point { x, y: 0.0, z },
                ..Pose::default()
            },
            ..PoseStamped::default()
        }
    }

    #[test]
    fn waypoints_reach_the_bridge_and_bad_ones_are_refused() {
        let (tx, mut rx) = preempt::bridge::channel(1);
        let intake = Intake::new("test: waypoint", tx);
        assert!(deliver(&intake, &at(0.5, 1.5)));
        assert!(!deliver(&intake, &at(f64::NAN, 1.0)));
        assert!(!deliver(&intake, &at(0.0, 9.0)), "above the box");
        assert!(!deliver(&intake, &at(0.0, 1.0)), "queue of one is full");
        assert_eq!(rx.try_recv(), Some([0.5, 0.0, 1.5]));
        assert_eq!(rx.try_recv(), None);
        let c = intake.finish();
        assert_eq!(c.accepted, 1);
        assert_eq!(
            (c.refused.nan, c.refused.out_of_range, c.refused.queue_full),
            (1, 1, 1)
        );
    }

    /// Issue 40: 100 000 refused waypoints (216 801 in 14 s wrote 151 580 stderr lines)
    /// write a bounded number of lines.
    #[test]
    fn a_flood_of_refused_waypoints_writes_a_bounded_number_of_lines() {
        let (log, lines) = preempt_io::ratelog::RateLimitedLog::collecting(
            "test: refused",
            preempt_io::ratelog::BURST,
            preempt_io::ratelog::INTERVAL,
        );
        let (tx, _rx) = preempt::bridge::channel(1);
        let intake = Intake::with_log("uav: ROS 2 waypoint", log, tx);
        for i in 0..100_000 {
            deliver(&intake, &at(f64::from(i), 1.0));
        }
        let c = intake.finish();
        // The first is inside the box and fills the queue of one; the rest are refused.
        assert_eq!(c.accepted + c.refused.total(), 100_000);
        let lines = lines.lock().unwrap();
        assert!(lines.len() <= 20, "{} lines", lines.len());
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("uav: ROS 2 waypoint: /uav/waypoint refused")),
            "{lines:?}"
        );
    }
}
