//! Interposed libc entry points: the blocking and slow calls a real-time job must not make,
//! seen where they are made.
//!
//! # Background
//!
//! A real-time task that writes a log line, sleeps, opens a file or waits on an ordinary
//! mutex blocks in the kernel for as long as the kernel likes. LLVM's RealtimeSanitizer
//! finds such calls with interceptors; its Rust crate (`rtsan-standalone`) needs a
//! pre-built `libclang_rt.rtsan` fetched from GitHub or an llvm-project clone at build
//! time, which an offline build cannot do. This module does the same with the ordinary
//! ELF mechanism: a function of the executable named like a libc function wins the
//! binding of every call to that name made from Rust code (std included), and forwards to
//! libc's own definition, found once with `dlsym(RTLD_NEXT, ..)`.
//!
//! # What is caught
//!
//! Only while the calling thread is *armed* ([`arm`]: the runtime arms an executor thread
//! for the length of each job when its real-time safety mode is on) and not inside a
//! framework path ([`suppress`]); otherwise every interposer is one thread-local load and
//! a branch on its way to libc.
//!
//! | call                                                            | kind          |
//! |-----------------------------------------------------------------|---------------|
//! | `write`, `writev`, `pwrite64`, `read`, `readv`, `pread64`, `send`, `sendto`, `sendmsg`, `recv`, `recvfrom`, `recvmsg` on a descriptor that can block (no `O_NONBLOCK`, or a regular file or block device) | [`Blocking::Io`] (`println!` is a `write` on fd 1) |
//! | `open`, `open64`, `openat`, `openat64`, `fsync`, `fdatasync`, `socket`, `connect`, `accept`, `accept4` | [`Blocking::Io`] |
//! | `clock_nanosleep` (`std::thread::sleep`), `nanosleep`, `usleep`, `sleep`; `poll`, `select`, `epoll_wait` with a timeout other than 0 | [`Blocking::Sleep`] |
//! | `pthread_mutex_lock`, `pthread_rwlock_rdlock`/`wrlock`, `pthread_cond_wait`/`timedwait`; `syscall(SYS_futex, FUTEX_WAIT*)`: a contended `std::sync::Mutex`, `Condvar::wait`, `thread::park` | [`Blocking::Lock`] |
//! | `pthread_create` (`std::thread::spawn`)                          | [`Blocking::ThreadSpawn`] |
//! | `fork`, `posix_spawn`, `posix_spawnp` (`std::process::Command`)  | [`Blocking::Fork`] |
//! | `mmap`, `mmap64`, `munmap`                                      | [`Blocking::Mmap`] |
//!
//! `syscall(SYS_futex, FUTEX_LOCK_PI*)` is a priority-inheritance lock (std never uses
//! priority-inheritance futexes): counted by [`disarm`] (so that the voluntary context switch
//! it may cause is explained) but never reported. preempt's own futex calls (preempt-sync:
//! the PCP slow path, the executors' doorbells) do not come here at all: they enter the
//! kernel without libc, so the framework's real-time path pays no interposer. Likewise
//! `syscall(SYS_io_uring_enter)`, and everything RTIO's `submit`/`submit_coalesced` do to
//! wait for their completions (they run [`suppress`]ed): RTIO is the real-time I/O path.
//!
//! What it misses: an *uncontended* `std::sync::Mutex` lock (one atomic instruction, no call
//! at all: caught the first time it blocks), calls libc makes internally (glibc binds them
//! to private aliases), raw `asm!` system calls, calls from C libraries linked as shared
//! objects (they bind to libc directly), and programs that are not linked with this crate's
//! [`linked`] reference (the runtime makes it; [`probe`] says whether it worked).
//!
//! The interposers exist only on Linux x86_64 and aarch64, where a variadic call passes its
//! integer arguments exactly as a fixed-arity call does (see the `open` and `syscall`
//! definitions).

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_long, c_uint, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// What kind of blocking or slow call an interposer saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Blocking {
    /// Waiting for a lock, a condition or a futex.
    Lock,
    /// Sleeping for a time, or waiting for descriptors with a timeout.
    Sleep,
    /// File, terminal or socket I/O that can block.
    Io,
    /// Creating a thread.
    ThreadSpawn,
    /// Creating a process.
    Fork,
    /// Changing the address space.
    Mmap,
}

thread_local! {
    /// Bit 0: armed (a checked job runs on this thread); the bits above: how many framework
    /// paths are open ([`suppress`]). Const-initialised, no destructor: readable from the
    /// allocator and from interposers at any time, thread exit included.
    static STATE: Cell<u32> = const { Cell::new(0) };
    /// Interposed calls (reported or not) since the last [`arm`].
    static SEEN: Cell<u32> = const { Cell::new(0) };
}

const ARMED: u32 = 1;
const SUPPRESSED: u32 = 2;

/// Whether the calling thread is armed and outside every framework path.
#[inline(always)]
pub fn armed() -> bool {
    STATE.with(|s| s.get() == ARMED)
}

/// Whether the calling thread is armed or inside a framework path: an interposed call
/// then goes through [`note`] (counted in a job, reported if armed).
#[inline(always)]
fn watched() -> bool {
    STATE.with(|s| s.get() != 0)
}

/// Arms the calling thread: interposed calls are reported to the hook until [`disarm`].
#[inline]
pub fn arm() {
    SEEN.with(|s| s.set(0));
    STATE.with(|s| s.set(s.get() | ARMED));
}

/// Disarms the calling thread; returns how many interposed calls (reported, or framework
/// futex waits) it made since [`arm`].
#[inline]
pub fn disarm() -> u32 {
    STATE.with(|s| s.set(s.get() & !ARMED));
    SEEN.with(Cell::get)
}

/// A framework path: nothing is reported while it lives.
#[must_use = "the path ends when the guard drops"]
pub struct Suppressed(());

impl Drop for Suppressed {
    #[inline]
    fn drop(&mut self) {
        STATE.with(|s| s.set(s.get() - SUPPRESSED));
    }
}

/// Opens a framework path on the calling thread (nests).
#[inline]
pub fn suppress() -> Suppressed {
    STATE.with(|s| s.set(s.get() + SUPPRESSED));
    Suppressed(())
}

/// Called with the kind and the libc function's name of each reported call.
pub(crate) type Hook = fn(Blocking, &'static str);

/// The hook, as a `usize` (0: none).
static HOOK: AtomicUsize = AtomicUsize::new(0);

/// Sets the function that reports calls made while armed. It runs on the calling thread,
/// inside a [`suppress`]ed path (it may allocate, print, lock).
pub fn set_hook(hook: Hook) {
    HOOK.store(hook as usize, Ordering::Release);
}

/// An interposed call made while armed or suppressed: counted in a job (it may block once,
/// which explains a voluntary context switch), reported when armed and `kind` is `Some`.
#[cold]
#[inline(never)]
fn note(kind: Option<Blocking>, name: &'static str) {
    let state = STATE.with(Cell::get);
    if state & ARMED != 0 {
        SEEN.with(|s| s.set(s.get().saturating_add(1)));
    }
    let Some(kind) = kind else {
        return;
    };
    if state != ARMED {
        return;
    }
    let hook = HOOK.load(Ordering::Acquire);
    if hook == 0 {
        return;
    }
    let _framework = suppress();
    // SAFETY: HOOK only ever holds 0 (checked above) or a `Hook` stored by `set_hook`;
    // function pointers and `usize` have one size on every target this module builds for.
    let hook: Hook = unsafe { std::mem::transmute::<usize, Hook>(hook) };
    hook(kind, name);
}

/// The address of libc's definition of `name` (NUL-terminated), looked up once.
#[inline]
fn real(cache: &AtomicUsize, name: &'static str) -> usize {
    let cached = cache.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    debug_assert!(name.ends_with('\0'));
    // SAFETY: `name` is a NUL-terminated static string (every caller passes a `concat!` of
    // the name and "\0"); RTLD_NEXT asks for the next definition after this object's.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    if found == 0 {
        // No libc definition to forward to: nothing sensible can continue. Reporting it
        // would go through an interposed `write`, so abort without a word.
        std::process::abort();
    }
    cache.store(found, Ordering::Relaxed);
    found
}

/// Whether a read or write on `fd` can block: no `O_NONBLOCK`, or a regular file or block
/// device (where `O_NONBLOCK` does not prevent waiting for the disk).
fn may_block(fd: c_int) -> bool {
    // SAFETY: F_GETFL takes no third argument and touches no memory of ours.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return false; // EBADF: the call fails at once, it does not block.
    }
    if flags & libc::O_NONBLOCK == 0 {
        return true;
    }
    // SAFETY: `st` is plain data, valid when zeroed, and written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable `stat`.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return false;
    }
    matches!(st.st_mode & libc::S_IFMT, libc::S_IFREG | libc::S_IFBLK)
}

fn io_on(fd: c_int) -> Option<Blocking> {
    may_block(fd).then_some(Blocking::Io)
}

/// `timeout_ms` of `poll`/`epoll_wait`: 0 returns at once.
fn waits_ms(timeout_ms: c_int) -> Option<Blocking> {
    (timeout_ms != 0).then_some(Blocking::Sleep)
}

/// `select`'s timeout: null waits forever, a zero timeval returns at once.
fn waits_tv(timeout: *const libc::timeval) -> Option<Blocking> {
    if timeout.is_null() {
        return Some(Blocking::Sleep);
    }
    // SAFETY: a non-null timeout passed to select must point to a valid timeval (select's
    // own contract, which the caller of this interposer owes libc anyway).
    let tv = unsafe { *timeout };
    (tv.tv_sec != 0 || tv.tv_usec != 0).then_some(Blocking::Sleep)
}

/// Interposers with fixed arguments: each checks, then forwards to libc's definition with
/// the same signature.
macro_rules! interpose {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty => $kind:expr;)*) => {
        $(
            #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
            #[doc = concat!("Interposed `", stringify!($name), "` (see the module docs).")]
            ///
            /// # Safety
            /// libc's contract for this function.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                if watched() {
                    note($kind, stringify!($name));
                }
                static REAL: AtomicUsize = AtomicUsize::new(0);
                let addr = real(&REAL, concat!(stringify!($name), "\0"));
                // SAFETY: `addr` is libc's definition of this very function (dlsym of its
                // name), whose C prototype is the signature spelled here.
                let real = unsafe {
                    std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*) -> $ret>(addr)
                };
                // SAFETY: the arguments are the caller's, who owes libc its contract.
                unsafe { real($($arg),*) }
            }
        )*
        /// The addresses of every interposer: referencing them makes the linker keep them
        /// in the program (an archive member nobody references is left out, and libc's
        /// definitions would bind instead).
        pub fn linked() -> usize {
            let mut sum = 0usize;
            $(
                #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
                {
                    sum = sum.wrapping_add(std::hint::black_box($name as *const () as usize));
                }
            )*
            sum = sum.wrapping_add(std::hint::black_box(variadic_linked()));
            sum
        }
    };
}

type SizeT = libc::size_t;
type SsizeT = libc::ssize_t;
type Iov = *const libc::iovec;

interpose! {
    fn write(fd: c_int, buf: *const c_void, n: SizeT) -> SsizeT => io_on(fd);
    fn writev(fd: c_int, iov: Iov, cnt: c_int) -> SsizeT => io_on(fd);
    fn pwrite64(fd: c_int, buf: *const c_void, n: SizeT, off: i64) -> SsizeT => io_on(fd);
    fn read(fd: c_int, buf: *mut c_void, n: SizeT) -> SsizeT => io_on(fd);
    fn readv(fd: c_int, iov: Iov, cnt: c_int) -> SsizeT => io_on(fd);
    fn pread64(fd: c_int, buf: *mut c_void, n: SizeT, off: i64) -> SsizeT => io_on(fd);
    fn send(fd: c_int, buf: *const c_void, n: SizeT, flags: c_int) -> SsizeT => io_on(fd);
    fn sendto(fd: c_int, buf: *const c_void, n: SizeT, flags: c_int, to: *const libc::sockaddr, len: libc::socklen_t) -> SsizeT => io_on(fd);
    fn sendmsg(fd: c_int, msg: *const libc::msghdr, flags: c_int) -> SsizeT => io_on(fd);
    fn recv(fd: c_int, buf: *mut c_void, n: SizeT, flags: c_int) -> SsizeT => io_on(fd);
    fn recvfrom(fd: c_int, buf: *mut c_void, n: SizeT, flags: c_int, from: *mut libc::sockaddr, len: *mut libc::socklen_t) -> SsizeT => io_on(fd);
    fn recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> SsizeT => io_on(fd);
    fn fsync(fd: c_int) -> c_int => Some(Blocking::Io);
    fn fdatasync(fd: c_int) -> c_int => Some(Blocking::Io);
    fn socket(domain: c_int, ty: c_int, proto: c_int) -> c_int => Some(Blocking::Io);
    fn connect(fd: c_int, addr: *const libc::sockaddr, len: libc::socklen_t) -> c_int => Some(Blocking::Io);
    fn accept(fd: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t) -> c_int => Some(Blocking::Io);
    fn accept4(fd: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t, flags: c_int) -> c_int => Some(Blocking::Io);
    fn nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int => Some(Blocking::Sleep);
    fn clock_nanosleep(clock: libc::clockid_t, flags: c_int, req: *const libc::timespec, rem: *mut libc::timespec) -> c_int => Some(Blocking::Sleep);
    fn usleep(us: libc::useconds_t) -> c_int => Some(Blocking::Sleep);
    fn sleep(s: c_uint) -> c_uint => Some(Blocking::Sleep);
    fn poll(fds: *mut libc::pollfd, n: libc::nfds_t, timeout_ms: c_int) -> c_int => waits_ms(timeout_ms);
    fn epoll_wait(epfd: c_int, events: *mut libc::epoll_event, max: c_int, timeout_ms: c_int) -> c_int => waits_ms(timeout_ms);
    fn select(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, timeout: *mut libc::timeval) -> c_int => waits_tv(timeout);
    fn pthread_mutex_lock(m: *mut libc::pthread_mutex_t) -> c_int => Some(Blocking::Lock);
    fn pthread_rwlock_rdlock(l: *mut libc::pthread_rwlock_t) -> c_int => Some(Blocking::Lock);
    fn pthread_rwlock_wrlock(l: *mut libc::pthread_rwlock_t) -> c_int => Some(Blocking::Lock);
    fn pthread_cond_wait(c: *mut libc::pthread_cond_t, m: *mut libc::pthread_mutex_t) -> c_int => Some(Blocking::Lock);
    fn pthread_cond_timedwait(c: *mut libc::pthread_cond_t, m: *mut libc::pthread_mutex_t, t: *const libc::timespec) -> c_int => Some(Blocking::Lock);
    fn pthread_create(t: *mut libc::pthread_t, attr: *const libc::pthread_attr_t, start: *mut c_void, arg: *mut c_void) -> c_int => Some(Blocking::ThreadSpawn);
    fn fork() -> libc::pid_t => Some(Blocking::Fork);
    fn posix_spawn(pid: *mut libc::pid_t, path: *const c_char, fa: *const libc::posix_spawn_file_actions_t, attr: *const libc::posix_spawnattr_t, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int => Some(Blocking::Fork);
    fn posix_spawnp(pid: *mut libc::pid_t, file: *const c_char, fa: *const libc::posix_spawn_file_actions_t, attr: *const libc::posix_spawnattr_t, argv: *const *mut c_char, envp: *const *mut c_char) -> c_int => Some(Blocking::Fork);
    fn mmap(addr: *mut c_void, len: SizeT, prot: c_int, flags: c_int, fd: c_int, off: libc::off_t) -> *mut c_void => Some(Blocking::Mmap);
    fn mmap64(addr: *mut c_void, len: SizeT, prot: c_int, flags: c_int, fd: c_int, off: i64) -> *mut c_void => Some(Blocking::Mmap);
    fn munmap(addr: *mut c_void, len: SizeT) -> c_int => Some(Blocking::Mmap);
}

/// `open` and friends and `syscall` are variadic in C. Rust cannot define a variadic
/// function, so each is defined with its optional arguments as fixed ones. On the two
/// targets these exist for (Linux x86_64 and aarch64), a variadic call passes integer and
/// pointer arguments in the same registers (x86_64: the 7th on the stack) as a fixed-arity
/// call, and additionally sets `%al` on x86_64, which a fixed-arity callee ignores. An
/// optional argument the caller did not pass arrives as an unspecified value that is only
/// forwarded: libc reads `mode` only with `O_CREAT`/`O_TMPFILE`, and the kernel ignores the
/// futex arguments an operation does not use. The forward is a genuine variadic call.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod variadic {
    use super::*;

    type Open = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
    type OpenAt = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
    type Syscall = unsafe extern "C" fn(c_long, ...) -> c_long;

    macro_rules! open_like {
        ($($name:ident),*) => {$(
            #[doc = concat!("Interposed `", stringify!($name), "` (see the module docs).")]
            ///
            /// # Safety
            /// libc's contract for this function.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
                if watched() {
                    note(Some(Blocking::Io), stringify!($name));
                }
                static REAL: AtomicUsize = AtomicUsize::new(0);
                let addr = real(&REAL, concat!(stringify!($name), "\0"));
                // SAFETY: libc's definition of this function, whose prototype is `Open`.
                let real = unsafe { std::mem::transmute::<usize, Open>(addr) };
                // SAFETY: the caller's arguments, forwarded by a variadic call (see the
                // module docs of `variadic` for `mode`).
                unsafe { real(path, flags, mode) }
            }
        )*};
    }
    open_like!(open, open64);

    macro_rules! openat_like {
        ($($name:ident),*) => {$(
            #[doc = concat!("Interposed `", stringify!($name), "` (see the module docs).")]
            ///
            /// # Safety
            /// libc's contract for this function.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name(dir: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
                if watched() {
                    note(Some(Blocking::Io), stringify!($name));
                }
                static REAL: AtomicUsize = AtomicUsize::new(0);
                let addr = real(&REAL, concat!(stringify!($name), "\0"));
                // SAFETY: libc's definition of this function, whose prototype is `OpenAt`.
                let real = unsafe { std::mem::transmute::<usize, OpenAt>(addr) };
                // SAFETY: the caller's arguments, forwarded by a variadic call.
                unsafe { real(dir, path, flags, mode) }
            }
        )*};
    }
    openat_like!(openat, openat64);

    const FUTEX_CMD_MASK: c_long =
        !(libc::FUTEX_PRIVATE_FLAG as c_long | libc::FUTEX_CLOCK_REALTIME as c_long);

    /// What a `syscall(SYS_futex, ..)` with operation `op` is: `Some(Lock)` for the waits
    /// std's `Mutex`, `Condvar`, `RwLock` and `park` make, `None` (counted, not reported)
    /// for the priority-inheritance operations only preempt's own locks use, and for wakes.
    fn futex_kind(op: c_long) -> Option<Blocking> {
        match (op & FUTEX_CMD_MASK) as c_int {
            libc::FUTEX_WAIT | libc::FUTEX_WAIT_BITSET | libc::FUTEX_WAIT_REQUEUE_PI => {
                Some(Blocking::Lock)
            }
            _ => None,
        }
    }

    /// Interposed `syscall`: futex waits are reported (see the module docs).
    ///
    /// # Safety
    /// The kernel's contract for system call `num`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn syscall(
        num: c_long,
        a1: c_long,
        a2: c_long,
        a3: c_long,
        a4: c_long,
        a5: c_long,
        a6: c_long,
    ) -> c_long {
        if num == libc::SYS_futex && watched() {
            let op = a2 & FUTEX_CMD_MASK;
            let blocking_pi =
                op == c_long::from(libc::FUTEX_LOCK_PI) || op == c_long::from(libc::FUTEX_LOCK_PI2);
            if blocking_pi || futex_kind(a2).is_some() {
                note(futex_kind(a2), "syscall(SYS_futex)");
            }
        } else if num == libc::SYS_io_uring_enter && watched() {
            // RTIO's wait for completions (preempt_io::rtio, run suppressed): counted, so
            // that the context switch of the wait is explained, never reported.
            note(None, "syscall(SYS_io_uring_enter)");
        }
        static REAL: AtomicUsize = AtomicUsize::new(0);
        let addr = real(&REAL, "syscall\0");
        // SAFETY: libc's `syscall`, whose prototype is `Syscall`.
        let real = unsafe { std::mem::transmute::<usize, Syscall>(addr) };
        // SAFETY: the caller's arguments, forwarded by a variadic call; the kernel ignores
        // those system call `num` does not take (see the module docs of `variadic`).
        unsafe { real(num, a1, a2, a3, a4, a5, a6) }
    }

    pub(super) fn linked() -> usize {
        [
            open as *const () as usize,
            open64 as *const () as usize,
            openat as *const () as usize,
            openat64 as *const () as usize,
            syscall as *const () as usize,
        ]
        .iter()
        .fold(0usize, |s, &a| s.wrapping_add(std::hint::black_box(a)))
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn variadic_linked() -> usize {
    variadic::linked()
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn variadic_linked() -> usize {
    0
}

/// Whether the interposers bind in this program: arms the thread, makes a `write` to an
/// invalid descriptor (`EBADF`, nothing written) and a `nanosleep` of zero, and looks at
/// whether they were seen. Call it where nothing else is armed.
pub fn probe() -> bool {
    let _ = linked();
    let previous = HOOK.swap(0, Ordering::AcqRel);
    arm();
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: fd -1 is invalid (EBADF), the buffer is a valid empty slice; `zero` is a
    // valid timespec and a null remainder is allowed.
    unsafe {
        libc::write(-1, [0u8; 0].as_ptr().cast(), 0);
        libc::nanosleep(&zero, std::ptr::null_mut());
    }
    let seen = disarm();
    HOOK.store(previous, Ordering::Release);
    seen >= 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::sync::Mutex;

    static SEEN_CALLS: Mutex<Vec<(Blocking, &'static str)>> = Mutex::new(Vec::new());

    fn record(kind: Blocking, name: &'static str) {
        SEEN_CALLS.lock().unwrap().push((kind, name));
    }

    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "std's relative sleep is the call under test"
    )]
    fn armed_thread_reports_sleep_and_stdout_writes_and_forwards_them() {
        std::thread::spawn(|| {
            assert!(probe(), "the interposers do not bind in this test binary");
            set_hook(record);
            arm();
            std::thread::sleep(std::time::Duration::from_millis(1));
            let mut buf = [0u8; 4];
            let (r, w) = crate::sys::fdio::pipe().unwrap_or_else(|e| panic!("pipe: {e}"));
            let wrote = crate::sys::fdio::write(w.as_fd(), b"ok");
            let _framework = suppress();
            std::thread::sleep(std::time::Duration::from_millis(1));
            drop(_framework);
            let seen = disarm();
            let read = crate::sys::fdio::read(r.as_fd(), &mut buf);
            assert_eq!(wrote.ok(), Some(2));
            assert_eq!(read.ok(), Some(2), "the forwarded write reached the pipe");
            assert!(seen >= 2, "{seen}");
            let calls = SEEN_CALLS.lock().unwrap().clone();
            // std's `sleep` is a `clock_nanosleep` in current std, a `nanosleep` before.
            let sleeps = calls.iter().filter(|c| c.0 == Blocking::Sleep).count();
            assert_eq!(
                sleeps, 1,
                "one sleep (the suppressed one is not): {calls:?}"
            );
            assert!(calls.contains(&(Blocking::Io, "write")), "{calls:?}");
        })
        .join()
        .unwrap();
    }
}
