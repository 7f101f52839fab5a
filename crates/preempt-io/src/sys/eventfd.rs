//! eventfd(2): a counter file descriptor used as a wake-up line (owned by the RTIO work).
