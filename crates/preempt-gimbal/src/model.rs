//! The plant: two axes (pan, tilt) of a JIWY-like camera gimbal, each a DC motor driving
//! its load through a gearbox, integrated with explicit Euler.
//!
//! Per axis, in load coordinates (θ load angle, ω load speed, i armature current, N gear
//! ratio, motor angle = N θ):
//!
//! ```text
//!   L di/dt = sat(V) - R i - Ke N ω                       (armature, back-EMF)
//!   J dω/dt = N Kt i - b ω - Tc sgn(ω)                    (J = J_load + N² J_rotor)
//!   dθ/dt   = ω
//! ```
//!
//! Coulomb friction sticks: at rest, the axis stays at rest while the drive torque
//! `|N Kt i| <= Tc`; a step that would carry ω through zero under friction stops it at zero
//! (explicit Euler would otherwise chatter around zero speed).
//!
//! Sensors, as on the robot: a 13-bit encoder on the load shaft (766.6 µrad per count, the
//! resolution the thesis measured, seed `004_*` §7.4) and a current sensor with Gaussian
//! noise drawn from a seeded generator, one draw per axis per step, so that a run's noise
//! depends only on the seed and the step count (the reference reproduces it bit for bit).
//!
//! The 40 kHz step follows the thesis: its 20-sim model diverged under explicit Euler at
//! 10 kHz with aggressive gains and was run at 40 kHz (§7.1). With the electrical time
//! constant below (L/R = 100 µs) a 100 µs step sits at Euler's stability edge for the
//! current; 25 µs (h/τ = 0.25) is comfortably inside it.
//!
//! ```
//! use preempt_gimbal::model::{Plant, STEP_S};
//! let mut p = Plant::new(1);
//! for _ in 0..400 {
//!     p.step([6.0, 0.0]); // 10 ms at 6 V on pan
//! }
//! assert!(p.axes[0].omega > 0.0 && p.axes[1].omega == 0.0);
//! assert_eq!(p.steps, 400);
//! assert!((p.time_s() - 400.0 * STEP_S).abs() < 1e-12);
//! ```

use preempt_rig::rng::Rng;

/// Integration step, s (40 kHz, thesis §7.1).
pub const STEP_S: f64 = 25e-6;
/// Integration step, ns.
pub(crate) const STEP_NS: u64 = 25_000;
/// Encoder resolution on the load shaft, rad per count (13 bits; the thesis measured
/// 766.6 µrad, §7.4).
pub(crate) const ENCODER_RAD_PER_COUNT: f64 = 766.6e-6;

/// One axis's physical parameters (SI units, load side unless said otherwise).
///
/// The defaults are a 12 V, 25 mm-class DC motor with a 20:1 gearbox (Maxon RE 25-like
/// values rounded) driving a camera head; what matters for the demonstrator is the ratio of
/// the time constants: electrical 100 µs, mechanical about 20 ms, as on the JIWY setup.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AxisParams {
    /// Armature resistance, Ω.
    pub r: f64,
    /// Armature inductance, H.
    pub l: f64,
    /// Torque constant, N·m/A (motor side).
    pub kt: f64,
    /// Back-EMF constant, V·s/rad (motor side).
    pub ke: f64,
    /// Gear ratio (motor turns per load turn).
    pub gear: f64,
    /// Rotor inertia, kg·m² (motor side).
    pub j_rotor: f64,
    /// Load inertia, kg·m².
    pub j_load: f64,
    /// Viscous friction, N·m·s/rad.
    pub b: f64,
    /// Coulomb friction, N·m.
    pub tc: f64,
    /// Supply voltage: commands saturate at ±`v_max`, V.
    pub v_max: f64,
    /// Current sensor noise, standard deviation, A.
    pub current_noise_a: f64,
}

impl AxisParams {
    /// The pan axis (the heavier: it carries the tilt axis).
    pub(crate) const PAN: AxisParams = AxisParams {
        r: 2.0,
        l: 0.2e-3,
        kt: 0.025,
        ke: 0.025,
        gear: 20.0,
        j_rotor: 1.0e-6,
        j_load: 2.0e-3,
        b: 1.0e-3,
        tc: 5.0e-3,
        v_max: 12.0,
        current_noise_a: 5e-3,
    };

    /// The tilt axis.
    pub(crate) const TILT: AxisParams = AxisParams {
        j_load: 1.0e-3,
        tc: 3.0e-3,
        ..AxisParams::PAN
    };

    /// Inertia seen at the load shaft, kg·m².
    pub(crate) fn j_total(&self) -> f64 {
        self.j_load + self.gear * self.gear * self.j_rotor
    }

    /// Torque at the load per ampere, N·m/A.
    pub(crate) fn torque_per_amp(&self) -> f64 {
        self.gear * self.kt
    }
}

/// One axis's state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    /// Parameters.
    pub p: AxisParams,
    /// Load angle, rad.
    pub theta: f64,
    /// Load speed, rad/s.
    pub omega: f64,
    /// Armature current, A.
    pub current: f64,
    /// Current sensor noise of the latest step, A.
    pub noise: f64,
}

impl Axis {
    /// At rest at angle 0.
    pub const fn new(p: AxisParams) -> Axis {
        Axis {
            p,
            theta: 0.0,
            omega: 0.0,
            current: 0.0,
            noise: 0.0,
        }
    }

    /// One explicit Euler step of `h` seconds with `volts` commanded.
    pub fn step(&mut self, volts: f64, h: f64) {
        let p = &self.p;
        let v = volts.clamp(-p.v_max, p.v_max);
        let di = (v - p.r * self.current - p.ke * p.gear * self.omega) / p.l;
        let drive = p.torque_per_amp() * self.current - p.b * self.omega;
        let j = p.j_total();
        let omega = if self.omega == 0.0 {
            if drive.abs() <= p.tc {
                0.0 // stuck: static friction holds the drive torque
            } else {
                self.omega + (drive - p.tc * drive.signum()) / j * h
            }
        } else {
            let next = self.omega + (drive - p.tc * self.omega.signum()) / j * h;
            // Friction alone may stop the axis, never reverse it.
            if next.signum() != self.omega.signum() && drive.abs() <= p.tc {
                0.0
            } else {
                next
            }
        };
        self.theta += self.omega * h;
        self.current += di * h;
        self.omega = omega;
    }

    /// The encoder reading, counts (round to nearest; 13 bits span a full turn, so the
    /// count is kept signed and unwrapped, as the controller accumulates it).
    pub(crate) fn encoder_counts(&self) -> i32 {
        (self.theta / ENCODER_RAD_PER_COUNT).round() as i32
    }

    /// The current sensor's reading, A.
    pub(crate) fn current_reading(&self) -> f64 {
        self.current + self.noise
    }
}

/// The two-axis plant.
#[derive(Clone, Debug, PartialEq)]
pub struct Plant {
    /// Pan, tilt.
    pub axes: [Axis; 2],
    /// Steps taken.
    pub steps: u64,
    rng: Rng,
}

impl Plant {
    /// Both axes at rest with the default parameters; sensor noise from `seed`.
    pub fn new(seed: u64) -> Plant {
        Plant::with_params([AxisParams::PAN, AxisParams::TILT], seed)
    }

    /// Both axes at rest with `params`.
    pub(crate) fn with_params(params: [AxisParams; 2], seed: u64) -> Plant {
        Plant {
            axes: [Axis::new(params[0]), Axis::new(params[1])],
            steps: 0,
            rng: Rng::new(seed),
        }
    }

    /// One 25 µs step with `volts` (pan, tilt) commanded.
    pub fn step(&mut self, volts: [f64; 2]) {
        for (axis, v) in self.axes.iter_mut().zip(volts) {
            axis.step(v, STEP_S);
            axis.noise = axis.p.current_noise_a * self.rng.normal();
        }
        self.steps += 1;
    }

    /// Simulated time, s.
    pub fn time_s(&self) -> f64 {
        self.steps as f64 * STEP_S
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A locked rotor (infinite load inertia): `i(t) = V/R (1 - e^{-t R/L})`; explicit Euler
    /// gives exactly `V/R (1 - (1 - hR/L)^n)`.
    #[test]
    fn locked_rotor_current_step_matches_closed_form() {
        let p = AxisParams {
            j_load: f64::INFINITY,
            current_noise_a: 0.0,
            ..AxisParams::PAN
        };
        let mut a = Axis::new(p);
        let v = 6.0;
        let tau = p.l / p.r;
        let mut worst_continuous: f64 = 0.0;
        for n in 1..=400 {
            a.step(v, STEP_S);
            let t = f64::from(n) * STEP_S;
            let euler = v / p.r * (1.0 - (1.0 - STEP_S / tau).powi(n));
            assert!(
                (a.current - euler).abs() < 1e-12,
                "step {n}: {} vs {euler}",
                a.current
            );
            let exact = v / p.r * (1.0 - (-t / tau).exp());
            worst_continuous = worst_continuous.max((a.current - exact).abs());
            assert_eq!(a.omega, 0.0);
        }
        // Euler's error against the continuous solution at h/τ = 0.25 stays below 6 % of
        // the final current, and the final value is reached.
        assert!(worst_continuous < 0.06 * v / p.r, "{worst_continuous}");
        assert!((a.current - v / p.r).abs() < 1e-9);
    }

    /// Free-running speed step: the steady state is
    /// `ω = (N Kt V / R - Tc) / (b + N² Kt Ke / R)`, reached with the mechanical time
    /// constant `J / (b + N² Kt Ke / R)` (the electrical one is 200× shorter).
    #[test]
    fn free_running_speed_step_matches_closed_form() {
        for tc in [0.0, AxisParams::PAN.tc] {
            let p = AxisParams {
                tc,
                current_noise_a: 0.0,
                ..AxisParams::PAN
            };
            let mut a = Axis::new(p);
            let v = 6.0;
            let damping = p.b + p.gear * p.gear * p.kt * p.ke / p.r;
            let w_ss = (p.gear * p.kt * v / p.r - tc) / damping;
            let tau_m = p.j_total() / damping;
            // One mechanical time constant: 1 - 1/e of the way, within 1 % of w_ss (the
            // electrical lag and Euler's error shift it slightly).
            let n_tau = (tau_m / STEP_S).round() as u32;
            for _ in 0..n_tau {
                a.step(v, STEP_S);
            }
            let expect = w_ss * (1.0 - (-1.0_f64).exp());
            assert!(
                (a.omega - expect).abs() < 0.01 * w_ss,
                "tc {tc}: ω(τ) {} vs {expect}",
                a.omega
            );
            for _ in 0..40 * n_tau {
                a.step(v, STEP_S);
            }
            assert!(
                (a.omega - w_ss).abs() < 1e-9 * w_ss,
                "tc {tc}: {} vs {w_ss}",
                a.omega
            );
            let i_ss = (v - p.ke * p.gear * w_ss) / p.r;
            assert!((a.current - i_ss).abs() < 1e-9);
        }
    }

    #[test]
    fn coulomb_friction_holds_a_weak_drive_and_stops_without_reversing() {
        let p = AxisParams {
            current_noise_a: 0.0,
            ..AxisParams::PAN
        };
        let mut a = Axis::new(p);
        // Drive torque N Kt i = 0.5 * i; Tc = 5 mN·m needs i > 10 mA, i.e. V > 20 mV.
        for _ in 0..4000 {
            a.step(0.015, STEP_S);
        }
        assert_eq!((a.omega, a.theta), (0.0, 0.0));
        a.omega = 0.01;
        a.current = 0.0;
        for _ in 0..4000 {
            a.step(0.0, STEP_S);
        }
        assert_eq!(a.omega, 0.0);
        assert!(a.theta > 0.0);
    }

    #[test]
    fn saturation_and_encoder() {
        let p = AxisParams {
            j_load: f64::INFINITY,
            ..AxisParams::PAN
        };
        let mut a = Axis::new(p);
        for _ in 0..4000 {
            a.step(100.0, STEP_S);
        }
        assert!((a.current - p.v_max / p.r).abs() < 1e-9);
        a.theta = 0.5;
        assert_eq!(a.encoder_counts(), 652); // 0.5 / 766.6 µrad = 652.2
        a.theta = -0.5;
        assert_eq!(a.encoder_counts(), -652);
    }
}
