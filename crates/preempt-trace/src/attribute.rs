//! Splitting a late wake-up into the causes that add up to its delay.
//!
//! # Background
//! A task released at `release` that first runs (or reports) at `end` was late by
//! `end − release`. Its CPU did something else for all of that time, and the kernel's trace
//! events say what: an interrupt handler ran, a softirq ran, another thread held the CPU, the
//! CPU sat in an idle state waiting for the timer interrupt, the wake-up path took its time.
//!
//! # Solution
//! [`explain`] replays the CPU's events from the last context switch before `release`
//! (to know which task was running and which interrupt contexts were open) and then walks
//! the window event by event. Each interval between two events is charged to exactly one
//! cause, chosen by the innermost open context and the phase of the victim:
//!
//! ```text
//! release              waking                 switch-in        end
//!    |---- before wake ----|---- runnable -------|---- running ----|
//!  in irq/vector     -> irq (handler name / vector)     (any phase)
//!  in softirq        -> softirq (vector name)           (any phase)
//!  in hrtimer only   -> timer (hrtimer callbacks outside an interrupt)   (any phase)
//!  idle task         -> idle_exit (up to the C-state's declared exit latency; beyond it:
//!                       invisible)                           | wakeup (idle -> task switch)
//!  another thread    -> invisible (the timer interrupt      | thread (comm, pid, policy;
//!                       should have cut in: nothing           `inversion` if its priority
//!                       recorded says why it did not)         is below the victim's)
//!  the victim        -> thread (its previous job, while it has not slept since the
//!                       release), else invisible            | wakeup (switch-in, return)
//!  no trace yet      -> invisible
//!  real-time class   -> throttled (the victim is a real-time task, runnable, while a lower-
//!  stopped on the CPU   class task or the idle task runs after a real-time task was
//!                       preempted by one: see below)   (runnable phase)
//! ```
//!
//! **Throttled.** The kernel caps the real-time class at `sched_rt_runtime_us` of every
//! `sched_rt_period_us` per CPU (950 ms of 1 s by default). Past the cap it stops the class
//! on that CPU: RT throttling proper (the CPU runs SCHED_OTHER tasks, or idles), or, on
//! kernels ≥ 6.12 and first when a SCHED_OTHER task is waiting, the *fair server*
//! (`dl_server`, a SCHED_DEADLINE reservation of 50 ms per second that runs SCHED_OTHER
//! tasks). Both show in the trace the same way, and in no other case: a real-time task still
//! runnable (`prev_state` R) is switched out for a SCHED_OTHER task or the idle task; only a
//! higher class may preempt a running real-time task otherwise. The class is stopped from that
//! switch until a real-time (or deadline) task runs on the CPU again
//! ([`ThrottleTracker`] follows this over a whole run). A real-time victim runnable in such a
//! stretch waits for the kernel's throttle, not for the thread that happens to run.
//!
//! `invisible` is the part of the window no recorded event explains: before the wake-up, the
//! victim waits only for its timer interrupt, and neither an idle CPU (past its C-state's exit
//! latency) nor a running thread can hold that interrupt back while the kernel records nothing.
//! What can is the hypervisor running something else on this vCPU (steal), an SMI, the
//! hardware, or a section with interrupts disabled (which these events do not show). The
//! session reports the CPU's `/proc/stat` steal time around each window beside it, so that a
//! reader can tell the host from the rest.
//!
//! # Why it works
//! The intervals partition `[release, end)`, so the causes add up to the delay exactly (in
//! integer nanoseconds). What the kernel cannot see (the hypervisor running another guest on
//! this vCPU, an SMI) shows as time charged to whatever the CPU was last doing; the idle case is
//! bounded by the declared exit latency, and the CPU's steal time from `/proc/stat` for the
//! window is reported beside the causes so that a reader can tell. docs/MEASURING.md lists the
//! limits.

use serde::{Deserialize, Serialize};

use crate::decode::{Decoder, Event, Kind, SOFTIRQ_NAMES, Vector};

/// What made a task late.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// A hardware interrupt handler or x86 system vector ran.
    Irq,
    /// A softirq ran (in interrupt exit or in a thread's `local_bh_enable`).
    Softirq,
    /// Another thread held the CPU while the task was runnable.
    Thread,
    /// The wake-up path: from waking to running (scheduler, context switch, return to user).
    Wakeup,
    /// The CPU was idle and had to leave its idle state.
    IdleExit,
    /// hrtimer callbacks ran outside any interrupt handler.
    Timer,
    /// The kernel stopped the real-time class on the CPU (RT throttling at
    /// `sched_rt_runtime_us`, or the fair server) while the real-time task was runnable.
    Throttled,
    /// Time no recorded event explains: the CPU idled past its C-state's exit latency, or the
    /// timer interrupt came late with nothing recorded in between (host steal, SMI, hardware,
    /// interrupts disabled), or the window began before the trace.
    Invisible,
    /// The trace lost this stretch: the ring buffer overwrote events before the reader took
    /// them (and, after such a gap, the time until a context switch says again which task
    /// runs). Never charged to a named thread: nobody knows what the CPU did.
    Lost,
}

impl CauseKind {
    /// The snake_case name used in JSON and summaries.
    pub fn name(self) -> &'static str {
        match self {
            CauseKind::Irq => "irq",
            CauseKind::Softirq => "softirq",
            CauseKind::Thread => "thread",
            CauseKind::Wakeup => "wakeup",
            CauseKind::IdleExit => "idle_exit",
            CauseKind::Timer => "timer",
            CauseKind::Throttled => "throttled",
            CauseKind::Invisible => "invisible",
            CauseKind::Lost => "lost",
        }
    }
}

/// One cause and how much of the delay it took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// Kind.
    pub kind: CauseKind,
    /// Handler, vector, comm or description.
    pub name: String,
    /// Thread id for `thread` (and for `invisible` time while a thread ran); `null` otherwise.
    pub pid: Option<i32>,
    /// Delay charged to it.
    pub ns: u64,
    /// `SCHED_FIFO/RR`, `SCHED_OTHER` or `SCHED_DEADLINE` for threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Real-time priority (FIFO/RR) or nice value (OTHER).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// A thread of lower priority than the victim held the CPU (a non-preemptible section:
    /// priority inversion).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inversion: bool,
}

/// A stretch of the window charged to one cause (for the trace export).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Start, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// Index into [`Explanation::causes`].
    pub cause: usize,
}

/// The window of one late task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// When it should have run (CLOCK_MONOTONIC ns).
    pub release_ns: u64,
    /// When it ran / reported (CLOCK_MONOTONIC ns).
    pub end_ns: u64,
    /// Its thread id.
    pub pid: i32,
}

/// Why one window was late.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The CPU examined.
    pub cpu: usize,
    /// Release, CLOCK_MONOTONIC ns.
    pub release_ns: u64,
    /// `end − release`.
    pub latency_ns: u64,
    /// Causes, largest first; their `ns` add up to `latency_ns`.
    pub causes: Vec<Cause>,
    /// Steal time `/proc/stat` reports for this CPU over the sampling interval around the
    /// window (null where the kernel keeps none), and that interval.
    pub steal_ns: Option<u64>,
    /// Length of the `/proc/stat` sampling interval that `steal_ns` covers.
    pub steal_span_ns: Option<u64>,
    /// Whether the trace covered the whole window (false: events were lost or the window
    /// began before the trace).
    pub covered: bool,
    /// The stretch in which the kernel stopped the real-time class on this CPU, where the
    /// window has [`CauseKind::Throttled`] time: from the switch that stopped it (possibly
    /// before the release) to the end of the last throttled time in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled: Option<Stretch>,
    /// The stretches, in time order.
    #[serde(skip)]
    pub segments: Vec<Segment>,
}

impl Explanation {
    /// The largest cause.
    pub fn main_cause(&self) -> Option<&Cause> {
        self.causes.first()
    }

    /// The delay charged to causes of the given kinds, ns.
    pub fn ns_of(&self, kinds: &[CauseKind]) -> u64 {
        self.causes
            .iter()
            .filter(|c| kinds.contains(&c.kind))
            .map(|c| c.ns)
            .sum()
    }
}

/// A stretch of time on one CPU, CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stretch {
    /// The CPU.
    pub cpu: usize,
    /// Start.
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
}

impl Stretch {
    /// `end − start`.
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Kernel priorities below this are the real-time and deadline classes
/// (include/linux/sched/prio.h `MAX_RT_PRIO`; deadline tasks report −1).
const MAX_RT_PRIO: i32 = 100;

/// Whether a context switch stops the real-time class on its CPU: a real-time task still
/// runnable (`prev_state` 0, preempted) gives the CPU to a lower-class task or the idle task,
/// which only RT throttling or the fair server do (module docs, "Throttled").
pub fn stops_rt_class(kind: &Kind) -> bool {
    matches!(*kind, Kind::Switch { prev_prio, prev_state: 0, next_prio, .. }
        if prev_prio < MAX_RT_PRIO && next_prio >= MAX_RT_PRIO)
}

/// Follows one CPU's context switches over a run and collects the stretches in which the
/// kernel stopped the real-time class: from a switch that [`stops_rt_class`] until a
/// real-time or deadline task runs again. A stop resumed within
/// [`ThrottleTracker::MERGE_NS`] of the last one's end continues it (a stop-class or
/// higher-priority thread that ran for a moment inside it).
///
/// Only that switch starts a stretch. A switch to a lower-class task while a real-time task
/// is queued would say the same, but this CPU's events cannot tell whether the task is still
/// queued here: another CPU may have pulled it, and that migration is recorded in the other
/// CPU's events (tried: 683 false stops in a 3 s `demo gimbal --explain`). [`explain`] uses
/// that rule for its victim alone, whose queueing and switch-in it sees on this CPU.
#[derive(Clone, Debug, Default)]
pub struct ThrottleTracker {
    since: Option<u64>,
    /// Stretches that ended, in time order (at most [`ThrottleTracker::MAX_KEPT`]).
    pub stretches: Vec<(u64, u64)>,
    /// Stretches seen, including those not kept.
    pub count: u64,
    /// Their total length, ns.
    pub total_ns: u64,
}

impl ThrottleTracker {
    /// Stretches kept (a run throttled once a second for an hour keeps the first ones and
    /// counts the rest).
    pub const MAX_KEPT: usize = 4096;
    /// A stop that resumes this soon after the last one ended is the same stop.
    pub const MERGE_NS: u64 = 1_000_000;

    /// Takes the next event of the CPU (in time order).
    pub(crate) fn observe(&mut self, e: &Event) {
        if let Kind::Switch { next_prio, .. } = e.kind {
            if stops_rt_class(&e.kind) {
                self.start(e.ts);
            } else if next_prio < MAX_RT_PRIO {
                self.end(e.ts);
            }
        }
    }

    fn start(&mut self, ts: u64) {
        if self.since.is_some() {
            return;
        }
        // Resumed right after the last one: the same stop.
        if let Some(&(start, end)) = self.stretches.last() {
            if ts.saturating_sub(end) < Self::MERGE_NS
                && self.count as usize == self.stretches.len()
            {
                self.stretches.pop();
                self.count -= 1;
                self.total_ns -= end - start;
                self.since = Some(start);
                return;
            }
        }
        self.since = Some(ts);
    }

    fn end(&mut self, ts: u64) {
        if let Some(start) = self.since.take() {
            self.count += 1;
            self.total_ns += ts - start;
            if self.stretches.len() < Self::MAX_KEPT {
                self.stretches.push((start, ts));
            }
        }
    }

    /// Since when the class is stopped, if it is.
    pub fn since(&self) -> Option<u64> {
        self.since
    }

    /// Forgets an open stretch (events were lost: whether it ended is unknown).
    pub fn reset(&mut self) {
        self.since = None;
    }

    /// The stretches up to `now`, an open one ending at `now`.
    pub fn until(&self, now: u64) -> Vec<(u64, u64)> {
        let mut v = self.stretches.clone();
        if let Some(s) = self.since {
            v.push((s, now.max(s)));
        }
        v
    }
}

/// Facts about the CPU that [`explain`] needs beside its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuFacts {
    /// The largest exit latency of the CPU's enabled idle states (cpuidle `stateN/latency`),
    /// ns; 0 without cpuidle.
    pub idle_exit_bound_ns: u64,
    /// Stretches whose events the trace lost, in time order: (time stamp of the last event
    /// before the gap, time stamp of the first after it). Time inside one is charged to
    /// [`CauseKind::Lost`], and so is the time after it until a context switch re-establishes
    /// which task runs.
    pub lost: Vec<(u64, u64)>,
}

impl CpuFacts {
    /// Whether `[from, to)` lies inside a lost stretch.
    fn lost_between(&self, from: u64, to: u64) -> bool {
        self.lost
            .iter()
            .any(|&(a, b)| a <= from && to <= b && a < b)
    }

    /// Whether a lost stretch ends at `ts` (the event there is the first after a gap).
    fn gap_ends_at(&self, ts: u64) -> bool {
        self.lost.iter().any(|&(a, b)| b == ts && a < b)
    }

    /// Whether a lost stretch overlaps `[from, to]`.
    fn lost_within(&self, from: u64, to: u64) -> bool {
        self.lost.iter().any(|&(a, b)| a < to && b > from)
    }
}

/// `lost` inside a stretch whose events the ring buffer overwrote.
const LOST_EVENTS: &str = "events lost (trace buffer overrun)";
/// `lost` after such a stretch, until a context switch says which task runs.
const LOST_STATE: &str = "after lost events, until a context switch (task unknown)";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Irq(i32),
    Vector(Vector),
    Softirq(u32),
    Hrtimer,
}

/// `invisible` in an idle CPU past the exit latency its idle states declare.
const IDLE_PAST_EXIT: &str =
    "idle past the C-state's exit latency, nothing recorded (host steal, SMI, hardware)";
/// `invisible` while a thread ran and the timer interrupt did not come (prefix).
const LATE_IRQ: &str = "timer interrupt late, nothing recorded (host steal, SMI, interrupts off)";
/// [`LATE_IRQ`] while the late task itself was still on the CPU.
const LATE_IRQ_SELF: &str = "timer interrupt late, nothing recorded (host steal, SMI, interrupts off) while the task itself ran";

/// Most nested contexts tracked (irq → softirq → hrtimer is 3; the rest is margin).
const MAX_DEPTH: usize = 16;

/// Decides how `[release, end)` on `cpu` was spent, from `events` (this CPU's, in time
/// order) and `wake_ns` (when the victim's `sched_waking` fired on any CPU, if it did).
pub fn explain(
    cpu: usize,
    events: &[Event],
    window: &Window,
    wake_ns: Option<u64>,
    names: &Decoder,
    facts: &CpuFacts,
) -> Explanation {
    let (release, end) = (window.release_ns, window.end_ns.max(window.release_ns));
    let victim = window.pid;
    let first_in = events.partition_point(|e| e.ts < release);
    let last_switch = events[..first_in]
        .iter()
        .rposition(|e| matches!(e.kind, Kind::Switch { .. }));
    let mut st = State {
        cur: None,
        stack: Vec::with_capacity(MAX_DEPTH),
        victim_prio: None,
        woken: false,
        busy: false,
        after_loss: false,
        throttle: throttle_before(&events[..replay_from_of(last_switch)]),
        queued: queued_before(&events[..replay_from_of(last_switch)], victim),
        picked_over_victim: false,
    };
    // Replay up to the release: which task runs, which contexts are open.
    let replay_from = replay_from_of(last_switch);
    for e in &events[replay_from..first_in] {
        st.apply_after(e, victim, facts);
    }
    // Its priority, where the replay did not show it (its waking may be recorded on another
    // CPU): from its last switch on this CPU.
    if st.victim_prio.is_none() {
        st.victim_prio = prio_before(&events[..first_in], victim);
    }
    st.busy = runnable_before(&events[..first_in], victim);
    st.woken = st.busy || wake_ns.is_some_and(|w| w <= release);
    let covered = last_switch.is_some() && !facts.lost_within(release, end);
    let mut acc = Acc::default();
    let mut idle_prewake = 0u64;
    let mut throttled: Option<Stretch> = None;
    let mut t = release;
    let mut idx = first_in;
    loop {
        let next_ts = events.get(idx).map_or(end, |e| e.ts.min(end));
        // A wake-up seen on another CPU changes the phase between two local events.
        let cut = match wake_ns {
            Some(w) if !st.woken && w > t && w < next_ts => w,
            _ => next_ts,
        };
        if cut > t {
            let key = if facts.lost_between(t, cut) {
                Key::plain(CauseKind::Lost, LOST_EVENTS)
            } else {
                st.classify(cpu, victim, names)
            };
            if key.kind == CauseKind::Throttled {
                let start = st.throttle.since().unwrap_or(t);
                throttled = Some(Stretch {
                    cpu,
                    start_ns: throttled.map_or(start, |s| s.start_ns.min(start)),
                    end_ns: cut,
                });
            }
            if key.kind == CauseKind::IdleExit {
                let room = facts.idle_exit_bound_ns.saturating_sub(idle_prewake);
                let d = cut - t;
                let fits = d.min(room);
                idle_prewake += d;
                if fits > 0 {
                    acc.add(key.clone(), t, t + fits);
                }
                if d > fits {
                    acc.add(
                        Key::plain(CauseKind::Invisible, IDLE_PAST_EXIT),
                        t + fits,
                        cut,
                    );
                }
            } else {
                acc.add(key, t, cut);
            }
            t = cut;
        }
        if t >= end {
            break;
        }
        if wake_ns.is_some_and(|w| w <= t) {
            st.woken = true;
        }
        if cut == next_ts {
            if let Some(e) = events.get(idx) {
                st.apply_after(e, victim, facts);
                idx += 1;
            }
        }
    }
    let mut causes = acc.causes;
    let mut order: Vec<usize> = (0..causes.len()).collect();
    order.sort_by(|&a, &b| causes[b].ns.cmp(&causes[a].ns).then(a.cmp(&b)));
    let mut remap = vec![0; causes.len()];
    for (new, &old) in order.iter().enumerate() {
        remap[old] = new;
    }
    let mut sorted: Vec<Cause> = order.iter().map(|&i| causes[i].clone()).collect();
    std::mem::swap(&mut causes, &mut sorted);
    let segments = acc
        .segments
        .into_iter()
        .map(|s| Segment {
            cause: remap[s.cause],
            ..s
        })
        .collect();
    // Time charged to `lost` (a gap before the release whose task is still unknown too).
    let covered = covered && causes.iter().all(|c| c.kind != CauseKind::Lost);
    Explanation {
        cpu,
        release_ns: release,
        latency_ns: end - release,
        causes,
        steal_ns: None,
        steal_span_ns: None,
        covered,
        throttled,
        segments,
    }
}

fn replay_from_of(last_switch: Option<usize>) -> usize {
    last_switch.unwrap_or(0)
}

/// The CPU's throttle state after `events`: followed from the last switch to a real-time
/// task (the class ran then; what is queued after it is seen from there).
fn throttle_before(events: &[Event]) -> ThrottleTracker {
    let from = events
        .iter()
        .rposition(|e| matches!(e.kind, Kind::Switch { next_prio, .. } if next_prio < MAX_RT_PRIO))
        .unwrap_or(0);
    let mut t = ThrottleTracker::default();
    for e in &events[from..] {
        t.observe(e);
    }
    t
}

/// Whether the victim is queued on the CPU, not running, after `events` (its latest
/// `sched_wakeup` there, or its latest switch out while runnable).
fn queued_before(events: &[Event], victim: i32) -> bool {
    events
        .iter()
        .rev()
        .find_map(|e| match e.kind {
            Kind::Waking {
                pid,
                woken: true,
                target_cpu,
                ..
            } if pid == victim && u32::try_from(target_cpu) == Ok(e.cpu) => Some(true),
            Kind::Switch {
                prev_pid,
                prev_state,
                ..
            } if prev_pid == victim => Some(prev_state == 0),
            Kind::Switch { next_pid, .. } if next_pid == victim => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

/// The victim's kernel priority at its latest switch or waking in `events`.
fn prio_before(events: &[Event], victim: i32) -> Option<i32> {
    events.iter().rev().find_map(|e| match e.kind {
        Kind::Switch {
            next_pid,
            next_prio,
            ..
        } if next_pid == victim => Some(next_prio),
        Kind::Switch {
            prev_pid,
            prev_prio,
            ..
        } if prev_pid == victim => Some(prev_prio),
        Kind::Waking { pid, prio, .. } if pid == victim => Some(prio),
        _ => None,
    })
}

/// Whether the victim was already runnable (woken, or preempted) when its window began: a
/// task still busy with (or waiting to finish) its previous job is not waiting for a timer.
fn runnable_before(events: &[Event], victim: i32) -> bool {
    for e in events.iter().rev() {
        match e.kind {
            Kind::Waking {
                pid, woken: false, ..
            } if pid == victim => return true,
            Kind::Switch { next_pid, .. } if next_pid == victim => return true,
            Kind::Switch {
                prev_pid,
                prev_state,
                ..
            } if prev_pid == victim => return prev_state == 0,
            _ => {}
        }
    }
    false
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Key {
    kind: CauseKind,
    name: String,
    pid: Option<i32>,
    prio: Option<i32>,
    inversion: bool,
}

impl Key {
    fn plain(kind: CauseKind, name: &str) -> Key {
        Key {
            kind,
            name: name.into(),
            pid: None,
            prio: None,
            inversion: false,
        }
    }
}

#[derive(Debug, Default)]
struct Acc {
    causes: Vec<Cause>,
    segments: Vec<Segment>,
}

impl Acc {
    fn add(&mut self, key: Key, from: u64, to: u64) {
        let d = to - from;
        let i = match self
            .causes
            .iter()
            .position(|c| c.kind == key.kind && c.name == key.name && c.pid == key.pid)
        {
            Some(i) => i,
            None => {
                let (policy, priority) = match key.prio {
                    Some(p) => policy_of(p),
                    None => (None, None),
                };
                self.causes.push(Cause {
                    kind: key.kind,
                    name: key.name,
                    pid: key.pid,
                    ns: 0,
                    policy: policy.map(str::to_string),
                    priority,
                    inversion: false,
                });
                self.causes.len() - 1
            }
        };
        self.causes[i].ns += d;
        self.causes[i].inversion |= key.inversion;
        match self.segments.last_mut() {
            Some(s) if s.cause == i && s.end_ns == from => s.end_ns = to,
            _ => self.segments.push(Segment {
                start_ns: from,
                end_ns: to,
                cause: i,
            }),
        }
    }
}

/// Policy and user-visible priority from a kernel priority (include/linux/sched/prio.h:
/// `MAX_RT_PRIO` = 100, `DEFAULT_PRIO` = 120; deadline tasks report −1).
pub(crate) fn policy_of(kernel_prio: i32) -> (Option<&'static str>, Option<i32>) {
    if kernel_prio < 0 {
        (Some("SCHED_DEADLINE"), None)
    } else if kernel_prio < 100 {
        (Some("SCHED_FIFO/RR"), Some(99 - kernel_prio))
    } else {
        (Some("SCHED_OTHER"), Some(kernel_prio - 120))
    }
}

#[derive(Debug)]
struct State {
    /// Running task and its kernel priority.
    cur: Option<(i32, i32)>,
    stack: Vec<Ctx>,
    victim_prio: Option<i32>,
    woken: bool,
    /// The victim was runnable when the window began (its previous job still running or
    /// waiting): until it sleeps, its own running is its own work, not the wake-up path.
    busy: bool,
    /// Events were lost and no context switch has said since which task runs.
    after_loss: bool,
    /// Whether (since when) the kernel has stopped the real-time class on this CPU.
    throttle: ThrottleTracker,
    /// The victim is on this CPU's runqueue (`sched_wakeup` here, or preempted), not running.
    queued: bool,
    /// The running task is of a lower class than the (real-time) victim and was switched in
    /// while the victim was queued here: the scheduler passed over a runnable real-time task,
    /// which it does only with the class stopped.
    picked_over_victim: bool,
}

impl State {
    /// [`State::apply`], first forgetting what a gap in the trace before `e` may have changed:
    /// the running task (a switch may be lost) and the open contexts.
    fn apply_after(&mut self, e: &Event, victim: i32, facts: &CpuFacts) {
        if facts.gap_ends_at(e.ts) {
            self.cur = None;
            self.stack.clear();
            self.after_loss = true;
            self.throttle.reset();
            self.picked_over_victim = false;
        }
        if matches!(e.kind, Kind::Switch { .. }) {
            self.after_loss = false;
        }
        self.apply(e, victim);
    }

    fn apply(&mut self, e: &Event, victim: i32) {
        self.throttle.observe(e);
        match e.kind {
            Kind::Switch {
                prev_pid,
                prev_prio,
                prev_state,
                next_pid,
                next_prio,
            } => {
                // A switch happens in task context: any context still open lost its exit event.
                self.stack.clear();
                self.cur = Some((next_pid, next_prio));
                if next_pid == victim {
                    self.victim_prio = Some(next_prio);
                    // Running means woken, even where the waking event was not seen.
                    self.woken = true;
                }
                if prev_pid == victim {
                    self.victim_prio = Some(prev_prio);
                    self.busy &= prev_state == 0;
                    self.queued = prev_state == 0;
                }
                if next_pid == victim {
                    self.queued = false;
                }
                self.picked_over_victim = self.queued
                    && next_pid != victim
                    && next_prio >= MAX_RT_PRIO
                    && self.victim_prio.is_some_and(|v| v < MAX_RT_PRIO);
            }
            Kind::Waking {
                pid,
                prio,
                woken,
                target_cpu,
            } if pid == victim => {
                self.victim_prio = Some(prio);
                self.queued |= woken && u32::try_from(target_cpu) == Ok(e.cpu);
            }
            Kind::IrqEntry { irq } => self.push(Ctx::Irq(irq)),
            Kind::VectorEntry(v) => self.push(Ctx::Vector(v)),
            Kind::SoftirqEntry { vec } => self.push(Ctx::Softirq(vec)),
            Kind::HrtimerEntry { .. } => self.push(Ctx::Hrtimer),
            Kind::IrqExit { irq } => self.pop(Ctx::Irq(irq)),
            Kind::VectorExit(v) => self.pop(Ctx::Vector(v)),
            Kind::SoftirqExit { vec } => self.pop(Ctx::Softirq(vec)),
            Kind::HrtimerExit => self.pop(Ctx::Hrtimer),
            Kind::Waking { .. } | Kind::Migrate { .. } => {}
        }
    }

    fn push(&mut self, c: Ctx) {
        if self.stack.len() < MAX_DEPTH {
            self.stack.push(c);
        }
    }

    fn pop(&mut self, c: Ctx) {
        if let Some(i) = self.stack.iter().rposition(|&x| x == c) {
            self.stack.truncate(i);
        }
    }

    fn classify(&self, cpu: usize, victim: i32, names: &Decoder) -> Key {
        for c in self.stack.iter().rev() {
            match *c {
                Ctx::Irq(n) => {
                    return Key::plain(CauseKind::Irq, &format!("{n}:{}", names.irq_name(n)));
                }
                Ctx::Vector(v) => return Key::plain(CauseKind::Irq, v.name()),
                Ctx::Softirq(v) => {
                    let name = SOFTIRQ_NAMES.get(v as usize).copied().unwrap_or("?");
                    return Key::plain(CauseKind::Softirq, name);
                }
                Ctx::Hrtimer => {}
            }
        }
        if self.stack.contains(&Ctx::Hrtimer) {
            return Key::plain(CauseKind::Timer, "hrtimer callbacks");
        }
        if self.after_loss {
            return Key::plain(CauseKind::Lost, LOST_STATE);
        }
        let Some((pid, prio)) = self.cur else {
            return Key::plain(CauseKind::Invisible, "before the trace");
        };
        let thread = |kind| Key {
            kind,
            name: names.comm(pid),
            pid: Some(pid),
            prio: Some(prio),
            inversion: false,
        };
        // A real-time victim, runnable, while the class is stopped and a lower-class task (or
        // the idle task) runs: the kernel's throttle holds it, not that task.
        let rt_victim = self.victim_prio.is_some_and(|v| v < MAX_RT_PRIO);
        if self.woken
            && rt_victim
            && pid != victim
            && prio >= MAX_RT_PRIO
            && (self.throttle.since().is_some() || self.picked_over_victim)
        {
            return Key::plain(
                CauseKind::Throttled,
                &format!(
                    "real-time class stopped on CPU {cpu} (RT throttling at \
                     sched_rt_runtime_us, or the fair server)"
                ),
            );
        }
        match (pid, self.woken) {
            (0, false) => Key::plain(CauseKind::IdleExit, "idle state exit"),
            (0, true) => Key::plain(CauseKind::Wakeup, "idle to task switch"),
            (p, true) if p == victim && self.busy => Key {
                name: format!("{} (its previous job)", names.comm(pid)),
                ..thread(CauseKind::Thread)
            },
            (p, true) if p == victim => Key {
                pid: Some(victim),
                ..Key::plain(CauseKind::Wakeup, "switch-in and return to the task")
            },
            // Waiting for the timer while a task runs: the interrupt should have cut in, and
            // nothing recorded says why it did not.
            (p, false) if p == victim => Key::plain(CauseKind::Invisible, LATE_IRQ_SELF),
            (_, false) => Key {
                name: format!("{LATE_IRQ} while {} ran", names.comm(pid)),
                pid: Some(pid),
                ..Key::plain(CauseKind::Invisible, "")
            },
            (_, true) => {
                let mut k = thread(CauseKind::Thread);
                k.name = name_threaded_irq(k.name, |irq| names.irq_name_seen(irq));
                // Kernel priorities: a larger number is a lower priority.
                k.inversion = self.victim_prio.is_some_and(|v| prio > v);
                k
            }
        }
    }
}

/// Names a threaded interrupt handler as what it is: PREEMPT_RT (and `threadirqs`) kernels run
/// each interrupt's handler in a SCHED_FIFO 50 kernel thread called `irq/<number>-<action>`
/// (kernel/irq/manage.c, `setup_irq_thread`), which delays a lower-priority task like any
/// thread but is interrupt work. The comm cuts the action at 15 characters (`irq/25-virtio0-`
/// for `virtio0-input.0`); `action_of` gives the whole name where the trace has it (the
/// `irq_handler_entry` events of the interrupt's primary handler), used when the cut one is
/// its prefix. Other names are returned as they are.
pub(crate) fn name_threaded_irq(comm: String, action_of: impl Fn(i32) -> Option<String>) -> String {
    let Some((irq, cut)) = comm.strip_prefix("irq/").and_then(|r| r.split_once('-')) else {
        return comm;
    };
    if irq.is_empty() || !irq.bytes().all(|b| b.is_ascii_digit()) {
        return comm;
    }
    let action = irq
        .parse()
        .ok()
        .and_then(action_of)
        .filter(|whole| whole.starts_with(cut))
        .unwrap_or_else(|| cut.to_string());
    format!("{comm} (threaded handler of IRQ {irq}, {action})")
}

/// One cause aggregated over a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopCause {
    /// Kind.
    pub kind: CauseKind,
    /// Name.
    pub name: String,
    /// Thread id, where one.
    pub pid: Option<i32>,
    /// Delay charged to it over all explained windows.
    pub total_ns: u64,
    /// Windows it appears in.
    pub count: u64,
    /// Windows where it is the largest cause.
    pub main_count: u64,
    /// `invisible` only: of the windows it appears in, how many had steal time on their CPU
    /// in `/proc/stat` around them (null where no window had a steal figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_windows: Option<u64>,
    /// `invisible` only: the largest steal time around one of those windows (the
    /// `/proc/stat` sampling interval around a window is longer than the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_max_ns: Option<u64>,
}

/// Aggregates causes over `explanations`, largest total first (ties: most frequent).
pub fn top_causes(explanations: &[Explanation]) -> Vec<TopCause> {
    let mut out: Vec<TopCause> = Vec::new();
    for ex in explanations {
        for (i, c) in ex.causes.iter().enumerate() {
            let slot = match out
                .iter()
                .position(|t| t.kind == c.kind && t.name == c.name && t.pid == c.pid)
            {
                Some(s) => s,
                None => {
                    out.push(TopCause {
                        kind: c.kind,
                        name: c.name.clone(),
                        pid: c.pid,
                        total_ns: 0,
                        count: 0,
                        main_count: 0,
                        steal_windows: None,
                        steal_max_ns: None,
                    });
                    out.len() - 1
                }
            };
            out[slot].total_ns += c.ns;
            out[slot].count += 1;
            out[slot].main_count += u64::from(i == 0);
            if let (CauseKind::Invisible, Some(steal)) = (c.kind, ex.steal_ns) {
                let t = &mut out[slot];
                *t.steal_windows.get_or_insert(0) += u64::from(steal > 0);
                t.steal_max_ns = t.steal_max_ns.max(Some(steal));
            }
        }
    }
    out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.count.cmp(&a.count)));
    out
}

/// What the kernel's stops of the real-time class over a run were, in one phrase for
/// verdicts and summaries: `the kernel stopped the real-time class N time(s), T ms in all
/// (CPU c: x ms, ...; ...)`, the first four listed.
pub fn describe_throttled(stretches: &[Stretch]) -> String {
    let total: u64 = stretches.iter().map(Stretch::len_ns).sum();
    let first: Vec<String> = stretches
        .iter()
        .take(4)
        .map(|s| format!("CPU {}: {:.1} ms", s.cpu, s.len_ns() as f64 / 1e6))
        .collect();
    format!(
        "the kernel stopped the real-time class {} time(s), {:.1} ms in all ({}{}; RT throttling \
         at sched_rt_runtime_us, or the fair server; kernel trace)",
        stretches.len(),
        total as f64 / 1e6,
        first.join(", "),
        if stretches.len() > first.len() {
            ", ..."
        } else {
            ""
        }
    )
}

/// Up to `max` lines naming the top causes, for terminal summaries; `what` names the
/// windows explained (`"outliers"`, `"misses"`).
pub fn summary_lines(top: &[TopCause], windows: usize, what: &str, max: usize) -> Vec<String> {
    top.iter()
        .take(max)
        .map(|t| {
            let who = match t.pid {
                Some(p) => format!("{} {} (pid {p})", t.kind.name(), t.name),
                None => format!("{} {}", t.kind.name(), t.name),
            };
            let steal = match (t.steal_windows, t.steal_max_ns) {
                (Some(0), _) => "; no steal time around them in /proc/stat".to_string(),
                (Some(n), Some(max)) => format!(
                    "; /proc/stat steal around {n} of them, up to {:.1} ms",
                    max as f64 / 1e6
                ),
                _ => String::new(),
            };
            format!(
                "{who}: {:.1} µs total, in {}/{windows} {what}, main cause of {}{steal}",
                t.total_ns as f64 / 1e3,
                t.count,
                t.main_count
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn threaded_interrupt_handlers_are_named_as_such() {
        let n = |comm: &str| super::name_threaded_irq(comm.to_string(), |_| None);
        // Comms of a Debian 6.1 PREEMPT_RT arm64 guest (qemu virt) and an x86 one, as
        // /proc/<pid>/comm cuts them.
        assert_eq!(
            n("irq/13-uart-pl0"),
            "irq/13-uart-pl0 (threaded handler of IRQ 13, uart-pl0)"
        );
        assert_eq!(
            n("irq/4-ttyS0"),
            "irq/4-ttyS0 (threaded handler of IRQ 4, ttyS0)"
        );
        for other in ["irqbalance", "irq/work", "ksoftirqd/0", "preempt-p5"] {
            assert_eq!(n(other), other);
        }
    }

    #[test]
    fn a_cut_handler_name_is_completed_from_the_trace() {
        use super::name_threaded_irq as n;
        // rt-amd64 guest: the virtio RNG's handler thread, as its comm cuts it, and the name
        // its irq_handler_entry events carry.
        let seen = |irq: i32| (irq == 25).then(|| "virtio0-input.0".to_string());
        assert_eq!(
            n("irq/25-virtio0-".into(), seen),
            "irq/25-virtio0- (threaded handler of IRQ 25, virtio0-input.0)"
        );
        // A name that does not continue the comm's (another action sharing the line) is
        // not taken; the comm's cut name stays.
        let other = |_| Some("ahci[0000:00:1f.2]".to_string());
        assert_eq!(
            n("irq/25-virtio0-".into(), other),
            "irq/25-virtio0- (threaded handler of IRQ 25, virtio0-)"
        );
    }

    use super::*;
    use crate::format::EventFormat;

    fn decoder() -> Decoder {
        let f = EventFormat::parse(
            "name: x\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n",
        )
        .unwrap();
        Decoder::new(&[f]).unwrap()
    }

    fn ev(ts: u64, kind: Kind) -> Event {
        Event { ts, cpu: 1, kind }
    }

    /// The victim `pid` (priority 19) woken towards CPU 1.
    fn waking(ts: u64, pid: i32) -> Event {
        let kind = Kind::Waking {
            pid,
            prio: 19,
            target_cpu: 1,
            woken: false,
        };
        ev(ts, kind)
    }

    /// A local timer interrupt at `at` whose hrtimer wakes `victim`, one event every `step`.
    fn timer_irq_wakes(at: u64, step: u64, victim: i32) -> [Event; 5] {
        [
            ev(at, Kind::VectorEntry(Vector::LocalTimer)),
            ev(
                at + step,
                Kind::HrtimerEntry {
                    now: i64::try_from(at).unwrap(),
                },
            ),
            waking(at + 2 * step, victim),
            ev(at + 3 * step, Kind::HrtimerExit),
            ev(at + 4 * step, Kind::VectorExit(Vector::LocalTimer)),
        ]
    }

    fn switch(ts: u64, prev: i32, next: i32, next_prio: i32) -> Event {
        ev(
            ts,
            Kind::Switch {
                prev_pid: prev,
                prev_prio: 120,
                prev_state: 1, // sleeping

                next_pid: next,
                next_prio,
            },
        )
    }

    #[test]
    fn a_higher_priority_hog_is_the_main_cause_and_causes_add_up() {
        const V: i32 = 100;
        const HOG: i32 = 200;
        let [a, b, c, d, e] = timer_irq_wakes(1_000, 100, V);
        let events = [
            switch(0, V, HOG, 9),
            a,
            b,
            c,
            d,
            e,
            switch(501_400, HOG, V, 19),
        ];
        let w = Window {
            release_ns: 1_000,
            end_ns: 502_000,
            pid: V,
        };
        let ex = explain(
            1,
            &events,
            &w,
            Some(1_200),
            &decoder(),
            &CpuFacts::default(),
        );
        assert_eq!(ex.latency_ns, 501_000);
        assert_eq!(ex.causes.iter().map(|c| c.ns).sum::<u64>(), 501_000);
        let main = ex.main_cause().unwrap();
        assert_eq!(
            (main.kind, main.pid, main.ns),
            (CauseKind::Thread, Some(HOG), 500_000)
        );
        assert_eq!(main.priority, Some(90));
        assert!(!main.inversion);
        assert!(ex.covered);
        let irq = ex.causes.iter().find(|c| c.kind == CauseKind::Irq).unwrap();
        assert_eq!(irq.ns, 400);
        let wakeup = ex
            .causes
            .iter()
            .find(|c| c.kind == CauseKind::Wakeup)
            .unwrap();
        assert_eq!(wakeup.ns, 600);
        assert_eq!(ex.segments.first().unwrap().start_ns, 1_000);
        assert_eq!(ex.segments.last().unwrap().end_ns, 502_000);
    }

    #[test]
    fn lower_priority_holder_is_an_inversion_and_idle_is_capped() {
        const V: i32 = 100;
        let events = [
            switch(0, 5, 0, 120),
            waking(50_000, V),
            switch(50_100, 0, 7, 120),
            switch(80_000, 7, V, 19),
        ];
        let w = Window {
            release_ns: 10_000,
            end_ns: 80_000,
            pid: V,
        };
        let facts = CpuFacts {
            idle_exit_bound_ns: 1_000,
            ..CpuFacts::default()
        };
        let ex = explain(1, &events, &w, Some(50_000), &decoder(), &facts);
        let kinds: Vec<_> = ex.causes.iter().map(|c| (c.kind, c.ns)).collect();
        assert!(kinds.contains(&(CauseKind::IdleExit, 1_000)), "{kinds:?}");
        assert!(kinds.contains(&(CauseKind::Invisible, 39_000)), "{kinds:?}");
        let t = ex
            .causes
            .iter()
            .find(|c| c.kind == CauseKind::Thread)
            .unwrap();
        assert_eq!((t.pid, t.ns, t.inversion), (Some(7), 29_900, true));
        assert_eq!(ex.causes.iter().map(|c| c.ns).sum::<u64>(), 70_000);
    }

    #[test]
    fn a_gap_with_nothing_recorded_before_the_wake_up_is_invisible() {
        // A host stall: a SCHED_OTHER thread runs, the victim's timer is due at 10 µs, and
        // the CPU records nothing until the local timer interrupt 2 ms later.
        const V: i32 = 100;
        const X: i32 = 300;
        let [a, b, c, d, e] = timer_irq_wakes(2_010_000, 1_000, V);
        let events = [
            switch(0, V, X, 120),
            a,
            b,
            c,
            d,
            e,
            switch(2_016_000, X, V, 19),
        ];
        let w = Window {
            release_ns: 10_000,
            end_ns: 2_020_000,
            pid: V,
        };
        let mut ex = explain(
            1,
            &events,
            &w,
            Some(2_012_000),
            &decoder(),
            &CpuFacts::default(),
        );
        assert_eq!(ex.causes.iter().map(|c| c.ns).sum::<u64>(), ex.latency_ns);
        let main = ex.main_cause().unwrap();
        assert_eq!(
            (main.kind, main.pid, main.ns),
            (CauseKind::Invisible, Some(X), 2_000_000),
            "{:?}",
            ex.causes
        );
        assert!(main.name.starts_with(LATE_IRQ), "{}", main.name);
        // Nothing of the stall is charged to the thread or the timer.
        assert!(ex.causes.iter().all(|c| c.kind != CauseKind::Timer));
        assert_eq!(ex.ns_of(&[CauseKind::Thread]), 2_000, "{:?}", ex.causes);
        // The steal figure the session attaches shows beside it in the run's summary.
        ex.steal_ns = Some(10_000_000);
        let quiet = Explanation {
            steal_ns: Some(0),
            ..ex.clone()
        };
        let top = top_causes(&[ex, quiet]);
        assert_eq!(top[0].kind, CauseKind::Invisible);
        assert_eq!(
            (top[0].steal_windows, top[0].steal_max_ns),
            (Some(1), Some(10_000_000))
        );
        assert!(top[1..].iter().all(|t| t.steal_windows.is_none()));
        let line = &summary_lines(&top, 2, "misses", 5)[0];
        assert!(line.contains("in 2/2 misses"), "{line}");
        assert!(
            line.contains("steal around 1 of them, up to 10.0 ms"),
            "{line}"
        );
    }

    #[test]
    fn an_idle_gap_past_the_exit_latency_is_invisible() {
        const V: i32 = 100;
        let events = [
            switch(0, V, 0, 120),
            ev(1_500_000, Kind::VectorEntry(Vector::LocalTimer)),
            waking(1_501_000, V),
            ev(1_502_000, Kind::VectorExit(Vector::LocalTimer)),
            switch(1_503_000, 0, V, 19),
        ];
        let w = Window {
            release_ns: 0,
            end_ns: 1_505_000,
            pid: V,
        };
        let facts = CpuFacts {
            idle_exit_bound_ns: 100_000,
            ..CpuFacts::default()
        };
        let ex = explain(1, &events, &w, Some(1_501_000), &decoder(), &facts);
        assert_eq!(ex.causes.iter().map(|c| c.ns).sum::<u64>(), 1_505_000);
        let kinds: Vec<_> = ex.causes.iter().map(|c| (c.kind, c.ns)).collect();
        assert_eq!(kinds[0], (CauseKind::Invisible, 1_400_000), "{kinds:?}");
        assert!(kinds.contains(&(CauseKind::IdleExit, 100_000)), "{kinds:?}");
        assert!(kinds.contains(&(CauseKind::Irq, 2_000)), "{kinds:?}");
        assert_eq!(ex.ns_of(&[CauseKind::Wakeup]), 3_000, "{kinds:?}");
    }

    #[test]
    fn a_lost_stretch_is_lost_not_the_thread_that_ran_before_it() {
        // A SCHED_OTHER thread (pid 300) runs; the trace loses everything between 20 µs and
        // 900 µs (a switch to the hog, pid 200, among it); after the gap the hog is switched
        // out for the victim. The stretch and the time until that switch are `lost`.
        const V: i32 = 100;
        let events = [
            switch(0, V, 300, 120),
            ev(20_000, Kind::VectorEntry(Vector::LocalTimer)),
            ev(900_000, Kind::VectorExit(Vector::LocalTimer)),
            switch(950_000, 200, V, 19),
        ];
        let w = Window {
            release_ns: 10_000,
            end_ns: 1_000_000,
            pid: V,
        };
        let facts = CpuFacts {
            lost: vec![(20_000, 900_000)],
            ..CpuFacts::default()
        };
        let ex = explain(1, &events, &w, None, &decoder(), &facts);
        assert!(!ex.covered);
        assert_eq!(ex.causes.iter().map(|c| c.ns).sum::<u64>(), 990_000);
        let lost: Vec<_> = ex
            .causes
            .iter()
            .filter(|c| c.kind == CauseKind::Lost)
            .map(|c| (c.name.as_str(), c.ns))
            .collect();
        assert_eq!(
            lost,
            [(LOST_EVENTS, 880_000), (LOST_STATE, 50_000)],
            "{:?}",
            ex.causes
        );
        // Before the gap: the thread that ran while the timer was awaited (invisible, with
        // its pid); nothing after the gap is charged to it.
        assert_eq!(ex.ns_of(&[CauseKind::Invisible]), 10_000, "{:?}", ex.causes);
        assert_eq!(ex.ns_of(&[CauseKind::Wakeup]), 50_000, "{:?}", ex.causes);
        // Without the gap the same events charge the stretch to the thread / late irq.
        let whole = explain(1, &events, &w, None, &decoder(), &CpuFacts::default());
        assert!(whole.covered);
        assert_eq!(whole.ns_of(&[CauseKind::Lost]), 0);
    }

    /// A switch of `prev` (kernel priority `prev_prio`, still runnable) out for `next`.
    fn preempt(ts: u64, prev: i32, prev_prio: i32, next: i32, next_prio: i32) -> Event {
        ev(
            ts,
            Kind::Switch {
                prev_pid: prev,
                prev_prio,
                prev_state: 0,
                next_pid: next,
                next_prio,
            },
        )
    }

    #[test]
    fn a_real_time_task_waiting_out_the_throttle_is_throttled_not_the_thread_that_ran() {
        // A SCHED_FIFO hog (pid 200, kernel prio 29) is preempted by a SCHED_OTHER task (pid
        // 300) at 1 ms: the class is stopped. The victim (prio 19) is woken at 5 ms and runs
        // only when the class resumes at 51 ms.
        const V: i32 = 100;
        let [a, b, c, d, e] = timer_irq_wakes(5_000_000, 100, V);
        let events = [
            switch(0, V, 200, 29),
            preempt(1_000_000, 200, 29, 300, 120),
            a,
            b,
            c,
            d,
            e,
            preempt(51_000_000, 300, 120, V, 19),
        ];
        let w = Window {
            release_ns: 5_000_000,
            end_ns: 51_001_000,
            pid: V,
        };
        let ex = explain(
            1,
            &events,
            &w,
            Some(5_000_200),
            &decoder(),
            &CpuFacts::default(),
        );
        assert_eq!(ex.causes.iter().map(|c| c.ns).sum::<u64>(), ex.latency_ns);
        let main = ex.main_cause().unwrap();
        assert_eq!(main.kind, CauseKind::Throttled, "{:?}", ex.causes);
        assert_eq!(main.kind.name(), "throttled");
        assert!(main.name.contains("CPU 1"), "{}", main.name);
        assert_eq!(main.pid, None);
        assert!(main.ns > 45_000_000, "{:?}", ex.causes);
        assert_eq!(ex.ns_of(&[CauseKind::Thread]), 0, "{:?}", ex.causes);
        let stretch = ex.throttled.expect("the stretch");
        assert_eq!((stretch.cpu, stretch.start_ns), (1, 1_000_000));
        assert_eq!(stretch.end_ns, 51_000_000);
        // The same window without the throttle (the hog blocks instead of being preempted):
        // the SCHED_OTHER task is a thread holding the CPU, an inversion.
        let mut quiet = events;
        quiet[1] = switch(1_000_000, 200, 300, 120);
        let ex = explain(
            1,
            &quiet,
            &w,
            Some(5_000_200),
            &decoder(),
            &CpuFacts::default(),
        );
        assert_eq!(ex.ns_of(&[CauseKind::Throttled]), 0, "{:?}", ex.causes);
        assert!(ex.throttled.is_none());
        let t = ex.main_cause().unwrap();
        assert_eq!(
            (t.kind, t.pid, t.inversion),
            (CauseKind::Thread, Some(300), true)
        );
    }

    #[test]
    fn an_idle_cpu_with_the_real_time_class_stopped_is_throttled() {
        // RT throttling with nothing else to run: the hog is switched out for the idle task.
        const V: i32 = 100;
        let events = [
            preempt(0, V, 19, 0, 120),
            ev(2_000_000, Kind::VectorEntry(Vector::LocalTimer)),
            ev(2_001_000, Kind::VectorExit(Vector::LocalTimer)),
            preempt(50_000_000, 0, 120, V, 19),
        ];
        let w = Window {
            release_ns: 1_000_000,
            end_ns: 50_000_000,
            pid: V,
        };
        let ex = explain(1, &events, &w, None, &decoder(), &CpuFacts::default());
        assert_eq!(
            ex.ns_of(&[CauseKind::Throttled]),
            48_999_000,
            "{:?}",
            ex.causes
        );
        assert_eq!(ex.ns_of(&[CauseKind::Irq]), 1_000, "{:?}", ex.causes);
    }

    #[test]
    fn a_lower_class_task_picked_over_a_queued_real_time_task_is_throttled() {
        // The stretch began long before the window (its stopping switch is not in view):
        // the victim is queued (`sched_wakeup`) at 2 ms, yet the CPU switches from one
        // SCHED_OTHER task to another at 3 ms. Until 3 ms the task that ran may hold a
        // non-preemptible section (a thread, an inversion); after it, the scheduler passed
        // the victim over: throttled.
        const V: i32 = 100;
        let wakeup = ev(
            2_000_000,
            Kind::Waking {
                pid: V,
                prio: 19,
                target_cpu: 1,
                woken: true,
            },
        );
        let events = [
            switch(0, 300, 301, 120),
            waking(1_999_000, V),
            wakeup,
            switch(3_000_000, 301, 302, 120),
            preempt(40_000_000, 302, 120, V, 19),
        ];
        let w = Window {
            release_ns: 1_999_000,
            end_ns: 40_000_000,
            pid: V,
        };
        let ex = explain(
            1,
            &events,
            &w,
            Some(1_999_000),
            &decoder(),
            &CpuFacts::default(),
        );
        assert_eq!(
            ex.ns_of(&[CauseKind::Throttled]),
            37_000_000,
            "{:?}",
            ex.causes
        );
        let t = ex
            .causes
            .iter()
            .find(|c| c.kind == CauseKind::Thread)
            .unwrap();
        assert_eq!((t.pid, t.ns, t.inversion), (Some(301), 1_001_000, true));
    }

    #[test]
    fn the_tracker_counts_each_stopped_stretch_once() {
        let mut t = ThrottleTracker::default();
        let evs = [
            preempt(10, 200, 29, 300, 120), // stopped
            preempt(20, 300, 120, 301, 120),
            preempt(30, 301, 120, 0, 120),
            preempt(40, 0, 120, 200, 29), // resumed
            switch(50, 200, 300, 120),    // the hog sleeps: not a throttle
            switch(60, 300, 200, 29),
            preempt(5_000_000, 200, 29, 300, 120), // stopped again, open at the end
        ];
        for e in &evs {
            t.observe(e);
        }
        assert_eq!((t.count, t.total_ns), (1, 30));
        assert_eq!(t.stretches, [(10, 40)]);
        assert_eq!(t.until(6_000_000), [(10, 40), (5_000_000, 6_000_000)]);
        t.reset();
        assert_eq!(t.until(6_000_000), [(10, 40)]);
        // Inside a stop a higher thread (pid 400) runs a moment and is stopped too: the same
        // stop, once.
        let mut t = ThrottleTracker::default();
        for e in [
            preempt(1_000, 200, 29, 300, 120),
            preempt(2_000, 300, 120, 400, 9),
            preempt(3_000, 400, 9, 300, 120),
            preempt(50_000, 300, 120, 200, 29),
            switch(60_000, 200, 300, 120), // the hog sleeps: nothing queued
            preempt(70_000, 300, 120, 301, 120),
        ] {
            t.observe(&e);
        }
        assert_eq!(
            (t.count, t.stretches.as_slice()),
            (1, &[(1_000, 50_000)][..])
        );
    }

    #[test]
    fn no_switch_before_the_window_is_invisible_and_not_covered() {
        let w = Window {
            release_ns: 0,
            end_ns: 10,
            pid: 1,
        };
        let ex = explain(0, &[], &w, None, &decoder(), &CpuFacts::default());
        assert!(!ex.covered);
        assert_eq!(ex.causes[0].kind, CauseKind::Invisible);
        assert_eq!(ex.causes[0].ns, 10);
        let top = top_causes(&[ex.clone(), ex]);
        assert_eq!(
            (top[0].total_ns, top[0].count, top[0].main_count),
            (20, 2, 2)
        );
        assert_eq!(summary_lines(&top, 2, "misses", 5).len(), 1);
    }
}
