//! `Communicator::moe_gemm_combine`: expert parallelism's way back, the experts' second GEMM
//! and the combine in one persistent kernel per GPU (`mkernel_kernels::moe_gemm_combine`).
//! Every rank multiplies the rows its experts received (in a [`Communicator::moe_dispatch_gemm`]
//! call's layout, typically after the activation) by its experts' weights, pushes each
//! finished tile's rows over NVLink to the ranks their tokens came from while later tiles are
//! still being computed, and sums each of its tokens' rows weighted by its top-k weights.
//!
//! Status: new (session 61). Its GPU tests (`tests/tests/gpu_moe_gemm_combine.rs`) pass with
//! 2-4 ranks sharing one GPU (runs 440-443, H100 and H200). `mkernel bench moe-gemm-combine`
//! times it against cuBLAS per expert over the received rows: two ranks sharing one H200, 0.73
//! of cuBLAS's speed at a Mixtral-like shape and 0.68 at a DeepSeek-V3-like one (run 443,
//! bench/NOTES.md 64), the dispatch's ratios on a shared GPU. Not yet run with a GPU per rank,
//! nor timed against an unfused baseline (cuBLAS per expert, NCCL's all-to-all, a weighted
//! sum); 8 push CTAs ran better than 16 at both shapes, the default tile is the dispatch's.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use mkernel_kernels::driver::Runtime;
use mkernel_kernels::gemm::TileConfig;
use mkernel_kernels::gemm_allreduce::WorkspaceLayout;
use mkernel_kernels::moe_dispatch_gemm::{MoeShape, SEGMENT_ALIGN};
use mkernel_kernels::moe_gemm_combine::{CombineBuffers, MoeCombineConfig, DEFAULT_PUSH_CTAS};

use crate::comm::Communicator;
use crate::error::{invalid, Result};
use crate::gemm_allreduce::PlanContext;
use crate::moe_dispatch_gemm::layout_words;

/// Overrides of an MoE GEMM + combine call's choices (all `None`: the defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct MoeGemmCombineOptions {
    /// The GEMM's tile, one of [`mkernel_kernels::moe_gemm_combine::tiles`]. None: 128 x 256
    /// TMA-store tiles where a balanced routing (max_tokens x topk rows a rank) fills the
    /// compute CTAs with them, else 128 x 128 (the dispatch's rule).
    pub tile: Option<TileConfig>,
    /// CTAs that write the routes and push rows (below the grid). None:
    /// [`DEFAULT_PUSH_CTAS`], at most half the rank's CTAs.
    pub push_ctas: Option<u32>,
    /// Rows of every rank's `h` (the dispatch's receive capacity: pass the same value as
    /// to the dispatch). None: [`MoeShape::worst_case_recv_rows`], the dispatch's default.
    pub recv_capacity: Option<u32>,
}

/// The configuration an MoE GEMM + combine call of `shape` would use on a communicator
/// described by `ctx`. `shape` is the dispatch's, with N the combine's output columns (the
/// hidden size) and K its inner dimension (the experts' intermediate size).
///
/// Errors: a context no communicator has (`ctx`); the shape rules of
/// [`mkernel_kernels::moe_gemm_combine::check_shape`] (`world_size`, `shape`: the
/// dispatch's, and N % 8 == 0); a tile without a kernel (`tile`); push CTAs that are 0 or
/// leave no compute CTA (`push_ctas`); a receive capacity that is not a positive multiple of
/// 128 rows or from 2^31 rows (`recv_capacity`); regions that exceed the workspace
/// (`max_output_elems`: the communicator needs `CommConfig::max_output_elems` >=
/// [`crate::moe_combine_workspace_elems_needed`], mostly the slots, max_tokens x topk rows of N).
/// Every rank of a collective gets the same answer.
pub fn plan_moe_gemm_combine(shape: MoeShape, opts: MoeGemmCombineOptions, ctx: PlanContext) -> Result<MoeCombineConfig> {
    ctx.check()?;
    let world = ctx.world_size;
    mkernel_kernels::moe_gemm_combine::check_shape(shape, world)?;
    let push_ctas = match opts.push_ctas {
        Some(c) if c == 0 || c >= ctx.grid => {
            return Err(invalid("push_ctas", format!("must be 1..{} (a compute CTA left of the rank's {}), got {c}", ctx.grid, ctx.grid)));
        }
        Some(c) => c,
        None => DEFAULT_PUSH_CTAS.min(ctx.grid / 2).max(1),
    };
    let tile = match opts.tile {
        Some(t) => {
            mkernel_kernels::moe_gemm_combine::check_tile(t, shape.n)?;
            t
        }
        None => crate::moe_dispatch_gemm::default_tile(shape, ctx.grid - push_ctas),
    };
    let recv_capacity = match opts.recv_capacity {
        Some(c) if c == 0 || c % SEGMENT_ALIGN != 0 => {
            return Err(invalid("recv_capacity", format!("must be a positive multiple of {SEGMENT_ALIGN} rows, got {c}")));
        }
        Some(c) => c,
        None => shape.worst_case_recv_rows(world).ok_or_else(|| {
            invalid("shape", "the worst case receive rows (world x max_tokens x min(topk, local experts)) exceed u32; give recv_capacity".to_string())
        })?,
    };
    let cfg = MoeCombineConfig { tile, push_ctas, grid: ctx.grid, recv_capacity };
    let layout = WorkspaceLayout::new(ctx.max_output_elems, world)?;
    mkernel_kernels::moe_gemm_combine::check_workspace(shape, &cfg, layout, world)?;
    Ok(cfg)
}

impl Communicator {
    /// The configuration a [`Communicator::moe_gemm_combine`] call of this shape would use
    /// ([`plan_moe_gemm_combine`] on this communicator).
    ///
    /// Errors: as [`plan_moe_gemm_combine`].
    pub fn plan_moe_gemm_combine(&self, shape: MoeShape, opts: MoeGemmCombineOptions) -> Result<MoeCombineConfig> {
        plan_moe_gemm_combine(shape, opts, self.plan_context())
    }

    /// Computes every local expert's second GEMM over the rows it received and returns each
    /// row to the rank its token came from, where the rows of a token are summed weighted,
    /// enqueued on `stream`:
    /// y\[t\] = sum over k of topk_weights\[t, k\] x (h_q\[row\] x W_e^T) with e the token's
    /// k-th expert, q its rank and row = dest_rows\[t, k\]; the sum in fp32 in k order,
    /// rounded once to bf16.
    ///
    /// A collective: every rank calls it with the same shape (except `tokens`, its own) and
    /// options, in the same order relative to the communicator's other calls. The routing is
    /// a dispatch's ([`Communicator::moe_dispatch_gemm`] with the same `recv_capacity`,
    /// experts, topk and max_tokens; the shapes' N and K are this GEMM's):
    /// - `h` \[recv_capacity, K\] bf16: the experts' inputs, row for row as the dispatch's
    ///   `out` (padding rows are computed and never sent);
    /// - `weights` \[El, N, K\] bf16: this rank's experts' weights, W_e row-major \[N, K\];
    /// - `layout` \[[`crate::moe_layout_words`]\] u32: the dispatch's on this rank;
    /// - `expert_ids` \[tokens, topk\] i32 and `dest_rows` \[tokens, topk\] u32: the dispatch's
    ///   on this rank (an entry takes part where its id is an expert and its row is not
    ///   u32::MAX);
    /// - `topk_weights` \[tokens, topk\] f32: each (token, k)'s weight;
    /// - `y` \[tokens, N\] bf16 (written; a token without entries gets zeros).
    ///
    /// Stream-ordered, epochs as every collective; a peer that never calls makes this
    /// rank's wait for its routes time out after `CommConfig::timeout`.
    ///
    /// Errors: as [`plan_moe_gemm_combine`]; a buffer too short (`h`, `weights`, `layout`,
    /// `expert_ids`, `dest_rows`, `topk_weights`, `y`) or on another GPU; a communicator
    /// that failed before. After the call, [`Communicator::synchronize`] returns
    /// [`crate::Error::DeviceInput`] (the communicator stays usable) where:
    /// - an expert id, or a destination row at or past recv_capacity or past the rows the
    ///   expert rank's layout uses, was bad (reported by the token's rank; the entry was left
    ///   out of its sum);
    /// - a rank's layout does not tile its rows as a dispatch's does, or the ranks passed
    ///   different recv_capacity, max_tokens, topk, experts, N, K or tiles (reported by every
    ///   rank; no rank pushed or summed: y is unwritten);
    /// - a received row's route is not this call's from the rank and expert the layout says,
    ///   or a padding row is some entry's destination (`layout` and `dest_rows` from
    ///   different dispatches; reported by the expert's rank, the row not sent; a token
    ///   routed to a padding row sums whatever its slot holds).
    #[allow(clippy::too_many_arguments)]
    pub fn moe_gemm_combine(
        &self,
        stream: &Arc<CudaStream>,
        h: &CudaSlice<bf16>,
        weights: &CudaSlice<bf16>,
        layout: &CudaSlice<u32>,
        expert_ids: &CudaSlice<i32>,
        dest_rows: &CudaSlice<u32>,
        topk_weights: &CudaSlice<f32>,
        y: &mut CudaSlice<bf16>,
        shape: MoeShape,
        opts: MoeGemmCombineOptions,
    ) -> Result<MoeCombineConfig> {
        self.check_usable()?;
        let cfg = self.plan_moe_gemm_combine(shape, opts)?;
        let world = self.world_size();
        let el = shape.local_experts(world) as usize;
        let (t, k, n, topk) = (shape.tokens as usize, shape.k as usize, shape.n as usize, shape.topk as usize);
        let weights_len = el.checked_mul(n).and_then(|x| x.checked_mul(k)).ok_or_else(|| invalid("weights", "[experts / world, N, K] overflows usize".to_string()))?;
        crate::error::check_lengths(&[
            ("h", h.len(), cfg.recv_capacity as usize * k, "[recv_capacity, K]"),
            ("weights", weights.len(), weights_len, "[experts / world, N, K]"),
            ("layout", layout.len(), layout_words(el as u32, world), "[El + 1 + El x world]"),
            ("expert_ids", expert_ids.len(), t * topk, "[tokens, topk]"),
            ("dest_rows", dest_rows.len(), t * topk, "[tokens, topk]"),
            ("topk_weights", topk_weights.len(), t * topk, "[tokens, topk]"),
            ("y", y.len(), t * n, "[tokens, N]"),
        ])?;
        self.check_on_own_gpu(
            stream,
            &[
                ("h", h.ordinal()),
                ("weights", weights.ordinal()),
                ("layout", layout.ordinal()),
                ("expert_ids", expert_ids.ordinal()),
                ("dest_rows", dest_rows.ordinal()),
                ("topk_weights", topk_weights.ordinal()),
                ("y", y.ordinal()),
            ],
        )?;
        self.order_after_last(stream)?;
        let (ph, _gh) = h.device_ptr(stream);
        let (pw, _gw) = weights.device_ptr(stream);
        let (pl, _gl) = layout.device_ptr(stream);
        let (pi, _gi) = expert_ids.device_ptr(stream);
        let (pd, _gd) = dest_rows.device_ptr(stream);
        let (pt, _gt) = topk_weights.device_ptr(stream);
        let (py, _gy) = y.device_ptr_mut(stream);
        let bufs = self.rank_buffers();
        let b = CombineBuffers { h: ph, weights: pw, layout: pl, expert_ids: pi, dest_rows: pd, topk_weights: pt, y: py };
        // SAFETY: buffers checked for `shape` and `cfg` on this rank's GPU; the workspace and
        // peer mappings live as long as `self`.
        let launched = unsafe { mkernel_kernels::moe_gemm_combine::launch(Runtime::global(), stream, b, shape, cfg, &bufs, self.config().timeout) };
        self.finish_launch(launched, stream)?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(world: u32, grid: u32, max: u64) -> PlanContext {
        PlanContext::new(world, grid, false, max).unwrap()
    }

    fn shape() -> MoeShape {
        MoeShape { tokens: 4096, max_tokens: 4096, topk: 2, experts: 8, n: 4096, k: 2048 }
    }

    #[test]
    fn default_plans_match_the_dispatch_and_fit_their_workspace() {
        let d = MoeGemmCombineOptions::default();
        let need = mkernel_kernels::moe_gemm_combine::workspace_elems_needed(shape(), 16896);
        let p = plan_moe_gemm_combine(shape(), d, ctx(2, 132, need)).unwrap();
        assert_eq!((p.tile, p.push_ctas, p.grid, p.recv_capacity), (TileConfig::WIDE_TMA_STORE, 8, 132, 16896), "{p}");
        let dispatch = crate::plan_moe_dispatch_gemm(shape(), crate::MoeDispatchGemmOptions::default(), ctx(2, 132, need)).unwrap();
        assert_eq!(dispatch.recv_capacity, p.recv_capacity);
        let e = plan_moe_gemm_combine(shape(), d, ctx(2, 132, need - 1)).unwrap_err().to_string();
        assert!(e.contains("`max_output_elems`") && e.contains(&format!("max_output_elems >= {need}")), "{e}");
        for grid in 2..=17 {
            let p = plan_moe_gemm_combine(MoeShape { max_tokens: 64, tokens: 64, ..shape() }, d, ctx(2, grid, need)).unwrap();
            assert!(p.push_ctas >= 1 && p.push_ctas < p.grid && p.grid == grid, "{grid}: {p}");
        }
    }

    #[test]
    fn bad_calls_are_refused_by_name() {
        let d = MoeGemmCombineOptions::default();
        let c = ctx(2, 132, 1 << 30);
        let err = |s, o| plan_moe_gemm_combine(s, o, c).unwrap_err().to_string();
        assert!(plan_moe_gemm_combine(shape(), d, ctx(1, 132, 1 << 30)).unwrap_err().to_string().contains("`world_size`"));
        assert!(err(MoeShape { experts: 9, ..shape() }, d).contains("`shape`"));
        assert!(err(MoeShape { n: 4100, ..shape() }, d).contains("multiple of 8"));
        for cap in [0, 200] {
            assert!(err(shape(), MoeGemmCombineOptions { recv_capacity: Some(cap), ..d }).contains("`recv_capacity`"), "{cap}");
        }
        for pc in [0, 132, 500] {
            assert!(err(shape(), MoeGemmCombineOptions { push_ctas: Some(pc), ..d }).contains("`push_ctas`"), "{pc}");
        }
        assert!(err(shape(), MoeGemmCombineOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), ..d }).contains("`tile`"));
    }
}
