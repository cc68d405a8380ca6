//! The fused all-gather + GEMM kernel (`ops/allgather_gemm.cuh`): rank r holds rows
//! \[r S, (r + 1) S) of A (its shard, S = M / world) and computes out\[M, N\] = A B^T over
//! all M rows while its push CTAs copy its shard into every peer's gathered A, chunk by
//! chunk, each chunk announced by an epoch-tagged arrival flag the peer's producer warps
//! wait on (bounded) before loading rows that are not their own.
//!
//! The workspace is the fused all-reduce's ([`crate::gemm_allreduce::WorkspaceLayout`]): the gathered A \[M, K\]
//! lives in the partial region (so M x K must fit `capacity_elems`), the arrival flags in
//! the ready inboxes (one per chunk: at most `max_tiles` chunks a shard), and the exit flags,
//! control block and status are shared with every other fused call (epochs are
//! per-communicator, flags are compared for equality, so calls of either kernel may follow
//! each other).

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime, Swizzle, Tensor2d};
use crate::error::{invalid, Result};
use crate::gemm::{Epilogue, GemmShape, TileConfig};
use crate::gemm_allreduce::RankBuffers;
use crate::jit::KernelSource;
use crate::params::{AllGatherParams, MAX_RANKS};

/// Bytes of a chunk (rows of a shard per arrival flag) by default: a chunk is one push CTA's
/// item, so a row block's rows arrive as fast as several CTAs can push them only where its
/// chunks are short. Run 410 (one H100, ranks sharing it, 1024 x 5120 x 8192): chunks of 128
/// rows (2 MiB at K = 8192) 0.344 ms, of 512 rows 0.503 ms. 256 KiB: 16 rows at K = 8192, 128
/// at K = 1024.
pub const DEFAULT_CHUNK_BYTES: u64 = 256 << 10;

/// The default rows per chunk for a shard of `shard_rows` rows of K columns with
/// `max_chunks` arrival flags a rank: [`DEFAULT_CHUNK_BYTES`] of rows, at least one row and at
/// most the shard, and enough that the chunks fit the flags.
pub fn default_chunk_rows(shard_rows: u32, k: u32, max_chunks: u64) -> u32 {
    let by_bytes = (DEFAULT_CHUNK_BYTES / (2 * k.max(1) as u64)).clamp(1, shard_rows.max(1) as u64) as u32;
    let to_fit = (shard_rows as u64).div_ceil(max_chunks.max(1)).min(u32::MAX as u64) as u32;
    by_bytes.max(to_fit).min(shard_rows.max(1))
}

/// Push CTAs by default (rounded up to whole clusters). A first guess, not tuned: ~8 SMs
/// of 16-byte stores are expected to fill one NVLink direction (~390 GB/s on the H200 pair,
/// measured by `../shared/DESIGN.md` section 6) at ~50 GB/s each.
pub const DEFAULT_PUSH_CTAS: u32 = 8;

/// What one rank's all-gather + GEMM launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllGatherConfig {
    /// The GEMM's tile ([`tiles`]: not swapped-operand).
    pub tile: TileConfig,
    /// CTAs that push this rank's shard to the peers (the first ones of the grid).
    pub push_ctas: u32,
    /// CTAs of the launch: push CTAs, then compute CTAs.
    pub grid: u32,
    /// Rows of a shard per arrival flag.
    pub chunk_rows: u32,
}

impl std::fmt::Display for AllGatherConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {} push + {} compute CTAs, chunks of {} rows",
            self.tile,
            self.push_ctas,
            self.grid.saturating_sub(self.push_ctas),
            self.chunk_rows
        )
    }
}

/// The tiles the all-gather + GEMM has kernels for: [`TileConfig::ALL`] (128- and 64-row
/// tiles, Registers and TMA-store epilogues, 2-CTA clusters along M) and the fused
/// kernels' column-fitted TMA-store tiles (128 rows by 136-248 columns, some in 2-CTA
/// clusters: [`TileConfig::is_fused_column_fitted`]), whose widths fit N's column blocks
/// to the grid's waves. Not the swapped-operand tiles (their A rows are the engine's
/// columns, not gathered by row block).
pub fn tiles() -> impl Iterator<Item = TileConfig> {
    TileConfig::ALL.into_iter().chain(TileConfig::fused_catalog().filter(TileConfig::is_fused_column_fitted))
}

/// Whether the all-gather + GEMM has kernels for `tile` ([`tiles`]).
pub fn has_kernel(tile: TileConfig) -> bool {
    tiles().any(|t| t == tile)
}

/// The tile rules of a call with N columns: a tile of [`tiles`] (`tile`), N % 8 == 0 for a
/// TMA-store one ([`TileConfig::check_output`]).
pub fn check_tile(tile: TileConfig, n: u32) -> Result<()> {
    if !has_kernel(tile) {
        return Err(invalid("tile", format!("the all-gather + GEMM has no kernel for {tile}: take one of allgather_gemm::tiles (not swapped-operand tiles)")));
    }
    tile.check_output(n)
}

/// The shape rules of a call on `world` ranks with a workspace of `capacity_elems`
/// elements: 2..=[`MAX_RANKS`] ranks (`world_size`; with one rank A is whole: the plain
/// GEMM), M a positive multiple of the world size, N positive, K a positive multiple of 8
/// (16-byte rows for the pushes and TMA), and the gathered A, M x K, within the workspace
/// (`shape`).
pub fn check_shape(shape: GemmShape, world: u32, capacity_elems: u64) -> Result<()> {
    if world < 2 || world as usize > MAX_RANKS {
        return Err(invalid("world_size", format!("an all-gather + GEMM needs 2..={MAX_RANKS} ranks (with one, A is whole: call mkernel::gemm), got {world}")));
    }
    if shape.m == 0 || !shape.m.is_multiple_of(world) {
        return Err(invalid("shape", format!("M (all ranks' rows of A) must be a positive multiple of the world size {world}, got M={}", shape.m)));
    }
    if shape.n == 0 || shape.k == 0 || !shape.k.is_multiple_of(8) {
        return Err(invalid("shape", format!("N must be positive and K a positive multiple of 8 (16-byte rows), got N={} K={}", shape.n, shape.k)));
    }
    let gathered = shape.m as u64 * shape.k as u64;
    if gathered > capacity_elems {
        return Err(invalid(
            "shape",
            format!(
                "the gathered A, M x K = {gathered} elements, exceeds the communicator workspace ({capacity_elems} elements); {}",
                crate::gemm_allreduce::workspace_remedy(gathered, "split the call's rows (M) or K")
            ),
        ));
    }
    Ok(())
}

/// Name of the kernel for a tile and world size.
pub fn kernel_name(tile: TileConfig, world: u32) -> String {
    format!("mkernel_allgather_gemm_{}_w{}", tile.tag(), world)
}

/// Source of the kernel for a tile and world size (2..=[`MAX_RANKS`]).
///
/// Errors: a tile outside [`tiles`] (`tile`), a world size outside 2..=MAX_RANKS
/// (`world_size`).
pub fn source(tile: TileConfig, world: u32) -> Result<KernelSource> {
    tile.validate()?;
    if !has_kernel(tile) {
        return Err(invalid("tile", format!("the all-gather + GEMM has no kernel for {tile} (not swapped-operand tiles)")));
    }
    crate::catalog::check_world(world, 2, "an all-gather + GEMM kernel")?;
    crate::catalog::pushing_gemm_source("ops/allgather_gemm.cuh", "AllGatherParams", "mk::allgather_gemm_kernel", kernel_name(tile, world), tile, world, "")
}

/// Every kernel of the catalog: each tile of [`tiles`] at world sizes 2..=[`MAX_RANKS`].
pub fn catalog() -> Result<Vec<KernelSource>> {
    crate::catalog::at_world_sizes_2_up(tiles(), source)
}

/// Checks a launch: the tile and world size have a kernel, M = world x S, K % 8 == 0 (16-byte
/// rows for the pushes and TMA), N % 8 == 0 for a TMA-store tile, the gathered A within the
/// workspace (M x K <= `capacity_elems`), the chunks within the inbox, and the CTA split.
///
/// Errors name the argument: `tile`, `world_size`, `shape`, `cfg`, `rank`, `layout`.
pub fn validate(shape: GemmShape, cfg: &AllGatherConfig, bufs: &RankBuffers) -> Result<()> {
    let world = bufs.world;
    let l = bufs.layout;
    check_shape(shape, world, l.capacity_elems)?;
    bufs.check()?;
    check_tile(cfg.tile, shape.n)?;
    let s = shape.m / world;
    if cfg.chunk_rows == 0 || cfg.chunk_rows > s {
        return Err(invalid("cfg", format!("chunk_rows must be 1..=M / world = {s} (a chunk is at most a shard), got {}", cfg.chunk_rows)));
    }
    let chunks = s.div_ceil(cfg.chunk_rows) as u64;
    if chunks > l.max_tiles {
        return Err(invalid("cfg", format!("{chunks} chunks of {} rows exceed the workspace's {} arrival flags a rank; use longer chunks", cfg.chunk_rows, l.max_tiles)));
    }
    let cs = cfg.tile.cluster_size();
    if cfg.push_ctas == 0 || !cfg.push_ctas.is_multiple_of(cs) || cfg.push_ctas >= cfg.grid || !cfg.grid.is_multiple_of(cs) {
        return Err(invalid(
            "cfg",
            format!(
                "push_ctas must be a positive multiple of the tile's cluster size ({cs}) below the grid, itself a multiple of it; got {} of {}",
                cfg.push_ctas, cfg.grid
            ),
        ));
    }
    Ok(())
}

/// Launches one rank's all-gather + GEMM on `stream`: `a_local` is this rank's shard
/// \[M / world, K\] bf16 row-major, `b` \[N, K\], `out` \[M, N\].
///
/// # Safety
/// `a_local`, `b`, `out` must be valid device buffers of those sizes in `stream`'s context,
/// and every `bufs.workspace[q]` (q < world) must be mapped in it, with all ranks launching
/// the same shape and config (a collective call).
pub unsafe fn launch(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    a_local: u64,
    b: u64,
    out: u64,
    shape: GemmShape,
    cfg: AllGatherConfig,
    bufs: &RankBuffers,
    timeout: Duration,
) -> Result<()> {
    validate(shape, &cfg, bufs)?;
    let l = bufs.layout;
    let world = bufs.world;
    let s = shape.m / world;
    let me = bufs.rank as usize;
    let own_gathered = bufs.workspace[me] + l.partial_offset();
    // (A's maps as the plain GEMM's: box [BK, BM / cluster_n], 128B swizzle)
    let (tma_a_local, tma_b) = crate::gemm::operand_maps(a_local, b, GemmShape { m: s, ..shape }, cfg.tile)?;
    let k = shape.k as u64;
    let gathered = Tensor2d { ptr: own_gathered, rows: shape.m as u64, cols: k, row_stride_bytes: 2 * k };
    let tma_a_gathered = driver::tma_2d_bf16(gathered, cfg.tile.bm / cfg.tile.cluster_n.max(1), cfg.tile.bk, Swizzle::B128, "workspace")?;
    let mut p = AllGatherParams {
        tma_a_local,
        tma_a_gathered,
        tma_b,
        tma_c: if cfg.tile.epilogue == Epilogue::TmaStore { crate::gemm::output_map(out, shape, cfg.tile)? } else { Default::default() },
        a_local,
        out,
        control: bufs.workspace[me] + l.control_offset(),
        status: bufs.status,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        rank: bufs.rank,
        shard_rows: s,
        chunk_rows: cfg.chunk_rows,
        num_comm_ctas: cfg.push_ctas,
        flag_stride: l.max_tiles as u32,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        ..Default::default()
    };
    for q in 0..world as usize {
        let base = bufs.workspace[q];
        p.gathered[q] = base + l.partial_offset();
        p.arrived[q] = base + l.ready_offset();
        p.exit_flags[q] = base + l.exit_offset();
    }
    let f = rt.function_named(stream.context(), &kernel_name(cfg.tile, world), || source(cfg.tile, world))?;
    driver::launch(&f, LaunchDims { grid: cfg.grid, block: cfg.tile.threads(), smem_bytes: cfg.tile.smem_bytes() }, stream, &p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm_allreduce::WorkspaceLayout;

    fn bufs(world: u32, capacity: u64) -> RankBuffers {
        RankBuffers { rank: world - 1, world, workspace: [0x1000_0000; MAX_RANKS], layout: WorkspaceLayout::new(capacity, world).unwrap(), status: 0x3000 }
    }

    /// Bad configurations are refused by name, and a good one passes.
    #[test]
    fn validate_names_what_is_wrong() {
        let shape = GemmShape { m: 2048, n: 8192, k: 4096 };
        let good = AllGatherConfig { tile: TileConfig::WIDE_TMA_STORE, push_ctas: 8, grid: 132, chunk_rows: 128 };
        let b = bufs(2, 1 << 24);
        validate(shape, &good, &b).unwrap();
        let err = |shape, cfg: AllGatherConfig, b: &RankBuffers| validate(shape, &cfg, b).unwrap_err().to_string();
        let e = err(GemmShape { m: 2049, ..shape }, good, &b);
        assert!(e.contains("`shape`") && e.contains("multiple of the world size"), "{e}");
        let e = err(GemmShape { k: 4092, ..shape }, good, &b);
        assert!(e.contains("`shape`") && e.contains("multiple of 8"), "{e}");
        let e = err(shape, good, &bufs(2, 1 << 20));
        assert!(e.contains("gathered A") && e.contains("max_output_elems"), "{e}");
        let e = err(shape, AllGatherConfig { tile: TileConfig::swapped_tma_store(136), ..good }, &b);
        assert!(e.contains("`tile`"), "{e}");
        let e = err(shape, AllGatherConfig { push_ctas: 0, ..good }, &b);
        assert!(e.contains("push_ctas"), "{e}");
        let e = err(shape, AllGatherConfig { tile: TileConfig::WIDE_TMA_STORE_C2, push_ctas: 7, ..good }, &b);
        assert!(e.contains("cluster size (2)"), "{e}");
        for c in [0, 1025, u32::MAX] {
            let e = err(shape, AllGatherConfig { chunk_rows: c, ..good }, &b);
            assert!(e.contains("chunk_rows") && e.contains("1..=M / world = 1024"), "{e}");
        }
        let e = err(shape, good, &bufs(1, 1 << 24));
        assert!(e.contains("`world_size`"), "{e}");
        let e = err(GemmShape { n: 8191, ..shape }, good, &b);
        assert!(e.contains("N % 8") || e.contains("`n`") || e.contains("multiple of 8"), "{e}");
    }

    #[test]
    fn default_chunks_are_short_and_fit_the_flags() {
        assert_eq!(default_chunk_rows(4096, 8192, 16384), 16);
        assert_eq!(default_chunk_rows(4096, 1024, 16384), 128);
        assert_eq!(default_chunk_rows(10, 8192, 16384), 10);
        assert_eq!(default_chunk_rows(100, 8, 16384), 100); // (capped at the shard)
        assert_eq!(default_chunk_rows(100_000, 8192, 1000), 100); // (the flags bound the count)
        assert_eq!(default_chunk_rows(1, 1 << 30, 1), 1);
    }

    #[test]
    fn catalog_names_are_unique_and_cover_every_world_size() {
        let c = catalog().unwrap();
        assert_eq!(c.len(), tiles().count() * (MAX_RANKS - 1));
        assert!(tiles().count() > TileConfig::ALL.len() && tiles().all(|t| !t.swap_ab));
        let mut names: Vec<_> = c.iter().map(|k| k.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), c.len());
        assert!(source(TileConfig::WIDE, 1).is_err() && source(TileConfig::WIDE, MAX_RANKS as u32 + 1).is_err());
    }
}
