//! The unfused MoE combine's weighted sum (`src/cuda/ops/combine_sum.cuh`): once an
//! all-to-all has brought every (token, k) entry's expert output row back to its token's
//! rank, y\[t\] = sum over k of w\[t, k\] x land\[index\[t, k\]\] in fp32, rounded once to
//! bf16. The last step of `bench moe-gemm-combine`'s unfused baseline (cuBLAS per expert,
//! NCCL's all-to-all back, then this kernel).

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime};
use crate::error::{invalid, Result};
use crate::jit::KernelSource;
use crate::params::CombineSumParams;

/// Name of the weighted-sum kernel.
pub const KERNEL_NAME: &str = "mkernel_combine_sum_bf16";

/// Threads a block.
const THREADS: u32 = 256;

/// Source of the weighted-sum kernel.
pub fn source() -> Result<KernelSource> {
    KernelSource::single_call(KERNEL_NAME, "ops/combine_sum.cuh", "CombineSumParams", "combine_sum_bf16")
}

/// The launch's checks: N a positive multiple of 8 (16-byte vectors of a row), the bf16
/// buffers 16-byte aligned and the u32 / f32 ones 4-byte aligned.
fn check(index: u64, weights: u64, land: u64, y: u64, n: u32) -> Result<()> {
    if n == 0 || !n.is_multiple_of(8) {
        return Err(invalid("n", format!("must be a positive multiple of 8 (16-byte vectors of a row), got {n}")));
    }
    if !land.is_multiple_of(16) || !y.is_multiple_of(16) {
        return Err(invalid("land", format!("the landing rows and y must be 16-byte aligned, got {land:#x} and {y:#x}")));
    }
    if !index.is_multiple_of(4) || !weights.is_multiple_of(4) {
        return Err(invalid("index", format!("the index and weights must be 4-byte aligned, got {index:#x} and {weights:#x}")));
    }
    Ok(())
}

/// Enqueues y\[t, c\] = sum over k < topk of weights\[t, k\] x land\[index\[t, k\], c\] for
/// t < tokens, c < n (fp32 in k order, rounded once to bf16); an entry whose index is at or
/// past `rows` (u32::MAX: no expert) takes no part, and a token without entries gets zeros.
///
/// Errors: `n` not a positive multiple of 8, a misaligned buffer; driver errors. Nothing is
/// launched for 0 tokens.
///
/// # Safety
/// In `stream`'s context: `index` (u32) and `weights` (f32) hold tokens x topk elements,
/// `land` (bf16) `rows` x `n` and `y` (bf16) tokens x `n`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch(rt: &Runtime, stream: &Arc<CudaStream>, index: u64, weights: u64, land: u64, rows: u32, y: u64, tokens: u32, topk: u32, n: u32) -> Result<()> {
    check(index, weights, land, y, n)?;
    if tokens == 0 {
        return Ok(());
    }
    let vecs = tokens as u64 * (n / 8) as u64;
    let grid = vecs.div_ceil(THREADS as u64).clamp(1, 65_535) as u32;
    let f = rt.function_named(stream.context(), KERNEL_NAME, source)?;
    driver::launch(&f, LaunchDims { grid, block: THREADS, smem_bytes: 0 }, stream, &CombineSumParams { index, weights, land, y, tokens, topk, n, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_checks_refuse_a_bad_width_or_alignment() {
        assert!(check(0x100, 0x200, 0x300, 0x400, 4096).is_ok());
        for n in [0, 4, 1001] {
            assert!(check(0x100, 0x200, 0x300, 0x400, n).unwrap_err().to_string().contains("`n`"), "{n}");
        }
        assert!(check(0x100, 0x200, 0x308, 0x400, 64).unwrap_err().to_string().contains("16-byte"));
        assert!(check(0x100, 0x200, 0x300, 0x402, 64).unwrap_err().to_string().contains("16-byte"));
        assert!(check(0x102, 0x200, 0x300, 0x400, 64).unwrap_err().to_string().contains("4-byte"));
    }

    #[test]
    fn source_calls_the_kernel() {
        let s = source().unwrap();
        assert_eq!(s.name, KERNEL_NAME);
        assert!(s.source.contains("combine_sum_bf16(p)") && s.source.contains("struct CombineSumParams"));
    }
}
