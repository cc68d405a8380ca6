//! Random bf16 test data generated on the device (`src/cuda/ops/fill.cuh`), so checks
//! and benchmarks can draw fresh inputs every repetition at HBM speed.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime};
use crate::error::{invalid, Result};
use crate::jit::KernelSource;
use crate::params::FillParams;

/// Source of the fill kernel.
pub fn source() -> Result<KernelSource> {
    KernelSource::single_call("mkernel_fill_uniform_bf16", "ops/fill.cuh", "FillParams", "fill_uniform_bf16")
}

/// Fills `len` bf16 at device address `out` with values uniform in [lo, hi) drawn
/// from `seed` (same seed, same values).
///
/// # Safety
/// `out` must hold `len` bf16 in `stream`'s context.
pub unsafe fn launch(rt: &Runtime, stream: &Arc<CudaStream>, out: u64, len: u64, seed: u64, lo: f32, hi: f32) -> Result<()> {
    if !(lo < hi) {
        return Err(invalid("lo", format!("must be below hi, got lo={lo}, hi={hi}")));
    }
    if len == 0 {
        return Ok(());
    }
    let f = rt.function(stream.context(), &source()?)?;
    let grid = len.div_ceil(256).min(65_535) as u32;
    driver::launch(&f, LaunchDims { grid, block: 256, smem_bytes: 0 }, stream, &FillParams { out, len, seed, lo, hi })
}
