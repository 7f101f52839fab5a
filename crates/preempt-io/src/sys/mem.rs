//! Memory for real-time threads: locked, prefaulted, and never given back to the kernel.
//!
//! A page fault on the real-time path costs microseconds to milliseconds. The cure is the
//! one every real-time Linux guide gives: lock all pages (`mlockall(MCL_CURRENT |
//! MCL_FUTURE)`), touch the stack once so its pages exist, and stop glibc's malloc from
//! trimming the heap or serving large blocks with `mmap` (which would fault again later).

use std::io;

use super::rtcause;

/// Locks every current and future page of the process into RAM (`mlockall`).
///
/// # Errors
/// `ENOMEM`/`EPERM` when RLIMIT_MEMLOCK is too small and the process lacks CAP_IPC_LOCK, or
/// a memory cgroup's limit is below the process's size; the message names the cause and its
/// fix ([`rtcause::explain_memlock_refusal`]).
pub fn lock_all_memory() -> io::Result<()> {
    try_lock_all_memory().map_err(|err| {
        let errno = err.raw_os_error().unwrap_or(libc::ENOMEM);
        let cause = rtcause::explain_memlock_refusal(errno);
        io::Error::new(
            err.kind(),
            format!(
                "mlockall failed with {}: {}; fix: {}",
                rtcause::errno_text(errno),
                cause.describe(),
                cause.fix()
            ),
        )
    })
}

/// [`lock_all_memory`] with the kernel's error as it is (`raw_os_error` set, no
/// explanation), for [`crate::sys::rtprobe`].
///
/// # Errors
/// The errno of `mlockall`.
pub fn try_lock_all_memory() -> io::Result<()> {
    // SAFETY: mlockall takes only flags and has no memory-safety preconditions.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Undoes [`lock_all_memory`] (`munlockall`).
///
/// # Errors
/// Whatever `munlockall` reports.
pub fn unlock_all_memory() -> io::Result<()> {
    // SAFETY: munlockall has no arguments and no memory-safety preconditions.
    let rc = unsafe { libc::munlockall() };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Touches `bytes` of stack below the caller so that those pages are present (and, after
/// [`lock_all_memory`], locked) before the real-time loop needs them.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 4096;
    fn touch(remaining: usize) {
        let mut block = [0_u8; CHUNK];
        // black_box keeps the write (and so the page) from being optimised away.
        std::hint::black_box(&mut block);
        if remaining > CHUNK {
            touch(remaining - CHUNK);
        }
        std::hint::black_box(&block);
    }
    touch(bytes);
}

/// Stops glibc's malloc from returning memory to the kernel and from using `mmap` for large
/// blocks, so memory freed after start-up is reused without new page faults.
///
/// # Errors
/// `mallopt` refused a setting (it returns 0 on error and sets no errno).
pub fn tune_allocator_for_real_time() -> io::Result<()> {
    for (param, value, name) in [
        (libc::M_TRIM_THRESHOLD, -1, "M_TRIM_THRESHOLD"),
        (libc::M_MMAP_MAX, 0, "M_MMAP_MAX"),
    ] {
        // SAFETY: mallopt takes two integers and has no memory-safety preconditions.
        if unsafe { libc::mallopt(param, value) } == 0 {
            return Err(io::Error::other(format!("mallopt({name}, {value}) failed")));
        }
    }
    Ok(())
}

/// The size of a memory page in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    // A page size is always positive; 4096 is the fallback every architecture we run on has.
    usize::try_from(size).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_is_a_power_of_two() {
        assert!(page_size().is_power_of_two());
        assert!(page_size() >= 4096);
    }

    #[test]
    fn prefault_survives_a_large_stack() {
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(|| prefault_stack(512 * 1024))
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn allocator_tuning_is_accepted() {
        tune_allocator_for_real_time().unwrap();
    }
}
