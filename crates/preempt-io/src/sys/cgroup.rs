//! Where a thread sits in a cgroup hierarchy: the directory of its cgroup for one controller.
//!
//! A thread's cgroups are listed in `/proc/thread-self/cgroup` (`cgroup(7)`): one line per
//! hierarchy, `ID:CONTROLLERS:PATH`, the path relative to the hierarchy's root. Which
//! directory that is on this machine comes from `/proc/self/mountinfo` (`proc(5)`): the
//! mount of filesystem type `cgroup` whose super options name the controller, its mount point
//! and the part of the hierarchy it shows (the `root` field; a container that sees only its
//! own subtree has its own cgroup there, not `/`).
//!
//! ```
//! use preempt_io::sys::cgroup;
//! let cgroups = "4:memory:/a\n1:cpu,cpuacct:/user.slice/x\n0::/\n";
//! let mounts = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
//! assert_eq!(
//!     cgroup::v1_dir("cpu", cgroups, mounts).unwrap(),
//!     std::path::Path::new("/sys/fs/cgroup/cpu,cpuacct/user.slice/x")
//! );
//! ```

use std::path::{Path, PathBuf};

/// A cgroup v1 directory and the mount point of its hierarchy (the topmost directory this
/// process can see).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct V1Group {
    /// The cgroup's directory.
    pub dir: PathBuf,
    /// The mount point of the hierarchy: `dir` or one of its ancestors.
    pub mount: PathBuf,
    /// Mounted read-only (a container's usual view): nothing can be written here.
    pub read_only: bool,
}

/// The calling thread's cgroup for the v1 `controller` (e.g. `cpu`, `memory`), from
/// `/proc/thread-self/cgroup` and `/proc/self/mountinfo`; `None` when the controller is not
/// mounted as cgroup v1 (a cgroup v2 machine) or the files cannot be read.
pub fn current_v1_group(controller: &str) -> Option<V1Group> {
    let cgroups = std::fs::read_to_string("/proc/thread-self/cgroup")
        .or_else(|_| std::fs::read_to_string("/proc/self/cgroup"))
        .ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    v1_group(controller, &cgroups, &mounts)
}

/// The directory of the cgroup named for `controller` in `cgroups` (the text of
/// `/proc/PID/cgroup`), under its mount in `mounts` (the text of `/proc/self/mountinfo`).
pub fn v1_dir(controller: &str, cgroups: &str, mounts: &str) -> Option<PathBuf> {
    v1_group(controller, cgroups, mounts).map(|g| g.dir)
}

/// As [`v1_dir`], with the hierarchy's mount point.
pub fn v1_group(controller: &str, cgroups: &str, mounts: &str) -> Option<V1Group> {
    let path = cgroups.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let _id = fields.next()?;
        let controllers = fields.next()?;
        let path = fields.next()?;
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })?;
    let (root, mount, read_only) = mounts.lines().find_map(|line| {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS`
        let (left, right) = line.split_once(" - ")?;
        let mut right = right.split_whitespace();
        if right.next()? != "cgroup" {
            return None;
        }
        let _source = right.next()?;
        let superopts = right.next()?;
        if !superopts.split(',').any(|o| o == controller) {
            return None;
        }
        let mut left = left.split_whitespace();
        let root = left.nth(3)?;
        let mount = left.next()?;
        let read_only = left.next()?.split(',').any(|o| o == "ro");
        Some((unescape(root), unescape(mount), read_only))
    })?;
    // The path is relative to the hierarchy's root; the mount shows the subtree at `root`.
    let rel = Path::new(path).strip_prefix(&root).ok()?;
    let mount = PathBuf::from(mount);
    Some(V1Group {
        dir: mount.join(rel),
        mount,
        read_only,
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .map(|d| d.iter().fold(0u32, |n, b| n * 8 + u32::from(b - b'0')));
        match octal.and_then(|n| u8::try_from(n).ok()) {
            Some(b) => {
                out.push(b);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_cpu_controller_is_told_from_cpuacct_and_cpuset() {
        let cgroups = "3:cpuset:/s\n2:cpuacct:/a\n1:cpu:/x/y\n0::/\n";
        let g = v1_group("cpu", cgroups, MOUNTS).unwrap();
        assert_eq!(g.dir, Path::new("/sys/fs/cgroup/cpu/x/y"));
        assert_eq!(g.mount, Path::new("/sys/fs/cgroup/cpu"));
        assert!(!g.read_only);
        let ro = MOUNTS.replace(
            "/sys/fs/cgroup/cpu rw,relatime",
            "/sys/fs/cgroup/cpu ro,nosuid",
        );
        assert!(v1_group("cpu", cgroups, &ro).unwrap().read_only);
        assert_eq!(
            v1_dir("cpuacct", cgroups, MOUNTS).unwrap(),
            Path::new("/sys/fs/cgroup/cpuacct/a")
        );
    }

    #[test]
    fn a_mount_of_a_subtree_strips_its_root_from_the_path() {
        let cgroups = "4:memory:/docker/abc/inner\n";
        assert_eq!(
            v1_dir("memory", cgroups, MOUNTS).unwrap(),
            Path::new("/sys/fs/cgroup/memory/inner")
        );
        // A path outside the mounted subtree has no directory here.
        assert_eq!(v1_dir("memory", "4:memory:/elsewhere\n", MOUNTS), None);
    }

    #[test]
    fn cgroup_v2_only_has_no_v1_directory() {
        assert_eq!(v1_dir("cpu", "0::/user.slice\n", MOUNTS), None);
        assert_eq!(v1_dir("cpu", "1:cpu:/\n", ""), None);
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b\134c"), r"/a b\c");
        assert_eq!(unescape(r"/plain\"), r"/plain\");
    }
}
