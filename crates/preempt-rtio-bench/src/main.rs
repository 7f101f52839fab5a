//! `rtio-bench`: see the library docs and `--help`.

use std::io::Write;
use std::process::ExitCode;

use preempt_io::rtio::io_uring_disabled_sysctl;
use preempt_rtio_bench::cell::{self, CellResult, CellSpec, Design};
use preempt_rtio_bench::cli::{self, Config};
use preempt_rtio_bench::report::{self, BreakPoint, Document, SysInfo};

/// The talk's extra-stream rows.
const EXTRA_ROWS: [&[u32]; 5] = [&[], &[100], &[100, 100], &[400], &[400, 400]];

fn spec(cfg: &Config, odr: u32, extra: &[u32], design: Design, work_us: u32) -> CellSpec {
    CellSpec {
        odr_hz: odr,
        extra_hz: extra.to_vec(),
        design,
        duration_ns: cfg.duration_ns,
        work_us,
        consumer_cpu: cfg.consumer_cpu,
        sim_cpu: cfg.sim_cpu,
        priority: cfg.priority,
        backend: cfg.backend,
    }
}

fn sweep(cfg: &Config, design: Design) -> std::io::Result<BreakPoint> {
    let (odr, extra) = (6400, [400_u32, 400]);
    let mut trials = Vec::new();
    let mut try_w = |w: u32| -> std::io::Result<bool> {
        let r = cell::run_cell(&cfg.imu_sim, &spec(cfg, odr, &extra, design, w))?;
        let missed = r.missed_events.max(r.fifo_full_drops);
        eprintln!(
            "  sweep {:<6} work {:>4} us: missed {missed}, cpu {:.1}%",
            design.label(),
            w,
            r.consumer_cpu_load_pct
        );
        trials.push((w, missed));
        Ok(missed == 0)
    };
    // Coarse steps of 16 us, then bisect to 1 us.
    let (mut ok, mut bad): (Option<u32>, Option<u32>) = (None, None);
    let mut w = 0;
    while w <= 400 {
        if try_w(w)? {
            ok = Some(w);
            w += 16;
        } else {
            bad = Some(w);
            break;
        }
    }
    if let (Some(mut lo), Some(mut hi)) = (ok, bad) {
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if try_w(mid)? { lo = mid } else { hi = mid }
        }
        ok = Some(lo);
        bad = Some(hi);
    }
    Ok(BreakPoint {
        design: design.label().into(),
        odr_hz: odr,
        extra_streams: cell::extra_label(&extra),
        max_sustained_work_us: ok,
        first_missing_work_us: bad,
        trials,
    })
}

fn run(cfg: &Config, argv: Vec<String>) -> std::io::Result<()> {
    let mut cells: Vec<CellResult> = Vec::new();
    let mut breaks = Vec::new();
    if cfg.sweep {
        for d in [Design::ThreadBased, Design::RtioBased] {
            let b = sweep(cfg, d)?;
            println!(
                "break point {:<6} at {} Hz + {}: sustains {:?} us/sample, first misses at {:?} us",
                b.design,
                b.odr_hz,
                b.extra_streams,
                b.max_sustained_work_us,
                b.first_missing_work_us
            );
            breaks.push(b);
        }
    } else {
        for &odr in &cfg.odrs {
            for extra in EXTRA_ROWS {
                for d in [Design::ThreadBased, Design::RtioBased] {
                    let r = cell::run_cell(&cfg.imu_sim, &spec(cfg, odr, extra, d, cfg.work_us))?;
                    if !r.consumer_sched_fifo {
                        eprintln!(
                            "rtio-bench: warning: consumer did not get SCHED_FIFO (run as root or with CAP_SYS_NICE)"
                        );
                    }
                    eprintln!(
                        "  {odr} Hz {:<8} {:<6}: cpu {:.1}% missed {} overruns {}",
                        r.extra_streams,
                        r.design,
                        r.consumer_cpu_load_pct,
                        r.missed_events,
                        r.sim_overruns
                    );
                    cells.push(r);
                }
            }
        }
        print!("{}", report::table(&cells));
        if let Some(b) = cells.iter().find_map(|c| c.rtio_backend.clone()) {
            println!("RTIO backend: {b}");
        }
    }
    if let Some(path) = &cfg.json {
        let un = preempt_io::sys::kernel::uname()?;
        let doc = Document {
            schema_version: report::SCHEMA_VERSION,
            tool: "rtio-bench",
            sysinfo: SysInfo {
                uname: format!("{} {} {} {}", un.sysname, un.release, un.version, un.machine),
                kernel_realtime: std::fs::read_to_string("/sys/kernel/realtime").ok().map(|s| s.trim().to_owned()),
                io_uring_disabled: io_uring_disabled_sysctl(),
                argv,
                cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            },
            cells,
            sweep: breaks,
            notes: vec![
                "latency = sample stored by the simulator (INT raised) -> processed by the consumer".into(),
                "figures are noisy on a shared 2-vCPU VM: other processes compete for both CPUs".into(),
            ],
        };
        let mut f = std::fs::File::create(path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("--json {}: {e}", path.display()))
        })?;
        serde_json::to_writer_pretty(&mut f, &doc).map_err(std::io::Error::other)?;
        writeln!(f)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cfg = match cli::parse(&argv[1..]) {
        Ok(c) => c,
        Err(e) if e == cli::USAGE => {
            println!("{e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("rtio-bench: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&cfg, argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rtio-bench: {e}");
            ExitCode::from(1)
        }
    }
}
