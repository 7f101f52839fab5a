//! Resource limits that decide whether a process may go real-time: RLIMIT_RTPRIO (highest
//! SCHED_FIFO/RR priority without CAP_SYS_NICE), RLIMIT_MEMLOCK (how much `mlockall` may lock)
//! and RLIMIT_RTTIME (CPU time a real-time thread may use without blocking).

use std::io;

/// One resource limit; `None` means unlimited (`RLIM_INFINITY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The limit in force.
    pub soft: Option<u64>,
    /// The ceiling an unprivileged process may raise `soft` to.
    pub hard: Option<u64>,
}

impl Limit {
    /// Whether the soft limit allows at least `value`.
    pub fn allows(&self, value: u64) -> bool {
        self.soft.is_none_or(|soft| soft >= value)
    }
}

fn from_raw(value: libc::rlim_t) -> Option<u64> {
    (value != libc::RLIM_INFINITY).then_some(value)
}

fn to_raw(value: Option<u64>) -> libc::rlim_t {
    value.unwrap_or(libc::RLIM_INFINITY)
}

fn get(resource: libc::__rlimit_resource_t) -> io::Result<Limit> {
    let mut raw = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `raw` is a valid, writable rlimit for the duration of the call.
    if unsafe { libc::getrlimit(resource, &mut raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Limit {
        soft: from_raw(raw.rlim_cur),
        hard: from_raw(raw.rlim_max),
    })
}

fn set(resource: libc::__rlimit_resource_t, limit: Limit) -> io::Result<()> {
    let raw = libc::rlimit {
        rlim_cur: to_raw(limit.soft),
        rlim_max: to_raw(limit.hard),
    };
    // SAFETY: `raw` is a valid rlimit; setrlimit only reads it.
    if unsafe { libc::setrlimit(resource, &raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// RLIMIT_RTPRIO.
///
/// # Errors
/// Whatever `getrlimit` reports.
pub fn rtprio() -> io::Result<Limit> {
    get(libc::RLIMIT_RTPRIO)
}

/// RLIMIT_MEMLOCK, in bytes.
///
/// # Errors
/// Whatever `getrlimit` reports.
pub fn memlock() -> io::Result<Limit> {
    get(libc::RLIMIT_MEMLOCK)
}

/// RLIMIT_RTTIME, in microseconds.
///
/// # Errors
/// Whatever `getrlimit` reports.
pub fn rttime() -> io::Result<Limit> {
    get(libc::RLIMIT_RTTIME)
}

/// Sets RLIMIT_RTPRIO (raising the hard limit needs CAP_SYS_RESOURCE).
///
/// # Errors
/// `EPERM` when raising above the hard limit without privilege; `EINVAL` if soft > hard.
pub fn set_rtprio(limit: Limit) -> io::Result<()> {
    set(libc::RLIMIT_RTPRIO, limit)
}

/// Sets RLIMIT_MEMLOCK (raising the hard limit needs CAP_SYS_RESOURCE).
///
/// # Errors
/// `EPERM` when raising above the hard limit without privilege; `EINVAL` if soft > hard.
pub fn set_memlock(limit: Limit) -> io::Result<()> {
    set(libc::RLIMIT_MEMLOCK, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_and_compare() {
        let rt = rtprio().unwrap();
        if let (Some(soft), Some(hard)) = (rt.soft, rt.hard) {
            assert!(soft <= hard);
        }
        assert!(
            Limit {
                soft: None,
                hard: None
            }
            .allows(u64::MAX)
        );
        assert!(
            !Limit {
                soft: Some(10),
                hard: None
            }
            .allows(11)
        );
        memlock().unwrap();
        rttime().unwrap();
    }

    #[test]
    fn setting_the_current_limit_again_is_a_no_op() {
        let current = memlock().unwrap();
        set_memlock(current).unwrap();
        assert_eq!(memlock().unwrap(), current);
    }
}
