//! The thesis's demonstrator (chapter 7) in preempt: a cascaded PID motor controller with a
//! **10 kHz current loop** and a **1 kHz position loop**, against a simulated plant (a DC
//! motor with a 13-bit encoder, integrated at 40 kHz as the thesis's 20-sim model was), with
//! a non-real-time logger fed through the RT → non-RT bridge and a setpoint from an async
//! task. At exit it prints the task statistics and the response-time analysis (stderr).
//!
//! ```text
//!   sample (p90, every 100 µs)      "SPI exchange": apply the last voltage command, advance
//!     │                             the motor 100 µs (4 Euler steps of 25 µs), read encoder
//!     │                             and current; every 10th sample log it over the bridge
//!     ├─ k % 10 != 0 ─► current (p80): PI on the current -> voltage command (shared, PCP)
//!     └─ k % 10 == 0 ─► position (p80): PD on the angle -> current reference
//!                           └─ chains ─► current (p80)         (thesis, figure 7.4)
//!   setpoint (async, p5)    Mono::delay(100 ms), then the step to 1 rad (the ROS subscriber)
//!   logger thread           drains the bridge (the ROS publisher); never blocks the loop
//! ```
//!
//! The plant runs inside `sample`, so the example needs no second board; the controller
//! sees it only through the exchanged values, as it saw the STM32 over SPI. `sample` uses
//! `on_miss = Burst`: a late sample still runs, so the simulated physics keeps its time step.
//!
//! ```sh
//! cargo run --release -p preempt --example demonstrator
//! PREEMPT_EXAMPLE_SAMPLES=20000 cargo run --release -p preempt --example demonstrator  # 2 s
//! ```
//!
//! Pin the loop to an isolated core for the thesis's setup: `cores = [p90 = 1, p80 = 1]`.

use std::sync::Mutex;

use preempt::bridge;

/// One logged sample (every millisecond).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Sample number (`u32::MAX` ends the log).
    pub k: u32,
    /// Measured angle, rad.
    pub theta: f64,
    /// Measured current, A.
    pub current: f64,
}

/// The sending end of the log, handed to the app's `init`.
static LOG: Mutex<Option<bridge::Sender<Sample>>> = Mutex::new(None);

/// The simulated robot axis.
pub mod plant {
    /// Encoder resolution: 13 bits per revolution, as the thesis's JIWY encoder
    /// (766.6 µrad per count).
    const COUNTS_PER_REV: f64 = 8192.0;

    /// A DC motor: `L di/dt = V - R i - K ω`, `J dω/dt = K i - b ω`, `dθ/dt = ω`.
    #[derive(Default)]
    pub struct Motor {
        theta: f64,
        omega: f64,
        current: f64,
    }

    /// Armature resistance, Ω.
    const R: f64 = 1.0;
    /// Armature inductance, H (electrical time constant L/R = 0.5 ms).
    const L: f64 = 0.5e-3;
    /// Torque and back-EMF constant, N·m/A = V·s/rad.
    const K: f64 = 0.05;
    /// Rotor and load inertia, kg·m².
    const J: f64 = 2e-5;
    /// Viscous friction, N·m·s.
    const B: f64 = 1e-5;

    impl Motor {
        /// At rest at angle 0.
        pub const fn new() -> Motor {
            Motor {
                theta: 0.0,
                omega: 0.0,
                current: 0.0,
            }
        }

        /// Applies `volts` for `dt` seconds, integrated in `steps` explicit Euler steps.
        pub fn step(&mut self, volts: f64, dt: f64, steps: u32) {
            let h = dt / f64::from(steps);
            for _ in 0..steps {
                let di = (volts - R * self.current - K * self.omega) / L;
                let dw = (K * self.current - B * self.omega) / J;
                self.current += di * h;
                self.omega += dw * h;
                self.theta += self.omega * h;
            }
        }

        /// What the sensors read: the angle quantised by the encoder, and the current.
        pub fn sensors(&self) -> (f64, f64) {
            let count = (self.theta / std::f64::consts::TAU * COUNTS_PER_REV).round();
            (count / COUNTS_PER_REV * std::f64::consts::TAU, self.current)
        }
    }
}

/// The two controllers, tuned on the model (current loop ≈ 500 Hz, position ≈ 10 Hz, ζ 0.8).
pub mod control {
    /// PI current controller with anti-windup: current error (A) -> voltage (V).
    #[derive(Default)]
    pub struct CurrentPi {
        integral: f64,
    }

    const KP_I: f64 = 1.57;
    const KI_I: f64 = 3140.0;
    const V_MAX: f64 = 12.0;

    impl CurrentPi {
        /// Zero state.
        pub const fn new() -> CurrentPi {
            CurrentPi { integral: 0.0 }
        }

        /// One step of `dt` seconds.
        pub fn update(&mut self, error: f64, dt: f64) -> f64 {
            let unclamped = KP_I * error + KI_I * (self.integral + error * dt);
            if unclamped.abs() < V_MAX {
                self.integral += error * dt; // integrate only when not saturated
            }
            (KP_I * error + KI_I * self.integral).clamp(-V_MAX, V_MAX)
        }
    }

    /// PD position controller, derivative on the measurement: angle (rad) -> current (A).
    #[derive(Default)]
    pub struct PositionPd {
        last_theta: Option<f64>,
    }

    const KP_P: f64 = 1.58;
    const KD_P: f64 = 0.040;
    const I_MAX: f64 = 5.0;

    impl PositionPd {
        /// Zero state.
        pub const fn new() -> PositionPd {
            PositionPd { last_theta: None }
        }

        /// One step of `dt` seconds.
        pub fn update(&mut self, setpoint: f64, theta: f64, dt: f64) -> f64 {
            let omega = self.last_theta.map_or(0.0, |last| (theta - last) / dt);
            self.last_theta = Some(theta);
            (KP_P * (setpoint - theta) - KD_P * omega).clamp(-I_MAX, I_MAX)
        }
    }
}

// `main = false`: the app macro declares no allocator; this one reports the real-time
// jobs' allocations (preempt::rt_safety).
#[global_allocator]
static ALLOCATOR: preempt::rt_safety::CheckedAlloc = preempt::rt_safety::CheckedAlloc::SYSTEM;

#[preempt::app(main = false, summary = true)]
mod app {
    use super::Sample;
    use super::control::{CurrentPi, PositionPd};
    use super::plant::Motor;
    use preempt::bridge::Sender;

    /// The sample period, s.
    const DT: f64 = 100e-6;

    #[shared]
    struct Shared {
        /// The latest voltage command and the sample it answers.
        command: (u32, f64),
        /// Position setpoint, rad.
        setpoint: f64,
    }

    #[local]
    struct Local {
        motor: Motor,
        log: Sender<Sample>,
        samples: u32,
    }

    #[init]
    fn init(_: init::Context) -> (Shared, Local, init::Monotonics) {
        let log = super::LOG
            .lock()
            .unwrap()
            .take()
            .expect("main creates the log bridge before running the app");
        println!(
            "demonstrator: 10 kHz sample and current loop, 1 kHz position loop, simulated DC motor"
        );
        setpoint::spawn(1.0).unwrap();
        (
            Shared {
                command: (0, 0.0),
                setpoint: 0.0,
            },
            Local {
                motor: Motor::new(),
                log,
                samples: super::samples(),
            },
            init::Monotonics(),
        )
    }

    /// The 10 kHz exchange with the plant; releases the controllers.
    #[task(
        priority = 90,
        period = 100.micros(),
        on_miss = Burst,
        shared = [command],
        local = [motor, log, samples, k: u32 = 0, stale: u32 = 0, refused: u32 = 0]
    )]
    fn sample(cx: sample::Context) {
        let k = *cx.local.k;
        let (answered, volts) = cx.shared.command.lock(|c| *c);
        if k > 1 && answered + 1 != k {
            *cx.local.stale += 1; // the current loop had not answered the previous sample
        }
        cx.local.motor.step(volts, DT, 4);
        let (theta, current) = cx.local.motor.sensors();
        let released = if k % 10 == 0 {
            position::spawn(k, theta, current).is_ok()
        } else {
            self::current::spawn(k, current, None).is_ok()
        };
        if !released {
            *cx.local.refused += 1; // the previous job of that controller had not run yet
        }
        if k % 10 == 0 {
            // Never blocks: a full ring is counted, the loop goes on.
            let _full = cx.local.log.send(Sample { k, theta, current }).is_err();
        }
        *cx.local.k = k + 1;
        if k + 1 == *cx.local.samples {
            let _full = cx.local.log.send(Sample {
                k: u32::MAX,
                theta,
                current,
            });
            finish::spawn(*cx.local.stale, *cx.local.refused).unwrap();
        }
    }

    /// The 1 kHz position loop; chains the current loop after itself. Released every 10th
    /// sample: the analysis assumes 1 ms between releases, and it must finish before the
    /// next position sample.
    #[task(
        priority = 80,
        min_interarrival = 1.millis(),
        deadline = 1.millis(),
        shared = [setpoint],
        local = [pd: PositionPd = PositionPd::new()]
    )]
    fn position(cx: position::Context, k: u32, theta: f64, current: f64) {
        let setpoint = cx.shared.setpoint.lock(|s| *s);
        let reference = cx.local.pd.update(setpoint, theta, 10.0 * DT);
        self::current::spawn(k, current, Some(reference)).ok();
    }

    /// The 10 kHz current loop: its voltage must be there for the next sample, 100 µs later.
    #[task(
        priority = 80,
        min_interarrival = 100.micros(),
        deadline = 100.micros(),
        shared = [command],
        local = [pi: CurrentPi = CurrentPi::new(), reference: f64 = 0.0]
    )]
    fn current(cx: current::Context, k: u32, current: f64, reference: Option<f64>) {
        if let Some(r) = reference {
            *cx.local.reference = r;
        }
        let volts = cx.local.pi.update(*cx.local.reference - current, DT);
        cx.shared.command.lock(|c| *c = (k, volts));
    }

    /// The setpoint source (the thesis's ROS subscriber): a step after 100 ms.
    #[task(priority = 5, shared = [setpoint])]
    async fn setpoint(cx: setpoint::Context, target: f64) {
        Mono::delay(100.millis()).await;
        cx.shared.setpoint.lock(|s| *s = target);
        preempt::rt_safety::allow(|| println!("setpoint 0.00 -> {target:.2} rad after 100 ms"));
    }

    #[task(priority = 1)]
    fn finish(_: finish::Context, stale: u32, refused: u32) {
        preempt::rt_safety::allow(|| {
            eprintln!(
                "control outputs late for the next sample: {stale}; releases refused: {refused}"
            )
        });
        preempt::exit(0);
    }
}

/// 5000 samples (0.5 s), unless `PREEMPT_EXAMPLE_SAMPLES` says otherwise.
fn samples() -> u32 {
    std::env::var("PREEMPT_EXAMPLE_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n >= 10)
        .unwrap_or(5_000)
}

fn main() {
    let (tx, mut rx) = bridge::channel::<Sample>(1024);
    *LOG.lock().unwrap() = Some(tx);
    // The logger: an ordinary thread that may block (here on the bridge, elsewhere on I/O).
    let logger = std::thread::spawn(move || {
        let mut logged = 0_u32;
        let mut last = None;
        while let Some(s) = rx.recv() {
            if s.k == u32::MAX {
                break;
            }
            if s.k % 1000 == 0 {
                eprintln!(
                    "t = {:.2} s: angle {:+.4} rad, current {:+.3} A",
                    f64::from(s.k) * 100e-6,
                    s.theta,
                    s.current
                );
            }
            logged += 1;
            last = Some(s);
        }
        (logged, rx.overflows(), last)
    });
    let code = app::run();
    if code != 0 {
        // The app stopped early (no privileges, a fault): the log never ends; do not wait.
        std::process::exit(code);
    }
    let (logged, lost, last) = logger.join().expect("the logger thread panicked");
    if let Some(s) = last {
        println!(
            "angle after {:.2} s: {:.2} rad",
            f64::from(samples()) * 100e-6,
            s.theta
        );
    }
    println!("logger: {logged} samples over the bridge, {lost} lost");
}
