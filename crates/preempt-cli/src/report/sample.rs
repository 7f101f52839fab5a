//! Deterministic *synthetic* results of every kind, for the report's snapshot tests and for
//! previewing the layout without measuring. Their system info says `synthetic-example`, so they
//! can never be mistaken for a measurement.
//!
//! ```
//! let files = preempt_cli::report::sample::all();
//! assert!(files.iter().any(|(name, _)| name == "latency-idle.json"));
//! ```

use crate::results::micro::{
    ClockInfo, CounterKind, CycleSummary, MicroBench, MicroOverhead, MicroResult, SetStatus,
};
use preempt_trace::{Cause, CauseKind, Explanation};

use crate::results::{
    CheckItem, CheckReport, Distribution, ExplainResult, ExplainedSample, LatencyResult,
    LatencySettings, Ledger, LedgerEntry, MatrixCell, MatrixResult, Overhead, PolicyRecord,
    ResultFile, RunResult, SCHEMA_VERSION, Status, SysInfo, ThreadExplanations, ThreadResult, Tool,
    WakeupCase, WakeupResult, WarningRecord,
};
use crate::stats::histogram::Histogram;
use crate::stats::summary::Summary;

/// The system info of every sample.
pub fn sysinfo() -> SysInfo {
    SysInfo {
        hostname: "synthetic-example".into(),
        kernel_release: "6.18.0-example".into(),
        kernel_version: "#1 SMP PREEMPT_DYNAMIC".into(),
        machine: "x86_64".into(),
        cmdline: "console=ttyS0 example".into(),
        cpu_model: "Example CPU @ 2.40GHz".into(),
        cpus_online: vec![0, 1],
        governors: vec![],
        preempt_model: "none".into(),
        preempt_dynamic: true,
        realtime_flag: None,
        clocksource: "tsc".into(),
        virtualization: Some("example".into()),
        argv: vec!["preempt".into(), "example".into()],
    }
}

/// A deterministic pseudo-random sequence (64-bit LCG, Knuth's MMIX constants).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// A latency-like distribution: a body around `base_ns` with a long, sparse tail.
pub fn distribution(seed: u64, n: u64, base_ns: u64, tail: u64) -> Distribution {
    let h = Histogram::new();
    let mut r = Lcg(seed);
    for cycle in 0..n {
        let x = r.next();
        let mut v = base_ns + x % (base_ns / 2 + 1);
        if x % 97 == 0 {
            v += (x % 40) * base_ns / 4;
        }
        if x % 4_099 == 0 {
            v += tail;
        }
        h.record(v, cycle);
    }
    Distribution::from_snapshot(&h.snapshot())
}

fn file(result: RunResult) -> ResultFile {
    let mut f = ResultFile::new(sysinfo(), result);
    f.started_unix_ms = 1_767_225_600_000;
    f.elapsed_ns = 1_000_000_000;
    f
}

fn overhead() -> Overhead {
    Overhead {
        clock_read: distribution(9, 1_000, 30, 0).summary,
        clock_resolution_ns: 1,
    }
}

fn ledger(clean: bool) -> Ledger {
    Ledger {
        verdict: if clean {
            "clean".into()
        } else {
            "contaminated: stress requested".into()
        },
        entries: vec![
            LedgerEntry {
                name: "steal-time".into(),
                value: "0.0 %".into(),
                contaminates: false,
            },
            LedgerEntry {
                name: "stress".into(),
                value: if clean {
                    "none".into()
                } else {
                    "cpu,memory,io,sched".into()
                },
                contaminates: !clean,
            },
        ],
    }
}

/// A latency run on CPUs 0 and 1.
pub fn latency(stress: bool) -> ResultFile {
    let (base, tail) = if stress {
        (9_000, 900_000)
    } else {
        (4_000, 60_000)
    };
    let threads: Vec<ThreadResult> = (0..2)
        .map(|cpu| ThreadResult {
            cpu: Some(cpu),
            cpus_seen: vec![cpu],
            tid: 1_000 + cpu as i32,
            releases: 20_000,
            samples: 20_000,
            missed_periods: 0,
            deadline_misses: 0,
            latency: distribution(cpu as u64 + if stress { 10 } else { 0 }, 20_000, base, tail),
            response: None,
            compute: None,
            minor_faults: 0,
            major_faults: 0,
            involuntary_switches: 3,
            throttled_windows: 0,
        })
        .collect();
    let mut all = threads[0].latency.to_snapshot().expect("own layout");
    all.merge(&threads[1].latency.to_snapshot().expect("own layout"));
    let r = LatencyResult {
        settings: LatencySettings {
            policy: PolicyRecord {
                name: "fifo".into(),
                priority: Some(80),
                nice: None,
                runtime_ns: None,
                deadline_ns: None,
                period_ns: None,
            },
            interval_ns: 1_000_000,
            releases_per_thread: 20_000,
            cpus: vec![0, 1],
            pinned: true,
            work_ns: 0,
            work_iterations: 0,
            timer_slack_ns: 1,
            mlock: true,
            cpu_dma_latency_us: Some(0),
            stress: if stress {
                vec!["cpu".into(), "memory".into(), "io".into(), "sched".into()]
            } else {
                vec![]
            },
            stress_tool: "builtin".into(),
            break_at_ns: None,
        },
        overhead: overhead(),
        threads,
        latency_all: Summary::from_snapshot(&all),
        ledger: ledger(!stress),
        break_event: None,
        explain: stress.then(|| explain(&[1_000, 1_001])),
        explain_skipped: (!stress).then(|| "--no-explain".to_string()),
    };
    let mut f = file(RunResult::Latency(Box::new(r)));
    f.warnings = vec![WarningRecord {
        code: "not-preempt-rt".into(),
        message: "kernel is not PREEMPT_RT".into(),
        hint: "boot a PREEMPT_RT kernel".into(),
    }];
    f
}

/// A cause of a synthetic explanation.
fn cause(kind: CauseKind, name: &str, pid: Option<i32>, ns: u64) -> Cause {
    let thread = kind == CauseKind::Thread;
    Cause {
        kind,
        name: name.into(),
        pid,
        ns,
        policy: thread.then(|| "SCHED_OTHER".into()),
        priority: thread.then_some(0),
        inversion: thread,
    }
}

/// `--explain` results for the threads `tids` (on CPUs 0, 1, ...): per thread three outliers
/// under stress (a thread holding the CPU, an interrupt burst, a host stall).
pub fn explain(tids: &[i32]) -> ExplainResult {
    let mut all = Vec::new();
    let threads = tids
        .iter()
        .enumerate()
        .map(|(cpu, &tid)| {
            let scale = 1 + cpu as u64;
            let windows = [
                (
                    1_207,
                    vec![
                        cause(CauseKind::Thread, "stress-cpu", Some(4_242), 610_000 * scale),
                        cause(CauseKind::Irq, "LOC local_timer", None, 41_000),
                        cause(CauseKind::Wakeup, "switch-in and return to the task", Some(tid), 9_000),
                    ],
                    Some(0),
                ),
                (
                    8_311,
                    vec![
                        cause(CauseKind::Softirq, "NET_RX", None, 220_000 * scale),
                        cause(CauseKind::Irq, "24:virtio0-input.0", None, 90_000),
                        cause(CauseKind::Irq, "LOC local_timer", None, 3_000),
                        cause(CauseKind::Wakeup, "switch-in and return to the task", Some(tid), 7_000),
                    ],
                    Some(0),
                ),
                (
                    15_020,
                    vec![
                        cause(
                            CauseKind::Invisible,
                            "timer interrupt late, nothing recorded (host steal, SMI, interrupts off) while stress-cpu ran",
                            Some(4_242),
                            880_000 * scale,
                        ),
                        cause(CauseKind::IdleExit, "idle state exit", None, 2_000),
                        cause(CauseKind::Irq, "LOC local_timer", None, 4_000),
                        cause(CauseKind::Wakeup, "idle to task switch", None, 11_000),
                        // The trace lost part of this window: the bar is marked.
                        cause(CauseKind::Lost, "events lost (trace buffer overrun)", None, 150_000),
                    ],
                    Some(10_000_000),
                ),
            ];
            let explanations = windows
                .into_iter()
                .map(|(cycle, causes, steal_ns)| {
                    let covered = !causes.iter().any(|c| c.kind == CauseKind::Lost);
                    let e = Explanation {
                        cpu,
                        release_ns: cycle * 1_000_000,
                        latency_ns: causes.iter().map(|c| c.ns).sum(),
                        causes,
                        steal_ns,
                        steal_span_ns: steal_ns.map(|_| 50_000_000),
                        covered,
                        throttled: None,
                        segments: Vec::new(),
                    };
                    let s = ExplainedSample::new(cycle, &e);
                    all.push(e);
                    s
                })
                .collect();
            ThreadExplanations {
                thread: cpu,
                tid,
                cpu,
                threshold_ns: 200_000,
                explanations,
            }
        })
        .collect();
    ExplainResult {
        throttled: Vec::new(),
        threshold_ns: Some(200_000),
        threads,
        top_causes: preempt_trace::top_causes(&all),
        explained: all.len() as u64,
        unexplained: 1,
        unexplained_why: None,
    }
}

/// A readiness check.
pub fn check() -> ResultFile {
    let item = |id: &str, title: &str, status, value: &str, fix: &str| CheckItem {
        id: id.into(),
        title: title.into(),
        status,
        value: value.into(),
        fix: fix.into(),
    };
    file(RunResult::Check(CheckReport {
        items: vec![
            item(
                "preempt-model",
                "Kernel preemption model",
                Status::Fail,
                "none (PREEMPT_DYNAMIC)",
                "boot with preempt=full or a PREEMPT_RT kernel",
            ),
            item(
                "rt-throttling",
                "RT throttling",
                Status::Warn,
                "950000/1000000 us",
                "echo -1 > /proc/sys/kernel/sched_rt_runtime_us",
            ),
            item(
                "rlimit-rtprio",
                "RLIMIT_RTPRIO",
                Status::Pass,
                "unlimited (root)",
                "",
            ),
            item(
                "virtualization",
                "Virtualisation",
                Status::Info,
                "example hypervisor",
                "",
            ),
        ],
        idle_wakeup: None,
    }))
}

/// A wakeup run: two sources, idle and loaded.
pub fn wakeup() -> ResultFile {
    let mut cases = Vec::new();
    for (li, load) in ["idle", "cpu,memory,io,sched"].into_iter().enumerate() {
        for (si, source) in ["eventfd", "timerfd"].into_iter().enumerate() {
            cases.push(WakeupCase {
                source: source.into(),
                load: load.into(),
                waiter_cpu: 1,
                trigger_cpu: (source != "timerfd").then_some(0),
                latency: Some(distribution(
                    100 + (li * 2 + si) as u64,
                    5_000,
                    6_000 + 4_000 * li as u64,
                    80_000,
                )),
                skipped: None,
            });
        }
        cases.push(WakeupCase {
            source: "gpio".into(),
            load: load.into(),
            waiter_cpu: 1,
            trigger_cpu: Some(0),
            latency: None,
            skipped: Some("no /dev/gpiochip0".into()),
        });
    }
    file(RunResult::Wakeup(Box::new(WakeupResult {
        priority: 80,
        samples_per_case: 5_000,
        interval_ns: 1_000_000,
        overhead: overhead(),
        cases,
    })))
}

/// A matrix summary whose cells reference `cell-*.json` files (written by [`all`]).
pub fn matrix() -> (ResultFile, Vec<(String, ResultFile)>) {
    let mut cells = Vec::new();
    let mut files = Vec::new();
    for (si, stress) in ["none", "heavy"].into_iter().enumerate() {
        for (ri, (row, prio)) in [("SCHED_FIFO 99", 99u8), ("SCHED_OTHER nice 0", 0)]
            .into_iter()
            .enumerate()
        {
            let name = format!("cell-{stress}-{ri}.json");
            let mut lat = latency(si == 1);
            if let RunResult::Latency(l) = &mut lat.result {
                l.threads.truncate(1);
                l.threads[0].latency = distribution(
                    200 + (si * 2 + ri) as u64,
                    2_500,
                    5_000 * (1 + ri as u64) * (1 + si as u64),
                    200_000,
                );
                l.latency_all = l.threads[0].latency.summary;
            }
            let summary = match &lat.result {
                RunResult::Latency(l) => l.latency_all,
                _ => unreachable!("built as latency above"),
            };
            cells.push(MatrixCell {
                row: row.into(),
                policy: PolicyRecord {
                    name: if prio > 0 {
                        "fifo".into()
                    } else {
                        "other".into()
                    },
                    priority: (prio > 0).then_some(prio),
                    nice: (prio == 0).then_some(0),
                    runtime_ns: None,
                    deadline_ns: None,
                    period_ns: None,
                },
                stress: stress.into(),
                result_file: Some(name.clone()),
                latency: Some(summary),
                compute: None,
                response: None,
                missed_periods: 0,
                deadline_misses: 0,
                verdict: if si == 0 {
                    "clean".into()
                } else {
                    "contaminated: stress requested".into()
                },
                error: None,
            });
            files.push((name, lat));
        }
    }
    let m = MatrixResult {
        period_ns: 4_000_000,
        duration_per_cell_ns: 10_000_000_000,
        work_ns: 4_000,
        cpus: vec![1],
        cells,
    };
    (file(RunResult::Matrix(Box::new(m))), files)
}

fn cycles(d: &Distribution, ghz: f64) -> CycleSummary {
    let c = |ns: u64| (ns as f64 * ghz).round() as u64;
    let s = &d.summary;
    CycleSummary {
        count: s.count,
        min_cycles: c(s.min_ns),
        p50_cycles: c(s.p50_ns),
        p90_cycles: c(s.p90_ns),
        p99_cycles: c(s.p99_ns),
        max_cycles: c(s.max_ns),
        mean_cycles: (s.mean_ns * ghz * 10.0).round() / 10.0,
    }
}

/// A micro run with the NXP and Zephyr sets.
pub fn micro() -> ResultFile {
    let ghz = 2.4;
    let rows: [(&str, &str, &str, u64, u64); 8] = [
        ("nxp", "malloc", "malloc(4) + write", 1_000, 40),
        ("nxp", "free", "free", 1_000, 35),
        ("nxp", "mutex_lock", "pthread_mutex_lock", 1_000, 30),
        ("nxp", "mutex_unlock", "pthread_mutex_unlock", 1_000, 30),
        ("nxp", "pthread_create", "pthread_create", 2_000, 11_000),
        ("nxp", "pthread_join", "pthread_join", 2_000, 15_000),
        (
            "nxp",
            "context_switch",
            "context switch (sched_yield)",
            50_000,
            1_400,
        ),
        (
            "zephyr",
            "sem_give_switch",
            "sem give -> higher-priority waiter runs",
            10_000,
            2_400,
        ),
    ];
    let mut benches: Vec<MicroBench> = rows
        .iter()
        .enumerate()
        .map(|(i, (set, id, title, n, base))| {
            let d = distribution(300 + i as u64, *n, *base, base * 30);
            MicroBench {
                set: (*set).into(),
                id: (*id).into(),
                title: (*title).into(),
                method: "synthetic".into(),
                cycles: Some(cycles(&d, ghz)),
                ns: Some(d),
                overhead_subtracted_cycles: 0,
                perf: None,
                perf_note: Some("synthetic".into()),
                skipped: None,
                notes: vec![],
            }
        })
        .collect();
    benches.push(MicroBench {
        set: "zephyr".into(),
        id: "sem_give_no_switch".into(),
        title: "sem give, lower-priority waiter (no preemption)".into(),
        method: "synthetic".into(),
        ns: None,
        cycles: None,
        overhead_subtracted_cycles: 0,
        perf: None,
        perf_note: None,
        skipped: Some("needs SCHED_FIFO".into()),
        notes: vec![],
    });
    let od = distribution(400, 20_000, 30, 0);
    let m = MicroResult {
        clock: ClockInfo {
            counter: CounterKind::Tsc,
            unit: CounterKind::Tsc.unit().into(),
            counter_hz: ghz * 1e9,
            declared_hz: None,
            calibrated_against: "CLOCK_MONOTONIC_RAW".into(),
            calibration_window_ns: 20_000_000,
            calibration_uncertainty_ppm: 2.0,
            resolution_ticks: 1,
            counter_flags: vec!["constant_tsc".into(), "nonstop_tsc".into()],
        },
        overhead: MicroOverhead {
            cycles: cycles(&od, ghz),
            ns: od.summary,
        },
        cpu: 1,
        policy: "fifo:80".into(),
        scale: 1.0,
        stress: vec![],
        sets: vec![
            SetStatus {
                set: "nxp".into(),
                benches: 7,
                planned: vec![],
                note: None,
            },
            SetStatus {
                set: "zephyr".into(),
                benches: 2,
                planned: vec![],
                note: None,
            },
            SetStatus {
                set: "framework".into(),
                benches: 0,
                planned: crate::micro::framework::PLANNED
                    .iter()
                    .map(|(id, _)| (*id).into())
                    .collect(),
                note: Some(crate::micro::framework::NOT_AVAILABLE.into()),
            },
        ],
        benches,
    };
    ResultFile {
        schema_version: SCHEMA_VERSION,
        tool: Tool::this(),
        complete: true,
        interrupted: false,
        interrupted_by: None,
        failed: None,
        started_unix_ms: 1_767_225_600_000,
        elapsed_ns: 1_000_000_000,
        sysinfo: sysinfo(),
        warnings: vec![],
        result: RunResult::Micro(Box::new(m)),
    }
}

/// The extra-stream rows of the talk's table with their rates.
const RTIO_ROWS: [(&str, &[u32]); 5] = [
    ("none", &[]),
    ("1@100Hz", &[100]),
    ("2@100Hz", &[100, 100]),
    ("1@400Hz", &[400]),
    ("2@400Hz", &[400, 400]),
];

fn rtio_file(r: crate::results::rtio::RtioBenchResult) -> ResultFile {
    let mut f = ResultFile::new(sysinfo(), RunResult::RtioBench(Box::new(r)));
    f.started_unix_ms = 1_767_225_600_000;
    f.elapsed_ns = 30_000_000_000;
    f.warnings = vec![WarningRecord {
        code: "simulator-overruns".into(),
        message: "imu-sim served 12 timer ticks late".into(),
        hint: "give the simulator a CPU of its own".into(),
    }];
    f
}

fn rtio_settings(mode: &str) -> crate::results::rtio::RtioSettings {
    crate::results::rtio::RtioSettings {
        mode: mode.into(),
        duration_per_cell_ns: 2_500_000_000,
        work_us: 0,
        odrs_hz: vec![3200, 6400],
        buses: vec!["spi".into()],
        bus_ns_per_byte: 800,
        consumer_cpu: 1,
        sim_cpu: 0,
        priority: 80,
        backend: "auto".into(),
    }
}

/// An `rtio-bench` table run on the SPI bus: both ODRs × the talk's five rows × both designs,
/// with numbers shaped like a real run (RTIO: less CPU and jitter; threads miss events at
/// 6400 Hz + 2@400Hz).
pub fn rtio_bench() -> ResultFile {
    use crate::results::rtio::{RtioBenchResult, RtioCell};
    let mut cells = Vec::new();
    for odr in [3200_u32, 6400] {
        for (n, (extra, rates)) in RTIO_ROWS.iter().enumerate() {
            let load = f64::from(odr) / 3200.0;
            let streams: u32 = rates.iter().sum();
            for design in ["thread", "rtio"] {
                let rtio = design == "rtio";
                let cpu = 21.0 * load + f64::from(streams) / 100.0 * 1.5;
                let missed = if !rtio && odr == 6400 && n == 4 {
                    312
                } else {
                    0
                };
                cells.push(RtioCell {
                    odr_hz: odr,
                    extra_streams: (*extra).into(),
                    design: design.into(),
                    bus: "spi".into(),
                    bus_ns_per_byte: 800,
                    rtio_backend: rtio.then(|| "IoUring (auto: io_uring works here)".into()),
                    work_us: 0,
                    duration_ns: 2_500_000_000,
                    samples_processed: u64::from(odr) * 5 / 2 + u64::from(streams) * 5 / 2,
                    imu_samples_processed: u64::from(odr) * 5 / 2 - missed,
                    consumer_cpu_load_pct: if rtio { cpu * 0.83 } else { cpu } + 10.0,
                    process_cpu_pct: if rtio { cpu * 0.85 } else { cpu },
                    // CPU time over the frames of the run: % of 2.5 s per processed sample.
                    process_cpu_per_sample_ns: if rtio { cpu * 0.85 } else { cpu } / 100.0 * 2.5e9
                        / (f64::from(odr) * 2.5 + f64::from(streams) * 2.5),
                    latency_p50_ns: if rtio { 128_000 } else { 171_000 } + n as u64 * 4_000,
                    latency_p99_ns: if rtio { 296_000 } else { 412_000 } + n as u64 * 30_000,
                    latency_max_ns: if rtio { 1_778_000 } else { 5_669_000 } + n as u64 * 200_000,
                    jitter_pp_ns: if rtio { 11_600 } else { 37_200 } * (n as u64 + 1),
                    jitter_sigma_ns: if rtio { 3_100.5 } else { 9_800.25 },
                    missed_events: missed,
                    fifo_full_drops: missed / 2,
                    sim_overruns: if n == 0 { 12 } else { 0 },
                    context_switches_per_sample: if rtio { 2.91 } else { 3.87 },
                    consumer_sched_fifo: true,
                    iowq_workers: 0,
                    bus_transfers_per_sample: 2.95,
                });
            }
        }
    }
    rtio_file(RtioBenchResult {
        bench_schema_version: 2,
        settings: rtio_settings("table"),
        io_uring_disabled: Some(0),
        cells,
        sweep: vec![],
        notes: vec![
            "latency = sample stored by the simulator (INT raised) -> processed by the consumer"
                .into(),
            "load average at the end of the run: 1.00 0.50 0.25 1/100 1000".into(),
        ],
    })
}

/// An `rtio-bench --sweep` run: both designs' break points at 6400 Hz + 2@400Hz on SPI.
#[cfg(test)]
pub(crate) fn rtio_sweep() -> ResultFile {
    use crate::results::rtio::{RtioBenchResult, RtioBreakPoint, RtioTrial};
    let bp = |design: &str, ok: u32| RtioBreakPoint {
        design: design.into(),
        bus: "spi".into(),
        odr_hz: 6400,
        extra_streams: "2@400Hz".into(),
        max_sustained_work_us: Some(ok),
        first_missing_work_us: Some(ok + 1),
        trials: [
            (0, 0),
            (112, 0),
            (128, 40),
            (128, 38),
            (ok, 0),
            (ok + 1, 9),
            (ok + 1, 7),
        ]
        .iter()
        .map(|&(work_us, missed_events)| RtioTrial {
            work_us,
            missed_events,
        })
        .collect(),
    };
    let mut settings = rtio_settings("sweep");
    settings.odrs_hz = vec![6400];
    rtio_file(RtioBenchResult {
        bench_schema_version: 2,
        settings,
        io_uring_disabled: Some(0),
        cells: vec![],
        sweep: vec![bp("thread", 124), bp("rtio", 127)],
        notes: vec![],
    })
}

/// Every sample as `(file name, JSON bytes)`, as a suite directory would hold them (plus a
/// matrix with its cell files).
pub fn all() -> Vec<(String, Vec<u8>)> {
    use crate::export::Exporter;
    let j = |f: &ResultFile| {
        crate::export::json::JsonExporter
            .serialize(f)
            .expect("serializable")
    };
    let (m, cells) = matrix();
    let mut out = vec![
        ("check.json".to_string(), j(&check())),
        ("latency-idle.json".into(), j(&latency(false))),
        ("latency-stress.json".into(), j(&latency(true))),
        ("wakeup.json".into(), j(&wakeup())),
        ("micro.json".into(), j(&micro())),
        ("matrix-summary.json".into(), j(&m)),
    ];
    for (name, f) in cells {
        out.push((name, j(&f)));
    }
    out
}
