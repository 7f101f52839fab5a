//! The compute step of `--work-us`: a fixed amount of control-loop arithmetic per period.
//!
//! The UAV paper (seed 001) measured its 250 Hz loop's own control step (≈3.8 µs) and saw it
//! grow under stress: memory contention makes the *same* work take longer. So the step here
//! is a fixed number of iterations of a small controller (a 4×4 matrix-vector product, as in
//! an attitude controller, plus a PID update), calibrated once, on an idle machine, to take
//! the requested time. Its measured duration per period then shows interference; a
//! busy-wait "until N µs passed" would hide it.

use std::hint::black_box;

use preempt_io::sys::clock::monotonic_now_ns;

/// State of the simulated controller (kept across periods like a real one).
#[derive(Debug, Clone)]
pub struct Controller {
    gain: [[f64; 4]; 4],
    state: [f64; 4],
    integral: f64,
    last_error: f64,
}

impl Default for Controller {
    fn default() -> Self {
        Self {
            gain: [
                [0.90, 0.01, 0.02, 0.00],
                [0.01, 0.92, 0.00, 0.03],
                [0.02, 0.00, 0.88, 0.01],
                [0.00, 0.03, 0.01, 0.91],
            ],
            state: [0.1, -0.2, 0.3, 0.05],
            integral: 0.0,
            last_error: 0.0,
        }
    }
}

impl Controller {
    /// One control update: x ← K·x + u with a PID on the first component.
    #[inline]
    fn update(&mut self, setpoint: f64) {
        let error = setpoint - self.state[0];
        self.integral = (self.integral + error * 0.004).clamp(-10.0, 10.0);
        let u = 1.2 * error + 0.5 * self.integral + 0.05 * (error - self.last_error) / 0.004;
        self.last_error = error;
        let mut next = [0.0; 4];
        for (row, out) in self.gain.iter().zip(next.iter_mut()) {
            *out = row.iter().zip(&self.state).map(|(k, x)| k * x).sum::<f64>();
        }
        next[0] += 0.001 * u;
        self.state = next;
    }

    /// Runs `iterations` updates (the compute step). Allocation-free.
    #[inline(never)]
    pub fn step(&mut self, iterations: u64) {
        for i in 0..iterations {
            self.update(black_box(if i & 1 == 0 { 1.0 } else { 0.5 }));
        }
        black_box(&self.state);
    }
}

/// Iterations of [`Controller::step`] that take `target_ns` on this CPU now (best of 30
/// trials, so interference during calibration makes the step shorter, not longer).
pub fn calibrate(target_ns: u64) -> u64 {
    if target_ns == 0 {
        return 0;
    }
    const PROBE: u64 = 2_000;
    let mut c = Controller::default();
    c.step(PROBE); // warm caches and the branch predictor
    let best = (0..30)
        .map(|_| {
            let t0 = monotonic_now_ns();
            c.step(PROBE);
            monotonic_now_ns().saturating_sub(t0).max(1)
        })
        .min()
        .unwrap_or(1);
    (u128::from(target_ns) * u128::from(PROBE) / u128::from(best)).clamp(1, u128::from(u64::MAX))
        as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_stays_bounded_and_deterministic() {
        let (mut a, mut b) = (Controller::default(), Controller::default());
        a.step(100_000);
        b.step(100_000);
        assert_eq!(a.state, b.state);
        assert!(
            a.state.iter().all(|x| x.is_finite() && x.abs() < 100.0),
            "{:?}",
            a.state
        );
    }

    #[test]
    fn calibration_scales_with_the_target() {
        assert_eq!(calibrate(0), 0);
        assert!(calibrate(1_000) >= 1);
        // Ten times the time needs more iterations (not a timing assertion: any machine
        // gives a monotonic answer up to noise, and the factor 10 dwarfs it).
        assert!(calibrate(1_000_000) > calibrate(10_000));
    }
}
