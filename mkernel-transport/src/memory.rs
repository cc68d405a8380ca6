//! Page-aligned host memory that peers may write into.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering as MemOrder};
use std::sync::Arc;

use crate::error::TransportError;

const PAGE: usize = 4096;

struct Allocation {
    ptr: NonNull<u8>,
    layout: Layout,
    len: usize,
}

// SAFETY: the allocation is plain bytes with no thread affinity; all access goes through
// `HostBuffer` methods that copy bytes or use atomics.
unsafe impl Send for Allocation {}
// SAFETY: as above; shared access is the purpose of the type (see `HostBuffer` docs).
unsafe impl Sync for Allocation {}

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: `ptr` was returned by `alloc_zeroed` with exactly `layout`.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// Zero-initialised, page-aligned host memory shared between this process and the
/// peers that write into it through a transport.
///
/// Cloning is cheap and shares the bytes. A transport that registers the buffer keeps a
/// clone, so the memory outlives every registration.
///
/// Bytes are read and written by copying ([`HostBuffer::read`], [`HostBuffer::write`]);
/// 8-byte words used as arrival flags are accessed with acquire/release atomics
/// ([`HostBuffer::load_u64_acquire`], [`HostBuffer::store_u64_release`]). Bytes that a
/// peer is writing at the same moment read back as unspecified values (as with any RDMA
/// target): read a chunk only after its arrival flag says it is complete.
#[derive(Clone)]
pub struct HostBuffer {
    inner: Arc<Allocation>,
}

impl std::fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("ptr", &self.inner.ptr)
            .field("len", &self.inner.len)
            .finish()
    }
}

impl HostBuffer {
    /// Allocates `len` zeroed bytes aligned to 4096.
    ///
    /// Errors: [`TransportError::InvalidArgument`] for `len == 0` or a size the
    /// allocator refuses.
    pub fn new(len: usize) -> Result<Self, TransportError> {
        if len == 0 {
            return Err(TransportError::InvalidArgument {
                arg: "len",
                rule: "must be > 0".into(),
            });
        }
        let rounded = len.div_ceil(PAGE).saturating_mul(PAGE);
        let layout =
            Layout::from_size_align(rounded, PAGE).map_err(|e| TransportError::InvalidArgument {
                arg: "len",
                rule: format!("{len} bytes cannot be allocated: {e}"),
            })?;
        // SAFETY: layout has non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| TransportError::InvalidArgument {
            arg: "len",
            rule: format!("allocation of {len} bytes failed"),
        })?;
        Ok(HostBuffer {
            inner: Arc::new(Allocation { ptr, layout, len }),
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Always `false` (a buffer has at least one byte); for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// Address of byte 0, for backends that register the memory with a NIC library.
    pub fn as_ptr(&self) -> *mut u8 {
        self.inner.ptr.as_ptr()
    }

    /// `true` when both handles share the same bytes.
    pub fn same_memory(&self, other: &HostBuffer) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), TransportError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(TransportError::OutOfBounds {
                side: crate::Side::Local,
                offset,
                len,
                region_len: self.len(),
            }),
        }
    }

    /// Copies `out.len()` bytes starting at `offset` into `out`.
    ///
    /// Errors: [`TransportError::OutOfBounds`].
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), TransportError> {
        self.check(offset, out.len())?;
        // SAFETY: range checked above; `out` is a distinct Rust allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(self.as_ptr().add(offset), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `data` into the buffer at `offset`.
    ///
    /// Errors: [`TransportError::OutOfBounds`].
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), TransportError> {
        self.check(offset, data.len())?;
        // SAFETY: range checked above; `data` is a distinct Rust allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.as_ptr().add(offset), data.len())
        };
        Ok(())
    }

    /// Copies the whole buffer out (for tests and verification).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len()];
        // NOTE: cannot fail, the range is the whole buffer.
        let _ = self.read(0, &mut out);
        out
    }

    fn word(&self, offset: usize) -> Result<&AtomicU64, TransportError> {
        self.check(offset, 8)?;
        if !offset.is_multiple_of(8) {
            return Err(TransportError::InvalidArgument {
                arg: "offset",
                rule: format!("flag word offset must be a multiple of 8, got {offset}"),
            });
        }
        // SAFETY: in bounds, 8-aligned (buffer is page-aligned), lives as long as `self`.
        Ok(unsafe { AtomicU64::from_ptr(self.as_ptr().add(offset).cast::<u64>()) })
    }

    /// Loads the 8-byte word at `offset` with acquire ordering (arrival-flag read).
    ///
    /// Errors: [`TransportError::OutOfBounds`], or [`TransportError::InvalidArgument`]
    /// when `offset` is not a multiple of 8.
    pub fn load_u64_acquire(&self, offset: usize) -> Result<u64, TransportError> {
        Ok(self.word(offset)?.load(MemOrder::Acquire))
    }

    /// Stores the 8-byte word at `offset` with release ordering (arrival-flag publish).
    ///
    /// Errors: as [`HostBuffer::load_u64_acquire`].
    pub fn store_u64_release(&self, offset: usize, value: u64) -> Result<(), TransportError> {
        self.word(offset)?.store(value, MemOrder::Release);
        Ok(())
    }
}
