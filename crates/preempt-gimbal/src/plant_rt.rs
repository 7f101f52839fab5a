//! The plant process's loop: the 40 kHz integration on its own clock and the bus that
//! serves the controller's transactions ([`crate::frame`]), both in one busy-polling thread,
//! as a microcontroller serves its step timer and its SPI peripheral.
//!
//! ```text
//!  one thread (SCHED_FIFO P, pinned), never sleeps:
//!  loop:
//!    step j due (t0 + j·25 µs)?        -> plant.step(voltages), sensors latched, j += 1
//!                                         (late if the next step was already due)
//!    transfer under way, 19.2 µs over? -> voltages <- its TX frame, write(done)
//!    doorbell rung (non-blocking read)? -> RX <- sensors, TX <- page, transfer starts
//! ```
//!
//! **Why it polls.** A separate board's timer and SPI slave never sleep. On the machine this
//! was built on (a 2-vCPU VM) a thread that sleeps between steps pays a timer wake-up of
//! ~20 µs each time (a halted vCPU's exit and re-entry), most of the 25 µs step: the former
//! design, a step thread sleeping with `clock_nanosleep` and a bus thread woken by the
//! doorbell, spent 91 % + 30 % of its CPU in those wake-ups and fell behind its grid
//! (docs/PERFORMANCE.md, "The gimbal demonstrator"). Polling costs the plant's whole CPU,
//! which is what the separate board costs too.
//!
//! The loop keeps its grid whatever the controller does: a late voltage command acts late,
//! as on the robot. A step that runs when the next one is already due is counted late
//! ([`frame::STAT_LATE_STEPS`]) and the loop catches up step by step (simulated time never
//! slips against the clock). A transfer never delays a step: steps are checked first on every
//! turn of the loop.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use preempt_io::sys::clock;
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};
use preempt_io::sys::thread;

use crate::frame::{self, FRAME_LEN, Rx, Tx};
use crate::model::{Plant, STEP_NS};

/// What to run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlantConfig {
    /// Sensor noise seed.
    pub seed: u64,
    /// CPU to pin the plant to.
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the plant's loop; None: SCHED_OTHER.
    pub priority: Option<u8>,
    /// Stop after this long (None: until killed or `stop`).
    pub duration_ns: Option<u64>,
}

fn apply_rt(cfg: &PlantConfig, page: &SharedMap) {
    let mut flags = 0;
    if let Some(cpu) = cfg.cpu {
        match sched::set_current_thread_affinity(&[cpu]) {
            Ok(()) => flags |= frame::FLAG_PINNED,
            Err(e) => eprintln!("gimbal-plant: cannot pin to CPU {cpu}: {e}"),
        }
    }
    if let Some(priority) = cfg.priority {
        match sched::set_current_thread_policy(&Policy::Fifo { priority }) {
            Ok(()) => flags |= frame::FLAG_FIFO,
            Err(e) => {
                eprintln!("gimbal-plant: SCHED_FIFO {priority} refused, running SCHED_OTHER: {e}")
            }
        }
    }
    let old = page.load_u64(frame::STAT_FLAGS);
    page.store_u64(frame::STAT_FLAGS, old | flags);
}

/// How far behind its grid the plant may fall before it gives up: a plant that cannot
/// catch up (its CPU taken by another real-time thread, or a step slower than 25 µs) ends
/// with an error instead of spinning behind its grid forever.
pub const MAX_LAG_NS: u64 = 1_000_000_000;

/// A transfer under way: when it started and the controller's frame.
struct Transfer {
    start_ns: u64,
    tx: Tx,
}

/// Runs the plant until `duration_ns`, `stop`, or a doorbell error. `doorbell` is a
/// non-blocking eventfd (polled). Counters go to `page` as they change.
///
/// # Errors
/// eventfd errors of the bus; the plant fell more than [`MAX_LAG_NS`] behind its grid.
pub fn run(
    cfg: &PlantConfig,
    page: Arc<SharedMap>,
    doorbell: EventFd,
    done: EventFd,
    stop: &AtomicBool,
) -> io::Result<()> {
    apply_rt(cfg, &page);
    let mut plant = Plant::new(cfg.seed);
    let mut volts = [0.0, 0.0];
    let mut sensors = Rx::of_plant(&plant, 0);
    let mut transfer: Option<Transfer> = None;
    let mut transfers = 0_u64;
    let t0 = clock::monotonic_now_ns() + 1_000_000;
    let end = cfg.duration_ns.map(|d| t0 + d);
    let (mut late, mut max_late, mut stalls, mut stalled) = (0_u64, 0_u64, 0_u64, false);
    let switches = || thread::rusage_thread().map_or(0, |u| u.involuntary_switches);
    let (mut preempted, mut last_switches) = (0_u64, switches());
    page.store_u64(
        frame::STAT_FLAGS,
        page.load_u64(frame::STAT_FLAGS) | frame::FLAG_RUNNING,
    );
    let mut due = t0 + STEP_NS;
    loop {
        if end.is_some_and(|e| due > e) || stop.load(Ordering::Relaxed) {
            break;
        }
        let now = clock::monotonic_now_ns();
        if now >= due {
            let lateness = now - due;
            if lateness >= STEP_NS {
                late += 1; // the next step is already due: this one ran a whole step late
                page.store_u64(frame::STAT_LATE_STEPS, late);
            }
            if lateness >= frame::STALL_NS && !stalled {
                stalls += 1;
                page.store_u64(frame::STAT_STALLS, stalls);
                // One system call per stall (not per step): was the loop switched out?
                let now_switches = switches();
                if now_switches > last_switches {
                    preempted += 1;
                    page.store_u64(frame::STAT_STALLS_PREEMPTED, preempted);
                }
                last_switches = now_switches;
            }
            stalled = lateness >= frame::STALL_NS;
            if lateness > MAX_LAG_NS {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the plant fell {:.1} s behind its 40 kHz grid and cannot catch up \
                         (is another real-time thread taking its CPU? use another --plant-cpu)",
                        lateness as f64 / 1e9
                    ),
                ));
            }
            if lateness > max_late {
                max_late = lateness;
                page.store_u64(frame::STAT_MAX_LATE_NS, max_late);
            }
            plant.step(volts);
            let stamp_us = u32::try_from((now - t0) / 1000).unwrap_or(u32::MAX);
            sensors = Rx::of_plant(&plant, stamp_us);
            page.store_u64(frame::STAT_STEPS, plant.steps);
            due += STEP_NS;
            continue; // a late loop catches up before it serves the bus
        }
        match &transfer {
            Some(t) if now >= t.start_ns + frame::BUS_NS => {
                // The transfer's last bit: the slave latches the voltages.
                volts = t.tx.volts.map(f64::from);
                transfers += 1;
                page.store_u64(frame::STAT_TRANSFERS, transfers);
                transfer = None;
                done.write(1)?;
            }
            Some(_) => {}
            None => {
                if doorbell.read()?.is_some() {
                    // Full duplex: the controller gets the sensors as they are now.
                    page.write_bytes(frame::RX_OFF, &sensors.encode());
                    let mut tx = [0_u8; FRAME_LEN];
                    page.read_bytes(frame::TX_OFF, &mut tx);
                    transfer = Some(Transfer {
                        start_ns: now,
                        tx: Tx::decode(&tx),
                    });
                }
            }
        }
        std::hint::spin_loop();
    }
    Ok(())
}
