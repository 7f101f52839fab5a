//! `imu-sim`: a simulated IMU for the RTIO benchmark.

fn main() {}
