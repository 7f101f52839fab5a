//! memfd_create(2): anonymous shared memory files (owned by the RTIO work).
