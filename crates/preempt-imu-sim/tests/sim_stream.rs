//! End to end: spawn `imu-sim`, stream its IMU through an RTIO context on both backends,
//! check sequence continuity and decoding, and check the child is gone after drop.

use std::path::Path;

use preempt_imu_sim::sim::SimConfig;
use preempt_imu_sim::spawn::SimProcess;
use preempt_io::rtio::sensor::{
    self, Channel, DataOpt, ImuDecoder, Q31Sample, StreamTrigger, Trigger,
};
use preempt_io::rtio::{BackendChoice, Rtio, RtioConfig};

fn run(backend: BackendChoice) {
    let cfg = SimConfig {
        odr_hz: 3200,
        accel_hz: vec![100],
        cpu: None,
        fifo_priority: None,
        duration_ns: None,
    };
    let mut sim = SimProcess::spawn(Path::new(env!("CARGO_BIN_EXE_imu-sim")), &cfg).unwrap();
    let pid = sim.pid().unwrap();
    let rcfg = RtioConfig {
        sq_size: 16,
        cq_size: 8,
        mempool_blocks: 0,
        mempool_block_size: 0,
        backend,
    };
    let mut rtio = match Rtio::new(rcfg) {
        Ok(r) => r,
        Err(e) => {
            println!("SKIP {backend:?}: {e}");
            return;
        }
    };
    let triggers = [StreamTrigger {
        trigger: Trigger::FifoWatermark,
        opt: DataOpt::Include,
    }];
    let mut streams = Vec::new();
    for (i, d) in sim.devices.iter().enumerate() {
        let (regs, int) = d.dup_fds().unwrap();
        streams.push(sensor::stream(&mut rtio, regs, int, &triggers, 4, i as u64).unwrap());
    }
    let dec = ImuDecoder::new(3200);
    let mut next_seq: Option<u16> = None;
    let mut frames = 0;
    let mut out = [Q31Sample::default(); 128];
    sensor::processing_loop(&mut rtio, &mut streams, |ev| {
        if ev.stream != 0 {
            return true;
        }
        assert_ne!(ev.header.period_ns, 0, "chain failed");
        let mut fit = 0;
        let n = dec.decode(&ev.header, ev.data, Channel::Accel, &mut fit, &mut out);
        assert_eq!(n, dec.frame_count(ev.data, Channel::Accel));
        for s in &out[..n] {
            if let Some(e) = next_seq {
                // The reader keeps up (the FIFO holds 32 ms), so no gap is possible here
                // unless frames are lost or duplicated by the reader.
                assert_eq!(s.seq, e, "{backend:?}: sequence gap or duplicate");
            }
            next_seq = Some(s.seq.wrapping_add(1));
            // z axis carries 1 g = 2048 counts: 9.80665 m/s².
            let z = f64::from(s.values[2]) * 2_f64.powi(i32::from(s.shift)) / 2_f64.powi(31);
            assert!((z - 9.80665).abs() < 1e-3, "{z}");
        }
        assert!(n == 0 || out[n - 1].timestamp_ns == ev.header.int_timestamp_ns);
        frames += n;
        frames < 200
    })
    .unwrap();
    drop(rtio);
    sim.stop().unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "imu-sim must be gone after stop"
    );
}

#[test]
fn imu_stream_over_io_uring_and_epoll() {
    run(BackendChoice::IoUring);
    run(BackendChoice::Epoll);
}
