//! The controller's side of the plant process: create the shared page and the two
//! eventfds, start the plant (any program that runs [`crate::plant_main::main_for`]: the
//! gimbal's `gimbal-plant`, `preempt-uav`'s `uav-sim`) with them inherited at
//! fixed descriptor numbers, watch it, and kill it on drop.
//!
//! As `imu-sim`, the child runs in a process group of its own
//! (`preempt_io::sys::process::SimChild`), so a terminal's Ctrl-C reaches the demo only, which
//! then finishes its files and stops the plant itself; the child's parent-death signal
//! (SIGKILL) still ends it if the demo is killed.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::{Command, ExitStatus};

use preempt_io::sys::clock::ClockId;
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::{MemFd, SharedMap};
use preempt_io::sys::process;

use crate::page::{self, PAGE_LEN};
use crate::plant_rt::PlantConfig;

/// What the plant process reported through the shared page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlantCounters {
    /// Steps taken.
    pub steps: u64,
    /// Steps that ran a whole step late.
    pub late_steps: u64,
    /// Largest step lateness, ns.
    pub max_late_ns: u64,
    /// Episodes of 1 ms or more behind the grid ([`page::STAT_STALLS`]).
    #[serde(default)]
    pub stalls: u64,
    /// Of those, stalls in which another thread ran on the plant's CPU
    /// ([`page::STAT_STALLS_PREEMPTED`]).
    #[serde(default)]
    pub stalls_preempted: u64,
    /// Of those, stalls in a spin taken by the hypervisor: no other thread ran on the plant's
    /// CPU and the loop's CPU time lacks the gap ([`page::STAT_STALLS_STOLEN`]).
    #[serde(default)]
    pub stalls_stolen: u64,
    /// Of those, stalls in a sleep call that did not sleep: the loop's thread was on its CPU
    /// in the kernel for the whole gap ([`page::STAT_STALLS_IN_KERNEL`]).
    #[serde(default)]
    pub stalls_in_kernel: u64,
    /// Of those, stalls in a sleep call that the thread spent off its CPU past its wake-up,
    /// not switched out: a late timer interrupt, or a wait on its runqueue
    /// ([`page::STAT_STALLS_OVERSLEPT`]; 0 in results from before this class).
    #[serde(default)]
    pub stalls_overslept: u64,
    /// Of those, stalls as long as the kernel's throttling window: the real-time class was
    /// stopped on the plant's CPU ([`page::STAT_THROTTLED`]).
    #[serde(default)]
    pub throttled: u64,
    /// CPU time of the plant's loop, ns ([`page::STAT_CPU_NS`]).
    #[serde(default)]
    pub cpu_ns: u64,
    /// Wall time of the plant's loop as of `cpu_ns`, ns ([`page::STAT_WALL_NS`]).
    #[serde(default)]
    pub wall_ns: u64,
    /// Transactions served.
    pub transfers: u64,
    /// The step loop ran under SCHED_FIFO.
    pub fifo: bool,
    /// The plant was pinned.
    pub pinned: bool,
    /// The step loop has started.
    pub running: bool,
}

impl PlantCounters {
    /// The plant loop's duty cycle: its CPU time over its wall time, % (None before it
    /// published one).
    pub fn duty_pct(&self) -> Option<f64> {
        (self.wall_ns > 0).then(|| 100.0 * self.cpu_ns as f64 / self.wall_ns as f64)
    }

    /// Where the stalls' time went, one class each: "2 preempted, 1 in the kernel in its sleep
    /// call, 0 stolen by the hypervisor, 3 overslept", and the stalls in no class when there
    /// are any ("1 in no class"). What every display of the plant's stalls prints.
    pub fn stall_classes(&self) -> String {
        let classed = self.stalls_preempted
            + self.stalls_in_kernel
            + self.stalls_stolen
            + self.stalls_overslept;
        let mut s = format!(
            "{} preempted, {} in the kernel in its sleep call, {} stolen by the hypervisor, {} \
             overslept",
            self.stalls_preempted, self.stalls_in_kernel, self.stalls_stolen, self.stalls_overslept
        );
        let rest = self.stalls.saturating_sub(classed);
        if rest > 0 {
            s.push_str(&format!(", {rest} in no class"));
        }
        s
    }

    /// The verdict line when the kernel stopped the plant's real-time class during the run
    /// (None when it did not): the figures of the run are then the throttle's, not the
    /// framework's.
    pub fn throttled_line(&self) -> Option<String> {
        (self.throttled > 0).then(|| {
            format!(
                "THROTTLED: the kernel stopped the plant's real-time class {} times (stalls in \
                 which the plant waited on its runqueue for a throttling window: RT throttling at \
                 sched_rt_runtime_us, or the fair server); its late steps and the missed \
                 samples around them are the throttle's, not the controller's",
                self.throttled
            )
        })
    }

    /// Reads the counters from the shared page.
    pub fn read(page: &SharedMap) -> PlantCounters {
        let flags = page.load_u64(page::STAT_FLAGS);
        PlantCounters {
            steps: page.load_u64(page::STAT_STEPS),
            late_steps: page.load_u64(page::STAT_LATE_STEPS),
            max_late_ns: page.load_u64(page::STAT_MAX_LATE_NS),
            stalls: page.load_u64(page::STAT_STALLS),
            stalls_preempted: page.load_u64(page::STAT_STALLS_PREEMPTED),
            stalls_stolen: page.load_u64(page::STAT_STALLS_STOLEN),
            stalls_in_kernel: page.load_u64(page::STAT_STALLS_IN_KERNEL),
            stalls_overslept: page.load_u64(page::STAT_STALLS_OVERSLEPT),
            throttled: page.load_u64(page::STAT_THROTTLED),
            cpu_ns: page.load_u64(page::STAT_CPU_NS),
            wall_ns: page.load_u64(page::STAT_WALL_NS),
            transfers: page.load_u64(page::STAT_TRANSFERS),
            fifo: flags & page::FLAG_FIFO != 0,
            pinned: flags & page::FLAG_PINNED != 0,
            running: flags & page::FLAG_RUNNING != 0,
        }
    }
}

/// The bus as the controller holds it.
#[derive(Debug)]
pub struct BusEnds {
    /// The shared page (register it with RTIO through a duplicate).
    pub page: MemFd,
    /// A mapping of the page for the counters.
    pub map: SharedMap,
    /// Rung by the controller to start a transaction.
    pub doorbell: EventFd,
    /// Rung by the plant when a transaction ends.
    pub done: EventFd,
}

impl BusEnds {
    /// A fresh page and two non-blocking eventfds. Non-blocking matters: io_uring hands a
    /// read of a *blocking* eventfd to an `iou-wrk` kernel worker, a SCHED_OTHER thread that
    /// a loaded machine delays by milliseconds (measured here: exchange p50 172 µs instead of
    /// tens), the thesis's `spi0` kthread problem (§7.4) all over again; a non-blocking one
    /// is poll-armed and completed from the waker, with no extra thread.
    ///
    /// # Errors
    /// memfd/eventfd/mmap errors.
    pub fn new() -> io::Result<BusEnds> {
        let page = MemFd::new("plant-bus", PAGE_LEN)?;
        let map = SharedMap::new(page.as_fd(), PAGE_LEN)?;
        Ok(BusEnds {
            page,
            map,
            doorbell: EventFd::new(0, true)?,
            done: EventFd::new(0, true)?,
        })
    }
}

/// A running plant process (`gimbal-plant`, `uav-sim`).
#[derive(Debug)]
pub struct PlantProcess {
    child: process::SimChild,
    /// The bus.
    pub bus: BusEnds,
}

impl PlantProcess {
    /// Starts `exe` (a program that runs `plant_main::main_for` after the arguments
    /// `prefix`: `gimbal-plant`, `uav-sim`, `preempt __gimbal-plant`) with `cfg`.
    ///
    /// # Errors
    /// Descriptor creation or spawn errors (`NotFound` when `exe` does not exist: build it
    /// with `cargo build --release`).
    pub fn spawn(exe: &Path, prefix: &[String], cfg: &PlantConfig) -> io::Result<PlantProcess> {
        let bus = BusEnds::new()?;
        let first: RawFd = process::FIRST_PASSED_FD;
        let pass: [(BorrowedFd<'_>, RawFd); 3] = [
            (bus.page.as_fd(), first),
            (bus.doorbell.as_fd(), first + 1),
            (bus.done.as_fd(), first + 2),
        ];
        let mut cmd = Command::new(exe);
        cmd.args(prefix)
            .arg("--fds")
            .arg(format!("{},{},{}", first, first + 1, first + 2))
            .arg("--seed")
            .arg(cfg.seed.to_string());
        if let Some(c) = cfg.cpu {
            cmd.arg("--cpu").arg(c.to_string());
        }
        if let Some(p) = cfg.priority {
            cmd.arg("--priority").arg(p.to_string());
        }
        let child = process::SimChild::spawn(
            &mut cmd,
            &pass,
            "the plant",
            "build it with `cargo build --release`",
        )?;
        Ok(PlantProcess { child, bus })
    }

    /// Waits up to `timeout_ns` for the plant's loop to start, looking every millisecond (a
    /// sleep, not a spin: on a machine whose CPUs are scarce, e.g. an emulated one, a spinning
    /// waiter takes the CPU time the starting plant needs).
    ///
    /// # Errors
    /// The plant exited (its exit status), or did not start in time (`TimedOut`, naming the
    /// time waited and the plant's pid).
    pub(crate) fn wait_running(&mut self, timeout_ns: u64) -> io::Result<()> {
        let t0 = preempt_io::sys::clock::monotonic_now_ns();
        loop {
            if self.counters().running {
                return Ok(());
            }
            if let Some(status) = self.try_wait()? {
                return Err(io::Error::other(format!(
                    "the plant process exited at start-up ({status})"
                )));
            }
            let now = preempt_io::sys::clock::monotonic_now_ns();
            if now - t0 > timeout_ns {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the plant process (pid {}) is alive but did not start its loop \
                         within {} s",
                        self.pid().unwrap_or(0),
                        timeout_ns as f64 / 1e9
                    ),
                ));
            }
            preempt_io::sys::clock::sleep_until_ns(ClockId::Monotonic, now + 1_000_000)?;
        }
    }

    /// The plant's counters.
    pub fn counters(&self) -> PlantCounters {
        PlantCounters::read(&self.bus.map)
    }

    /// Child pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.pid()
    }

    /// Whether the child has exited (and how).
    ///
    /// # Errors
    /// `waitpid` errors.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Kills the plant and reaps it (dropping the `PlantProcess` does it too).
    ///
    /// # Errors
    /// `kill`/`wait` errors other than "already exited".
    pub fn stop(&mut self) -> io::Result<()> {
        self.child.stop()
    }

    /// Duplicates of (page, doorbell, done) for an RTIO context.
    ///
    /// # Errors
    /// `dup` errors.
    pub fn dup_fds(&self) -> io::Result<[OwnedFd; 3]> {
        Ok([
            self.bus.page.as_fd().try_clone_to_owned()?,
            self.bus.doorbell.as_fd().try_clone_to_owned()?,
            self.bus.done.as_fd().try_clone_to_owned()?,
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell_plant(script: &str) -> PlantProcess {
        // `sh -c SCRIPT sh --fds ... --seed ...`: the flags become the script's arguments.
        let prefix = ["-c".to_string(), script.to_string(), "sh".to_string()];
        PlantProcess::spawn(Path::new("/bin/sh"), &prefix, &PlantConfig::default()).unwrap()
    }

    #[test]
    fn the_stall_classes_name_every_class_and_the_stalls_in_none() {
        let mut c = PlantCounters {
            stalls: 7,
            stalls_preempted: 2,
            stalls_in_kernel: 1,
            stalls_stolen: 0,
            stalls_overslept: 3,
            ..PlantCounters::default()
        };
        assert_eq!(
            c.stall_classes(),
            "2 preempted, 1 in the kernel in its sleep call, 0 stolen by the hypervisor, \
             3 overslept, 1 in no class"
        );
        c.stalls = 6;
        assert!(
            !c.stall_classes().contains("no class"),
            "{}",
            c.stall_classes()
        );
    }

    #[test]
    fn a_result_from_before_the_overslept_class_reads_it_as_zero() {
        let old = r#"{"steps":10,"late_steps":0,"max_late_ns":0,"stalls":1,"stalls_preempted":1,
            "transfers":3,"fifo":true,"pinned":false,"running":true}"#;
        let c: PlantCounters = serde_json::from_str(old).unwrap();
        assert_eq!((c.stalls, c.stalls_overslept), (1, 0));
    }

    #[test]
    fn a_plant_that_never_starts_its_loop_times_out_naming_the_wait() {
        let mut plant = shell_plant("sleep 30");
        let t0 = preempt_io::sys::clock::monotonic_now_ns();
        let err = plant.wait_running(200_000_000).unwrap_err();
        let waited_ns = preempt_io::sys::clock::monotonic_now_ns() - t0;
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(
            err.to_string()
                .contains("is alive but did not start its loop within 0.2 s"),
            "{err}"
        );
        assert!(waited_ns >= 200_000_000, "returned after {waited_ns} ns");
        plant.stop().unwrap();
    }

    #[test]
    fn a_plant_that_exits_at_start_up_is_reported_with_its_status() {
        let mut plant = shell_plant("exit 3");
        let err = plant.wait_running(30_000_000_000).unwrap_err();
        assert!(
            err.to_string()
                .contains("the plant process exited at start-up"),
            "{err}"
        );
        assert!(err.to_string().contains('3'), "{err}");
    }
}
