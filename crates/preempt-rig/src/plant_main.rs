//! The plant process's entry point, [`main_for`], for any [`PlantModel`]: the gimbal's
//! `gimbal-plant` (`preempt_gimbal::plant::main_with_args`, also `preempt`'s hidden
//! `__gimbal-plant`) and `preempt-uav`'s `uav-sim` (also `__uav-sim`) are this with their
//! model.
//!
//! ```text
//! NAME [--fds PAGE,DOORBELL,DONE] [--seed N] [--cpu N] [--priority P] [--duration S]
//! ```
//!
//! With `--fds` the shared page and the two eventfds are inherited descriptors (how the demo
//! starts it); without, it makes its own and runs alone for `--duration` (default 1 s), then
//! prints its counters: a smoke test of the plant's loop on this machine.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::plant_rt::{self, PlantConfig, PlantModel};
use crate::spawn::{BusEnds, PlantCounters};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::{MemFd, SharedMap};
use preempt_io::sys::process;

fn usage(name: &str) -> String {
    format!(
        "usage: {name} [--fds PAGE,DOORBELL,DONE] [--seed N] [--cpu N] [--priority 1..99] [--duration S]"
    )
}

/// A plant's command line: its configuration and the descriptors it inherited (`--fds`).
type Args = (PlantConfig, Option<Vec<i32>>);

/// The plant's command line; `None` for `--help`.
fn parse(name: &str, argv: &[String]) -> Result<Option<Args>, String> {
    let usage = usage(name);
    let mut cfg = PlantConfig::default();
    let mut fds = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a}: missing value ({usage})"))
        };
        match a.as_str() {
            "--fds" => {
                let v: Vec<i32> = value()?
                    .split(',')
                    .map(|s| {
                        s.parse()
                            .map_err(|_| format!("--fds: '{s}' is not a descriptor number"))
                    })
                    .collect::<Result<_, _>>()?;
                if v.len() != 3 {
                    return Err("--fds: expected three descriptors: page, doorbell, done".into());
                }
                fds = Some(v);
            }
            "--seed" => {
                cfg.seed = value()?
                    .parse()
                    .map_err(|_| "--seed: expected an unsigned integer".to_owned())?
            }
            "--cpu" => {
                cfg.cpu = Some(
                    value()?
                        .parse()
                        .map_err(|_| "--cpu: expected a CPU number".to_owned())?,
                )
            }
            "--priority" => {
                let p: u8 = value()?
                    .parse()
                    .map_err(|_| "--priority: expected 1..=99".to_owned())?;
                if !(1..=99).contains(&p) {
                    return Err("--priority: expected 1..=99".into());
                }
                cfg.priority = Some(p);
            }
            "--duration" => {
                let s: f64 = value()?
                    .parse()
                    .map_err(|_| "--duration: expected seconds".to_owned())?;
                if !(s > 0.0 && s < 86_400.0) {
                    return Err("--duration: expected 0 < seconds < 86400".into());
                }
                cfg.duration_ns = Some((s * 1e9) as u64);
            }
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown flag '{other}' ({usage})")),
        }
    }
    Ok(Some((cfg, fds)))
}

fn run<M: PlantModel>(
    plant: M,
    mut cfg: PlantConfig,
    fds: Option<Vec<i32>>,
) -> std::io::Result<()> {
    let stop = AtomicBool::new(false);
    match fds {
        Some(raw) => {
            let mut owned = process::adopt_inherited_fds(&raw)?.into_iter();
            let (Some(page), Some(doorbell), Some(done)) =
                (owned.next(), owned.next(), owned.next())
            else {
                return Err(std::io::Error::other("--fds: three descriptors expected"));
            };
            let page = MemFd::from_owned(page)?;
            let map = Arc::new(SharedMap::new(
                std::os::fd::AsFd::as_fd(&page),
                crate::page::PAGE_LEN.min(page.len()),
            )?);
            plant_rt::run(
                plant,
                &cfg,
                map,
                EventFd::from_owned(doorbell, true)?,
                EventFd::from_owned(done, true)?,
                &stop,
            )
        }
        None => {
            cfg.duration_ns.get_or_insert(1_000_000_000);
            let bus = BusEnds::new()?;
            let map = Arc::new(SharedMap::new(
                std::os::fd::AsFd::as_fd(&bus.page),
                crate::page::PAGE_LEN,
            )?);
            plant_rt::run(
                plant,
                &cfg,
                Arc::clone(&map),
                bus.doorbell.try_clone()?,
                bus.done.try_clone()?,
                &stop,
            )?;
            let c = PlantCounters::read(&map);
            println!(
                "{}: {} steps, {} late (max lateness {:.1} µs), SCHED_FIFO {}, pinned {}",
                M::NAME,
                c.steps,
                c.late_steps,
                c.max_late_ns as f64 / 1e3,
                c.fifo,
                c.pinned
            );
            Ok(())
        }
    }
}

/// Runs the plant process of model `M` (made from the seed by `make`) with its command-line
/// arguments (without the program name); returns the exit code: 0 ok, 1 runtime error,
/// 2 bad arguments.
pub fn main_for<M: PlantModel>(argv: &[String], make: fn(u64) -> M) -> u8 {
    let (cfg, fds) = match parse(M::NAME, argv) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", usage(M::NAME));
            return 0;
        }
        Err(e) => {
            eprintln!("{}: {e}", M::NAME);
            return 2;
        }
    };
    match run(make(cfg.seed), cfg, fds) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{}: {e}", M::NAME);
            1
        }
    }
}
