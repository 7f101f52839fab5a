//! The `crate::loom` shim: one import path for atomics, cells and threads, so that the
//! lock-free algorithms of this crate can be model-checked by [loom].
//!
//! Normal builds re-export `std`. Under `RUSTFLAGS="--cfg loom"` the same names come from
//! loom 0.7, which explores every interleaving (and every weak-memory outcome it models) of
//! the small tests in `tests/loom_*.rs`. The raw futex system calls cannot run under loom;
//! [`crate::futex`] replaces them there by a model with the same contract (see its docs).
//!
//! The layout imitates `tokio/src/loom/`: algorithms write `crate::loom::sync::atomic::AtomicU32`
//! and never mention `std::sync::atomic` directly.
//!
//! [loom]: https://docs.rs/loom/0.7

#[cfg(not(loom))]
pub(crate) mod sync {
    pub(crate) mod atomic {
        pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
    }
}

#[cfg(loom)]
pub(crate) mod sync {
    pub(crate) mod atomic {
        pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};
    }
    pub(crate) use loom::sync::Mutex;
}

#[cfg(loom)]
pub(crate) use loom::thread;

/// `UnsafeCell` with loom's closure-based access API (`with`, `with_mut`), so that the same
/// code compiles against both `std` and loom (loom checks every access for data races).
#[cfg(not(loom))]
pub(crate) mod cell {
    #[derive(Debug)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T: ?Sized>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        #[inline(always)]
        pub(crate) const fn new(value: T) -> Self {
            Self(core::cell::UnsafeCell::new(value))
        }

        #[inline(always)]
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    impl<T: ?Sized> UnsafeCell<T> {
        /// Runs `f` with a shared raw pointer to the contents.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Runs `f` with an exclusive raw pointer to the contents.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(loom)]
pub(crate) mod cell {
    pub(crate) use loom::cell::UnsafeCell;
}

/// Busy-wait hint. Under loom it yields, which tells the model checker that this thread
/// cannot make progress until another thread runs (otherwise spin loops never terminate).
#[inline(always)]
#[allow(
    dead_code,
    reason = "used by tests and by code that only exists in some cfgs"
)]
pub(crate) fn spin_hint() {
    #[cfg(not(loom))]
    core::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Marks a point where an algorithm relies on the single total order of `SeqCst`
/// operations (a Dekker pattern: `SeqCst` RMW, then `SeqCst` loads of other words).
///
/// In the Rust (C++20) memory model those `SeqCst` operations already give the guarantee,
/// and on x86_64 (locked RMW) and AArch64 (`stlxr` then `ldar`) the hardware provides it,
/// so normal builds emit nothing here. Loom, however, models `SeqCst` loads and RMWs as
/// `AcqRel` and only `fence(SeqCst)` exactly (loom README, "SeqCst accesses";
/// tokio-rs/loom#180), so under loom this is a `SeqCst` fence: it is at least as strong
/// as the property the real build relies on.
#[inline(always)]
pub(crate) fn seqcst_order_point() {
    #[cfg(loom)]
    sync::atomic::fence(sync::atomic::Ordering::SeqCst);
}
