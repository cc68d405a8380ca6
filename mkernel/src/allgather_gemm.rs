//! `Communicator::allgather_gemm`: the column-parallel layer of sequence-parallel tensor
//! parallelism, out = all_gather(A) * B^T, where rank r holds rows \[r M / world, (r + 1)
//! M / world) of A and its own B, in one persistent kernel per GPU that pushes the shard to
//! the peers while it computes (`mkernel_kernels::allgather_gemm`).
//!
//! Status: new; its GPU tests (`tests/tests/gpu_allgather_gemm.rs`) pass with 2-4 ranks on
//! one GPU (bench/NOTES.md 57-58); not yet run with ranks on GPUs of their own (the pair),
//! so `mkernel bench allgather-gemm` has not yet timed it against NCCL's all-gather + cuBLAS
//! (only on a shared GPU, without NCCL: two ranks on one H100 at 1024 x 5120 x 8192 take
//! 0.28 ms, the fused all-reduce's kernel 0.26), and the number of push CTAs is a first
//! guess ([`mkernel_kernels::allgather_gemm::DEFAULT_PUSH_CTAS`]), not tuned.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use mkernel_kernels::allgather_gemm::{default_chunk_rows, AllGatherConfig, DEFAULT_PUSH_CTAS};
use mkernel_kernels::driver::Runtime;
use mkernel_kernels::gemm::{Epilogue, GemmShape, TileConfig};
use mkernel_kernels::gemm_allreduce::FusedConfig;

use crate::comm::Communicator;
use crate::error::{invalid, Result};
use crate::gemm_allreduce::PlanContext;

/// Overrides of an all-gather + GEMM call's choices (all `None`: the defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllGatherGemmOptions {
    /// The GEMM's tile, one of [`mkernel_kernels::allgather_gemm::tiles`] ([`TileConfig::ALL`]
    /// and the column-fitted TMA-store tiles). None: `default_tile`'s choice for the full
    /// shape on the rank's CTAs less [`DEFAULT_PUSH_CTAS`] (whatever `push_ctas` says).
    pub tile: Option<TileConfig>,
    /// CTAs that push this rank's shard to the peers (a multiple of the tile's cluster size,
    /// below the grid). None: [`DEFAULT_PUSH_CTAS`] rounded up to whole clusters, at most half
    /// the rank's CTAs (at least one cluster).
    pub push_ctas: Option<u32>,
    /// Rows of a shard per arrival flag (>= 1; more than the shard's M / world rows means one
    /// chunk a shard). None: [`default_chunk_rows`] (~256 KiB of rows, fitting the workspace's
    /// flags).
    pub chunk_rows: Option<u32>,
}

/// The configuration an all-gather + GEMM call of `shape` (M: all ranks' rows) would use on
/// a communicator described by `ctx`.
///
/// Errors: a context no communicator has (`ctx`), one rank (`world_size`: there is nothing
/// to gather; call [`crate::gemm`]), M not a positive multiple of the world size, K not a
/// multiple of 8, or the gathered A (M x K) larger than the workspace (`shape`), a tile
/// without a kernel or a TMA-store tile with N % 8 != 0 (`tile`), push CTAs that are 0,
/// not whole clusters or leave no compute CTA (`push_ctas`), 0 chunk rows or more chunks
/// than the workspace has flags (`chunk_rows`).
pub fn plan_allgather_gemm(shape: GemmShape, opts: AllGatherGemmOptions, ctx: PlanContext) -> Result<AllGatherConfig> {
    ctx.check()?;
    let world = ctx.world_size;
    mkernel_kernels::allgather_gemm::check_shape(shape, world, ctx.max_output_elems)?;
    let tile = match opts.tile {
        Some(t) => {
            mkernel_kernels::allgather_gemm::check_tile(t, shape.n)?;
            t
        }
        None => default_tile(shape, ctx.grid.saturating_sub(DEFAULT_PUSH_CTAS).max(1), ctx.gpu_shared),
    };
    let cs = tile.cluster_size();
    // (whole clusters of the rank's CTAs: at least one to push and one to compute)
    let usable = ctx.grid / cs * cs;
    if usable < 2 * cs {
        return Err(invalid(
            if opts.tile.is_some() { "tile" } else { "ctx" },
            format!("the all-gather + GEMM needs at least 2 CTAs ({} with {tile}: a cluster to push, one to compute); the rank has {}", 2 * cs, ctx.grid),
        ));
    }
    let push_ctas = match opts.push_ctas {
        Some(c) if c == 0 || c % cs != 0 || c >= usable => {
            return Err(invalid(
                "push_ctas",
                format!(
                    "must be a positive multiple of the cluster size ({cs}) of the tile {}{} that leaves compute CTAs of the rank's {} ({usable} in whole clusters); got {c}",
                    tile.name(),
                    if opts.tile.is_none() && cs > 1 { " (the default for this shape: give an unclustered tile for other counts)" } else { "" },
                    ctx.grid
                ),
            ));
        }
        Some(c) => c,
        // (at most half the rank's CTAs)
        None => (DEFAULT_PUSH_CTAS.div_ceil(cs) * cs).min(usable / 2 / cs * cs).max(cs),
    };
    let s = shape.m / world;
    let max_chunks = mkernel_kernels::gemm_allreduce::WorkspaceLayout::new(ctx.max_output_elems, world)?.max_tiles;
    let chunk_rows = match opts.chunk_rows {
        Some(0) => return Err(invalid("chunk_rows", "must be at least 1")),
        // (a chunk is at most a shard: asking for more is asking for one chunk)
        Some(c) => c.min(s),
        None => default_chunk_rows(s, shape.k, max_chunks),
    };
    if s.div_ceil(chunk_rows) as u64 > max_chunks {
        return Err(invalid("chunk_rows", format!("{} chunks of {chunk_rows} rows exceed the workspace's {max_chunks} arrival flags a rank; use longer chunks", s.div_ceil(chunk_rows))));
    }
    // (compute CTAs: one per tile up to the rest of the grid, whole clusters)
    let compute = tile.grid_for(tile.tiles(shape.m, shape.n), usable - push_ctas);
    Ok(AllGatherConfig { tile, push_ctas, grid: push_ctas + compute, chunk_rows })
}

/// The default tile for `grid` compute CTAs. With N % 8 == 0: the plain GEMM's rule for the
/// full shape (`TileConfig::choose_for`) where it takes a tile this kernel has (128 x 256,
/// or a column-fitted width that fits the waves); else (a swapped-operand tile, for small
/// M) the TMA-store tile of [`mkernel_kernels::allgather_gemm::tiles`] with the fewest
/// tile-waves weighted by the plain rules' rate per column (`TileConfig::relative_rate`:
/// waves x BM x BN / rate; e.g. 1024 x 5120 x 8192 on a shared GPU's 58 compute CTAs:
/// 128 x 248, 2.90 waves, where the plain rule took a clustered tile). With N % 8 != 0: the
/// fused all-reduce's rule (`FusedConfig::choose_tile`) where it gives a Registers tile,
/// else 128 x 256 Registers. With `gpu_shared` (ranks sharing a GPU), no clustered tile:
/// there 2-CTA clusters ran 1.2-1.35x slower than the same tile unclustered (run 413, one
/// H100, 2 ranks: 2048 x 8192 x 8192 0.955 against 0.770 ms; not every cluster of two
/// co-running kernels finds two free SMs of one GPC at once, the likely cause). Not yet
/// measured against the others on a GPU per rank (bench/NOTES.md 57-58).
fn default_tile(shape: GemmShape, grid: u32, gpu_shared: bool) -> TileConfig {
    let has = mkernel_kernels::allgather_gemm::has_kernel;
    if !shape.n.is_multiple_of(8) {
        let t = FusedConfig::choose_tile(shape.m, shape.n, grid);
        return if has(t) && t.epilogue == Epilogue::Registers { t } else { TileConfig::WIDE };
    }
    let plain = TileConfig::choose_for(shape, grid);
    // (a clustered tile only on a GPU of its own, where whole clusters remain for both roles)
    if has(plain) && (plain.cluster_size() == 1 || (!gpu_shared && 2 * plain.cluster_size() <= grid)) {
        return plain;
    }
    let cost = |t: &TileConfig| {
        let g = t.grid_for(t.tiles(shape.m, shape.n), grid).max(1) as u64;
        t.tiles(shape.m, shape.n).div_ceil(g) * t.bm as u64 * t.bn as u64 * 1000 / t.relative_rate().max(1)
    };
    mkernel_kernels::allgather_gemm::tiles()
        .filter(|t| t.epilogue == Epilogue::TmaStore && t.cluster_size() == 1)
        .min_by_key(cost)
        .unwrap_or(TileConfig::WIDE_TMA_STORE)
}

impl Communicator {
    /// The configuration a [`Communicator::allgather_gemm`] call of this shape would use
    /// ([`plan_allgather_gemm`] on this communicator).
    ///
    /// Errors: as [`plan_allgather_gemm`].
    pub fn plan_allgather_gemm(&self, shape: GemmShape, opts: AllGatherGemmOptions) -> Result<AllGatherConfig> {
        plan_allgather_gemm(shape, opts, self.plan_context())
    }

    /// out\[M, N\] = A\[M, K\] * b\[N, K\]^T on every rank, where this rank's `a` is its rows
    /// \[r M / world, (r + 1) M / world) of A (`torch.distributed.all_gather_into_tensor`'s
    /// split along dim 0, then a column-parallel layer's GEMM), enqueued on `stream`.
    ///
    /// A collective: every rank calls it with the same shape and options, in the same order
    /// relative to the communicator's other calls; `a` is \[M / world, K\], `b` \[N, K\] (this
    /// rank's weights), `out` \[M, N\], bf16 row-major on this rank's GPU. The call is
    /// stream-ordered and needs no host synchronisation between calls; consecutive calls
    /// (of this or the communicator's other fused kernels) are told apart by epochs. A peer
    /// that never calls makes this rank's wait for its rows time out after
    /// `CommConfig::timeout`: [`Communicator::synchronize`] then returns an error naming the
    /// peer and the chunk, and the communicator refuses further calls.
    ///
    /// The gathered A lives in the communicator's workspace: M x K must not exceed
    /// `CommConfig::max_output_elems`. N is this rank's columns of the layer (its shard of
    /// a column-parallel weight), K the full hidden size.
    ///
    /// As [`Communicator::gemm_allreduce`]: a call on a different stream than the
    /// communicator's previous call first waits for that one (the calls share the
    /// workspace), and the calls already queued behind one that timed out do nothing (they
    /// leave `out` unwritten; `synchronize` reports the first failure). Capture in a CUDA
    /// graph takes the same epochs (no host-side reset) under the all-reduce's rules, but is
    /// not yet tested for this call.
    ///
    /// Status: see the module documentation.
    ///
    /// Errors: as [`plan_allgather_gemm`]; a buffer too short for the shape (`a`, `b`,
    /// `out`) or on another GPU (`stream`, `a`, `b`, `out`); a communicator that failed
    /// before (see [`Communicator::synchronize`]).
    pub fn allgather_gemm(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        shape: GemmShape,
        opts: AllGatherGemmOptions,
    ) -> Result<AllGatherConfig> {
        self.check_usable()?;
        let cfg = self.plan_allgather_gemm(shape, opts)?;
        let (s, n, k) = ((shape.m / self.world_size()) as usize, shape.n as usize, shape.k as usize);
        crate::error::check_lengths(&[
            ("a", a.len(), s * k, "this rank's rows of A, [M / world, K]"),
            ("b", b.len(), n * k, "[N, K]"),
            ("out", out.len(), shape.m as usize * n, "[M, N]"),
        ])?;
        self.check_on_own_gpu(stream, &[("a", a.ordinal()), ("b", b.ordinal()), ("out", out.ordinal())])?;
        self.order_after_last(stream)?;
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (po, _go) = out.device_ptr_mut(stream);
        let bufs = self.rank_buffers();
        // SAFETY: buffers checked for `shape` on this rank's GPU; the workspace and peer
        // mappings live as long as `self`.
        let launched = unsafe {
            mkernel_kernels::allgather_gemm::launch(Runtime::global(), stream, pa, pb, po, shape, cfg, &bufs, self.config().timeout)
        };
        self.finish_launch(launched, stream)?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(world: u32, grid: u32) -> PlanContext {
        PlanContext::new(world, grid, false, 16384 * 8192).unwrap()
    }

    /// The default plan: a tile of the catalog, whole clusters per role, every compute CTA
    /// with a tile, chunks of ~256 KiB (or the shard).
    #[test]
    fn default_plans_are_launchable() {
        for world in [2, 3, 4, 8] {
            for (m, n, k) in [(2048 * world, 8192, 8192), (1024 * world, 28672, 8192), (1000 * world, 1000, 200), (2 * world, 512, 64), (129 * world, 8192, 4096)] {
                let shape = GemmShape { m, n, k };
                let p = plan_allgather_gemm(shape, AllGatherGemmOptions::default(), ctx(world, 132)).unwrap();
                assert!(mkernel_kernels::allgather_gemm::tiles().any(|t| t == p.tile), "{shape:?}: {p}");
                assert!(p.tile.check_output(n).is_ok(), "{shape:?}: {p}");
                let cs = p.tile.cluster_size();
                assert!(p.push_ctas > 0 && p.push_ctas.is_multiple_of(cs) && p.grid.is_multiple_of(cs) && p.grid > p.push_ctas && p.grid <= 132, "{shape:?}: {p}");
                assert!((p.grid - p.push_ctas) as u64 <= p.tile.tiles(m, n).max(cs as u64), "{shape:?}: {p}");
                assert_eq!(p.chunk_rows, default_chunk_rows(m / world, k, 1 << 20), "{shape:?}: {p}");
            }
        }
    }

    /// Ranks sharing a GPU get no clustered default tile (run 413), ranks on GPUs of their
    /// own still do where the plain GEMM's rule takes one.
    #[test]
    fn shared_gpus_get_unclustered_default_tiles() {
        let mut own_clustered = 0;
        for (m, n, k) in [(2048, 8192, 8192), (2048, 3584, 8192), (1024, 5120, 8192), (4096, 8192, 4096), (16384, 28672, 8192)] {
            let shape = GemmShape { m, n, k };
            let own = plan_allgather_gemm(shape, AllGatherGemmOptions::default(), ctx(2, 132)).unwrap();
            own_clustered += (own.tile.cluster_size() > 1) as u32;
            let shared = PlanContext { gpu_shared: true, ..ctx(2, 66) };
            let p = plan_allgather_gemm(shape, AllGatherGemmOptions::default(), shared).unwrap();
            assert_eq!(p.tile.cluster_size(), 1, "{shape:?}: {p}");
            assert!(mkernel_kernels::allgather_gemm::tiles().any(|t| t == p.tile), "{shape:?}: {p}");
        }
        assert!(own_clustered > 0, "no shape took a clustered tile on its own GPU: the rule is not exercised");
    }

    #[test]
    fn bad_calls_are_refused_by_name() {
        let s = GemmShape { m: 4096, n: 8192, k: 8192 };
        let err = |s, o, c| plan_allgather_gemm(s, o, c).unwrap_err().to_string();
        let d = AllGatherGemmOptions::default();
        assert!(err(s, d, ctx(1, 132)).contains("`world_size`"));
        assert!(err(GemmShape { m: 4097, ..s }, d, ctx(2, 132)).contains("`shape`"));
        assert!(err(GemmShape { k: 8190, ..s }, d, ctx(2, 132)).contains("multiple of 8"));
        let e = err(GemmShape { m: 32768, ..s }, d, ctx(2, 132));
        assert!(e.contains("gathered A") && e.contains("max_output_elems"), "{e}");
        let e = err(s, AllGatherGemmOptions { tile: Some(TileConfig::swapped_tma_store(136)), ..d }, ctx(2, 132));
        assert!(e.contains("`tile`"), "{e}");
        let e = err(GemmShape { n: 8191, ..s }, AllGatherGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE), ..d }, ctx(2, 132));
        assert!(e.contains("`tile`") && e.contains("N % 8"), "{e}");
        for c in [0, 132, 200] {
            assert!(err(s, AllGatherGemmOptions { push_ctas: Some(c), ..d }, ctx(2, 132)).contains("`push_ctas`"), "{c}");
        }
        let e = err(s, AllGatherGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), push_ctas: Some(3), ..d }, ctx(2, 132));
        assert!(e.contains("`push_ctas`") && e.contains("cluster size (2)"), "{e}");
        assert!(err(s, AllGatherGemmOptions { chunk_rows: Some(0), ..d }, ctx(2, 132)).contains("`chunk_rows`"));
        // More rows than a shard: one chunk a shard (helper-98: u32::MAX wrapped the kernel's count to 0).
        for c in [2049, u32::MAX] {
            assert_eq!(plan_allgather_gemm(s, AllGatherGemmOptions { chunk_rows: Some(c), ..d }, ctx(2, 132)).unwrap().chunk_rows, 2048);
        }
        // Grids too small for the default push CTAs (helper-98: 8 push CTAs underflowed a
        // 5-CTA grid): at most half of them push; a clustered tile needs 4.
        for grid in 2..=17 {
            let p = plan_allgather_gemm(s, d, ctx(2, grid)).unwrap();
            assert!(p.push_ctas >= 1 && p.push_ctas <= grid / 2 && p.grid <= grid && p.grid > p.push_ctas, "grid {grid}: {p}");
        }
        let c2 = AllGatherGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), ..d };
        assert!(err(s, c2, ctx(2, 3)).contains("`tile`"));
        let p = plan_allgather_gemm(s, c2, ctx(2, 5)).unwrap();
        assert_eq!((p.push_ctas, p.grid), (2, 4), "{p}");
        assert!(err(s, d, PlanContext { grid: 1, ..ctx(2, 132) }).contains("`ctx`"));
        // (helper-99: a hand-built context without a workspace was blamed on the shape)
        assert!(err(s, d, PlanContext { max_output_elems: 0, ..ctx(2, 132) }).contains("`ctx`"));
        let e = err(s, AllGatherGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), push_ctas: Some(132), ..d }, PlanContext { grid: 133, ..ctx(2, 132) });
        assert!(e.contains("rank's 133 (132 in whole clusters)"), "{e}");
        // A default N % 8 != 0 shape takes a Registers tile.
        let p = plan_allgather_gemm(GemmShape { n: 1001, ..s }, d, ctx(2, 132)).unwrap();
        assert_eq!(p.tile.epilogue, Epilogue::Registers, "{p}");
    }
}
