//! The `#[preempt::app]` procedural macro.
