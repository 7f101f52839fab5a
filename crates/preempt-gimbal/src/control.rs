//! The four controllers (a current PI and a position PD per axis, the thesis's cascade,
//! figure 7.4) and the scripted setpoint steps. Plain state machines: the real app and the
//! reference call the same code with the same inputs.
//!
//! Tuning, from the plant model ([`crate::model::AxisParams`]):
//!
//! * **current loop, 10 kHz**: the armature is `1/(R + Ls)`; a PI with `Kp = L ωc`,
//!   `Ki = R ωc` cancels its pole and leaves an integrator crossing over at `ωc`. With
//!   `ωc = 2π·500 rad/s` and the loop's delay (one sample plus the bus, about 120 µs:
//!   0.38 rad of phase at ωc) the phase margin is about 68°: well damped, and robust to the
//!   late samples this machine produces (the thesis had to lower its current gain for the
//!   jitter it met, §7.4).
//! * **position loop, 1 kHz**: with the current loop fast against it, the axis is
//!   `N Kt / (J s²)`; a PD (derivative on the measurement, low-pass filtered at 2 ms
//!   against the encoder's quantisation) places the closed-loop poles at
//!   `ωn = 2π·10 rad/s`, `ζ = 0.9`: `Kp = ωn² J / (N Kt)`, `Kd = 2 ζ ωn J / (N Kt)`.
//!   The current reference saturates at ±3 A (half the stall current).
//!
//! ```
//! use preempt_gimbal::control::Steps;
//! let s: Steps = "pan=0.5@0.2s,tilt=-0.3@1.0s".parse().unwrap();
//! assert_eq!(s.setpoint(0, 1999), 0.0);
//! assert_eq!(s.setpoint(0, 2000), 0.5);
//! assert_eq!(s.setpoint(1, 10_000), -0.3);
//! assert!("roll=1@0s".parse::<Steps>().is_err());
//! ```

use std::fmt;
use std::str::FromStr;

use preempt_rig::intake::Refusal;

use crate::model::{AxisParams, ENCODER_RAD_PER_COUNT};

/// Sample period of the current loop, s (10 kHz).
pub const SAMPLE_S: f64 = 100e-6;
/// Sample period, ns.
pub(crate) const SAMPLE_NS: u64 = 100_000;
/// The position loop runs every this many samples (1 kHz).
pub(crate) const POSITION_EVERY: u64 = 10;
/// Current loop crossover, rad/s.
const CURRENT_WC: f64 = std::f64::consts::TAU * 500.0;
/// Position loop natural frequency, rad/s, and damping.
const POSITION_WN: f64 = std::f64::consts::TAU * 10.0;
const POSITION_ZETA: f64 = 0.9;
/// Derivative filter time constant, s.
const DERIVATIVE_TAU: f64 = 2e-3;
/// Current reference limit, A.
const I_MAX: f64 = 3.0;

/// Axis names, in the order of every two-element array of the crate.
pub const AXES: [&str; 2] = ["pan", "tilt"];

/// An encoder count in radians.
pub(crate) fn counts_to_rad(counts: i32) -> f64 {
    f64::from(counts) * ENCODER_RAD_PER_COUNT
}

/// PI current controller with anti-windup (conditional integration): A → V.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CurrentPi {
    kp: f64,
    ki: f64,
    v_max: f64,
    integral: f64,
}

impl CurrentPi {
    /// Tuned for `p` (module docs).
    pub(crate) fn for_axis(p: &AxisParams) -> CurrentPi {
        CurrentPi {
            kp: p.l * CURRENT_WC,
            ki: p.r * CURRENT_WC,
            v_max: p.v_max,
            integral: 0.0,
        }
    }

    /// One 100 µs step: the voltage for current `reference` given the `measured` current.
    pub(crate) fn update(&mut self, reference: f64, measured: f64) -> f64 {
        let error = reference - measured;
        let candidate = self.integral + error * SAMPLE_S;
        let unclamped = self.kp * error + self.ki * candidate;
        if unclamped.abs() < self.v_max {
            self.integral = candidate; // integrate only when not saturated
        }
        (self.kp * error + self.ki * self.integral).clamp(-self.v_max, self.v_max)
    }
}

/// PD position controller, filtered derivative on the measurement: rad → A.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PositionPd {
    kp: f64,
    kd: f64,
    last: Option<f64>,
    speed: f64,
}

impl PositionPd {
    /// Tuned for `p` (module docs).
    pub(crate) fn for_axis(p: &AxisParams) -> PositionPd {
        let gain = p.torque_per_amp();
        PositionPd {
            kp: POSITION_WN * POSITION_WN * p.j_total() / gain,
            kd: 2.0 * POSITION_ZETA * POSITION_WN * p.j_total() / gain,
            last: None,
            speed: 0.0,
        }
    }

    /// One 1 ms step: the current reference for `setpoint` given the measured angle.
    pub(crate) fn update(&mut self, setpoint: f64, theta: f64) -> f64 {
        let dt = SAMPLE_S * POSITION_EVERY as f64;
        if let Some(last) = self.last {
            let raw = (theta - last) / dt;
            self.speed += (raw - self.speed) * dt / (DERIVATIVE_TAU + dt);
        }
        self.last = Some(theta);
        (self.kp * (setpoint - theta) - self.kd * self.speed).clamp(-I_MAX, I_MAX)
    }
}

/// One axis's cascade: the position PD feeding the current PI, and the current reference
/// between them (what the thesis's figure 7.4 chains).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cascade {
    pi: CurrentPi,
    pd: PositionPd,
    iref: f64,
}

impl Cascade {
    /// Tuned for `p`, at rest.
    pub(crate) fn for_axis(p: &AxisParams) -> Cascade {
        Cascade {
            pi: CurrentPi::for_axis(p),
            pd: PositionPd::for_axis(p),
            iref: 0.0,
        }
    }

    /// The position loop (every 10th sample): returns the new current reference.
    pub(crate) fn position(&mut self, setpoint: f64, angle: f64) -> f64 {
        self.pd.update(setpoint, angle)
    }

    /// The current loop (every sample), with a new current reference when the position loop
    /// chained it: the voltage command.
    pub(crate) fn current(&mut self, iref: Option<f64>, measured: f64) -> f32 {
        if let Some(r) = iref {
            self.iref = r;
        }
        self.pi.update(self.iref, measured) as f32
    }
}

/// One scripted setpoint step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// 0 pan, 1 tilt.
    pub axis: usize,
    /// New setpoint, rad.
    pub rad: f64,
    /// The sample from which it holds.
    pub at_sample: u64,
}

/// The setpoint range of either axis, rad: ±π, half a turn either way from the zero the
/// run starts at. The position loop has no wrap-around: a setpoint of 100 rad winds the
/// axis sixteen turns (issue 40: a ROS 2 setpoint of 1e308 wound the tilt axis past ten
/// turns in 3 s).
pub const SETPOINT_LIMIT_RAD: f64 = std::f64::consts::PI;

/// Checks a setpoint angle: the one check of `--steps`, ROS 2 and Foxglove setpoints alike.
/// -0.0 is 0.
///
/// # Errors
/// A NaN ([`Refusal::Nan`]) or an angle beyond ±[`SETPOINT_LIMIT_RAD`], an infinity
/// included ([`Refusal::OutOfRange`]), with a message naming the limit.
pub fn check_setpoint(rad: f64) -> Result<f64, (Refusal, String)> {
    if rad.is_nan() {
        return Err((
            Refusal::Nan,
            "the setpoint is NaN; it must be within ±π rad".into(),
        ));
    }
    if rad.abs() > SETPOINT_LIMIT_RAD {
        return Err((
            Refusal::OutOfRange,
            // 1e308 as `1e308`, not as its 309 digits.
            if rad.abs() < 1e6 {
                format!("the setpoint {rad} rad is beyond ±π rad")
            } else {
                format!("the setpoint {rad:e} rad is beyond ±π rad")
            },
        ));
    }
    Ok(rad)
}

/// Scripted steps: `pan=0.5@0.2s,tilt=-0.3@1.0s` (times in s, or with `ms`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Steps(pub Vec<Step>);

impl Steps {
    /// The default script: pan to 0.5 rad at 0.2 s, tilt to −0.3 rad at 1.0 s.
    pub(crate) fn default_script() -> Steps {
        "pan=0.5@0.2s,tilt=-0.3@1.0s"
            .parse()
            .unwrap_or_else(|_| Steps::default())
    }

    /// The setpoint of `axis` at sample `k` (the last step at or before it; 0 before any).
    pub fn setpoint(&self, axis: usize, k: u64) -> f64 {
        self.0
            .iter()
            .filter(|s| s.axis == axis && s.at_sample <= k)
            .max_by_key(|s| s.at_sample)
            .map_or(0.0, |s| s.rad)
    }

    /// The first step of `axis`: (from, to, sample), if any.
    pub fn first_step(&self, axis: usize) -> Option<(f64, f64, u64)> {
        let s = self
            .0
            .iter()
            .filter(|s| s.axis == axis)
            .min_by_key(|s| s.at_sample)?;
        let from = match s.at_sample.checked_sub(1) {
            Some(before) => self.setpoint(axis, before),
            None => 0.0,
        };
        Some((from, s.rad, s.at_sample))
    }
}

impl FromStr for Steps {
    type Err = String;

    fn from_str(s: &str) -> Result<Steps, String> {
        let mut steps: Vec<Step> = Vec::new();
        let mut parts: Vec<&str> = Vec::new();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!(
                    "--steps '{s}': an empty step (a stray comma?); give AXIS=RAD@TIME steps \
                     separated by single commas (e.g. pan=0.5@0.2s,tilt=-0.3@1s)"
                ));
            }
            let bad = || {
                format!(
                    "--steps: '{part}' is not AXIS=RAD@TIME (e.g. pan=0.5@0.2s, tilt=-0.3@1000ms)"
                )
            };
            let (axis, rest) = part.split_once('=').ok_or_else(bad)?;
            let (rad, at) = rest.split_once('@').ok_or_else(bad)?;
            let axis = AXES
                .iter()
                .position(|a| *a == axis.trim())
                .ok_or_else(|| format!("--steps: axis '{axis}' is not pan or tilt"))?;
            let rad: f64 = rad.trim().parse().map_err(|_| bad())?;
            let rad =
                check_setpoint(rad).map_err(|(_, why)| format!("--steps: '{part}': {why}"))?;
            let at = at.trim();
            let seconds: f64 = if let Some(ms) = at.strip_suffix("ms") {
                ms.parse::<f64>().map_err(|_| bad())? / 1e3
            } else {
                at.strip_suffix('s')
                    .unwrap_or(at)
                    .parse()
                    .map_err(|_| bad())?
            };
            if !(0.0..86_400.0).contains(&seconds) {
                return Err(format!(
                    "--steps: '{part}': the time must be 0 ≤ t < 86400 s"
                ));
            }
            let at_sample = (seconds / SAMPLE_S).round() as u64;
            // Two steps of one axis at one instant: only one could be taken, silently.
            if let Some(i) = steps
                .iter()
                .position(|o| o.axis == axis && o.at_sample == at_sample)
            {
                return Err(format!(
                    "--steps: '{}' and '{part}' both set {} at {} s; keep one",
                    parts[i],
                    AXES[axis],
                    at_sample as f64 * SAMPLE_S
                ));
            }
            parts.push(part);
            steps.push(Step {
                axis,
                rad,
                at_sample,
            });
        }
        Ok(Steps(steps))
    }
}

impl fmt::Display for Steps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(
                f,
                "{}={}@{}s",
                AXES[s.axis],
                s.rad,
                s.at_sample as f64 * SAMPLE_S
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Plant, STEP_S};

    /// The cascade on the model with ideal timing (plant stepped 4× per sample, voltages
    /// applied at once): the 0.5 rad step settles within 2 % and overshoots little.
    #[test]
    fn cascade_is_well_damped_on_the_model() {
        let mut plant = Plant::new(1);
        let params = [plant.axes[0].p, plant.axes[1].p];
        let mut pi = params.map(|p| CurrentPi::for_axis(&p));
        let mut pd = params.map(|p| PositionPd::for_axis(&p));
        let mut iref = [0.0; 2];
        let mut volts = [0.0; 2];
        let mut peak: f64 = 0.0;
        for k in 0..5000_u64 {
            for _ in 0..4 {
                plant.step(volts);
            }
            for a in 0..2 {
                let theta = counts_to_rad(plant.axes[a].encoder_counts());
                if k % POSITION_EVERY == 0 {
                    iref[a] = pd[a].update(if a == 0 { 0.5 } else { -0.3 }, theta);
                }
                volts[a] = pi[a].update(iref[a], plant.axes[a].current_reading());
            }
            peak = peak.max(plant.axes[0].theta);
        }
        assert!((plant.time_s() - 5000.0 * 4.0 * STEP_S).abs() < 1e-9);
        assert!(
            (plant.axes[0].theta - 0.5).abs() < 0.01,
            "{}",
            plant.axes[0].theta
        );
        assert!(
            (plant.axes[1].theta + 0.3).abs() < 0.01,
            "{}",
            plant.axes[1].theta
        );
        assert!(peak < 0.5 * 1.05, "overshoot: peak {peak}");
    }

    #[test]
    fn steps_parse_and_print() {
        let s: Steps = "pan=0.5@200ms, tilt=-0.3@1s".parse().unwrap();
        assert_eq!(s.0.len(), 2);
        assert_eq!(s.0[0].at_sample, 2000);
        assert_eq!(s.to_string(), "pan=0.5@0.2s,tilt=-0.3@1s");
        assert_eq!(s.first_step(1), Some((0.0, -0.3, 10_000)));
        for bad in ["pan=x@1s", "pan=0.5", "pan=9@1s", "pan=0.1@-1s"] {
            assert!(bad.parse::<Steps>().is_err(), "{bad}");
        }
    }

    /// Issue 40: the range `--steps` and the network setpoints share.
    #[test]
    fn setpoints_are_checked_against_plus_minus_pi() {
        use std::f64::consts::PI;
        assert_eq!(check_setpoint(PI), Ok(PI));
        assert_eq!(check_setpoint(-PI), Ok(-PI));
        assert_eq!(check_setpoint(0.25), Ok(0.25));
        let z = check_setpoint(-0.0).unwrap();
        assert!(z == 0.0 && z.is_sign_negative(), "-0.0 is in range");
        for far in [PI + 1e-12, -PI - 1e-12, 1e308, -1e308, 100.0] {
            let (why, msg) = check_setpoint(far).unwrap_err();
            assert_eq!(why, Refusal::OutOfRange, "{far}");
            assert!(msg.contains("±π"), "{msg}");
        }
        for inf in [f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(check_setpoint(inf).unwrap_err().0, Refusal::OutOfRange);
        }
        assert_eq!(check_setpoint(f64::NAN).unwrap_err().0, Refusal::Nan);
        // `--steps` goes through the same check.
        let e = "tilt=1e308@1s".parse::<Steps>().unwrap_err();
        assert_eq!(
            e,
            "--steps: 'tilt=1e308@1s': the setpoint 1e308 rad is beyond ±π rad"
        );
        assert!("pan=NaN@1s".parse::<Steps>().unwrap_err().contains("NaN"));
        assert!("pan=3.14159@1s".parse::<Steps>().is_ok());
    }

    /// Issue 40, item 5: `--steps ,,` and a duplicate step ran with exit 0.
    #[test]
    fn empty_and_duplicate_steps_are_refused() {
        for bad in [",,", "", "pan=0.5@1s,", "pan=0.5@1s,,tilt=0.1@2s"] {
            let e = bad.parse::<Steps>().unwrap_err();
            assert!(e.contains("an empty step (a stray comma?)"), "{bad}: {e}");
        }
        let e = "pan=0.5@1s,tilt=0.1@1s,pan=0.3@1000ms"
            .parse::<Steps>()
            .unwrap_err();
        assert_eq!(
            e,
            "--steps: 'pan=0.5@1s' and 'pan=0.3@1000ms' both set pan at 1 s; keep one"
        );
        // One axis at two times, or two axes at one time, are distinct steps.
        assert_eq!(
            "pan=0.5@1s,pan=0.3@2s,tilt=0.1@1s"
                .parse::<Steps>()
                .unwrap()
                .0
                .len(),
            3
        );
    }
}
