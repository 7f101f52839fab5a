//! The `crate::loom` shim: one import path for the atomics, cells, `Arc`, `Mutex` and spin
//! hints of the lock-free [`bridge`](crate::bridge) and the explainer's
//! [`note_log`](crate::note_log), so that `RUSTFLAGS="--cfg loom"` model-checks them with [loom] (as
//! `tokio/src/loom/` does): normal builds re-export `std`, loom builds loom's.
//!
//! Under `--cfg loom` only the bridge, the note log (and this shim) are compiled in this
//! crate; the rest of the runtime needs `const` constructors that loom's types do not have.
//! Run the models:
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p preempt --release --test loom_bridge
//! RUSTFLAGS="--cfg loom" cargo test -p preempt --release --lib note_log
//! ```
//!
//! [loom]: https://docs.rs/loom/0.7

#[cfg(not(loom))]
pub(crate) mod sync {
    pub(crate) use std::sync::{Arc, Mutex, MutexGuard};
    pub(crate) mod atomic {
        pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    }
}

#[cfg(loom)]
pub(crate) mod sync {
    pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
    pub(crate) mod atomic {
        pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    }
}

/// Spin-wait hints: under loom each one lets the model run another thread (a spin loop
/// that never yields would never end in a model).
#[cfg(not(loom))]
pub(crate) mod hint {
    pub(crate) use std::hint::spin_loop;
    pub(crate) use std::thread::yield_now;
}

#[cfg(loom)]
pub(crate) mod hint {
    pub(crate) use loom::hint::spin_loop;
    pub(crate) use loom::thread::yield_now;
}

/// `UnsafeCell` with loom's closure-based API (`with`, `with_mut`), so the same code
/// compiles against `std` and loom (which checks every access for data races).
#[cfg(not(loom))]
pub(crate) mod cell {
    #[derive(Debug)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        #[inline(always)]
        pub(crate) const fn new(value: T) -> Self {
            Self(core::cell::UnsafeCell::new(value))
        }

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
