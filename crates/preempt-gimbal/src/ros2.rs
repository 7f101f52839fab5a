//! The gimbal on ROS 2 (cargo feature `ros2`, flag `--ros2`): a ROS 2 node on the
//! non-real-time side, mirroring the Foxglove path (`live`, cargo feature `foxglove`):
//!
//! ```text
//!  recorder thread ── every LIVE_EVERY-th record ──► /gimbal/joint_states (sensor_msgs/JointState, 1 kHz)
//!  /gimbal/setpoint/pan, /gimbal/setpoint/tilt (std_msgs/Float64, rad)
//!      └─► ros2-sub thread ─► bridge ─► sample (try_recv, next sample) ─► setpoint
//! ```
//!
//! Node `preempt_gimbal` in `/`, domain `ROS_DOMAIN_ID` (0 if unset). The joint states are
//! stamped with the sample's release on the app's grid, as wall-clock time: sample `k` is
//! `base + k·100 µs`, the same instant the MCAP logs it at (`log_time`), so a ROS 2 recording
//! and the MCAP line up sample for sample. `position` is the encoder angle `[pan, tilt]` (rad);
//! velocity and effort are not measured (empty). A setpoint must be within ±π rad, as a
//! `--steps` one (`control::check_setpoint`, the same function); one the controller takes
//! counts in `data.live_setpoints` as a Foxglove one does, and `ros2.setpoints_refused`
//! counts the refused ones by reason (their stderr lines are rate-limited).

use std::sync::Arc;

use preempt_rig::intake::Intake;
use preempt_ros2::msg::{Float64, Header, JointState, Time};
use preempt_ros2::{NodeConfig, Publisher, Qos, Ros2Node, SubscriptionHandle};

use crate::control::{AXES, SAMPLE_NS, check_setpoint};
use crate::record::{SampleRecord, SetpointCmd};
use crate::result::Ros2Counts;
use crate::telemetry::LIVE_EVERY;

/// The node's name.
pub const NODE: &str = "preempt_gimbal";
/// The joint states' topic.
pub const JOINT_STATES: &str = "/gimbal/joint_states";
/// The setpoint topics, one per axis ([`AXES`] order).
pub const SETPOINTS: [&str; 2] = ["/gimbal/setpoint/pan", "/gimbal/setpoint/tilt"];
/// The joint states' frame.
pub const FRAME: &str = "gimbal_base";
/// Joint states queued for the publisher thread before one is dropped: 1 s at 1 kHz.
const QUEUE: usize = 1000;

/// Checks everything `--ros2` needs before anything starts: `ROS_DOMAIN_ID`, the names, a
/// network interface.
///
/// # Errors
/// What is wrong, naming the variable or the fix.
pub fn check() -> Result<NodeConfig, String> {
    NodeConfig::checked(NODE, &[JOINT_STATES, SETPOINTS[0], SETPOINTS[1]])
}

/// The running node.
#[derive(Debug)]
pub struct Ros2Live {
    node: Ros2Node,
    joints: Publisher<JointState>,
    setpoints: SubscriptionHandle,
    intake: Arc<Intake<SetpointCmd>>,
    base_ns: u64,
}

impl Ros2Live {
    /// Joins the domain; setpoints go to `setpoints`. `base_ns` is the wall-clock time of
    /// grid time 0 (the MCAP's).
    ///
    /// # Errors
    /// [`check`]'s, or DDS refusing to start.
    pub fn start(base_ns: u64, intake: Intake<SetpointCmd>) -> Result<Ros2Live, String> {
        let intake = Arc::new(intake);
        let cfg = check()?;
        let mut node = Ros2Node::start(&cfg)?;
        let joints = node.publisher::<JointState>(JOINT_STATES, Qos::SensorData, QUEUE)?;
        let counts = SETPOINTS
            .iter()
            .enumerate()
            .map(|(axis, topic)| {
                let intake = Arc::clone(&intake);
                node.subscribe::<Float64>(topic, Qos::Command, move |m| {
                    deliver(&intake, axis, m.data)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        node.spawn_subscriptions()?;
        Ok(Ros2Live {
            node,
            joints,
            setpoints: SubscriptionHandle::merged(&counts),
            intake,
            base_ns,
        })
    }

    /// The node's domain.
    pub fn domain_id(&self) -> u16 {
        self.node.config().domain_id
    }

    /// Publishes `r` if it is one of every [`LIVE_EVERY`] samples (never blocks).
    pub fn state(&mut self, r: &SampleRecord) {
        if r.k % LIVE_EVERY != 0 {
            return;
        }
        self.joints.publish(joint_state(self.base_ns, r));
    }

    /// Publishes what is queued, leaves the domain, writes the refusals' summary, returns
    /// the counts.
    pub fn finish(self) -> Ros2Counts {
        let domain_id = self.domain_id();
        let published = self.joints.finish();
        self.node.stop();
        // After the subscription thread stopped: nothing arrives any more.
        let setpoints = self.setpoints.counts();
        let refused = self.intake.finish().refused;
        Ros2Counts::of(NODE, domain_id, published, setpoints, refused)
    }
}

/// Sample `r` as a `sensor_msgs/JointState` stamped `base_ns + k·100 µs`.
pub fn joint_state(base_ns: u64, r: &SampleRecord) -> JointState {
    JointState {
        header: Header {
            stamp: Time::from_nanos(base_ns + r.k * SAMPLE_NS),
            frame_id: FRAME.into(),
        },
        name: AXES.iter().map(|a| (*a).to_string()).collect(),
        position: r.angle.to_vec(),
        velocity: Vec::new(),
        effort: Vec::new(),
    }
}

/// Hands a setpoint to the controller's bridge; refuses (counted by reason, logged at a
/// bounded rate) an angle beyond ±π rad, a NaN, or a full queue.
fn deliver(intake: &Intake<SetpointCmd>, axis: usize, rad: f64) -> bool {
    intake.offer(
        check_setpoint(rad)
            .map(|rad| SetpointCmd { axis, rad })
            .map_err(|(why, msg)| (why, format!("{} refused: {msg}", SETPOINTS[axis]))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_becomes_a_joint_state_stamped_on_the_grid() {
        let r = SampleRecord {
            k: 20,
            angle: [0.1, -0.2],
            ..SampleRecord::default()
        };
        let m = joint_state(1_000_000_000, &r);
        assert_eq!(m.header.stamp, Time::from_nanos(1_002_000_000));
        assert_eq!(m.name, ["pan", "tilt"]);
        assert_eq!(m.position, [0.1, -0.2]);
        assert!(m.velocity.is_empty() && m.effort.is_empty());
    }

    #[test]
    fn setpoints_reach_the_bridge_and_bad_ones_are_refused() {
        let (tx, mut rx) = preempt::bridge::channel(1);
        let intake = Intake::new("test: ROS 2 setpoint", tx);
        assert!(deliver(&intake, 1, 0.25));
        assert!(!deliver(&intake, 0, f64::NAN));
        assert!(!deliver(&intake, 1, 1e308), "beyond ±π");
        assert!(!deliver(&intake, 0, 0.5), "queue of one is full");
        assert_eq!(rx.try_recv(), Some(SetpointCmd { axis: 1, rad: 0.25 }));
        assert_eq!(rx.try_recv(), None);
        let c = intake.finish();
        assert_eq!(c.accepted, 1);
        assert_eq!(
            (c.refused.nan, c.refused.out_of_range, c.refused.queue_full),
            (1, 1, 1)
        );
    }
}
