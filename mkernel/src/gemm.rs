//! `mkernel::gemm`: C = A * B^T on one GPU with the Hopper GEMM engine.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use mkernel_kernels::driver::Runtime;
use mkernel_kernels::gemm::{GemmShape, TileConfig};

use crate::error::{invalid, Result};

/// Options of [`gemm`].
#[derive(Debug, Clone, Copy)]
pub struct GemmOptions {
    /// Tile configuration, one of [`TileConfig::gemm_catalog`] ([`TileConfig::ALL`], the
    /// swapped-operand tiles of [`TileConfig::all_swapped`] and the column-fitted ones of
    /// [`TileConfig::cols`]); `None` lets the heuristic choose ([`TileConfig::choose_for`]).
    pub tile: Option<TileConfig>,
    /// Bound on every wait inside the kernel (an expired wait traps the kernel), 1 ms to
    /// 1 day.
    pub timeout: Duration,
}

impl Default for GemmOptions {
    fn default() -> Self {
        Self { tile: None, timeout: Duration::from_secs(10) }
    }
}

/// Checks that `stream` runs on the GPU that holds the buffers.
pub(crate) fn check_same_device(stream: &CudaStream, ordinal: usize, arg: &'static str) -> Result<()> {
    let s = stream.context().ordinal();
    if s != ordinal {
        return Err(invalid(arg, format!("is on GPU {ordinal} but the stream runs on GPU {s}")));
    }
    Ok(())
}

/// C\[M,N\] = A\[M,K\] * B\[N,K\]^T, bf16 in and out, fp32 accumulation, enqueued on `stream`.
///
/// - `a`: \[M, K\] row-major; `b`: \[N, K\] row-major (B^T of a \[K, N\] matrix, the
///   layout of an `nn.Linear` weight); `c`: \[M, N\] row-major; all contiguous on
///   `stream`'s GPU.
/// - Any M, N >= 1; K >= 8 with K % 8 == 0 (TMA needs 16-byte row strides); M, N, K at
///   most 2^31 - 256.
/// - Errors: [`crate::Error::InvalidArgument`] naming the argument and rule, or a
///   compile/driver error. Returns the tile configuration used.
pub fn gemm(
    stream: &Arc<CudaStream>,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    c: &mut CudaSlice<bf16>,
    shape: GemmShape,
    opts: GemmOptions,
) -> Result<TileConfig> {
    shape.validate(a.len(), b.len(), c.len())?;
    if let Some(t) = opts.tile {
        t.validate_for_gemm()?;
    }
    if !crate::comm::TIMEOUT_RANGE.contains(&opts.timeout) {
        return Err(invalid("timeout", format!("must be between 1 ms and 1 day, got {:?}", opts.timeout)));
    }
    for (arg, ord) in [("a", a.ordinal()), ("b", b.ordinal()), ("c", c.ordinal())] {
        check_same_device(stream, ord, arg)?;
    }
    let (pa, _ga) = a.device_ptr(stream);
    let (pb, _gb) = b.device_ptr(stream);
    let (pc, _gc) = c.device_ptr_mut(stream);
    // SAFETY: the three buffers were validated for `shape` and live on `stream`'s GPU;
    // the guards keep cudarc's stream ordering for them until after the launch.
    let cfg = unsafe { mkernel_kernels::gemm::launch(Runtime::global(), stream, pa, pb, pc, shape, opts.tile, opts.timeout)? };
    Ok(cfg)
}
