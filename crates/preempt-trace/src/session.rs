//! A tracing session: the instance, its readers, and the bounded per-CPU event history.
//!
//! [`Session::start`] sets up the instance (clock `mono` so timestamps are CLOCK_MONOTONIC,
//! the CPU mask, the buffer size, the events) and starts a reader thread (SCHED_OTHER) that
//! drains every CPU's ring buffer every [`Options::poll_interval`]. The history keeps the last
//! [`Options::retain_ns`] of events per CPU and at most [`Options::max_events_per_cpu`], so a
//! run of any length uses bounded memory; explain a window within that time.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use preempt_io::sys::procstat;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::attribute::{self, CpuFacts, Explanation, Stretch, ThrottleTracker, Window};
use crate::decode::{Decoder, EVENTS, Event, FALLBACK_EVENTS, Kind};
use crate::format::{EventFormat, PageHeader};
use crate::ring::{CpuReader, Item};
use crate::tracefs::{self, Instance};

/// Session settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// CPUs to trace (`None`: every online CPU).
    pub cpus: Option<Vec<usize>>,
    /// Ring buffer per CPU, KiB. It must hold one poll interval of events: at the ~100 000
    /// events/s of a busy CPU (≈ 40 bytes each) 4 MiB is a second, 20× the poll interval.
    pub buffer_kb: u32,
    /// History kept per CPU.
    pub retain_ns: u64,
    /// Most events kept per CPU (≈ 40 bytes each).
    pub max_events_per_cpu: usize,
    /// How often the reader thread drains the buffers.
    pub poll_interval: Duration,
    /// Run the reader thread at this SCHED_FIFO priority (`None`: SCHED_OTHER). See
    /// [`DEFAULT_READER_PRIORITY`] for the trade-off.
    pub reader_priority: Option<u8>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cpus: None,
            buffer_kb: 4096,
            retain_ns: 3_000_000_000,
            max_events_per_cpu: 500_000,
            poll_interval: Duration::from_millis(50),
            reader_priority: DEFAULT_READER_PRIORITY,
        }
    }
}

/// The reader thread's default scheduling: SCHED_FIFO priority 1, below every real-time task
/// a user has (preempt's executors and the measurement threads run at 50 and above) and above
/// every SCHED_OTHER thread.
///
/// Why: a SCHED_OTHER reader shares the CPU with whatever load runs beside the app, and under
/// `stress-ng --cpu 2 --io 2 --vm 1` it was held off long enough for the writer to overwrite
/// pages it had not read (docs/MEASURING.md, "What is lost under load", gives the figures and
/// the command). The cost: on a kernel without full preemption a real-time task woken on the
/// reader's CPU waits for the `read(2)` page copy in progress; the reader leaves the traced
/// CPUs when another CPU is online, and the same measurement gives its cost to a 10 kHz task.
pub const DEFAULT_READER_PRIORITY: Option<u8> = Some(1);

/// A `sched_waking` this much before the release still belongs to the window (the trace clock
/// and `clock_gettime` read the same clock through different paths).
const WAKE_SLACK_NS: u64 = 5_000;

/// Puts back a switch-in the buffer does not hold: on this kernel (6.18, a KVM guest) the
/// `sched_switch` out of the idle task is often missing from the ring buffer (seen in the
/// kernel's own text output too: 7 switches from `swapper/N` against 20 to it in one 0.3 s
/// sample), while the switch *out* of the woken task arrives. Without the repair the CPU looks
/// idle while that task runs, and its whole run is charged to the wake-up path.
///
/// When `next` is a switch whose `prev_pid` is not the task the history says is running, the
/// missed switch-in happened after that task's wake-up on this CPU: at the end of the interrupt
/// (and the softirqs run on its exit) that woke it, which is where the kernel schedules. The
/// synthetic event goes there; without a wake-up in sight nothing is added.
fn restore_missing_switch_in(events: &mut VecDeque<Event>, next: &Event) {
    let Kind::Switch {
        prev_pid,
        prev_prio,
        ..
    } = next.kind
    else {
        return;
    };
    // The task the history says runs: the last switch's `next`.
    let mut last_switch = None;
    let mut woken_at = None;
    for (i, e) in events.iter().enumerate().rev() {
        match e.kind {
            Kind::Switch { next_pid, .. } => {
                last_switch = Some((i, next_pid));
                break;
            }
            Kind::Waking {
                pid, woken: true, ..
            } if pid == prev_pid && woken_at.is_none() => {
                woken_at = Some(i);
            }
            _ => {}
        }
    }
    let (Some((_, running)), Some(w)) = (last_switch, woken_at) else {
        return;
    };
    if running == prev_pid {
        return;
    }
    // After the hard interrupt that woke it returns, and after the softirqs run on that exit.
    let mut at = None;
    let mut i = w + 1;
    while i < events.len() {
        if matches!(events[i].kind, Kind::IrqExit { .. } | Kind::VectorExit(_)) {
            let mut j = i + 1;
            while j < events.len() && matches!(events[j].kind, Kind::SoftirqEntry { .. }) {
                while j < events.len() && !matches!(events[j].kind, Kind::SoftirqExit { .. }) {
                    j += 1;
                }
                j += 1;
            }
            at = Some(j.min(events.len()));
            break;
        }
        i += 1;
    }
    let at = at.unwrap_or(events.len());
    let ts = events[at - 1].ts.saturating_add(1).min(next.ts);
    events.insert(
        at,
        Event {
            ts,
            cpu: next.cpu,
            kind: Kind::Switch {
                prev_pid: running,
                prev_prio: 120,
                prev_state: 0,
                next_pid: prev_pid,
                next_prio: prev_prio,
            },
        },
    );
}

#[derive(Debug)]
struct CpuHistory {
    events: VecDeque<Event>,
    /// Stretches whose events the kernel reported lost: (last event before, first after).
    lost: VecDeque<(u64, u64)>,
    /// A page marked "missed events" was read and no record after it yet: the time stamp of
    /// the last event before the gap.
    gap_from: Option<u64>,
    last_ts: u64,
    facts: CpuFacts,
    loss: Loss,
    /// The stretches in which the kernel stopped the real-time class, over the session.
    throttle: ThrottleTracker,
}

/// What the trace lost, counted by the reader over the session (per CPU or summed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loss {
    /// Events read and decoded.
    pub events: u64,
    /// Pages read.
    pub pages: u64,
    /// Pages the kernel marked as coming after lost events.
    pub missed_pages: u64,
    /// Stretches of time whose events were lost (one per marked page).
    pub lost_stretches: u64,
    /// Their total length, ns (from the last event before each gap to the first after it).
    pub lost_ns: u64,
    /// The longest stretch, ns.
    pub lost_max_ns: u64,
    /// Events the ring buffer overwrote before they were read (`per_cpu/cpuN/stats`,
    /// `overrun`), read at [`Session::loss`].
    pub overrun: u64,
    /// Events the ring buffer dropped (`dropped events`; non-overwrite mode only).
    pub dropped: u64,
}

impl Loss {
    fn add(&mut self, o: &Loss) {
        self.events += o.events;
        self.pages += o.pages;
        self.missed_pages += o.missed_pages;
        self.lost_stretches += o.lost_stretches;
        self.lost_ns += o.lost_ns;
        self.lost_max_ns = self.lost_max_ns.max(o.lost_max_ns);
        self.overrun += o.overrun;
        self.dropped += o.dropped;
    }

    /// Whether any event was lost.
    pub fn any(&self) -> bool {
        self.missed_pages + self.lost_stretches + self.overrun + self.dropped > 0
    }
}

#[derive(Debug)]
struct Inner {
    hdr: PageHeader,
    readers: Vec<CpuReader>,
    decoder: Decoder,
    cpus: Vec<Option<CpuHistory>>,
    /// (CLOCK_MONOTONIC ns, `/proc/stat` then): steal time around a window.
    steal: VecDeque<(u64, procstat::Snapshot)>,
    retain_ns: u64,
    max_events: usize,
    /// Most pages read per CPU per poll: the ring's size.
    max_pages: usize,
    /// When tracing began (CLOCK_MONOTONIC ns): a gap before the first event read starts
    /// here, not at 0.
    started_ns: u64,
    fault: Option<String>,
}

/// A running trace. Dropping it stops the reader and removes the instance.
#[derive(Debug)]
pub struct Session {
    inner: Arc<Mutex<Inner>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    instance: Option<Instance>,
    cpus: Vec<usize>,
}

impl Session {
    /// Creates the instance, enables the events and starts reading.
    ///
    /// # Errors
    /// [`Error::Unavailable`]/[`Error::Permission`] when tracing cannot be used here (the
    /// message names the fix), [`Error::Format`] when a required event is missing.
    pub fn start(opts: Options) -> Result<Session, Error> {
        let root = tracefs::locate()?;
        let cpus = match &opts.cpus {
            Some(c) => c.clone(),
            None => {
                preempt_io::sys::cpu::online_cpus().map_err(|e| Error::io("listing CPUs", e))?
            }
        };
        if cpus.is_empty() {
            return Err(Error::Format("no CPU to trace".into()));
        }
        let instance = Instance::create(&root)?;
        instance.write("tracing_on", "0")?;
        instance.write("trace_clock", "mono")?;
        instance.write("buffer_size_kb", &opts.buffer_kb.to_string())?;
        instance.write("tracing_cpumask", &cpumask(&cpus))?;
        let mut formats = Vec::new();
        let has_vectors = instance
            .dir()
            .join("events/irq_vectors/local_timer_entry")
            .is_dir();
        let fallback = if has_vectors {
            &[][..]
        } else {
            FALLBACK_EVENTS
        };
        for (system, event) in EVENTS.iter().chain(fallback) {
            let dir = instance.dir().join("events").join(system).join(event);
            if !dir.is_dir() {
                if matches!(*event, "sched_switch" | "sched_waking") {
                    return Err(Error::Format(format!(
                        "this kernel has no {system}/{event} trace event, which explaining needs"
                    )));
                }
                continue;
            }
            let text = instance.read_format(system, event)?;
            formats.push(EventFormat::parse(&text).map_err(Error::Format)?);
            instance.write(&format!("events/{system}/{event}/enable"), "1")?;
        }
        let decoder = Decoder::new(&formats).map_err(Error::Format)?;
        let hdr_text = tracefs::read_file(&root.join("events/header_page"))
            .map_err(|e| Error::io("reading events/header_page", e))?;
        let hdr = PageHeader::parse(&hdr_text).map_err(Error::Format)?;
        let mut readers = Vec::new();
        let max_cpu = cpus.iter().copied().max().unwrap_or(0);
        let mut hist: Vec<Option<CpuHistory>> = (0..=max_cpu).map(|_| None).collect();
        for &cpu in &cpus {
            let path: PathBuf = instance
                .dir()
                .join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            readers.push(
                CpuReader::open(&path, cpu, &hdr)
                    .map_err(|e| Error::io(format!("opening {}", path.display()), e))?,
            );
            hist[cpu] = Some(CpuHistory {
                events: VecDeque::new(),
                lost: VecDeque::new(),
                gap_from: None,
                last_ts: 0,
                facts: CpuFacts {
                    idle_exit_bound_ns: idle_exit_bound_ns(cpu),
                    lost: Vec::new(),
                },
                loss: Loss::default(),
                throttle: ThrottleTracker::default(),
            });
        }
        let started_ns = preempt_io::sys::clock::monotonic_now_ns();
        instance.write("tracing_on", "1")?;
        let max_pages = ring_pages(opts.buffer_kb, &hdr);
        let inner = Arc::new(Mutex::new(Inner {
            hdr,
            readers,
            decoder,
            cpus: hist,
            steal: VecDeque::new(),
            retain_ns: opts.retain_ns,
            max_events: opts.max_events_per_cpu,
            max_pages,
            started_ns,
            fault: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (inner, stop, every) = (Arc::clone(&inner), Arc::clone(&stop), opts.poll_interval);
            let priority = opts.reader_priority;
            // The reader copies ring-buffer pages inside read(2); on a kernel without full
            // preemption a real-time task woken on the same CPU waits for that copy. Keep it
            // off the traced CPUs where any other CPU is online (best effort: on failure it
            // stays where the scheduler puts it).
            let spare: Vec<usize> = preempt_io::sys::cpu::online_cpus()
                .unwrap_or_default()
                .into_iter()
                .filter(|c| !cpus.contains(c))
                .collect();
            std::thread::Builder::new()
                .name("preempt-trace".into())
                .spawn(move || {
                    if !spare.is_empty() {
                        let _ = preempt_io::sys::sched::set_current_thread_affinity(&spare); // best effort, see above
                    }
                    if let Some(priority) = priority {
                        // Best effort too: without CAP_SYS_NICE / RLIMIT_RTPRIO the reader stays
                        // SCHED_OTHER, and what it loses under load shows in `Session::loss`.
                        let _ = preempt_io::sys::sched::set_current_thread_policy(
                            &preempt_io::sys::sched::Policy::Fifo { priority },
                        );
                    }
                    while !stop.load(Ordering::Relaxed) {
                        lock(&inner).poll();
                        std::thread::park_timeout(every);
                    }
                })
                .map_err(|e| Error::io("starting the trace reader thread", e))?
        };
        Ok(Session {
            inner,
            stop,
            reader: Some(reader),
            instance: Some(instance),
            cpus,
        })
    }

    /// The instance directory (under `<tracefs>/instances/`).
    pub fn instance_dir(&self) -> Option<PathBuf> {
        self.instance.as_ref().map(|i| i.dir().to_path_buf())
    }

    /// The CPUs traced.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Drains the buffers now (the reader thread does so every poll interval).
    pub fn poll(&self) {
        lock(&self.inner).poll();
    }

    /// What the trace lost so far, summed over the traced CPUs (the `overrun` and `dropped`
    /// counters are read from the instance's `per_cpu/cpuN/stats` now).
    pub fn loss(&self) -> Loss {
        let mut inner = lock(&self.inner);
        inner.poll();
        let mut total = Loss::default();
        for (cpu, h) in inner.cpus.iter().enumerate() {
            let Some(h) = h else { continue };
            let mut l = h.loss;
            if let Some(i) = &self.instance {
                let stats = i.dir().join(format!("per_cpu/cpu{cpu}/stats"));
                if let Ok(text) = std::fs::read_to_string(stats) {
                    l.overrun = stat_field(&text, "overrun");
                    l.dropped = stat_field(&text, "dropped events");
                }
            }
            total.add(&l);
        }
        total
    }

    /// Explains why the task `window.pid` ran on `cpu` only at `window.end_ns`.
    ///
    /// # Errors
    /// [`Error::NotCovered`] for a CPU not traced or a window older than the history, and a
    /// fault the reader met.
    pub fn explain(&self, cpu: usize, window: &Window) -> Result<Explanation, Error> {
        let mut inner = lock(&self.inner);
        inner.poll();
        if let Some(f) = &inner.fault {
            return Err(Error::Format(f.clone()));
        }
        inner.explain(cpu, window)
    }

    /// Explains several windows under one lock (cheaper than one [`Session::explain`] each).
    pub fn explain_all(&self, windows: &[(usize, Window)]) -> Vec<Result<Explanation, Error>> {
        let mut inner = lock(&self.inner);
        inner.poll();
        windows
            .iter()
            .map(|(cpu, w)| inner.explain(*cpu, w))
            .collect()
    }

    /// The stretches in which the kernel stopped the real-time class on a traced CPU since
    /// the session started (RT throttling or the fair server: a real-time task still
    /// runnable switched out for a lower-class task or the idle task, until a real-time task
    /// runs again; [`attribute::stops_rt_class`]), by CPU then time; one still open ends now.
    /// At most [`ThrottleTracker::MAX_KEPT`] per CPU.
    pub fn throttled(&self) -> Vec<Stretch> {
        let mut inner = lock(&self.inner);
        inner.poll();
        let now = preempt_io::sys::clock::monotonic_now_ns();
        let mut out = Vec::new();
        for (cpu, h) in inner.cpus.iter().enumerate() {
            let Some(h) = h else { continue };
            out.extend(
                h.throttle
                    .until(now)
                    .into_iter()
                    .map(|(start_ns, end_ns)| Stretch {
                        cpu,
                        start_ns,
                        end_ns,
                    }),
            );
        }
        out
    }

    /// Events held for `cpu` (oldest first), for inspection and tests.
    pub fn events(&self, cpu: usize) -> Vec<Event> {
        let mut inner = lock(&self.inner);
        inner.poll();
        inner
            .cpus
            .get(cpu)
            .and_then(Option::as_ref)
            .map(|h| h.events.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Stops reading and removes the instance, reporting a failure to remove it.
    ///
    /// # Errors
    /// [`Error::Io`] if the instance could not be removed.
    pub fn finish(mut self) -> Result<(), Error> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), Error> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            r.thread().unpark();
            // A panicked reader has nothing left to clean up; the instance is removed below.
            let _panicked = r.join();
        }
        // Close the readers: an open trace_pipe_raw keeps the instance busy.
        lock(&self.inner).readers.clear();
        match self.instance.take() {
            Some(i) => i.remove(),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("preempt-trace: {e}");
        }
    }
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // A panic while holding the lock leaves plain data behind (event queues): keep using it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Inner {
    fn poll(&mut self) {
        let Inner {
            hdr,
            readers,
            decoder,
            cpus,
            fault,
            max_pages,
            started_ns,
            ..
        } = self;
        for r in readers.iter_mut() {
            let Some(Some(h)) = cpus.get_mut(r.cpu) else {
                continue;
            };
            let cpu = r.cpu as u32;
            let res = r.drain(hdr, *max_pages, |item| match item {
                Item::Lost => {
                    h.loss.missed_pages += 1;
                    h.gap_from.get_or_insert(h.last_ts.max(*started_ns));
                }
                Item::Record(ts, rec) => {
                    let Some(e) = decoder.decode(ts, cpu, rec) else {
                        return;
                    };
                    h.loss.events += 1;
                    // Per-CPU buffers are in time order; guard against a clock step anyway.
                    if e.ts < h.last_ts {
                        return;
                    }
                    if let Some(from) = h.gap_from.take() {
                        // Whether the class resumed in the gap is unknown.
                        h.throttle.reset();
                        let from = from.min(e.ts);
                        let len = e.ts - from;
                        h.lost.push_back((from, e.ts));
                        h.loss.lost_stretches += 1;
                        h.loss.lost_ns += len;
                        h.loss.lost_max_ns = h.loss.lost_max_ns.max(len);
                    } else {
                        // Across a gap the history's last switch is not this CPU's state:
                        // no repair from it.
                        restore_missing_switch_in(&mut h.events, &e);
                    }
                    h.last_ts = e.ts;
                    h.throttle.observe(&e);
                    h.events.push_back(e);
                }
            });
            match res {
                Ok(pages) => h.loss.pages += pages as u64,
                Err(e) => *fault = Some(format!("reading the CPU {cpu} trace buffer: {e}")),
            }
        }
        let now = preempt_io::sys::clock::monotonic_now_ns();
        let horizon = now.saturating_sub(self.retain_ns);
        for h in self.cpus.iter_mut().flatten() {
            while h.events.front().is_some_and(|e| e.ts < horizon)
                || h.events.len() > self.max_events
            {
                h.events.pop_front();
            }
            while h.lost.front().is_some_and(|l| l.1 < horizon) {
                h.lost.pop_front();
            }
        }
        if let Ok(s) = procstat::read() {
            self.steal.push_back((now, s));
        }
        while self.steal.len() > 2 && self.steal[1].0 < horizon {
            self.steal.pop_front();
        }
    }

    fn explain(&mut self, cpu: usize, w: &Window) -> Result<Explanation, Error> {
        let wake_ns = self.first_waking(w);
        // The task's waking may be among events another CPU lost: without it the phase before
        // the switch-in is guessed, so the window is not fully covered.
        let waking_lost = wake_ns.is_none()
            && self.cpus.iter().enumerate().any(|(c, h)| {
                c != cpu
                    && h.as_ref().is_some_and(|h| {
                        h.lost
                            .iter()
                            .any(|&(a, b)| a < w.end_ns && b > w.release_ns)
                    })
            });
        let Some(Some(h)) = self.cpus.get_mut(cpu) else {
            return Err(Error::NotCovered(format!("CPU {cpu} is not traced")));
        };
        if h.events.front().is_none_or(|e| e.ts > w.release_ns) {
            return Err(Error::NotCovered(format!(
                "the window at {} ns is older than the {} ms of history kept",
                w.release_ns,
                self.retain_ns / 1_000_000
            )));
        }
        let facts = CpuFacts {
            lost: h
                .lost
                .iter()
                .copied()
                .filter(|&(_, b)| b > w.release_ns.saturating_sub(self.retain_ns))
                .collect(),
            ..h.facts.clone()
        };
        let events = h.events.make_contiguous();
        let mut ex = attribute::explain(cpu, events, w, wake_ns, &self.decoder, &facts);
        ex.covered &= !waking_lost;
        if let Some((span, steal)) = self.steal_around(cpu, w) {
            ex.steal_ns = Some(steal);
            ex.steal_span_ns = Some(span);
        }
        Ok(ex)
    }

    fn first_waking(&self, w: &Window) -> Option<u64> {
        let from = w.release_ns.saturating_sub(WAKE_SLACK_NS);
        self.cpus
            .iter()
            .flatten()
            .filter_map(|h| {
                let i = h.events.partition_point(|e| e.ts < from);
                h.events
                    .range(i..)
                    .take_while(|e| e.ts <= w.end_ns)
                    .find_map(|e| match e.kind {
                        Kind::Waking {
                            pid, woken: false, ..
                        } if pid == w.pid => Some(e.ts),
                        _ => None,
                    })
            })
            .min()
    }

    fn steal_around(&self, cpu: usize, w: &Window) -> Option<(u64, u64)> {
        let before = self.steal.iter().rev().find(|s| s.0 <= w.release_ns)?;
        let after = self.steal.iter().find(|s| s.0 >= w.end_ns)?;
        let a = procstat::steal_ticks(&before.1, cpu)?;
        let b = procstat::steal_ticks(&after.1, cpu)?;
        Some((after.0 - before.0, b.saturating_sub(a) * procstat::TICK_NS))
    }
}

/// Pages in a ring of `buffer_kb` KiB (at least one).
fn ring_pages(buffer_kb: u32, hdr: &PageHeader) -> usize {
    (buffer_kb as usize * 1024 / hdr.page_size().max(1)).max(1)
}

/// The number after `name:` in a `per_cpu/cpuN/stats` text (0 when absent).
fn stat_field(text: &str, name: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == name)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `tracing_cpumask` text: comma-separated 32-bit hex words, most significant first.
fn cpumask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut mask = vec![0u32; words];
    for &c in cpus {
        mask[c / 32] |= 1 << (c % 32);
    }
    mask.iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The largest exit latency of `cpu`'s enabled cpuidle states, ns (0 without cpuidle).
fn idle_exit_bound_ns(cpu: usize) -> u64 {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let Ok(states) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let read = |p: PathBuf| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    states
        .flatten()
        .filter(|s| read(s.path().join("disable")) == Some(0))
        .filter_map(|s| read(s.path().join("latency")))
        .max()
        .map_or(0, |us| us * 1_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Vector;

    fn ev(ts: u64, kind: Kind) -> Event {
        Event { ts, cpu: 1, kind }
    }

    fn switch(prev_pid: i32, next_pid: i32) -> Kind {
        Kind::Switch {
            prev_pid,
            prev_prio: 9,
            prev_state: 1,
            next_pid,
            next_prio: 19,
        }
    }

    #[test]
    fn a_missing_switch_out_of_idle_is_put_back_after_the_waking_interrupt() {
        // As recorded on this VM: the hog (pid 20) is woken on an idle CPU, its switch-in is
        // missing, its switch-out to the victim (pid 10) arrives.
        let mut events: VecDeque<Event> = [
            ev(100, switch(10, 0)),
            ev(200, Kind::VectorEntry(Vector::LocalTimer)),
            ev(
                210,
                Kind::Waking {
                    pid: 20,
                    prio: 9,
                    target_cpu: 1,
                    woken: true,
                },
            ),
            ev(220, Kind::VectorExit(Vector::LocalTimer)),
            ev(230, Kind::SoftirqEntry { vec: 7 }),
            ev(240, Kind::SoftirqExit { vec: 7 }),
            ev(900, Kind::VectorEntry(Vector::LocalTimer)),
            ev(910, Kind::VectorExit(Vector::LocalTimer)),
        ]
        .into();
        let out = ev(2_000, switch(20, 10));
        restore_missing_switch_in(&mut events, &out);
        assert_eq!(events.len(), 9);
        assert_eq!(events[6].ts, 241);
        assert!(matches!(
            events[6].kind,
            Kind::Switch {
                prev_pid: 0,
                next_pid: 20,
                next_prio: 9,
                ..
            }
        ));
        // The history already says the hog runs: nothing is added.
        let before = events.len();
        restore_missing_switch_in(&mut events, &out);
        assert_eq!(events.len(), before);
    }

    #[test]
    fn stats_fields() {
        let text = "entries: 12\noverrun: 3456\ncommit overrun: 0\nbytes: 84\n\
                    dropped events: 7\nread events: 9\n";
        assert_eq!(stat_field(text, "overrun"), 3456);
        assert_eq!(stat_field(text, "dropped events"), 7);
        assert_eq!(stat_field(text, "missing"), 0);
    }

    #[test]
    fn cpumask_words() {
        assert_eq!(cpumask(&[0, 1]), "00000003");
        assert_eq!(cpumask(&[1, 33]), "00000002,00000002");
    }
}
