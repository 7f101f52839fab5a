//! A memory pool of fixed-size blocks (Zephyr's `RTIO_DEFINE_WITH_MEMPOOL`).
//!
//! All blocks are one allocation made at setup. A read flagged
//! [`MEMPOOL_BUFFER`](super::SqeFlags::MEMPOOL_BUFFER) gets its block when data arrives, not
//! when submitted, so a multishot read holds no memory while idle. With io_uring the free
//! blocks sit in a *provided buffer ring* the kernel takes from; with the epoll backend the
//! executor takes them from the free stack here. Either way a block is "out" from the moment
//! it is filled until the caller releases it, and double releases are caught.

/// The pool: `count` blocks of `block_size` bytes.
#[derive(Debug)]
pub(crate) struct Mempool {
    mem: Box<[u8]>,
    block_size: usize,
    /// Free block ids (epoll/software path only; the io_uring ring holds its own).
    free: Vec<u16>,
    /// Whether each block is out (filled, not yet released).
    out: Vec<bool>,
}

impl Mempool {
    pub(crate) fn new(count: usize, block_size: usize) -> Mempool {
        assert!(
            count <= usize::from(u16::MAX),
            "at most 65535 mempool blocks"
        );
        Mempool {
            mem: vec![0_u8; count * block_size].into_boxed_slice(),
            block_size,
            // ids < count <= u16::MAX, checked above.
            free: (0..count)
                .rev()
                .map(|i| u16::try_from(i).unwrap_or(u16::MAX))
                .collect(),
            out: vec![false; count],
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn block_size(&self) -> usize {
        self.block_size
    }

    /// Takes a free block (software path). `None` = exhausted.
    pub(crate) fn take(&mut self) -> Option<u16> {
        let id = self.free.pop()?;
        debug_assert!(!self.out[usize::from(id)], "free list held an out block");
        self.out[usize::from(id)] = true;
        Some(id)
    }

    /// Marks a block the kernel filled as out.
    pub(crate) fn mark_out(&mut self, id: u16) {
        debug_assert!(
            !self.out[usize::from(id)],
            "kernel handed out a block twice"
        );
        self.out[usize::from(id)] = true;
    }

    /// Marks `id` released; `false` if it was not out (double release).
    pub(crate) fn mark_released(&mut self, id: u16) -> bool {
        let Some(slot) = self.out.get_mut(usize::from(id)) else {
            return false;
        };
        std::mem::replace(slot, false)
    }

    /// Returns a released block to the software free stack.
    pub(crate) fn push_free(&mut self, id: u16) {
        debug_assert!(self.free.len() < self.out.len(), "free stack overfull");
        self.free.push(id);
    }

    pub(crate) fn block(&self, id: u16, len: usize) -> &[u8] {
        let start = usize::from(id) * self.block_size;
        &self.mem[start..start + len.min(self.block_size)]
    }

    pub(crate) fn block_ptr(&mut self, id: u16) -> *mut u8 {
        let start = usize::from(id) * self.block_size;
        self.mem[start..start + self.block_size].as_mut_ptr()
    }

    pub(crate) fn block_mut(&mut self, id: u16) -> &mut [u8] {
        let start = usize::from(id) * self.block_size;
        &mut self.mem[start..start + self.block_size]
    }

    /// Blocks currently out.
    pub(crate) fn out_count(&self) -> usize {
        self.out.iter().filter(|o| **o).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_and_double_release() {
        let mut p = Mempool::new(2, 8);
        let a = p.take().unwrap();
        let b = p.take().unwrap();
        assert_ne!(a, b);
        assert!(p.take().is_none());
        assert!(p.mark_released(a));
        assert!(!p.mark_released(a), "double release must be caught");
        p.push_free(a);
        assert_eq!(p.take(), Some(a));
        assert_eq!(p.out_count(), 2);
        assert_eq!(p.block(b, 100).len(), 8);
    }
}
