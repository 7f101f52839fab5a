//! The standard ROS 2 message types preempt's apps speak, as CDR-serialisable structs whose
//! fields follow the `.msg` definitions one for one (field order is the wire order: CDR has no
//! field names). Only standard types: a ROS 2 tool needs nothing of preempt's to read them.
//!
//! ```
//! use preempt_ros2::msg::{JointState, RosMessage, Time};
//! assert_eq!(JointState::dds_type_name(), "sensor_msgs::msg::dds_::JointState_");
//! assert_eq!(Time::from_nanos(1_500_000_000), Time { sec: 1, nanosec: 500_000_000 });
//! ```

use serde::{Deserialize, Serialize};

/// A ROS 2 message type: its package and name (`sensor_msgs`, `JointState`).
pub trait RosMessage: Serialize + for<'de> Deserialize<'de> + Send + 'static {
    /// The package, e.g. `sensor_msgs`.
    const PACKAGE: &'static str;
    /// The type's name in the package, e.g. `JointState`.
    const NAME: &'static str;

    /// The name ROS 2's DDS middlewares give the type on the wire:
    /// `pkg::msg::dds_::Type_`.
    fn dds_type_name() -> String {
        format!("{}::msg::dds_::{}_", Self::PACKAGE, Self::NAME)
    }

    /// The name ROS 2's tools print: `pkg/msg/Type`.
    fn ros_type_name() -> String {
        format!("{}/msg/{}", Self::PACKAGE, Self::NAME)
    }
}

macro_rules! ros_message {
    ($ty:ty, $pkg:literal, $name:literal) => {
        impl RosMessage for $ty {
            const PACKAGE: &'static str = $pkg;
            const NAME: &'static str = $name;
        }
    };
}

/// `builtin_interfaces/Time`: seconds and nanoseconds since the epoch of the stamping clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Time {
    /// Seconds (ROS 2's `int32`: it overflows in 2038, as ROS 2's own).
    pub sec: i32,
    /// Nanoseconds within the second, `0..1e9`.
    pub nanosec: u32,
}

impl Time {
    /// `ns` nanoseconds since the epoch (seconds saturate at `i32::MAX`).
    pub fn from_nanos(ns: u64) -> Time {
        Time {
            sec: i32::try_from(ns / 1_000_000_000).unwrap_or(i32::MAX),
            // < 1e9 < u32::MAX: the remainder always fits.
            nanosec: u32::try_from(ns % 1_000_000_000).unwrap_or(0),
        }
    }

    /// Back to nanoseconds (negative seconds give 0).
    pub fn to_nanos(self) -> u64 {
        u64::try_from(self.sec).unwrap_or(0) * 1_000_000_000 + u64::from(self.nanosec)
    }
}
ros_message!(Time, "builtin_interfaces", "Time");

/// `std_msgs/Header`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// When the data was taken, on the app's clock.
    pub stamp: Time,
    /// The coordinate frame.
    pub frame_id: String,
}
ros_message!(Header, "std_msgs", "Header");

/// `std_msgs/Float64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Float64 {
    /// The value.
    pub data: f64,
}
ros_message!(Float64, "std_msgs", "Float64");

/// `sensor_msgs/JointState`: names, positions (rad), velocities (rad/s), efforts (N·m); an
/// empty vector means "not measured".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JointState {
    /// Stamp and frame.
    pub header: Header,
    /// Joint names.
    pub name: Vec<String>,
    /// Positions, rad or m.
    pub position: Vec<f64>,
    /// Velocities.
    pub velocity: Vec<f64>,
    /// Efforts.
    pub effort: Vec<f64>,
}
ros_message!(JointState, "sensor_msgs", "JointState");

/// `geometry_msgs/Point`, m.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// x.
    pub x: f64,
    /// y.
    pub y: f64,
    /// z.
    pub z: f64,
}
ros_message!(Point, "geometry_msgs", "Point");

/// `geometry_msgs/Vector3`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Vector3 {
    /// x.
    pub x: f64,
    /// y.
    pub y: f64,
    /// z.
    pub z: f64,
}
ros_message!(Vector3, "geometry_msgs", "Vector3");

/// `geometry_msgs/Quaternion` (x, y, z, w).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quaternion {
    /// x.
    pub x: f64,
    /// y.
    pub y: f64,
    /// z.
    pub z: f64,
    /// w.
    pub w: f64,
}
ros_message!(Quaternion, "geometry_msgs", "Quaternion");

impl Default for Quaternion {
    /// The identity rotation (ROS 2's default is all zeros, which is no rotation at all).
    fn default() -> Quaternion {
        Quaternion {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        }
    }
}

/// `geometry_msgs/Pose`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pose {
    /// Position, m.
    pub position: Point,
    /// Orientation.
    pub orientation: Quaternion,
}
ros_message!(Pose, "geometry_msgs", "Pose");

/// `geometry_msgs/PoseStamped`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoseStamped {
    /// Stamp and frame.
    pub header: Header,
    /// The pose.
    pub pose: Pose,
}
ros_message!(PoseStamped, "geometry_msgs", "PoseStamped");

/// `geometry_msgs/Twist`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Twist {
    /// Linear velocity, m/s.
    pub linear: Vector3,
    /// Angular velocity, rad/s.
    pub angular: Vector3,
}
ros_message!(Twist, "geometry_msgs", "Twist");

/// A 6×6 covariance, row-major, as ROS 2's `float64[36]`: a CDR fixed array (no length on the
/// wire). serde derives arrays up to 32 elements only, so it is (de)serialised as a 36-tuple.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Covariance(pub [f64; 36]);

impl Default for Covariance {
    fn default() -> Covariance {
        Covariance([0.0; 36])
    }
}

impl Serialize for Covariance {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(36)?;
        for x in &self.0 {
            t.serialize_element(x)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for Covariance {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Covariance, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Covariance;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("36 float64")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Covariance, A::Error> {
                let mut c = [0.0; 36];
                for (i, x) in c.iter_mut().enumerate() {
                    *x = a
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                Ok(Covariance(c))
            }
        }
        d.deserialize_tuple(36, V)
    }
}

/// `geometry_msgs/PoseWithCovariance` (row-major 6×6 covariance of x, y, z, rotation about
/// x, y, z; all zeros: unknown).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoseWithCovariance {
    /// The pose.
    pub pose: Pose,
    /// Covariance.
    pub covariance: Covariance,
}
ros_message!(PoseWithCovariance, "geometry_msgs", "PoseWithCovariance");

/// `geometry_msgs/TwistWithCovariance`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TwistWithCovariance {
    /// The twist.
    pub twist: Twist,
    /// Covariance.
    pub covariance: Covariance,
}
ros_message!(TwistWithCovariance, "geometry_msgs", "TwistWithCovariance");

/// `nav_msgs/Odometry`: the pose in `header.frame_id`, the twist in `child_frame_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Odometry {
    /// Stamp and frame of the pose.
    pub header: Header,
    /// Frame of the twist.
    pub child_frame_id: String,
    /// Pose.
    pub pose: PoseWithCovariance,
    /// Twist.
    pub twist: TwistWithCovariance,
}
ros_message!(Odometry, "nav_msgs", "Odometry");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_follow_the_ros2_dds_convention() {
        assert_eq!(Float64::dds_type_name(), "std_msgs::msg::dds_::Float64_");
        assert_eq!(Odometry::ros_type_name(), "nav_msgs/msg/Odometry");
        assert_eq!(
            PoseStamped::dds_type_name(),
            "geometry_msgs::msg::dds_::PoseStamped_"
        );
    }

    #[test]
    fn time_splits_nanoseconds_and_back() {
        let t = Time::from_nanos(1_764_000_000_123_456_789);
        assert_eq!(t.sec, 1_764_000_000);
        assert_eq!(t.nanosec, 123_456_789);
        assert_eq!(t.to_nanos(), 1_764_000_000_123_456_789);
    }
}
