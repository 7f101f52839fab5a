//! `preempt`: is this machine real-time ready?

fn main() {}
