//! The demo's result (`kind: "demo_gimbal"`) and the control-quality figures it is made of.
//!
//! Errors are real angle minus reference angle, sample by sample (same sample number on
//! the 10 kHz grid), over every sample the real run exchanged. Step figures follow the
//! usual definitions: overshoot is the largest excursion past the target in percent of the
//! step; settling time is the time after the step until the angle stays within 2 % of the
//! step of the target (up to the axis's next step or the end of the run).
//!
//! ```
//! use preempt_gimbal::result::step_figures;
//! // A response that jumps to 1.1 and then settles to 1.0 after 3 samples.
//! let y = [0.0, 0.0, 1.1, 1.05, 1.0, 1.0, 1.0];
//! let f = step_figures(&y, 0.0, 1.0, 1).unwrap();
//! assert!((f.overshoot_pct - 10.0).abs() < 1e-9);
//! assert!((f.settling_ms - 0.3).abs() < 1e-9); // samples 2..4 are 100 µs apart
//! ```

use serde::{Deserialize, Serialize};

pub use preempt_rig::result::Ros2Counts;
use preempt_rig::result::{ExplainOutcome, TimeSummary};

use crate::control::{AXES, SAMPLE_NS, SAMPLE_S, Steps};
use crate::record::SampleRecord;
use preempt_rig::spawn::PlantCounters;

/// Settling band, fraction of the step.
const SETTLING_BAND: f64 = 0.02;
/// The series' finest spacing, samples (every 10th: 1 kHz), kept for the
/// [`SERIES_DENSE_S`] after each step (the step responses' plots).
pub(crate) const SERIES_EVERY: u64 = 10;
/// Seconds after each step kept at the finest spacing (3× the reference's ~100 ms settling).
pub const SERIES_DENSE_S: f64 = 0.3;
/// Points elsewhere in the series, at most (the tracking-error plot): a 60 s run's JSON
/// stays around 100 kB instead of 2 MB at 1 kHz.
pub const SERIES_SPARSE_POINTS: u64 = 1_000;

/// One axis's control quality.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AxisQuality {
    /// `pan` or `tilt`.
    pub name: String,
    /// Size of the axis's first scripted step, rad (0 without one).
    pub step_rad: f64,
    /// RMS of real − reference angle over the exchanged samples, rad.
    pub rms_error_rad: f64,
    /// Largest |real − reference|, rad.
    pub max_error_rad: f64,
    /// RMS error in percent of the step (`null` without a step).
    pub rms_error_pct_of_step: Option<f64>,
    /// Overshoot of the real response, % of the step.
    pub overshoot_pct: Option<f64>,
    /// Settling time (2 %) of the real response, ms.
    pub settling_ms: Option<f64>,
    /// The reference's overshoot, %.
    pub reference_overshoot_pct: Option<f64>,
    /// The reference's settling time, ms.
    pub reference_settling_ms: Option<f64>,
}

/// Sample bookkeeping: `exchanged + missed == expected`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleCounts {
    /// Samples the run should have had (10 kHz × its duration, up to where it stopped).
    pub expected: u64,
    /// Samples that exchanged with the plant.
    pub exchanged: u64,
    /// Samples that sent a stale voltage (the controllers had not answered the previous one).
    pub late_outputs: u64,
    /// Releases skipped (`sample` started too late: on_miss = Skip).
    pub missed: u64,
    /// Controller releases refused (the previous job still queued).
    pub refused_releases: u64,
}

/// Why samples were missed, as far as the records explain it: the sample before a gap is
/// looked at (it ran late, so the releases after it were skipped).
/// `exchange_overran + released_late + outside == missed` of [`SampleCounts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissCauses {
    /// Missed after a sample whose exchange took a whole period or more: the plant's bus
    /// answered late (the plant stalled, or its CPU was slow to wake).
    pub exchange_overran: u64,
    /// Missed after a sample that ran late for another reason: the controller's own thread
    /// started late (its CPU was taken) or ran long.
    pub released_late: u64,
    /// Missed before the first exchanged sample or after the last (start-up, a stop).
    pub outside: u64,
    /// Plant stalls (1 ms or more behind its grid) during the run.
    pub plant_stalls: u64,
}

/// Attributes the gaps in `real` (sorted by sample number) of a run of `expected` samples.
pub(crate) fn miss_causes(real: &[SampleRecord], expected: u64, plant_stalls: u64) -> MissCauses {
    let mut c = MissCauses {
        plant_stalls,
        ..MissCauses::default()
    };
    let (Some(first), Some(last)) = (real.first(), real.last()) else {
        c.outside = expected;
        return c;
    };
    c.outside = first.k + expected.saturating_sub(last.k + 1);
    for w in real.windows(2) {
        let gap = w[1].k.saturating_sub(w[0].k + 1);
        if gap == 0 {
            continue;
        }
        if w[0].exchange_ns >= SAMPLE_NS {
            c.exchange_overran += gap;
        } else {
            c.released_late += gap;
        }
    }
    c
}

/// Telemetry bookkeeping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TelemetryCounts {
    /// Samples written to `/gimbal/state`.
    pub written: u64,
    /// Samples the bridge refused (its ring was full): lost.
    pub lost: u64,
    /// Reference samples written to `/gimbal/reference`.
    pub reference_written: u64,
}

/// Down-sampled trajectories for plots (see [`series`]): real and reference angle per axis.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Time of each point, ms.
    pub t_ms: Vec<f64>,
    /// Real angles, `[pan, tilt]` per point, rad (`null` where the sample was missed).
    pub real_rad: Vec<[Option<f64>; 2]>,
    /// Reference angles, rad.
    pub reference_rad: Vec<[f64; 2]>,
    /// Setpoints, rad.
    pub setpoint_rad: Vec<[f64; 2]>,
}

/// `data` of a `demo_gimbal` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GimbalData {
    /// Run length asked for, s.
    pub duration_s: f64,
    /// The setpoint script.
    pub steps: String,
    /// Sensor noise seed (shared with the reference).
    pub seed: u64,
    /// `PREEMPT_SOFT=1`: SCHED_OTHER, no real-time guarantees: figures are not representative.
    pub soft: bool,
    /// Stopped early (Ctrl-C, SIGTERM, the plant died): figures cover what ran.
    pub interrupted: bool,
    /// Why the run stopped early, if it did.
    pub error: Option<String>,
    /// An optional output that could not be written (the MCAP recording's tail, the demo's
    /// own JSON): the figures are complete and kept, only that file is missing or cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
    /// The `/dev/cpu_dma_latency` target held during the run, µs (`null`: not held, idle
    /// CPUs could halt).
    #[serde(default)]
    pub cpu_dma_latency_us: Option<i32>,
    /// Stress applied during the run (`null`: idle).
    pub stress: Option<String>,
    /// The RTIO backend of the exchange.
    pub rtio_backend: String,
    /// Per axis.
    pub axes: Vec<AxisQuality>,
    /// Sample bookkeeping.
    pub samples: SampleCounts,
    /// Setpoints the controller took from Foxglove clients (`--foxglove`) and ROS 2
    /// publishers (`--ros2`): after the first, the run no longer follows the script the
    /// reference follows, so errors against the reference include the change.
    #[serde(default)]
    pub live_setpoints: u64,
    /// Of `live_setpoints`, those a later one for the same axis replaced in the same sample
    /// (never in force).
    #[serde(default)]
    pub live_setpoints_superseded: u64,
    /// Setpoints accepted (by `--ros2` or `--foxglove`) that the controller never took: still
    /// queued when the run ended. Accepted = `live_setpoints` + this.
    #[serde(default)]
    pub live_setpoints_not_taken: u64,
    /// The ROS 2 node of `--ros2` (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ros2: Option<Ros2Counts>,
    /// The setpoints Foxglove clients published (`--foxglove`; absent without it): accepted,
    /// refused by reason, undecodable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foxglove_setpoints: Option<preempt_rig::intake::IntakeCounts>,
    /// Why samples were missed.
    #[serde(default)]
    pub misses: MissCauses,
    /// Telemetry bookkeeping.
    pub telemetry: TelemetryCounts,
    /// `sample` (exchange excluded) + the controllers it released, per sample, ns.
    pub controller_cpu_per_sample_ns: TimeSummary,
    /// Share of one CPU the controller used at 10 kHz (mean CPU per sample / 100 µs), %.
    pub controller_cpu_pct: f64,
    /// The exchange's wall time per sample, ns.
    pub exchange_ns: TimeSummary,
    /// `sample`'s start − its release, ns.
    pub sample_lateness_ns: TimeSummary,
    /// The plant process.
    pub plant: PlantCounters,
    /// The controller app's accounting (`preempt::AppStats` as JSON).
    pub tasks: serde_json::Value,
    /// Down-sampled trajectories ([`series`]).
    pub series: Series,
    /// Response-time analysis of the controller app from its measured execution times
    /// (`{verdict, notes, report}`; `report` is `preempt_stats::rta::Report`, or
    /// `{"error": ..}`).
    #[serde(default)]
    pub rta: serde_json::Value,
    /// Why the controller's deadline misses were late (`explain`, `explain_skipped`).
    #[serde(flatten)]
    pub explained: ExplainOutcome,
}

impl GimbalData {
    /// What the run found about why its deadline misses were late, or why it could not say;
    /// `None` when explaining was not asked.
    pub fn explain_summary(&self) -> Option<String> {
        self.explained.summary()
    }
}

/// Step figures of one response.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepFigures {
    /// Overshoot, % of the step.
    pub overshoot_pct: f64,
    /// Settling time, ms (the whole window if it never settles).
    pub settling_ms: f64,
}

/// Step figures of `y` (one value per sample, the window from the step on) for a step
/// from `from` to `to` at index `at`.
pub fn step_figures(y: &[f64], from: f64, to: f64, at: usize) -> Option<StepFigures> {
    let size = to - from;
    if size == 0.0 || at >= y.len() {
        return None;
    }
    let window = &y[at..];
    let past = window
        .iter()
        .map(|v| (v - to) * size.signum())
        .fold(0.0_f64, f64::max);
    let band = SETTLING_BAND * size.abs();
    let last_out = window.iter().rposition(|v| (v - to).abs() > band);
    let settled_at = last_out.map_or(0, |i| i + 1);
    Some(StepFigures {
        overshoot_pct: 100.0 * past / size.abs(),
        settling_ms: settled_at as f64 * SAMPLE_S * 1e3,
    })
}

/// The window of `axis`'s first step: (from, to, first sample, end sample exclusive).
fn step_window(steps: &Steps, axis: usize, samples: u64) -> Option<(f64, f64, u64, u64)> {
    let (from, to, at) = steps.first_step(axis)?;
    let end = steps
        .0
        .iter()
        .filter(|s| s.axis == axis && s.at_sample > at)
        .map(|s| s.at_sample)
        .min()
        .unwrap_or(samples)
        .min(samples);
    (at < end).then_some((from, to, at, end))
}

/// Angle per sample number (`None` where the run has no sample).
fn by_sample(records: &[SampleRecord], n: u64, axis: usize) -> Vec<Option<f64>> {
    let mut v = vec![None; usize::try_from(n).unwrap_or(0)];
    for r in records {
        if let Some(slot) = usize::try_from(r.k).ok().and_then(|k| v.get_mut(k)) {
            *slot = Some(r.angle[axis]);
        }
    }
    v
}

/// The per-axis quality of `real` against `reference` (indexed by sample number).
pub(crate) fn axis_quality(
    steps: &Steps,
    real: &[SampleRecord],
    reference: &[SampleRecord],
) -> Vec<AxisQuality> {
    let n = reference.len() as u64;
    (0..2)
        .map(|a| {
            let real_a = by_sample(real, n, a);
            let ref_a: Vec<f64> = reference.iter().map(|r| r.angle[a]).collect();
            let (mut sq, mut max, mut count) = (0.0, 0.0_f64, 0_u64);
            for (r, e) in real_a.iter().zip(&ref_a) {
                if let Some(r) = r {
                    let d = r - e;
                    sq += d * d;
                    max = max.max(d.abs());
                    count += 1;
                }
            }
            let rms = if count > 0 {
                (sq / count as f64).sqrt()
            } else {
                0.0
            };
            let mut q = AxisQuality {
                name: AXES[a].to_string(),
                rms_error_rad: rms,
                max_error_rad: max,
                ..AxisQuality::default()
            };
            if let Some((from, to, at, end)) = step_window(steps, a, n) {
                let (at_i, end_i) = (at as usize, end as usize);
                q.step_rad = to - from;
                q.rms_error_pct_of_step = Some(100.0 * rms / (to - from).abs());
                // A missed real sample takes the previous value (a zero-order hold).
                let mut held = Vec::with_capacity(end_i - at_i);
                let mut last = real_a
                    .get(at_i.saturating_sub(1))
                    .copied()
                    .flatten()
                    .unwrap_or(from);
                for v in &real_a[at_i..end_i] {
                    last = v.unwrap_or(last);
                    held.push(last);
                }
                if let Some(f) = step_figures(&held, from, to, 0) {
                    q.overshoot_pct = Some(f.overshoot_pct);
                    q.settling_ms = Some(f.settling_ms);
                }
                if let Some(f) = step_figures(&ref_a[at_i..end_i], from, to, 0) {
                    q.reference_overshoot_pct = Some(f.overshoot_pct);
                    q.reference_settling_ms = Some(f.settling_ms);
                }
            }
            q
        })
        .collect()
}

/// The series of real and reference angles: 1 kHz for [`SERIES_DENSE_S`] after each step of
/// `steps`, at most [`SERIES_SPARSE_POINTS`] points elsewhere.
pub fn series(steps: &Steps, real: &[SampleRecord], reference: &[SampleRecord]) -> Series {
    let n = reference.len() as u64;
    let (pan, tilt) = (by_sample(real, n, 0), by_sample(real, n, 1));
    let sparse = (n / SERIES_SPARSE_POINTS)
        .max(1)
        .next_multiple_of(SERIES_EVERY);
    let dense = (SERIES_DENSE_S / SAMPLE_S).round() as u64;
    let steps: Vec<u64> = steps.0.iter().map(|s| s.at_sample).collect();
    let keep = |k: u64| {
        k % sparse == 0
            || (k % SERIES_EVERY == 0 && steps.iter().any(|&at| k >= at && k < at + dense))
    };
    let mut s = Series::default();
    for r in reference.iter().filter(|r| keep(r.k)) {
        let k = r.k as usize;
        s.t_ms.push(r.k as f64 * SAMPLE_S * 1e3);
        s.real_rad.push([pan[k], tilt[k]]);
        s.reference_rad.push(r.angle);
        s.setpoint_rad.push(r.setpoint);
    }
    s
}

/// CPU per sample: each sample's own time plus its controllers' (reported by the next
/// sample's record).
pub(crate) fn cpu_per_sample(real: &[SampleRecord]) -> Vec<u64> {
    real.windows(2)
        .filter(|w| w[1].k == w[0].k + 1)
        .map(|w| w[0].sample_ns + w[1].controllers_prev_ns)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_explain_outcome_is_flattened_into_the_result() {
        let mut d = GimbalData {
            explained: ExplainOutcome::of(Some(Err("kernel tracing unavailable".into()))),
            ..GimbalData::default()
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["explain_skipped"], "kernel tracing unavailable");
        assert!(
            v.get("explain").is_none() && v.get("explained").is_none(),
            "{v}"
        );
        assert_eq!(serde_json::from_value::<GimbalData>(v).unwrap(), d);
        d.explained = ExplainOutcome::of(Some(Ok(preempt::explain::Report::default())));
        let v = serde_json::to_value(&d).unwrap();
        assert!(
            v["explain"].is_object() && v.get("explain_skipped").is_none(),
            "{v}"
        );
        assert_eq!(serde_json::from_value::<GimbalData>(v).unwrap(), d);
        assert_eq!(ExplainOutcome::of(None).summary(), None);
    }

    fn rec(k: u64, pan: f64) -> SampleRecord {
        SampleRecord {
            k,
            angle: [pan, 0.0],
            ..SampleRecord::default()
        }
    }

    #[test]
    fn errors_against_the_reference_skip_missed_samples() {
        let steps: Steps = "pan=1@0.0001s".parse().unwrap();
        let reference: Vec<_> = (0..6)
            .map(|k| rec(k, if k >= 1 { 1.0 } else { 0.0 }))
            .collect();
        let mut real: Vec<_> = (0..6)
            .map(|k| rec(k, if k >= 2 { 1.0 } else { 0.0 }))
            .collect();
        real.remove(4); // missed
        let q = axis_quality(&steps, &real, &reference);
        assert_eq!(q[0].max_error_rad, 1.0);
        assert!((q[0].rms_error_rad - (1.0_f64 / 5.0).sqrt()).abs() < 1e-12);
        assert_eq!(q[0].step_rad, 1.0);
        assert_eq!(q[0].reference_settling_ms, Some(0.0));
        assert!((q[0].settling_ms.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(q[1].step_rad, 0.0);
        assert_eq!(q[1].overshoot_pct, None);
    }

    #[test]
    fn misses_are_attributed_to_the_sample_before_the_gap() {
        let mut r: Vec<_> = [1, 2, 5, 6, 8].iter().map(|&k| rec(k, 0.0)).collect();
        r[1].exchange_ns = SAMPLE_NS; // sample 2's exchange overran: 3, 4 skipped
        let c = miss_causes(&r, 10, 1);
        assert_eq!(c.exchange_overran, 2);
        assert_eq!(c.released_late, 1); // 7
        assert_eq!(c.outside, 1 + 1); // 0 and 9
        assert_eq!(c.plant_stalls, 1);
        assert_eq!(miss_causes(&[], 4, 0).outside, 4);
    }

    #[test]
    fn cpu_pairs_consecutive_samples_only() {
        let mut a = rec(0, 0.0);
        a.sample_ns = 10;
        let mut b = rec(1, 0.0);
        b.sample_ns = 20;
        b.controllers_prev_ns = 5;
        let mut c = rec(3, 0.0);
        c.controllers_prev_ns = 7;
        assert_eq!(cpu_per_sample(&[a, b, c]), vec![15]);
    }
}
