//! `preempt wakeup`: how fast does a blocked SCHED_FIFO thread run after its event fires?
//!
//! The interrupt-latency analog of seeds 002 (Zephyr GPIO loop-back) and 004 §6.1 (Raspberry
//! Pi GPIO interrupt to user space) on a machine without wires. A waiter thread, pinned and
//! SCHED_FIFO, blocks on an event source; a trigger thread (SCHED_FIFO one priority lower,
//! pinned to another CPU when there is one) reads CLOCK_MONOTONIC, publishes the timestamp and
//! fires the event. The waiter reads the clock as soon as it runs: `latency = wake − trigger`,
//! which includes the firing system call, the kernel's wake-up path and the context switch.
//!
//! Sources: `eventfd` (write 1), `pipe` (write 1 byte), `timerfd` (the kernel fires at an
//! absolute expiry time the waiter armed, so `trigger` is that expiry time), `signal` (a
//! real-time signal sent with tgkill, taken with sigwaitinfo), and `gpio` (an output line
//! looped to an input line with rising-edge events through the GPIO uAPI v2, as in the seeds;
//! skipped with the reason when the machine has no GPIO chip).
//! Each runs idle and under load ([`crate::stress`]).

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use anyhow::{Context, Result};
use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::timerfd::TimerFd;
use preempt_io::sys::{fdio, gpio, mem, sched, signal};

use crate::config::SourceArg;
use crate::config::{PolicyConfig, StressConfig};
use crate::error::{PrivilegeError, policy_error};
use crate::results::{Distribution, WakeupCase, WakeupResult};
use crate::stats::histogram::Histogram;
use crate::stress::{self, StressGuard};

/// Timestamp value that tells the waiter to quit.
const QUIT: u64 = u64::MAX;
/// How long the trigger waits for the waiter to take one event before giving up.
const STALL_LIMIT_NS: u64 = 2_000_000_000;

/// A validated wakeup run.
#[derive(Debug, Clone)]
pub(crate) struct WakeupConfig {
    /// Sources, in order.
    pub sources: Vec<SourceArg>,
    /// Wake-ups per case.
    pub samples: u64,
    /// Gap between triggers.
    pub interval_ns: u64,
    /// Waiter priority (the trigger runs one lower).
    pub priority: u8,
    /// Waiter CPU.
    pub waiter_cpu: usize,
    /// Trigger CPU.
    pub trigger_cpu: usize,
    /// Load levels; an empty config is the idle level.
    pub loads: Vec<StressConfig>,
    /// GPIO chip device.
    pub gpio_chip: PathBuf,
}

/// The GPIO loop-back wiring of the `gpio` source: an output line wired to an input line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpioLines {
    /// Output line offset.
    pub out: u32,
    /// Input line offset (rising-edge events).
    pub input: u32,
}

impl Default for GpioLines {
    /// BCM GPIO 17 → GPIO 27: header pins 11 and 13 of a Raspberry Pi, side by side, so one
    /// jumper makes the loop-back.
    fn default() -> Self {
        Self { out: 17, input: 27 }
    }
}

/// The name of a source.
pub(crate) fn source_name(s: SourceArg) -> &'static str {
    match s {
        SourceArg::Eventfd => "eventfd",
        SourceArg::Pipe => "pipe",
        SourceArg::Timerfd => "timerfd",
        SourceArg::Signal => "signal",
        SourceArg::Gpio => "gpio",
    }
}

/// [`run_with_gpio`] with the default GPIO wiring.
pub(crate) fn run(
    cfg: &WakeupConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<WakeupResult> {
    run_with_gpio(cfg, GpioLines::default(), stop, on_progress)
}

/// Runs every source under every load; `on_progress(done, total, what)` before each case.
pub(crate) fn run_with_gpio(
    cfg: &WakeupConfig,
    lines: GpioLines,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<WakeupResult> {
    let overhead = super::overhead::measure();
    let total = cfg.sources.len() * cfg.loads.len();
    let mut cases = Vec::with_capacity(total);
    'loads: for load in &cfg.loads {
        let _stress = StressGuard::start(load)?;
        let load_name = stress::label(load);
        for &source in &cfg.sources {
            if stop.load(Relaxed) {
                break 'loads;
            }
            on_progress(
                cases.len(),
                total,
                &format!("{}, {load_name}", source_name(source)),
            );
            let trigger_cpu = (source != SourceArg::Timerfd).then_some(cfg.trigger_cpu);
            let mut case = WakeupCase {
                source: source_name(source).into(),
                load: load_name.clone(),
                waiter_cpu: cfg.waiter_cpu,
                trigger_cpu,
                latency: None,
                skipped: None,
            };
            if source == SourceArg::Gpio && !cfg.gpio_chip.exists() {
                case.skipped = Some(gpio_skip_reason(&cfg.gpio_chip));
            } else {
                let h = run_case(source, cfg, lines, stop)?;
                case.latency = Some(Distribution::from_snapshot(&h.snapshot()));
            }
            cases.push(case);
        }
    }
    Ok(WakeupResult {
        priority: cfg.priority,
        samples_per_case: cfg.samples,
        interval_ns: cfg.interval_ns,
        overhead,
        cases,
    })
}

/// Why the GPIO case cannot run here.
fn gpio_skip_reason(chip: &std::path::Path) -> String {
    format!(
        "no GPIO chip at {} on this machine; on a board, loop an output pin to an input pin \
         and pass --gpio-chip/--gpio-out/--gpio-in",
        chip.display()
    )
}

/// The event channel of one case.
enum Channel {
    Eventfd(EventFd),
    Pipe {
        read: OwnedFd,
        write: OwnedFd,
    },
    Signal(i32),
    Timer(TimerFd),
    /// An output line wired to an input line with rising-edge events.
    Gpio {
        out: gpio::LineHandle,
        input: gpio::LineHandle,
    },
}

impl Channel {
    fn new(source: SourceArg, cfg: &WakeupConfig, lines: GpioLines) -> Result<Self> {
        Ok(match source {
            SourceArg::Eventfd => Channel::Eventfd(EventFd::new(0, false).context("eventfd")?),
            SourceArg::Pipe => {
                let (read, write) = fdio::pipe().context("pipe")?;
                Channel::Pipe { read, write }
            }
            SourceArg::Signal => Channel::Signal(signal::sigrtmin() + 1),
            SourceArg::Timerfd => {
                Channel::Timer(TimerFd::new(ClockId::Monotonic, false).context("timerfd")?)
            }
            SourceArg::Gpio => {
                let chip = gpio::GpioChip::open(&cfg.gpio_chip)
                    .with_context(|| format!("--gpio-chip {}", cfg.gpio_chip.display()))?;
                let out = chip
                    .request_lines(&gpio::LineRequest::output(
                        &[lines.out],
                        "preempt-wakeup",
                        0,
                    ))
                    .with_context(|| format!("--gpio-out {}", lines.out))?;
                let input = chip
                    .request_lines(
                        &gpio::LineRequest::input(&[lines.input], "preempt-wakeup")
                            .edges(gpio::Edge::Rising),
                    )
                    .with_context(|| format!("--gpio-in {}", lines.input))?;
                Channel::Gpio { out, input }
            }
        })
    }

    /// Fires the event (trigger side).
    fn fire(&self, waiter_tid: i32) -> std::io::Result<()> {
        match self {
            Channel::Eventfd(e) => e.write(1),
            Channel::Pipe { write, .. } => fdio::write(write.as_fd(), &[1]).map(|_| ()),
            Channel::Signal(sig) => signal::signal_thread(waiter_tid, *sig),
            Channel::Timer(_) => Ok(()),
            // Rising edge (the event), then low again (falling edges are not requested).
            Channel::Gpio { out, .. } => out.set_values(1, 1).and_then(|()| out.set_values(0, 1)),
        }
    }

    /// Blocks until the event fires (waiter side).
    fn wait(&self) -> std::io::Result<()> {
        match self {
            Channel::Eventfd(e) => e.read().map(|_| ()),
            Channel::Pipe { read, .. } => {
                let mut b = [0u8; 1];
                fdio::read(read.as_fd(), &mut b).map(|_| ())
            }
            Channel::Signal(sig) => signal::wait_signal(*sig),
            Channel::Timer(t) => t.read_expirations().map(|_| ()),
            Channel::Gpio { input, .. } => {
                let mut events = [gpio::LineEvent::default(); 1];
                input.read_events(&mut events).map(|_| ())
            }
        }
    }
}

fn setup_thread(cpu: usize, priority: u8) -> Result<(), String> {
    sched::set_current_thread_affinity(&[cpu])
        .map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    let p = PolicyConfig::fifo(priority);
    sched::set_current_thread_policy(&p.policy)
        .map_err(|e| format!("{:#}", policy_error(e, &p.policy, "SCHED_FIFO")))?;
    mem::prefault_stack(64 * 1024);
    Ok(())
}

/// What the waiter and the trigger of one case share.
struct Case<'a> {
    source: SourceArg,
    cfg: &'a WakeupConfig,
    channel: &'a Channel,
    stop: &'a AtomicBool,
    hist: &'a Histogram,
    /// When the current event was fired (QUIT: stop waiting).
    trigger_ns: AtomicU64,
    /// Events the waiter has taken.
    acked: AtomicU64,
    waiter_tid: AtomicI32,
    /// A thread's setup failed: the other one does not measure.
    failed: AtomicBool,
    /// The timerfd case has no trigger thread: the kernel fires the timer.
    timer_mode: bool,
    barrier: Barrier,
}

fn run_case(
    source: SourceArg,
    cfg: &WakeupConfig,
    lines: GpioLines,
    stop: &AtomicBool,
) -> Result<Histogram> {
    let channel = Channel::new(source, cfg, lines)?;
    let hist = Histogram::new();
    let timer_mode = matches!(channel, Channel::Timer(_));
    let case = Case {
        source,
        cfg,
        channel: &channel,
        stop,
        hist: &hist,
        trigger_ns: AtomicU64::new(0),
        acked: AtomicU64::new(0),
        waiter_tid: AtomicI32::new(0),
        failed: AtomicBool::new(false),
        timer_mode,
        barrier: Barrier::new(if timer_mode { 1 } else { 2 }),
    };
    let (waiter_res, trigger_res) = std::thread::scope(|s| {
        let waiter = std::thread::Builder::new()
            .name("preempt-waiter".into())
            .spawn_scoped(s, || waiter(&case))
            .map_err(|e| e.to_string());
        let trigger = (!timer_mode).then(|| {
            std::thread::Builder::new()
                .name("preempt-trigger".into())
                .spawn_scoped(s, || trigger(&case))
                .map_err(|e| e.to_string())
        });
        let w = waiter.and_then(|h| h.join().map_err(|_| "waiter panicked".to_string())?);
        let t = match trigger {
            None => Ok(()),
            Some(h) => h.and_then(|h| h.join().map_err(|_| "trigger panicked".to_string())?),
        };
        (w, t)
    });
    for r in [waiter_res, trigger_res] {
        if let Err(e) = r {
            return Err(if e.contains("permission denied") {
                anyhow::Error::new(PrivilegeError(e))
            } else {
                anyhow::anyhow!("{} case: {e}", source_name(source))
            });
        }
    }
    Ok(hist)
}

/// The waiting thread: sets itself up, then takes `cfg.samples` events (arming the timer
/// itself in the timerfd case) and records each one's latency.
fn waiter(c: &Case<'_>) -> Result<(), String> {
    let cfg = c.cfg;
    let setup = setup_thread(cfg.waiter_cpu, cfg.priority).and_then(|()| {
        if let Channel::Signal(sig) = c.channel {
            signal::block_signal(*sig).map_err(|e| format!("pthread_sigmask: {e}"))?;
        }
        Ok(())
    });
    c.waiter_tid.store(sched::current_tid(), Release);
    if setup.is_err() {
        c.failed.store(true, Release);
    }
    c.barrier.wait();
    setup?;
    for i in 0..cfg.samples {
        if c.failed.load(Acquire) || (c.timer_mode && c.stop.load(Relaxed)) {
            break;
        }
        if let Channel::Timer(t) = c.channel {
            let expiry = monotonic_now_ns() + cfg.interval_ns;
            t.set_absolute_ns(expiry, 0)
                .map_err(|e| format!("timerfd_settime: {e}"))?;
            c.trigger_ns.store(expiry, Relaxed);
        }
        c.channel
            .wait()
            .map_err(|e| format!("waiting on {}: {e}", source_name(c.source)))?;
        let wake = monotonic_now_ns();
        let t = c.trigger_ns.load(Acquire);
        if t == QUIT {
            break;
        }
        c.hist.record(wake.saturating_sub(t), i);
        c.acked.store(i + 1, Release);
    }
    Ok(())
}

/// The triggering thread: one priority below the waiter so that, sharing a CPU, the woken
/// waiter preempts it at once; fires an event every `cfg.interval_ns` once the previous one
/// was taken, and releases the waiter (QUIT) when it stops early.
fn trigger(c: &Case<'_>) -> Result<(), String> {
    let cfg = c.cfg;
    let setup = setup_thread(cfg.trigger_cpu, cfg.priority.saturating_sub(1).max(1));
    if setup.is_err() {
        c.failed.store(true, Release);
    }
    c.barrier.wait();
    let tid = c.waiter_tid.load(Acquire);
    let quit = || {
        c.trigger_ns.store(QUIT, Release);
        // The waiter may have ended already; then nobody reads this event.
        let _ = c.channel.fire(tid);
    };
    if let Err(e) = setup {
        quit();
        return Err(e);
    }
    if c.failed.load(Acquire) {
        return Ok(()); // the waiter failed its setup and is not waiting
    }
    let mut next = monotonic_now_ns() + cfg.interval_ns;
    for i in 0..cfg.samples {
        let waited_since = monotonic_now_ns();
        loop {
            sleep_until_ns(ClockId::Monotonic, next).map_err(|e| e.to_string())?;
            next += cfg.interval_ns;
            if c.stop.load(Relaxed) || c.acked.load(Acquire) >= i {
                break;
            }
            if monotonic_now_ns() - waited_since > STALL_LIMIT_NS {
                quit();
                return Err(format!("the waiter did not take event {i} within 2 s"));
            }
        }
        if c.stop.load(Relaxed) {
            break;
        }
        c.trigger_ns.store(monotonic_now_ns(), Release);
        c.channel
            .fire(tid)
            .map_err(|e| format!("firing {}: {e}", source_name(c.source)))?;
    }
    // Wait for the last event to be taken, then release the waiter if it still waits (stop
    // requested).
    let until = monotonic_now_ns() + STALL_LIMIT_NS;
    while c.acked.load(Acquire) < cfg.samples && monotonic_now_ns() < until && !c.stop.load(Relaxed)
    {
        sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + cfg.interval_ns)
            .map_err(|e| e.to_string())?;
    }
    if c.acked.load(Acquire) < cfg.samples {
        quit();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpio_skip_names_the_chip() {
        let r = gpio_skip_reason(std::path::Path::new("/nonexistent/gpiochip9"));
        assert!(
            r.contains("/nonexistent/gpiochip9") && r.contains("no GPIO chip"),
            "{r}"
        );
    }
}
