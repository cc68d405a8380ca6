//! Device-side verification (`src/cuda/ops/check.cuh`): accumulate an fp32 reference
//! (and the sum of magnitudes that sets the tolerance) and compare a bf16 result with
//! it, returning a few statistics instead of copying matrices to the host.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime};
use crate::error::Result;
use crate::jit::KernelSource;
use crate::params::{AccumulateParams, CompareParams};

/// Source of the reference accumulation kernel.
pub fn accumulate_source() -> Result<KernelSource> {
    KernelSource::single_call("mkernel_check_accumulate", "ops/check.cuh", "AccumulateParams", "accumulate_reference")
}

/// Source of the comparison kernel.
pub fn compare_source() -> Result<KernelSource> {
    KernelSource::single_call("mkernel_check_compare", "ops/check.cuh", "CompareParams", "compare_bf16_f32")
}

fn grid_for(len: u64) -> u32 {
    len.div_ceil(256).clamp(1, 8192) as u32
}

/// Enqueues `sum (=|+=) p; abs_sum (=|+=) |p|` over `len` floats (`first`: overwrite).
///
/// # Safety
/// The three addresses hold `len` f32 in `stream`'s context.
pub unsafe fn accumulate(rt: &Runtime, stream: &Arc<CudaStream>, sum: u64, abs_sum: u64, p: u64, len: u64, first: bool) -> Result<()> {
    let f = rt.function(stream.context(), &accumulate_source()?)?;
    let params = AccumulateParams { sum, abs_sum, p, len, first: first as u32, pad0: 0 };
    driver::launch(&f, LaunchDims { grid: grid_for(len), block: 256, smem_bytes: 0 }, stream, &params)
}

/// Enqueues the comparison of `got` (bf16) with `reference` (f32) into `stats` (a
/// zeroed `CompareStats` with `first_bad = u64::MAX`); the tolerance of element i is
/// `rel_tol * (|reference[i]| + scale[i]) + abs_floor` (`scale` = 0: no extra term).
///
/// # Safety
/// `got`, `reference` (and `scale` unless 0) hold `len` elements and `stats` one
/// `CompareStats`, all in `stream`'s context.
#[allow(clippy::too_many_arguments)]
pub unsafe fn compare(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    got: u64,
    reference: u64,
    scale: u64,
    stats: u64,
    len: u64,
    rel_tol: f32,
    abs_floor: f32,
) -> Result<()> {
    let f = rt.function(stream.context(), &compare_source()?)?;
    let params = CompareParams { got, reference, scale, stats, len, rel_tol, abs_floor };
    driver::launch(&f, LaunchDims { grid: grid_for(len), block: 256, smem_bytes: 0 }, stream, &params)
}
