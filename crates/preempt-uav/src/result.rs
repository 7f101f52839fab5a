//! The figures of one flight (a cell of the `demo_uav` result): release latency, missed
//! periods, compute time, and flight quality against the reference flight.
//!
//! Position error at step k is the distance between the positions the two flights sensed at
//! their step k (the motion-capture reading, noise σ = 1 mm per axis in both); attitude
//! error is the rotation angle between their sensed attitudes. Steps the real flight missed
//! have no error (they are counted as missed periods instead).

use serde::{Deserialize, Serialize};

use preempt_rig::result::{ExplainOutcome, TimeSummary};
use preempt_rig::spawn::PlantCounters;

use crate::control::{Mission, PERIOD_S};
use crate::model::attitude_distance;
use crate::record::FlightRecord;

/// Five numbers of a distribution, for a box plot (units in the field's name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Quartiles {
    /// Smallest.
    pub min: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Quartiles {
    /// Of `values` (nearest-rank percentiles; all zero when empty).
    pub fn of(mut values: Vec<f64>) -> Quartiles {
        if values.is_empty() {
            return Quartiles::default();
        }
        values.sort_by(f64::total_cmp);
        let at =
            |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        Quartiles {
            min: values[0],
            p25: at(0.25),
            p50: at(0.5),
            p75: at(0.75),
            p99: at(0.99),
            max: values[values.len() - 1],
        }
    }
}

impl FlightCell {
    /// The `--ros2` node's summary line (none without `--ros2`).
    pub fn ros2_line(&self) -> Option<String> {
        let r = self.ros2.as_ref()?;
        Some(format!(
            "ROS 2 node {} (domain {}): {} messages published, {} dropped before DDS, {} \
             refused by it; waypoints {} taken ({} superseded in the same step), {} never \
             taken, {} refused, {} undecodable{}",
            r.node,
            r.domain_id,
            r.published,
            r.dropped,
            r.failed,
            self.live_waypoints,
            self.live_waypoints_superseded,
            self.live_waypoints_not_taken,
            r.setpoints_rejected,
            r.setpoint_errors,
            if self.live_waypoints > 0 {
                " (the flight departed from the mission: its errors include the detour)"
            } else {
                ""
            }
        ))
    }
}

/// Per-step series of a flight, for the report's time series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Mission time of each step, s.
    pub t_s: Vec<f32>,
    /// Release latency, µs.
    pub latency_us: Vec<f32>,
    /// Position error against the reference, m.
    pub position_error_m: Vec<f32>,
}

/// One flight's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlightCell {
    /// The policy row, as the study names it (e.g. `SCHED_FIFO 99`).
    pub policy: String,
    /// Priority (FIFO/RR) or nice value (OTHER); none for DEADLINE.
    pub priority_or_nice: Option<i32>,
    /// SCHED_DEADLINE runtime, µs.
    pub runtime_us: Option<u64>,
    /// `none`, or the stressors (e.g. `cpu,io,memory,sched`).
    pub stress: String,
    /// Flown in soft mode (SCHED_OTHER executors, no policy applied): not real-time figures.
    pub soft: bool,
    /// The flight stopped early (Ctrl-C, the simulator died): its figures cover what flew.
    pub interrupted: bool,
    /// Why it stopped early, or why it did not fly.
    pub error: Option<String>,
    /// An optional output that could not be written (the MCAP recording's tail): the
    /// figures are complete and kept, only that file is missing or cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
    /// Release latency (job start − scheduled release), ns, from preempt's own accounting of
    /// the `control` task (the runtime's release times); the per-step series and box plot
    /// measure against the app's 4 ms grid instead (see `latency_box_us`).
    pub latency: TimeSummary,
    /// The cascade's compute time per step, ns.
    pub compute_ns: TimeSummary,
    /// The `control` job's execution time, ns, from preempt's accounting: its CPU time
    /// (exchanges, waypoint, cascade, telemetry) when measured, else end − start. The
    /// controller's CPU per step (`scripts/bench_ros2.sh uav` compares it with and without
    /// `--ros2`).
    #[serde(default)]
    pub control_exec_ns: TimeSummary,
    /// Both bus transactions per step, ns.
    pub exchange_ns: TimeSummary,
    /// Control steps due.
    pub expected_steps: u64,
    /// Control steps run.
    pub flown_steps: u64,
    /// Releases missed (skipped while a job overran, or never run).
    pub missed_periods: u64,
    /// RMS position error against the reference over the whole flight, m.
    pub rms_position_error_m: f64,
    /// RMS position error over the square only, m (the quality target).
    pub rms_position_error_square_m: Option<f64>,
    /// Largest position error, m.
    pub max_position_error_m: f64,
    /// Largest attitude error, rad.
    pub max_attitude_error_rad: f64,
    /// The vehicle crashed (ground contact at speed, or tilt beyond 60°).
    pub crashed: bool,
    /// The reference flight crashed (it never should).
    pub reference_crashed: bool,
    /// Latency distribution for the box plot, µs: job start − release on the grid the
    /// set-up job starts just after the app's gate (under-reads the runtime's figure by that
    /// offset, a few µs).
    pub latency_box_us: Quartiles,
    /// Position-error distribution for the box plot, m.
    pub position_error_box_m: Quartiles,
    /// Telemetry records lost on the bridge (a full ring).
    pub telemetry_lost: u64,
    /// Live waypoints (`--ros2`'s `/uav/waypoint`) the controller took: a flight with any
    /// departed from the mission, so its quality figures against the reference measure the
    /// detour too.
    #[serde(default)]
    pub live_waypoints: u64,
    /// Of `live_waypoints`, those a later one replaced in the same control step (never in
    /// force).
    #[serde(default)]
    pub live_waypoints_superseded: u64,
    /// Waypoints the node accepted that the controller never took: still queued when the
    /// flight ended. `ros2.setpoints_accepted` = `live_waypoints` + this.
    #[serde(default)]
    pub live_waypoints_not_taken: u64,
    /// The `--ros2` node's counts (none without `--ros2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ros2: Option<preempt_rig::result::Ros2Counts>,
    /// The simulator's counters (steps, late steps, its real-time settings).
    pub sim: PlantCounters,
    /// The RTIO backend of the link.
    pub rtio_backend: String,
    /// Per-step series (kept in single-flight files and for the matrix's worst cell).
    pub series: Option<Series>,
    /// Why the control task's deadline misses were late (`explain`, `explain_skipped`).
    #[serde(flatten)]
    pub explained: ExplainOutcome,
}

/// Quality of `flight` against `reference` (matched by step number) into `cell`.
pub(crate) fn fill_quality(
    cell: &mut FlightCell,
    mission: &Mission,
    flight: &[FlightRecord],
    reference: &[FlightRecord],
) {
    let (a, b) = mission.square_window();
    let mut series = Series::default();
    let (mut sum, mut n, mut sum_sq, mut n_sq) = (0.0, 0_u64, 0.0, 0_u64);
    let (mut max_p, mut max_a) = (0.0_f64, 0.0_f64);
    let mut errors = Vec::with_capacity(flight.len());
    for r in flight {
        let Some(q) = reference.get(r.k as usize).filter(|q| q.k == r.k) else {
            continue;
        };
        let e = (0..3)
            .map(|i| f64::from(r.sensors.p[i] - q.sensors.p[i]).powi(2))
            .sum::<f64>()
            .sqrt();
        let att = attitude_distance(r.sensors.rpy.map(f64::from), q.sensors.rpy.map(f64::from));
        let t = r.k as f64 * PERIOD_S;
        sum += e * e;
        n += 1;
        if (a..b).contains(&t) {
            sum_sq += e * e;
            n_sq += 1;
        }
        max_p = max_p.max(e);
        max_a = max_a.max(att);
        errors.push(e);
        series.t_s.push(t as f32);
        series.latency_us.push(r.lateness_ns as f32 / 1e3);
        series.position_error_m.push(e as f32);
    }
    cell.rms_position_error_m = if n > 0 { (sum / n as f64).sqrt() } else { 0.0 };
    cell.rms_position_error_square_m = (n_sq > 0).then(|| (sum_sq / n_sq as f64).sqrt());
    cell.max_position_error_m = max_p;
    cell.max_attitude_error_rad = max_a;
    cell.crashed = flight.iter().any(|r| r.sensors.crashed);
    cell.reference_crashed = reference.iter().any(|r| r.sensors.crashed);
    cell.position_error_box_m = Quartiles::of(errors);
    cell.latency_box_us =
        Quartiles::of(flight.iter().map(|r| r.lateness_ns as f64 / 1e3).collect());
    cell.latency = TimeSummary::of(flight.iter().map(|r| r.lateness_ns));
    cell.compute_ns = TimeSummary::of(flight.iter().map(|r| r.compute_ns));
    cell.exchange_ns = TimeSummary::of(flight.iter().map(|r| r.exchange_ns));
    cell.flown_steps = flight.len() as u64;
    cell.series = Some(series);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::SensorFrame;

    fn rec(k: u64, x: f32, late: u64) -> FlightRecord {
        FlightRecord {
            k,
            lateness_ns: late,
            sensors: SensorFrame {
                p: [x, 0.0, 1.0],
                ..SensorFrame::default()
            },
            ..FlightRecord::default()
        }
    }

    #[test]
    fn errors_match_steps_by_number_and_skip_missed_ones() {
        let m = Mission::default();
        let reference: Vec<_> = (0..10).map(|k| rec(k, 0.0, 0)).collect();
        // steps 3 and 4 missed; 0.03 m off from step 5 on
        let flight: Vec<_> = [0, 1, 2, 5, 6]
            .iter()
            .map(|&k| rec(k, if k >= 5 { 0.03 } else { 0.0 }, 1000 * k))
            .collect();
        let mut c = FlightCell::default();
        fill_quality(&mut c, &m, &flight, &reference);
        assert_eq!(c.flown_steps, 5);
        assert!((c.max_position_error_m - 0.03).abs() < 1e-6);
        let rms = (2.0 * 0.03_f64.powi(2) / 5.0).sqrt();
        assert!((c.rms_position_error_m - rms).abs() < 1e-6);
        assert_eq!(c.latency.max, 6000);
        assert_eq!(c.series.as_ref().map(|s| s.t_s.len()), Some(5));
        assert!(!c.crashed);
        assert_eq!(c.rms_position_error_square_m, None, "no step in the square");
    }

    #[test]
    fn quartiles_by_nearest_rank() {
        let q = Quartiles::of((1..=100).map(f64::from).collect());
        assert_eq!(
            (q.min, q.p25, q.p50, q.p75, q.p99, q.max),
            (1.0, 25.0, 50.0, 75.0, 99.0, 100.0)
        );
    }
}
