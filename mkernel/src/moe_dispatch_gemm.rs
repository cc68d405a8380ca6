//! `Communicator::moe_dispatch_gemm`: expert parallelism's dispatch and the experts' first
//! GEMM in one persistent kernel per GPU (`mkernel_kernels::moe_dispatch_gemm`). Every rank
//! routes its tokens by their top-k experts, pushes each routed token row over NVLink to
//! the rank holding the expert, and computes out = tokens x W_e^T for its own experts while
//! the tokens still arrive.
//!
//! Output layout on each rank (DeepGEMM's "contiguous" grouped layout): local expert e's
//! rows of `out` are one segment starting at a multiple of
//! [`mkernel_kernels::moe_dispatch_gemm::SEGMENT_ALIGN`] rows, holding rank 0's tokens for
//! it, then rank 1's, ..., each in token order; the rows between a segment's last token and
//! the next segment are padding (garbage). `layout` says where the segments start and how
//! many tokens each source rank sent; `dest_rows` (on the source) where each (token, k)
//! went, which is what a combine needs to bring the results back.
//!
//! Status: new (session 56); its GPU tests (`tests/tests/gpu_moe_dispatch_gemm.rs`) pass with
//! 2-4 ranks on one GPU. `mkernel bench moe-dispatch-gemm` times it against cuBLAS per expert
//! over the received tokens: with two ranks sharing one H100, 0.73 of cuBLAS's speed at a
//! Mixtral-like shape and 0.67 at a DeepSeek-V3-like one (bench/NOTES.md 59.4), figures of
//! the shared GPU. Not yet run with a GPU per rank, nor against an unfused baseline with its
//! all-to-all; push CTAs and the default tile are first guesses.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use mkernel_kernels::driver::Runtime;
use mkernel_kernels::gemm::TileConfig;
use mkernel_kernels::gemm_allreduce::WorkspaceLayout;
use mkernel_kernels::moe_dispatch_gemm::{default_chunk_rows, MoeBuffers, MoeDispatchConfig, MoeShape, DEFAULT_PUSH_CTAS, SEGMENT_ALIGN};

use crate::comm::Communicator;
use crate::error::{invalid, Result};
use crate::gemm_allreduce::PlanContext;

/// Overrides of an MoE dispatch + GEMM call's choices (all `None`: the defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct MoeDispatchGemmOptions {
    /// The GEMM's tile, one of [`mkernel_kernels::moe_dispatch_gemm::tiles`]. None: 128 x 256
    /// TMA-store tiles where the balanced routing (max_tokens x topk rows a rank) fills the
    /// compute CTAs with them, else 128 x 128 (Registers tiles where N % 8 != 0).
    pub tile: Option<TileConfig>,
    /// CTAs that route and push this rank's tokens (below the grid); they then compute too:
    /// every CTA claims its tiles in the GEMM's order, so the push CTAs take what is left once
    /// their pushes are out. None: [`DEFAULT_PUSH_CTAS`], at most half the rank's CTAs.
    pub push_ctas: Option<u32>,
    /// Tokens of a (source rank, expert) segment per arrival flag (>= 1; more than max_tokens
    /// means one chunk a segment). None: [`default_chunk_rows`] (512 KiB of token rows, at
    /// least 16 tokens), at most max_tokens.
    pub chunk_rows: Option<u32>,
    /// Rows of every rank's receive buffer and `out` (a positive multiple of
    /// [`SEGMENT_ALIGN`]). None: [`MoeShape::worst_case_recv_rows`], which holds any
    /// routing; a smaller one saves memory, and a call whose tokens do not fit fails
    /// ([`crate::Error::DeviceInput`]) with nothing pushed or computed.
    pub recv_capacity: Option<u32>,
}

/// u32 words of a call's `layout` output on `world` ranks with `local_experts` experts a
/// rank: the segments' first rows \[local_experts\], the rows in use, then the tokens
/// received per (local expert, source rank) \[local_experts\]\[world\].
pub fn layout_words(local_experts: u32, world: u32) -> usize {
    local_experts as usize + 1 + local_experts as usize * world as usize
}

/// The configuration an MoE dispatch + GEMM call of `shape` would use on a communicator
/// described by `ctx`.
///
/// Errors: a context no communicator has (`ctx`); the shape rules of
/// [`mkernel_kernels::moe_dispatch_gemm::check_shape`] (`world_size`, `shape`); a tile
/// without a kernel (`tile`); push CTAs that are 0 or leave no compute CTA, or whose routing
/// flags do not fit the inbox (`push_ctas`); 0 chunk rows (`chunk_rows`); a receive capacity
/// that is not a positive multiple of 128 rows, from 2^31 rows, or whose buffer with the
/// token counts exceeds the workspace (`recv_capacity`: the communicator needs
/// `CommConfig::max_output_elems` >=
/// [`crate::moe_workspace_elems_needed`]); more arrival flags or
/// scratch than the workspace has, or stacked weights (local experts x N) from 2^31 rows
/// (`chunk_rows`, `shape`). Every rank of a collective gets the same answer (the plan does
/// not depend on a rank's own token count).
pub fn plan_moe_dispatch_gemm(shape: MoeShape, opts: MoeDispatchGemmOptions, ctx: PlanContext) -> Result<MoeDispatchConfig> {
    ctx.check()?;
    let world = ctx.world_size;
    mkernel_kernels::moe_dispatch_gemm::check_shape(shape, world)?;
    let push_ctas = match opts.push_ctas {
        Some(c) if c == 0 || c >= ctx.grid => {
            return Err(invalid("push_ctas", format!("must be 1..{} (a compute CTA left of the rank's {}), got {c}", ctx.grid, ctx.grid)));
        }
        Some(c) => c,
        None => DEFAULT_PUSH_CTAS.min(ctx.grid / 2).max(1),
    };
    let compute = ctx.grid - push_ctas;
    let tile = match opts.tile {
        Some(t) => {
            mkernel_kernels::moe_dispatch_gemm::check_tile(t, shape.n)?;
            t
        }
        None => default_tile(shape, compute),
    };
    let chunk_rows = match opts.chunk_rows {
        Some(0) => return Err(invalid("chunk_rows", "must be at least 1")),
        // (a chunk is at most a segment of max_tokens: asking for more is asking for one chunk)
        Some(c) => c.min(shape.max_tokens.max(1)),
        None => default_chunk_rows(shape.k).min(shape.max_tokens.max(1)),
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
    let cfg = MoeDispatchConfig { tile, push_ctas, grid: ctx.grid, chunk_rows, recv_capacity };
    let layout = WorkspaceLayout::new(ctx.max_output_elems, world)?;
    mkernel_kernels::moe_dispatch_gemm::check_workspace(shape, &cfg, layout, world)?;
    Ok(cfg)
}

/// The default tile for `compute` CTAs: 128 x 256 TMA-store where a balanced routing
/// (max_tokens x topk rows a rank) makes at least a wave of them, else 128 x 128 (more,
/// smaller tiles); Registers twins where N % 8 != 0. A first rule, not measured.
pub(crate) fn default_tile(s: MoeShape, compute: u32) -> TileConfig {
    let rows = s.max_tokens as u64 * s.topk as u64;
    let wide_tiles = rows.div_ceil(128) * (s.n as u64).div_ceil(256);
    let wide = wide_tiles >= compute as u64;
    match (s.n.is_multiple_of(8), wide) {
        (true, true) => TileConfig::WIDE_TMA_STORE,
        (true, false) => TileConfig::NARROW_TMA_STORE,
        (false, true) => TileConfig::WIDE,
        (false, false) => TileConfig::NARROW,
    }
}

impl Communicator {
    /// The configuration a [`Communicator::moe_dispatch_gemm`] call of this shape would use
    /// ([`plan_moe_dispatch_gemm`] on this communicator).
    ///
    /// Errors: as [`plan_moe_dispatch_gemm`].
    pub fn plan_moe_dispatch_gemm(&self, shape: MoeShape, opts: MoeDispatchGemmOptions) -> Result<MoeDispatchConfig> {
        plan_moe_dispatch_gemm(shape, opts, self.plan_context())
    }

    /// Dispatches this rank's tokens to their experts' ranks and computes every local
    /// expert's GEMM over the tokens it receives, enqueued on `stream`.
    ///
    /// A collective: every rank calls it with the same shape (except `tokens`, its own) and
    /// options, in the same order relative to the communicator's other calls. Experts are
    /// numbered globally: rank r holds experts r El .. (r + 1) El - 1 (El = experts / world).
    /// - `x` \[tokens, K\] bf16: this rank's tokens;
    /// - `expert_ids` \[tokens, topk\] i32: each token's experts (-1: none; an id must be
    ///   unique within its token's top-k; bad ids are dropped and reported, see Errors);
    /// - `weights` \[El, N, K\] bf16: this rank's experts' weights, W_e row-major \[N, K\];
    /// - `out` \[recv_capacity, N\] bf16 (written): the products, in the layout of the module
    ///   documentation;
    /// - `dest_rows` \[tokens, topk\] u32 (written): the row of `out` on the expert's rank
    ///   that holds each (token, k), u32::MAX where its id was -1 or bad (all of them where
    ///   the call was skipped for a capacity or a disagreement; after a timeout, or behind
    ///   one, neither this nor `layout` is written);
    /// - `layout` \[[`layout_words`]\] u32 (written): local expert e's first row of `out`
    ///   (\[e\]), the rows in use (\[El\]), then the tokens received from rank s for expert e
    ///   (\[El + 1 + e world + s\]).
    ///
    /// The call is stream-ordered and needs no host synchronisation; calls are told apart
    /// by epochs. A peer that never calls makes this rank's wait for its counts time out
    /// after `CommConfig::timeout` ([`Communicator::synchronize`] then names the peer and
    /// the communicator refuses further calls).
    ///
    /// Status: see the module documentation.
    ///
    /// Errors: as [`plan_moe_dispatch_gemm`]; a buffer too short (`x`, `expert_ids`,
    /// `weights`, `out`, `dest_rows`, `layout`) or on another GPU; a communicator that failed
    /// before. After the call, [`Communicator::synchronize`] returns
    /// [`crate::Error::DeviceInput`] where an expert id was bad (the entry was dropped), the
    /// routed tokens did not fit some rank's `recv_capacity`, or the ranks passed different
    /// chunk lengths, max_tokens, capacities, K or expert counts (in those two cases no rank
    /// pushed or computed); the communicator stays usable.
    #[allow(clippy::too_many_arguments)]
    pub fn moe_dispatch_gemm(
        &self,
        stream: &Arc<CudaStream>,
        x: &CudaSlice<bf16>,
        expert_ids: &CudaSlice<i32>,
        weights: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        dest_rows: &mut CudaSlice<u32>,
        layout: &mut CudaSlice<u32>,
        shape: MoeShape,
        opts: MoeDispatchGemmOptions,
    ) -> Result<MoeDispatchConfig> {
        self.check_usable()?;
        let cfg = self.plan_moe_dispatch_gemm(shape, opts)?;
        let world = self.world_size();
        let el = shape.local_experts(world) as usize;
        let (t, k, n, topk) = (shape.tokens as usize, shape.k as usize, shape.n as usize, shape.topk as usize);
        let weights_len = el.checked_mul(n).and_then(|x| x.checked_mul(k)).ok_or_else(|| invalid("weights", "[experts / world, N, K] overflows usize".to_string()))?;
        crate::error::check_lengths(&[
            ("x", x.len(), t * k, "[tokens, K]"),
            ("expert_ids", expert_ids.len(), t * topk, "[tokens, topk]"),
            ("weights", weights.len(), weights_len, "[experts / world, N, K]"),
            ("out", out.len(), cfg.recv_capacity as usize * n, "[recv_capacity, N]"),
            ("dest_rows", dest_rows.len(), t * topk, "[tokens, topk]"),
            ("layout", layout.len(), layout_words(el as u32, world), "[El + 1 + El x world]"),
        ])?;
        self.check_on_own_gpu(
            stream,
            &[
                ("x", x.ordinal()),
                ("expert_ids", expert_ids.ordinal()),
                ("weights", weights.ordinal()),
                ("out", out.ordinal()),
                ("dest_rows", dest_rows.ordinal()),
                ("layout", layout.ordinal()),
            ],
        )?;
        self.order_after_last(stream)?;
        let (px, _gx) = x.device_ptr(stream);
        let (pi, _gi) = expert_ids.device_ptr(stream);
        let (pw, _gw) = weights.device_ptr(stream);
        let (po, _go) = out.device_ptr_mut(stream);
        let (pd, _gd) = dest_rows.device_ptr_mut(stream);
        let (pl, _gl) = layout.device_ptr_mut(stream);
        let bufs = self.rank_buffers();
        let b = MoeBuffers { x: px, expert_ids: pi, weights: pw, out: po, dest_rows: pd, layout: pl };
        // SAFETY: buffers checked for `shape` and `cfg` on this rank's GPU; the workspace and
        // peer mappings live as long as `self`.
        let launched = unsafe { mkernel_kernels::moe_dispatch_gemm::launch(Runtime::global(), stream, b, shape, cfg, &bufs, self.config().timeout) };
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
    fn default_plans_fit_their_workspace() {
        let d = MoeDispatchGemmOptions::default();
        let p = plan_moe_dispatch_gemm(shape(), d, ctx(2, 132, 1 << 26)).unwrap();
        assert_eq!((p.tile, p.push_ctas, p.grid, p.chunk_rows, p.recv_capacity), (TileConfig::WIDE_TMA_STORE, 8, 132, 128, 16896), "{p}");
        // Few rows: 128 x 128 tiles; N % 8 != 0: Registers.
        let small = MoeShape { tokens: 64, max_tokens: 64, ..shape() };
        assert_eq!(plan_moe_dispatch_gemm(small, d, ctx(2, 132, 1 << 26)).unwrap().tile, TileConfig::NARROW_TMA_STORE);
        assert_eq!(plan_moe_dispatch_gemm(MoeShape { n: 4100, ..small }, d, ctx(2, 132, 1 << 26)).unwrap().tile, TileConfig::NARROW);
        // Tiny grids keep a compute CTA.
        for grid in 2..=17 {
            let p = plan_moe_dispatch_gemm(shape(), d, ctx(2, grid, 1 << 26)).unwrap();
            assert!(p.push_ctas >= 1 && p.push_ctas < p.grid && p.grid == grid, "{grid}: {p}");
        }
    }

    #[test]
    fn bad_calls_are_refused_by_name() {
        let d = MoeDispatchGemmOptions::default();
        let err = |s, o, c| plan_moe_dispatch_gemm(s, o, c).unwrap_err().to_string();
        let c = ctx(2, 132, 1 << 26);
        assert!(err(shape(), d, ctx(1, 132, 1 << 26)).contains("`world_size`"));
        assert!(err(MoeShape { experts: 9, ..shape() }, d, c).contains("`shape`"));
        let e = err(shape(), d, ctx(2, 132, 1 << 20));
        assert!(e.contains("`max_output_elems`") && e.contains("lower recv_capacity"), "{e}");
        // (a capacity below the worst case fits the smaller workspace)
        let p = plan_moe_dispatch_gemm(shape(), MoeDispatchGemmOptions { recv_capacity: Some(384), ..d }, ctx(2, 132, 1 << 20)).unwrap();
        assert_eq!(p.recv_capacity, 384);
        for cap in [0, 200] {
            assert!(err(shape(), MoeDispatchGemmOptions { recv_capacity: Some(cap), ..d }, c).contains("`recv_capacity`"), "{cap}");
        }
        for pc in [0, 132, 500] {
            assert!(err(shape(), MoeDispatchGemmOptions { push_ctas: Some(pc), ..d }, c).contains("`push_ctas`"), "{pc}");
        }
        assert!(err(shape(), MoeDispatchGemmOptions { chunk_rows: Some(0), ..d }, c).contains("`chunk_rows`"));
        let e = err(shape(), MoeDispatchGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), ..d }, c);
        assert!(e.contains("`tile`") && e.contains("128x256"), "{e}");
        assert!(err(shape(), d, PlanContext { grid: 1, ..c }).contains("`ctx`"));
    }

    /// helper-104's cases: a rank's own token count does not change the plan (a collective);
    /// chunks longer than max_tokens are one chunk a segment (a device-side u32 wrap); sizes
    /// past TMA's coordinates or u64 arithmetic are refused, not overflowed.
    #[test]
    fn plans_are_collective_and_extremes_are_refused() {
        let d = MoeDispatchGemmOptions::default();
        let c = ctx(2, 132, 1 << 28);
        let s = MoeShape { max_tokens: 40000, experts: 256, topk: 8, n: 512, k: 256, ..shape() };
        let plans: Vec<_> = [0, 1, 30000, 40000].iter().map(|&t| plan_moe_dispatch_gemm(MoeShape { tokens: t, ..s }, d, c).map_err(|e| e.to_string())).collect();
        assert!(plans.windows(2).all(|w| w[0] == w[1]), "{plans:?}");
        for ch in [40000, 40001, u32::MAX] {
            let p = plan_moe_dispatch_gemm(shape(), MoeDispatchGemmOptions { chunk_rows: Some(ch), ..d }, ctx(2, 132, 1 << 26)).unwrap();
            assert_eq!(p.chunk_rows, 4096, "{ch}");
        }
        let e = plan_moe_dispatch_gemm(MoeShape { k: 4294967288, ..shape() }, d, ctx(2, 132, 1 << 37)).unwrap_err().to_string();
        assert!(e.contains("`max_output_elems`") && e.contains("no communicator holds that") || e.contains("`shape`"), "{e}");
        let e = plan_moe_dispatch_gemm(shape(), MoeDispatchGemmOptions { recv_capacity: Some(1 << 31), ..d }, ctx(2, 132, 1 << 37)).unwrap_err().to_string();
        assert!(e.contains("`recv_capacity`") && e.contains("2^31"), "{e}");
        let e = plan_moe_dispatch_gemm(MoeShape { n: 1 << 30, ..shape() }, d, ctx(2, 132, 1 << 37)).unwrap_err().to_string();
        assert!(e.contains("stacked weights") && e.contains("2^31"), "{e}");
        // The workspace a plan asks for is what the error names.
        let need = crate::moe_workspace_elems_needed(16896, 2048);
        assert!(plan_moe_dispatch_gemm(shape(), d, ctx(2, 132, need)).is_ok());
        let e = plan_moe_dispatch_gemm(shape(), d, ctx(2, 132, need - 1)).unwrap_err().to_string();
        assert!(e.contains("`max_output_elems`") && e.contains(&format!("max_output_elems >= {need}")), "{e}");
    }

    #[test]
    fn layout_words_count_starts_rows_and_counts() {
        assert_eq!(layout_words(4, 2), 4 + 1 + 8);
        assert_eq!(layout_words(128, 8), 128 + 1 + 1024);
    }
}
