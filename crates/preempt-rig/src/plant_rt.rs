//! The plant process's loop: the integration on its own clock (40 kHz for the gimbal) and
//! the bus that serves the controller's transactions ([`crate::page`]), both in one pinned
//! thread, as a microcontroller serves its step timer and its SPI peripheral. Generic over the
//! [`PlantModel`]: the gimbal's `Plant` and `preempt-uav`'s quadrotor run on the same loop.
//!
//! ```text
//!  one thread (SCHED_FIFO P, pinned), steps integrated lazily on a fixed grid (t0 + j·STEP_NS):
//!  loop:
//!    transfer under way, BUS_NS over?   -> integrate the steps due up to the latch time with
//!                                          the old command; command <- its TX frame; write(done)
//!    doorbell rung (non-blocking read)? -> integrate the steps due up to now; RX <- sensors,
//!                                          TX <- page, transfer starts
//!    else, SLEEP: epoll on the doorbell and a timerfd at the next doorbell expected (the
//!         controller's last interval) − WAKE_EARLY_NS, then spin the rest
//! ```
//!
//! # Background
//! A separate board's timer and SPI slave never sleep. On the machine this was built on (a
//! 2-vCPU VM) a thread that sleeps between 25 µs steps pays a ~20 µs timer wake-up each time;
//! a loop that polls between them keeps the grid but holds its CPU for more than 95 % of the
//! time at real-time priority. The kernel then takes that CPU from it for ~50 ms once a
//! second: the real-time class may use `sched_rt_runtime_us` of every `sched_rt_period_us`
//! (950 000 of 1 000 000 µs by default). Measured here (kernel 6.18, AMD EPYC, a SCHED_FIFO
//! spinner on CPU 1, `/sys/kernel/debug/sched/debug` sampled every 10 ms): with a SCHED_OTHER
//! task waiting on that CPU the *fair server* (`dl_server`, kernel ≥ 6.12, 50 ms every 1 s)
//! runs it once the real-time class has used 950 ms, before `rt_throttled` is ever set; with
//! none waiting, RT throttling proper sets `rt_throttled` at 951.9 ms and the CPU idles; with
//! `sched_rt_runtime_us` = −1 the fair server still takes 52–54 ms a second. Either way the
//! spinner stops for 50–54 ms. The earlier versions of this loop (polling, then sleeping the
//! ~10 µs gaps between steps and spinning from 15 µs before each) stayed near that limit:
//! 4.5–5 % of the steps late on this host, 4.7 % and 47 ms stalls on an Intel Xeon host.
//!
//! # Solution
//! The plant's inputs change only at the bus: the command is zero-order-hold between two
//! latches, and the sensors are read only at a doorbell. So the loop integrates lazily: at a
//! doorbell it integrates every step due up to that instant, and before it latches a new
//! command it integrates every step due up to the latch with the old one. Between exchanges
//! it sleeps, and spins only from [`PlantModel::WAKE_EARLY_NS`] before the doorbell it expects
//! and through the transfer's [`PlantModel::BUS_NS`]: the gimbal's loop uses about a third of
//! its CPU instead of nearly all of it (docs/PERFORMANCE.md, "The plant under the real-time
//! throttle").
//!
//! # Why it works
//! Step `j` is due at `t0 + j·STEP_NS`. A loop that runs every step on time integrates step
//! `j` with the command latched at or before its due time (a step due at the instant of a
//! latch runs first, with the old command), and a doorbell at `t` sees the state after every
//! step due at or before `t`. [`Grid::advance_to`] integrates exactly those steps, with the
//! same commands, in the same order, and the model draws its noise per step: the states and
//! the sensor frames are identical, bit for bit (test
//! `lazy_integration_matches_stepping_every_step_on_time`). What the lazy loop gives up is
//! nothing the controller can observe: the state between two bus events.
//!
//! The loop keeps its grid whatever the controller does: a late command acts late, as on the
//! robot. Whenever the loop wanted its CPU and did not have it (a timer wake-up later than the
//! event it was armed for, or a gap between two turns of a spin), the grid steps in that gap
//! are counted late ([`page::STAT_LATE_STEPS`]); a gap of [`page::STALL_NS`] or more is a
//! stall ([`page::STAT_STALLS`]), and a stall in which the thread waited on its runqueue
//! (`run_delay` in `/proc/thread-self/schedstat`) for as long as the kernel's throttling
//! window is counted throttled ([`page::STAT_THROTTLED`], by
//! [`preempt_io::sys::schedstat::ThrottleWatch`], the detector `preempt latency` and the
//! apps' executors use too): at SCHED_FIFO 95 nothing else keeps it runnable that long.
//! The loop's own CPU time and wall time are published ([`page::STAT_CPU_NS`],
//! [`page::STAT_WALL_NS`]): the demo reports the plant's duty cycle from them.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::os::fd::AsFd;

use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::epoll::{Epoll, Event, Interest};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};
use preempt_io::sys::schedstat::ThrottleWatch;
use preempt_io::sys::thread;
use preempt_io::sys::timerfd::TimerFd;

use crate::page::{self, SLOT_LEN};

/// A simulated plant that [`run`] steps on its own clock and serves over the bus: the
/// gimbal's `Plant` (`preempt_gimbal::plant`), the quadrotor of `preempt-uav` (`preempt_uav::sim`). Frames are the page's
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
    /// Flag bits of [`page::STAT_FLAGS`] this plant sets (e.g. a crash), checked after each
    /// integration.
    fn flags(&self) -> u64 {
        0
    }
    /// The loop's timer fires this long before the doorbell it expects, and the loop spins
    /// the rest: a wake-up shorter than this costs the exchange nothing.
    const WAKE_EARLY_NS: u64 = 0;
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

/// The longest the loop sleeps with no doorbell expected: it wakes at least this often to
/// integrate, publish its counters and see `stop` (1 kHz: about 2 % of a CPU here).
const IDLE_WAKE_NS: u64 = 1_000_000;

/// A doorbell interval longer than this is not taken as the controller's period.
const MAX_PERIOD_NS: u64 = 10_000_000;

/// How often the loop publishes its CPU time (one `getrusage` each).
const CPU_PUBLISH_NS: u64 = 10_000_000;

fn apply_rt(name: &str, cfg: &PlantConfig, page: &SharedMap) {
    let mut flags = 0;
    if let Some(cpu) = cfg.cpu {
        match sched::set_current_thread_affinity(&[cpu]) {
            Ok(()) => flags |= page::FLAG_PINNED,
            Err(e) => eprintln!("{name}: cannot pin to CPU {cpu}: {e}"),
        }
    }
    if let Some(priority) = cfg.priority {
        match sched::set_current_thread_policy(&Policy::Fifo { priority }) {
            Ok(()) => flags |= page::FLAG_FIFO,
            Err(e) => {
                eprintln!("{name}: SCHED_FIFO {priority} refused, running SCHED_OTHER: {e}")
            }
        }
    }
    page.fetch_or_u64(page::STAT_FLAGS, flags);
}

/// A plant on its step grid, integrated lazily: step `j` (from 1) is due at
/// `t0 + j·STEP_NS`, and [`Grid::advance_to`] integrates every step due up to an instant
/// with the command in force. See the module's "Why it works".
pub struct Grid<M> {
    plant: M,
    t0: u64,
    /// Steps integrated.
    done: u64,
    command: [u8; SLOT_LEN],
}

impl<M: PlantModel> Grid<M> {
    /// `plant` at rest at `t0_ns` (CLOCK_MONOTONIC), the command all zero.
    pub fn new(plant: M, t0_ns: u64) -> Grid<M> {
        Grid {
            plant,
            t0: t0_ns,
            done: 0,
            command: [0; SLOT_LEN],
        }
    }

    /// Integrates every step due at or before `t_ns`; returns how many it took.
    pub fn advance_to(&mut self, t_ns: u64) -> u64 {
        let due = t_ns.saturating_sub(self.t0) / M::STEP_NS;
        let n = due.saturating_sub(self.done);
        for _ in 0..n {
            self.plant.step(&self.command);
        }
        self.done += n;
        n
    }

    /// Latches a new command at `t_ns`: the steps due up to then run with the old one.
    pub fn latch(&mut self, t_ns: u64, command: [u8; SLOT_LEN]) {
        self.advance_to(t_ns);
        self.command = command;
    }

    /// The sensor frame after the latest step, stamped with that step's grid time (µs
    /// since `t0`).
    pub fn sensors(&mut self) -> [u8; SLOT_LEN] {
        let stamp_us = u32::try_from(self.done * M::STEP_NS / 1000).unwrap_or(u32::MAX);
        self.plant.sensors(stamp_us)
    }

    /// The plant.
    pub fn plant(&self) -> &M {
        &self.plant
    }
}

/// Where a stall's time went: each stall is in one class, from the thread's involuntary
/// context switches and its CPU time over the stall (the page's counters of each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StallClass {
    /// Switched out: another thread ran on its CPU ([`page::STAT_STALLS_PREEMPTED`]).
    Preempted,
    /// A sleep call that used 90 % of the gap or more as CPU time: on its CPU in the kernel
    /// ([`page::STAT_STALLS_IN_KERNEL`]).
    InKernel,
    /// A spin whose CPU time lacks 90 % of the gap or more: the hypervisor took the vCPU
    /// ([`page::STAT_STALLS_STOLEN`]).
    Stolen,
    /// A sleep call that used 10 % of the gap or less as CPU time: the thread was off its CPU
    /// past its wake-up, not switched out ([`page::STAT_STALLS_OVERSLEPT`]).
    Overslept,
    /// None of those: a sleep call that was on its CPU for part of the gap, or a spin that
    /// had its CPU time and still did not turn.
    Unexplained,
}

impl StallClass {
    /// The class of a stall of `gap` ns that ended at `now` (monotonic, thread CPU time, ns),
    /// the thread on its CPU from `since` up to the stall or, when `slept_at` is a time, up
    /// to its sleep call entered then; `switched` when its involuntary switches grew.
    fn of(
        gap: u64,
        switched: bool,
        slept_at: Option<u64>,
        since: (u64, u64),
        now: (u64, u64),
    ) -> StallClass {
        if switched {
            return StallClass::Preempted;
        }
        let (wall0, cpu0) = since;
        let (wall, cpu) = now;
        let used = cpu.saturating_sub(cpu0);
        let most = |part: u64| part.saturating_mul(10) >= gap.saturating_mul(9);
        let little = |part: u64| part.saturating_mul(10) <= gap;
        match slept_at {
            // The CPU time used inside the sleep call: all of it less the time on the CPU
            // before the call. One that used as much as it lasted did not sleep: the thread
            // was on its CPU in the kernel (interrupt work charged to it, or the hypervisor
            // handling the vCPU's exit, e.g. programming the timer). One that used next to
            // none slept past its wake-up.
            Some(at) => {
                let in_call = used.saturating_sub(at.saturating_sub(wall0));
                if most(in_call) {
                    StallClass::InKernel
                } else if little(in_call) {
                    StallClass::Overslept
                } else {
                    StallClass::Unexplained
                }
            }
            // A spin whose CPU time lacks the gap: the hypervisor ran something else on the
            // vCPU (steal, left out of the thread's CPU time under
            // CONFIG_PARAVIRT_TIME_ACCOUNTING).
            None if most(wall.saturating_sub(wall0).saturating_sub(used)) => StallClass::Stolen,
            None => StallClass::Unexplained,
        }
    }
}

/// The loop's lateness bookkeeping, published to the page as it changes.
struct Lateness {
    late: u64,
    max: u64,
    stalls: u64,
    preempted: u64,
    in_kernel: u64,
    stolen: u64,
    overslept: u64,
    throttled: u64,
    switches: u64,
    /// (monotonic, thread CPU time) when the loop last woke or stalled: it has been on its
    /// CPU since, so wall time its CPU time lacks was taken from it, and CPU time it gained
    /// inside a sleep call was not sleep.
    on_cpu_since: (u64, u64),
    /// Counts the stalls in which the thread waited out a throttling window on its
    /// runqueue (the project's one detector).
    throttle: ThrottleWatch,
}

impl Lateness {
    fn new() -> Lateness {
        Lateness {
            late: 0,
            max: 0,
            stalls: 0,
            preempted: 0,
            in_kernel: 0,
            stolen: 0,
            overslept: 0,
            throttled: 0,
            switches: Self::involuntary_switches(),
            on_cpu_since: Self::on_cpu_now(),
            throttle: ThrottleWatch::open(),
        }
    }

    /// Notes the thread's `run_delay` at `now` (the baseline of the next stall; at most
    /// every 10 ms).
    fn sample(&mut self, now: u64) {
        self.throttle.sample(now);
    }

    fn on_cpu_now() -> (u64, u64) {
        (
            clock::monotonic_now_ns(),
            clock::now_ns(ClockId::ThreadCputime),
        )
    }

    /// The loop woke from its sleep: it is on its CPU from now (one system call per sleep).
    fn woke(&mut self) {
        self.on_cpu_since = Self::on_cpu_now();
    }

    fn involuntary_switches() -> u64 {
        thread::rusage_thread().map_or(0, |u| u.involuntary_switches)
    }

    /// Accounts a gap of `gap` ns in which the loop wanted its CPU and did not run, between
    /// two turns of its spin (`slept_at` None) or in a sleep call it entered at `slept_at`.
    fn gap(
        &mut self,
        gap: u64,
        slept_at: Option<u64>,
        step_ns: u64,
        page: &SharedMap,
    ) -> io::Result<()> {
        if gap >= step_ns {
            self.late += gap / step_ns; // the grid steps that passed while it could not run
            page.store_u64(page::STAT_LATE_STEPS, self.late);
        }
        if gap >= page::STALL_NS {
            self.stalls += 1;
            page.store_u64(page::STAT_STALLS, self.stalls);
            // A few system calls per stall (not per turn): was the loop switched out?
            let now = Self::involuntary_switches();
            let switched = now > self.switches;
            self.switches = now;
            // Where the time went, from the thread's CPU time (a system call per stall).
            let since = self.on_cpu_since;
            self.on_cpu_since = Self::on_cpu_now();
            let class = StallClass::of(gap, switched, slept_at, since, self.on_cpu_since);
            let counted = match class {
                StallClass::Preempted => Some((&mut self.preempted, page::STAT_STALLS_PREEMPTED)),
                StallClass::InKernel => Some((&mut self.in_kernel, page::STAT_STALLS_IN_KERNEL)),
                StallClass::Stolen => Some((&mut self.stolen, page::STAT_STALLS_STOLEN)),
                StallClass::Overslept => Some((&mut self.overslept, page::STAT_STALLS_OVERSLEPT)),
                // Not published: the stalls less the four classes.
                StallClass::Unexplained => None,
            };
            if let Some((n, slot)) = counted {
                *n += 1;
                page.store_u64(slot, *n);
            }
            // Did the kernel keep it runnable for a throttling window? (A sleeping loop
            // woken in the stop is not switched out, but waits on its runqueue all the
            // same; host steal and interrupts do not count as waiting there.)
            if self.throttle.stall(gap) {
                self.throttled = self.throttle.windows();
                page.store_u64(page::STAT_THROTTLED, self.throttled);
            }
        }
        if gap > self.max {
            self.max = gap;
            page.store_u64(page::STAT_MAX_LATE_NS, gap);
        }
        if gap > MAX_LAG_NS {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the plant could not run for {:.1} s (is another real-time thread taking \
                     its CPU? use another --plant-cpu)",
                    gap as f64 / 1e9
                ),
            ));
        }
        Ok(())
    }
}

/// The loop's wait: the doorbell and a timer in one epoll.
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
    /// doorbell rung before the call returns at once); returns whether the timer fired.
    fn wait(&mut self, due_ns: u64) -> io::Result<bool> {
        if self.armed_ns != due_ns {
            self.timer.set_absolute_ns(due_ns, 0)?;
            self.armed_ns = due_ns;
        }
        let mut events = [Event::default(); 2];
        self.epoll.wait(&mut events, None)?;
        match self.timer.read_expirations() {
            Ok(n) => Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// A transfer under way: when it started and the controller's frame.
struct Transfer {
    start_ns: u64,
    tx: [u8; SLOT_LEN],
}

/// The doorbell the controller will ring next if it keeps its period (the last interval
/// between two), the first such instant not more than `spin_ns` past; None before two
/// doorbells or when the interval is longer than [`MAX_PERIOD_NS`].
fn next_bell(bells: (u64, u64), now: u64, spin_ns: u64) -> Option<u64> {
    let interval = bells.1.saturating_sub(bells.0);
    if bells.0 == 0 || interval == 0 || interval > MAX_PERIOD_NS {
        return None;
    }
    let mut bell = bells.1 + interval;
    if bell + spin_ns < now {
        bell += (now - spin_ns - bell).div_ceil(interval) * interval;
    }
    Some(bell)
}

/// Publishes the loop's CPU time and wall time since `t0` (the duty cycle's two terms).
fn publish_cpu(page: &SharedMap, t0: u64, now: u64) {
    if let Ok(u) = thread::rusage_thread() {
        page.store_u64(page::STAT_CPU_NS, u.user_ns + u.system_ns);
        page.store_u64(page::STAT_WALL_NS, now.saturating_sub(t0));
    }
}

/// Runs `plant` until `duration_ns`, `stop`, or a doorbell error. `doorbell` is a
/// non-blocking eventfd. Counters go to `page` as they change.
///
/// # Errors
/// eventfd errors of the bus; the plant could not run for more than [`MAX_LAG_NS`].
pub fn run<M: PlantModel>(
    plant: M,
    cfg: &PlantConfig,
    page: Arc<SharedMap>,
    doorbell: EventFd,
    done: EventFd,
    stop: &AtomicBool,
) -> io::Result<()> {
    apply_rt(M::NAME, cfg, &page);
    let mut transfer: Option<Transfer> = None;
    let (mut transfers, mut flags) = (0_u64, 0_u64);
    let mut lateness = Lateness::new();
    let mut sleeper = Sleeper::new(&doorbell)?;
    let t0 = clock::monotonic_now_ns() + 1_000_000;
    let mut grid = Grid::new(plant, t0);
    let end = cfg.duration_ns.map(|d| t0 + d);
    page.fetch_or_u64(page::STAT_FLAGS, page::FLAG_RUNNING);
    // The last two doorbells' times (the loop spins from WAKE_EARLY_NS before the next one
    // it expects).
    let mut bells = (0_u64, 0_u64);
    // When the previous turn read the clock, if it did not sleep since (a longer gap is time
    // the spinning loop lost its CPU).
    let mut last_turn: Option<u64> = None;
    let mut cpu_published = 0_u64;
    loop {
        let now = clock::monotonic_now_ns();
        if let Some(last) = last_turn {
            if now - last >= M::STEP_NS {
                lateness.gap(now - last, None, M::STEP_NS, &page)?;
            }
        }
        last_turn = Some(now);
        let finished = end.is_some_and(|e| now >= e) || stop.load(Ordering::Relaxed);
        // Integrate up to now, but never past a latch still to come: the steps after it
        // take the new command.
        let latch = transfer
            .as_ref()
            .map_or(u64::MAX, |t| t.start_ns + M::BUS_NS);
        let stepped = grid.advance_to(now.min(latch).min(end.unwrap_or(u64::MAX)));
        if stepped > 0 {
            page.store_u64(page::STAT_STEPS, grid.plant().steps());
            let f = grid.plant().flags();
            if f & !flags != 0 {
                flags |= f;
                page.fetch_or_u64(page::STAT_FLAGS, f);
            }
        }
        if finished || now >= cpu_published + CPU_PUBLISH_NS {
            publish_cpu(&page, t0, now);
            lateness.sample(now);
            cpu_published = now;
        }
        if finished {
            return Ok(());
        }
        match &transfer {
            Some(t) if now >= t.start_ns + M::BUS_NS => {
                // The transfer's last bit: the slave latches the command (the steps due
                // up to it take the old one).
                grid.latch(t.start_ns + M::BUS_NS, t.tx);
                transfers += 1;
                page.store_u64(page::STAT_TRANSFERS, transfers);
                transfer = None;
                done.write(1)?;
            }
            Some(_) => {}
            None => {
                if doorbell.read()?.is_some() {
                    bells = (bells.1, now);
                    // Full duplex: the controller gets the sensors as they are now.
                    page.write_bytes(page::RX_OFF, &grid.sensors());
                    let mut tx = [0_u8; SLOT_LEN];
                    page.read_bytes(page::TX_OFF, &mut tx);
                    transfer = Some(Transfer { start_ns: now, tx });
                    continue;
                }
                let wake = next_bell(bells, now, M::WAKE_EARLY_NS)
                    .unwrap_or(now + IDLE_WAKE_NS)
                    .min(end.unwrap_or(u64::MAX));
                if now + M::WAKE_EARLY_NS < wake {
                    // Nothing to do until the doorbell it expects: sleep.
                    let target = wake - M::WAKE_EARLY_NS;
                    if sleeper.wait(target)? {
                        let woke = clock::monotonic_now_ns();
                        // Late only past the event it was armed for, not past the early
                        // wake-up.
                        if woke > wake {
                            lateness.gap(woke - wake, Some(now), M::STEP_NS, &page)?;
                        }
                    }
                    lateness.woke();
                    last_turn = None;
                    continue;
                }
            }
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_stall_is_in_exactly_the_class_its_switches_and_cpu_time_show() {
        // On its CPU from t = 0 (CPU time 0); the stall of 5 ms ends at t = 10 ms.
        let since = (0, 0);
        let of = |switched, slept_at, cpu| {
            StallClass::of(5 * MS, switched, slept_at, since, (10 * MS, cpu))
        };
        // Switched out: preempted, whatever its CPU time.
        assert_eq!(of(true, Some(4 * MS), 10 * MS), StallClass::Preempted);
        assert_eq!(of(true, None, 0), StallClass::Preempted);
        // A sleep call entered at 4 ms, after 4 ms on the CPU.
        // It used its whole 6 ms as CPU time: in the kernel.
        assert_eq!(of(false, Some(4 * MS), 10 * MS), StallClass::InKernel);
        // It used 0.4 ms (under 10 % of the 5 ms gap): off its CPU, overslept.
        assert_eq!(
            of(false, Some(4 * MS), 4 * MS + 400_000),
            StallClass::Overslept
        );
        assert_eq!(of(false, Some(4 * MS), 4 * MS), StallClass::Overslept);
        // Half the gap: neither.
        assert_eq!(
            of(false, Some(4 * MS), 6 * MS + MS / 2),
            StallClass::Unexplained
        );
        // A spin whose CPU time lacks 5 of its 10 ms, the whole gap: stolen.
        assert_eq!(of(false, None, 5 * MS), StallClass::Stolen);
        // A spin that had its CPU all along and still did not turn: no class.
        assert_eq!(of(false, None, 10 * MS), StallClass::Unexplained);
    }

    /// A first-order lag driven by the command frame's f32 at bytes 4..8, with noise drawn
    /// per step (as the demonstrators' plants draw theirs): any step taken with the wrong
    /// command, out of order or twice changes its state and its sensor frames.
    #[derive(Clone, Debug, PartialEq)]
    struct Lag {
        x: f64,
        steps: u64,
        rng: Rng,
    }

    impl Lag {
        fn new(seed: u64) -> Lag {
            Lag {
                x: 0.0,
                steps: 0,
                rng: Rng::new(seed),
            }
        }
    }

    impl PlantModel for Lag {
        const NAME: &'static str = "lag";
        const STEP_NS: u64 = 25_000;
        const BUS_NS: u64 = 19_200;

        fn step(&mut self, command: &[u8; SLOT_LEN]) {
            let u = f32::from_le_bytes([command[4], command[5], command[6], command[7]]);
            self.x += 0.01 * (f64::from(u) - self.x) + 1e-3 * self.rng.normal();
            self.steps += 1;
        }

        fn sensors(&mut self, stamp_us: u32) -> [u8; SLOT_LEN] {
            let mut b = [0_u8; SLOT_LEN];
            b[0..8].copy_from_slice(&self.x.to_le_bytes());
            b[8..16].copy_from_slice(&self.steps.to_le_bytes());
            b[16..20].copy_from_slice(&stamp_us.to_le_bytes());
            b
        }

        fn steps(&self) -> u64 {
            self.steps
        }
    }

    const STEP_NS: u64 = <Lag as PlantModel>::STEP_NS;
    const BUS_NS: u64 = <Lag as PlantModel>::BUS_NS;

    fn command(seq: u32, u: f32) -> [u8; SLOT_LEN] {
        let mut cmd = [0_u8; SLOT_LEN];
        cmd[0..4].copy_from_slice(&seq.to_le_bytes());
        cmd[4..8].copy_from_slice(&u.to_le_bytes());
        cmd
    }

    /// Doorbells on a jittered 100 µs grid, some exactly on a step's due time, some with a
    /// latch exactly on one; a command with a new input at each.
    fn exchanges(t0: u64, n: u32) -> Vec<(u64, [u8; SLOT_LEN])> {
        let mut rng = Rng::new(7);
        (0..n)
            .map(|k| {
                let jitter = match k % 5 {
                    0 => 0,                          // a doorbell on a due time
                    1 => STEP_NS - BUS_NS % STEP_NS, // a latch on a due time
                    _ => rng.next_u64() % 60_000,
                };
                let bell = t0 + 100_000 * u64::from(k + 1) + jitter;
                let u = (rng.next_u64() % 2_401) as f32 / 100.0 - 12.0;
                (bell, command(k, u))
            })
            .collect()
    }

    #[test]
    fn lazy_integration_matches_stepping_every_step_on_time() {
        let t0 = 5_000_000_u64;
        let ex = exchanges(t0, 400);
        let end = ex.last().map_or(t0, |e| e.0) + 1_000_000;
        // Reference: the loop that steps every 25 µs exactly on time. Before step j (due at
        // t0 + j·STEP_NS) every bus event strictly before its due time has happened; a
        // doorbell at t sees the steps due at or before t, a latch at L is used by the steps
        // due after L.
        let mut reference = Lag::new(3);
        let mut cmd = [0_u8; SLOT_LEN];
        let mut events: Vec<(u64, bool, usize)> = Vec::new(); // (time, is latch, exchange)
        for (i, (bell, _)) in ex.iter().enumerate() {
            events.push((*bell, false, i));
            events.push((bell + BUS_NS, true, i));
        }
        events.sort_by_key(|e| (e.0, e.1));
        let mut next = 0;
        let mut seen_ref = Vec::new();
        let mut j = 1_u64;
        while t0 + j * STEP_NS <= end {
            let due = t0 + j * STEP_NS;
            while next < events.len() && events[next].0 < due {
                let (t, latch, i) = events[next];
                if latch {
                    cmd = ex[i].1;
                } else {
                    let stamp = u32::try_from((t - t0) / STEP_NS * STEP_NS / 1000).unwrap();
                    seen_ref.push(reference.sensors(stamp));
                }
                next += 1;
            }
            reference.step(&cmd);
            j += 1;
        }
        // Lazy: integrate only at the bus events, as `run` does.
        let mut grid = Grid::new(Lag::new(3), t0);
        let mut seen_lazy = Vec::new();
        for &(t, latch, i) in &events {
            if latch {
                grid.latch(t, ex[i].1);
            } else {
                grid.advance_to(t);
                seen_lazy.push(grid.sensors());
            }
        }
        grid.advance_to(end);
        assert_eq!(seen_lazy.len(), 400);
        assert!(seen_lazy == seen_ref, "the sensor frames differ");
        assert_eq!(grid.plant(), &reference, "the final states differ");
        // The commands did act.
        assert!(reference.x.abs() > 0.1, "{}", reference.x);
    }

    #[test]
    fn a_latch_is_not_passed_before_it_happens() {
        // Steps due after a latch use the new command even when the loop integrates late.
        let mut a = Grid::new(Lag::new(1), 0);
        let mut b = Lag::new(1);
        let cmd = command(1, 6.0);
        a.latch(40 * STEP_NS, cmd);
        a.advance_to(100 * STEP_NS);
        for _ in 0..40 {
            b.step(&[0; SLOT_LEN]);
        }
        for _ in 40..100 {
            b.step(&cmd);
        }
        assert_eq!(a.plant(), &b);
        assert_eq!(a.plant().steps, 100);
    }

    #[test]
    fn the_next_doorbell_follows_the_controller_period() {
        assert_eq!(next_bell((0, 0), 1_000, 15_000), None);
        assert_eq!(next_bell((1_000, 101_000), 150_000, 15_000), Some(201_000));
        // Missed: the next one on the same period, once the spin window has passed.
        assert_eq!(next_bell((1_000, 101_000), 217_000, 15_000), Some(301_000));
        assert_eq!(next_bell((1_000, 101_000), 215_000, 15_000), Some(201_000));
        // Not a period.
        assert_eq!(next_bell((1_000, 20_001_000), 20_002_000, 15_000), None);
    }
}
