//! RTIC-style real-time applications on Linux threads.
