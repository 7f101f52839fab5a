//! A ROS 2 node on the non-real-time side: publishers fed through a bounded queue by their
//! own thread, and subscriptions drained by one thread that hands each message to a closure.
//!
//! ```text
//!  recorder (non-RT) ── publish(): try_send ──► queue (bounded) ──► publisher thread ──► DDS
//!                        full: dropped += 1                        error: failed += 1
//!  DDS ──► subscription thread (mio poll) ──► deliver(msg) ──► bridge ──► RT task (try_recv)
//! ```
//!
//! Nothing here runs on a real-time thread and nothing here can block one: the real-time
//! side only ever sees the bridge. `publish` never waits: a stalled DDS writer or a slow
//! subscriber costs messages on this side, counted in [`PublisherCounts::dropped`].
//!
//! The node speaks DDS/RTPS itself (ros2-client on RustDDS), with ROS 2's conventions: topic
//! `/a/b` is DDS topic `rt/a/b`, type `pkg/msg/T` is `pkg::msg::dds_::T_`, CDR little-endian
//! payloads, and the node announces itself on `ros_discovery_info` so `ros2 node list` shows
//! it. No parameters, services or actions (see docs/ROS2.md).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use ros2_client::dds::rustdds::mio1::{Events, Interest, Poll, Registry, Token};
use ros2_client::dds::{Context, ContextOptions, Node, Subscription};
use ros2_client::qos::{Durability, History, Reliability};
use ros2_client::{MessageTypeName, Name, NodeName, NodeOptions, QosProfile};
use serde::Serialize;

use crate::msg::RosMessage;
use crate::names;

/// Which QoS a topic gets, as ROS 2's tools expect it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qos {
    /// `rmw_qos_profile_sensor_data`: best effort, volatile, keep last. A subscriber that
    /// falls behind loses samples rather than slowing the writer. A best-effort writer
    /// matches best-effort readers only (`ros2 topic echo --qos-profile sensor_data`; Jazzy's
    /// tools adapt by themselves). The history is [`SENSOR_DEPTH`], not the profile's 5: the
    /// depth is no part of QoS matching, and RustDDS sends a sample from the writer's history
    /// on its own (SCHED_OTHER) thread, so with 5 a thread descheduled for 5 ms lost samples
    /// that were never sent (measured: 12 to 49 % of them under load, docs/ROS2.md).
    SensorData,
    /// A command topic: reliable, volatile, keep last 10 (`rmw_qos_profile_default`). As a
    /// subscription it matches reliable writers, volatile or transient-local (`ros2 topic
    /// pub` and a transient-local latch alike); a transient-local reader would refuse the
    /// volatile writers most tools create.
    Command,
    /// A latched state: reliable, transient-local, keep last 1 (a late subscriber gets the
    /// last value, as ROS 2's `/robot_description`).
    Latched,
}

impl Qos {
    fn profile(self) -> QosProfile {
        let base = QosProfile::subscription_default();
        match self {
            Qos::SensorData => base
                .reliability(Reliability::BestEffort)
                .durability(Durability::Volatile)
                .history(History::KeepLast {
                    depth: SENSOR_DEPTH,
                }),
            Qos::Command => base
                // The writer side never waits for a full history: `Fail` (the publisher
                // thread counts it).
                .reliability(Reliability::Reliable {
                    when_full: ros2_client::qos::WhenFull::Fail,
                })
                .durability(Durability::Volatile)
                .history(History::KeepLast { depth: 10 }),
            Qos::Latched => base
                .reliability(Reliability::Reliable {
                    when_full: ros2_client::qos::WhenFull::Fail,
                })
                .durability(Durability::TransientLocal)
                .history(History::KeepLast { depth: 1 }),
        }
    }
}

/// The history of a [`Qos::SensorData`] topic, samples: 1 s at 1 kHz.
pub const SENSOR_DEPTH: usize = 1000;

/// Node name, namespace and domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeConfig {
    /// Namespace, `/` or an absolute name.
    pub namespace: String,
    /// Node name.
    pub name: String,
    /// DDS domain id (`ROS_DOMAIN_ID`).
    pub domain_id: u16,
}

impl NodeConfig {
    /// Node `name` in `/`, on the domain `ROS_DOMAIN_ID` names (0 if unset).
    ///
    /// # Errors
    /// A bad name or `ROS_DOMAIN_ID`.
    pub(crate) fn from_env(name: &str) -> Result<NodeConfig, String> {
        let cfg = NodeConfig {
            namespace: "/".into(),
            name: name.into(),
            domain_id: names::domain_id_from_env()?,
        };
        names::check_node(&cfg.namespace, &cfg.name)?;
        Ok(cfg)
    }

    /// Everything an app's `--ros2` needs, checked before anything starts: node `name` on the
    /// domain `ROS_DOMAIN_ID` names, every one of `topics`, a network interface DDS discovery
    /// can use.
    ///
    /// # Errors
    /// What is wrong, naming the variable or the fix.
    pub fn checked(name: &str, topics: &[&str]) -> Result<NodeConfig, String> {
        let cfg = NodeConfig::from_env(name)?;
        for t in topics {
            names::check_topic(t)?;
        }
        names::check_network()?;
        Ok(cfg)
    }
}

/// What a publisher did, counted on the non-real-time side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PublisherCounts {
    /// Messages handed to DDS.
    pub published: u64,
    /// Messages dropped because the publisher thread's queue was full (DDS or the host
    /// stalled it).
    pub dropped: u64,
    /// Messages DDS refused (its history full, a serialisation error).
    pub failed: u64,
}

impl std::ops::Add for PublisherCounts {
    type Output = PublisherCounts;

    fn add(self, o: PublisherCounts) -> PublisherCounts {
        PublisherCounts {
            published: self.published + o.published,
            dropped: self.dropped + o.dropped,
            failed: self.failed + o.failed,
        }
    }
}

impl std::iter::Sum for PublisherCounts {
    fn sum<I: Iterator<Item = PublisherCounts>>(it: I) -> PublisherCounts {
        it.fold(PublisherCounts::default(), |a, b| a + b)
    }
}

/// What a subscription received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SubscriptionCounts {
    /// Messages taken from DDS and accepted by the receiver.
    pub accepted: u64,
    /// Messages taken and refused by the receiver (out of range, its queue full).
    pub rejected: u64,
    /// Samples DDS could not deserialise.
    pub errors: u64,
}

#[derive(Debug, Default)]
struct AtomicCounts([AtomicU64; 3]);

impl AtomicCounts {
    fn add(&self, i: usize) {
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }
    fn get(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.0[i].load(Ordering::Relaxed))
    }
}

/// A topic published from the non-real-time side. [`Publisher::publish`] never blocks.
pub struct Publisher<M: RosMessage> {
    topic: String,
    tx: Option<SyncSender<M>>,
    counts: Arc<AtomicCounts>,
    thread: Option<JoinHandle<()>>,
    _m: PhantomData<fn(M)>,
}

impl<M: RosMessage> fmt::Debug for Publisher<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("topic", &self.topic)
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl<M: RosMessage> Publisher<M> {
    /// Queues `msg` for publishing; a full queue drops it (counted). Never blocks.
    pub fn publish(&self, msg: M) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => self.counts.add(1),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> PublisherCounts {
        let [published, dropped, failed] = self.counts.get();
        PublisherCounts {
            published,
            dropped,
            failed,
        }
    }

    /// Publishes what is queued, stops the thread, returns the counts.
    pub fn finish(mut self) -> PublisherCounts {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.counts()
    }
}

impl<M: RosMessage> Drop for Publisher<M> {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The received-message side of one subscription, drained by the subscription thread.
trait Pump: Send {
    fn register(&mut self, registry: &Registry, token: Token) -> std::io::Result<()>;
    fn drain(&mut self);
}

struct SubPump<M: RosMessage, F> {
    sub: Subscription<M>,
    deliver: F,
    counts: Arc<AtomicCounts>,
}

impl<M: RosMessage, F: FnMut(M) -> bool + Send> Pump for SubPump<M, F> {
    fn register(&mut self, registry: &Registry, token: Token) -> std::io::Result<()> {
        registry.register(&mut self.sub, token, Interest::READABLE)
    }

    fn drain(&mut self) {
        loop {
            match self.sub.take() {
                Ok(Some((m, _info))) => self.counts.add(if (self.deliver)(m) { 0 } else { 1 }),
                Ok(None) => break,
                Err(_) => self.counts.add(2),
            }
        }
    }
}

/// Counts of one subscription or several, readable while they run.
#[derive(Clone, Debug)]
pub struct SubscriptionHandle(Vec<Arc<AtomicCounts>>);

impl SubscriptionHandle {
    /// The sums of `handles`' counts, as one handle.
    pub fn merged(handles: &[SubscriptionHandle]) -> SubscriptionHandle {
        SubscriptionHandle(handles.iter().flat_map(|h| h.0.iter().cloned()).collect())
    }

    /// The counts so far.
    pub fn counts(&self) -> SubscriptionCounts {
        let sum = self.0.iter().fold([0; 3], |acc, c| {
            let v = c.get();
            [acc[0] + v[0], acc[1] + v[1], acc[2] + v[2]]
        });
        let [accepted, rejected, errors] = sum;
        SubscriptionCounts {
            accepted,
            rejected,
            errors,
        }
    }
}

/// How long the subscription thread sleeps in `poll` at most: it drains every subscription
/// at least this often (a missed edge costs at most this delay) and sees `stop` as soon.
const POLL_TIMEOUT: Duration = Duration::from_millis(20);

/// A running ROS 2 node.
pub struct Ros2Node {
    cfg: NodeConfig,
    // Dropped last (field order): the participant outlives its node's endpoints.
    node: Node,
    _ctx: Context,
    pending: Vec<Box<dyn Pump>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for Ros2Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ros2Node")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Ros2Node {
    /// Joins domain `cfg.domain_id` as node `cfg.namespace/cfg.name`. The DDS participant's
    /// threads start here, as ordinary (SCHED_OTHER) threads: call it before the real-time
    /// part starts, from a non-real-time thread.
    ///
    /// # Errors
    /// A bad name, no usable network interface, or DDS refusing to start (naming why).
    pub fn start(cfg: &NodeConfig) -> Result<Ros2Node, String> {
        names::check_node(&cfg.namespace, &cfg.name)?;
        names::check_network()?;
        let ctx =
            Context::with_options(ContextOptions::new().domain_id(cfg.domain_id)).map_err(|e| {
                format!(
                    "--ros2: cannot join DDS domain {} (ROS_DOMAIN_ID): {e:?}",
                    cfg.domain_id
                )
            })?;
        let name = NodeName::new(&cfg.namespace, &cfg.name)
            .map_err(|e| format!("--ros2: node name {}: {e:?}", cfg.name))?;
        let node = ctx
            .new_node(
                name,
                NodeOptions::new()
                    .enable_rosout(false)
                    .start_parameter_services(false),
            )
            .map_err(|e| format!("--ros2: cannot create node {}: {e:?}", cfg.name))?;
        Ok(Ros2Node {
            cfg: cfg.clone(),
            node,
            _ctx: ctx,
            pending: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        })
    }

    /// The node's configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.cfg
    }

    fn topic<M: RosMessage>(
        &mut self,
        topic: &str,
        qos: Qos,
    ) -> Result<ros2_client::dds::rustdds::Topic, String> {
        names::check_topic(topic)?;
        let name = Name::parse(topic).map_err(|e| format!("topic '{topic}': {e:?}"))?;
        self.node
            .create_topic(
                &name,
                MessageTypeName::new(M::PACKAGE, M::NAME),
                &qos.profile(),
            )
            .map_err(|e| format!("--ros2: cannot create topic {topic}: {e:?}"))
    }

    /// A publisher of `M` on `topic`, with a queue of `queue` messages in front of it.
    ///
    /// # Errors
    /// A topic name ROS 2 rejects, or DDS refusing the writer.
    pub fn publisher<M: RosMessage>(
        &mut self,
        topic: &str,
        qos: Qos,
        queue: usize,
    ) -> Result<Publisher<M>, String> {
        let t = self.topic::<M>(topic, qos)?;
        let writer = self
            .node
            .create_publisher::<M>(&t, None)
            .map_err(|e| format!("--ros2: cannot create a publisher on {topic}: {e:?}"))?;
        let (tx, rx) = mpsc::sync_channel::<M>(queue.max(1));
        let counts = Arc::new(AtomicCounts::default());
        let c = Arc::clone(&counts);
        let thread = std::thread::Builder::new()
            .name("ros2-pub".into())
            .spawn(move || {
                for m in rx {
                    c.add(if writer.publish(m).is_ok() { 0 } else { 2 });
                }
            })
            .map_err(|e| format!("--ros2: cannot start the publisher thread: {e}"))?;
        Ok(Publisher {
            topic: topic.into(),
            tx: Some(tx),
            counts,
            thread: Some(thread),
            _m: PhantomData,
        })
    }

    /// Subscribes to `topic`; every message is handed to `deliver` on the subscription
    /// thread ([`Ros2Node::spawn_subscriptions`]), which says whether it accepted it. `deliver`
    /// must not block: hand the message on through a bridge or a bounded queue.
    ///
    /// # Errors
    /// A topic name ROS 2 rejects, or DDS refusing the reader.
    pub fn subscribe<M: RosMessage>(
        &mut self,
        topic: &str,
        qos: Qos,
        deliver: impl FnMut(M) -> bool + Send + 'static,
    ) -> Result<SubscriptionHandle, String> {
        let t = self.topic::<M>(topic, qos)?;
        let sub = self
            .node
            .create_subscription::<M>(&t, None)
            .map_err(|e| format!("--ros2: cannot subscribe to {topic}: {e:?}"))?;
        let counts = Arc::new(AtomicCounts::default());
        self.pending.push(Box::new(SubPump {
            sub,
            deliver,
            counts: Arc::clone(&counts),
        }));
        Ok(SubscriptionHandle(vec![counts]))
    }

    /// Starts the one thread that drains every subscription made so far.
    ///
    /// # Errors
    /// The poll or the thread cannot be created.
    pub fn spawn_subscriptions(&mut self) -> Result<(), String> {
        let mut pumps = std::mem::take(&mut self.pending);
        if pumps.is_empty() {
            return Ok(());
        }
        let mut poll = Poll::new().map_err(|e| format!("--ros2: mio poll: {e}"))?;
        for (i, p) in pumps.iter_mut().enumerate() {
            p.register(poll.registry(), Token(i))
                .map_err(|e| format!("--ros2: registering a subscription: {e}"))?;
        }
        let stop = Arc::clone(&self.stop);
        let thread = std::thread::Builder::new()
            .name("ros2-sub".into())
            .spawn(move || {
                let mut events = Events::with_capacity(16);
                while !stop.load(Ordering::Acquire) {
                    // An error (EINTR) or a timeout: drain everything anyway.
                    let _ = poll.poll(&mut events, Some(POLL_TIMEOUT));
                    for p in &mut pumps {
                        p.drain();
                    }
                }
            })
            .map_err(|e| format!("--ros2: cannot start the subscription thread: {e}"))?;
        self.thread = Some(thread);
        Ok(())
    }

    /// Stops the subscription thread and leaves the domain.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Ros2Node {
    fn drop(&mut self) {
        self.halt();
    }
}
