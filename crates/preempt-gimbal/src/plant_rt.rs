//! The plant process's loop: the integration on its own clock (40 kHz for the gimbal) and
//! the bus that serves the controller's transactions ([`crate::frame`]), both in one pinned
//! thread, as a microcontroller serves its step timer and its SPI peripheral. Generic over the
//! [`PlantModel`]: the gimbal's [`Plant`] and `preempt-uav`'s quadrotor run on the same loop.
//!
//! ```text
//!  one thread (SCHED_FIFO P, pinned):
//!  loop:
//!    step j due (t0 + j·STEP_NS)?       -> plant.step(command), sensors latched, j += 1
//!                                          (late if the next step was already due)
//!    transfer under way, BUS_NS over?   -> command <- its TX frame, write(done)
//!    doorbell rung (non-blocking read)? -> RX <- sensors, TX <- page, transfer starts
//!    else, a plant that SLEEPS: epoll on the doorbell and a timerfd at
//!         min(next step, next expected doorbell) − WAKE_EARLY_NS, then spin the rest
//! ```
//!
//! **Why it polls, and why not always.** A separate board's timer and SPI slave never sleep.
//! On the machine this was built on (a 2-vCPU VM) a thread that sleeps between steps pays a
//! timer wake-up of ~20 µs each time, most of the gimbal's 25 µs step: the first design, a step
//! thread sleeping with `clock_nanosleep` and a bus thread woken by the doorbell, used 91 % +
//! 30 % of the plant's CPU (`ps`, a 3 s run) and fell behind its grid. A loop that never sleeps
//! keeps the grid but starves the CPU's SCHED_OTHER tasks, and the kernel's fair server then
//! takes the CPU from it for ~50 ms once a second (measured: 4.5–5 % of the gimbal's steps late,
//! in stalls of 52 ms; the quadrotor: 16 gaps of 40–56 ms in a 14 s flight). So a plant that
//! [sleeps](PlantModel::SLEEPS) arms its timer [`PlantModel::WAKE_EARLY_NS`] before the next
//! step or the next doorbell it expects (the controller's last interval) and spins the rest:
//! a wake-up shorter than that costs nothing, and the gaps let the CPU's other tasks run in
//! small pieces (the gimbal: 0.6 % of steps late, no fair-server stall; docs/PERFORMANCE.md,
//! "The gimbal demonstrator"). One thread also needs no lock between the step and the bus: the
//! command a step uses is always one whole frame.
//!
//! The loop keeps its grid whatever the controller does: a late command acts late, as on the
//! robot. A step that runs when the next one is already due is counted late
//! ([`frame::STAT_LATE_STEPS`]) and the loop catches up step by step (simulated time never
//! slips against the clock); an episode of [`frame::STALL_NS`] or more behind is a stall
//! ([`frame::STAT_STALLS`]). A transfer never delays a step: steps come first on every turn.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::os::fd::AsFd;

use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::epoll::{Epoll, Event, Interest};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};
use preempt_io::sys::thread;
use preempt_io::sys::timerfd::TimerFd;

use crate::frame::{self, FRAME_LEN, Rx, SLOT_LEN, Tx};
use crate::model::{Plant, STEP_NS};

/// A simulated plant that [`run`] steps on its own clock and serves over the bus: the
/// gimbal's [`Plant`] here, the quadrotor of `preempt-uav` there. Frames are the page's
/// fixed slots ([`SLOT_LEN`] bytes each way); a plant uses the prefix it needs.
pub trait PlantModel: Send + 'static {
    /// Process name for messages and thread names (e.g. `gimbal-plant`).
    const NAME: &'static str;
    /// Integration step, ns.
    const STEP_NS: u64;
    /// Time one transaction holds the bus, ns.
    const BUS_NS: u64;
    /// One integration step under the latest command frame (all zero before the first
    /// transaction).
    fn step(&mut self, command: &[u8; SLOT_LEN]);
    /// The sensor frame for the state after the latest step; `stamp_us` is the step's time
    /// on the plant's clock.
    fn sensors(&mut self, stamp_us: u32) -> [u8; SLOT_LEN];
    /// Steps taken.
    fn steps(&self) -> u64;
    /// Flag bits of [`frame::STAT_FLAGS`] this plant sets (e.g. a crash), checked after each
    /// step.
    fn flags(&self) -> u64 {
        0
    }
    /// Whether the loop sleeps between events (the next step's due time on a timerfd and
    /// the doorbell, in one epoll) instead of polling. A real-time thread that never sleeps
    /// has its CPU taken for ~50 ms every second by the kernel's fair server (the quadrotor's
    /// 1 ms loop, polling: 16 gaps of 40–56 ms in a 14 s flight, each 10 missed control
    /// periods; the gimbal's: 4.5–5 % of its steps late); a fast plant combines it with
    /// [`WAKE_EARLY_NS`](PlantModel::WAKE_EARLY_NS).
    const SLEEPS: bool = false;
    /// A sleeping loop's timer fires this long before the step is due, and the loop spins
    /// the rest: a wake-up shorter than this costs the step nothing.
    const WAKE_EARLY_NS: u64 = 0;
}

impl PlantModel for Plant {
    const NAME: &'static str = "gimbal-plant";
    const STEP_NS: u64 = STEP_NS;
    const BUS_NS: u64 = frame::BUS_NS;
    // 25 µs steps: sleep the ~10 µs gaps, wake 15 µs early (most wake-ups here take less).
    const SLEEPS: bool = true;
    const WAKE_EARLY_NS: u64 = 15_000;

    fn step(&mut self, command: &[u8; SLOT_LEN]) {
        let mut tx = [0_u8; FRAME_LEN];
        tx.copy_from_slice(&command[..FRAME_LEN]);
        Plant::step(self, Tx::decode(&tx).volts.map(f64::from));
    }

    fn sensors(&mut self, stamp_us: u32) -> [u8; SLOT_LEN] {
        let mut b = [0_u8; SLOT_LEN];
        b[..FRAME_LEN].copy_from_slice(&Rx::of_plant(self, stamp_us).encode());
        b
    }

    fn steps(&self) -> u64 {
        self.steps
    }
}

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

/// How far behind its grid a plant may fall before it gives up: a plant that cannot catch
/// up (its CPU taken by another real-time thread, or a step slower than its period) ends
/// with an error instead of spinning behind its grid forever.
pub const MAX_LAG_NS: u64 = 1_000_000_000;

fn apply_rt(name: &str, cfg: &PlantConfig, page: &SharedMap) {
    let mut flags = 0;
    if let Some(cpu) = cfg.cpu {
        match sched::set_current_thread_affinity(&[cpu]) {
            Ok(()) => flags |= frame::FLAG_PINNED,
            Err(e) => eprintln!("{name}: cannot pin to CPU {cpu}: {e}"),
        }
    }
    if let Some(priority) = cfg.priority {
        match sched::set_current_thread_policy(&Policy::Fifo { priority }) {
            Ok(()) => flags |= frame::FLAG_FIFO,
            Err(e) => {
                eprintln!("{name}: SCHED_FIFO {priority} refused, running SCHED_OTHER: {e}")
            }
        }
    }
    page.fetch_or_u64(frame::STAT_FLAGS, flags);
}

/// The loop's lateness bookkeeping, published to the page as it changes.
#[derive(Default)]
struct Lateness {
    late: u64,
    max: u64,
    stalls: u64,
    stalled: bool,
    preempted: u64,
    switches: u64,
}

impl Lateness {
    fn involuntary_switches() -> u64 {
        thread::rusage_thread().map_or(0, |u| u.involuntary_switches)
    }

    /// Accounts a step that ran `lateness` ns after its due time.
    fn step(&mut self, lateness: u64, step_ns: u64, page: &SharedMap) -> io::Result<()> {
        if lateness >= step_ns {
            self.late += 1; // the next step is already due: this one ran a whole step late
            page.store_u64(frame::STAT_LATE_STEPS, self.late);
        }
        if lateness >= frame::STALL_NS && !self.stalled {
            self.stalls += 1;
            page.store_u64(frame::STAT_STALLS, self.stalls);
            // One system call per stall (not per step): was the loop switched out?
            let now = Self::involuntary_switches();
            if now > self.switches {
                self.preempted += 1;
                page.store_u64(frame::STAT_STALLS_PREEMPTED, self.preempted);
            }
            self.switches = now;
        }
        self.stalled = lateness >= frame::STALL_NS;
        if lateness > self.max {
            self.max = lateness;
            page.store_u64(frame::STAT_MAX_LATE_NS, lateness);
        }
        if lateness > MAX_LAG_NS {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the plant fell {:.1} s behind its grid and cannot catch up (is another \
                     real-time thread taking its CPU? use another --plant-cpu)",
                    lateness as f64 / 1e9
                ),
            ));
        }
        Ok(())
    }
}

/// The sleeping loop's wait ([`PlantModel::SLEEPS`]): the doorbell and a timer at the next
/// step's due time in one epoll.
struct Sleeper {
    epoll: Epoll,
    timer: TimerFd,
    armed_ns: u64,
}

impl Sleeper {
    fn new(doorbell: &EventFd) -> io::Result<Sleeper> {
        let epoll = Epoll::new()?;
        let timer = TimerFd::new(ClockId::Monotonic, true)?;
        epoll.add(doorbell.as_fd(), Interest::READ, 0)?;
        epoll.add(timer.as_fd(), Interest::READ, 1)?;
        Ok(Sleeper {
            epoll,
            timer,
            armed_ns: 0,
        })
    }

    /// Sleeps until `due_ns` or the doorbell, whichever is first (level-triggered: a
    /// doorbell rung before the call returns at once).
    fn wait(&mut self, due_ns: u64) -> io::Result<()> {
        if self.armed_ns != due_ns {
            self.timer.set_absolute_ns(due_ns, 0)?;
            self.armed_ns = due_ns;
        }
        let mut events = [Event::default(); 2];
        self.epoll.wait(&mut events, None)?;
        match self.timer.read_expirations() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// A transfer under way: when it started and the controller's frame.
struct Transfer {
    start_ns: u64,
    tx: [u8; SLOT_LEN],
}

/// Runs `plant` until `duration_ns`, `stop`, or a doorbell error. `doorbell` is a
/// non-blocking eventfd (polled, or waited for with epoll by a plant that
/// [sleeps](PlantModel::SLEEPS)). Counters go to `page` as they change.
///
/// # Errors
/// eventfd errors of the bus; the plant fell more than [`MAX_LAG_NS`] behind its grid.
pub fn run<M: PlantModel>(
    mut plant: M,
    cfg: &PlantConfig,
    page: Arc<SharedMap>,
    doorbell: EventFd,
    done: EventFd,
    stop: &AtomicBool,
) -> io::Result<()> {
    apply_rt(M::NAME, cfg, &page);
    let mut command = [0_u8; SLOT_LEN];
    let mut sensors = plant.sensors(0);
    let mut transfer: Option<Transfer> = None;
    let (mut transfers, mut flags) = (0_u64, 0_u64);
    let mut lateness = Lateness {
        switches: Lateness::involuntary_switches(),
        ..Lateness::default()
    };
    let t0 = clock::monotonic_now_ns() + 1_000_000;
    let end = cfg.duration_ns.map(|d| t0 + d);
    page.fetch_or_u64(frame::STAT_FLAGS, frame::FLAG_RUNNING);
    let mut due = t0 + M::STEP_NS;
    // The last two doorbells' times (a sleeping loop spins from WAKE_EARLY_NS before the
    // next one it expects, as it does before a step).
    let mut bells = (0_u64, 0_u64);
    let mut sleeper = if M::SLEEPS {
        Some(Sleeper::new(&doorbell)?)
    } else {
        None
    };
    loop {
        if end.is_some_and(|e| due > e) || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let now = clock::monotonic_now_ns();
        if now >= due {
            lateness.step(now - due, M::STEP_NS, &page)?;
            plant.step(&command);
            let stamp_us = u32::try_from((now - t0) / 1000).unwrap_or(u32::MAX);
            sensors = plant.sensors(stamp_us);
            page.store_u64(frame::STAT_STEPS, plant.steps());
            let f = plant.flags();
            if f & !flags != 0 {
                flags |= f;
                page.fetch_or_u64(frame::STAT_FLAGS, f);
            }
            due += M::STEP_NS;
            continue; // a late loop catches up before it serves the bus
        }
        match &transfer {
            Some(t) if now >= t.start_ns + M::BUS_NS => {
                // The transfer's last bit: the slave latches the command.
                command = t.tx;
                transfers += 1;
                page.store_u64(frame::STAT_TRANSFERS, transfers);
                transfer = None;
                done.write(1)?;
            }
            Some(_) => {}
            None => {
                if doorbell.read()?.is_some() {
                    bells = (bells.1, now);
                    // Full duplex: the controller gets the sensors as they are now.
                    page.write_bytes(frame::RX_OFF, &sensors);
                    let mut tx = [0_u8; SLOT_LEN];
                    page.read_bytes(frame::TX_OFF, &mut tx);
                    transfer = Some(Transfer { start_ns: now, tx });
                } else if let Some(s) = sleeper.as_mut() {
                    // The next doorbell, if the controller keeps its period (the last
                    // interval between two, when shorter than a millisecond).
                    let interval = bells.1.saturating_sub(bells.0);
                    let bell = (interval < 1_000_000)
                        .then_some(bells.1 + interval)
                        .filter(|&b| b > now);
                    let wake = bell.map_or(due, |b| b.min(due));
                    if now + M::WAKE_EARLY_NS < wake {
                        // Nothing to do until the next step or the doorbell.
                        s.wait(wake - M::WAKE_EARLY_NS)?;
                        continue;
                    }
                }
            }
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gimbal_plant_reads_both_voltages_from_one_command_frame() {
        let mut p = Plant::new(1);
        let mut cmd = [0_u8; SLOT_LEN];
        let tx = Tx {
            seq: 1,
            volts: [6.0, -6.0],
        };
        cmd[..FRAME_LEN].copy_from_slice(&tx.encode());
        for _ in 0..400 {
            PlantModel::step(&mut p, &cmd);
        }
        assert!(p.axes[0].omega > 0.0 && p.axes[1].omega < 0.0);
        assert_eq!(PlantModel::steps(&p), 400);
    }
}
