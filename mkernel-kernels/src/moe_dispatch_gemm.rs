//! The fused MoE dispatch + grouped GEMM kernel (`ops/moe_dispatch_gemm.cuh`): expert
//! parallelism over the ranks of one node. Every rank routes its tokens by their top-k
//! experts, pushes each routed token row over NVLink into the receive buffer of the rank
//! that holds the expert (chunks of [`MoeDispatchConfig::chunk_rows`] tokens, each announced
//! by an epoch-tagged arrival flag), and computes out = recv * W_e^T for its own experts'
//! segments while the tokens still arrive, each row block waiting (bounded) only for the
//! chunks its rows meet.
//!
//! The workspace is the fused all-reduce's ([`WorkspaceLayout`]): every rank's token counts
//! per expert and then, at [`RECV_OFFSET`], the receive buffer \[recv_capacity, K\] live in the
//! partial region (data); the arrival flags, the counts' flags and the routing's flags in the ready
//! inboxes (which hold epochs only: other kernels compare their flags there with their own
//! epochs, so no count may sit in them; the reduced inboxes are no place for them either, the
//! epilogue path keeps split counters there: helper-103); the routing's histograms and send
//! lists in the split scratch (local data); the exit flags, control block and status are
//! shared with every other fused call.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime, Swizzle, Tensor2d};
use crate::error::{invalid, Result};
use crate::gemm::{Epilogue, GemmShape, TileConfig, CLAIM_EXTRA_SMEM_BYTES};
use crate::gemm_allreduce::{RankBuffers, WorkspaceLayout};
use crate::jit::KernelSource;
use crate::params::{MoeDispatchParams, MAX_RANKS};

/// Most experts of all ranks together (`kMoeMaxExperts`: the routing keeps a few shared
/// words per expert).
pub const MAX_EXPERTS: u32 = 1024;
/// Most experts on one rank (`kMoeMaxLocalExperts`: the producer's lanes keep 4 segment ends
/// each).
pub const MAX_LOCAL_EXPERTS: u32 = 128;
/// Most experts per token.
pub const MAX_TOPK: u32 = 32;
/// A local expert's segment of the receive buffer (and of out) starts at a multiple of this
/// many rows (`kMoeSegmentAlign`), so no row block of the GEMM holds two experts (as
/// DeepGEMM's contiguous grouped layout).
pub const SEGMENT_ALIGN: u32 = 128;
/// Bytes of token rows per arrival flag by default: the design's dispatch chunk (512 KiB,
/// `../shared/DESIGN.md` section 3), at least [`MIN_DEFAULT_CHUNK_ROWS`] tokens. Run 426 (two
/// ranks sharing one H100, 8 experts top-2, K = 4096): chunks of 16 / 32 / 64 / 128 tokens ran
/// at 0.62 / 0.67 / 0.75 / 0.76 of cuBLAS per expert; 256 experts top-8 (K = 7168) 0.63-0.68
/// at every length.
pub const DEFAULT_CHUNK_BYTES: u64 = 512 << 10;
/// The fewest tokens of a default chunk (the design's 16).
pub const MIN_DEFAULT_CHUNK_ROWS: u32 = 16;

/// Tokens per arrival flag by default for hidden size `k`: [`DEFAULT_CHUNK_BYTES`] of rows,
/// at least [`MIN_DEFAULT_CHUNK_ROWS`] (K = 4096: 64; K = 7168: 36).
pub fn default_chunk_rows(k: u32) -> u32 {
    ((DEFAULT_CHUNK_BYTES / (2 * k.max(1) as u64)) as u32).max(MIN_DEFAULT_CHUNK_ROWS)
}
/// Push CTAs by default: as the all-gather's ([`crate::allgather_gemm::DEFAULT_PUSH_CTAS`]),
/// a first guess, not tuned.
pub const DEFAULT_PUSH_CTAS: u32 = 8;

/// The sizes of one rank's MoE dispatch + GEMM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeShape {
    /// This rank's tokens (rows of x and of expert_ids); may differ between ranks, each at
    /// most `max_tokens`; 0 is allowed.
    pub tokens: u32,
    /// The most tokens any rank has in this call (the same on every rank): it bounds a
    /// segment's chunks and sizes the default receive capacity.
    pub max_tokens: u32,
    /// Experts per token (columns of expert_ids).
    pub topk: u32,
    /// Experts of all ranks together (a multiple of the world size; rank r holds experts
    /// r E / world ..).
    pub experts: u32,
    /// Columns of the output (rows of each expert's weights W_e \[N, K\]).
    pub n: u32,
    /// Hidden size (columns of x and of W_e).
    pub k: u32,
}

impl MoeShape {
    /// Experts on each rank.
    pub fn local_experts(&self, world: u32) -> u32 {
        self.experts / world.max(1)
    }

    /// Rows of a receive buffer (and of out) that hold any routing of `max_tokens` tokens a
    /// rank, each to at most min(topk, local experts) experts of one rank, with each
    /// segment padded to [`SEGMENT_ALIGN`]: world x max_tokens x min(topk, El) + El x 127,
    /// rounded up to [`SEGMENT_ALIGN`]. None past u32.
    pub fn worst_case_recv_rows(&self, world: u32) -> Option<u32> {
        let el = self.local_experts(world) as u64;
        let rows = world as u64 * self.max_tokens as u64 * (self.topk as u64).min(el) + el * (SEGMENT_ALIGN as u64 - 1);
        let rows = rows.div_ceil(SEGMENT_ALIGN as u64) * SEGMENT_ALIGN as u64;
        u32::try_from(rows.max(SEGMENT_ALIGN as u64)).ok()
    }
}

/// What one rank's MoE dispatch + GEMM launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeDispatchConfig {
    /// The GEMM's tile ([`tiles`]).
    pub tile: TileConfig,
    /// CTAs that route and push this rank's tokens (the first ones of the grid), then compute.
    pub push_ctas: u32,
    /// CTAs of the launch: push CTAs, then compute CTAs; every one claims GEMM tiles (the push
    /// CTAs once their pushes are out).
    pub grid: u32,
    /// Tokens of a (source rank, expert) segment per arrival flag.
    pub chunk_rows: u32,
    /// Rows of every rank's receive buffer and of out (the same on every rank).
    pub recv_capacity: u32,
}

impl std::fmt::Display for MoeDispatchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {} push + {} compute CTAs (all claim tiles), chunks of {} token{}, {} receive rows",
            self.tile,
            self.push_ctas,
            self.grid.saturating_sub(self.push_ctas),
            self.chunk_rows,
            if self.chunk_rows == 1 { "" } else { "s" },
            self.recv_capacity
        )
    }
}

/// The tiles the MoE dispatch + GEMM has kernels for: 128 x 256 and 128 x 128 (Registers and
/// TMA-store epilogues) and 64 x 256 TMA-store, without clusters (a row block's B is its
/// expert's, so two CTAs of a cluster along M could not share it) and unswapped.
pub fn tiles() -> impl Iterator<Item = TileConfig> {
    [TileConfig::WIDE, TileConfig::NARROW, TileConfig::WIDE_TMA_STORE, TileConfig::NARROW_TMA_STORE, TileConfig::M64_WIDE_TMA_STORE].into_iter()
}

/// Whether the MoE dispatch + GEMM has kernels for `tile` ([`tiles`]).
pub fn has_kernel(tile: TileConfig) -> bool {
    tiles().any(|t| t == tile)
}

/// The tile rules of a call with N columns: a tile of [`tiles`] (`tile`), N % 8 == 0 for a
/// TMA-store one.
pub fn check_tile(tile: TileConfig, n: u32) -> Result<()> {
    if !has_kernel(tile) {
        let names: Vec<String> = tiles().map(|t| t.name()).collect();
        return Err(invalid("tile", format!("the MoE dispatch + GEMM has no kernel for {tile}: take one of {}", names.join(", "))));
    }
    tile.check_output(n)
}

/// The shape rules on `world` ranks: 2..=[`MAX_RANKS`] ranks (`world_size`); `experts` a
/// positive multiple of the world size, at most [`MAX_EXPERTS`], at most
/// [`MAX_LOCAL_EXPERTS`] a rank; topk 1..=min(experts, [`MAX_TOPK`]); tokens <= max_tokens;
/// N positive; K a positive multiple of 8 (16-byte rows); the expert ids' entries
/// (max_tokens x topk) within u32 (`shape`).
pub fn check_shape(s: MoeShape, world: u32) -> Result<()> {
    if world < 2 || world as usize > MAX_RANKS {
        return Err(invalid("world_size", format!("an MoE dispatch needs 2..={MAX_RANKS} ranks (with one, call mkernel::gemm per expert), got {world}")));
    }
    if s.experts == 0 || !s.experts.is_multiple_of(world) || s.experts > MAX_EXPERTS || s.experts / world > MAX_LOCAL_EXPERTS {
        return Err(invalid(
            "shape",
            format!(
                "experts must be a positive multiple of the world size {world}, at most {MAX_EXPERTS} and at most {MAX_LOCAL_EXPERTS} a rank, got {}",
                s.experts
            ),
        ));
    }
    if s.topk == 0 || s.topk > s.experts.min(MAX_TOPK) {
        return Err(invalid("shape", format!("topk must be 1..=min(experts, {MAX_TOPK}) = {}, got {}", s.experts.min(MAX_TOPK), s.topk)));
    }
    if s.tokens > s.max_tokens {
        return Err(invalid("shape", format!("tokens ({}) must not exceed max_tokens ({})", s.tokens, s.max_tokens)));
    }
    if s.n == 0 || s.k == 0 || !s.k.is_multiple_of(8) {
        return Err(invalid("shape", format!("N must be positive and K a positive multiple of 8 (16-byte rows), got N={} K={}", s.n, s.k)));
    }
    if s.max_tokens as u64 * s.topk as u64 > u32::MAX as u64 {
        return Err(invalid("shape", format!("max_tokens x topk = {} entries exceed u32", s.max_tokens as u64 * s.topk as u64)));
    }
    Ok(())
}

/// Bytes of the local scratch a call needs: histograms \[push_ctas\]\[experts\] and send
/// lists \[experts\]\[max_tokens\] (u32 each; by max_tokens, not the rank's own tokens, so
/// that every rank of a collective plans alike: helper-104).
pub fn scratch_bytes(s: MoeShape, push_ctas: u32) -> u64 {
    4 * (push_ctas as u64 * s.experts as u64 + s.experts as u64 * s.max_tokens as u64)
}

/// Words every rank sends before its counts, which every rank must agree on
/// (`kMoeAgreeWords`: the chunk length, max_tokens, receive capacity, K and experts of the
/// call), compared on the device ([`crate::params::WaitOp::RanksDisagree`]).
pub const AGREE_WORDS: u32 = 5;

/// Offset of the receive buffer in a rank's workspace (its partial region), bytes: after the
/// token counts region, whose size no argument changes (u32 \[MAX_RANKS\]\[[`AGREE_WORDS`]\]
/// each rank's arguments, then \[MAX_RANKS\]\[[`MAX_EXPERTS`]\] counts at most), so ranks
/// that disagree on the capacity or K still find each other's words (helper-104).
pub const RECV_OFFSET: u64 = (4 * (MAX_RANKS as u64 * AGREE_WORDS as u64 + MAX_RANKS as u64 * MAX_EXPERTS as u64)).div_ceil(256) * 256;

/// Largest receive capacity and rows of stacked weights (local experts x N): TMA coordinates
/// are signed 32-bit.
pub const MAX_TMA_ROWS: u64 = (1 << 31) - 1;

/// Elements a communicator's workspace (`CommConfig::max_output_elems`) must hold for a call
/// with `recv_capacity` receive rows of K: the counts region and the receive buffer.
pub fn workspace_elems_needed(recv_capacity: u32, k: u32) -> u64 {
    (RECV_OFFSET + 2 * recv_capacity as u64 * k as u64).div_ceil(2)
}

/// The workspace rules of a call: the counts region and the receive buffer (recv_capacity x
/// K bf16: [`workspace_elems_needed`]) within the workspace's partial region, the capacity and
/// the stacked weights' rows (local experts x N) within TMA's signed 32-bit coordinates; a
/// rank's counts flag, arrival flags (local experts x chunks of max_tokens) and routing flags
/// (2 per push CTA) within a ready-inbox row; the routing's scratch within the split scratch.
///
/// Errors: `recv_capacity`, `shape` (the weights' rows, the scratch), `chunk_rows`,
/// `push_ctas`, naming the workspace's size and how to grow it.
pub fn check_workspace(s: MoeShape, cfg: &MoeDispatchConfig, l: WorkspaceLayout, world: u32) -> Result<()> {
    if cfg.recv_capacity as u64 > MAX_TMA_ROWS {
        return Err(invalid("recv_capacity", format!("must be below 2^31 rows (TMA coordinates), got {}", cfg.recv_capacity)));
    }
    let w_rows = s.local_experts(world) as u64 * s.n as u64;
    if w_rows > MAX_TMA_ROWS {
        return Err(invalid("shape", format!("the stacked weights' rows, local experts x N = {w_rows}, must be below 2^31 (TMA coordinates)")));
    }
    let need = workspace_elems_needed(cfg.recv_capacity, s.k);
    if need > l.capacity_elems {
        // (the combine's refusal names the same argument: helper-122)
        return Err(invalid(
            "max_output_elems",
            format!(
                "the receive buffer, {} rows x K {} bf16, with the token counts needs a workspace of {need} elements, more than the communicator's {}; {}",
                cfg.recv_capacity,
                s.k,
                l.capacity_elems,
                crate::gemm_allreduce::workspace_remedy(need, "lower recv_capacity (the rows a rank can receive) or K")
            ),
        ));
    }
    let flags = arrival_flags(s, cfg.chunk_rows, world);
    if 1 + flags > l.max_tiles {
        return Err(invalid("chunk_rows", format!("{flags} arrival flags a rank (local experts x chunks of max_tokens) exceed the workspace's {}; use longer chunks", l.max_tiles)));
    }
    if 1 + flags + 2 * cfg.push_ctas as u64 > l.max_tiles {
        return Err(invalid(
            "push_ctas",
            format!("{flags} arrival flags, a counts flag and {} routing flags for {} push CTAs exceed the workspace's {} flags a rank", 2 * cfg.push_ctas as u64, cfg.push_ctas, l.max_tiles),
        ));
    }
    let scratch = scratch_bytes(s, cfg.push_ctas);
    if scratch > l.split_bytes() {
        return Err(invalid(
            "shape",
            format!(
                "the routing's send lists, experts x max_tokens ({} x {}) u32 with the histograms, take {scratch} bytes, more than the workspace's {} bytes of scratch; split the tokens over more calls",
                s.experts,
                s.max_tokens,
                l.split_bytes()
            ),
        ));
    }
    Ok(())
}

/// Arrival flags of a (source rank) row of the ready inbox: local experts x chunks of
/// `chunk_rows` tokens in max_tokens (at least one a segment), after the row's counts flag.
pub fn arrival_flags(s: MoeShape, chunk_rows: u32, world: u32) -> u64 {
    s.local_experts(world) as u64 * s.max_tokens.div_ceil(chunk_rows.max(1)).max(1) as u64
}

/// Name of the kernel for a tile and world size.
pub fn kernel_name(tile: TileConfig, world: u32) -> String {
    format!("mkernel_moe_dispatch_gemm_{}_w{}", tile.tag(), world)
}

/// Dynamic shared memory of a launch with `tile`, bytes: the tile's ([`TileConfig::smem_bytes`],
/// which the routing's arrays reuse) and the claimed units' words (the CTAs claim their tiles,
/// so the push CTAs join the GEMM once their pushes are out: [`CLAIM_EXTRA_SMEM_BYTES`]).
pub fn smem_bytes(tile: TileConfig) -> u32 {
    tile.smem_bytes().saturating_add(CLAIM_EXTRA_SMEM_BYTES)
}

/// Source of the kernel for a tile and world size (2..=[`MAX_RANKS`]).
///
/// Errors: a tile outside [`tiles`] (`tile`), a world size outside 2..=MAX_RANKS
/// (`world_size`).
pub fn source(tile: TileConfig, world: u32) -> Result<KernelSource> {
    tile.validate()?;
    if !has_kernel(tile) {
        return Err(invalid("tile", format!("the MoE dispatch + GEMM has no kernel for {tile}")));
    }
    crate::catalog::check_world(world, 2, "an MoE dispatch + GEMM kernel")?;
    let bounds = format!(
        "static_assert(mk::kMoeMaxExperts == {MAX_EXPERTS} && mk::kMoeMaxLocalExperts == {MAX_LOCAL_EXPERTS} && mk::kMoeSegmentAlign == {SEGMENT_ALIGN}, \"MoE bounds differ from Rust\");\n\
         static_assert(mk::kClaimExtraSmem == {CLAIM_EXTRA_SMEM_BYTES}, \"claimed units' shared memory differs from the host's\");\n"
    );
    crate::catalog::pushing_gemm_source("ops/moe_dispatch_gemm.cuh", "MoeDispatchParams", "mk::moe_dispatch_gemm_kernel", kernel_name(tile, world), tile, world, &bounds)
}

/// Every kernel of the catalog: each tile of [`tiles`] at world sizes 2..=[`MAX_RANKS`].
pub fn catalog() -> Result<Vec<KernelSource>> {
    crate::catalog::at_world_sizes_2_up(tiles(), source)
}

/// Checks a launch: the shape ([`check_shape`]), the tile, the rank and workspace, the CTA
/// split (at least one of each role), the chunk length (>= 1) and the receive capacity (a
/// positive multiple of [`SEGMENT_ALIGN`], within the workspace: [`check_workspace`]).
///
/// Errors name the argument: `world_size`, `shape`, `tile`, `rank`, `layout`, `push_ctas`,
/// `chunk_rows`, `recv_capacity`.
pub fn validate(s: MoeShape, cfg: &MoeDispatchConfig, bufs: &RankBuffers) -> Result<()> {
    let world = bufs.world;
    let l = bufs.layout;
    check_shape(s, world)?;
    bufs.check()?;
    check_tile(cfg.tile, s.n)?;
    if cfg.push_ctas == 0 || cfg.push_ctas >= cfg.grid {
        return Err(invalid("push_ctas", format!("must be 1..grid (a compute CTA left), got {} of {}", cfg.push_ctas, cfg.grid)));
    }
    if cfg.chunk_rows == 0 {
        return Err(invalid("chunk_rows", "must be at least 1"));
    }
    if cfg.recv_capacity == 0 || !cfg.recv_capacity.is_multiple_of(SEGMENT_ALIGN) {
        return Err(invalid("recv_capacity", format!("must be a positive multiple of {SEGMENT_ALIGN} rows, got {}", cfg.recv_capacity)));
    }
    check_workspace(s, cfg, l, world)
}

/// One rank's buffers of a call (device addresses in its context).
#[derive(Debug, Clone, Copy)]
pub struct MoeBuffers {
    /// Tokens \[tokens, K\] bf16.
    pub x: u64,
    /// i32 \[tokens, topk\]: each token's experts (global ids; -1: none).
    pub expert_ids: u64,
    /// This rank's experts' weights \[local_experts, N, K\] bf16 (W_e = rows e N..).
    pub weights: u64,
    /// \[recv_capacity, N\] bf16 (out).
    pub out: u64,
    /// u32 \[tokens, topk\] (out): the row of out on the expert's rank each entry went to.
    pub dest_rows: u64,
    /// u32 \[local_experts + 1 + local_experts x world\] (out): segment starts, rows used,
    /// tokens received per (expert, source rank).
    pub layout: u64,
}

/// Launches one rank's MoE dispatch + GEMM on `stream`.
///
/// # Safety
/// Every address of `b` must be a valid device buffer of its documented size in `stream`'s
/// context, and every `bufs.workspace[q]` (q < world) mapped in it, with all ranks launching
/// the same shape (but their own `tokens`) and config (a collective call).
pub unsafe fn launch(rt: &Runtime, stream: &Arc<CudaStream>, b: MoeBuffers, s: MoeShape, cfg: MoeDispatchConfig, bufs: &RankBuffers, timeout: Duration) -> Result<()> {
    validate(s, &cfg, bufs)?;
    let l = bufs.layout;
    let world = bufs.world;
    let me = bufs.rank as usize;
    let el = s.local_experts(world);
    let k = s.k as u64;
    let recv = Tensor2d { ptr: bufs.workspace[me] + l.partial_offset() + RECV_OFFSET, rows: cfg.recv_capacity as u64, cols: k, row_stride_bytes: 2 * k };
    let tma_a = driver::tma_2d_bf16(recv, cfg.tile.bm, cfg.tile.bk, Swizzle::B128, "workspace")?;
    let w = Tensor2d { ptr: b.weights, rows: el as u64 * s.n as u64, cols: k, row_stride_bytes: 2 * k };
    let tma_b = driver::tma_2d_bf16(w, cfg.tile.bn, cfg.tile.bk, Swizzle::B128, "weights")?;
    let out_shape = GemmShape { m: cfg.recv_capacity, n: s.n, k: s.k };
    let mut p = MoeDispatchParams {
        tma_a,
        tma_b,
        tma_c: if cfg.tile.epilogue == Epilogue::TmaStore { crate::gemm::output_map(b.out, out_shape, cfg.tile)? } else { Default::default() },
        x: b.x,
        expert_ids: b.expert_ids,
        out: b.out,
        dest_rows: b.dest_rows,
        layout: b.layout,
        scratch: bufs.workspace[me] + l.split_offset(),
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
        chunk_rows: cfg.chunk_rows,
        seg_chunks: s.max_tokens.div_ceil(cfg.chunk_rows).max(1),
        num_comm_ctas: cfg.push_ctas,
        flag_stride: l.max_tiles as u32,
        routing_flags_at: 1 + arrival_flags(s, cfg.chunk_rows, world) as u32,
        max_tokens: s.max_tokens,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        ..Default::default()
    };
    for q in 0..world as usize {
        let base = bufs.workspace[q];
        p.counts[q] = base + l.partial_offset();
        p.recv[q] = base + l.partial_offset() + RECV_OFFSET;
        p.arrived[q] = base + l.ready_offset();
        p.exit_flags[q] = base + l.exit_offset();
    }
    let f = rt.function_named(stream.context(), &kernel_name(cfg.tile, world), || source(cfg.tile, world))?;
    driver::launch(&f, LaunchDims { grid: cfg.grid, block: cfg.tile.threads(), smem_bytes: smem_bytes(cfg.tile) }, stream, &p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every dispatch launch takes the claimed units' words on top of the tile's shared memory,
    /// within an SM's 227 KiB (the kernel's static_asserts check the same when it compiles).
    #[test]
    fn launches_fit_shared_memory_with_the_claimed_units() {
        for t in tiles() {
            assert_eq!(t.cluster_size(), 1, "{t}: the claimed units need unclustered tiles");
            assert_eq!(smem_bytes(t), t.smem_bytes() + CLAIM_EXTRA_SMEM_BYTES, "{t}");
            assert!(smem_bytes(t) <= 232_448, "{t}: {} bytes", smem_bytes(t));
        }
    }

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
        let good = MoeDispatchConfig { tile: TileConfig::WIDE_TMA_STORE, push_ctas: 8, grid: 132, chunk_rows: 16, recv_capacity: rows };
        let b = bufs(2, 1 << 26);
        validate(s, &good, &b).unwrap();
        let err = |s, cfg: MoeDispatchConfig, b: &RankBuffers| validate(s, &cfg, b).unwrap_err().to_string();
        assert!(err(s, good, &bufs(1, 1 << 26)).contains("`world_size`"));
        for e in [0, 7, 2048] {
            let m = err(MoeShape { experts: e, ..s }, good, &b);
            assert!(m.contains("`shape`") && m.contains("experts must be"), "{m}");
        }
        // (258 experts on 2 ranks: 129 a rank)
        assert!(err(MoeShape { experts: 258, ..s }, good, &b).contains("at most 128 a rank"));
        for t in [0, 9, 33] {
            assert!(err(MoeShape { topk: t, ..s }, good, &b).contains("topk"), "{t}");
        }
        assert!(err(MoeShape { tokens: 4097, ..s }, good, &b).contains("max_tokens"));
        assert!(err(MoeShape { k: 2044, ..s }, good, &b).contains("multiple of 8"));
        assert!(err(MoeShape { n: 0, ..s }, good, &b).contains("N must be positive"));
        assert!(err(s, MoeDispatchConfig { tile: TileConfig::WIDE_TMA_STORE_C2, ..good }, &b).contains("`tile`"));
        assert!(err(s, MoeDispatchConfig { tile: TileConfig::swapped_tma_store(136), ..good }, &b).contains("`tile`"));
        assert!(err(MoeShape { n: 4095, ..s }, good, &b).contains("`tile`") || err(MoeShape { n: 4095, ..s }, good, &b).contains("N % 8"));
        for (pc, g) in [(0, 132), (132, 132)] {
            assert!(err(s, MoeDispatchConfig { push_ctas: pc, grid: g, ..good }, &b).contains("`push_ctas`"), "{pc}");
        }
        assert!(err(s, MoeDispatchConfig { chunk_rows: 0, ..good }, &b).contains("`chunk_rows`"));
        for c in [0, 100] {
            assert!(err(s, MoeDispatchConfig { recv_capacity: c, ..good }, &b).contains("`recv_capacity`"), "{c}");
        }
        let m = err(s, good, &bufs(2, 1 << 20));
        assert!(m.contains("`max_output_elems`") && m.contains("lower recv_capacity"), "{m}");
        // (send lists: 1024 experts x 1M tokens do not fit 32 MiB of scratch)
        let big = MoeShape { tokens: 1 << 20, max_tokens: 1 << 20, experts: 256, topk: 1, ..s };
        let m = err(big, MoeDispatchConfig { recv_capacity: 128, ..good }, &bufs(2, 1 << 30));
        assert!(m.contains("send lists"), "{m}");
    }

    /// The worst case: every rank's tokens to one rank, min(topk, El) experts each, and
    /// every segment's padding.
    #[test]
    fn worst_case_rows_hold_any_routing() {
        let s = shape();
        // 2 ranks x 4096 tokens x min(2, 4) + 4 x 127 = 16892 -> 16896
        assert_eq!(s.worst_case_recv_rows(2), Some(16896));
        // topk above the local experts: each token reaches at most El of one rank's experts
        // 8 x 4096 x 2 + 2 x 127 = 65790 -> 65792
        assert_eq!(MoeShape { topk: 8, experts: 16, ..s }.worst_case_recv_rows(8), Some(65792));
        // no tokens: the padding bound alone, 4 x 127 -> 512
        assert_eq!(MoeShape { tokens: 0, max_tokens: 0, ..s }.worst_case_recv_rows(2), Some(512));
        assert_eq!(MoeShape { max_tokens: u32::MAX, tokens: 1, ..s }.worst_case_recv_rows(8), None);
    }

    #[test]
    fn default_chunks_are_512_kib_of_rows_or_16_tokens() {
        assert_eq!(default_chunk_rows(4096), 64);
        assert_eq!(default_chunk_rows(7168), 36);
        assert_eq!(default_chunk_rows(8), 32768);
        assert_eq!(default_chunk_rows(1 << 20), 16);
    }

    #[test]
    fn catalog_names_are_unique_and_cover_every_world_size() {
        let c = catalog().unwrap();
        assert_eq!(c.len(), tiles().count() * (MAX_RANKS - 1));
        assert!(tiles().all(|t| !t.swap_ab && t.cluster_size() == 1));
        let mut names: Vec<_> = c.iter().map(|k| k.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), c.len());
        assert!(source(TileConfig::WIDE, 1).is_err() && source(TileConfig::WIDE_TMA_STORE_C2, 2).is_err());
    }
}
