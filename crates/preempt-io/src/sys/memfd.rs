//! `memfd_create(2)` and `mmap(2)`: anonymous shared memory that is a file.
//!
//! The IMU simulator's register file and FIFO live in a memfd: the simulator maps it and
//! stores into it, the reader does its "bus transfers" as `pread`/`pwrite` (or io_uring
//! reads/writes) at register offsets, exactly as it would on `/dev/iio:deviceN` or an SPI
//! character device. The descriptor passes to a child process by inheritance.
//!
//! ```
//! use preempt_io::sys::memfd::{MemFd, SharedMap};
//! use preempt_io::sys::fdio;
//! use std::os::fd::AsFd;
//! let mem = MemFd::new("regs", 4096)?;
//! let map = SharedMap::new(mem.as_fd(), 4096)?;
//! map.store_u32(8, 0xdead_beef);
//! let mut word = [0_u8; 4];
//! fdio::pread(mem.as_fd(), &mut word, 8)?;
//! assert_eq!(u32::from_le_bytes(word), 0xdead_beef);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A memfd of a fixed size; closed on drop.
#[derive(Debug)]
pub struct MemFd {
    fd: OwnedFd,
    len: usize,
}

impl MemFd {
    /// Creates a memfd named `name` (visible in `/proc/PID/fd`) of `len` zeroed bytes,
    /// close-on-exec.
    ///
    /// # Errors
    /// `InvalidInput` for a name with a NUL byte; otherwise whatever `memfd_create` or
    /// `ftruncate` reports.
    pub fn new(name: &str, len: usize) -> io::Result<MemFd> {
        let cname = CString::new(name).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "memfd name contains a NUL byte",
            )
        })?;
        // SAFETY: `cname` is a valid NUL-terminated string that outlives the call.
        let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let size = libc::off_t::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "memfd too large"))?;
        // SAFETY: ftruncate on a descriptor we own; no memory arguments.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(MemFd { fd, len })
    }

    /// Adopts an inherited memfd (or any regular file) and reads its size with `fstat`.
    ///
    /// # Errors
    /// Whatever `fstat` reports.
    pub fn from_owned(fd: OwnedFd) -> io::Result<MemFd> {
        let len = super::fdio::file_size(fd.as_fd())?;
        Ok(MemFd { fd, len })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsFd for MemFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for MemFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl From<MemFd> for OwnedFd {
    fn from(m: MemFd) -> OwnedFd {
        m.fd
    }
}

/// A `MAP_SHARED` read-write mapping of a file, accessed only through atomics.
///
/// Another process (or `pread` on the same file) sees the same bytes, so plain references into
/// the mapping would be data races; every access goes through naturally aligned atomic
/// loads/stores or volatile byte copies, and the type hands out no references.
#[derive(Debug)]
pub struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is process-wide memory accessed only through atomics and volatile copies,
// so sharing or moving the handle between threads cannot create a data race in Rust's model.
unsafe impl Send for SharedMap {}
// SAFETY: as above: every access method takes `&self` and uses atomic or volatile operations.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Maps the first `len` bytes of `fd` shared and read-write.
    ///
    /// # Errors
    /// `InvalidInput` for `len == 0`; otherwise whatever `mmap` reports.
    pub fn new(fd: BorrowedFd<'_>, len: usize) -> io::Result<SharedMap> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map 0 bytes",
            ));
        }
        // SAFETY: a fresh mapping at a kernel-chosen address; `fd` is open for the call.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(SharedMap { ptr, len })
    }

    /// Mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: `new` rejects 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert!(
            offset % 4 == 0 && offset + 4 <= self.len,
            "u32 register {offset:#x} out of map"
        );
        // SAFETY: the address is inside the mapping (checked above), 4-aligned (page-aligned
        // base plus a multiple of 4), and lives as long as `self`; AtomicU32 has the layout of
        // u32 and may alias memory other processes access atomically.
        unsafe { &*self.ptr.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(
            offset % 8 == 0 && offset + 8 <= self.len,
            "u64 register {offset:#x} out of map"
        );
        // SAFETY: inside the mapping, 8-aligned, valid for `self`'s lifetime (as for u32).
        unsafe { &*self.ptr.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// Loads a little-endian-in-memory u32 register at `offset` (acquire).
    ///
    /// # Panics
    /// If `offset` is misaligned or out of the mapping.
    pub fn load_u32(&self, offset: usize) -> u32 {
        u32::from_le(self.atomic_u32(offset).load(Ordering::Acquire))
    }

    /// Stores a u32 register at `offset` (release), little-endian in memory.
    ///
    /// # Panics
    /// If `offset` is misaligned or out of the mapping.
    pub fn store_u32(&self, offset: usize, value: u32) {
        self.atomic_u32(offset)
            .store(value.to_le(), Ordering::Release);
    }

    /// Loads a u64 register at `offset` (acquire).
    ///
    /// # Panics
    /// If `offset` is misaligned or out of the mapping.
    pub fn load_u64(&self, offset: usize) -> u64 {
        u64::from_le(self.atomic_u64(offset).load(Ordering::Acquire))
    }

    /// Stores a u64 register at `offset` (release).
    ///
    /// # Panics
    /// If `offset` is misaligned or out of the mapping.
    pub fn store_u64(&self, offset: usize, value: u64) {
        self.atomic_u64(offset)
            .store(value.to_le(), Ordering::Release);
    }

    /// ORs `bits` into the u64 register at `offset` (acq-rel), so two threads can set their
    /// own flags without losing each other's.
    ///
    /// # Panics
    /// If `offset` is misaligned or out of the mapping.
    pub fn fetch_or_u64(&self, offset: usize, bits: u64) {
        self.atomic_u64(offset)
            .fetch_or(bits.to_le(), Ordering::AcqRel);
    }

    /// Copies `src` into the mapping at `offset` with volatile byte stores.
    ///
    /// # Panics
    /// If the range leaves the mapping.
    pub fn write_bytes(&self, offset: usize, src: &[u8]) {
        assert!(
            offset
                .checked_add(src.len())
                .is_some_and(|end| end <= self.len),
            "write out of map"
        );
        for (i, b) in src.iter().enumerate() {
            // SAFETY: `offset + i < len` (checked above), so the byte is inside the mapping.
            unsafe { self.ptr.as_ptr().add(offset + i).write_volatile(*b) };
        }
    }

    /// Copies bytes at `offset` out of the mapping with volatile byte loads.
    ///
    /// # Panics
    /// If the range leaves the mapping.
    pub fn read_bytes(&self, offset: usize, dst: &mut [u8]) {
        assert!(
            offset
                .checked_add(dst.len())
                .is_some_and(|end| end <= self.len),
            "read out of map"
        );
        for (i, b) in dst.iter_mut().enumerate() {
            // SAFETY: `offset + i < len` (checked above), so the byte is inside the mapping.
            *b = unsafe { self.ptr.as_ptr().add(offset + i).read_volatile() };
        }
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe exactly the mapping `new` created, and no reference into
        // it outlives `self` (accessors return values, not references, to callers).
        let rc = unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        debug_assert_eq!(rc, 0, "munmap of our own mapping failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_maps_of_one_memfd_share_bytes() {
        let m = MemFd::new("t", 8192).unwrap();
        let a = SharedMap::new(m.as_fd(), 8192).unwrap();
        let b = SharedMap::new(m.as_fd(), 8192).unwrap();
        a.store_u64(4096, 42);
        assert_eq!(b.load_u64(4096), 42);
        a.write_bytes(10, b"abc");
        let mut out = [0_u8; 3];
        b.read_bytes(10, &mut out);
        assert_eq!(&out, b"abc");
        let adopted = MemFd::from_owned(OwnedFd::from(m)).unwrap();
        assert_eq!(adopted.len(), 8192);
    }

    #[test]
    fn nul_in_name_is_rejected() {
        assert!(MemFd::new("a\0b", 1).is_err());
    }
}
