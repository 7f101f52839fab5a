//! The layout of the simulated bus's shared page (a memfd the controller and the plant
//! process both map, `pread` or `pwrite`): one slot per direction for the frames of one
//! transaction, then the plant's counters and flags, which the plant writes and anyone reads.
//!
//! ```text
//!  offset 0    TX slot, 64 B   controller -> plant (a plant's command frame is a prefix)
//!  offset 64   RX slot, 64 B   plant -> controller (its sensor frame is a prefix)
//!  offset 128  counters, u64 each: steps, late steps, max lateness, transfers, flags,
//!              stalls, stalls preempted, throttled, CPU ns, wall ns, stalls stolen,
//!              stalls in the kernel, stalls overslept
//! ```
//!
//! What a frame holds is the plant's business (`preempt_gimbal::frame`, `preempt_uav::frame`);
//! the loop ([`crate::plant_rt`]), the spawner ([`crate::spawn`]) and the exchange
//! ([`crate::exchange`]) know only the slots.
//!
//! ```
//! use preempt_rig::page::{PAGE_LEN, RX_OFF, SLOT_LEN, STATS_OFF, TX_OFF};
//! assert!(TX_OFF + SLOT_LEN <= RX_OFF && RX_OFF + SLOT_LEN <= STATS_OFF && STATS_OFF < PAGE_LEN);
//! ```

/// Size of the shared page.
pub const PAGE_LEN: usize = 4096;
/// Bytes of each direction's slot in the page: a plant's frames use a prefix of it (the
/// gimbal's are 24 bytes each way, the UAV's 20 and 60; any plant run by
/// [`crate::plant_rt::run`] has up to this).
pub const SLOT_LEN: usize = 64;
/// Offset of the TX frame in the page.
pub const TX_OFF: usize = 0;
/// Offset of the RX frame in the page.
pub const RX_OFF: usize = 64;
/// Offset of the plant's counters (u64 each, written by the plant, read by anyone).
pub const STATS_OFF: usize = 128;
/// Counter: plant steps taken.
pub(crate) const STAT_STEPS: usize = STATS_OFF;
/// Counter: grid steps that passed while the plant's loop wanted its CPU and did not run
/// (a timer wake-up late past its event, or a gap in a spin).
pub const STAT_LATE_STEPS: usize = STATS_OFF + 8;
/// Counter: largest such gap, ns.
pub(crate) const STAT_MAX_LATE_NS: usize = STATS_OFF + 16;
/// Counter: transactions served.
pub(crate) const STAT_TRANSFERS: usize = STATS_OFF + 24;
/// Flags granted to the plant process: bit 0 SCHED_FIFO, bit 1 pinned, bit 63 running.
pub const STAT_FLAGS: usize = STATS_OFF + 32;
/// Counter: stalls, gaps of [`STALL_NS`] or more in which the loop wanted its CPU and did
/// not run (each counts once, however many steps it spans).
pub const STAT_STALLS: usize = STATS_OFF + 40;
/// Counter: stalls during which the loop's thread was preempted in the guest (its
/// involuntary context switches grew): another thread ran on its CPU, e.g. the kernel's
/// fair server giving starved SCHED_OTHER tasks their share. The other stalls had no
/// switch: interrupts, or the hypervisor running something else on the vCPU.
pub const STAT_STALLS_PREEMPTED: usize = STATS_OFF + 48;
/// Counter: of the stalls, those in which the loop's thread waited on its runqueue for as long
/// as the kernel's throttling window (80 % of it or more): the real-time class stopped on the
/// plant's CPU by `sched_rt_runtime_us` or the fair server ([`crate::plant_rt`],
/// "Background").
pub const STAT_THROTTLED: usize = STATS_OFF + 56;
/// Counter: CPU time the plant's loop thread used, ns (published every 10 ms and at the end).
pub const STAT_CPU_NS: usize = STATS_OFF + 64;
/// Counter: wall time of the plant's loop since its grid started, ns, as of
/// [`STAT_CPU_NS`]'s update: `cpu / wall` is the loop's duty cycle.
pub const STAT_WALL_NS: usize = STATS_OFF + 72;
/// Counter: of the stalls in a spin (the loop was on its CPU, not asleep), those in which no
/// other thread ran on its CPU and the thread's CPU time lacks 90 % of the gap or more: the
/// hypervisor ran something else on the vCPU (steal, which the thread's CPU time leaves out
/// under `CONFIG_PARAVIRT_TIME_ACCOUNTING`). Zero on bare metal.
pub const STAT_STALLS_STOLEN: usize = STATS_OFF + 80;
/// Counter: of the stalls in a sleep call, those in which the call used 90 % or more of its
/// time as the thread's CPU time, not switched out: it did not sleep, the thread was on its
/// CPU in the kernel (interrupt work charged to it, without `CONFIG_IRQ_TIME_ACCOUNTING`, or,
/// in a VM, the hypervisor handling the vCPU's exit, e.g. programming the timer).
pub const STAT_STALLS_IN_KERNEL: usize = STATS_OFF + 88;
/// Counter: of the stalls in a sleep call, those in which the call used 10 % of the gap or less
/// as the thread's CPU time, not switched out: the thread was off its CPU past its wake-up.
/// Its timer interrupt came late (another context held interrupts off on its CPU, the CPU
/// left a deep idle state late, or, in a VM, the host did not run the idle vCPU when its
/// timer expired), or it woke and waited on its runqueue (the stalls that waited there for a
/// throttling window are also counted in [`STAT_THROTTLED`]). The stalls less the four
/// classes (preempted, in the kernel, stolen, overslept) fit none.
pub const STAT_STALLS_OVERSLEPT: usize = STATS_OFF + 96;
/// Lateness that makes a stall: 1 ms, 40 steps (more than a wake-up, as long as a
/// scheduler time slice or a throttled real-time class).
pub const STALL_NS: u64 = 1_000_000;
/// Flag bit: the 40 kHz loop runs under SCHED_FIFO.
pub(crate) const FLAG_FIFO: u64 = 1;
/// Flag bit: the plant is pinned to a CPU.
pub(crate) const FLAG_PINNED: u64 = 2;
/// First flag bit a plant model may set for itself ([`crate::plant_rt::PlantModel::flags`]);
/// bits 8 to 62 are the model's.
pub const FLAG_MODEL_FIRST: u64 = 1 << 8;
/// Flag bit: the plant's loop has started (its clock is running).
pub(crate) const FLAG_RUNNING: u64 = 1 << 63;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slots_and_the_counters_do_not_overlap() {
        const {
            assert!(
                RX_OFF >= TX_OFF + SLOT_LEN
                    && STATS_OFF >= RX_OFF + SLOT_LEN
                    && STAT_STALLS_OVERSLEPT + 8 <= PAGE_LEN
            )
        };
    }
}
