//! Linux capabilities of the calling thread (`capget(2)`), to tell a user *which* privilege
//! is missing instead of a bare `EPERM`.

use std::io;

/// The capabilities preempt cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// `CAP_SYS_NICE`: real-time policies and priorities beyond RLIMIT_RTPRIO.
    SysNice,
    /// `CAP_IPC_LOCK`: `mlockall` beyond RLIMIT_MEMLOCK.
    IpcLock,
    /// `CAP_SYS_RESOURCE`: raising hard resource limits.
    SysResource,
    /// `CAP_SYS_ADMIN`: tracefs and other administration.
    SysAdmin,
}

impl Capability {
    fn number(self) -> u32 {
        // Numbers from include/uapi/linux/capability.h.
        match self {
            Capability::IpcLock => 14,
            Capability::SysAdmin => 21,
            Capability::SysNice => 23,
            Capability::SysResource => 24,
        }
    }

    /// The capability's name as `setcap` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Capability::SysNice => "cap_sys_nice",
            Capability::IpcLock => "cap_ipc_lock",
            Capability::SysResource => "cap_sys_resource",
            Capability::SysAdmin => "cap_sys_admin",
        }
    }
}

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit capability sets as two 32-bit words.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Whether the calling thread has `cap` in its effective set.
///
/// # Errors
/// Whatever `capget` reports.
pub fn has_effective(cap: Capability) -> io::Result<bool> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: with version 3 the kernel writes two cap_user_data_t structs, which `data` holds;
    // both pointers are valid for the duration of the call.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let bit = cap.number();
    // `bit` is below 64, so the index is 0 or 1.
    let word = data[(bit / 32) as usize].effective;
    Ok(word & (1 << (bit % 32)) != 0)
}

/// Whether the process runs as root (effective user id 0). Root is not the same as holding
/// the capabilities: a container or a systemd unit can drop them from a root process, and
/// then advice to "run as root" is wrong.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_has_sys_nice_and_others_may_not() {
        let root = is_root();
        let nice = has_effective(Capability::SysNice).unwrap();
        if root {
            assert!(nice, "root normally holds CAP_SYS_NICE");
        }
        assert_eq!(Capability::SysNice.name(), "cap_sys_nice");
    }
}
