//! The POSIX primitives the microbenchmarks time, exactly as a C program calls them (the seeds
//! measure `pthread_mutex_*`, `pthread_create`/`pthread_join` with preallocated stacks,
//! `malloc`/`free` and semaphores, not Rust's wrappers around them).
//!
//! Every wrapper checks its return value and reads the error where the API puts it (the
//! `pthread_*` calls return it; `sem_*` set `errno`). Candidates to move into
//! `preempt_io::sys` once a second user appears.

use std::cell::UnsafeCell;
use std::io;
use std::ptr;

fn check_rc(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::new(
            io::Error::from_raw_os_error(rc).kind(),
            format!("{what}: {}", io::Error::from_raw_os_error(rc)),
        ))
    }
}

/// A heap-pinned `pthread_mutex_t` (a pthread mutex must not move once initialised).
pub(crate) struct PthreadMutex {
    inner: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex is designed to be shared between threads; all access goes through
// the pthread functions, which synchronise internally.
unsafe impl Sync for PthreadMutex {}
// SAFETY: an unlocked pthread mutex may be used from any thread.
unsafe impl Send for PthreadMutex {}

impl PthreadMutex {
    /// A mutex with default attributes, or with the priority-inheritance protocol.
    pub(crate) fn new(priority_inheritance: bool) -> io::Result<Self> {
        let inner = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        let mut attr = std::mem::MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
        // SAFETY: `attr` is valid writable storage for pthread_mutexattr_init.
        let rc = unsafe { libc::pthread_mutexattr_init(attr.as_mut_ptr()) };
        check_rc(rc, "pthread_mutexattr_init")?;
        let proto = if priority_inheritance {
            libc::PTHREAD_PRIO_INHERIT
        } else {
            libc::PTHREAD_PRIO_NONE
        };
        // SAFETY: `attr` was initialised just above.
        let rc = unsafe { libc::pthread_mutexattr_setprotocol(attr.as_mut_ptr(), proto) };
        let result = check_rc(rc, "pthread_mutexattr_setprotocol").and_then(|()| {
            // SAFETY: `inner` is heap storage that never moves and is not yet in use; `attr`
            // is initialised.
            let rc = unsafe { libc::pthread_mutex_init(inner.get(), attr.as_ptr()) };
            check_rc(rc, "pthread_mutex_init")
        });
        // SAFETY: `attr` is initialised and no longer needed (the mutex copied what it needs).
        unsafe { libc::pthread_mutexattr_destroy(attr.as_mut_ptr()) };
        result.map(|()| Self { inner })
    }

    /// Locks (panics on an error, which for a default or PI mutex locked by its owner cannot
    /// happen: the benchmark never locks twice).
    #[inline]
    pub(crate) fn lock(&self) {
        // SAFETY: the mutex is initialised and pinned on the heap.
        let rc = unsafe { libc::pthread_mutex_lock(self.inner.get()) };
        debug_assert_eq!(rc, 0);
        assert_eq!(rc, 0, "pthread_mutex_lock failed");
    }

    /// Unlocks; the caller holds the lock.
    #[inline]
    pub(crate) fn unlock(&self) {
        // SAFETY: the mutex is initialised and pinned; the benchmark only unlocks what it
        // locked on the same thread.
        let rc = unsafe { libc::pthread_mutex_unlock(self.inner.get()) };
        assert_eq!(rc, 0, "pthread_mutex_unlock failed");
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: no thread holds or waits on the mutex any more (we own it exclusively).
        unsafe { libc::pthread_mutex_destroy(self.inner.get()) };
    }
}

/// A heap-pinned, process-private POSIX semaphore (`sem_t`).
pub(crate) struct Semaphore {
    inner: Box<UnsafeCell<libc::sem_t>>,
}

// SAFETY: POSIX semaphores are made to be posted and waited on from different threads.
unsafe impl Sync for Semaphore {}
// SAFETY: as above.
unsafe impl Send for Semaphore {}

impl Semaphore {
    /// A semaphore with value 0.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: sem_t is plain data for which all-zero bytes are a valid (if meaningless)
        // value; sem_init initialises it below before any use.
        let zeroed: libc::sem_t = unsafe { std::mem::zeroed() };
        let inner = Box::new(UnsafeCell::new(zeroed));
        // SAFETY: `inner` is pinned heap storage; pshared 0 = shared between threads only.
        if unsafe { libc::sem_init(inner.get(), 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { inner })
    }

    /// `sem_post`.
    #[inline]
    pub(crate) fn post(&self) -> io::Result<()> {
        // SAFETY: the semaphore is initialised and pinned.
        if unsafe { libc::sem_post(self.inner.get()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `sem_wait`, retrying on EINTR.
    #[inline]
    pub(crate) fn wait(&self) -> io::Result<()> {
        loop {
            // SAFETY: the semaphore is initialised and pinned.
            if unsafe { libc::sem_wait(self.inner.get()) } == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        // SAFETY: no thread waits on the semaphore any more (we own it exclusively).
        unsafe { libc::sem_destroy(self.inner.get()) };
    }
}

/// One `malloc(size)`; `None` when it fails.
#[inline]
pub fn malloc(size: usize) -> Option<ptr::NonNull<u8>> {
    // SAFETY: malloc has no preconditions.
    ptr::NonNull::new(unsafe { libc::malloc(size) }.cast())
}

/// `free` of a pointer returned by [`malloc`].
///
/// # Safety
/// `p` must come from [`malloc`] and not have been freed.
#[inline]
pub unsafe fn free(p: ptr::NonNull<u8>) {
    // SAFETY: the caller guarantees `p` is a live malloc allocation.
    unsafe { libc::free(p.as_ptr().cast()) }
}

/// A stack allocated up front for a thread, as the NXP benchmark does
/// (`posix_memalign` + `pthread_attr_setstack`).
pub(crate) struct PreallocatedStack {
    base: ptr::NonNull<libc::c_void>,
    size: usize,
    attr: libc::pthread_attr_t,
}

impl PreallocatedStack {
    /// Allocates `size` bytes aligned to the page size and an attribute object using them.
    pub(crate) fn new(size: usize) -> io::Result<Self> {
        let page = preempt_io::sys::mem::page_size();
        let mut base: *mut libc::c_void = ptr::null_mut();
        // SAFETY: `base` is a valid out-pointer; the alignment is a power of two multiple of
        // sizeof(void*) (a page).
        let rc = unsafe { libc::posix_memalign(&mut base, page, size) };
        check_rc(rc, "posix_memalign")?;
        let base = ptr::NonNull::new(base)
            .ok_or_else(|| io::Error::other("posix_memalign returned null"))?;
        let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
        // SAFETY: valid storage for pthread_attr_init.
        let rc = unsafe { libc::pthread_attr_init(attr.as_mut_ptr()) };
        if let Err(e) = check_rc(rc, "pthread_attr_init") {
            // SAFETY: `base` came from posix_memalign above and is not used elsewhere.
            unsafe { libc::free(base.as_ptr()) };
            return Err(e);
        }
        // SAFETY: pthread_attr_init succeeded.
        let mut attr = unsafe { attr.assume_init() };
        // SAFETY: `attr` is initialised; the stack is `size` writable bytes that outlive the
        // thread (we free them only after join, in Drop).
        let rc = unsafe { libc::pthread_attr_setstack(&mut attr, base.as_ptr(), size) };
        let mut me = Self { base, size, attr };
        check_rc(rc, "pthread_attr_setstack")?;
        me.size = size;
        Ok(me)
    }
}

impl Drop for PreallocatedStack {
    fn drop(&mut self) {
        // SAFETY: the attribute was initialised in `new`; the stack's thread was joined
        // before its stack is dropped (RawThread borrows the stack for its whole life).
        unsafe {
            libc::pthread_attr_destroy(&mut self.attr);
            libc::free(self.base.as_ptr());
        }
    }
}

extern "C" fn empty_thread(_: *mut libc::c_void) -> *mut libc::c_void {
    ptr::null_mut()
}

/// A thread started with `pthread_create` on a preallocated stack, running an empty function
/// (the NXP `test_function`). Must be [`join`](RawThread::join)ed.
pub struct RawThread<'s> {
    id: libc::pthread_t,
    _stack: &'s PreallocatedStack,
}

impl<'s> RawThread<'s> {
    /// `pthread_create` with the stack's attributes.
    #[inline]
    pub(crate) fn spawn(stack: &'s PreallocatedStack) -> io::Result<Self> {
        let mut id: libc::pthread_t = 0;
        // SAFETY: `id` is a valid out-pointer; `stack.attr` is an initialised attribute object
        // whose stack outlives the thread (the borrow in RawThread ties them); `empty_thread`
        // is a valid start routine that ignores its argument and touches no Rust state.
        let rc =
            unsafe { libc::pthread_create(&mut id, &stack.attr, empty_thread, ptr::null_mut()) };
        check_rc(rc, "pthread_create")?;
        Ok(Self { id, _stack: stack })
    }

    /// `pthread_join`.
    #[inline]
    pub fn join(self) -> io::Result<()> {
        // SAFETY: `id` is a joinable thread created by `spawn` and joined only here (join
        // consumes self).
        let rc = unsafe { libc::pthread_join(self.id, ptr::null_mut()) };
        check_rc(rc, "pthread_join")
    }
}
