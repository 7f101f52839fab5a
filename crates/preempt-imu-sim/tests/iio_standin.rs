//! Issue 16: the IIO backend of the sensor stream (`preempt_io::rtio::sensor::iio`) against a
//! stand-in IIO buffered device fed by the simulator (`preempt_imu_sim::iio`), on both RTIO
//! backends: the reader's sysfs configuration reaches the device, every read is a whole
//! number of watermark batches, values decode through the layout the reader derived, and the
//! scans arrive complete and in order.

use std::path::PathBuf;

use preempt_imu_sim::iio::StandIn;
use preempt_io::rtio::sensor::iio::{self, IioStream};
use preempt_io::rtio::{BackendChoice, Rtio, RtioConfig};

const SCANS: u64 = 480;
const WATERMARK: u32 = 8;

fn standin_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("preempt-iio-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(backend: BackendChoice, tag: &str) {
    let dir = standin_dir(tag);
    let standin = StandIn::create(&dir).unwrap();
    let device = standin.device.clone();
    let feeder = std::thread::spawn(move || standin.feed(3200, SCANS));
    let chans = ["in_accel_x", "in_accel_y", "in_accel_z", "in_timestamp"];
    let (fd, layout) = iio::setup(&device, &chans, WATERMARK, 64).unwrap();
    assert_eq!(layout.scan_bytes, 16);
    for (attr, want) in [
        ("buffer/enable", "1"),
        ("buffer/watermark", "8"),
        ("buffer/length", "64"),
        ("scan_elements/in_accel_z_en", "1"),
    ] {
        let got = std::fs::read_to_string(device.sysfs.join(attr)).unwrap();
        assert_eq!(got.trim(), want, "{attr}");
    }
    let mut rtio = match Rtio::new(RtioConfig {
        backend,
        ..RtioConfig::default()
    }) {
        Ok(r) => r,
        Err(e) if backend == BackendChoice::IoUring => {
            assert!(
                std::env::var("PREEMPT_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
                "io_uring unavailable ({e}) but PREEMPT_REQUIRE_PRIVILEGED=1"
            );
            println!("SKIP io_uring: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let stream = IioStream::new(&mut rtio, fd, layout, 64, 7).unwrap();
    let z = stream.layout().position("in_accel_z").unwrap();
    let ts = stream.layout().position("in_timestamp").unwrap();
    let (mut got, mut reads, mut last_ts) = (0_u64, 0_u64, 0_i64);
    while got < SCANS {
        stream.arm(&mut rtio).unwrap();
        let cqe = rtio.cqe_consume_block().unwrap();
        assert_eq!(cqe.userdata, 7);
        let data = stream.complete(&rtio, &cqe).unwrap();
        let n = data.len() / 16;
        assert_eq!(
            n % WATERMARK as usize,
            0,
            "{backend:?}: a read of {n} scans is not whole watermark batches"
        );
        for scan in data.chunks_exact(16) {
            assert_eq!(stream.layout().value(scan, z), 2048, "1 g on z");
            let t = stream.layout().value(scan, ts);
            assert!(t > last_ts, "{backend:?}: timestamps must increase");
            last_ts = t;
        }
        got += n as u64;
        reads += 1;
    }
    drop(rtio);
    assert_eq!(feeder.join().unwrap().unwrap(), SCANS);
    assert_eq!(got, SCANS);
    assert!(reads <= SCANS / u64::from(WATERMARK));
    println!("{backend:?}: {got} scans in {reads} reads");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn iio_stream_reads_watermark_batches_from_the_standin() {
    run(BackendChoice::IoUring, "uring");
    run(BackendChoice::Epoll, "epoll");
}

#[test]
fn iio_setup_names_the_missing_attribute() {
    let dir = standin_dir("missing");
    let s = StandIn::create(&dir).unwrap();
    let e = iio::setup(&s.device, &["in_anglvel_x"], 4, 64).unwrap_err();
    assert!(e.to_string().contains("in_anglvel_x_en"), "{e}");
    let e = iio::setup(&s.device, &["in_accel_x"], 0, 64).unwrap_err();
    assert!(e.to_string().contains("watermark"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
