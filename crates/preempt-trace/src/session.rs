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

use crate::Error;
use crate::attribute::{self, CpuFacts, Explanation, Window};
use crate::decode::{Decoder, EVENTS, Event, FALLBACK_EVENTS, Kind};
use crate::format::{EventFormat, PageHeader};
use crate::ring::CpuReader;
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
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cpus: None,
            buffer_kb: 4096,
            retain_ns: 3_000_000_000,
            max_events_per_cpu: 500_000,
            poll_interval: Duration::from_millis(50),
        }
    }
}

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
    /// Stretches whose events the kernel reported lost: (after, before).
    lost: VecDeque<(u64, u64)>,
    last_ts: u64,
    facts: CpuFacts,
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
                last_ts: 0,
                facts: CpuFacts {
                    idle_exit_bound_ns: idle_exit_bound_ns(cpu),
                },
            });
        }
        instance.write("tracing_on", "1")?;
        let inner = Arc::new(Mutex::new(Inner {
            hdr,
            readers,
            decoder,
            cpus: hist,
            steal: VecDeque::new(),
            retain_ns: opts.retain_ns,
            max_events: opts.max_events_per_cpu,
            fault: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (inner, stop, every) = (Arc::clone(&inner), Arc::clone(&stop), opts.poll_interval);
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
            ..
        } = self;
        for r in readers.iter_mut() {
            let Some(Some(h)) = cpus.get_mut(r.cpu) else {
                continue;
            };
            let cpu = r.cpu as u32;
            let before = h.last_ts;
            let mut first_ts = None;
            let res = r.drain(hdr, |ts, rec| {
                if let Some(e) = decoder.decode(ts, cpu, rec) {
                    first_ts.get_or_insert(ts);
                    // Per-CPU buffers are in time order; guard against a clock step anyway.
                    if e.ts >= h.last_ts {
                        h.last_ts = e.ts;
                        restore_missing_switch_in(&mut h.events, &e);
                        h.events.push_back(e);
                    }
                }
            });
            match res {
                Ok(true) => h.lost.push_back((before, first_ts.unwrap_or(h.last_ts))),
                Ok(false) => {}
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
        let facts = h.facts;
        let lost = h
            .lost
            .iter()
            .any(|&(a, b)| a < w.end_ns && b > w.release_ns);
        let events = h.events.make_contiguous();
        let mut ex = attribute::explain(cpu, events, w, wake_ns, &self.decoder, facts);
        ex.covered &= !lost;
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
    fn cpumask_words() {
        assert_eq!(cpumask(&[0, 1]), "00000003");
        assert_eq!(cpumask(&[1, 33]), "00000002,00000002");
    }
}
