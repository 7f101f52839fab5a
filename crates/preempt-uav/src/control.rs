//! The flight controller of the study's figure 1 (seed `001_*`), one 250 Hz step, and the
//! mission it flies.
//!
//! ```text
//!  reference (mission) ─┐
//!  position, velocity ──┴► position controller ── force vector F ─┐
//!                          (PD + feed-forward)                    │
//!  attitude, body rates, yaw reference ─────────► attitude controller ── torques τ
//!                                                 (geometric, on SO(3))   │
//!                                     thrust T = F · body z ──────────────┴► control allocator
//!                                                                            (inverse mixer)
//!                                                                            ─► 4 rotor speeds
//! ```
//!
//! The attitude controller is Lee, Leok and McClamroch's geometric controller ("Geometric
//! tracking control of a quadrotor UAV on SE(3)", CDC 2010, eqs. 11–16) without its angular
//! feed-forward terms: the desired body z axis is F/|F|, the desired x axis follows the yaw
//! reference, and `τ = −kR e_R − kω e_ω + ω × Iω`. Gains put the attitude loop near 15 rad/s
//! and the position loop near 2.5 rad/s: a decade apart, and the attitude loop well inside
//! what 250 Hz sampling, a sample of delay and the 20 ms motor lag allow.
//!
//! ```
//! use preempt_uav::control::{Mission, Controller};
//! use preempt_uav::model::{Params, Sensors};
//! let m = Mission::default();
//! assert_eq!(m.at(0.0).p, [0.0; 3]);
//! let mut c = Controller::new(Params::default());
//! let speeds = c.step(&m.at(0.0), &Sensors::default());
//! assert!(speeds.iter().all(|s| *s >= 0.0));
//! ```

use preempt::bridge::Receiver;
use preempt_rig::intake::{Refusal, Taken};

use crate::model::{G, Params, Sensors, V3, rot_rpy};

/// Control period, s (250 Hz, the study's loop).
pub const PERIOD_S: f64 = 0.004;
/// Control period, ns.
pub const PERIOD_NS: u64 = 4_000_000;

/// Position-loop gains (acceleration per metre, per m/s).
const KP: f64 = 6.0;
const KD: f64 = 4.5;
/// Attitude-loop natural frequency and damping.
const ATT_WN: f64 = 15.0;
const ATT_ZETA: f64 = 0.8;
/// Yaw is slower (its torque is 50 times weaker than roll's).
const YAW_WN: f64 = 5.0;
/// Largest commanded tilt, rad (keeps the thrust's vertical part).
const MAX_TILT: f64 = 0.6;

/// Where the vehicle should be.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Setpoint {
    /// Position, m.
    pub p: V3,
    /// Velocity, m/s.
    pub v: V3,
    /// Acceleration, m/s².
    pub a: V3,
    /// Yaw, rad.
    pub yaw: f64,
    /// Motors off (before take-off and after landing).
    pub idle: bool,
}

/// The mission: take off to `height`, hover, fly a square of side `side` through its four
/// corners (a quintic, rest-to-rest move per leg, then a hold), land, motors off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mission {
    /// Hover height, m.
    pub height: f64,
    /// Square side, m.
    pub side: f64,
    /// Motors start (the vehicle sits on the ground until then), s.
    pub start_s: f64,
    /// Climb time, s.
    pub climb_s: f64,
    /// Hover before the square, s.
    pub hover_s: f64,
    /// Move time per leg, s.
    pub leg_s: f64,
    /// Hold at each corner, s.
    pub hold_s: f64,
    /// Descent time, s.
    pub land_s: f64,
}

impl Default for Mission {
    /// 1 m up, a 1 m square in 1.5 s legs with 0.5 s holds, 13.5 s in all.
    fn default() -> Mission {
        Mission {
            height: 1.0,
            side: 1.0,
            start_s: 0.5,
            climb_s: 2.0,
            hover_s: 1.0,
            leg_s: 1.5,
            hold_s: 0.5,
            land_s: 2.5,
        }
    }
}

/// Phases of the mission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// On the ground, motors off.
    Ground,
    /// Climbing.
    TakeOff,
    /// Hovering before the square.
    Hover,
    /// Flying the square.
    Square,
    /// Descending.
    Land,
    /// Landed, motors off.
    Landed,
}

/// Quintic rest-to-rest blend: (s, ds/dt, d²s/dt²) at `t` of a move lasting `d`.
fn quintic(t: f64, d: f64) -> (f64, f64, f64) {
    if t <= 0.0 {
        return (0.0, 0.0, 0.0);
    }
    if t >= d {
        return (1.0, 0.0, 0.0);
    }
    let x = t / d;
    let s = x * x * x * (10.0 - 15.0 * x + 6.0 * x * x);
    let ds = 30.0 * x * x * (1.0 - x) * (1.0 - x) / d;
    let dds = 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x) / (d * d);
    (s, ds, dds)
}

impl Mission {
    fn square_start(&self) -> f64 {
        self.start_s + self.climb_s + self.hover_s
    }

    fn square_end(&self) -> f64 {
        self.square_start() + 4.0 * (self.leg_s + self.hold_s)
    }

    /// The whole mission's length (to motors off), s.
    pub fn duration_s(&self) -> f64 {
        self.square_end() + self.land_s + 0.5
    }

    /// The square's time window, s: the figures "over the square" use it.
    pub fn square_window(&self) -> (f64, f64) {
        (self.square_start(), self.square_end())
    }

    /// The phase at mission time `t`.
    pub(crate) fn phase(&self, t: f64) -> Phase {
        let climb = self.start_s + self.climb_s;
        if t < self.start_s {
            Phase::Ground
        } else if t < climb {
            Phase::TakeOff
        } else if t < self.square_start() {
            Phase::Hover
        } else if t < self.square_end() {
            Phase::Square
        } else if t < self.square_end() + self.land_s {
            Phase::Land
        } else {
            Phase::Landed
        }
    }

    /// The setpoint at mission time `t`, s.
    pub fn at(&self, t: f64) -> Setpoint {
        let h = self.height;
        let mut sp = Setpoint::default();
        match self.phase(t) {
            Phase::Ground => sp.idle = true,
            Phase::TakeOff => {
                let (s, ds, dds) = quintic(t - self.start_s, self.climb_s);
                sp.p[2] = h * s;
                sp.v[2] = h * ds;
                sp.a[2] = h * dds;
            }
            Phase::Hover => sp.p[2] = h,
            Phase::Square => {
                let corners = [
                    [0.0, 0.0],
                    [self.side, 0.0],
                    [self.side, self.side],
                    [0.0, self.side],
                    [0.0, 0.0],
                ];
                let tl = t - self.square_start();
                let per = self.leg_s + self.hold_s;
                let leg = ((tl / per) as usize).min(3);
                let (s, ds, dds) = quintic(tl - leg as f64 * per, self.leg_s);
                let (a, b) = (corners[leg], corners[leg + 1]);
                for i in 0..2 {
                    let d = b[i] - a[i];
                    sp.p[i] = a[i] + d * s;
                    sp.v[i] = d * ds;
                    sp.a[i] = d * dds;
                }
                sp.p[2] = h;
            }
            Phase::Land => {
                // Down to 5 cm below the ground: the last centimetres close at a gentle,
                // non-zero speed, so contact happens and the motors can stop.
                let (s, ds, dds) = quintic(t - self.square_end(), self.land_s);
                let depth = h + 0.05;
                sp.p[2] = h - depth * s;
                sp.v[2] = -depth * ds;
                sp.a[2] = -depth * dds;
            }
            Phase::Landed => {
                sp.p[2] = -0.05; // where the descent ended
                sp.idle = true;
            }
        }
        sp
    }
}

/// Where a live waypoint may be (`--ros2`'s `/uav/waypoint`), m: x and y within
/// ±[`WAYPOINT_XY_M`] of the take-off point, z in [`WAYPOINT_Z_M`] (above the ground effect,
/// below the simulated room's ceiling).
pub const WAYPOINT_XY_M: f64 = 2.0;
/// The height range of a live waypoint, m.
pub const WAYPOINT_Z_M: (f64, f64) = (0.3, 2.5);

/// Checks a live waypoint: no NaN, and inside the box [`WAYPOINT_XY_M`], [`WAYPOINT_Z_M`].
///
/// # Errors
/// A NaN ([`Refusal::Nan`]) or a point outside the box, an infinity included
/// ([`Refusal::OutOfRange`]), with the box.
pub fn check_waypoint(w: V3) -> Result<V3, (Refusal, String)> {
    if w.iter().any(|x| x.is_nan()) {
        return Err((Refusal::Nan, format!("waypoint {w:?}: NaN")));
    }
    let (lo, hi) = WAYPOINT_Z_M;
    if w[0].abs() > WAYPOINT_XY_M || w[1].abs() > WAYPOINT_XY_M || !(lo..=hi).contains(&w[2]) {
        return Err((
            Refusal::OutOfRange,
            format!(
                "waypoint {w:?} m: outside the flight box (|x|, |y| <= {WAYPOINT_XY_M} m, \
                 z {lo}..={hi} m)"
            ),
        ));
    }
    Ok(w)
}

/// Takes every waypoint waiting in `rx` (never blocks: `try_recv`) into `live`, the one in
/// force: the last one wins; the ones it replaced in this call were never in force and count
/// as superseded in `taken`. Real-time safe: no allocation, no lock.
pub fn take_waypoints(rx: &mut Receiver<V3>, live: &mut Option<V3>, taken: &Taken) {
    let mut got = false;
    while let Some(w) = rx.try_recv() {
        *live = Some(w);
        taken.take();
        if std::mem::replace(&mut got, true) {
            taken.supersede();
        }
    }
}

impl Mission {
    /// The setpoint at mission time `t` with a live waypoint `w` (the last one received):
    /// airborne (hover and square) the vehicle holds `w` instead of flying the mission; the
    /// descent lands below `w`. On the ground and while climbing the mission's setpoint
    /// stands (a waypoint that arrives then applies from the hover on).
    pub(crate) fn at_waypoint(&self, t: f64, w: Option<V3>) -> Setpoint {
        let mut sp = self.at(t);
        let Some(w) = w else { return sp };
        let axes = match self.phase(t) {
            Phase::Hover | Phase::Square => 3,
            Phase::Land | Phase::Landed => 2,
            Phase::Ground | Phase::TakeOff => 0,
        };
        sp.p[..axes].copy_from_slice(&w[..axes]);
        sp.v[..axes].fill(0.0);
        sp.a[..axes].fill(0.0);
        sp
    }
}

/// The cascade's state: gains from the vehicle's parameters.
#[derive(Clone, Debug)]
pub struct Controller {
    params: Params,
    k_r: V3,
    k_w: V3,
}

/// What one step produced, for telemetry.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Output {
    /// Force vector of the position controller, N (world).
    pub force: V3,
    /// Thrust and torques handed to the allocator.
    pub wrench: [f64; 4],
    /// Rotor speed commands, rad/s.
    pub speeds: [f64; 4],
}

impl Controller {
    /// Gains for `params`.
    pub fn new(params: Params) -> Controller {
        let i = params.inertia;
        let k_r = [
            ATT_WN * ATT_WN * i[0],
            ATT_WN * ATT_WN * i[1],
            YAW_WN * YAW_WN * i[2],
        ];
        let k_w = [
            2.0 * ATT_ZETA * ATT_WN * i[0],
            2.0 * ATT_ZETA * ATT_WN * i[1],
            2.0 * ATT_ZETA * YAW_WN * i[2],
        ];
        Controller { params, k_r, k_w }
    }

    /// One control step: rotor speed commands, rad/s.
    pub fn step(&mut self, sp: &Setpoint, s: &Sensors) -> [f64; 4] {
        self.step_full(sp, s).speeds
    }

    /// One control step with its intermediate values.
    pub(crate) fn step_full(&mut self, sp: &Setpoint, s: &Sensors) -> Output {
        if sp.idle {
            return Output::default();
        }
        let p = &self.params;
        // Position controller: the force vector.
        let acc: V3 =
            std::array::from_fn(|i| sp.a[i] + KP * (sp.p[i] - s.p[i]) + KD * (sp.v[i] - s.v[i]));
        // Tilt limit: the horizontal part at most tan(MAX_TILT) of the vertical one.
        let vert = (acc[2] + G).max(0.2 * G);
        let horiz = (acc[0] * acc[0] + acc[1] * acc[1]).sqrt();
        let lim = vert * MAX_TILT.tan();
        let scale = if horiz > lim { lim / horiz } else { 1.0 };
        let force = [
            p.mass * acc[0] * scale + p.drag * sp.v[0],
            p.mass * acc[1] * scale + p.drag * sp.v[1],
            p.mass * vert + p.drag * sp.v[2],
        ];
        // Attitude controller.
        let r = rot_rpy(s.rpy);
        let zb = [r[0][2], r[1][2], r[2][2]];
        let thrust = dot(force, zb).max(0.0);
        let z_d = unit(force);
        let x_c = [sp.yaw.cos(), sp.yaw.sin(), 0.0];
        let y_d = unit(cross(z_d, x_c));
        let x_d = cross(y_d, z_d);
        let rd = [
            [x_d[0], y_d[0], z_d[0]],
            [x_d[1], y_d[1], z_d[1]],
            [x_d[2], y_d[2], z_d[2]],
        ];
        // e_R = ½ vee(Rdᵀ R − Rᵀ Rd)
        let m = |a: &[V3; 3], b: &[V3; 3], i: usize, k: usize| {
            (0..3).map(|j| a[j][i] * b[j][k]).sum::<f64>()
        };
        let e = |i, k| m(&rd, &r, i, k) - m(&r, &rd, i, k);
        let e_r = [0.5 * e(2, 1), 0.5 * e(0, 2), 0.5 * e(1, 0)];
        let w = s.w;
        let iw = [
            p.inertia[0] * w[0],
            p.inertia[1] * w[1],
            p.inertia[2] * w[2],
        ];
        let gyro = cross(w, iw);
        let tau = [0, 1, 2].map(|i| -self.k_r[i] * e_r[i] - self.k_w[i] * w[i] + gyro[i]);
        // Control allocator.
        let wrench = [thrust, tau[0], tau[1], tau[2]];
        let max_u = p.max_speed * p.max_speed;
        let speeds = p.unmix(wrench).map(|u| u.clamp(0.0, max_u).sqrt());
        Output {
            force,
            wrench,
            speeds,
        }
    }
}

fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn unit(a: V3) -> V3 {
    let n = dot(a, a).sqrt();
    if n > 0.0 {
        a.map(|c| c / n)
    } else {
        [0.0, 0.0, 1.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Quad, euler};

    #[test]
    fn the_mission_is_continuous_and_visits_the_corners() {
        let m = Mission::default();
        let (a, b) = m.square_window();
        let mut prev = m.at(0.0).p;
        let mut t = 0.0;
        while t < m.duration_s() {
            let p = m.at(t).p;
            let jump = (0..3).map(|i| (p[i] - prev[i]).abs()).fold(0.0, f64::max);
            assert!(jump < 0.01, "jump of {jump} m at {t} s");
            prev = p;
            t += 0.001;
        }
        let per = m.leg_s + m.hold_s;
        assert_eq!(m.at(a + m.leg_s + 0.1).p, [1.0, 0.0, 1.0]);
        assert_eq!(m.at(a + per + m.leg_s + 0.1).p, [1.0, 1.0, 1.0]);
        assert_eq!(m.at(b - 0.1).p, [0.0, 0.0, 1.0]);
        assert!(m.at(m.duration_s()).idle && m.at(0.0).idle);
    }

    /// The cascade flies the mission on the model with ideal timing (every 4 ms, no delay):
    /// within 10 cm of the setpoint over the square, no crash, landed at the end.
    #[test]
    fn the_cascade_flies_the_square_with_ideal_timing() {
        let p = Params::default();
        let m = Mission::default();
        let mut quad = Quad::new(p, 7);
        let mut c = Controller::new(p);
        let mut cmd = [0.0; 4];
        let (a, b) = m.square_window();
        let mut worst: f64 = 0.0;
        for step in 0..(m.duration_s() / 1e-3) as u64 {
            if step % 4 == 0 {
                let t = step as f64 * 1e-3;
                let sp = m.at(t);
                cmd = c.step(&sp, &quad.sensors);
                if (a..b).contains(&t) {
                    let e = (0..3)
                        .map(|i| (sp.p[i] - quad.state.p[i]).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    worst = worst.max(e);
                }
            }
            quad.step(cmd);
        }
        assert!(quad.crashed_at.is_none());
        assert!(worst < 0.10, "tracking error up to {worst} m");
        assert!(quad.state.p[2] < 0.01, "not landed: {:?}", quad.state.p);
        assert!(euler(quad.state.q)[2].abs() < 0.05);
    }

    /// A waypoint at the box's far corner, received while climbing: from the hover on the
    /// vehicle goes there (within 5 cm after 4 s), without a crash, and lands below it.
    #[test]
    fn a_live_waypoint_is_reached_and_landed_below() {
        let p = Params::default();
        let m = Mission::default();
        let w = check_waypoint([WAYPOINT_XY_M, -WAYPOINT_XY_M, WAYPOINT_Z_M.1]).unwrap();
        let (mut quad, mut c, mut cmd) = (Quad::new(p, 3), Controller::new(p), [0.0; 4]);
        let hover = m.start_s + m.climb_s;
        let mut at_4s = f64::INFINITY;
        for step in 0..(m.duration_s() / 1e-3) as u64 {
            let t = step as f64 * 1e-3;
            if step % 4 == 0 {
                cmd = c.step(&m.at_waypoint(t, Some(w)), &quad.sensors);
            }
            quad.step(cmd);
            if step == ((hover + 4.0) / 1e-3) as u64 {
                at_4s = (0..3)
                    .map(|i| (quad.state.p[i] - w[i]).powi(2))
                    .sum::<f64>()
                    .sqrt();
            }
        }
        assert!(
            quad.crashed_at.is_none(),
            "crashed at {:?}",
            quad.crashed_at
        );
        assert!(
            at_4s < 0.05,
            "{at_4s} m from the waypoint 4 s into the hover"
        );
        assert!(quad.state.p[2] < 0.01, "not landed: {:?}", quad.state.p);
        assert!((quad.state.p[0] - w[0]).abs() < 0.05 && (quad.state.p[1] - w[1]).abs() < 0.05);
    }

    /// Issue 40: every waypoint received lands in one counter; 38 accepted ones that were
    /// never taken appeared in none.
    #[test]
    fn every_waypoint_is_counted_once_through_the_intake() {
        use preempt_rig::intake::Intake;
        let (tx, mut rx) = preempt::bridge::channel(4);
        let intake = Intake::new("test: waypoint", tx);
        let taken = Taken::new();
        let mut live = None;
        assert!(intake.offer(check_waypoint([0.5, 0.0, 1.0])));
        assert!(intake.offer(check_waypoint([1.0, 0.0, 1.0])));
        assert!(!intake.offer(check_waypoint([0.0, 0.0, 1e308])));
        take_waypoints(&mut rx, &mut live, &taken);
        assert_eq!(live, Some([1.0, 0.0, 1.0]));
        assert!(intake.offer(check_waypoint([0.0, 1.0, 1.0])));
        let c = intake.finish();
        let (took, superseded) = taken.get();
        assert_eq!((c.accepted, took, superseded), (3, 2, 1));
        assert_eq!(c.refused.out_of_range, 1);
        assert_eq!(c.accepted - took, 1, "accepted, never taken");
    }

    #[test]
    fn waypoints_outside_the_box_or_not_finite_are_refused() {
        assert!(check_waypoint([0.5, -0.5, 1.2]).is_ok());
        assert!(check_waypoint([-0.0, 0.0, 1.0]).is_ok());
        assert_eq!(
            check_waypoint([f64::NAN, 0.0, 1.0]).unwrap_err().0,
            Refusal::Nan
        );
        let (why, e) = check_waypoint([0.0, 2.5, 1.0]).unwrap_err();
        assert_eq!(why, Refusal::OutOfRange);
        assert!(e.contains("flight box"), "{e}");
        assert!(check_waypoint([0.0, 0.0, 0.1]).is_err());
        for far in [1e308, f64::INFINITY, -1e308] {
            assert_eq!(
                check_waypoint([far, 0.0, 1.0]).unwrap_err().0,
                Refusal::OutOfRange
            );
        }
        let sp = Mission::default().at_waypoint(0.1, Some([1.0, 1.0, 1.0]));
        assert!(
            sp.idle && sp.p == [0.0; 3],
            "on the ground the mission's setpoint stands"
        );
    }
}
