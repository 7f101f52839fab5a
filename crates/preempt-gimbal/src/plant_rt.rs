//! The plant process's two threads: the integration loop on its own clock (40 kHz for the
//! gimbal), and the bus thread that serves the controller's transactions ([`crate::frame`]).
//! Generic over the [`PlantModel`]: the gimbal's [`Plant`] and `preempt-uav`'s quadrotor run
//! on the same loop.
//!
//! ```text
//!  step thread (SCHED_FIFO P, pinned)            bus thread (SCHED_FIFO P-1, same CPU)
//!  loop j:                                       loop:
//!    clock_nanosleep(TIMER_ABSTIME, t0 + j·25µs)   read(doorbell)         (epoll waits)
//!    late if now >= next step's due time           RX <- sensors          (seqlock read)
//!    plant.step(commands)     (seqlock read)       TX <- page
//!    sensors -> seqlock                            spin until start + 19.2 µs
//!                                                  commands <- TX         (seqlock write)
//!                                                  write(done)
//! ```
//!
//! The loop keeps its grid whatever the controller does: a late voltage command acts late,
//! as on the robot. A step that wakes when the next one is already due is counted late
//! ([`frame::STAT_LATE_STEPS`]) and the loop catches up step by step (simulated time never
//! slips against the clock). The bus thread spins for the transfer time, as a controller
//! clocking bits would; it sits below the step thread, so a transfer never delays a step.
//!
//! The sensors cross from the step thread to the bus thread, and the commands back, through
//! sequence locks ([`Published`]): the writer never waits, the reader retries while a write
//! is under way.

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering, fence};

use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::epoll::{Epoll, Event, Interest};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};

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
    /// Time one transaction holds the bus, ns (the bus thread spins that long).
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
}

impl PlantModel for Plant {
    const NAME: &'static str = "gimbal-plant";
    const STEP_NS: u64 = STEP_NS;
    const BUS_NS: u64 = frame::BUS_NS;

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
    /// CPU to pin both threads to.
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the step thread (the bus thread gets one less); None: SCHED_OTHER.
    pub priority: Option<u8>,
    /// Stop after this long (None: until killed or `stop`).
    pub duration_ns: Option<u64>,
}

/// The latest frame of one side, published to the other thread (a sequence lock: Boehm,
/// "Can seqlocks get along with programming language memory models?", MSPC 2012, figure 6).
/// The step thread publishes the sensors; the bus thread publishes the commands, so a step
/// never sees half of one command and half of the next.
#[derive(Debug, Default)]
pub struct Published {
    seq: AtomicU32,
    words: [AtomicU32; SLOT_LEN / 4],
}

impl Published {
    /// Publishes `bytes` (one writer only).
    pub fn write(&self, bytes: &[u8; SLOT_LEN]) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed); // odd: write under way
        fence(Ordering::Release);
        for (w, c) in self.words.iter().zip(bytes.chunks_exact(4)) {
            w.store(
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                Ordering::Relaxed,
            );
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The latest complete frame, retrying while a write is under way. Only for a reader
    /// that cannot preempt the writer on its CPU (the bus thread below the step thread):
    /// otherwise it would spin forever on a write it keeps from finishing.
    pub fn read(&self) -> [u8; SLOT_LEN] {
        loop {
            if let Some(bytes) = self.try_read() {
                return bytes;
            }
            std::hint::spin_loop();
        }
    }

    /// The latest complete frame, or `None` when a write is under way (a reader of higher
    /// priority than the writer, such as the step thread reading the commands, keeps its
    /// previous frame then: the new command has not been delivered yet).
    pub fn try_read(&self) -> Option<[u8; SLOT_LEN]> {
        let s1 = self.seq.load(Ordering::Acquire);
        let mut bytes = [0_u8; SLOT_LEN];
        for (w, c) in self.words.iter().zip(bytes.chunks_exact_mut(4)) {
            c.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        fence(Ordering::Acquire);
        let s2 = self.seq.load(Ordering::Relaxed);
        (s1 == s2 && s1 % 2 == 0).then_some(bytes)
    }
}

fn apply_rt(name: &str, cfg: &PlantConfig, priority: Option<u8>, page: &SharedMap) {
    let mut flags = 0;
    if let Some(cpu) = cfg.cpu {
        match sched::set_current_thread_affinity(&[cpu]) {
            Ok(()) => flags |= frame::FLAG_PINNED,
            Err(e) => eprintln!("{name}: cannot pin to CPU {cpu}: {e}"),
        }
    }
    if let Some(priority) = priority {
        match sched::set_current_thread_policy(&Policy::Fifo { priority }) {
            Ok(()) => flags |= frame::FLAG_FIFO,
            Err(e) => {
                eprintln!("{name}: SCHED_FIFO {priority} refused, running SCHED_OTHER: {e}")
            }
        }
    }
    page.fetch_or_u64(frame::STAT_FLAGS, flags);
}

/// Runs `plant` until `duration_ns`, `stop`, or a doorbell error. `doorbell` is a
/// non-blocking eventfd (the bus thread waits for it with epoll). Counters go to `page` as
/// they change.
///
/// # Errors
/// Clock errors of the step loop; eventfd errors of the bus thread.
pub fn run<M: PlantModel>(
    plant: M,
    cfg: &PlantConfig,
    page: Arc<SharedMap>,
    doorbell: EventFd,
    done: EventFd,
    stop: &AtomicBool,
) -> io::Result<()> {
    let sensors = Arc::new(Published::default());
    let commands = Arc::new(Published::default());
    let bus = {
        let (cfg, page, sensors, commands) = (
            cfg.clone(),
            Arc::clone(&page),
            Arc::clone(&sensors),
            Arc::clone(&commands),
        );
        std::thread::Builder::new()
            .name(format!(
                "{}-bus",
                M::NAME.split('-').next().unwrap_or("plant")
            ))
            .spawn(move || -> io::Result<()> {
                apply_rt(
                    M::NAME,
                    &cfg,
                    cfg.priority.map(|p| p.saturating_sub(1).max(1)),
                    &page,
                );
                serve_bus(M::BUS_NS, &page, &doorbell, &done, &sensors, &commands)
            })?
    };
    apply_rt(M::NAME, cfg, cfg.priority, &page);
    let result = step_loop(plant, cfg, &page, &sensors, &commands, stop);
    if bus.is_finished() {
        match bus.join() {
            Ok(Err(e)) => return Err(io::Error::new(e.kind(), format!("bus thread: {e}"))),
            Ok(Ok(())) => {}
            Err(_) => return Err(io::Error::other("bus thread panicked")),
        }
    }
    result
}

fn serve_bus(
    bus_ns: u64,
    page: &SharedMap,
    doorbell: &EventFd,
    done: &EventFd,
    sensors: &Published,
    commands: &Published,
) -> io::Result<()> {
    let mut transfers = 0_u64;
    let epoll = Epoll::new()?;
    epoll.add(doorbell.as_fd(), Interest::READ, 0)?;
    let mut events = [Event::default(); 1];
    loop {
        if doorbell.read()?.is_none() {
            epoll.wait(&mut events, None)?;
            continue;
        }
        let start = clock::monotonic_now_ns();
        page.write_bytes(frame::RX_OFF, &sensors.read());
        let mut tx = [0_u8; SLOT_LEN];
        page.read_bytes(frame::TX_OFF, &mut tx);
        while clock::monotonic_now_ns() < start + bus_ns {
            std::hint::spin_loop();
        }
        commands.write(&tx);
        transfers += 1;
        page.store_u64(frame::STAT_TRANSFERS, transfers);
        done.write(1)?;
    }
}

fn step_loop<M: PlantModel>(
    mut plant: M,
    cfg: &PlantConfig,
    page: &SharedMap,
    sensors: &Published,
    commands: &Published,
    stop: &AtomicBool,
) -> io::Result<()> {
    sensors.write(&plant.sensors(0));
    let t0 = clock::monotonic_now_ns() + 1_000_000;
    let end = cfg.duration_ns.map(|d| t0 + d);
    let (mut late, mut max_late, mut flags) = (0_u64, 0_u64, 0_u64);
    let mut command = [0_u8; SLOT_LEN];
    page.fetch_or_u64(frame::STAT_FLAGS, frame::FLAG_RUNNING);
    for j in 1_u64.. {
        let due = t0 + j * M::STEP_NS;
        if end.is_some_and(|e| due > e) || stop.load(Ordering::Relaxed) {
            break;
        }
        let now = clock::monotonic_now_ns();
        if now < due {
            clock::sleep_until_ns(ClockId::Monotonic, due)?;
        }
        let now = clock::monotonic_now_ns();
        let lateness = now.saturating_sub(due);
        if lateness >= M::STEP_NS {
            late += 1; // the next step is already due: this one ran a whole step late
            page.store_u64(frame::STAT_LATE_STEPS, late);
        }
        if lateness > max_late {
            max_late = lateness;
            page.store_u64(frame::STAT_MAX_LATE_NS, max_late);
        }
        if let Some(c) = commands.try_read() {
            command = c;
        }
        plant.step(&command);
        let stamp_us = u32::try_from((now - t0) / 1000).unwrap_or(u32::MAX);
        sensors.write(&plant.sensors(stamp_us));
        page.store_u64(frame::STAT_STEPS, plant.steps());
        let f = plant.flags();
        if f & !flags != 0 {
            flags |= f;
            page.fetch_or_u64(frame::STAT_FLAGS, f);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stress: a writer publishing frames whose fields all carry the same number, a reader
    /// that must never see a torn frame.
    #[test]
    fn seqlock_never_tears() {
        let p = Arc::new(Published::default());
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (p, stop) = (Arc::clone(&p), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = 0_u32;
                while !stop.load(Ordering::Relaxed) {
                    n = n.wrapping_add(1);
                    let i = n as i32;
                    p.write(&padded(&Rx {
                        step: n,
                        counts: [i, i],
                        currents: [f32::from_bits(n), f32::from_bits(n)],
                        stamp_us: n,
                    }));
                }
                n
            })
        };
        let mut last = 0;
        for _ in 0..200_000 {
            let bytes = p.read();
            let mut b = [0_u8; FRAME_LEN];
            b.copy_from_slice(&bytes[..FRAME_LEN]);
            let rx = Rx::decode(&b);
            assert!(
                rx.counts == [rx.step as i32; 2]
                    && rx.currents.map(f32::to_bits) == [rx.step; 2]
                    && rx.stamp_us == rx.step,
                "torn frame {rx:?}"
            );
            assert!(rx.step >= last, "went back: {} after {last}", rx.step);
            last = rx.step;
        }
        stop.store(true, Ordering::Relaxed);
        assert!(writer.join().unwrap() >= last);
    }

    fn padded(rx: &Rx) -> [u8; SLOT_LEN] {
        let mut b = [0_u8; SLOT_LEN];
        b[..FRAME_LEN].copy_from_slice(&rx.encode());
        b
    }

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
