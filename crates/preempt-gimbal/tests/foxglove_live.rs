//! The live Foxglove WebSocket server of `gimbal-demo --foxglove ADDR` (cargo feature
//! `foxglove`), driven by an independent client speaking the protocol
//! (subprotocol `foxglove.sdk.v1`: the ws-protocol of <https://github.com/foxglove/ws-protocol>, as the SDK names it) over `tungstenite`: it
//! subscribes to `/gimbal/state` and receives state messages, and publishes a setpoint of
//! 1e308 rad (refused and counted: beyond ±π, issue 40) then a valid one that the controller
//! then follows (the state messages carry the setpoint `sample` used).
//!
//! Without real-time privileges the run uses `PREEMPT_SOFT=1`; with
//! `PREEMPT_REQUIRE_PRIVILEGED=1` missing privileges fail the test instead.
#![cfg(feature = "foxglove")]

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tungstenite::Message;
use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;

use preempt_io::sys::clock;

mod support;

type Socket = tungstenite::WebSocket<TcpStream>;

/// Connects to the demo's server, retrying while it starts (the reference run comes first).
fn connect(port: u16, child: &mut std::process::Child) -> Socket {
    let start = Instant::now();
    loop {
        if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut req = format!("ws://127.0.0.1:{port}/")
                .into_client_request()
                .unwrap();
            req.headers_mut().insert(
                "Sec-WebSocket-Protocol",
                HeaderValue::from_static("foxglove.sdk.v1"),
            );
            let (ws, _) = tungstenite::client(req, stream).expect("WebSocket handshake");
            return ws;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the demo exited before its server came up"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no server on port {port}"
        );
        let next = clock::monotonic_now_ns() + 50_000_000;
        clock::sleep_until_ns(clock::ClockId::Monotonic, next).unwrap();
    }
}

#[test]
fn a_foxglove_client_receives_state_and_its_setpoint_reaches_the_controller() {
    let dir = std::env::temp_dir().join(format!("gimbal-foxglove-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gimbal-demo"));
    cmd.args(["--duration", "4", "--foxglove"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--out")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    support::soft_unless_privileged(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let mut ws = connect(port, &mut child);

    // The server announces its channels; subscribe to the state.
    let mut state_channel = None;
    while state_channel.is_none() {
        if let Message::Text(t) = ws.read().expect("server messages") {
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            if v["op"] == "advertise" {
                state_channel = v["channels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["topic"] == "/gimbal/state")
                    .map(|c| {
                        assert_eq!(c["encoding"], "json");
                        assert_eq!(c["schemaName"], "preempt.gimbal.State");
                        c["id"].as_u64().unwrap()
                    });
            }
        }
    }
    let sub = serde_json::json!({"op": "subscribe",
        "subscriptions": [{"id": 7, "channelId": state_channel.unwrap()}]});
    ws.send(Message::text(sub.to_string())).unwrap();
    // Advertise a client channel and publish two setpoints on it (binary opcode 1: channel
    // id, then the payload): one beyond ±π, refused, then a valid one.
    let adv = serde_json::json!({"op": "advertise", "channels": [{"id": 1,
        "topic": "/gimbal/setpoint", "encoding": "json", "schemaName": "preempt.gimbal.Setpoint"}]});
    ws.send(Message::text(adv.to_string())).unwrap();
    for payload in [
        br#"{"axis": "tilt", "rad": 1e308}"#.as_slice(),
        br#"{"axis": "tilt", "rad": 0.2}"#.as_slice(),
    ] {
        let mut frame = vec![1_u8];
        frame.extend_from_slice(&1_u32.to_le_bytes());
        frame.extend_from_slice(payload);
        ws.send(Message::binary(frame)).unwrap();
    }

    // State messages (binary opcode 1: subscription id, log time, payload) arrive, and the
    // controller follows the published setpoint instead of the script's -0.3 rad.
    let (mut states, mut followed, mut last_k) = (0_u64, false, None);
    while !followed || states < 20 {
        match ws.read() {
            Ok(Message::Binary(b)) if b.first() == Some(&1) => {
                assert_eq!(u32::from_le_bytes(b[1..5].try_into().unwrap()), 7);
                let v: serde_json::Value = serde_json::from_slice(&b[13..]).unwrap();
                let k = v["k"].as_u64().unwrap();
                assert!(last_k.is_none_or(|l| k > l), "state went back: {k}");
                last_k = Some(k);
                states += 1;
                let tilt = v["tilt"]["setpoint_rad"].as_f64().unwrap();
                assert!(
                    tilt.abs() <= std::f64::consts::PI,
                    "tilt setpoint {tilt} in force"
                );
                followed |= tilt == 0.2;
            }
            Ok(_) => {}
            Err(e) => panic!("after {states} state messages (setpoint followed: {followed}): {e}"),
        }
    }
    drop(ws);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("gimbal.json")).unwrap()).unwrap();
    assert_eq!(r["data"]["live_setpoints"], 1);
    assert_eq!(r["data"]["live_setpoints_not_taken"], 0);
    assert_eq!(
        r["data"]["foxglove_setpoints"],
        serde_json::json!({"accepted": 1, "undecodable": 0,
            "refused": {"nan": 0, "out_of_range": 1, "queue_full": 0}})
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "gimbal: Foxglove: tilt setpoint refused: the setpoint 1e308 rad is beyond ±π rad"
        ),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
