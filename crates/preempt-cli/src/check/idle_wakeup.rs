//! The cost of waking a CPU from idle, measured (`preempt check` item `idle-wakeup`).
//!
//! # Background
//! A thread that sleeps until its next period leaves its CPU idle, and the cpuidle governor
//! then puts the CPU into an idle state. Leaving that state is part of the thread's wake-up
//! latency: on bare metal the exit latency of a C-state (`cpuidle/stateN/latency`, from 1 µs
//! for C1 to 100 µs and more for package C-states); in a VM whose guest halts (the `haltpoll`
//! driver, or plain `hlt`) a halted vCPU exits to the host, which must wake the vCPU thread
//! again (about 20 µs more per wake-up on the 2-vCPU development VM, docs/PERFORMANCE.md).
//! Holding `/dev/cpu_dma_latency` at 0 makes the kernel's PM QoS keep every CPU in its
//! polling state instead; preempt's measuring commands do, so their figures never show this
//! cost, but an application that does not hold it pays it on every release.
//!
//! # Solution
//! A SCHED_FIFO thread pinned to the most idle CPU sleeps to absolute times [`PERIOD_NS`]
//! apart and records how late each wake-up is, in blocks of [`BLOCK`] wake-ups, alternately
//! with the idle states left to the governor and with `/dev/cpu_dma_latency` held at 0
//! ([`BLOCKS_PER_MODE`] blocks each, the first wake-up after a switch discarded). The item
//! reports both medians and their difference; the entries into idle states other than
//! polling, and the CPU's idle share, counted by cpuidle over each mode, show that the two
//! modes did what they claim.
//!
//! # Why it works
//! Alternating blocks spreads host noise and other load over both modes alike, so the
//! difference of the medians is the idle exit and not a drift of the machine. The period
//! (1 ms, the period of a 1 kHz control loop) is far above haltpoll's largest polling window
//! (`guest_halt_poll_ns`, 200 µs by default) and above the target residency of the shallow
//! and medium C-states, so the governor does pick a halting state; states whose target
//! residency exceeds 1 ms are what a 1 kHz loop never reaches either (a slower loop may,
//! so for it the figure is a lower bound). 2 × 12 × 26 wake-ups take 0.62 s.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use preempt_io::sys::clock::{ClockId, monotonic_now_ns, sleep_until_ns};
use preempt_io::sys::{caps, cpu, rtcause, rtprobe, sched};

use super::item;
use crate::procfs::read_trimmed;
use crate::results::{CheckItem, IdleWakeup, Status};
use crate::stats::histogram::Histogram;

/// The sleep period of the probe: a 1 kHz control loop's.
pub const PERIOD_NS: u64 = 1_000_000;
/// Measured wake-ups per block (plus one discarded after each switch of mode).
pub const BLOCK: usize = 25;
/// Blocks per mode: `BLOCKS_PER_MODE * BLOCK` = 300 wake-ups per median.
pub const BLOCKS_PER_MODE: usize = 12;
/// The difference of the medians from which the item warns. 5 µs is more than the exit
/// latency of the shallowest halt (C1: 1–2 µs in intel_idle's tables; haltpoll declares 1 µs),
/// so a larger cost means deeper states or a hypervisor exit, which holding
/// `/dev/cpu_dma_latency` removes; and it is as much as the whole median wake-up latency of a
/// tuned PREEMPT_RT x86 machine (2–5 µs), so idle exits at least double a sleeping loop's
/// typical latency. On the development VM the difference was +8.4 to +12.5 µs over the runs
/// that found the probed CPU idle (docs/MEASURING.md), well clear of the line.
pub const WARN_EXTRA_NS: i64 = 5_000;
/// The probe thread's SCHED_FIFO priority: above the IRQ threads of PREEMPT_RT (50), so a
/// wake-up is not delayed by interrupt handling, and below 99, where watchdogs run.
const PRIORITY: u8 = 90;
/// The fewest wake-ups from a halting state whose median [`IdleWakeup::extra_ns`] is based on
/// (a tenth of a mode's); with fewer, it compares all wake-ups of the two modes.
const MIN_HALTED: u64 = 30;
/// Below this share of idle time on the probed CPU, the wake-ups measured preemption of
/// other work more than idle exits.
const MIN_IDLE_PCT: f64 = 50.0;
/// `/dev/cpu_dma_latency` reads this (PM_QOS_DEFAULT_VALUE) when nobody holds it.
const DMA_LATENCY_UNHELD_US: i32 = 2_000_000_000;

/// One CPU's cpuidle counters: entries into states other than polling, and time idle (µs).
#[derive(Debug, Clone, Copy, Default)]
struct IdleCounters {
    halting_entries: u64,
    idle_us: u64,
}

impl IdleCounters {
    /// Reads `/sys/devices/system/cpu/cpu<cpu>/cpuidle/state*/{name,usage,time}`; `None` without
    /// a cpuidle driver.
    fn read(cpu: usize) -> Option<Self> {
        let mut c = Self::default();
        let mut any = false;
        for n in 0.. {
            let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{n}");
            let Some(name) = read_trimmed(format!("{base}/name")) else {
                break;
            };
            any = true;
            let num = |f: &str| -> u64 {
                read_trimmed(format!("{base}/{f}"))
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0)
            };
            c.idle_us += num("time");
            if name != "POLL" {
                c.halting_entries += num("usage");
            }
        }
        any.then_some(c)
    }

    fn since(self, earlier: Self) -> Self {
        Self {
            halting_entries: self.halting_entries.saturating_sub(earlier.halting_entries),
            idle_us: self.idle_us.saturating_sub(earlier.idle_us),
        }
    }
}

/// The value the kernel's CPU-latency PM QoS holds now, read from `/dev/cpu_dma_latency`
/// (`DMA_LATENCY_UNHELD_US` when no process holds a request).
fn dma_latency_now_us() -> std::io::Result<i32> {
    let mut buf = [0u8; 4];
    File::open("/dev/cpu_dma_latency")?.read_exact(&mut buf)?;
    Ok(i32::from_ne_bytes(buf))
}

/// Picks the CPU to probe: the isolated CPUs if this process may run there (that is where a
/// real-time loop goes), else any allowed CPU; among them the one that was idle longest over
/// 20 ms.
fn pick_cpu(isolated: &[usize]) -> std::io::Result<usize> {
    let allowed = sched::current_thread_affinity()?;
    let online = cpu::online_cpus().unwrap_or_else(|_| allowed.clone());
    let usable: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| online.contains(c))
        .collect();
    let preferred: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|c| isolated.contains(c))
        .collect();
    let candidates = if preferred.is_empty() {
        usable
    } else {
        preferred
    };
    let Some(&last) = candidates.last() else {
        return Err(std::io::Error::other(
            "no online CPU in this process's affinity mask",
        ));
    };
    let before: Vec<_> = candidates.iter().map(|&c| IdleCounters::read(c)).collect();
    sleep_until_ns(ClockId::Monotonic, monotonic_now_ns() + 20_000_000)?;
    Ok(candidates
        .iter()
        .zip(before)
        .filter_map(|(&c, b)| Some((c, IdleCounters::read(c)?.since(b?).idle_us)))
        .max_by_key(|&(c, idle)| (idle, c))
        .map_or(last, |(c, _)| c))
}

/// The entries of one CPU into its halting idle states, read cheaply enough to be read around
/// every wake-up: the `usage` files stay open and are re-read at offset 0 (sysfs regenerates
/// an attribute on every read from its start).
struct HaltCount(Vec<File>);

impl HaltCount {
    fn open(cpu: usize) -> HaltCount {
        let mut files = Vec::new();
        for n in 0.. {
            let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{n}");
            let Some(name) = read_trimmed(format!("{base}/name")) else {
                break;
            };
            if name != "POLL" {
                files.extend(File::open(format!("{base}/usage")).ok());
            }
        }
        HaltCount(files)
    }

    /// The sum of the `usage` counters; `None` without halting states.
    fn read(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        if self.0.is_empty() {
            return None;
        }
        let mut sum = 0;
        for f in &self.0 {
            let mut buf = [0u8; 24];
            let n = f.read_at(&mut buf, 0).ok()?;
            sum += std::str::from_utf8(buf.get(..n)?)
                .ok()?
                .trim()
                .parse::<u64>()
                .ok()?;
        }
        Some(sum)
    }
}

/// What one mode of the probe collected.
struct Mode {
    latency: Histogram,
    /// The wake-ups during which the CPU entered a halting state (idle-states mode).
    halted: Histogram,
    /// Summed over the mode's blocks; `None` without cpuidle counters.
    counters: Option<IdleCounters>,
    /// Time spent in the mode's blocks.
    elapsed_ns: u64,
}

/// The probe proper, on its pinned SCHED_FIFO thread: `[idle states free, cpu_dma_latency
/// held at 0]`; `None` when `stop` was set before its last block.
fn measure(cpu: usize, stop: &AtomicBool) -> Result<Option<[Mode; 2]>, String> {
    let fifo = sched::Policy::Fifo { priority: PRIORITY };
    sched::set_current_thread_affinity(&[cpu]).map_err(|e| e.to_string())?;
    // The error names the cause the kernel refused for and its fix (`sys::rtcause`).
    sched::set_current_thread_policy(&fifo)
        .map_err(|e| format!("SCHED_FIFO {PRIORITY} refused ({e})"))?;
    let mut modes = [0, 1].map(|_| Mode {
        latency: Histogram::new(),
        halted: Histogram::new(),
        counters: Some(IdleCounters::default()),
        elapsed_ns: 0,
    });
    let halts = HaltCount::open(cpu);
    let mut samples = [(0u64, false); BLOCK];
    let mut next = monotonic_now_ns() + PERIOD_NS;
    for block in 0..2 * BLOCKS_PER_MODE {
        if stop.load(Relaxed) {
            return Ok(None);
        }
        let held = block % 2 == 1;
        let guard = if held {
            Some(cpu::hold_cpu_dma_latency(0).map_err(|e| e.to_string())?)
        } else {
            None
        };
        let before = IdleCounters::read(cpu);
        let start = monotonic_now_ns();
        // The first wake-up after the switch lets the CPU settle into the new mode.
        for i in 0..=BLOCK {
            let halts_before = halts.read();
            sleep_until_ns(ClockId::Monotonic, next).map_err(|e| e.to_string())?;
            let woke = monotonic_now_ns();
            // Read after the time stamp: it does not delay the sample.
            let halted = halts.read().zip(halts_before).is_some_and(|(a, b)| a > b);
            if let Some(slot) = i.checked_sub(1).and_then(|k| samples.get_mut(k)) {
                *slot = (woke.saturating_sub(next), halted);
            }
            next += PERIOD_NS;
            while next <= woke {
                next += PERIOD_NS;
            }
        }
        let end = monotonic_now_ns();
        let counted = IdleCounters::read(cpu).zip(before).map(|(a, b)| a.since(b));
        drop(guard);
        let mode = &mut modes[usize::from(held)];
        for (n, &(s, halted)) in samples.iter().enumerate() {
            let cycle = (block * BLOCK + n) as u64;
            mode.latency.record(s, cycle);
            if halted {
                mode.halted.record(s, cycle);
            }
        }
        mode.elapsed_ns += end - start;
        mode.counters = mode.counters.zip(counted).map(|(sum, c)| IdleCounters {
            halting_entries: sum.halting_entries + c.halting_entries,
            idle_us: sum.idle_us + c.idle_us,
        });
    }
    Ok(Some(modes))
}

/// Measures the probe on the most idle CPU (an isolated one if possible) and turns it into
/// the `idle-wakeup` item and, when it ran, its figures. `stop` set (a signal) ends it before
/// its next block: the item then says it was not measured (half a probe would compare
/// unequal halves).
pub fn probe(isolated: &[usize], stop: &AtomicBool) -> (CheckItem, Option<IdleWakeup>) {
    let not_measured_because = |why: String, fix: String| {
        (
            item(ID, TITLE, Status::Info, format!("not measured: {why}"), fix),
            None,
        )
    };
    let not_measured = |why: String| {
        // "Run as root" only to a process that is not: a root process was refused for
        // another cause, which `why` names.
        let fix = if caps::is_root() {
            "the probe needs SCHED_FIFO and /dev/cpu_dma_latency: fix what stopped it (above)"
        } else {
            "run preempt check as root: the probe needs SCHED_FIFO (CAP_SYS_NICE or \
             RLIMIT_RTPRIO) and /dev/cpu_dma_latency (root only)"
        };
        not_measured_because(why, fix.to_string())
    };
    let interrupted = || {
        let why = "not measured: interrupted (Ctrl-C or SIGTERM) before the probe ended";
        let fix = "rerun preempt check and let it finish (0.65 s)";
        (item(ID, TITLE, Status::Info, why, fix), None)
    };
    if stop.load(Relaxed) {
        return interrupted();
    }
    let found_us = match dma_latency_now_us() {
        Ok(v) => v,
        Err(e) => return not_measured(format!("cannot read /dev/cpu_dma_latency: {e}")),
    };
    let cpu = match pick_cpu(isolated) {
        Ok(c) => c,
        Err(e) => return not_measured(format!("no CPU to probe: {e}")),
    };
    // Asked first on a throwaway thread, so a refusal comes with its cause and fix
    // (`sys::rtprobe`, as the real-time priority item).
    if let Err(refusal) = rtprobe::probe_policy(&sched::Policy::Fifo { priority: PRIORITY }) {
        return not_measured_because(
            format!(
                "SCHED_FIFO {PRIORITY} refused by the kernel with {}: {} [{}]",
                rtcause::errno_text(refusal.errno),
                refusal.describe(),
                refusal.ids()
            ),
            refusal.fix(),
        );
    }
    let measured = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("preempt-idle".into())
            .spawn_scoped(s, || measure(cpu, stop))
            .map_err(|e| e.to_string())
            .and_then(|h| {
                h.join()
                    .map_err(|_| "the probe thread panicked".to_string())
            })
            .and_then(|r| r)
    });
    let [free, held] = match measured {
        Ok(Some(m)) => m,
        Ok(None) => return interrupted(),
        Err(e) => return not_measured(e),
    };
    let pct = |m: &Mode| {
        m.counters
            .map(|c| 100.0 * (c.idle_us * 1_000) as f64 / m.elapsed_ns.max(1) as f64)
    };
    let p50 = |m: &Mode| m.latency.snapshot().value_at_quantile(0.5);
    let halted = free.halted.snapshot();
    let halted_p50 = (halted.count() >= MIN_HALTED).then(|| halted.value_at_quantile(0.5));
    let signed = |ns: u64| i64::try_from(ns).unwrap_or(i64::MAX);
    let result = IdleWakeup {
        cpu,
        period_ns: PERIOD_NS,
        wakeups_per_mode: (BLOCKS_PER_MODE * BLOCK) as u64,
        idle_p50_ns: p50(&free),
        halted_wakeups: free.counters.map(|_| halted.count()),
        halted_p50_ns: halted_p50,
        polling_p50_ns: p50(&held),
        extra_ns: signed(halted_p50.unwrap_or(p50(&free))) - signed(p50(&held)),
        idle_halts: free.counters.map(|c| c.halting_entries),
        polling_halts: held.counters.map(|c| c.halting_entries),
        idle_cpu_idle_pct: pct(&free),
        polling_cpu_idle_pct: pct(&held),
        dma_latency_found_us: found_us,
    };
    (verdict(&result), Some(result))
}

/// The item's id.
pub(crate) const ID: &str = "idle-wakeup";
const TITLE: &str = "Wake-up from idle (measured)";

/// The item for a measured probe: a warning when waking from idle costs more than
/// [`WARN_EXTRA_NS`], information when the measurement could not isolate the idle exit.
fn verdict(r: &IdleWakeup) -> CheckItem {
    let us = |ns: u64| ns as f64 / 1_000.0;
    let halted = match (r.halted_p50_ns, r.halted_wakeups) {
        (Some(ns), Some(n)) => format!(" ({:.1} us over the {n} that came from a halt)", us(ns)),
        _ => String::new(),
    };
    let mut value = format!(
        "median wake-up {:.1} us with idle states{halted}, {:.1} us with /dev/cpu_dma_latency \
         held at 0: {:+.1} us per wake-up from idle (CPU {}, {} wake-ups each, {} ms apart",
        us(r.idle_p50_ns),
        us(r.polling_p50_ns),
        r.extra_ns as f64 / 1_000.0,
        r.cpu,
        r.wakeups_per_mode,
        r.period_ns / 1_000_000,
    );
    if let (Some(h), Some(p)) = (r.idle_halts, r.polling_halts) {
        value += &format!("; halting idle entries {h} vs {p}");
    }
    value += ")";
    let busy = [r.idle_cpu_idle_pct, r.polling_cpu_idle_pct]
        .into_iter()
        .flatten()
        .fold(f64::INFINITY, f64::min);
    let fix = "preempt's measuring commands hold /dev/cpu_dma_latency at 0 during a run; an \
               application must do the same (open it, write a binary 0, keep it open), or boot \
               with idle=poll or cpuidle.off=1 (VM) / processor.max_cstate=1 \
               intel_idle.max_cstate=0 (x86), or disable deep C-states in the BIOS on bare metal";
    if r.dma_latency_found_us != DMA_LATENCY_UNHELD_US {
        item(
            ID,
            TITLE,
            Status::Info,
            format!(
                "{value}; another process holds /dev/cpu_dma_latency at {} us, so the idle \
                 states were restricted in both modes",
                r.dma_latency_found_us
            ),
            "rerun preempt check when no other program holds /dev/cpu_dma_latency \
             (lsof /dev/cpu_dma_latency names it)",
        )
    } else if busy < MIN_IDLE_PCT {
        item(
            ID,
            TITLE,
            Status::Info,
            format!(
                "{value}; CPU {} was idle only {busy:.0} % of the probe, so the wake-ups also \
                 waited for other work",
                r.cpu
            ),
            "rerun preempt check on an idle machine",
        )
    } else if r.extra_ns >= WARN_EXTRA_NS {
        item(ID, TITLE, Status::Warn, value, fix)
    } else {
        item(ID, TITLE, Status::Pass, value, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(idle_us: u64, polling_us: u64) -> IdleWakeup {
        IdleWakeup {
            cpu: 1,
            period_ns: PERIOD_NS,
            wakeups_per_mode: 300,
            idle_p50_ns: idle_us * 1_000,
            halted_wakeups: Some(280),
            halted_p50_ns: Some(idle_us * 1_000),
            polling_p50_ns: polling_us * 1_000,
            extra_ns: (idle_us as i64 - polling_us as i64) * 1_000,
            idle_halts: Some(310),
            polling_halts: Some(0),
            idle_cpu_idle_pct: Some(98.0),
            polling_cpu_idle_pct: Some(97.0),
            dma_latency_found_us: DMA_LATENCY_UNHELD_US,
        }
    }

    #[test]
    fn a_costly_idle_exit_warns_with_the_remedies() {
        let i = verdict(&measured(34, 25));
        assert_eq!(i.status, Status::Warn, "{i:?}");
        assert!(i.value.contains("+9.0 us per wake-up from idle"), "{i:?}");
        for remedy in ["cpu_dma_latency", "idle=poll", "max_cstate", "BIOS"] {
            assert!(i.fix.contains(remedy), "{remedy}: {i:?}");
        }
        let cheap = verdict(&measured(28, 25));
        assert_eq!(cheap.status, Status::Pass, "{cheap:?}");
        assert!(cheap.fix.is_empty());
    }

    #[test]
    fn a_probe_that_could_not_isolate_the_idle_exit_says_why() {
        let mut held = measured(45, 25);
        held.dma_latency_found_us = 0;
        let i = verdict(&held);
        assert_eq!(i.status, Status::Info, "{i:?}");
        assert!(i.value.contains("another process holds"), "{i:?}");
        let mut busy = measured(45, 25);
        busy.idle_cpu_idle_pct = Some(12.0);
        let i = verdict(&busy);
        assert_eq!(i.status, Status::Info, "{i:?}");
        assert!(i.value.contains("idle only 12 %"), "{i:?}");
    }

    #[test]
    fn cpu_dma_latency_reads_as_a_latency() {
        // Root only (the device is mode 0600); elsewhere the probe reports it cannot read it.
        if let Ok(us) = dma_latency_now_us() {
            assert!(us >= 0, "{us}");
        }
    }
}
