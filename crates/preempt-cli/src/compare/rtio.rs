//! Comparing `rtio_bench` results: every number of the talk's table (and of the sweep's break
//! points) as a named *quantity* with its ratio to the first run. `demo_gimbal` results
//! bring their control quality the same way (`demo_gimbal/<axis>`: RMS and max error against
//! the reference, RMS in % of the step; `demo_gimbal/samples`: missed samples, stale
//! outputs, telemetry lost, plant late steps), so idle and loaded runs stand side by side.
//!
//! An rtio-bench cell has no latency histogram, only its p50/p99/max, so it does not fit the
//! distribution [`Figure`](super::Figure)s; each cell becomes plain numbers keyed
//! `rtio/<bus>/<odr>/<extra>/<design>` (`rtio/spi/6400/2@400Hz/rtio`) and each break point
//! `rtio-sweep/<bus>/<odr>/<extra>/<design>`. The `--max-ratio` gate applies its `p50`, `p99`
//! and `max` limits to the cells' latency quantities.
//!
//! ```
//! use preempt_cli::compare::rtio::Quantity;
//! assert_eq!(Quantity::LatencyP99.name(), "latency p99");
//! assert_eq!(Quantity::LatencyP99.format(296_800.0), "296.8 µs");
//! assert!(Quantity::SustainedWorkUs.higher_is_better());
//! ```

use serde::Serialize;

use super::{Metric, fmt_ns};
use crate::results::RunResult;
use crate::results::input::{Input, Loaded};

/// A number of an rtio-bench cell or break point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Busy share of the consumer CPU, %.
    ConsumerCpuPct,
    /// Process CPU time over wall time, %.
    ProcessCpuPct,
    /// Latency interrupt → processed, median, ns.
    LatencyP50,
    /// 99th percentile, ns.
    LatencyP99,
    /// Maximum, ns.
    LatencyMax,
    /// Peak-to-peak jitter of the processing period, ns.
    JitterPp,
    /// Standard deviation of the processing period, ns.
    JitterSigma,
    /// Events lost.
    MissedEvents,
    /// Context switches per processed sample.
    ContextSwitchesPerSample,
    /// Largest per-sample workload sustained without a missed event, µs (sweep).
    SustainedWorkUs,
    /// Gimbal: RMS angle error against the ideal-timing reference, rad.
    RmsErrorRad,
    /// Gimbal: the same in % of the axis's step.
    RmsErrorPctOfStep,
    /// Gimbal: largest angle error against the reference, rad.
    MaxErrorRad,
    /// Gimbal: samples missed (releases skipped).
    MissedSamples,
    /// Gimbal: samples that sent a stale voltage.
    LateOutputs,
    /// Gimbal: telemetry samples lost.
    TelemetryLost,
    /// Gimbal: plant steps that ran a whole step late.
    PlantLateSteps,
}

impl Quantity {
    /// Every quantity of a table cell, in table order.
    pub(crate) const CELL: [Quantity; 9] = [
        Quantity::ConsumerCpuPct,
        Quantity::ProcessCpuPct,
        Quantity::LatencyP50,
        Quantity::LatencyP99,
        Quantity::LatencyMax,
        Quantity::JitterPp,
        Quantity::JitterSigma,
        Quantity::MissedEvents,
        Quantity::ContextSwitchesPerSample,
    ];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Quantity::ConsumerCpuPct => "cpu load",
            Quantity::ProcessCpuPct => "process cpu",
            Quantity::LatencyP50 => "latency p50",
            Quantity::LatencyP99 => "latency p99",
            Quantity::LatencyMax => "latency max",
            Quantity::JitterPp => "jitter p-p",
            Quantity::JitterSigma => "jitter sigma",
            Quantity::MissedEvents => "missed events",
            Quantity::ContextSwitchesPerSample => "cs/sample",
            Quantity::SustainedWorkUs => "sustained work",
            Quantity::RmsErrorRad => "rms error",
            Quantity::RmsErrorPctOfStep => "rms % of step",
            Quantity::MaxErrorRad => "max error",
            Quantity::MissedSamples => "missed",
            Quantity::LateOutputs => "stale outputs",
            Quantity::TelemetryLost => "telemetry lost",
            Quantity::PlantLateSteps => "plant late",
        }
    }

    /// A value with its unit.
    pub fn format(self, v: f64) -> String {
        match self {
            Quantity::ConsumerCpuPct | Quantity::ProcessCpuPct => format!("{v:.1} %"),
            Quantity::LatencyP50
            | Quantity::LatencyP99
            | Quantity::LatencyMax
            | Quantity::JitterPp
            | Quantity::JitterSigma => fmt_ns(v),
            Quantity::MissedEvents
            | Quantity::MissedSamples
            | Quantity::LateOutputs
            | Quantity::TelemetryLost
            | Quantity::PlantLateSteps => format!("{v:.0}"),
            Quantity::RmsErrorRad | Quantity::MaxErrorRad => format!("{:.3} mrad", v * 1e3),
            Quantity::RmsErrorPctOfStep => format!("{v:.2} %"),
            Quantity::ContextSwitchesPerSample => format!("{v:.2}"),
            Quantity::SustainedWorkUs => format!("{v:.0} µs"),
        }
    }

    /// The distribution metric `--max-ratio` uses for it, if any.
    pub fn metric(self) -> Option<Metric> {
        match self {
            Quantity::LatencyP50 => Some(Metric::P50),
            Quantity::LatencyP99 => Some(Metric::P99),
            Quantity::LatencyMax => Some(Metric::Max),
            _ => None,
        }
    }

    /// Whether a larger value is the better one (only the sustained workload).
    pub fn higher_is_better(self) -> bool {
        self == Quantity::SustainedWorkUs
    }
}

/// One number of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scalar {
    /// Name of the cell or break point, e.g. `rtio/spi/6400/2@400Hz/rtio`.
    pub key: String,
    /// Which number.
    pub quantity: Quantity,
    /// The value, in the quantity's unit (ns for latency and jitter).
    pub value: f64,
}

/// The numbers of one input (none for inputs that are not rtio-bench results).
pub(crate) fn scalars_of(i: &Input) -> Vec<Scalar> {
    let Loaded::Result(f) = &i.loaded else {
        return Vec::new();
    };
    let r = match &f.result {
        RunResult::RtioBench(r) => r,
        RunResult::DemoGimbal(d) => return gimbal_scalars(d),
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for c in &r.cells {
        let key = format!(
            "rtio/{}/{}/{}/{}",
            c.bus, c.odr_hz, c.extra_streams, c.design
        );
        for q in Quantity::CELL {
            let value = match q {
                Quantity::ConsumerCpuPct => c.consumer_cpu_load_pct,
                Quantity::ProcessCpuPct => c.process_cpu_pct,
                Quantity::LatencyP50 => c.latency_p50_ns as f64,
                Quantity::LatencyP99 => c.latency_p99_ns as f64,
                Quantity::LatencyMax => c.latency_max_ns as f64,
                Quantity::JitterPp => c.jitter_pp_ns as f64,
                Quantity::JitterSigma => c.jitter_sigma_ns,
                Quantity::MissedEvents => c.missed_total() as f64,
                Quantity::ContextSwitchesPerSample => c.context_switches_per_sample,
                // Not a cell's number (the sweep's, or a gimbal run's).
                _ => continue,
            };
            out.push(Scalar {
                key: key.clone(),
                quantity: q,
                value,
            });
        }
    }
    for b in &r.sweep {
        if let Some(w) = b.max_sustained_work_us {
            out.push(Scalar {
                key: format!(
                    "rtio-sweep/{}/{}/{}/{}",
                    b.bus, b.odr_hz, b.extra_streams, b.design
                ),
                quantity: Quantity::SustainedWorkUs,
                value: f64::from(w),
            });
        }
    }
    out
}

/// The control quality of a gimbal run.
fn gimbal_scalars(d: &preempt_gimbal::result::GimbalData) -> Vec<Scalar> {
    let mut out = Vec::new();
    let mut push = |key: String, quantity, value| {
        out.push(Scalar {
            key,
            quantity,
            value,
        })
    };
    for a in &d.axes {
        let key = format!("demo_gimbal/{}", a.name);
        push(key.clone(), Quantity::RmsErrorRad, a.rms_error_rad);
        if let Some(p) = a.rms_error_pct_of_step {
            push(key.clone(), Quantity::RmsErrorPctOfStep, p);
        }
        push(key, Quantity::MaxErrorRad, a.max_error_rad);
    }
    let key = "demo_gimbal/samples".to_string();
    push(
        key.clone(),
        Quantity::MissedSamples,
        d.samples.missed as f64,
    );
    push(
        key.clone(),
        Quantity::LateOutputs,
        d.samples.late_outputs as f64,
    );
    push(
        key.clone(),
        Quantity::TelemetryLost,
        d.telemetry.lost as f64,
    );
    push(key, Quantity::PlantLateSteps, d.plant.late_steps as f64);
    out
}

/// Makes `(key, quantity)` unique within a run: when two inputs of one run (a directory with
/// two rtio-bench files) have the same cell, each key gets its input's label.
pub(crate) fn disambiguate(per_input: Vec<(String, Vec<Scalar>)>) -> Vec<Scalar> {
    let all: Vec<(&str, &Scalar)> = per_input
        .iter()
        .flat_map(|(l, s)| s.iter().map(move |s| (l.as_str(), s)))
        .collect();
    let mut out: Vec<Scalar> = Vec::new();
    for (label, s) in &all {
        let dup = all
            .iter()
            .filter(|(_, o)| o.key == s.key && o.quantity == s.quantity)
            .count()
            > 1;
        let key = if dup {
            format!("{} ({label})", s.key)
        } else {
            s.key.clone()
        };
        if !out.iter().any(|o| o.key == key && o.quantity == s.quantity) {
            out.push(Scalar {
                key,
                quantity: s.quantity,
                value: s.value,
            });
        }
    }
    out
}

/// One row of the quantities table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ScalarRow {
    /// Cell or break point.
    pub figure: String,
    /// Which number.
    pub quantity: Quantity,
    /// Value per run, `None` when the run lacks it.
    pub values: Vec<Option<f64>>,
    /// Ratio of each run to the first (`None` when either lacks it or the first is 0).
    pub ratios: Vec<Option<f64>>,
}

/// The rows of every `(key, quantity)` present in at least two runs, in first-seen order,
/// filtered by the `--only` prefixes.
pub(crate) fn rows(runs: &[&[Scalar]], only: &[String]) -> Vec<ScalarRow> {
    let mut keys: Vec<(&str, Quantity)> = Vec::new();
    for r in runs {
        for s in *r {
            if !keys.contains(&(s.key.as_str(), s.quantity)) {
                keys.push((&s.key, s.quantity));
            }
        }
    }
    let mut out = Vec::new();
    for (k, q) in keys {
        if !only.is_empty() && !only.iter().any(|p| k.starts_with(p.as_str())) {
            continue;
        }
        let values: Vec<Option<f64>> = runs
            .iter()
            .map(|r| {
                r.iter()
                    .find(|s| s.key == k && s.quantity == q)
                    .map(|s| s.value)
            })
            .collect();
        if values.iter().filter(|v| v.is_some()).count() < 2 {
            continue;
        }
        let ratios = values
            .iter()
            .map(|v| match (values[0], v) {
                (Some(b), Some(v)) if b > 0.0 => Some(v / b),
                _ => None,
            })
            .collect();
        out.push(ScalarRow {
            figure: k.to_string(),
            quantity: q,
            values,
            ratios,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    fn input(label: &str, f: crate::results::ResultFile) -> Input {
        Input {
            label: label.into(),
            source: label.into(),
            dir: None,
            loaded: Loaded::Result(Box::new(f)),
        }
    }

    #[test]
    fn every_cell_number_becomes_a_keyed_quantity() {
        let s = scalars_of(&input("a", sample::rtio_bench()));
        let r = match &sample::rtio_bench().result {
            RunResult::RtioBench(r) => r.as_ref().clone(),
            _ => unreachable!("the sample is an rtio_bench result"),
        };
        assert_eq!(s.len(), r.cells.len() * Quantity::CELL.len());
        let c = r.cell("spi", 6400, "2@400Hz", "thread").unwrap();
        let p99 = s
            .iter()
            .find(|s| s.key == "rtio/spi/6400/2@400Hz/thread" && s.quantity == Quantity::LatencyP99)
            .unwrap();
        assert_eq!(p99.value, c.latency_p99_ns as f64);
        let sweep = scalars_of(&input("s", sample::rtio_sweep()));
        assert!(
            sweep.iter().all(
                |s| s.quantity == Quantity::SustainedWorkUs && s.key.starts_with("rtio-sweep/")
            )
        );
        assert!(scalars_of(&input("c", sample::check())).is_empty());
    }

    #[test]
    fn rows_give_ratios_to_the_first_run_and_skip_zero_bases() {
        let mk = |v: f64, missed: f64| {
            vec![
                Scalar {
                    key: "rtio/x".into(),
                    quantity: Quantity::ProcessCpuPct,
                    value: v,
                },
                Scalar {
                    key: "rtio/x".into(),
                    quantity: Quantity::MissedEvents,
                    value: missed,
                },
            ]
        };
        let (a, b) = (mk(40.0, 0.0), mk(30.0, 12.0));
        let r = rows(&[&a, &b], &[]);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].ratios, vec![Some(1.0), Some(0.75)]);
        assert_eq!(r[1].ratios, vec![None, None], "no ratio to a zero base");
        assert!(rows(&[&a, &b], &["latency/".into()]).is_empty());
    }

    #[test]
    fn duplicate_cells_in_one_run_get_their_input_label() {
        let one = vec![Scalar {
            key: "rtio/k".into(),
            quantity: Quantity::LatencyMax,
            value: 1.0,
        }];
        let d = disambiguate(vec![("a".into(), one.clone()), ("b".into(), one)]);
        let keys: Vec<&str> = d.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, vec!["rtio/k (a)", "rtio/k (b)"]);
    }
}
