//! Real-time synchronisation primitives for Linux threads.
//!
//! This crate is usable on its own: futex wrappers, a Priority Ceiling Protocol mutex on
//! PI futexes and a timed lock-free multi-producer single-consumer queue.
