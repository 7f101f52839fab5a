//! A sensor stream from the simulated IMU over its asynchronous SPI bus: starts `imu-sim`
//! (3200 Hz IMU + one 100 Hz accelerometer, for 2 s) with the register files, INT lines and
//! bus sockets inherited, streams both devices through one RTIO context with a FIFO-watermark
//! trigger, decodes the frames to q31 and prints a few, then stops after 400 IMU frames.
//!
//! ```text
//! cargo build -p preempt-imu-sim          # the simulator binary
//! cargo run -p preempt-io --example rtio_imu_stream
//! ```
//!
//! The simulator is looked up next to this example (`target/<profile>/imu-sim`) or taken from
//! `$IMU_SIM`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use preempt_io::rtio::sensor::{
    self, Channel, DataOpt, ImuDecoder, Q31Sample, StreamTrigger, Trigger,
};
use preempt_io::rtio::simimu::REGFILE_LEN;
use preempt_io::rtio::{Rtio, RtioConfig};
use preempt_io::sys::eventfd::EventFd;
use preempt_io::sys::memfd::MemFd;
use preempt_io::sys::{process, socket};

fn imu_sim() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("IMU_SIM") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/<profile>/examples/rtio_imu_stream -> target/<profile>/imu-sim
    let p = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("imu-sim"))
        .ok_or("cannot locate the target directory")?;
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "{} not found: run `cargo build -p preempt-imu-sim` first or set IMU_SIM",
            p.display()
        ))
    }
}

struct Device {
    regs: MemFd,
    int: EventFd,
    bus: OwnedFd,
    sim_end: OwnedFd,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let exe = imu_sim()?;
    let devices = (0..2)
        .map(|i| -> std::io::Result<Device> {
            let (bus, sim_end) = socket::seqpacket_pair()?;
            Ok(Device {
                regs: MemFd::new(&format!("imu-{i}"), REGFILE_LEN)?,
                int: EventFd::new(0, false)?,
                bus,
                sim_end,
            })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut pass: Vec<(BorrowedFd<'_>, RawFd)> = Vec::new();
    let mut list = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let base = process::FIRST_PASSED_FD + 3 * RawFd::try_from(i)?;
        pass.push((d.regs.as_fd(), base));
        pass.push((d.int.as_fd(), base + 1));
        pass.push((d.sim_end.as_fd(), base + 2));
        list.push(format!("{},{},{}", base, base + 1, base + 2));
    }
    let mut cmd = Command::new(&exe);
    cmd.args([
        "--odr",
        "3200",
        "--accel",
        "100",
        "--duration",
        "2",
        "--bus",
        "spi",
    ])
    .args(["--fds", &list.join(",")])
    .stdin(Stdio::null());
    let mut child = process::spawn_with_fds(&mut cmd, &pass)?;
    drop(pass);

    let mut rtio = Rtio::new(RtioConfig::default())?;
    println!(
        "backend: {:?} ({})",
        rtio.backend().kind,
        rtio.backend().reason
    );
    let triggers = [StreamTrigger {
        trigger: Trigger::FifoWatermark,
        opt: DataOpt::Include,
    }];
    let mut streams = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let bus = d.bus.try_clone()?;
        let int = d.int.as_fd().try_clone_to_owned()?;
        // Watermark 8 frames: one chain (and one return to user space) per 8 IMU samples.
        streams.push(sensor::stream_spi(
            &mut rtio, bus, int, &triggers, 8, i as u64,
        )?);
    }
    let decoders = [ImuDecoder::new(3200), ImuDecoder::new(100)];
    let mut out = [Q31Sample::default(); 128];
    let mut imu_frames = 0;
    let mut reads = [0_u32; 2];
    sensor::processing_loop(&mut rtio, &mut streams, |ev| {
        let dec = decoders[ev.stream];
        let mut fit = 0;
        let n = dec.decode(&ev.header, ev.data, Channel::Accel, &mut fit, &mut out);
        reads[ev.stream] += 1;
        if reads[ev.stream] % 10 == 1 && n > 0 {
            let s = out[n - 1];
            let g = |v: i32| f64::from(v) * 2_f64.powi(i32::from(s.shift)) / 2_f64.powi(31);
            println!(
                "device {} read {:>3}: {n:>2} frames, last seq {:>5} at {} ns: accel {:+.3} {:+.3} {:+.3} m/s^2",
                ev.stream,
                reads[ev.stream],
                s.seq,
                s.timestamp_ns,
                g(s.values[0]),
                g(s.values[1]),
                g(s.values[2])
            );
        }
        if ev.stream == 0 {
            imu_frames += n;
        }
        imu_frames < 400
    })?;
    println!(
        "done: {imu_frames} IMU frames in {} reads, {} accelerometer reads",
        reads[0], reads[1]
    );
    drop(rtio);
    child.kill()?;
    child.wait()?;
    Ok(())
}
