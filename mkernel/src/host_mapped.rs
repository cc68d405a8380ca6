//! Pinned host memory mapped into a GPU's address space: words a kernel writes (a
//! timed-out wait's status) or polls (a host gate) while the host reads or writes them
//! with volatile accesses.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};

use crate::error::{DriverContext, Result};

/// One `T` of pinned, device-mapped host memory, initialised to `T::default()` and
/// freed on drop. `T` must be plain data (`#[repr(C)]` integers) the device accesses
/// with system-scope loads and stores.
pub(crate) struct HostMapped<T: Copy + Default> {
    ctx: Arc<CudaContext>,
    host: *mut T,
    device: u64,
}

// SAFETY: the pointer is to pinned memory owned by this struct; every access is volatile.
unsafe impl<T: Copy + Default> Send for HostMapped<T> {}
unsafe impl<T: Copy + Default> Sync for HostMapped<T> {}

impl<T: Copy + Default> HostMapped<T> {
    /// Allocates it (portable, device-mapped) for `ctx`'s device.
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let mut host = std::ptr::null_mut();
        let size = std::mem::size_of::<T>();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: out-pointer to a local.
        unsafe { sys::cuMemHostAlloc(&mut host, size, flags) }.result().call("cuMemHostAlloc")?;
        let host = host as *mut T;
        // SAFETY: `host` points to `size` writable bytes.
        unsafe { host.write_volatile(T::default()) };
        let mut device = 0;
        // SAFETY: `host` was allocated with DEVICEMAP.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host as *mut _, 0) }.result();
        let mem = Self { ctx: ctx.clone(), host, device };
        mapped.call("cuMemHostGetDevicePointer")?;
        Ok(mem)
    }

    /// The device's address of it.
    pub(crate) fn device(&self) -> u64 {
        self.device
    }

    /// Volatile read (the device writes with system-scope stores and fences).
    pub(crate) fn read(&self) -> T {
        // SAFETY: valid for the lifetime of self.
        unsafe { self.host.read_volatile() }
    }

    /// Volatile write.
    pub(crate) fn write(&self, v: T) {
        // SAFETY: as above.
        unsafe { self.host.write_volatile(v) }
    }
}

impl<T: Copy + Default> Drop for HostMapped<T> {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemHostAlloc, freed once.
        let _ = unsafe { sys::cuMemFreeHost(self.host as *mut _) };
    }
}
