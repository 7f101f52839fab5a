//! The gimbal's plant on the rig: [`Plant`] as a `preempt_rig::plant_rt::PlantModel` (its
//! 40 kHz step under the latest [`Tx`] frame, its [`Rx`] sensor frame) and the plant
//! process's entry point, shared by the `gimbal-plant` binary and `preempt`'s hidden
//! `__gimbal-plant` subcommand (so the CLI needs no second binary).
//!
//! ```text
//! gimbal-plant [--fds PAGE,DOORBELL,DONE] [--seed N] [--cpu N] [--priority P] [--duration S]
//! ```
//!
//! With `--fds` the shared page and the two eventfds are inherited descriptors (how the demo
//! starts it); without, it makes its own and runs alone for `--duration` (default 1 s), then
//! prints its counters: a smoke test of the 40 kHz loop on this machine
//! (`preempt_rig::plant_main`).
//!
//! ```
//! use preempt_gimbal::model::Plant;
//! use preempt_rig::plant_rt::PlantModel;
//! let mut p = Plant::new(1);
//! PlantModel::step(&mut p, &[0; preempt_rig::page::SLOT_LEN]);
//! assert_eq!(PlantModel::steps(&p), 1);
//! ```

use preempt_rig::page::SLOT_LEN;
use preempt_rig::plant_rt::PlantModel;

use crate::frame::{self, FRAME_LEN, Rx, Tx};
use crate::model::{Plant, STEP_NS};

impl PlantModel for Plant {
    const NAME: &'static str = "gimbal-plant";
    const STEP_NS: u64 = STEP_NS;
    const BUS_NS: u64 = frame::BUS_NS;
    // Wake 15 µs before the doorbell expected every 100 µs (most wake-ups here take less).
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

/// Runs the gimbal's plant process with its command-line arguments (without the program
/// name); returns the exit code: 0 ok, 1 runtime error, 2 bad arguments.
pub fn main_with_args(argv: &[String]) -> u8 {
    preempt_rig::plant_main::main_for(argv, Plant::new)
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
