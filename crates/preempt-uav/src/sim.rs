//! The simulator process `uav-sim` (also `preempt`'s hidden `__uav-sim`): the quadrotor
//! [`Quad`] stepped by RK4 at 1 kHz on its own clock (absolute `clock_nanosleep` deadlines),
//! serving the controller over the rig's bus (a memfd page, doorbell and done eventfds),
//! in a process group of its own. The loop, the bus and the command line are the rig's
//! (`preempt_rig::plant_rt`, `preempt_rig::plant_main::main_for`), as the gimbal's plant's
//! are: this module only says what a step and a frame are.
//!
//! ```text
//! uav-sim [--fds PAGE,DOORBELL,DONE] [--seed N] [--cpu N] [--priority P] [--duration S]
//! ```
//!
//! The crash is also a page flag ([`FLAG_CRASHED`]), so the demo sees it even when no
//! exchange happens.

use preempt_rig::page::{FLAG_MODEL_FIRST, SLOT_LEN};
use preempt_rig::plant_rt::PlantModel;

use crate::frame::{BUS_NS, Command, SensorFrame};
use crate::model::{Params, Quad, STEP_NS};

/// Page flag: the vehicle has crashed.
pub const FLAG_CRASHED: u64 = FLAG_MODEL_FIRST;

impl PlantModel for Quad {
    const NAME: &'static str = "uav-sim";
    const STEP_NS: u64 = STEP_NS;
    const BUS_NS: u64 = BUS_NS;

    fn step(&mut self, command: &[u8; SLOT_LEN]) {
        Quad::step(self, Command::decode(command).speeds.map(f64::from));
    }

    fn sensors(&mut self, stamp_us: u32) -> [u8; SLOT_LEN] {
        let mut b = [0_u8; SLOT_LEN];
        let f = SensorFrame::of(self, stamp_us).encode();
        b[..f.len()].copy_from_slice(&f);
        b
    }

    fn steps(&self) -> u64 {
        self.steps
    }

    fn flags(&self) -> u64 {
        if self.crashed_at.is_some() {
            FLAG_CRASHED
        } else {
            0
        }
    }
}

fn default_quad(seed: u64) -> Quad {
    Quad::new(Params::default(), seed)
}

/// Runs the simulator with its command-line arguments (without the program name); exit code
/// 0 ok, 1 runtime error, 2 bad arguments.
pub fn main_with_args(argv: &[String]) -> u8 {
    preempt_rig::plant_main::main_for(argv, default_quad)
}
