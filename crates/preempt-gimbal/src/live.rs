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
//! `data.live_setpoints` says how many arrived. The server has no authentication, so only
//! loopback addresses are accepted.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use foxglove::websocket::{Capability, Client, ClientChannel, ServerListener};
use foxglove::{Context, RawChannel, Schema, WebSocketServer, WebSocketServerHandle};
use preempt::bridge::Sender;

use crate::control::AXES;
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

/// Decodes a client's setpoint message.
///
/// # Errors
/// Malformed JSON, an unknown axis, a non-finite angle.
pub fn decode_setpoint(payload: &[u8]) -> Result<SetpointCmd, String> {
    let m: SetpointMsg = serde_json::from_slice(payload)
        .map_err(|e| format!("setpoint: expected {{\"axis\": \"pan\", \"rad\": 0.3}}: {e}"))?;
    let axis = AXES
        .iter()
        .position(|a| *a == m.axis)
        .ok_or_else(|| format!("setpoint: axis '{}' is not pan or tilt", m.axis))?;
    if !m.rad.is_finite() {
        return Err("setpoint: rad must be finite".into());
    }
    Ok(SetpointCmd { axis, rad: m.rad })
}

struct Listener {
    setpoints: Arc<Mutex<Sender<SetpointCmd>>>,
}

impl ServerListener for Listener {
    fn on_message_data(&self, _client: Client, channel: &ClientChannel, payload: &[u8]) {
        if channel.topic != SETPOINT_TOPIC {
            return;
        }
        match decode_setpoint(payload) {
            Ok(c) => {
                let mut tx = self.setpoints.lock().unwrap_or_else(|e| e.into_inner());
                if tx.send(c).is_err() {
                    eprintln!("gimbal: live setpoint dropped: the controller's queue is full");
                }
            }
            Err(e) => eprintln!("gimbal: {e}"),
        }
    }
}

/// The running server.
pub struct Live {
    /// Kept alive here: the server holds its context weakly (no context, no channels).
    _ctx: Arc<Context>,
    handle: WebSocketServerHandle,
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
    /// Starts the server on `addr`; setpoints go to `setpoints` (shared with `--ros2`'s node).
    ///
    /// # Errors
    /// The address is taken or cannot be bound.
    pub fn start(
        addr: SocketAddr,
        setpoints: Arc<Mutex<Sender<SetpointCmd>>>,
    ) -> Result<Live, String> {
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
            .listener(Arc::new(Listener { setpoints }))
            .start_blocking()
            .map_err(|e| format!("--foxglove {addr}: cannot start the server: {e}"))?;
        Ok(Live {
            _ctx: ctx,
            handle,
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

    /// Stops the server.
    pub fn stop(self) {
        let _ = self.handle.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setpoints_and_addresses_are_checked() {
        assert_eq!(
            decode_setpoint(br#"{"axis": "tilt", "rad": -0.25}"#).unwrap(),
            SetpointCmd {
                axis: 1,
                rad: -0.25
            }
        );
        assert!(decode_setpoint(br#"{"axis": "roll", "rad": 1}"#).is_err());
        assert!(decode_setpoint(b"nonsense").is_err());
        assert!(parse_addr("127.0.0.1:8765").is_ok());
        let e = parse_addr("0.0.0.0:8765").unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        assert!(parse_addr("8765").is_err());
    }
}
