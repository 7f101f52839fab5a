//! Command-line flags → a validated [`Config`]. Every error names its flag.

use std::path::PathBuf;

use preempt_io::rtio::BackendChoice;

/// Usage text.
pub const USAGE: &str =
    "usage: rtio-bench [--duration SECS] [--work-us US] [--sweep] [--odr 3200,6400]
                  [--json FILE] [--consumer-cpu N] [--sim-cpu N] [--priority 1-98]
                  [--backend auto|io_uring|epoll] [--imu-sim PATH]

Runs the Zephyr RTIO talk's table: ODR {3200,6400} x extra streams {none, 1@100Hz, 2@100Hz,
1@400Hz, 2@400Hz} x {thread-based, RTIO-based}. --sweep instead raises --work-us at 6400 Hz +
2@400Hz until each design first misses an event and reports both break points.
Exit codes: 0 ok, 1 runtime error, 2 bad flags.";

/// Validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Per-cell measurement window, ns.
    pub duration_ns: u64,
    /// Per-sample compute, µs.
    pub work_us: u32,
    /// Sweep mode.
    pub sweep: bool,
    /// IMU ODRs to run.
    pub odrs: Vec<u32>,
    /// JSON output.
    pub json: Option<PathBuf>,
    /// Consumer CPU.
    pub consumer_cpu: usize,
    /// Simulator CPU.
    pub sim_cpu: usize,
    /// Consumer SCHED_FIFO priority.
    pub priority: u8,
    /// RTIO backend.
    pub backend: BackendChoice,
    /// Simulator binary.
    pub imu_sim: PathBuf,
}

fn num<T: std::str::FromStr>(flag: &str, v: Option<&String>, what: &str) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag}: missing value ({what})"))?;
    v.parse()
        .map_err(|_| format!("{flag}: '{v}' is not {what}"))
}

/// Where `imu-sim` is by default: next to this executable (or one level up from `deps/`).
pub fn default_imu_sim() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let here = dir.join("imu-sim");
    if here.exists() {
        return here;
    }
    dir.parent().map_or(here.clone(), |p| p.join("imu-sim"))
}

/// Parses `argv` (without the program name).
///
/// # Errors
/// A one-line message naming the bad flag.
pub fn parse(argv: &[String]) -> Result<Config, String> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut c = Config {
        duration_ns: 2_500_000_000,
        work_us: 0,
        sweep: false,
        odrs: vec![3200, 6400],
        json: None,
        consumer_cpu: 1.min(cpus - 1),
        sim_cpu: 0,
        priority: 80,
        backend: BackendChoice::Auto,
        imu_sim: default_imu_sim(),
    };
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--duration" => {
                let s: f64 = num(a, it.next(), "a duration in seconds")?;
                if !(0.2..=600.0).contains(&s) {
                    return Err(format!("--duration: {s} s is out of range (0.2..=600)"));
                }
                c.duration_ns = (s * 1e9) as u64;
            }
            "--work-us" => {
                c.work_us = num(a, it.next(), "a whole number of microseconds")?;
                if c.work_us > 10_000 {
                    return Err("--work-us: at most 10000".into());
                }
            }
            "--sweep" => c.sweep = true,
            "--odr" => {
                let v = it
                    .next()
                    .ok_or("--odr: missing value (3200, 6400 or 3200,6400)")?;
                c.odrs = v
                    .split(',')
                    .map(|s| match s {
                        "3200" => Ok(3200),
                        "6400" => Ok(6400),
                        _ => Err(format!("--odr: '{s}' is not 3200 or 6400")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--json" => c.json = Some(PathBuf::from(it.next().ok_or("--json: missing file name")?)),
            "--consumer-cpu" => c.consumer_cpu = num(a, it.next(), "a CPU number")?,
            "--sim-cpu" => c.sim_cpu = num(a, it.next(), "a CPU number")?,
            "--priority" => {
                c.priority = num(a, it.next(), "a priority 1-98")?;
                if !(1..=98).contains(&c.priority) {
                    return Err("--priority: must be 1-98 (the simulator runs one above)".into());
                }
            }
            "--backend" => {
                c.backend = match it.next().map(String::as_str) {
                    Some("auto") => BackendChoice::Auto,
                    Some("io_uring") => BackendChoice::IoUring,
                    Some("epoll") => BackendChoice::Epoll,
                    other => {
                        return Err(format!(
                            "--backend: '{}' is not auto, io_uring or epoll",
                            other.unwrap_or("")
                        ));
                    }
                }
            }
            "--imu-sim" => c.imu_sim = PathBuf::from(it.next().ok_or("--imu-sim: missing path")?),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown flag '{other}' (see --help)")),
        }
    }
    if c.consumer_cpu >= cpus || c.sim_cpu >= cpus {
        return Err(format!(
            "--consumer-cpu/--sim-cpu: this machine has CPUs 0-{}",
            cpus - 1
        ));
    }
    if c.consumer_cpu == c.sim_cpu && cpus > 1 {
        return Err(
            "--consumer-cpu and --sim-cpu must differ (the simulator stands in for hardware)"
                .into(),
        );
    }
    if !c.imu_sim.exists() {
        return Err(format!(
            "--imu-sim: {} not found; build it with `cargo build --release -p preempt-imu-sim` or pass --imu-sim PATH",
            c.imu_sim.display()
        ));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Result<Config, String> {
        let mut v: Vec<String> = a.iter().map(|s| (*s).to_owned()).collect();
        v.push("--imu-sim".into());
        v.push("/bin/true".into());
        parse(&v)
    }

    #[test]
    fn bad_flags_name_the_flag() {
        assert!(
            p(&["--duration", "x"])
                .unwrap_err()
                .starts_with("--duration")
        );
        assert!(
            p(&["--work-us", "-3"])
                .unwrap_err()
                .starts_with("--work-us")
        );
        assert!(p(&["--odr", "5000"]).unwrap_err().starts_with("--odr"));
        assert!(
            p(&["--backend", "kqueue"])
                .unwrap_err()
                .starts_with("--backend")
        );
        assert!(
            p(&["--priority", "99"])
                .unwrap_err()
                .starts_with("--priority")
        );
        assert!(p(&["--frobnicate"]).unwrap_err().contains("--frobnicate"));
        assert!(
            parse(&["--imu-sim".into(), "/nonexistent".into()])
                .unwrap_err()
                .starts_with("--imu-sim")
        );
        let c = p(&[
            "--duration",
            "1.5",
            "--work-us",
            "20",
            "--odr",
            "6400",
            "--sweep",
        ])
        .unwrap();
        assert_eq!(
            (c.duration_ns, c.work_us, c.odrs.clone(), c.sweep),
            (1_500_000_000, 20, vec![6400], true)
        );
    }
}
