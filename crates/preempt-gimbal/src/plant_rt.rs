//! The plant process's two threads: the 40 kHz integration loop on its own clock, and the
//! bus thread that serves the controller's transactions ([`crate::frame`]).
//!
//! ```text
//!  step thread (SCHED_FIFO P, pinned)            bus thread (SCHED_FIFO P-1, same CPU)
//!  loop j:                                       loop:
//!    clock_nanosleep(TIMER_ABSTIME, t0 + j·25µs)   read(doorbell)         (epoll waits)
//!    late if now >= next step's due time           RX <- sensors          (seqlock read)
//!    plant.step(voltages)                          TX <- page
//!    sensors -> seqlock                            spin until start + 19.2 µs
//!                                                  voltages <- TX         (one atomic)
//!                                                  write(done)
//! ```
//!
//! The loop keeps its grid whatever the controller does: a late voltage command acts late,
//! as on the robot. A step that wakes when the next one is already due is counted late
//! ([`frame::STAT_LATE_STEPS`]) and the loop catches up step by step (simulated time never
//! slips against the clock). The bus thread spins for the transfer time, as a controller
//! clocking bits would; it sits below the step thread, so a transfer never delays a step.
//!
//! The sensors cross from the step thread to the bus thread through a sequence lock
//! ([`Published`]): the writer never waits, the reader retries while a write is under way.

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};

use preempt_io::sys::clock::{self, ClockId};
use preempt_io::sys::epoll::{Epoll, Event, Interest};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::SharedMap;
use preempt_io::sys::sched::{self, Policy};

use crate::frame::{self, FRAME_LEN, Rx, Tx};
use crate::model::{Plant, STEP_NS};

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

/// The latest sensor frame, published by the step thread (a sequence lock: Boehm, "Can
/// seqlocks get along with programming language memory models?", MSPC 2012, figure 6).
#[derive(Debug, Default)]
pub struct Published {
    seq: AtomicU32,
    words: [AtomicU32; FRAME_LEN / 4],
}

impl Published {
    /// Publishes `rx` (one writer only).
    pub fn write(&self, rx: &Rx) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed); // odd: write under way
        fence(Ordering::Release);
        let bytes = rx.encode();
        for (w, c) in self.words.iter().zip(bytes.chunks_exact(4)) {
            w.store(
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                Ordering::Relaxed,
            );
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The latest complete frame.
    pub fn read(&self) -> Rx {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            let mut bytes = [0_u8; FRAME_LEN];
            for (w, c) in self.words.iter().zip(bytes.chunks_exact_mut(4)) {
                c.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            fence(Ordering::Acquire);
            let s2 = self.seq.load(Ordering::Relaxed);
            if s1 == s2 && s1 % 2 == 0 {
                return Rx::decode(&bytes);
            }
            std::hint::spin_loop();
        }
    }
}

/// Both voltages in one atomic word (two f32 bit patterns), so a step never sees one axis's
/// new command with the other's old one.
fn pack(v: [f32; 2]) -> u64 {
    u64::from(v[0].to_bits()) | (u64::from(v[1].to_bits()) << 32)
}

fn unpack(w: u64) -> [f64; 2] {
    [
        f64::from(f32::from_bits(w as u32)),
        f64::from(f32::from_bits((w >> 32) as u32)),
    ]
}

fn apply_rt(cfg: &PlantConfig, priority: Option<u8>, page: &SharedMap) {
    let mut flags = 0;
    if let Some(cpu) = cfg.cpu {
        match sched::set_current_thread_affinity(&[cpu]) {
            Ok(()) => flags |= frame::FLAG_PINNED,
            Err(e) => eprintln!("gimbal-plant: cannot pin to CPU {cpu}: {e}"),
        }
    }
    if let Some(priority) = priority {
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

/// Runs the plant until `duration_ns`, `stop`, or a doorbell error. `doorbell` is a
/// non-blocking eventfd (the bus thread waits for it with epoll). Counters go to `page` as
/// they change.
///
/// # Errors
/// Clock errors of the step loop; eventfd errors of the bus thread.
pub fn run(
    cfg: &PlantConfig,
    page: Arc<SharedMap>,
    doorbell: EventFd,
    done: EventFd,
    stop: &AtomicBool,
) -> io::Result<()> {
    let published = Arc::new(Published::default());
    let voltages = Arc::new(AtomicU64::new(pack([0.0, 0.0])));
    let bus = {
        let (cfg, page, published, voltages) = (
            cfg.clone(),
            Arc::clone(&page),
            Arc::clone(&published),
            Arc::clone(&voltages),
        );
        std::thread::Builder::new()
            .name("gimbal-bus".into())
            .spawn(move || -> io::Result<()> {
                apply_rt(
                    &cfg,
                    cfg.priority.map(|p| p.saturating_sub(1).max(1)),
                    &page,
                );
                serve_bus(&page, &doorbell, &done, &published, &voltages)
            })?
    };
    apply_rt(cfg, cfg.priority, &page);
    let result = step_loop(cfg, &page, &published, &voltages, stop);
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
    page: &SharedMap,
    doorbell: &EventFd,
    done: &EventFd,
    published: &Published,
    voltages: &AtomicU64,
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
        page.write_bytes(frame::RX_OFF, &published.read().encode());
        let mut tx = [0_u8; FRAME_LEN];
        page.read_bytes(frame::TX_OFF, &mut tx);
        let tx = Tx::decode(&tx);
        while clock::monotonic_now_ns() < start + frame::BUS_NS {
            std::hint::spin_loop();
        }
        voltages.store(pack(tx.volts), Ordering::Release);
        transfers += 1;
        page.store_u64(frame::STAT_TRANSFERS, transfers);
        done.write(1)?;
    }
}

fn step_loop(
    cfg: &PlantConfig,
    page: &SharedMap,
    published: &Published,
    voltages: &AtomicU64,
    stop: &AtomicBool,
) -> io::Result<()> {
    let mut plant = Plant::new(cfg.seed);
    published.write(&Rx::of_plant(&plant, 0));
    let t0 = clock::monotonic_now_ns() + 1_000_000;
    let end = cfg.duration_ns.map(|d| t0 + d);
    let (mut late, mut max_late) = (0_u64, 0_u64);
    page.store_u64(
        frame::STAT_FLAGS,
        page.load_u64(frame::STAT_FLAGS) | frame::FLAG_RUNNING,
    );
    for j in 1_u64.. {
        let due = t0 + j * STEP_NS;
        if end.is_some_and(|e| due > e) || stop.load(Ordering::Relaxed) {
            break;
        }
        let now = clock::monotonic_now_ns();
        if now < due {
            clock::sleep_until_ns(ClockId::Monotonic, due)?;
        }
        let now = clock::monotonic_now_ns();
        let lateness = now.saturating_sub(due);
        if lateness >= STEP_NS {
            late += 1; // the next step is already due: this one ran a whole step late
            page.store_u64(frame::STAT_LATE_STEPS, late);
        }
        if lateness > max_late {
            max_late = lateness;
            page.store_u64(frame::STAT_MAX_LATE_NS, max_late);
        }
        plant.step(unpack(voltages.load(Ordering::Acquire)));
        let stamp_us = u32::try_from((now - t0) / 1000).unwrap_or(u32::MAX);
        published.write(&Rx::of_plant(&plant, stamp_us));
        page.store_u64(frame::STAT_STEPS, plant.steps);
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
                    p.write(&Rx {
                        step: n,
                        counts: [i, i],
                        currents: [f32::from_bits(n), f32::from_bits(n)],
                        stamp_us: n,
                    });
                }
                n
            })
        };
        let mut last = 0;
        for _ in 0..200_000 {
            let rx = p.read();
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

    #[test]
    fn voltages_pack_both_axes() {
        assert_eq!(unpack(pack([1.5, -12.0])), [1.5, -12.0]);
    }
}
