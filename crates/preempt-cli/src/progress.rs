//! A one-line progress bar on stderr, drawn only when stderr is a terminal (so logs, pipes
//! and CI output stay clean).

use std::io::{IsTerminal, Write};

/// A progress bar; does nothing when disabled or when stderr is not a TTY.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    label: String,
    drawn: bool,
}

impl Progress {
    /// A bar labelled `label`; `allowed` is false with `--no-progress`.
    pub fn new(label: impl Into<String>, allowed: bool) -> Self {
        Self {
            enabled: allowed && std::io::stderr().is_terminal(),
            label: label.into(),
            drawn: false,
        }
    }

    /// Redraws the bar at `fraction` (0..=1) with a status text.
    pub fn update(&mut self, fraction: f64, status: &str) {
        if !self.enabled {
            return;
        }
        const WIDTH: usize = 30;
        let filled = ((fraction.clamp(0.0, 1.0) * WIDTH as f64) as usize).min(WIDTH);
        let bar: String = "#".repeat(filled) + &"-".repeat(WIDTH - filled);
        let mut err = std::io::stderr().lock();
        // Progress output is best effort: a closed or full stderr must not stop a measurement.
        let _ = write!(
            err,
            "\r\x1b[2K{} [{bar}] {:3.0}% {status}",
            self.label,
            fraction * 100.0
        );
        let _ = err.flush();
        self.drawn = true;
    }

    /// Erases the bar.
    pub fn finish(&mut self) {
        if self.drawn {
            // Best effort, as in `update`.
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
