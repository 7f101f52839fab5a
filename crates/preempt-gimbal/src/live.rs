//! The live view (cargo feature `foxglove`, flag `--foxglove ADDR`): a Foxglove WebSocket
//! server (the `foxglove` SDK, WebSocket subprotocol `foxglove.sdk.v1`) on a loopback address that
//! streams the controller's state and takes setpoints published by a client.
//!
//! ```text
//!  recorder thread ── every LIVE_EVERY-th record ──► /gimbal/state (JSON, the MCAP's schema)
//!  client publishes on /gimbal/setpoint {"axis": "pan"|"tilt", "rad": 0.3}
//!      └─► listener (SDK thread) ─► bridge ─► sample (try_recv, next sample) ─► setpoint
//! ```
//!
//! The state is sent at 1 kHz (every 10th sample): a viewer draws at 60 Hz, and the MCAP keeps
//! every sample. A setpoint replaces the axis's script from the next sample on, so the
//! reference (which follows the script) no longer describes the run after it:
//! `data.live_setpoints` says how many the controller took. A setpoint must be within ±π rad,
//! as a `--steps` one (`control::check_setpoint`, the same function); `data.foxglove_setpoints`
//! counts what arrived: accepted, refused by reason, undecodable (their stderr lines are
//! rate-limited). The server has no authentication, so only loopback addresses are accepted.

use std::net::SocketAddr;
use std::sync::Arc;

use foxglove::websocket::{Capability, Client, ClientChannel, ServerListener};
use foxglove::{Context, RawChannel, Schema, WebSocketServer, WebSocketServerHandle};
use preempt_rig::intake::{Intake, IntakeCounts, Refusal};

use crate::control::{AXES, check_setpoint};
use crate::record::{SampleRecord, SetpointCmd};
use crate::telemetry::{STATE_SCHEMA, state_json};

pub use crate::telemetry::LIVE_EVERY;
/// The topic a client publishes setpoints on.
pub const SETPOINT_TOPIC: &str = "/gimbal/setpoint";

/// Checks `--foxglove ADDR`: `host:port` on a loopback address.
///
/// # Errors
/// A message naming the flag.
pub fn parse_addr(addr: &str) -> Result<SocketAddr, String> {
    let a: SocketAddr = addr.parse().map_err(|_| {
        format!("--foxglove {addr}: expected HOST:PORT on a loopback address, e.g. 127.0.0.1:8765")
    })?;
    if !a.ip().is_loopback() {
        return Err(format!(
            "--foxglove {addr}: only loopback addresses (the server has no authentication), \
             e.g. 127.0.0.1:{}",
            a.port()
        ));
    }
    Ok(a)
}

/// A setpoint message: `{"axis": "pan", "rad": 0.3}`.
#[derive(serde::Deserialize)]
struct SetpointMsg {
    axis: String,
    rad: f64,
}

/// Decodes a client's setpoint message and checks its angle (`--steps`' check).
///
/// # Errors
/// Malformed JSON or an unknown axis (the outer error: undecodable); an angle beyond ±π rad
/// or a NaN (the inner one: refused, with the reason).
pub fn decode_setpoint(payload: &[u8]) -> Result<Result<SetpointCmd, (Refusal, String)>, String> {
    let m: SetpointMsg = serde_json::from_slice(payload)
        .map_err(|e| format!("setpoint: expected {{\"axis\": \"pan\", \"rad\": 0.3}}: {e}"))?;
    let axis = AXES
        .iter()
        .position(|a| *a == m.axis)
        .ok_or_else(|| format!("setpoint: axis '{}' is not pan or tilt", m.axis))?;
    Ok(check_setpoint(m.rad)
        .map(|rad| SetpointCmd { axis, rad })
        .map_err(|(why, msg)| (why, format!("{} setpoint refused: {msg}", AXES[axis]))))
}

struct Listener {
    intake: Arc<Intake<SetpointCmd>>,
}

/// One message a client published on [`SETPOINT_TOPIC`], through `intake`: counted once,
/// logged at a bounded rate. Whether it was accepted.
fn take(intake: &Intake<SetpointCmd>, payload: &[u8]) -> bool {
    match decode_setpoint(payload) {
        Ok(checked) => intake.offer(checked),
        Err(e) => {
            intake.undecodable(|| e);
            false
        }
    }
}

impl ServerListener for Listener {
    fn on_message_data(&self, _client: Client, channel: &ClientChannel, payload: &[u8]) {
        if channel.topic != SETPOINT_TOPIC {
            return;
        }
        take(&self.intake, payload);
    }
}

/// The running server.
pub struct Live {
    /// Kept alive here: the server holds its context weakly (no context, no channels).
    _ctx: Arc<Context>,
    handle: WebSocketServerHandle,
    intake: Arc<Intake<SetpointCmd>>,
    state: Arc<RawChannel>,
    buf: Vec<u8>,
    sent: u64,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("port", &self.handle.port())
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Starts the server on `addr`; setpoints go through `intake` (its bridge shared with
    /// `--ros2`'s node).
    ///
    /// # Errors
    /// The address is taken or cannot be bound.
    pub fn start(addr: SocketAddr, intake: Intake<SetpointCmd>) -> Result<Live, String> {
        let intake = Arc::new(intake);
        let ctx = Context::new();
        let state = ctx
            .channel_builder("/gimbal/state")
            .message_encoding("json")
            .schema(Schema::new(
                "preempt.gimbal.State",
                "jsonschema",
                STATE_SCHEMA.as_bytes(),
            ))
            .build_raw()
            .map_err(|e| format!("--foxglove: cannot create the state channel: {e}"))?;
        let handle = WebSocketServer::new()
            .name("preempt gimbal")
            .context(&ctx)
            .bind(addr.ip().to_string(), addr.port())
            .capabilities([Capability::ClientPublish])
            .supported_encodings(["json"])
            .listener(Arc::new(Listener {
                intake: Arc::clone(&intake),
            }))
            .start_blocking()
            .map_err(|e| format!("--foxglove {addr}: cannot start the server: {e}"))?;
        Ok(Live {
            _ctx: ctx,
            handle,
            intake,
            state,
            buf: Vec::with_capacity(512),
            sent: 0,
        })
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.handle.port()
    }

    /// Sends `r` if it is one of every [`LIVE_EVERY`] samples.
    pub fn state(&mut self, r: &SampleRecord) {
        if r.k % LIVE_EVERY != 0 {
            return;
        }
        self.buf.clear();
        if state_json(r, &mut self.buf).is_ok() {
            self.state.log(&self.buf);
            self.sent += 1;
        }
    }

    /// Messages sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Stops the server, writes the refusals' summary, returns the setpoints' counts.
    pub fn stop(self) -> IntakeCounts {
        let _ = self.handle.stop();
        self.intake.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setpoints_and_addresses_are_checked() {
        assert_eq!(
            decode_setpoint(br#"{"axis": "tilt", "rad": -0.25}"#).unwrap(),
            Ok(SetpointCmd {
                axis: 1,
                rad: -0.25
            })
        );
        assert!(decode_setpoint(br#"{"axis": "roll", "rad": 1}"#).is_err());
        assert!(decode_setpoint(b"nonsense").is_err());
        assert!(parse_addr("127.0.0.1:8765").is_ok());
        let e = parse_addr("0.0.0.0:8765").unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        assert!(parse_addr("8765").is_err());
    }

    /// Issue 40: the Foxglove path checks the range `--steps` does and counts by reason.
    #[test]
    fn setpoints_beyond_pi_are_refused_and_counted_by_reason() {
        let (tx, mut rx) = preempt::bridge::channel(1);
        let intake = Intake::new("test: Foxglove setpoint", tx);
        assert!(!take(&intake, br#"{"axis": "tilt", "rad": 1e308}"#));
        assert!(!take(&intake, br#"{"axis": "pan", "rad": 3.2}"#));
        assert!(!take(&intake, br#"{"axis": "pan", "rad": "x"}"#));
        assert!(take(&intake, br#"{"axis": "pan", "rad": -0.0}"#));
        assert!(
            !take(&intake, br#"{"axis": "pan", "rad": 0.1}"#),
            "queue of one"
        );
        let c = intake.finish();
        assert_eq!((c.accepted, c.undecodable), (1, 1));
        assert_eq!((c.refused.out_of_range, c.refused.queue_full), (2, 1));
        assert_eq!(c.received(), 5);
        assert_eq!(rx.try_recv().map(|c| c.axis), Some(0));
    }

    /// Issue 40: 100 000 refused setpoints through the listener's path write a bounded
    /// number of stderr lines.
    #[test]
    fn a_flood_of_refused_setpoints_writes_a_bounded_number_of_lines() {
        let (log, lines) = preempt_io::ratelog::RateLimitedLog::collecting(
            "test: refused",
            preempt_io::ratelog::BURST,
            preempt_io::ratelog::INTERVAL,
        );
        let (tx, _rx) = preempt::bridge::channel(1);
        let intake = Intake::with_log("gimbal: Foxglove", log, tx);
        for i in 0..100_000 {
            let bad = if i % 2 == 0 {
                br#"{"axis": "tilt", "rad": 1e308}"#.as_slice()
            } else {
                b"garbage".as_slice()
            };
            take(&intake, bad);
        }
        let c = intake.finish();
        assert_eq!(c.refused.out_of_range + c.undecodable, 100_000);
        let lines = lines.lock().unwrap();
        assert!(lines.len() <= 20, "{} lines", lines.len());
        assert!(
            lines[0].starts_with("gimbal: Foxglove: tilt setpoint refused"),
            "{lines:?}"
        );
    }
}
