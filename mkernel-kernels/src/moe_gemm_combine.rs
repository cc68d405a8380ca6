//! The fused MoE grouped GEMM + combine kernel (`ops/moe_gemm_combine.cuh`): the way back of
//! [`crate::moe_dispatch_gemm`]. Every rank computes out = h * W_e^T over the segments a
//! dispatch left it (its `layout`), pushes each finished tile's rows over NVLink to the ranks
//! their tokens came from (into slot token x topk + k there, found through the source's
//! `dest_rows`), and every rank sums its tokens' slots weighted by their top-k weights:
//! y\[t\] = sum over k of w\[t, k\] x row(t, k), in fp32, rounded once to bf16.
//!
//! The workspace is the fused all-reduce's ([`WorkspaceLayout`]). In its partial region
//! ([`Regions`]): every rank's agree words (collective arguments, layout verdict), the map
//! (the source entry of each received row, written by the sources), the slots \[max_tokens x
//! topk, N\] (written by the expert ranks) and out \[recv_capacity, N\] (local). In the ready
//! inbox, row `from`: word 0 from's map flag, words 1 + tile from's arrival flags, and in
//! the rank's own row after those its tiles' stored flags (epochs only, as the dispatch's).

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime, Swizzle, Tensor2d};
use crate::error::{invalid, Result};
use crate::gemm::{Epilogue, GemmShape, TileConfig};
use crate::gemm_allreduce::{workspace_remedy, RankBuffers, WorkspaceLayout};
use crate::jit::KernelSource;
use crate::moe_dispatch_gemm::{MoeShape, MAX_TMA_ROWS, SEGMENT_ALIGN};
use crate::params::MoeCombineParams;

/// Push CTAs by default: as the dispatch's, a first guess, not tuned.
pub const DEFAULT_PUSH_CTAS: u32 = 8;

/// u32 words each rank writes into every rank's agree region (`kCombineAgreeWords`):
/// recv_capacity, max_tokens, topk, experts, N, K, the tile (BM | BN << 16: the arrival flags
/// are per tile, so ranks must agree on it: helper-113), then whether its layout holds
/// together and its rows in use.
pub const AGREE_WORDS: u32 = 9;
/// The names of the agree words a disagreement names (the first seven of [`AGREE_WORDS`]).
pub const AGREE_NAMES: [&str; 7] = ["recv_capacity", "max_tokens", "topk", "experts", "N", "K", "tile"];
/// Offset of the map in the partial region, bytes (`kCombineMapOffset`: after the agree words
/// of [`crate::params::MAX_RANKS`] ranks).
pub const MAP_OFFSET: u64 = 512;
/// Bytes of a row's map entry: {epoch, entry on its source, the source, the global expert}.
pub const MAP_ENTRY_BYTES: u64 = 16;

/// x rounded up to 256 bytes; None past u64.
fn align256(x: u64) -> Option<u64> {
    Some(x.checked_add(255)? & !255)
}

/// Where a call's buffers lie in a rank's workspace partial region (bytes from its start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// The map: \[recv_capacity\] entries of [`MAP_ENTRY_BYTES`].
    pub map: u64,
    /// The slots: bf16 \[max_tokens x topk, N\].
    pub slots: u64,
    /// out: bf16 \[recv_capacity, N\].
    pub out: u64,
    /// Bytes in all.
    pub end: u64,
}

impl Regions {
    /// The regions of a call with `recv_capacity` rows; None where they pass u64 (the host's
    /// rules refuse such a call: helper-113 found a release build wrapping to a small end).
    pub fn new(s: MoeShape, recv_capacity: u32) -> Option<Self> {
        let map = MAP_OFFSET;
        let slots = align256(map.checked_add(MAP_ENTRY_BYTES * recv_capacity as u64)?)?;
        let slot_bytes = 2u64.checked_mul(s.max_tokens as u64 * s.topk as u64)?.checked_mul(s.n as u64)?;
        let out = align256(slots.checked_add(slot_bytes)?)?;
        let end = out.checked_add(2u64.checked_mul(recv_capacity as u64)?.checked_mul(s.n as u64)?)?;
        Some(Self { map, slots, out, end })
    }
}

/// Elements a communicator's workspace (`CommConfig::max_output_elems`) must hold for a call
/// of `s` with `recv_capacity` rows: the agree words, map, slots and out ([`Regions`]);
/// u64::MAX where that passes u64.
pub fn workspace_elems_needed(s: MoeShape, recv_capacity: u32) -> u64 {
    Regions::new(s, recv_capacity).map_or(u64::MAX, |r| r.end.div_ceil(2))
}

/// What one rank's MoE GEMM + combine launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeCombineConfig {
    /// The GEMM's tile ([`tiles`]).
    pub tile: TileConfig,
    /// CTAs that write the routes and push rows (the first ones of the grid).
    pub push_ctas: u32,
    /// CTAs of the launch: push CTAs, then compute CTAs.
    pub grid: u32,
    /// Rows of every rank's h, out and map (the dispatch's receive capacity).
    pub recv_capacity: u32,
}

impl std::fmt::Display for MoeCombineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {} push + {} compute CTAs, {} receive rows", self.tile, self.push_ctas, self.grid.saturating_sub(self.push_ctas), self.recv_capacity)
    }
}

/// The tiles the MoE GEMM + combine has kernels for: the dispatch's
/// ([`crate::moe_dispatch_gemm::tiles`]: no clusters, unswapped; 128 or 256 columns, which a
/// sum lane takes 4 or 8 of).
pub fn tiles() -> impl Iterator<Item = TileConfig> {
    crate::moe_dispatch_gemm::tiles()
}

/// Whether the MoE GEMM + combine has kernels for `tile` ([`tiles`]).
pub fn has_kernel(tile: TileConfig) -> bool {
    tiles().any(|t| t == tile)
}

/// The tile rules of a call with N columns: a tile of [`tiles`] (`tile`).
pub fn check_tile(tile: TileConfig, n: u32) -> Result<()> {
    if !has_kernel(tile) {
        let names: Vec<String> = tiles().map(|t| t.name()).collect();
        return Err(invalid("tile", format!("the MoE GEMM + combine has no kernel for {tile}: take one of {}", names.join(", "))));
    }
    tile.check_output(n)
}

/// The shape rules on `world` ranks: the dispatch's
/// ([`crate::moe_dispatch_gemm::check_shape`]), and N a multiple of 8 (the slots' rows are
/// moved in 16-byte vectors) (`shape`).
pub fn check_shape(s: MoeShape, world: u32) -> Result<()> {
    crate::catalog::check_world(world, 2, "an MoE GEMM + combine")?;
    crate::moe_dispatch_gemm::check_shape(s, world)?;
    if !s.n.is_multiple_of(8) {
        return Err(invalid("shape", format!("N must be a multiple of 8 (rows move in 16-byte vectors), got {}", s.n)));
    }
    Ok(())
}

/// Tiles of out over `recv_capacity` rows (ceil(rows / BM) x ceil(N / BN)): the arrival flags
/// of a source's inbox row, and this rank's tile flags.
pub fn capacity_tiles(s: MoeShape, tile: TileConfig, recv_capacity: u32) -> u64 {
    (recv_capacity as u64).div_ceil(tile.bm as u64) * (s.n as u64).div_ceil(tile.bn as u64)
}

/// The workspace rules of a call: its regions ([`workspace_elems_needed`]) within the
/// partial region; the capacity and stacked weights (local experts x N) within TMA's
/// signed 32-bit coordinates; a map flag, the arrival flags and this rank's tile flags
/// (1 + 2 x [`capacity_tiles`]) within a ready-inbox row.
///
/// Errors: `recv_capacity`, `shape`, `max_output_elems` (naming the size a call needs and how
/// to get it).
pub fn check_workspace(s: MoeShape, cfg: &MoeCombineConfig, l: WorkspaceLayout, world: u32) -> Result<()> {
    if cfg.recv_capacity as u64 > MAX_TMA_ROWS {
        return Err(invalid("recv_capacity", format!("must be below 2^31 rows (TMA coordinates), got {}", cfg.recv_capacity)));
    }
    let w_rows = s.local_experts(world) as u64 * s.n as u64;
    if w_rows > MAX_TMA_ROWS {
        return Err(invalid("shape", format!("the stacked weights' rows, local experts x N = {w_rows}, must be below 2^31 (TMA coordinates)")));
    }
    let need = workspace_elems_needed(s, cfg.recv_capacity);
    if need > l.capacity_elems {
        // (the slots, max_tokens x topk rows of N, usually dominate: no recv_capacity helps;
        // helper-115)
        let what = format!(
            "the combine's slots (max_tokens x topk = {} rows of N = {}), out ({} receive rows of N) and map need a workspace of {need} elements, more than the communicator's {}",
            s.max_tokens as u64 * s.topk as u64,
            s.n,
            cfg.recv_capacity,
            l.capacity_elems
        );
        let fix = workspace_remedy(need, "combine fewer tokens a call (max_tokens) or fewer columns (N)");
        return Err(invalid("max_output_elems", format!("{what}; {fix}")));
    }
    let tiles = capacity_tiles(s, cfg.tile, cfg.recv_capacity);
    if 1 + 2 * tiles > l.max_tiles {
        return Err(invalid("recv_capacity", format!("{tiles} tiles of out need {} flags a rank, more than the workspace's {}", 1 + 2 * tiles, l.max_tiles)));
    }
    Ok(())
}

/// Name of the kernel for a tile and world size.
pub fn kernel_name(tile: TileConfig, world: u32) -> String {
    format!("mkernel_moe_gemm_combine_{}_w{}", tile.tag(), world)
}

/// Source of the kernel for a tile and world size (2..=[`crate::params::MAX_RANKS`]).
///
/// Errors: a tile outside [`tiles`] (`tile`), a world size outside 2..=MAX_RANKS
/// (`world_size`).
pub fn source(tile: TileConfig, world: u32) -> Result<KernelSource> {
    tile.validate()?;
    if !has_kernel(tile) {
        return Err(invalid("tile", format!("the MoE GEMM + combine has no kernel for {tile}")));
    }
    crate::catalog::check_world(world, 2, "an MoE GEMM + combine kernel")?;
    let bounds = format!(
        "static_assert(mk::kCombineAgreeWords == {AGREE_WORDS} && mk::kCombineMapOffset == {MAP_OFFSET} && mk::kMoeSegmentAlign == {SEGMENT_ALIGN}, \"MoE combine constants differ from Rust\");\n"
    );
    crate::catalog::pushing_gemm_source("ops/moe_gemm_combine.cuh", "MoeCombineParams", "mk::moe_gemm_combine_kernel", kernel_name(tile, world), tile, world, &bounds)
}

/// Every kernel of the catalog: each tile of [`tiles`] at world sizes 2..=[`crate::params::MAX_RANKS`].
pub fn catalog() -> Result<Vec<KernelSource>> {
    crate::catalog::at_world_sizes_2_up(tiles(), source)
}

/// Checks a launch: the shape ([`check_shape`]), the tile, the rank and workspace, the CTA
/// split (at least one of each role), the receive capacity (a positive multiple of
/// [`SEGMENT_ALIGN`], within the workspace: [`check_workspace`]).
///
/// Errors name the argument: `world_size`, `shape`, `tile`, `rank`, `layout`, `push_ctas`,
/// `recv_capacity`.
pub fn validate(s: MoeShape, cfg: &MoeCombineConfig, bufs: &RankBuffers) -> Result<()> {
    let world = bufs.world;
    check_shape(s, world)?;
    bufs.check()?;
    check_tile(cfg.tile, s.n)?;
    if cfg.push_ctas == 0 || cfg.push_ctas >= cfg.grid {
        return Err(invalid("push_ctas", format!("must be 1..grid (a compute CTA left), got {} of {}", cfg.push_ctas, cfg.grid)));
    }
    if cfg.recv_capacity == 0 || !cfg.recv_capacity.is_multiple_of(SEGMENT_ALIGN) {
        return Err(invalid("recv_capacity", format!("must be a positive multiple of {SEGMENT_ALIGN} rows, got {}", cfg.recv_capacity)));
    }
    check_workspace(s, cfg, bufs.layout, world)
}

/// One rank's buffers of a call (device addresses in its context).
#[derive(Debug, Clone, Copy)]
pub struct CombineBuffers {
    /// The experts' inputs \[recv_capacity, K\] bf16, in the dispatch's layout.
    pub h: u64,
    /// This rank's experts' weights \[local_experts, N, K\] bf16 (W_e = rows e N..).
    pub weights: u64,
    /// u32 \[local_experts + 1 + local_experts x world\]: the dispatch's layout on this rank.
    pub layout: u64,
    /// i32 \[tokens, topk\]: each token's experts (global ids; -1: none).
    pub expert_ids: u64,
    /// u32 \[tokens, topk\]: the dispatch's dest_rows on this rank.
    pub dest_rows: u64,
    /// f32 \[tokens, topk\]: each (token, k)'s weight.
    pub topk_weights: u64,
    /// \[tokens, N\] bf16 (out).
    pub y: u64,
}

/// Launches one rank's MoE GEMM + combine on `stream`.
///
/// # Safety
/// Every address of `b` must be a valid device buffer of its documented size in `stream`'s
/// context, and every `bufs.workspace[q]` (q < world) mapped in it, with all ranks launching
/// the same shape (but their own `tokens`) and config (a collective call).
pub unsafe fn launch(rt: &Runtime, stream: &Arc<CudaStream>, b: CombineBuffers, s: MoeShape, cfg: MoeCombineConfig, bufs: &RankBuffers, timeout: Duration) -> Result<()> {
    validate(s, &cfg, bufs)?;
    let l = bufs.layout;
    let world = bufs.world;
    let me = bufs.rank as usize;
    let el = s.local_experts(world);
    let k = s.k as u64;
    let reg = Regions::new(s, cfg.recv_capacity).ok_or_else(|| invalid("shape", "the combine's regions pass u64 bytes".to_string()))?;
    let h = Tensor2d { ptr: b.h, rows: cfg.recv_capacity as u64, cols: k, row_stride_bytes: 2 * k };
    let tma_a = driver::tma_2d_bf16(h, cfg.tile.bm, cfg.tile.bk, Swizzle::B128, "h")?;
    let w = Tensor2d { ptr: b.weights, rows: el as u64 * s.n as u64, cols: k, row_stride_bytes: 2 * k };
    let tma_b = driver::tma_2d_bf16(w, cfg.tile.bn, cfg.tile.bk, Swizzle::B128, "weights")?;
    let out = bufs.workspace[me] + l.partial_offset() + reg.out;
    let out_shape = GemmShape { m: cfg.recv_capacity, n: s.n, k: s.k };
    let tiles = capacity_tiles(s, cfg.tile, cfg.recv_capacity);
    let mut p = MoeCombineParams {
        tma_a,
        tma_b,
        tma_c: if cfg.tile.epilogue == Epilogue::TmaStore { crate::gemm::output_map(out, out_shape, cfg.tile)? } else { Default::default() },
        expert_ids: b.expert_ids,
        dest_rows: b.dest_rows,
        topk_weights: b.topk_weights,
        layout: b.layout,
        y: b.y,
        out,
        control: bufs.workspace[me] + l.control_offset(),
        status: bufs.status,
        tokens: s.tokens,
        topk: s.topk,
        experts: s.experts,
        local_experts: el,
        n: s.n,
        k: s.k,
        rank: bufs.rank,
        recv_capacity: cfg.recv_capacity,
        max_tokens: s.max_tokens,
        num_comm_ctas: cfg.push_ctas,
        flag_stride: l.max_tiles as u32,
        n_blocks: s.n.div_ceil(cfg.tile.bn),
        tile_flags_at: 1 + tiles as u32,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        ..Default::default()
    };
    for q in 0..world as usize {
        let base = bufs.workspace[q] + l.partial_offset();
        p.agree[q] = base;
        p.map[q] = base + reg.map;
        p.slots[q] = base + reg.slots;
        p.arrived[q] = bufs.workspace[q] + l.ready_offset();
        p.exit_flags[q] = bufs.workspace[q] + l.exit_offset();
    }
    let f = rt.function_named(stream.context(), &kernel_name(cfg.tile, world), || source(cfg.tile, world))?;
    driver::launch(&f, LaunchDims { grid: cfg.grid, block: cfg.tile.threads(), smem_bytes: cfg.tile.smem_bytes() }, stream, &p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::MAX_RANKS;

    fn bufs(world: u32, capacity: u64) -> RankBuffers {
        RankBuffers { rank: world - 1, world, workspace: [0x1000_0000; MAX_RANKS], layout: WorkspaceLayout::new(capacity, world).unwrap(), status: 0x3000 }
    }

    fn shape() -> MoeShape {
        MoeShape { tokens: 4096, max_tokens: 4096, topk: 2, experts: 8, n: 4096, k: 2048 }
    }

    /// Bad configurations are refused by name, and a good one passes.
    #[test]
    fn validate_names_what_is_wrong() {
        let s = shape();
        let rows = s.worst_case_recv_rows(2).unwrap();
        let good = MoeCombineConfig { tile: TileConfig::WIDE_TMA_STORE, push_ctas: 8, grid: 132, recv_capacity: rows };
        let need = workspace_elems_needed(s, rows);
        let b = bufs(2, need);
        validate(s, &good, &b).unwrap();
        let err = |s, cfg: MoeCombineConfig, b: &RankBuffers| validate(s, &cfg, b).unwrap_err().to_string();
        assert!(err(s, good, &bufs(1, need)).contains("`world_size`"));
        assert!(err(MoeShape { experts: 7, ..s }, good, &b).contains("`shape`"));
        let m = err(MoeShape { n: 4100, ..s }, good, &b);
        assert!(m.contains("`shape`") && m.contains("multiple of 8"), "{m}");
        assert!(err(s, MoeCombineConfig { tile: TileConfig::WIDE_TMA_STORE_C2, ..good }, &b).contains("`tile`"));
        for (pc, g) in [(0, 132), (132, 132)] {
            assert!(err(s, MoeCombineConfig { push_ctas: pc, grid: g, ..good }, &b).contains("`push_ctas`"), "{pc}");
        }
        for c in [0, 100] {
            assert!(err(s, MoeCombineConfig { recv_capacity: c, ..good }, &b).contains("`recv_capacity`"), "{c}");
        }
        let m = err(s, good, &bufs(2, need - 1));
        assert!(m.contains("`max_output_elems`") && m.contains(&format!("max_output_elems >= {need}")), "{m}");
        let m = err(s, MoeCombineConfig { recv_capacity: 1 << 31, ..good }, &bufs(2, 1 << 37));
        assert!(m.contains("2^31"), "{m}");
    }

    /// The regions follow each other 256-byte aligned, the slots hold max_tokens x topk rows
    /// of N and out recv_capacity rows of N.
    #[test]
    fn regions_do_not_overlap() {
        let s = MoeShape { max_tokens: 1000, topk: 3, n: 264, ..shape() };
        let r = Regions::new(s, 384).unwrap();
        assert_eq!(r.map, MAP_OFFSET);
        assert_eq!(Some(r.slots), align256(MAP_OFFSET + 16 * 384));
        assert!(r.slots.is_multiple_of(256) && r.out.is_multiple_of(256));
        assert!(r.out >= r.slots + 2 * 1000 * 3 * 264);
        assert_eq!(r.end, r.out + 2 * 384 * 264);
        // (the agree words of MAX_RANKS ranks fit before the map)
        assert!(MAX_RANKS as u64 * AGREE_WORDS as u64 * 4 <= MAP_OFFSET);
        assert_eq!(AGREE_NAMES.len() as u32 + 2, AGREE_WORDS);
        // helper-113's shape: slots of 2^32 rows of 2^31 columns pass u64 (a release build had
        // wrapped them to a workspace of 256 bytes)
        let huge = MoeShape { tokens: 1, max_tokens: 4294967200, topk: 1, experts: 2, n: 2147483632, k: 8 };
        assert!(Regions::new(huge, 128).is_none());
        assert_eq!(workspace_elems_needed(huge, 128), u64::MAX);
        let m = validate(huge, &MoeCombineConfig { tile: TileConfig::WIDE_TMA_STORE, push_ctas: 8, grid: 132, recv_capacity: 128 }, &bufs(2, 1 << 31)).unwrap_err().to_string();
        assert!(m.contains("`max_output_elems`") && m.contains("no communicator holds that"), "{m}");
    }

    #[test]
    fn catalog_names_are_unique_and_cover_every_world_size() {
        let c = catalog().unwrap();
        assert_eq!(c.len(), tiles().count() * (MAX_RANKS - 1));
        assert!(tiles().all(|t| !t.swap_ab && t.cluster_size() == 1 && (t.bn == 128 || t.bn == 256)));
        let mut names: Vec<_> = c.iter().map(|k| k.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), c.len());
        assert!(source(TileConfig::WIDE, 1).is_err() && source(TileConfig::WIDE_TMA_STORE_C2, 2).is_err());
    }
}
