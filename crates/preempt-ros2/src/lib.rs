//! ROS 2 endpoints for preempt apps, on the non-real-time end of the RT→non-RT bridge.
//!
//! A preempt app's real-time tasks hand their samples to the non-real-time side through
//! `preempt::bridge` (wait-free, never blocking); this crate publishes them there as ROS 2
//! topics of standard message types, and delivers messages from ROS 2 topics to a closure
//! that passes them back through a bridge to a task, which takes them with `try_recv`.
//! It speaks DDS/RTPS itself (`ros2-client` on RustDDS, ROS 2 Jazzy conventions), so neither
//! the robot nor CI needs a ROS installation.
//!
//! ```text
//!  RT task ─► bridge ─► recorder ─► Publisher::publish (try_send) ─► ros2-pub thread ─► DDS
//!  DDS ─► ros2-sub thread ─► deliver closure ─► bridge ─► RT task (try_recv)
//! ```
//!
//! Modules, lowest first: [`msg`] (the standard message types), [`names`] (what ROS 2
//! accepts: domain ids, names, an interface), [`node`] (the node, its threads).
//!
//! ```
//! use preempt_ros2::names::check_topic;
//! assert!(check_topic("/gimbal/joint_states").is_ok());
//! ```

pub mod msg;
pub mod names;
pub mod node;

pub use node::{
    NodeConfig, Publisher, PublisherCounts, Qos, Ros2Node, SubscriptionCounts, SubscriptionHandle,
};
