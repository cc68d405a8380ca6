//! The fused GEMM + all-reduce operator over the ranks of one node (device side in
//! `src/cuda/ops/gemm_allreduce.cuh`, whose header comment draws the schedule).
//!
//! Per rank: `a` \[M, K_local\] and `b` \[N, K_local\] bf16 (K-major, as in [`crate::gemm`]),
//! `out` \[M, N\] bf16 receiving sum over ranks of a_r * b_r^T (a reduce-scatter: rank r's
//! `out` is rows \[r M / world, (r + 1) M / world) of it, [`Collective`]). The kernel needs a
//! symmetric workspace per rank ([`WorkspaceLayout`]) that every peer can address.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime, Swizzle, Tensor2d};
use crate::error::{invalid, Result};
use crate::gemm::{GemmShape, SplitLaunch, SplitWorkspace, TileConfig};
use crate::jit::KernelSource;
use crate::params::{AllReduceParams, ControlBlock, MAX_RANKS};

/// Byte layout of one rank's symmetric workspace. Every rank allocates the same
/// layout (same capacity and world size), zeroed once; peers find each region at the
/// same offset.
///
/// ```text
/// [ partial: capacity_elems bf16 | ready inbox: world x max_tiles u32 |
///   reduced inbox: world x max_tiles u32 | exit: MAX_RANKS u32 | barrier: MAX_RANKS u32 |
///   control: ControlBlock | split scratch: split_bytes() | split counts: SPLIT_COUNTS u32 ]
/// ```
/// (each region 256-byte aligned). Inbox row q holds the epochs rank q pushed here.
/// `partial` holds this rank's partial product, except on [`CommPath::Push`], where the
/// peer's epilogue stores the peer's partial into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceLayout {
    /// Largest M * N the workspace holds.
    pub capacity_elems: u64,
    /// Ranks (rows of each inbox).
    pub world: u64,
    /// Flags per inbox row: enough tiles for any M x N <= capacity with any catalog tile
    /// (at least 64 rows and 128 columns), skinny shapes included: ceil(M/64) *
    /// ceil(N/128) <= MN/8192 + M/64 + N/128 + 1 <= capacity/64 + capacity/8192 + 2,
    /// since M + N <= MN + 1 <= capacity + 1.
    pub max_tiles: u64,
}

const fn align256(x: u64) -> u64 {
    (x + 255) & !255
}

/// Largest `capacity_elems` a workspace may have (2^37 elements = 256 GiB of bf16: beyond
/// any GPU). The bound keeps `max_tiles` (capacity/64 + capacity/8192 + 2) within the
/// kernel's 32-bit flag stride, so every capacity this constant admits also makes a layout.
pub const MAX_CAPACITY_ELEMS: u64 = 1 << 37;

/// What to do about a call whose workspace must hold `need` elements, more than its
/// communicator's: create one with `max_output_elems >= need`, or `shrink` (what of the call to
/// make smaller); past [`MAX_CAPACITY_ELEMS`], which no communicator exceeds, only the latter.
pub fn workspace_remedy(need: u64, shrink: &str) -> String {
    if need > MAX_CAPACITY_ELEMS {
        format!("no communicator holds that (the largest communicator workspace is 2^37 elements): {shrink}")
    } else {
        format!("create the communicator with max_output_elems >= {need}, or {shrink}")
    }
}

impl WorkspaceLayout {
    /// A layout for outputs of up to `capacity_elems` elements of any shape, over
    /// `world` ranks. Errors name the rule when either is out of range.
    pub fn new(capacity_elems: u64, world: u32) -> Result<Self> {
        if capacity_elems == 0 || capacity_elems > MAX_CAPACITY_ELEMS {
            return Err(invalid(
                "max_output_elems",
                format!("must be in 1..=2^37, got {capacity_elems}"),
            ));
        }
        if world == 0 || world as usize > MAX_RANKS {
            return Err(invalid("world_size", format!("must be 1..={MAX_RANKS}, got {world}")));
        }
        let max_tiles = capacity_elems / 64 + capacity_elems / 8192 + 2;
        if max_tiles > u32::MAX as u64 {
            return Err(invalid("max_output_elems", format!("{capacity_elems} needs more than 2^32 tile flags")));
        }
        Ok(Self { capacity_elems, world: world as u64, max_tiles })
    }
    /// Offset of the bf16 partial-product buffer, bytes.
    pub fn partial_offset(&self) -> u64 {
        0
    }
    /// Offset of the ready-flag inbox, bytes.
    pub fn ready_offset(&self) -> u64 {
        align256(self.capacity_elems * 2)
    }
    fn inbox_bytes(&self) -> u64 {
        align256(self.world * self.max_tiles * 4)
    }
    /// Offset of the reduced-flag inbox, bytes.
    pub fn reduced_offset(&self) -> u64 {
        self.ready_offset() + self.inbox_bytes()
    }
    /// Offset of the exit flags, bytes.
    pub fn exit_offset(&self) -> u64 {
        self.reduced_offset() + self.inbox_bytes()
    }
    /// Offset of the device-side barrier's flags (u32 [`MAX_RANKS`], [`crate::barrier`]), bytes.
    pub fn barrier_offset(&self) -> u64 {
        self.exit_offset() + align256(MAX_RANKS as u64 * 4)
    }
    /// Offset of the `ControlBlock`, bytes.
    pub fn control_offset(&self) -> u64 {
        self.barrier_offset() + align256(MAX_RANKS as u64 * 4)
    }
    /// Offset of the fp32 slots of the epilogue and local paths' split last wave, bytes
    /// (local to the rank; [`FusedConfig::split_slices`]).
    pub fn split_offset(&self) -> u64 {
        self.control_offset() + align256(std::mem::size_of::<ControlBlock>() as u64)
    }
    /// Bytes of the split scratch: [`SPLIT_SLOTS`] fp32 tiles of the largest catalog tile
    /// (32 MiB), but no more than 16 bytes per output element (four fp32 copies of the
    /// largest output) for small workspaces.
    pub fn split_bytes(&self) -> u64 {
        align256((SPLIT_SLOTS * SPLIT_SLOT_MAX_BYTES).min(self.capacity_elems * 16))
    }
    /// Offset of the local path's split counts ([`crate::gemm::SPLIT_COUNTS`] u32, one per
    /// left-over tile of the plain GEMM's split last wave, [`CommPath::Local`]): zero from
    /// the allocation on, as the plain GEMM's kernel leaves them after every call.
    pub fn split_counts_offset(&self) -> u64 {
        self.split_offset() + self.split_bytes()
    }
    /// Total bytes to allocate per rank.
    pub fn bytes(&self) -> u64 {
        self.split_counts_offset() + align256(crate::gemm::SPLIT_COUNTS * 4)
    }
}

/// Choices of one fused call: the GEMM tiles and the SM partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FusedConfig {
    /// GEMM tile configuration.
    pub tile: TileConfig,
    /// CTAs (one per SM) that run the communication role; the rest compute. 1..grid,
    /// but 0 on [`CommPath::Epilogue`] (compute CTAs all-reduce their own tiles) and on
    /// [`CommPath::Local`] (one rank: nothing to communicate).
    pub comm_ctas: u32,
    /// Compute plus communication CTAs (normally the SM count); the launch has
    /// `grid + tail_ctas` CTAs. ([`CommPath::Local`]: the plain GEMM's launch makes its
    /// own grid, one CTA per tile up to the SM count, in whole clusters.)
    pub grid: u32,
    /// How the all-reduce moves data (must be one [`CommPath::all_for`] lists for
    /// the tile and world size, and suit N: see [`CommPath::check`]).
    pub path: CommPath,
    /// Tail CTAs launched after the grid (paths that [`CommPath::claims_tiles`]: one-shot,
    /// reduce and push; 0..=grid, and grid + tail_ctas <= [`MAX_LAUNCH_CTAS`]): no SM is
    /// free for them until compute CTAs finish, then they claim tiles like the
    /// communication CTAs, so the last waves' tiles are pulled by many SMs. Only for a
    /// rank that has its GPU to itself: on a shared GPU they could hold SMs a peer's
    /// compute CTAs need.
    pub tail_ctas: u32,
    /// How the epilogue path paces each CTA's copies to the peer (other paths: only the
    /// default, [`EpiloguePace::Clock`], which they ignore).
    pub pace: EpiloguePace,
    /// Epilogue path: the R tiles left over after the full waves of `grid` CTAs are each
    /// computed as this many slices of the K loop, summed in slice order in fp32 by the
    /// slice that finishes last ([`Self::choose_split`]; 1: no split, the only value other
    /// paths but [`CommPath::Local`] take). Where R x slices <= grid every slice runs on
    /// its own CTA in one wave; above that they run in several waves, a CTA taking several
    /// ([`LastWaveSplit::Slices`]). On the local path: the plain GEMM's split
    /// ([`TileConfig::split_rule_for`] by default), in the workspace's split slots and
    /// counts ([`RankBuffers::local_split_workspace`]).
    pub split_slices: u32,
    /// Epilogue path, DIAGNOSTIC ONLY (the result is wrong when nonzero): bit 0, the
    /// copies to the peer store nothing (their pacing, fences and flags kept); bit 1, the
    /// peer's copy is neither loaded nor added (its flag still awaited). Attributes the
    /// fused kernel's time to the copies' and the adds' traffic in one timed run
    /// (bench --sweep-diag). 0 otherwise.
    pub diag_skip: u32,
}

pub use crate::gemm::LastWaveSplit;

/// What [`FusedConfig::choose_split`] and [`FusedConfig::check_split`] weigh: the tiles
/// left over after the full waves of `grid` CTAs, the K blocks of a tile, and the bytes
/// of one fp32 slot.
struct LastWave {
    rest: u64,
    k_blocks: u64,
    slot: u64,
}

impl LastWave {
    /// None for a grid of 0 CTAs or a tile outside the catalog (its sides could be zero
    /// or overflow the slot size).
    fn of(shape: GemmShape, tile: TileConfig, grid: u32) -> Option<Self> {
        if grid == 0 || tile.validate().is_err() {
            return None;
        }
        Some(Self {
            rest: tile.tiles(shape.m, shape.n) % grid as u64,
            k_blocks: (shape.k as u64).div_ceil(tile.bk as u64),
            slot: tile.split_slot_bytes(),
        })
    }
}

/// Most fp32 slots of the split last wave a workspace holds (one per slice).
pub const SPLIT_SLOTS: u64 = 256;
/// Bytes of one slot: an fp32 tile of the largest catalog tile (128 x 256).
pub const SPLIT_SLOT_MAX_BYTES: u64 = 128 * 256 * 4;
/// Fewest K blocks (of 64) a slice of the split last wave gets: below that the slice's
/// fixed costs (pipeline fill, its fp32 slot written and the others read) outweigh
/// the compute it takes off the last wave.
pub const MIN_SPLIT_K_BLOCKS: u64 = 16;
/// Most K-slices [`FusedConfig::choose_split`] picks: the last slice reads every slot
/// (one fp32 tile each, from L2), so past a few slices that read costs more than the
/// shorter slices save.
pub const MAX_SPLIT_SLICES: u64 = 8;

/// How a CTA on [`CommPath::Epilogue`] paces its copy of a finished tile to the peer
/// while it has another tile to compute (its last tile goes at full speed; with a split
/// last wave, [`LastWaveSplit`], every whole tile is paced). Every CTA
/// finishes a tile at the same moment; unpaced, the burst of remote writes from all SMs
/// backs up behind the link and slows the TMA loads of the next tile (bench/NOTES.md
/// 6.2). Device side: `EpilogueAllReduce::copy_out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EpiloguePace {
    /// A sleep of 3/5 of the CTA's last tile time / R between the R rounds of 1 KiB (R =
    /// 64 for 128x256 tiles, 32 for 128x128 and 64x256; measured on 2x H200, run 21).
    /// `__nanosleep` may sleep up to twice as long, so with more than two tiles per CTA
    /// the copy can outlast a tile and hold up the next (o-proj M=8192: 1.20 ms against
    /// 0.90 with the clock pace, run 22).
    Sleep = 0,
    /// The default: round k starts no earlier than k/R of a window after the first, the
    /// window being the CTA's tile time less 20 us (at least half of it, at most 1 ms;
    /// before a slice of a split last wave, tile time / slices, so the staging tile is
    /// free when the slice is summed: bench/NOTES.md 8.3),
    /// so the copy never outlasts it by more than a round; while the consumers wait for
    /// the storer, the window shrinks instead of growing from tile times that include
    /// those waits. Equal to the sleep pace at two tiles per CTA and up to 1.3x faster
    /// with more (2x H200, run 22, bench/NOTES.md 7.2).
    #[default]
    Clock = 1,
}

impl EpiloguePace {
    /// Command-line name: `sleep`, `clock`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sleep => "sleep",
            Self::Clock => "clock",
        }
    }
    /// Looks a pace up by its [`Self::name`].
    pub fn by_name(name: &str) -> Option<Self> {
        [Self::Sleep, Self::Clock].into_iter().find(|p| p.name() == name)
    }
}

/// Most CTAs one fused launch may have (grid + tail CTAs): CUDA's grid x-dimension limit.
pub const MAX_LAUNCH_CTAS: u32 = i32::MAX as u32;

impl FusedConfig {
    /// K-slices per tile of the last wave ([`Self::split_slices`]) for the epilogue path:
    /// with R = tiles mod grid left over after the full waves (R > 0), as many as fit
    /// the idle SMs (grid / R), give each slice at least [`MIN_SPLIT_K_BLOCKS`] K blocks,
    /// stay within [`MAX_SPLIT_SLICES`] and fit the scratch (`scratch_bytes`, [`WorkspaceLayout::split_bytes`]); 1 when
    /// that is fewer than 2, on other paths, or when the tiles fill whole waves.
    ///
    /// Why: a last wave of R < grid tiles costs a whole tile time on R SMs while the
    /// rest idle (o-proj M=2049: 544 tiles on 132 SMs, the 16 tiles of the 1-row block
    /// take ~48 us of ~268; bench/NOTES.md 7.3). Split S ways they take ~1/S of it, plus
    /// writing one fp32 tile per slice and reading S - 1 of them in the last slice.
    pub fn choose_split(shape: GemmShape, tile: TileConfig, grid: u32, path: CommPath, scratch_bytes: u64) -> u32 {
        if path != CommPath::Epilogue || tile.fused_epilogue_only() {
            return 1;
        }
        let Some(LastWave { rest, slot, .. }) = LastWave::of(shape, tile, grid) else { return 1 };
        if rest == 0 {
            return 1;
        }
        let s = tile.split_slices_bound(shape.k, rest, grid as u64).min(scratch_bytes / slot / rest);
        if s < 2 {
            1
        } else {
            s as u32
        }
    }

    /// Checks `split_slices` against the path, the shape and the scratch: 1, or (epilogue
    /// path only, unclustered tiles) slices <= K blocks and R slots of slices fp32 tiles
    /// within `scratch_bytes`. R x slices may exceed the grid: the slices then run in
    /// several shorter waves, a CTA taking several ([`LastWaveSplit::Slices`]). On
    /// [`CommPath::Local`], the plain GEMM's rules ([`SplitLaunch::check`] on the plain
    /// GEMM's split grid, with [`crate::gemm::SPLIT_COUNTS`] counts). Errors name
    /// `split_slices`.
    pub fn check_split(&self, shape: GemmShape, scratch_bytes: u64) -> Result<()> {
        self.check_tile()?;
        let s = self.split_slices as u64;
        if s == 0 {
            return Err(invalid("split_slices", "must be at least 1 (1: no split), got 0"));
        }
        if s == 1 {
            return Ok(());
        }
        if self.path == CommPath::Local {
            // The plain GEMM's split (its kernel, its rules) on the plain GEMM's grid for the
            // tile, with the layout's slots and counts.
            let workspace = SplitWorkspace { scratch: 0, scratch_bytes, counts: 0, counts_len: crate::gemm::SPLIT_COUNTS };
            let tiles = self.tile.tiles(shape.m, shape.n);
            let grid = self.tile.split_grid(tiles, self.split_slices, self.grid);
            return SplitLaunch { slices: self.split_slices, workspace }.check(self.tile, shape, grid).map_err(|e| match e {
                crate::Error::InvalidArgument { rule, .. } => invalid("split_slices", rule),
                other => other,
            });
        }
        if self.path != CommPath::Epilogue {
            return Err(invalid("split_slices", format!("only the epilogue path splits its last wave ({} asked on the {} path)", s, self.path.name())));
        }
        if self.tile.cluster_m > 1 {
            return Err(invalid("split_slices", format!("{s} asked with {}: a cluster's CTAs take whole tiles of one pair, no slices", self.tile)));
        }
        if self.tile.is_fused_column_fitted() {
            // (not built: the fused split's slots and paces were measured on 128 x 128 and
            // 128 x 256 tiles, and on swapped ones)
            return Err(invalid("split_slices", format!("{s} asked with {}: the fused kernel takes column-fitted tiles whole, no slices", self.tile)));
        }
        let Some(LastWave { rest, k_blocks, slot }) = LastWave::of(shape, self.tile, self.grid) else {
            return Err(invalid("split_slices", format!("needs a grid of at least 1 CTA ({s} asked with {} CTAs)", self.grid)));
        };
        if rest == 0 {
            return Err(invalid("split_slices", format!("{s} asked, but the {} tiles fill whole waves of {} CTAs: nothing to split", self.tile.tiles(shape.m, shape.n), self.grid)));
        }
        if s > k_blocks {
            return Err(invalid("split_slices", format!("{s} slices exceed the {k_blocks} K blocks of {} columns in K = {}: at most {k_blocks} (a slice takes at least one K block)", self.tile.bk, shape.k)));
        }
        // (saturating: huge grids and counts must be refused, not wrap)
        let slots = rest.saturating_mul(s);
        if slots.saturating_mul(slot) > scratch_bytes {
            // (a hint only where a larger workspace has more scratch; helper-97)
            let cap = align256(SPLIT_SLOTS * SPLIT_SLOT_MAX_BYTES);
            let hint = if scratch_bytes < cap {
                format!("a larger max_output_elems gives more, up to {} MiB", cap >> 20)
            } else {
                "the largest a workspace has: fewer slices fit".to_string()
            };
            return Err(invalid("split_slices", format!("{slots} slots of {slot} bytes exceed the workspace's {scratch_bytes}-byte split scratch ({hint})")));
        }
        Ok(())
    }

    /// Checks that `tile` has a kernel on `path`: one of [`TileConfig::fused_catalog`], or
    /// on [`CommPath::Local`] (the plain GEMM's kernel) one of
    /// [`TileConfig::gemm_catalog`] ([`TileConfig::validate_for_gemm`]). Errors name `tile`.
    pub fn check_tile(&self) -> Result<()> {
        if self.path == CommPath::Local {
            self.tile.validate_for_gemm()
        } else {
            self.tile.validate()
        }
    }

    /// Checks `pace` against the path: only [`CommPath::Epilogue`] paces its copies, so
    /// any other path takes the default. Errors name `epilogue_pace`.
    pub fn check_pace(&self) -> Result<()> {
        if self.pace != EpiloguePace::default() && self.path != CommPath::Epilogue {
            return Err(invalid(
                "epilogue_pace",
                format!(
                    "only the epilogue path (two ranks) paces copies ({} pace asked for the {} path; set comm_path to epilogue)",
                    self.pace.name(),
                    self.path.name()
                ),
            ));
        }
        Ok(())
    }

    /// Checks `tail_ctas` against the path and the grid: only paths that claim tiles take
    /// any, at most `grid` of them, and the launch (grid + tail) stays within
    /// [`MAX_LAUNCH_CTAS`]. Errors name `tail_ctas` (or `grid`).
    pub fn check_tail_ctas(&self) -> Result<()> {
        if self.grid > MAX_LAUNCH_CTAS {
            return Err(invalid("grid", format!("must be at most {MAX_LAUNCH_CTAS} CTAs, got {}", self.grid)));
        }
        if self.tail_ctas > 0 && !self.path.claims_tiles() {
            return Err(invalid(
                "tail_ctas",
                format!("only the one-shot, reduce and push paths take tail CTAs, not {}; got {}", self.path.name(), self.tail_ctas),
            ));
        }
        if self.tail_ctas > self.grid {
            return Err(invalid("tail_ctas", format!("must be at most the grid ({}), got {}", self.grid, self.tail_ctas)));
        }
        if self.grid.checked_add(self.tail_ctas).is_none_or(|n| n > MAX_LAUNCH_CTAS) {
            return Err(invalid(
                "tail_ctas",
                format!("the grid ({}) plus {} tail CTAs exceeds the {MAX_LAUNCH_CTAS} CTAs of one launch", self.grid, self.tail_ctas),
            ));
        }
        Ok(())
    }

    /// The tile heuristic of the fused call: [`TileConfig::choose`], but 64-row tiles
    /// only while 128-row ones would not fill a wave of `grid` CTAs, and the narrow tile
    /// with the TMA-store epilogue where N allows it (N % 8 == 0).
    ///
    /// Why: each tile costs the communication a fixed ~2-3 us, so twice the tiles cost
    /// more than the padding rows save (H200, 2 ranks: M=2049 0.273 ms with 64-row tiles
    /// vs 0.262 with 128-row ones; M=129 0.054 vs 0.080; bench/NOTES.md 5.4). The narrow
    /// tile's TMA-store twin opens the epilogue path (and the small-M swapped tiles of
    /// [`Self::epilogue_tile`]) to the small shapes that took the one-shot path with
    /// Registers tiles (run 113, ms, one-shot -> epilogue path: 256 x 8192 x 4096 0.0775
    /// -> 0.0601, 0.91x -> 1.17x of cuBLAS + NCCL; 128 x 8192 x 4096 0.0548 -> 0.0457 with
    /// 64 x 128 swapped tiles; 128 x 8192 x 14336 0.1124 -> 0.0935; 256 x 7168 x 9216
    /// 0.0881 -> 0.0860).
    pub fn choose_tile(m: u32, n: u32, grid: u32) -> TileConfig {
        let t = TileConfig::choose(m, n, grid);
        if t == TileConfig::M64_WIDE_TMA_STORE && TileConfig::WIDE_TMA_STORE.tiles(m, n) >= grid as u64 {
            TileConfig::WIDE_TMA_STORE
        } else if t == TileConfig::NARROW && n.is_multiple_of(8) {
            TileConfig::NARROW_TMA_STORE
        } else {
            t
        }
    }

    /// The epilogue path's refinement of [`Self::choose_tile`]: 128 x 128 instead of
    /// 128 x 256 tiles when the smaller copy after the GEMM saves more than the narrow
    /// tiles' slower GEMM costs, and the swapped-operand rules below (small M, mid M);
    /// any other tile as it is.
    ///
    /// Why: on the epilogue path the copies of the last wave's tiles all start when the
    /// GEMM ends, so that wave's output (R = tiles mod `grid` tiles, or a whole wave)
    /// crosses the link after it: R x BM x BN x 2 bytes at [`EPILOGUE_LINK_BYTES_PER_S`].
    /// Narrow tiles halve a tile's bytes but run the GEMM [`NARROW_TILE_SLOWDOWN`] slower
    /// (of 2 M N K at [`WIDE_TILE_FLOPS_PER_S`]). With a short K (below ~2100 =
    /// [`WIDE_TILE_FLOPS_PER_S`] / [`EPILOGUE_LINK_BYTES_PER_S`]) the link is behind all
    /// along; a two-stage model (max of GEMM + final burst and first wave + all bytes over
    /// the link) then still favours narrow tiles, whose first wave is shorter, as this one
    /// does, but no such shape has been measured (every shape below has K >= 4096).
    /// Measured on the H200 pair
    /// (bench/NOTES.md 10.3, runs 58-59): narrow tiles make o-proj M=1024 0.135-0.137 ms
    /// against 0.142 (the model: 12.3 us of copy saved, 6.4 us of GEMM lost), leave
    /// M=2048 and DeepSeek M=1024 even (12.3 against 12.8, 12.4 against 12.6) and gain
    /// nowhere else.
    ///
    /// For M <= 256 (and K % 64 == 0) it first takes the swapped-operand TMA-store tile
    /// that holds all of M ([`TileConfig::swapped_tma_store`]) where the plain GEMM's rule
    /// takes its Registers twin ([`TileConfig::choose_for`]: the tiles fit one wave of
    /// `grid` and load fewer rows per SM). Measured on the H200 pair (run 106, same rounds,
    /// ms): M=129 x 8192 x 4096 0.0454 with 64 x 136 swapped tiles against 0.0574 with
    /// 64 x 256 ones, 1.41x over cuBLAS + NCCL instead of 1.11x (bench/NOTES.md 15.5).
    ///
    /// For 257 <= M <= 8192 (and K % 64 == 0) it then takes the 128-row swapped TMA-store
    /// tile fitted to M where [`TileConfig::fitted_instead_of`] says it beats the 128 x 256
    /// or 64 x 256 tile, before the narrow refinement. Measured on the H200 pair (runs 112
    /// and 113, ms, default -> fitted): M=2049 x 8192 x 4096 0.2634 -> 0.2354, 2049 x 8192 x 14336
    /// 0.8898 -> 0.7460 (0.93x -> 1.11x of cuBLAS + NCCL), 2049 x 7168 x 9216 0.4612 ->
    /// 0.4230, M=300 0.0754 -> 0.0631, 520 0.1113 -> 0.0832, 640 0.1159 -> 0.0920, 777
    /// 0.1301 -> 0.1100, 5000 0.5326 -> 0.5186; it leaves M=1000 (0.1303 with 128 x 128
    /// tiles against 0.1321) and 3000 (0.3296 against 0.3528) as they were.
    ///
    /// The column-fitted tiles come after, in [`Self::epilogue_default_tile`].
    pub fn epilogue_tile(shape: GemmShape, tile: TileConfig, grid: u32) -> TileConfig {
        // (the TMA-store twin loads and tiles as the Registers tile the rules compare)
        if tile.epilogue == crate::gemm::Epilogue::TmaStore && tile.cluster_m == 1 && !tile.swap_ab {
            if let Some(s) = TileConfig::swapped_instead_of(tile, shape, grid) {
                return s.with_tma_store();
            }
            if let Some(f) = TileConfig::fitted_instead_of(tile, shape, grid) {
                return f.with_tma_store();
            }
        }
        let (wide, narrow) = (TileConfig::WIDE_TMA_STORE, TileConfig::NARROW_TMA_STORE);
        if tile != wide || grid == 0 {
            return tile;
        }
        let saved_s = (Self::final_burst_bytes(shape, wide, grid) - Self::final_burst_bytes(shape, narrow, grid)) / EPILOGUE_LINK_BYTES_PER_S;
        let lost_s = shape.flops() / WIDE_TILE_FLOPS_PER_S * NARROW_TILE_SLOWDOWN;
        if saved_s > lost_s {
            narrow
        } else {
            wide
        }
    }

    /// The epilogue path's default tile for `tile` (from [`Self::choose_tile`]): the column
    /// tile of [`Self::epilogue_cols_tile`] where there is one, else [`Self::epilogue_tile`]'s,
    /// each then through [`Self::clustered_epilogue_tile`]; but never an unclustered column
    /// tile in place of a clustered default.
    ///
    /// Why the last rule: the column rule compares its tile with the unclustered 128 x 256
    /// tile, and the 2-CTA twins run 1.5-3% faster than their tiles (bench/NOTES.md 17.4) where
    /// the fused kernel has no twin for the column width (not a multiple of 16: 136, 168,
    /// 184, 216, ...); against clustered defaults no column tile has been timed faster on
    /// the fused path (run 394: o-proj M=2048 144-c2 +0.6%, 176-c2 +3.6%, 168 +4.9% against
    /// the clustered 128 x 256 tile; bench/NOTES.md 52.1, 52.6).
    pub fn epilogue_default_tile(shape: GemmShape, tile: TileConfig, grid: u32, split: LastWaveSplit, scratch_bytes: u64) -> TileConfig {
        let base = Self::clustered_epilogue_tile(shape, Self::epilogue_tile(shape, tile, grid), grid, split, scratch_bytes);
        match Self::epilogue_cols_tile(shape, tile, grid) {
            Some(c) => {
                let c = Self::clustered_epilogue_tile(shape, c, grid, split, scratch_bytes);
                if base.cluster_m > c.cluster_m {
                    base
                } else {
                    c
                }
            }
            None => base,
        }
    }

    /// The column rule of the epilogue path: as the plain GEMM's
    /// [`TileConfig::fitted_or_cols_instead_of`] does after the small-M rule, it asks the
    /// column rule ([`TileConfig::cols_instead_of`]: M >= 1024, the 128-row TMA-store tile
    /// fitted to N where its busiest SM's work at its rate beats the 128 x 256 tile's), and
    /// gives that tile, unless the mid-M rule's swapped tile stays
    /// ([`TileConfig::beats_swapped_fit`]), where the fused kernel has it
    /// ([`TileConfig::fused_catalog`]: 136-248 columns), it is at least
    /// [`crate::gemm::COLS_OVER_SWAPPED_MIN_COLS`] wide (136 and 144 columns lost to
    /// other tiles at the same work in the plain GEMM, and have not been timed faster on
    /// the fused path), and it saves more GEMM time than its last wave's larger copy costs
    /// (`Self::cols_pay_for_their_burst`). `None` elsewhere
    /// (and for a `tile` that is not the unclustered 128 x 256 TMA-store tile, or where the
    /// small-M rule's swapped tile applies).
    ///
    /// Of the issue's shapes only DeepSeek M=2048 changes: 176 columns (in clusters) instead
    /// of 128 x 256 tiles split 2-way. Measured with a pair's two ranks on one H200, each on a
    /// per-rank stand-in with the pair's tiles per CTA (runs 394 and 396, fused ms, old
    /// default -> new): DeepSeek M=2048 0.4427 -> 0.4130, 0.4026 -> 0.3827, 0.4861 -> 0.4512;
    /// 2048 x 7168 x 4096 0.2349 -> 0.2199 (176-c2); 4096 x 2880 x 4096 0.1765 -> 0.1661 (128 x
    /// 128 -> 240-c2); 1024 x 6144 x 4096 0.1122 -> 0.0973 (192-c2); 1024 x 5120 x 4096 0.0951
    /// -> 0.0843 (swapped 176-c2 -> 160-c2); 1024 x 9216 x 4096 0.1504 -> 0.1316 (swapped 152
    /// -> 192-c2); 1024 x 2880 x 4096 0.0683 -> 0.0605 (swapped 208 -> 184): 5-13% faster on
    /// all seven, before the pair's larger last-wave copy (bench/NOTES.md 52.3).
    pub fn epilogue_cols_tile(shape: GemmShape, tile: TileConfig, grid: u32) -> Option<TileConfig> {
        let plain_wide = tile.epilogue == crate::gemm::Epilogue::TmaStore && tile.cluster_m == 1 && !tile.swap_ab;
        if !plain_wide || TileConfig::swapped_instead_of(tile, shape, grid).is_some() {
            return None;
        }
        // (the plain GEMM's choice between the two; a swapped tile is none of the fused
        // kernel's column-fitted ones)
        TileConfig::fitted_or_cols_instead_of(tile, shape, grid).filter(|c| {
            c.is_fused_column_fitted() && c.bn >= crate::gemm::COLS_OVER_SWAPPED_MIN_COLS && Self::cols_pay_for_their_burst(shape, tile, *c, grid)
        })
    }

    /// Whether the column-fitted tile `cols` ([`TileConfig::cols_instead_of`]'s pick in place
    /// of `wide`, the unclustered 128 x 256 TMA-store tile) saves more GEMM time than its
    /// last wave's larger copy costs on the epilogue path: the busiest SM's work over its
    /// rate ([`TileConfig::busiest_sm_work`], [`TileConfig::relative_rate`]) as a share of
    /// 2 M N K at [`WIDE_TILE_FLOPS_PER_S`], against the final burst's bytes (the last
    /// wave's tiles, or a whole wave where none are left over) at
    /// [`EPILOGUE_LINK_BYTES_PER_S`]. The model takes `wide` unsplit; the default splits
    /// its last wave where that pays ([`Self::choose_split`]), which the measurement below
    /// compares against.
    ///
    /// Measured (run 394, one H200, both ranks of a pair on it with M halved, so that each
    /// rank's 66 CTAs run the pair's tiles per CTA; fused ms, the epilogue path): DeepSeek
    /// M=2048 (1024 x 7168 x 9216 per rank there) 0.4427 with 128 x 256 tiles split 2-way
    /// against 0.4130 with 176 columns in clusters, 6.7% faster (the model: 34 us of GEMM
    /// saved, 6.8 us more copied: 128 tiles of 44 KiB, 5.8 MB, against 52 of 64 KiB, 3.4
    /// MB); its copies are local there, so the pair adds those ~7 us (bench/NOTES.md 52.3;
    /// more shapes at [`Self::epilogue_cols_tile`]).
    fn cols_pay_for_their_burst(shape: GemmShape, wide: TileConfig, cols: TileConfig, grid: u32) -> bool {
        let gemm_s = |t: TileConfig| {
            let (work, base) = (t.busiest_sm_work(shape, grid) as f64, wide.busiest_sm_work(shape, grid) as f64);
            shape.flops() / WIDE_TILE_FLOPS_PER_S * (work / t.relative_rate().max(1) as f64) / (base / wide.relative_rate().max(1) as f64)
        };
        let burst_s = |t: TileConfig| Self::final_burst_bytes(shape, t, grid) / EPILOGUE_LINK_BYTES_PER_S;
        gemm_s(wide) - gemm_s(cols) > burst_s(cols) - burst_s(wide)
    }

    /// Bytes of bf16 output the epilogue path copies after the GEMM with `t` on `grid` CTAs:
    /// its last wave's tiles ([`LastWave`]), or a whole wave where none are left over.
    fn final_burst_bytes(shape: GemmShape, t: TileConfig, grid: u32) -> f64 {
        let rest = LastWave::of(shape, t, grid).map_or(0, |w| w.rest);
        let rest = if rest == 0 { t.tiles(shape.m, shape.n).min(grid as u64) } else { rest };
        (rest * t.bm as u64 * t.bn as u64 * 2) as f64
    }

    /// The epilogue path's last tile step, after [`Self::epilogue_tile`]: the 2-CTA twin of
    /// `tile` where the plain GEMM's rule takes it ([`TileConfig::clustered_instead_of`]:
    /// the 128 x 256 TMA-store tile with M >= 1024, or a 128-row swapped TMA-store tile
    /// whose height is a multiple of 16; row blocks that pair up, K % 64 == 0 and K >=
    /// 4096; a column-fitted tile of [`FusedConfig::epilogue_tile`] whose twin the fused
    /// kernel has, [`TileConfig::fused_catalog`]), the grid is even (a cluster's two CTAs),
    /// and `split` is the default `Auto`
    /// and would not split the last wave ([`Self::choose_split`] gives 1 for `tile`:
    /// clustered tiles are not split); `tile` otherwise. An explicit `Off` or `Slices(n)`
    /// keeps the unclustered tile, so that a split sweep varies the split alone.
    ///
    /// Why: the two CTAs of a cluster share one operand tile by TMA multicast, which saves
    /// L2 traffic. The plain GEMM measured it on one H200 (bench/NOTES.md 17.4-17.6): the
    /// wide tile 1.5-3% faster on M >= 1024, the swapped TMA-store tiles 2.5% (2049 x 8192
    /// x 4096: 0.950 -> 0.975 of cuBLAS); on the fused epilogue path the wide twin measured
    /// o-proj M=2048 0.2440 ms against 0.2458-0.2466 on the H200 pair (13.2).
    pub fn clustered_epilogue_tile(shape: GemmShape, tile: TileConfig, grid: u32, split: LastWaveSplit, scratch_bytes: u64) -> TileConfig {
        let auto_without_split =
            split == LastWaveSplit::Auto && Self::choose_split(shape, tile, grid, CommPath::Epilogue, scratch_bytes) == 1;
        if grid == 0 || !grid.is_multiple_of(2) || !auto_without_split || tile.epilogue != crate::gemm::Epilogue::TmaStore {
            return tile;
        }
        // (the plain GEMM has twins the fused kernel lacks: the column-fitted widths that are
        // not multiples of 16, `TileConfig::fused_catalog`)
        let twin = TileConfig::clustered_instead_of(tile, shape);
        if TileConfig::fused_catalog().any(|t| t == twin) {
            twin
        } else {
            tile
        }
    }
}

/// NVLink bandwidth of one direction the epilogue path's copies reach, bytes/s (H200
/// pair: 16-byte stores from every SM, 342-354 GB/s; `bench/probes/p2p_store_rate.py`,
/// runs 52 and 61).
pub const EPILOGUE_LINK_BYTES_PER_S: f64 = 350e9;
/// Rate of the GEMM engine with 128 x 256 tiles on large shapes, FLOP/s (H200: 749-765
/// TFLOP/s, `mkernel bench gemm`, o-proj M=2048 and 8192, run 58).
pub const WIDE_TILE_FLOPS_PER_S: f64 = 750e12;
/// How much longer the GEMM takes with 128 x 128 tiles (H200: 703 and 701 TFLOP/s
/// against 749 and 765 on the same shapes, run 58: 6.5-9%).
pub const NARROW_TILE_SLOWDOWN: f64 = 0.07;

impl std::fmt::Display for FusedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path == CommPath::Local {
            // (the plain GEMM's launch makes its own grid: one CTA per tile up to the SMs)
            write!(f, "{}, local path (one rank: the plain GEMM alone)", self.tile)?;
            if self.split_slices > 1 {
                write!(f, ", last wave split {}-way", self.split_slices)?;
            }
            return Ok(());
        }
        write!(f, "{}, {} comm + {} compute CTAs", self.tile, self.comm_ctas, self.grid.saturating_sub(self.comm_ctas))?;
        if self.tail_ctas > 0 {
            write!(f, " + {} tail", self.tail_ctas)?;
        }
        write!(f, ", {} path", self.path.name())?;
        if self.pace != EpiloguePace::default() {
            write!(f, " ({} pace)", self.pace.name())?;
        }
        if self.split_slices > 1 {
            write!(f, ", last wave split {}-way", self.split_slices)?;
        }
        if self.diag_skip != 0 {
            write!(f, ", DIAGNOSTIC skip {} (result wrong)", self.diag_skip)?;
        }
        Ok(())
    }
}

/// How the all-reduce moves data (`mk::CommPath`, documented with the kernel in
/// `ops/gemm_allreduce.cuh`): TMA boxes when every row stride is 16-byte aligned, else
/// 16-byte vectors, else 2-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommPath {
    /// Two-phase (reduce-scatter then gather) with TMA slice boxes; BM % world == 0.
    Tma = 0,
    /// Two-phase with 16-byte loads/stores by every thread; N % 8 == 0.
    Vec16 = 1,
    /// Two-phase with 2-byte loads/stores; any N.
    Scalar = 2,
    /// World <= 2: each rank pulls every rank's quarter tiles and sums them in shared
    /// memory; N % 8 == 0.
    TmaOneShot = 3,
    /// World == 2 with the TMA-store epilogue: the epilogue also stores the own partial
    /// into `out`, and communication CTAs add the peer's quarter tiles into it with TMA
    /// reduce-add stores; N % 8 == 0.
    TmaReduce = 4,
    /// World == 2 with the TMA-store epilogue: the epilogue stores the own partial tile
    /// into `out` and pushes it into the peer's workspace (a TMA store over NVLink,
    /// issued as soon as the tile is done, by the GEMM's storer warp), so communication
    /// CTAs touch local memory only: they add the tile the peer pushed into `out` with
    /// TMA reduce-add stores; N % 8 == 0. The device code is TmaReduce's; only the
    /// tensor maps differ (the epilogue's first store targets the peer, the
    /// communication CTAs read this rank's own workspace).
    Push = 5,
    /// World == 2 with the TMA-store epilogue, and no communication CTAs: every SM
    /// computes, and the GEMM's storer warp of each CTA all-reduces the CTA's own tiles.
    /// It TMA-stores a finished tile into `out`, copies it into the peer's workspace
    /// (16-byte stores over NVLink), then waits for the peer's copy of the same tile in
    /// its own workspace and TMA-reduce-adds it into `out`, while the CTA's next tile is
    /// computed. `comm_ctas` is 0 and there are no tail CTAs; N % 8 == 0.
    Epilogue = 6,
    /// World size 1: there is nothing to reduce, so no fused kernel runs. The plain
    /// GEMM's kernel for the tile ([`crate::gemm::launch`], its last wave split as
    /// [`FusedConfig::split_slices`] says, in the workspace's split slots and counts)
    /// computes `out` on every SM; no communication CTAs, no flags, no trace events. (The
    /// fused kernels' one-shot path at world size 1 gave SMs to communication CTAs that
    /// only copied the rank's own partial into `out`: 0.63-0.97x of cuBLAS, run 214,
    /// bench/NOTES.md 25.4.) Any N the tile's epilogue takes. Host side only: the device
    /// code has no such path.
    Local = 7,
}

impl CommPath {
    /// The path a shape takes.
    pub fn choose(n: u32, tile: TileConfig, world: u32) -> Self {
        if !n.is_multiple_of(8) {
            Self::Scalar
        } else if world <= 2 {
            Self::TmaOneShot
        } else if world != 0 && tile.bm.is_multiple_of(world) {
            Self::Tma
        } else {
            Self::Vec16
        }
    }
    /// The path of a fused call: [`Self::Epilogue`] on 2 ranks with a TMA-store tile and
    /// N % 8 == 0, on a GPU the rank has to itself (`own_gpu`: a peer's CTAs on the same
    /// SMs could not make progress while this rank's storers wait); else [`Self::choose`].
    ///
    /// Why: the epilogue path computes on every SM and copies each wave's tiles to the
    /// peer while the next wave is computed, where the one-shot path gives up SMs to
    /// communication CTAs (256 tiles on 116 compute CTAs need 3 waves, on 132 two).
    /// Measured on 2x H200, one process, with the clock pace (bench/NOTES.md 7.2, run
    /// 22, epilogue vs one-shot, ms): o-proj M=1024 0.137 vs 0.158, M=4096 0.429 vs
    /// 0.444, M=16384 1.74 vs 1.83, DeepSeek M=8192 1.54 vs 1.74, M=129 0.055 vs 0.060;
    /// within 3.2% where one-shot was faster (down-proj M=2048 0.742 vs 0.719, M=16384
    /// 5.97 vs 5.84, M=2049 0.267 vs 0.261). The default so chosen was validated x100
    /// in both communicator modes in runs 23 and 25 (never below 0.97x of cuBLAS + NCCL;
    /// per process, o-proj M=16384 took 1.83-1.93 ms against one-shot's 1.80 in run 22).
    ///
    /// With one rank, [`Self::Local`]: the plain GEMM alone.
    pub fn choose_fused(n: u32, tile: TileConfig, world: u32, own_gpu: bool) -> Self {
        if world == 1 {
            Self::Local
        } else if own_gpu && Self::Epilogue.check(n, tile, world).is_ok() {
            Self::Epilogue
        } else {
            Self::choose(n, tile, world)
        }
    }

    /// Paths that exist for `tile` and `world` (what the catalog instantiates). A
    /// clustered tile (`cluster_m > 1`), a swapped-operand or a column-fitted one has the
    /// epilogue path with world size 2 only ([`TileConfig::fused_epilogue_only`]) (no communication CTAs inside a cluster; the other paths
    /// split tiles into row slices of BM rows), and no path otherwise. World size 1 has
    /// [`Self::Local`] first, for every tile (it runs no fused kernel:
    /// [`Self::runs_fused_kernel`]).
    pub fn all_for(tile: TileConfig, world: u32) -> Vec<Self> {
        let mut v = Self::fused_for(tile, world);
        if world == 1 {
            v.insert(0, Self::Local);
        }
        v
    }

    /// [`Self::all_for`] less [`Self::Local`]: the paths a fused kernel exists for (what
    /// the catalog compiles).
    pub(crate) fn fused_for(tile: TileConfig, world: u32) -> Vec<Self> {
        // A cluster's CTAs all compute (no communication CTAs inside a cluster); a
        // swapped-operand tile's C region is not the row slices the other paths split; a
        // column-fitted tile's staging is not their 64-column boxes. No path for a tile
        // without a fused kernel.
        if tile.validate().is_err() {
            return Vec::new();
        }
        if tile.fused_epilogue_only() {
            return if world == 2 && tile.epilogue == crate::gemm::Epilogue::TmaStore { vec![Self::Epilogue] } else { Vec::new() };
        }
        let mut v = vec![Self::Vec16, Self::Scalar];
        if world != 0 && tile.bm.is_multiple_of(world) {
            v.insert(0, Self::Tma);
        }
        if world <= 2 {
            v.insert(0, Self::TmaOneShot);
        }
        if world == 2 && tile.epilogue == crate::gemm::Epilogue::TmaStore {
            v.insert(0, Self::TmaReduce);
            v.insert(0, Self::Push);
            v.insert(0, Self::Epilogue);
        }
        v
    }

    /// Whether a fused kernel runs this path (all but [`Self::Local`], which launches
    /// the plain GEMM's kernel): what the catalog compiles.
    pub fn runs_fused_kernel(self) -> bool {
        self != Self::Local
    }

    /// Checks that this path exists for the tile and world size and can move an
    /// N-column output (for an all-reduce: [`Self::check_for`]).
    pub fn check(self, n: u32, tile: TileConfig, world: u32) -> Result<()> {
        self.check_for(n, tile, world, Collective::AllReduce)
    }

    /// [`Self::check`] for a call ending with `collective`: the paths a refusal lists are
    /// those of the tile and world size that [`Collective::runs_on`].
    pub fn check_for(self, n: u32, tile: TileConfig, world: u32, collective: Collective) -> Result<()> {
        if self == Self::Local && world != 1 {
            return Err(invalid("comm_path", format!("local is the one-rank path (the plain GEMM alone), and this group has {world} ranks")));
        }
        let available: Vec<Self> = Self::all_for(tile, world).into_iter().filter(|&p| collective.runs_on(p)).collect();
        if !available.contains(&self) {
            return Err(invalid(
                "comm_path",
                format!("{} is not available for {tile} with world size {world} (available: {})", self.name(), {
                    let v = available.iter().map(|p| p.name()).collect::<Vec<_>>();
                    if v.is_empty() { "none: clustered, swapped-operand and column-fitted tiles take the epilogue path with world size 2 only, or local with one rank".to_string() } else { v.join(", ") }
                }),
            ));
        }
        self.check_n(n)
    }

    /// [`Self::check`]'s rule on N alone: a path that [`Self::needs_16_byte_rows`] needs
    /// N % 8 == 0 (the bench checks every listed shape with it before any GPU is opened).
    pub fn check_n(self, n: u32) -> Result<()> {
        if self.needs_16_byte_rows() && !n.is_multiple_of(8) {
            return Err(invalid("comm_path", format!("{} needs N % 8 == 0 (16-byte rows), got N={n}; use scalar", self.name())));
        }
        Ok(())
    }

    /// Whether the path moves rows in 16-byte pieces, so needs N % 8 == 0: every path but
    /// scalar and local ([`Self::check`]).
    pub fn needs_16_byte_rows(self) -> bool {
        self != Self::Scalar && self != Self::Local
    }

    /// Command-line name: `tma`, `vec16`, `scalar`, `one-shot`, `reduce`, `push`, `epilogue`,
    /// `local`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tma => "tma",
            Self::Vec16 => "vec16",
            Self::Scalar => "scalar",
            Self::TmaOneShot => "one-shot",
            Self::TmaReduce => "reduce",
            Self::Push => "push",
            Self::Epilogue => "epilogue",
            Self::Local => "local",
        }
    }

    /// Whether communication CTAs claim tiles from a shared counter (so tail CTAs can
    /// join): the one-shot, reduce and push paths.
    pub fn claims_tiles(self) -> bool {
        matches!(self, Self::TmaOneShot | Self::TmaReduce | Self::Push)
    }

    /// Whether the epilogue stores the own partial into `out` and the peer's tile is
    /// TMA-reduce-added into it (world 2, TMA-store tiles only): the reduce, push and
    /// epilogue paths.
    pub fn adds_into_out(self) -> bool {
        matches!(self, Self::TmaReduce | Self::Push | Self::Epilogue)
    }

    /// Whether the path runs on dedicated communication CTAs (`comm_ctas` >= 1): every
    /// path but [`Self::Epilogue`], whose compute CTAs all-reduce their own tiles, and
    /// [`Self::Local`], which communicates nothing (`comm_ctas` == 0).
    pub fn has_comm_ctas(self) -> bool {
        !matches!(self, Self::Epilogue | Self::Local)
    }

    /// Every path.
    pub const ALL: [Self; 8] =
        [Self::Epilogue, Self::TmaOneShot, Self::TmaReduce, Self::Push, Self::Tma, Self::Vec16, Self::Scalar, Self::Local];

    /// Looks a path up by its [`Self::name`].
    pub fn by_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    fn tag(self) -> &'static str {
        match self {
            Self::Tma => "tma",
            Self::TmaOneShot => "tma1",
            // Push runs TmaReduce's kernel with other tensor maps.
            Self::TmaReduce | Self::Push => "tmar",
            Self::Epilogue => "tmae",
            Self::Vec16 => "v16",
            Self::Scalar => "v2",
            // (no kernel of this name exists: source refuses the path)
            Self::Local => "local",
        }
    }
    fn cpp(self) -> &'static str {
        match self {
            Self::Tma => "mk::CommPath::Tma",
            Self::TmaOneShot => "mk::CommPath::TmaOneShot",
            Self::TmaReduce | Self::Push => "mk::CommPath::TmaReduce",
            Self::Epilogue => "mk::CommPath::Epilogue",
            Self::Vec16 => "mk::CommPath::Vec16",
            Self::Scalar => "mk::CommPath::Scalar",
            // (never emitted: `source` refuses the local path before it builds a kernel)
            Self::Local => "void",
        }
    }
}

/// The collective a fused call ends with: every rank gets the whole sum, or a block of its
/// rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Collective {
    /// Every rank's `out` is the sum over ranks, \[M, N\].
    #[default]
    AllReduce,
    /// Rank r's `out` is rows \[r M / world, (r + 1) M / world) of the sum, \[M / world, N\]
    /// (as `torch.distributed.reduce_scatter_tensor` splits dim 0); M % world == 0. Runs on
    /// [`CommPath::Epilogue`] (each rank copies only the tiles that meet the peer's rows,
    /// and adds only those that meet its own: half the all-reduce's bytes each way),
    /// [`CommPath::Vec16`] and [`CommPath::Scalar`] (each rank sums its rows from every
    /// rank's partial; no gather), and [`CommPath::Local`] (one rank: the plain GEMM).
    ReduceScatter,
}

impl Collective {
    /// `all-reduce` or `reduce-scatter`.
    pub fn name(self) -> &'static str {
        match self {
            Self::AllReduce => "all-reduce",
            Self::ReduceScatter => "reduce-scatter",
        }
    }

    /// Whether `path` can end with this collective.
    pub fn runs_on(self, path: CommPath) -> bool {
        match self {
            Self::AllReduce => true,
            Self::ReduceScatter => matches!(path, CommPath::Epilogue | CommPath::Vec16 | CommPath::Scalar | CommPath::Local),
        }
    }

    /// Rows of `out` per rank: M, or M / world for a reduce-scatter ([`Self::check`] first).
    pub fn out_rows(self, m: u32, world: u32) -> u32 {
        match self {
            Self::AllReduce => m,
            Self::ReduceScatter => m / world.max(1),
        }
    }

    /// [`Self::check`]'s rule on the shape alone: a reduce-scatter needs M % world == 0
    /// (`shape`).
    pub fn check_m(self, shape: GemmShape, world: u32) -> Result<()> {
        if self == Self::ReduceScatter && (world == 0 || !shape.m.is_multiple_of(world)) {
            return Err(invalid(
                "shape",
                format!("a reduce-scatter gives each of the {world} ranks M / world rows, so M must be a multiple of the world size; got M={}", shape.m),
            ));
        }
        Ok(())
    }

    /// Checks the rules this collective adds: a reduce-scatter needs M % world == 0
    /// (`shape`) and a path that [`Self::runs_on`] (`comm_path`).
    pub fn check(self, shape: GemmShape, path: CommPath, world: u32) -> Result<()> {
        self.check_m(shape, world)?;
        if !self.runs_on(path) {
            return Err(invalid(
                "comm_path",
                format!("a reduce-scatter runs on the epilogue, vec16 or scalar paths (local with one rank), not {}", path.name()),
            ));
        }
        Ok(())
    }
}

/// Row blocks per tile in the one-shot path: its TMA boxes are [BM / this, BN]
/// (`mk::OneShotSmem::kItemsPerTile`, checked when the kernel compiles).
pub const ONE_SHOT_ITEMS_PER_TILE: u32 = 4;

/// Consecutive tiles one claim of a tile-claiming path takes (`mk::kClaimTiles`, checked
/// when the kernel compiles): a producer waits for all of them, up to the timeout per
/// rank's flag each, before loading any.
pub const ONE_SHOT_CLAIM_TILES: u32 = 2;

/// Shared memory the [`CommPath::Epilogue`] kernel needs beyond its tile's
/// [`TileConfig::smem_bytes`] (an mbarrier; `mk::kEpilogueExtraSmem`, checked when the
/// kernel compiles).
pub const EPILOGUE_EXTRA_SMEM_BYTES: u32 = 16;

/// Dynamic shared memory of one fused launch, bytes.
pub fn smem_bytes(tile: TileConfig, path: CommPath) -> u32 {
    tile.smem_bytes() + if path == CommPath::Epilogue { EPILOGUE_EXTRA_SMEM_BYTES } else { 0 }
}

/// Name of the fused all-reduce kernel for a tile config, world size and communication path.
pub fn kernel_name(tile: TileConfig, world: u32, path: CommPath) -> String {
    kernel_name_for(tile, world, path, Collective::AllReduce)
}

/// Name of the fused kernel for a tile config, world size, communication path and
/// collective (a reduce-scatter's kernels end in `_rs`).
pub fn kernel_name_for(tile: TileConfig, world: u32, path: CommPath, collective: Collective) -> String {
    let rs = if collective == Collective::ReduceScatter { "_rs" } else { "" };
    format!("mkernel_gemm_allreduce_{}_w{}_{}{rs}", tile.tag(), world, path.tag())
}

/// Source of the fused all-reduce kernel for a tile config, world size and communication path.
pub fn source(tile: TileConfig, world: u32, path: CommPath) -> Result<KernelSource> {
    source_for(tile, world, path, Collective::AllReduce)
}

/// Whether a fused kernel ending with `collective` exists for the tile, world size and
/// path (what the catalog compiles): every path [`CommPath::fused_for`] gives for an
/// all-reduce; for a reduce-scatter those that [`Collective::runs_on`], from 2 ranks.
pub fn has_kernel(tile: TileConfig, world: u32, path: CommPath, collective: Collective) -> bool {
    CommPath::fused_for(tile, world).contains(&path) && collective.runs_on(path) && (collective == Collective::AllReduce || world >= 2)
}

/// Source of the fused kernel for a tile config, world size, communication path and
/// collective (a reduce-scatter's: the same code with `kScatter`, [`has_kernel`]).
pub fn source_for(tile: TileConfig, world: u32, path: CommPath, collective: Collective) -> Result<KernelSource> {
    if !path.runs_fused_kernel() {
        return Err(invalid("comm_path", format!("the {} path runs the plain GEMM's kernel (gemm::source), no fused one", path.name())));
    }
    tile.validate()?;
    if world == 0 || world as usize > MAX_RANKS {
        return Err(invalid("world_size", format!("must be 1..={MAX_RANKS}, got {world}")));
    }
    // (clustered and swapped-operand tiles have the epilogue path with 2 ranks only)
    if !CommPath::all_for(tile, world).contains(&path) {
        return Err(invalid("comm_path", format!("{} has no kernel for {tile} with world size {world}", path.name())));
    }
    if path == CommPath::Tma && !tile.bm.is_multiple_of(world) {
        return Err(invalid("world_size", format!("the TMA path needs BM ({}) divisible by the world size ({world})", tile.bm)));
    }
    if path == CommPath::TmaOneShot && world > 2 {
        return Err(invalid("world_size", format!("the one-shot path is for world sizes 1 and 2, got {world}")));
    }
    if path.adds_into_out() && (world != 2 || tile.epilogue != crate::gemm::Epilogue::TmaStore) {
        return Err(invalid("comm_path", format!("the {} path needs world size 2 and a TMA-store tile, got {world} and {tile}", path.name())));
    }
    if collective == Collective::ReduceScatter && !has_kernel(tile, world, path, collective) {
        return Err(invalid(
            "comm_path",
            format!("a reduce-scatter has a fused kernel on the epilogue, vec16 and scalar paths from 2 ranks, not {} with world size {world}", path.name()),
        ));
    }
    let name = kernel_name_for(tile, world, path, collective);
    let entry = format!(
        "#include \"ops/gemm_allreduce.cuh\"\n{wrapper}\
         extern \"C\" __global__ void __launch_bounds__({threads}, 1){cluster} {name}(const __grid_constant__ AllReduceParams p) {{\n\
         \x20 mk::gemm_allreduce_kernel<{cfg_ty}, {world}, {path_ty}, {scatter}>(p);\n}}\n\
         static_assert({cfg_ty}::kSmemBytes == {smem}, \"shared memory differs from the host's TileConfig::smem_bytes\");\n{check}",
        wrapper = crate::gemm::wgmma_wrapper_for(tile),
        smem = tile.smem_bytes(),
        threads = tile.threads(),
        cluster = tile.cluster_attribute(),
        cfg_ty = tile.cpp_type(),
        path_ty = path.cpp(),
        scatter = collective == Collective::ReduceScatter,
        check = if path.claims_tiles() {
            format!(
                "static_assert(mk::OneShotSmem<{}, {world}>::kItemsPerTile == {ONE_SHOT_ITEMS_PER_TILE}, \"one-shot box rows differ from the host's\");\n\
                 static_assert(mk::kClaimTiles == {ONE_SHOT_CLAIM_TILES}, \"tiles per claim differ from the host's\");\n",
                tile.cpp_type()
            )
        } else if path == CommPath::Epilogue {
            format!("static_assert(mk::kEpilogueExtraSmem == {EPILOGUE_EXTRA_SMEM_BYTES}, \"epilogue shared memory differs from the host's\");\n")
        } else {
            String::new()
        },
    );
    Ok(KernelSource { name, source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
}

/// Where a traced launch records its events (`mkernel::trace` reads them back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceTarget {
    /// Device address, in the launch's context, of a zeroed buffer of
    /// [`TraceTarget::bytes`]`(capacity)` bytes: a `FusedTraceHeader`, then the events.
    pub ptr: u64,
    /// Events the buffer holds; later ones are counted in the header, not stored.
    pub capacity: u32,
}

impl TraceTarget {
    /// Bytes of a trace buffer for `capacity` events.
    pub fn bytes(capacity: u32) -> usize {
        std::mem::size_of::<crate::params::FusedTraceHeader>()
            + capacity as usize * std::mem::size_of::<crate::params::FusedTraceEvent>()
    }
}

/// Everything one rank's launch needs besides the operands.
#[derive(Debug, Clone, Copy)]
pub struct RankBuffers {
    /// This rank.
    pub rank: u32,
    /// Ranks of the group.
    pub world: u32,
    /// Base address of every rank's workspace as mapped in this rank's context.
    pub workspace: [u64; MAX_RANKS],
    /// Layout of every workspace.
    pub layout: WorkspaceLayout,
    /// Device-visible address of this rank's host-mapped `KernelStatus`.
    pub status: u64,
}

impl RankBuffers {
    /// Checks that the rank lies in the world and the layout is one [`WorkspaceLayout::new`]
    /// makes for this world size (the fused kernels' own validations start here).
    ///
    /// Errors: `rank` (outside the world, or a layout for another world size), `layout`.
    pub fn check(&self) -> Result<()> {
        let (world, l) = (self.world, self.layout);
        if self.rank >= world || world as u64 != l.world {
            return Err(invalid("rank", format!("rank {} of world {world} does not fit a workspace laid out for {} ranks", self.rank, l.world)));
        }
        if WorkspaceLayout::new(l.capacity_elems, world).ok() != Some(l) {
            return Err(invalid("layout", format!("must be what WorkspaceLayout::new makes for its capacity and world size, got {l:?}")));
        }
        Ok(())
    }

    /// This rank's split workspace for the plain GEMM of [`CommPath::Local`]: the split
    /// scratch's fp32 slots and the layout's split counts (zeroed at allocation, left zero
    /// by every call). Only the local path (one rank, calls ordered by the communicator)
    /// uses the counts.
    pub fn local_split_workspace(&self) -> SplitWorkspace {
        let base = self.workspace[self.rank as usize % MAX_RANKS];
        SplitWorkspace {
            scratch: base + self.layout.split_offset(),
            scratch_bytes: self.layout.split_bytes(),
            counts: base + self.layout.split_counts_offset(),
            counts_len: crate::gemm::SPLIT_COUNTS,
        }
    }
}

/// Checks the rules the fused kernel adds to [`GemmShape::validate`].
pub fn validate(shape: GemmShape, cfg: &FusedConfig, bufs: &RankBuffers) -> Result<()> {
    cfg.check_tile()?;
    cfg.tile.check_output(shape.n)?;
    cfg.path.check(shape.n, cfg.tile, bufs.world)?;
    if cfg.diag_skip > 3 || (cfg.diag_skip != 0 && cfg.path != CommPath::Epilogue) {
        return Err(invalid(
            "cfg",
            format!(
                "diag_skip ({}, 0..=3) applies to the epilogue path only, not {}",
                cfg.diag_skip,
                cfg.path.name()
            ),
        ));
    }
    // The layout's fields are public: one not made by WorkspaceLayout::new could wrap the
    // kernel's 32-bit flag stride or overflow its offsets.
    let l = bufs.layout;
    if l.world > u32::MAX as u64 || WorkspaceLayout::new(l.capacity_elems, l.world as u32).ok() != Some(l) {
        return Err(invalid("layout", format!("must be what WorkspaceLayout::new makes for its capacity and world size, got {l:?}")));
    }
    let elems = shape.m as u64 * shape.n as u64;
    if elems > bufs.layout.capacity_elems {
        return Err(invalid(
            "out",
            format!(
                "M*N = {elems} elements exceeds the communicator workspace ({} elements); {}",
                bufs.layout.capacity_elems,
                workspace_remedy(elems, "split the call's rows (M) or columns (N)")
            ),
        ));
    }
    // (the local path raises no flags: its plain-GEMM tiles, narrower than the fused
    // catalog's 64 x 128 that `max_tiles` counts on, may be more than the flags: helper-53)
    if cfg.path != CommPath::Local && cfg.tile.tiles(shape.m, shape.n) > bufs.layout.max_tiles {
        // Unreachable for shapes within the capacity (see `WorkspaceLayout::max_tiles`).
        return Err(invalid(
            "out",
            format!("{} tiles exceed the workspace's {} flags; raise max_output_elems", cfg.tile.tiles(shape.m, shape.n), bufs.layout.max_tiles),
        ));
    }
    if bufs.world == 0 || bufs.world as usize > MAX_RANKS {
        return Err(invalid("world_size", format!("must be 1..={MAX_RANKS}, got {}", bufs.world)));
    }
    if bufs.world as u64 != bufs.layout.world || bufs.rank >= bufs.world {
        return Err(invalid("rank", format!("rank {} of world {} does not fit a workspace laid out for {} ranks", bufs.rank, bufs.world, bufs.layout.world)));
    }
    if !cfg.path.has_comm_ctas() {
        if cfg.comm_ctas != 0 {
            return Err(invalid(
                "comm_ctas",
                format!("must be 0 on the {} path (it has no communication CTAs), got {}", cfg.path.name(), cfg.comm_ctas),
            ));
        }
        if cfg.grid == 0 {
            return Err(invalid("grid", "must be at least 1 CTA, got 0"));
        }
        // (the local path's plain GEMM launch makes its own grid of whole clusters)
        if !cfg.grid.is_multiple_of(cfg.tile.cluster_size()) && cfg.path != CommPath::Local {
            return Err(invalid(
                "grid",
                format!("must be a multiple of the tile's cluster size ({}) with {}, got {} CTAs", cfg.tile.cluster_size(), cfg.tile, cfg.grid),
            ));
        }
    } else if cfg.comm_ctas == 0 || cfg.comm_ctas >= cfg.grid {
        return Err(invalid(
            "comm_ctas",
            format!("must be in 1..{} (at least one CTA must compute), got {}", cfg.grid, cfg.comm_ctas),
        ));
    }
    cfg.check_pace()?;
    cfg.check_split(shape, bufs.layout.split_bytes())?;
    cfg.check_tail_ctas()
}

/// Launches one rank's fused kernel on `stream` (on [`CommPath::Local`], one rank, the
/// plain GEMM's kernel for `cfg.tile` instead: [`crate::gemm::launch`], split in
/// `cfg.split_slices` in [`RankBuffers::local_split_workspace`]).
///
/// `collective` says what `out` receives: the sum \[M, N\], or this rank's rows of it
/// \[M / world, N\] ([`Collective::check`]: M % world == 0 and a path that can).
///
/// # Safety
/// `a`, `b`, `out` must be valid device buffers of the shape's sizes (`out`: the
/// collective's) in `stream`'s context, and every `bufs.workspace[q]` (q < world) must be mapped in it, with all
/// ranks launching the same shape and config (a collective call).
/// `trace`, when given, must point to a zeroed buffer of [`TraceTarget::bytes`] bytes
/// in that context.
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    a: u64,
    b: u64,
    out: u64,
    shape: GemmShape,
    cfg: FusedConfig,
    collective: Collective,
    bufs: &RankBuffers,
    timeout: Duration,
    trace: Option<TraceTarget>,
) -> Result<()> {
    validate(shape, &cfg, bufs)?;
    collective.check(shape, cfg.path, bufs.world)?;
    if cfg.path == CommPath::Local {
        // World size 1: the plain GEMM's kernel for the tile, straight into `out`, its last
        // wave split as planned in the layout's split slots and counts (no flags; a trace
        // stays empty; serialized after the work before it, as the fused kernel is).
        let split = if cfg.split_slices > 1 { LastWaveSplit::Slices(cfg.split_slices) } else { LastWaveSplit::Off };
        crate::gemm::launch(rt, stream, a, b, out, shape, Some(cfg.tile), timeout, split, Some(bufs.local_split_workspace()), crate::driver::LaunchOrder::Serialized)?;
        return Ok(());
    }
    let (tma_a, tma_b) = crate::gemm::operand_maps(a, b, shape, cfg.tile)?;
    let l = bufs.layout;
    let own_partial = bufs.workspace[bufs.rank as usize] + l.partial_offset();
    let mut p = AllReduceParams {
        tma_a,
        tma_b,
        // (the epilogue path's storer stores to `out` through tma_c_out instead)
        tma_c: if cfg.path == CommPath::Epilogue { Default::default() } else { crate::gemm::output_map(own_partial, shape, cfg.tile)? },
        ..scalar_params(out, shape, &cfg, collective, bufs, timeout, trace)
    };
    let path = cfg.path;
    let box_rows = match path {
        _ if path.claims_tiles() => cfg.tile.bm / ONE_SHOT_ITEMS_PER_TILE,
        _ => cfg.tile.bm / bufs.world.max(1),
    };
    // Box maps of the communication CTAs (none on the epilogue path).
    let tma = path != CommPath::Vec16 && path != CommPath::Scalar && path.has_comm_ctas();
    if path.adds_into_out() {
        // (a reduce-scatter's `out` is this rank's rows alone; the kernel shifts the rows)
        let out_shape = GemmShape { m: collective.out_rows(shape.m, bufs.world), ..shape };
        p.tma_c_out = crate::gemm::output_map(out, out_shape, cfg.tile)?;
    }
    let matrix = |ptr: u64| Tensor2d { ptr, rows: shape.m as u64, cols: shape.n as u64, row_stride_bytes: 2 * shape.n as u64 };
    for q in 0..bufs.world as usize {
        let base = bufs.workspace[q];
        p.partial[q] = base + l.partial_offset();
        p.ready[q] = base + l.ready_offset();
        p.reduced[q] = base + l.reduced_offset();
        p.exit_flags[q] = base + l.exit_offset();
        if tma {
            p.tma_partial[q] = driver::tma_2d_bf16(matrix(p.partial[q]), box_rows, cfg.tile.bn, Swizzle::None, "workspace")?;
        }
    }
    if tma {
        p.tma_out = driver::tma_2d_bf16(matrix(out), box_rows, cfg.tile.bn, Swizzle::None, "out")?;
    }
    if path == CommPath::Push {
        // World 2 (`CommPath::check`). The epilogue's first store goes to the peer's
        // partial region, which on this path holds what the peer received; this rank's
        // communication CTAs read the own region, where the peer pushed its partial.
        let (me, peer) = (bufs.rank as usize, 1 - bufs.rank as usize);
        p.tma_c = crate::gemm::output_map(p.partial[peer], shape, cfg.tile)?;
        p.tma_partial[peer] = p.tma_partial[me];
    }
    if path == CommPath::Epilogue {
        // World 2. The epilogue TMA-stores into `out` (tma_c_out); the storer copies each
        // tile into the peer's partial region (which holds what the peer received, by
        // address) and TMA-loads the peer's copy back from its own, in the staging
        // tile's format (box [BM, 64], 128B swizzle, or a column-fitted tile's one
        // unswizzled [BM, BN] box) like `out`'s map.
        let me = bufs.rank as usize;
        p.tma_partial[me] = crate::gemm::output_map(p.partial[me], shape, cfg.tile)?;
    }
    let f = rt.function_named(stream.context(), &kernel_name_for(cfg.tile, bufs.world, path, collective), || {
        source_for(cfg.tile, bufs.world, path, collective)
    })?;
    // (check_tail_ctas, through validate: the sum fits MAX_LAUNCH_CTAS)
    driver::launch(&f, LaunchDims { grid: cfg.grid.saturating_add(cfg.tail_ctas), block: cfg.tile.threads(), smem_bytes: smem_bytes(cfg.tile, path) }, stream, &p)
}

/// The fields of [`AllReduceParams`] that need no driver call (no TMA maps, no workspace
/// addresses of the peers): what `launch` passes from `cfg`, the shape, this rank's
/// buffers, the timeout and the trace. Separate so a test can check them without a GPU.
fn scalar_params(
    out: u64,
    shape: GemmShape,
    cfg: &FusedConfig,
    collective: Collective,
    bufs: &RankBuffers,
    timeout: Duration,
    trace: Option<TraceTarget>,
) -> AllReduceParams {
    let l = bufs.layout;
    AllReduceParams {
        out,
        control: bufs.workspace[bufs.rank as usize] + l.control_offset(),
        status: bufs.status,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        rank: bufs.rank,
        num_comm_ctas: cfg.comm_ctas,
        num_tail_ctas: cfg.tail_ctas,
        flag_stride: l.max_tiles as u32,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        trace: trace.map_or(0, |t| t.ptr),
        trace_capacity: trace.map_or(0, |t| t.capacity),
        epilogue_pace: cfg.pace as u32,
        split_slices: cfg.split_slices,
        split_scratch: bufs.workspace[bufs.rank as usize] + l.split_offset(),
        diag_skip: cfg.diag_skip,
        scatter_rows: match collective {
            Collective::AllReduce => 0,
            Collective::ReduceScatter => collective.out_rows(shape.m, bufs.world),
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::Epilogue;

    /// A hand-built tile outside the catalog (the fields are public) is refused by name,
    /// never an arithmetic overflow: source, check_split, choose_split.
    #[test]
    fn tiles_outside_the_catalog_are_refused_not_overflowed() {
        let huge = TileConfig { bm: u32::MAX, bn: u32::MAX, bk: u32::MAX, stages: u32::MAX, ..TileConfig::WIDE_TMA_STORE };
        let shape = GemmShape { m: 4096, n: 4096, k: 4096 };
        let e = source(huge, 2, CommPath::Epilogue).unwrap_err().to_string();
        assert!(e.contains("`tile`") && e.contains("not a catalog configuration"), "{e}");
        let e = crate::gemm::source(huge).unwrap_err().to_string();
        assert!(e.contains("`tile`"), "{e}");
        let cfg = FusedConfig { tile: huge, comm_ctas: 0, grid: 132, path: CommPath::Epilogue, tail_ctas: 0, pace: EpiloguePace::Clock, split_slices: 4, diag_skip: 0 };
        let e = cfg.check_split(shape, u64::MAX).unwrap_err().to_string();
        assert!(e.contains("`tile`"), "{e}");
        assert_eq!(FusedConfig::choose_split(shape, huge, 132, CommPath::Epilogue, u64::MAX), 1);
    }

    /// Every choice of the configuration reaches the kernel's parameters, the pace and the
    /// diagnostic included (a field left at its default would silently time the default).
    #[test]
    fn launch_parameters_carry_the_configuration() {
        let l = WorkspaceLayout::new(1 << 20, 2).unwrap();
        let bufs = RankBuffers { rank: 1, world: 2, workspace: [0x1000_0000, 0x2000_0000, 0, 0, 0, 0, 0, 0], layout: l, status: 0x3000 };
        let base = FusedConfig { tile: TileConfig::WIDE_TMA_STORE, comm_ctas: 0, grid: 132, path: CommPath::Epilogue, tail_ctas: 0, pace: EpiloguePace::Clock, split_slices: 3, diag_skip: 0 };
        let shape = GemmShape { m: 129, n: 1024, k: 640 };
        let trace = Some(TraceTarget { ptr: 0x4000, capacity: 77 });
        let p = scalar_params(0x5000, shape, &base, Collective::AllReduce, &bufs, Duration::from_millis(1500), trace);
        assert_eq!((p.out, p.status, p.m, p.n, p.k, p.rank), (0x5000, 0x3000, 129, 1024, 640, 1));
        assert_eq!((p.control, p.split_scratch), (0x2000_0000 + l.control_offset(), 0x2000_0000 + l.split_offset()));
        assert_eq!((p.timeout_ns, p.trace, p.trace_capacity, p.split_slices, p.flag_stride), (1_500_000_000, 0x4000, 77, 3, l.max_tiles as u32));
        assert_eq!((p.epilogue_pace, p.diag_skip), (EpiloguePace::Clock as u32, 0));
        let on = FusedConfig { pace: EpiloguePace::Sleep, diag_skip: 3, ..base };
        let p = scalar_params(0x5000, shape, &on, Collective::AllReduce, &bufs, Duration::from_secs(1), None);
        assert_eq!((p.epilogue_pace, p.diag_skip, p.trace), (EpiloguePace::Sleep as u32, 3, 0));
        let dedicated = FusedConfig { path: CommPath::TmaOneShot, comm_ctas: 8, tail_ctas: 5, ..base };
        let p = scalar_params(0, shape, &dedicated, Collective::AllReduce, &bufs, Duration::from_secs(1), None);
        assert_eq!((p.num_comm_ctas, p.num_tail_ctas), (8, 5));
    }

    /// A reduce-scatter reaches the kernel as the rows each rank keeps (M / world; 0 for
    /// an all-reduce), and is refused by name where M % world != 0 or the path has none.
    #[test]
    fn reduce_scatter_rows_reach_the_kernel_and_its_rules_are_named() {
        let l = WorkspaceLayout::new(1 << 20, 4).unwrap();
        let bufs = RankBuffers { rank: 3, world: 4, workspace: [0x1000, 0x2000, 0x3000, 0x4000, 0, 0, 0, 0], layout: l, status: 0 };
        let cfg = FusedConfig { tile: TileConfig::WIDE, comm_ctas: 8, grid: 132, path: CommPath::Vec16, tail_ctas: 0, pace: EpiloguePace::Clock, split_slices: 1, diag_skip: 0 };
        let shape = GemmShape { m: 1000, n: 1024, k: 640 };
        let rs = scalar_params(0x5000, shape, &cfg, Collective::ReduceScatter, &bufs, Duration::from_secs(1), None);
        assert_eq!((rs.scatter_rows, rs.out), (250, 0x5000));
        let ar = scalar_params(0x5000, shape, &cfg, Collective::AllReduce, &bufs, Duration::from_secs(1), None);
        assert_eq!(ar.scatter_rows, 0);
        assert_eq!((Collective::ReduceScatter.out_rows(1000, 4), Collective::AllReduce.out_rows(1000, 4)), (250, 1000));
        for path in CommPath::ALL {
            let ok = Collective::ReduceScatter.check(shape, path, 4);
            assert_eq!(ok.is_ok(), matches!(path, CommPath::Epilogue | CommPath::Vec16 | CommPath::Scalar | CommPath::Local), "{path:?}");
            if let Err(e) = ok {
                assert!(e.to_string().contains("`comm_path`") && e.to_string().contains(path.name()), "{e}");
            }
            assert!(Collective::AllReduce.check(GemmShape { m: 1001, ..shape }, path, 4).is_ok());
        }
        let e = Collective::ReduceScatter.check(GemmShape { m: 1001, ..shape }, CommPath::Vec16, 4).unwrap_err().to_string();
        assert!(e.contains("`shape`") && e.contains("M=1001") && e.contains("4 ranks"), "{e}");
        assert!(Collective::ReduceScatter.check(shape, CommPath::Vec16, 0).is_err());
    }

    /// A reduce-scatter's kernels are their own (`_rs`, compiled with kScatter), so the
    /// all-reduce's kernels keep their code; they exist for the epilogue, vec16 and
    /// scalar paths from 2 ranks, and nowhere else.
    #[test]
    fn reduce_scatter_kernels_are_their_own() {
        let t = TileConfig::WIDE_TMA_STORE;
        let (ar, rs) = (Collective::AllReduce, Collective::ReduceScatter);
        assert_eq!(kernel_name_for(t, 2, CommPath::Epilogue, ar), kernel_name(t, 2, CommPath::Epilogue));
        assert_eq!(kernel_name_for(t, 2, CommPath::Epilogue, rs), format!("{}_rs", kernel_name(t, 2, CommPath::Epilogue)));
        let src = source_for(t, 2, CommPath::Epilogue, rs).unwrap();
        assert!(src.source.contains("CommPath::Epilogue, true>(p)"), "the entry instantiates kScatter");
        assert!(source(t, 2, CommPath::Epilogue).unwrap().source.contains("CommPath::Epilogue, false>(p)"));
        for world in 1..=MAX_RANKS as u32 {
            for path in CommPath::ALL {
                let has = has_kernel(t, world, path, rs);
                let want = world >= 2 && CommPath::fused_for(t, world).contains(&path) && matches!(path, CommPath::Epilogue | CommPath::Vec16 | CommPath::Scalar);
                assert_eq!(has, want, "world {world} {path:?}");
                if path.runs_fused_kernel() && !has {
                    let e = source_for(t, world, path, rs).unwrap_err().to_string();
                    assert!(e.contains("`comm_path`") || e.contains("`world_size`"), "world {world} {path:?}: {e}");
                }
                assert_eq!(has_kernel(t, world, path, ar), CommPath::fused_for(t, world).contains(&path));
            }
        }
    }

    #[test]
    fn clustered_tiles_take_the_epilogue_path_whole_tiles_and_even_grids() {
        let c2 = TileConfig::NARROW_TMA_STORE_C2;
        assert_eq!(CommPath::all_for(c2, 2), vec![CommPath::Epilogue]);
        for w in [3, 4, 8] {
            assert!(CommPath::all_for(c2, w).is_empty(), "world {w}");
        }
        // (one rank: the plain GEMM's clustered kernel)
        assert_eq!(CommPath::all_for(c2, 1), vec![CommPath::Local]);
        let e = CommPath::TmaReduce.check(8192, c2, 2).unwrap_err().to_string();
        assert!(e.contains("`comm_path`") && e.contains("available: epilogue"), "{e}");
        let bufs = RankBuffers { rank: 0, world: 2, workspace: [0; MAX_RANKS], layout: WorkspaceLayout::new(1 << 24, 2).unwrap(), status: 0 };
        let shape = GemmShape { m: 1024, n: 8192, k: 4096 };
        let cfg = FusedConfig { tile: c2, comm_ctas: 0, grid: 132, path: CommPath::Epilogue, tail_ctas: 0, pace: EpiloguePace::default(), split_slices: 1, diag_skip: 0 };
        assert!(validate(shape, &cfg, &bufs).is_ok());
        let e = validate(shape, &FusedConfig { grid: 131, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`grid`") && e.contains("multiple of the tile's cluster size (2)"), "{e}");
        // 4352 x 8192 in 128 x 128 tiles: 2176 on 132 CTAs, 64 left over: the unclustered
        // tile splits them, the clustered one takes whole tiles only (helper-31's case).
        let tall = GemmShape { m: 4352, n: 8192, k: 4096 };
        assert!(FusedConfig::choose_split(tall, TileConfig::NARROW_TMA_STORE, 132, CommPath::Epilogue, 1 << 30) > 1);
        assert_eq!(FusedConfig::choose_split(tall, c2, 132, CommPath::Epilogue, 1 << 30), 1);
        let e = validate(shape, &FusedConfig { split_slices: 2, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`split_slices`") && e.contains("no slices"), "{e}");
        let src = source(c2, 2, CommPath::Epilogue).unwrap().source;
        assert!(src.contains("__cluster_dims__(2, 1, 1)") && src.contains(&c2.cpp_type()), "{src}");
    }

    #[test]
    fn epilogue_path_clusters_where_the_plain_rule_does_on_even_grids_without_a_split() {
        let s = |m, n, k| GemmShape { m, n, k };
        let scratch = 1 << 30;
        let (wide, auto) = (TileConfig::WIDE_TMA_STORE, LastWaveSplit::Auto);
        let swapped = |rows| TileConfig::swapped_wide(rows, Epilogue::TmaStore);
        let c = |shape, tile, grid, split| FusedConfig::clustered_epilogue_tile(shape, tile, grid, split, scratch);
        // o-proj M=2048: 512 wide tiles, 116 left over on 132 CTAs (not split): the twin.
        let o2048 = s(2048, 8192, 4096);
        assert_eq!(FusedConfig::choose_split(o2048, wide, 132, CommPath::Epilogue, scratch), 1);
        assert_eq!(c(o2048, wide, 132, auto), TileConfig::WIDE_TMA_STORE_C2);
        // M=2049 on the mid-M rule's 208-row swapped tile: N's 64 blocks pair up.
        let m2049 = s(2049, 8192, 4096);
        assert_eq!(FusedConfig::epilogue_tile(m2049, wide, 132), swapped(208));
        assert_eq!(c(m2049, swapped(208), 132, auto), TileConfig::swapped_wide_c2(208, Epilogue::TmaStore));
        // No twin: an odd grid, an explicit split option (off included: a split sweep
        // varies the split alone), a split Auto would make, K < 4096, an odd number of
        // row blocks, a height not a multiple of 16, a Registers tile.
        assert_eq!(c(o2048, wide, 131, auto), wide);
        assert_eq!(c(m2049, swapped(208), 66 * 2 + 1, auto), swapped(208));
        assert_eq!(c(o2048, wide, 132, LastWaveSplit::Slices(2)), wide);
        assert_eq!(c(o2048, wide, 132, LastWaveSplit::Slices(1)), wide);
        assert_eq!(c(o2048, wide, 132, LastWaveSplit::Off), wide);
        let deepseek = s(2048, 7168, 9216);
        assert!(FusedConfig::choose_split(deepseek, wide, 132, CommPath::Epilogue, scratch) > 1);
        assert_eq!(c(deepseek, wide, 132, auto), wide);
        assert_eq!(c(deepseek, wide, 132, LastWaveSplit::Off), wide);
        assert_eq!(c(s(2048, 8192, 2048), wide, 132, auto), wide);
        assert_eq!(c(s(1152, 8192, 4096), wide, 132, auto), wide);
        assert_eq!(c(m2049, swapped(200), 132, auto), swapped(200));
        assert_eq!(c(s(2049, 8064, 4096), swapped(208), 132, auto), swapped(208));
        assert_eq!(c(o2048, TileConfig::WIDE, 132, auto), TileConfig::WIDE);
        assert_eq!(c(o2048, TileConfig::NARROW_TMA_STORE, 132, auto), TileConfig::NARROW_TMA_STORE);
        // Every twin it gives is in the fused catalog and has the epilogue path.
        for t in [TileConfig::WIDE_TMA_STORE_C2, TileConfig::swapped_wide_c2(208, Epilogue::TmaStore)] {
            assert!(TileConfig::fused_catalog().any(|f| f == t), "{t}");
            assert_eq!(CommPath::all_for(t, 2), vec![CommPath::Epilogue], "{t}");
        }
    }

    #[test]
    fn small_m_narrow_tiles_fill_a_wave_and_split_the_rest() {
        // M=129: 64 x 256 tiles are 96 on 132 CTAs (one partial wave, nothing to split);
        // 64 x 128 ones are 192: a full wave and 60 left over, split in 2 K-slices.
        let s = GemmShape { m: 129, n: 8192, k: 4096 };
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.tiles(s.m, s.n), 96);
        assert_eq!(FusedConfig::choose_split(s, TileConfig::M64_WIDE_TMA_STORE, 132, CommPath::Epilogue, 1 << 30), 1);
        assert_eq!(TileConfig::M64_NARROW_TMA_STORE.tiles(s.m, s.n), 192);
        assert_eq!(FusedConfig::choose_split(s, TileConfig::M64_NARROW_TMA_STORE, 132, CommPath::Epilogue, 1 << 30), 2);
        assert_eq!(CommPath::all_for(TileConfig::M64_NARROW_TMA_STORE, 2)[0], CommPath::Epilogue);
    }

    #[test]
    fn layout_regions_are_aligned_and_disjoint() {
        let l = WorkspaceLayout::new(16384 * 8192 + 3, 2).unwrap();
        let offs = [
            l.partial_offset(),
            l.ready_offset(),
            l.reduced_offset(),
            l.exit_offset(),
            l.barrier_offset(),
            l.control_offset(),
            l.split_offset(),
            l.split_counts_offset(),
            l.bytes(),
        ];
        for w in offs.windows(2) {
            assert!(w[0] < w[1]);
        }
        assert!(offs.iter().all(|o| o % 256 == 0));
        assert!(l.ready_offset() >= l.capacity_elems * 2);
        assert!(l.reduced_offset() - l.ready_offset() >= 2 * l.max_tiles * 4);
        // Skinny shapes inside the capacity fit the flags.
        for (m, n) in [(1u64, 16384 * 8192u64), (8, (16384 * 8192) / 8), (16384 * 8192, 1), (65, 16384 * 8192 / 65), (11585, 11585)] {
            for t in TileConfig::ALL {
                let tiles = t.tiles(m as u32, n as u32);
                assert!(tiles <= l.max_tiles, "{m}x{n} {t}: {tiles} > {}", l.max_tiles);
            }
        }
        assert!(WorkspaceLayout::new(0, 2).is_err());
        assert!(WorkspaceLayout::new(u64::MAX, 2).is_err());
        assert!(WorkspaceLayout::new(1 << 20, 9).is_err());
        // The documented bound itself is accepted, one more is not.
        assert!(WorkspaceLayout::new(MAX_CAPACITY_ELEMS, MAX_RANKS as u32).is_ok());
        let e = WorkspaceLayout::new(MAX_CAPACITY_ELEMS + 1, 2).unwrap_err().to_string();
        assert!(e.contains("`max_output_elems`") && e.contains("2^37"), "{e}");
    }

    #[test]
    fn validation_names_the_rule() {
        let l = WorkspaceLayout::new(1 << 20, 2).unwrap();
        let bufs = RankBuffers { rank: 0, world: 2, workspace: [0; MAX_RANKS], layout: l, status: 0 };
        let cfg = FusedConfig { tile: TileConfig::WIDE, comm_ctas: 8, grid: 132, path: CommPath::TmaOneShot, tail_ctas: 0, pace: EpiloguePace::default(), split_slices: 1, diag_skip: 0 };
        let e = validate(GemmShape { m: 2048, n: 1024, k: 64 }, &cfg, &bufs).unwrap_err().to_string();
        assert!(e.contains("`out`") && e.contains("max_output_elems"), "{e}");
        // The diagnostic is the epilogue path's only (this cfg takes one-shot).
        let e = validate(GemmShape { m: 256, n: 1024, k: 64 }, &FusedConfig { diag_skip: 1, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`cfg`") && e.contains("diag_skip (1") && e.contains("epilogue path only"), "{e}");
        let bad = FusedConfig { comm_ctas: 132, ..cfg };
        let e = validate(GemmShape { m: 64, n: 64, k: 64 }, &bad, &bufs).unwrap_err().to_string();
        assert!(e.contains("`comm_ctas`"), "{e}");
        assert!(validate(GemmShape { m: 1024, n: 1024, k: 64 }, &cfg, &bufs).is_ok());
        let forged = RankBuffers { layout: WorkspaceLayout { max_tiles: 1 << 33, ..l }, ..bufs };
        let e = validate(GemmShape { m: 64, n: 64, k: 64 }, &cfg, &forged).unwrap_err().to_string();
        assert!(e.contains("`layout`") && e.contains("WorkspaceLayout::new"), "{e}");
        let bad_rank = RankBuffers { rank: 2, ..bufs };
        let e = validate(GemmShape { m: 64, n: 64, k: 64 }, &cfg, &bad_rank).unwrap_err().to_string();
        assert!(e.contains("`rank`"), "{e}");
        let odd_tile = FusedConfig { tile: TileConfig { bm: 0, ..TileConfig::WIDE }, ..cfg };
        let e = validate(GemmShape { m: 64, n: 64, k: 64 }, &odd_tile, &bufs).unwrap_err().to_string();
        assert!(e.contains("`tile`"), "{e}");
        let tail = FusedConfig { tail_ctas: 124, ..cfg };
        assert!(validate(GemmShape { m: 1024, n: 1024, k: 64 }, &tail, &bufs).is_ok());
        for bad_tail in [FusedConfig { tail_ctas: 133, ..cfg }, FusedConfig { tail_ctas: 4, path: CommPath::Tma, ..cfg }] {
            let e = validate(GemmShape { m: 1024, n: 1024, k: 64 }, &bad_tail, &bufs).unwrap_err().to_string();
            assert!(e.contains("`tail_ctas`"), "{e}");
        }
        // Every path that does not claim tiles refuses tail CTAs; every one that does takes them.
        for path in CommPath::ALL {
            let c = FusedConfig { path, tail_ctas: 1, ..cfg };
            assert_eq!(c.check_tail_ctas().is_ok(), path.claims_tiles(), "{}", path.name());
            if !path.claims_tiles() {
                let e = c.check_tail_ctas().unwrap_err().to_string();
                assert!(e.contains("`tail_ctas`") && e.contains(path.name()), "{e}");
            }
        }
        // Push and TMA-store tiles: tail CTAs as for reduce; the grid is the bound, inclusive.
        let push = FusedConfig { tile: TileConfig::WIDE_TMA_STORE, path: CommPath::Push, tail_ctas: 132, ..cfg };
        assert!(validate(GemmShape { m: 1024, n: 1024, k: 64 }, &push, &bufs).is_ok());
        // grid + tail beyond one launch's CTAs (or a u32 overflow): refused, not wrapped.
        let huge = FusedConfig { grid: MAX_LAUNCH_CTAS, tail_ctas: 2, ..cfg };
        let e = validate(GemmShape { m: 1024, n: 1024, k: 64 }, &huge, &bufs).unwrap_err().to_string();
        assert!(e.contains("`tail_ctas`") && e.contains("exceeds"), "{e}");
        let overflow = FusedConfig { grid: u32::MAX, comm_ctas: 8, tail_ctas: u32::MAX, ..cfg };
        let e = validate(GemmShape { m: 1024, n: 1024, k: 64 }, &overflow, &bufs).unwrap_err().to_string();
        assert!(e.contains("`grid`"), "{e}");
        let e = FusedConfig { grid: MAX_LAUNCH_CTAS / 2 + 1, tail_ctas: MAX_LAUNCH_CTAS / 2 + 1, ..cfg }.check_tail_ctas().unwrap_err().to_string();
        assert!(e.contains("`tail_ctas`") && e.contains("exceeds"), "{e}");
        // Display never underflows, even for a config validate refuses.
        let _ = FusedConfig { comm_ctas: 200, ..cfg }.to_string();
    }

    #[test]
    fn fused_tiles_use_64_rows_only_below_a_wave() {
        assert_eq!(FusedConfig::choose_tile(129, 8192, 132), TileConfig::M64_WIDE_TMA_STORE);
        assert_eq!(FusedConfig::choose_tile(1, 8192, 132), TileConfig::M64_WIDE_TMA_STORE);
        assert_eq!(FusedConfig::choose_tile(2049, 8192, 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(FusedConfig::choose_tile(1024, 8192, 132), TileConfig::WIDE_TMA_STORE);
        // The plain GEMM keeps 64-row tiles at M=2049 (faster there without communication).
        assert_eq!(TileConfig::choose(2049, 8192, 132), TileConfig::M64_WIDE_TMA_STORE);
    }

    #[test]
    fn epilogue_path_takes_narrow_tiles_only_where_the_final_copy_shrinks_more_than_the_gemm_slows() {
        let pick = |m, n, k| FusedConfig::epilogue_tile(GemmShape { m, n, k }, TileConfig::WIDE_TMA_STORE, 132);
        // Measured on the H200 pair (run 59): narrow faster at o-proj M=1024 only.
        assert_eq!(pick(1024, 8192, 4096), TileConfig::NARROW_TMA_STORE);
        for (m, n, k) in [(2048, 8192, 4096), (4096, 8192, 4096), (1024, 8192, 14336), (3000, 8192, 4096), (16384, 8192, 4096)] {
            assert_eq!(pick(m, n, k), TileConfig::WIDE_TMA_STORE, "M={m} N={n} K={k}");
        }
        // The same shape with a longer K (a longer GEMM, the same copy) keeps wide tiles;
        // a shorter one takes narrow ones (unmeasured; a two-stage model agrees).
        assert_eq!(pick(1024, 8192, 16384), TileConfig::WIDE_TMA_STORE);
        assert_eq!(pick(1024, 8192, 1024), TileConfig::NARROW_TMA_STORE);
        // Other tiles (and a grid of 0) pass through.
        for t in [TileConfig::NARROW_TMA_STORE, TileConfig::WIDE, TileConfig::WIDE_TMA_STORE_C2] {
            assert_eq!(FusedConfig::epilogue_tile(GemmShape { m: 1024, n: 8192, k: 4096 }, t, 132), t);
        }
        assert_eq!(FusedConfig::epilogue_tile(GemmShape { m: 1024, n: 8192, k: 4104 }, TileConfig::M64_WIDE_TMA_STORE, 132), TileConfig::M64_WIDE_TMA_STORE);
        assert_eq!(FusedConfig::epilogue_tile(GemmShape { m: 1024, n: 8192, k: 4096 }, TileConfig::WIDE_TMA_STORE, 0), TileConfig::WIDE_TMA_STORE);
    }

    #[test]
    fn epilogue_path_takes_swapped_tiles_for_small_m() {
        let s = |m, n, k| GemmShape { m, n, k };
        let m64 = TileConfig::M64_WIDE_TMA_STORE;
        // Run 106: M=129 on 64 x 136 swapped tiles (128 tiles, one wave of 132).
        assert_eq!(FusedConfig::choose_tile(129, 8192, 132), m64);
        assert_eq!(FusedConfig::epilogue_tile(s(129, 8192, 4096), m64, 132), TileConfig::swapped_tma_store(136));
        assert_eq!(FusedConfig::epilogue_tile(s(1, 512, 64), m64, 132), TileConfig::swapped_tma_store(8));
        // Not with two waves of them, K % 64 != 0, M > 256, or a tile without a TMA store.
        assert_eq!(FusedConfig::epilogue_tile(s(129, 8192, 4096), m64, 127), m64);
        assert_eq!(FusedConfig::epilogue_tile(s(129, 8192, 4104), m64, 132), m64);
        // (M=257: the 128-row fitted tile instead, epilogue_path_takes_fitted_swapped_tiles_for_mid_m)
        assert_eq!(FusedConfig::epilogue_tile(s(257, 8192, 4096), m64, 132), TileConfig::swapped_wide(136, Epilogue::TmaStore));
        assert_eq!(FusedConfig::epilogue_tile(s(129, 8192, 4096), TileConfig::M64_WIDE, 132), TileConfig::M64_WIDE);
        // The chosen tile takes the epilogue path, unsplit.
        let t = TileConfig::swapped_tma_store(136);
        assert!(CommPath::Epilogue.check(8192, t, 2).is_ok());
        assert_eq!(CommPath::all_for(t, 2), vec![CommPath::Epilogue]);
        assert!(CommPath::all_for(t, 4).is_empty() && CommPath::TmaOneShot.check(8192, t, 2).is_err());
        assert_eq!(FusedConfig::choose_split(s(129, 2048, 4096), t, 132, CommPath::Epilogue, 1 << 30), 1);
        // No kernel source for a path the tile does not have (a named error, not NVRTC's).
        for (w, path) in [(2, CommPath::TmaOneShot), (2, CommPath::Vec16), (4, CommPath::Tma), (4, CommPath::Epilogue)] {
            let e = source(t, w, path).unwrap_err().to_string();
            assert!(e.contains("`comm_path`") && e.contains("no kernel"), "{e}");
        }
        let e = CommPath::TmaOneShot.check(8192, t, 2).unwrap_err().to_string();
        assert!(e.contains("one-shot") && e.contains("available: epilogue"), "{e}");
    }

    #[test]
    fn small_m_reaches_the_epilogue_path_with_the_narrow_tiles_tma_store_twin() {
        let s = |m, n, k| GemmShape { m, n, k };
        // Run 113: M=128 and 256 took the one-shot path with 128 x 128 Registers tiles.
        for (m, n) in [(128, 8192), (256, 8192), (256, 7168), (512, 1024)] {
            assert_eq!(TileConfig::choose(m, n, 132), TileConfig::NARROW, "M={m} N={n}");
            assert_eq!(FusedConfig::choose_tile(m, n, 132), TileConfig::NARROW_TMA_STORE, "M={m} N={n}");
            assert_eq!(CommPath::choose_fused(n, TileConfig::NARROW_TMA_STORE, 2, true), CommPath::Epilogue);
        }
        // N % 8 != 0 keeps the Registers tile (and a path that takes it).
        assert_eq!(FusedConfig::choose_tile(128, 8191, 132), TileConfig::NARROW);
        // Then M=128 on 64 x 128 swapped tiles (0.0457 ms against 0.0498 narrow), M=256 and
        // 256 x 7168 x 9216 on the narrow tile (0.0601 against 0.0614-0.0657 swapped).
        let nt = TileConfig::NARROW_TMA_STORE;
        assert_eq!(FusedConfig::epilogue_tile(s(128, 8192, 4096), nt, 132), TileConfig::swapped_tma_store(128));
        assert_eq!(FusedConfig::epilogue_tile(s(256, 8192, 4096), nt, 132), nt);
        assert_eq!(FusedConfig::epilogue_tile(s(256, 7168, 9216), nt, 132), nt);
    }

    #[test]
    fn epilogue_path_takes_the_column_rule_where_it_pays_for_its_last_wave() {
        let s = |m, n, k| GemmShape { m, n, k };
        let (wide, auto, scratch) = (TileConfig::WIDE_TMA_STORE, LastWaveSplit::Auto, 1 << 30);
        let cols = TileConfig::cols_tma_store;
        let pick = |shape: GemmShape| FusedConfig::epilogue_default_tile(shape, FusedConfig::choose_tile(shape.m, shape.n, 132), 132, auto, scratch);
        // DeepSeek M=2048 (runs 394, 396: 5-7% faster than 128 x 256 tiles split 2-way): 176
        // columns, then their 2-CTA twin (656 tiles, 128 in the last wave: not split).
        let deepseek = s(2048, 7168, 9216);
        assert_eq!(TileConfig::cols_instead_of(wide, deepseek, 132), Some(cols(176)));
        assert_eq!(FusedConfig::epilogue_cols_tile(deepseek, wide, 132), Some(cols(176)));
        assert_eq!(FusedConfig::epilogue_tile(deepseek, wide, 132), wide);
        assert_eq!(pick(deepseek), TileConfig::cols_tma_store_c2(176));
        // A width whose twin the fused kernel lacks (184: its halves of B overlap) stays
        // unclustered, though the plain GEMM has the twin; it replaces the unclustered
        // swapped default (run 396: 11-12% faster).
        let narrow_n = s(1024, 2880, 4096);
        assert!(TileConfig::gemm_catalog().any(|t| t == TileConfig::clustered_instead_of(cols(184), narrow_n)));
        assert_eq!(FusedConfig::clustered_epilogue_tile(narrow_n, cols(184), 132, auto, scratch), cols(184));
        assert_eq!(pick(narrow_n), cols(184));
        // But an unclustered column tile never replaces a clustered default: 3072 x 9216 x
        // 4096 (168 columns against the 128 x 256 twin), 4096 x 6912 x 7168 (216); 1024 x
        // 6912 x 4096 (216 against the swapped 152, unclustered: 216 is taken).
        for (shape, w) in [(s(3072, 9216, 4096), 168), (s(4096, 6912, 7168), 216)] {
            assert_eq!(FusedConfig::epilogue_cols_tile(shape, wide, 132), Some(cols(w)), "{shape:?}");
            assert_eq!(pick(shape), TileConfig::WIDE_TMA_STORE_C2, "{shape:?}");
        }
        // Nor a column tile under 160 columns (`COLS_OVER_SWAPPED_MIN_COLS`): 136 at 3072 x
        // 5120 x 5120 (against the 128 x 256 twin) and 6144 x 2560 x 4096 (against 128 x 128
        // tiles split 3-way).
        for shape in [s(3072, 5120, 5120), s(6144, 2560, 4096)] {
            assert_eq!(TileConfig::cols_instead_of(wide, shape, 132), Some(cols(136)), "{shape:?}");
            assert_eq!(FusedConfig::epilogue_cols_tile(shape, wide, 132), None, "{shape:?}");
        }
        assert_eq!(pick(s(1024, 6912, 4096)), cols(216));
        // A short K: the GEMM saved is less than the larger last wave's copy (124 tiles of
        // 48 KiB against 60 of 64 KiB), so the 128 x 256 tile stays.
        let short_k = s(1024, 6144, 512);
        assert_eq!(TileConfig::cols_instead_of(wide, short_k, 132), Some(cols(192)));
        assert!(!FusedConfig::cols_pay_for_their_burst(short_k, wide, cols(192), 132));
        assert!(FusedConfig::cols_pay_for_their_burst(s(1024, 6144, 4096), wide, cols(192), 132));
        assert_eq!(FusedConfig::epilogue_cols_tile(short_k, wide, 132), None);
        // Where the mid-M rule's swapped tile is not clearly beaten, it stays (as in the
        // plain GEMM: 1024 x 7168 x 9216, DeepSeek M=1024).
        assert_eq!(TileConfig::cols_instead_of(wide, s(1024, 7168, 9216), 132), Some(cols(224)));
        assert_eq!(FusedConfig::epilogue_cols_tile(s(1024, 7168, 9216), wide, 132), None);
        assert_eq!(pick(s(1024, 7168, 9216)), TileConfig::swapped_wide(152, Epilogue::TmaStore));
        // Not for other tiles, nor where the small-M rule's swapped tile applies.
        for t in [TileConfig::NARROW_TMA_STORE, TileConfig::WIDE, TileConfig::WIDE_TMA_STORE_C2] {
            assert_eq!(FusedConfig::epilogue_cols_tile(deepseek, t, 132), None, "{t}");
        }
        assert_eq!(FusedConfig::epilogue_cols_tile(s(129, 8192, 4096), TileConfig::M64_WIDE_TMA_STORE, 132), None);
        // The other shapes of the issue's table keep their tiles.
        for (m, n, k) in [(1024, 8192, 4096), (2048, 8192, 4096), (4096, 8192, 14336), (4096, 7168, 9216), (8192, 7168, 9216), (2049, 8192, 4096), (129, 8192, 4096)] {
            let t = pick(s(m, n, k));
            assert!(!t.is_fused_column_fitted(), "{m}x{n}x{k}: {t}");
        }
    }

    #[test]
    fn epilogue_path_takes_fitted_swapped_tiles_for_mid_m() {
        let s = |m, n, k| GemmShape { m, n, k };
        let fitted = |rows| TileConfig::swapped_wide(rows, Epilogue::TmaStore);
        // Run 113: where the fitted tile won (default tile from choose_tile).
        for ((m, n, k), rows) in [
            ((300, 8192, 4096), 152),
            ((520, 8192, 4096), 136),
            ((640, 8192, 4096), 160),
            ((777, 8192, 4096), 200),
            ((2049, 8192, 4096), 208),
            ((2049, 8192, 14336), 208),
            ((2049, 7168, 9216), 152),
            ((5000, 8192, 4096), 152),
        ] {
            let t = FusedConfig::choose_tile(m, n, 132);
            assert_eq!(FusedConfig::epilogue_tile(s(m, n, k), t, 132), fitted(rows), "{m}x{n}x{k} from {t}");
        }
        // Where it lost: M=1000 (128 x 128 tiles by the narrow rule) and 3000 (128 x 256).
        assert_eq!(FusedConfig::epilogue_tile(s(1000, 8192, 4096), TileConfig::WIDE_TMA_STORE, 132), TileConfig::NARROW_TMA_STORE);
        assert_eq!(FusedConfig::epilogue_tile(s(3000, 8192, 4096), TileConfig::WIDE_TMA_STORE, 132), TileConfig::WIDE_TMA_STORE);
        // Not with K % 64 != 0, nor past M = 8192.
        assert_eq!(FusedConfig::epilogue_tile(s(2049, 8192, 4104), TileConfig::WIDE_TMA_STORE, 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(FusedConfig::epilogue_tile(s(8193, 8192, 4096), TileConfig::WIDE_TMA_STORE, 132), TileConfig::WIDE_TMA_STORE);
        // The fitted tile takes the epilogue path, unsplit, on 2 ranks only.
        let t = fitted(208);
        assert_eq!(CommPath::all_for(t, 2), vec![CommPath::Epilogue]);
        assert!(CommPath::all_for(t, 4).is_empty());
    }

    #[test]
    fn world_size_is_checked() {
        assert!(source(TileConfig::WIDE, 0, CommPath::Vec16).is_err());
        assert!(source(TileConfig::WIDE, 9, CommPath::Vec16).is_err());
        assert!(source(TileConfig::WIDE, 3, CommPath::Tma).is_err());
    }

    #[test]
    fn comm_path_follows_alignment_rules() {
        let t = TileConfig::WIDE;
        assert_eq!(CommPath::choose(8192, t, 2), CommPath::TmaOneShot);
        assert_eq!(CommPath::choose(8192, t, 4), CommPath::Tma);
        assert_eq!(CommPath::choose(8192, t, 8), CommPath::Tma);
        assert_eq!(CommPath::choose(8192, t, 3), CommPath::Vec16);
        assert_eq!(CommPath::choose(1001, t, 2), CommPath::Scalar);
        assert_eq!(CommPath::all_for(t, 3), vec![CommPath::Vec16, CommPath::Scalar]);
        // World 0 is refused by the callers; the path helpers must not divide by it.
        assert_eq!(CommPath::all_for(t, 0), vec![CommPath::TmaOneShot, CommPath::Vec16, CommPath::Scalar]);
        assert_eq!(CommPath::choose(8192, t, 0), CommPath::TmaOneShot);
    }

    #[test]
    fn epilogue_path_is_chosen_on_two_ranks_with_an_own_gpu() {
        let t = TileConfig::WIDE_TMA_STORE;
        let choose = CommPath::choose_fused;
        assert_eq!(choose(8192, t, 2, true), CommPath::Epilogue);
        assert_eq!(choose(8192, TileConfig::M64_WIDE_TMA_STORE, 2, true), CommPath::Epilogue);
        assert_eq!(choose(8192, TileConfig::NARROW_TMA_STORE, 2, true), CommPath::Epilogue);
        // A shared GPU, no TMA-store tile, N % 8 != 0, other world sizes: the fixed choice.
        assert_eq!(choose(8192, t, 2, false), CommPath::TmaOneShot);
        assert_eq!(choose(8192, TileConfig::WIDE, 2, true), CommPath::TmaOneShot);
        assert_eq!(choose(8190, t, 2, true), CommPath::Scalar);
        assert_eq!(choose(8192, t, 4, true), CommPath::Tma);
        assert_eq!(CommPath::choose(8192, t, 1), CommPath::TmaOneShot);
        // One rank: nothing to reduce, whatever the tile, N or GPU.
        for (n, tile, own) in [(8192, t, true), (8190, TileConfig::WIDE, false), (8, TileConfig::swapped_tma_store(64), true)] {
            assert_eq!(choose(n, tile, 1, own), CommPath::Local);
        }
    }

    /// The local path (world size 1): listed first for every tile at world size 1 and
    /// nowhere else, any N, no communication CTAs, no fused kernel (the catalog skips it,
    /// `source` refuses it), and a configuration on it takes the plain GEMM's tiles.
    #[test]
    fn local_path_is_the_plain_gemm_for_one_rank() {
        let p = CommPath::Local;
        assert_eq!((CommPath::by_name("local"), p.name()), (Some(p), "local"));
        assert!(!p.claims_tiles() && !p.adds_into_out() && !p.has_comm_ctas() && !p.runs_fused_kernel());
        assert!(CommPath::ALL.iter().filter(|q| **q != p).all(|q| q.runs_fused_kernel()));
        for t in TileConfig::fused_catalog() {
            assert_eq!(CommPath::all_for(t, 1).first(), Some(&p), "{t}");
            for w in [2, 3, 4, 8] {
                assert!(!CommPath::all_for(t, w).contains(&p), "{t} world {w}");
            }
        }
        assert!(p.check(8191, TileConfig::WIDE, 1).is_ok());
        let e = p.check(8192, TileConfig::WIDE, 2).unwrap_err().to_string();
        assert!(e.contains("`comm_path`") && e.contains("one-rank path") && e.contains("2 ranks"), "{e}");
        let e = source(TileConfig::WIDE, 1, p).unwrap_err().to_string();
        assert!(e.contains("`comm_path`") && e.contains("plain GEMM"), "{e}");
        assert!(crate::catalog::all().unwrap().iter().all(|k| !k.name.ends_with("_local")));
        // A plain-GEMM tile (column-fitted with the Registers epilogue) is this path's alone;
        // a clustered column-fitted one runs here unsplit (and on the epilogue path with 2 ranks).
        let cols = TileConfig::cols_tma_store_c2(176);
        let cfg = FusedConfig { tile: cols, comm_ctas: 0, grid: 132, path: p, tail_ctas: 0, pace: EpiloguePace::Clock, split_slices: 1, diag_skip: 0 };
        assert!(cfg.check_tile().is_ok() && cfg.check_split(GemmShape { m: 2048, n: 7168, k: 9216 }, 0).is_ok());
        assert_eq!(cfg.to_string(), format!("{cols}, local path (one rank: the plain GEMM alone)"));
        let plain_only = FusedConfig { tile: TileConfig::cols(176), ..cfg };
        assert!(plain_only.check_tile().is_ok() && FusedConfig { path: CommPath::TmaOneShot, ..plain_only }.check_tile().is_err());
        let e = FusedConfig { split_slices: 2, ..cfg }.check_split(GemmShape { m: 2048, n: 7168, k: 9216 }, u64::MAX).unwrap_err().to_string();
        assert!(e.contains("`split_slices`") && e.contains("without clusters"), "{e}");
        // The plain GEMM's split on this path: its rules, the layout's slots and counts.
        let s = GemmShape { m: 256, n: 2048, k: 8192 };
        let split = FusedConfig { tile: TileConfig::NARROW_TMA_STORE, split_slices: 4, ..cfg };
        let slots = 32 * 4 * TileConfig::NARROW_TMA_STORE.split_slot_bytes();
        assert!(split.check_split(s, slots).is_ok());
        assert_eq!(split.to_string(), format!("{}, local path (one rank: the plain GEMM alone), last wave split 4-way", TileConfig::NARROW_TMA_STORE));
        let e = split.check_split(s, slots - 1).unwrap_err().to_string();
        assert!(e.contains("`split_slices`") && e.contains("exceed the workspace"), "{e}");
        let e = FusedConfig { split_slices: 129, ..split }.check_split(s, u64::MAX).unwrap_err().to_string();
        assert!(e.contains("`split_slices`") && e.contains("K blocks"), "{e}");
        let l = WorkspaceLayout::new(2048 * 7168, 1).unwrap();
        let ws = RankBuffers { rank: 0, world: 1, workspace: [0x1000_0000; MAX_RANKS], layout: l, status: 0 }.local_split_workspace();
        assert_eq!((ws.scratch, ws.scratch_bytes), (0x1000_0000 + l.split_offset(), l.split_bytes()));
        assert_eq!((ws.counts, ws.counts_len), (0x1000_0000 + l.split_counts_offset(), crate::gemm::SPLIT_COUNTS));
        let bufs = RankBuffers { rank: 0, world: 1, workspace: [0; MAX_RANKS], layout: l, status: 0 };
        assert!(validate(GemmShape { m: 2048, n: 7168, k: 9216 }, &cfg, &bufs).is_ok());
        let e = validate(GemmShape { m: 2048, n: 7168, k: 9216 }, &FusedConfig { comm_ctas: 4, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`comm_ctas`"), "{e}");
        // The local path raises no flags: plain-GEMM tiles narrower than the fused catalog's
        // may outnumber them in a workspace sized to the output (helper-53: 5 tiles, 3 flags).
        let s = GemmShape { m: 74, n: 1, k: 1000 };
        let narrow = FusedConfig { tile: TileConfig::swapped(16), ..cfg };
        let tiny = RankBuffers { layout: WorkspaceLayout::new(74, 1).unwrap(), ..bufs };
        assert!(narrow.tile.tiles(s.m, s.n) > tiny.layout.max_tiles);
        assert!(validate(s, &narrow, &tiny).is_ok());
    }

    #[test]
    fn last_wave_split_fills_idle_sms_with_k_slices() {
        let t = TileConfig::WIDE_TMA_STORE;
        let big = WorkspaceLayout::new(1 << 28, 2).unwrap().split_bytes();
        assert_eq!(big, SPLIT_SLOTS * SPLIT_SLOT_MAX_BYTES);
        let choose = |m, n, k, path| FusedConfig::choose_split(GemmShape { m, n, k }, t, 132, path, big);
        // o-proj M=2049: 544 tiles = 4 waves + 16; 132 / 16 = 8, but 64 K blocks / 16 = 4.
        assert_eq!(choose(2049, 8192, 4096, CommPath::Epilogue), 4);
        // Whole waves, too few K blocks, or 67+ tiles left over (132 / 67 = 1): none.
        assert_eq!(choose(4224, 8192, 4096, CommPath::Epilogue), 1); // 33 x 32 = 1056 = 8 waves
        assert_eq!(choose(2049, 8192, 1024, CommPath::Epilogue), 1);
        assert_eq!(choose(1024, 8192, 4096, CommPath::Epilogue), 1); // 124 left over
        // Only the epilogue path splits.
        assert_eq!(choose(2049, 8192, 4096, CommPath::TmaOneShot), 1);
        // A small output with a long K: 8 tiles, 8 slices of 16 K blocks each.
        assert_eq!(choose(256, 1024, 8192, CommPath::Epilogue), 8);
        // Down-proj M=16384: 4 tiles left over, 132 / 4 = 33 and 224 K blocks / 16 = 14,
        // capped at MAX_SPLIT_SLICES.
        assert_eq!(choose(16384, 8192, 14336, CommPath::Epilogue), MAX_SPLIT_SLICES as u32);
        // The scratch bounds it: 8 slots of 128 KiB.
        assert_eq!(FusedConfig::choose_split(GemmShape { m: 256, n: 1024, k: 8192 }, t, 132, CommPath::Epilogue, 8 * 128 * 1024), 1);
        assert_eq!(FusedConfig::choose_split(GemmShape { m: 256, n: 1024, k: 8192 }, t, 132, CommPath::Epilogue, 16 * 128 * 1024), 2);
        // A small workspace gets a small scratch: 16 bytes per output element.
        assert_eq!(WorkspaceLayout::new(1 << 20, 2).unwrap().split_bytes(), 16 << 20);
        let l = WorkspaceLayout::new(1 << 20, 2).unwrap();
        assert!(l.split_offset() >= l.control_offset() + std::mem::size_of::<ControlBlock>() as u64);
        assert_eq!(l.split_counts_offset(), l.split_offset() + l.split_bytes());
        assert_eq!(l.bytes(), l.split_counts_offset() + crate::gemm::SPLIT_COUNTS * 4);

        let cfg = FusedConfig { tile: t, comm_ctas: 0, grid: 132, path: CommPath::Epilogue, tail_ctas: 0, pace: EpiloguePace::default(), split_slices: 4, diag_skip: 0 };
        let s = GemmShape { m: 2049, n: 8192, k: 4096 };
        assert!(cfg.check_split(s, big).is_ok());
        assert!(cfg.to_string().ends_with("epilogue path, last wave split 4-way"), "{cfg}");
        let err = |c: FusedConfig, s: GemmShape| c.check_split(s, big).unwrap_err().to_string();
        for (c, s, why) in [
            (FusedConfig { split_slices: 0, ..cfg }, s, "at least 1"),
            (FusedConfig { path: CommPath::TmaOneShot, comm_ctas: 8, ..cfg }, s, "only the epilogue path"),
            (cfg, GemmShape { m: 4224, n: 8192, k: 4096 }, "whole waves"),
            (cfg, GemmShape { m: 2049, n: 8192, k: 192 }, "exceed the 3 K blocks"),
            (FusedConfig { grid: 0, ..cfg }, s, "grid of at least 1"),
        ] {
            let e = err(c, s);
            assert!(e.contains("`split_slices`") && e.contains(why), "{e}");
        }
        // A tile outside the catalog is refused as such, before the split is looked at.
        let e = err(FusedConfig { tile: TileConfig { bn: 0, ..t }, ..cfg }, s);
        assert!(e.contains("`tile`") && e.contains("not a catalog configuration"), "{e}");
        let e = cfg.check_split(s, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("`split_slices`") && e.contains("scratch") && e.contains("max_output_elems"), "{e}");
        assert!(FusedConfig { split_slices: 1, ..cfg }.check_split(GemmShape { m: 4224, n: 8192, k: 4096 }, 0).is_ok());
        // Huge counts are refused, not wrapped (helper-42: 2^50 slots came back Ok in release).
        let huge = FusedConfig { grid: u32::MAX, split_slices: 1 << 24, ..cfg };
        let e = huge.check_split(GemmShape { m: 1 << 21, n: 1 << 20, k: 1 << 30 }, big).unwrap_err().to_string();
        assert!(e.contains("`split_slices`") && e.contains("slots"), "{e}");
        // More slices than the idle CTAs: the slices span several waves (16 x 9 > 132).
        assert!(FusedConfig { split_slices: 9, ..cfg }.check_split(s, big).is_ok());
        // o-proj M=1024 on 128 x 256 tiles: 124 left over x 4 slots of 128 KiB > 32 MiB.
        let e = FusedConfig { split_slices: 4, ..cfg }.check_split(GemmShape { m: 1024, n: 8192, k: 4096 }, big).unwrap_err().to_string();
        assert!(e.contains("`split_slices`") && e.contains("496 slots"), "{e}");
        // (at the largest scratch a workspace has, no hint of a larger max_output_elems)
        assert!(e.contains("fewer slices fit") && !e.contains("max_output_elems"), "{e}");
        // Swapped-operand tiles split too (M=129: 128 tiles of 64 x 136 on 132 CTAs, one
        // partial wave, 2 slices each in two waves); clustered ones do not.
        let sw = FusedConfig { tile: TileConfig::swapped_tma_store(136), split_slices: 2, ..cfg };
        assert!(sw.check_split(GemmShape { m: 129, n: 8192, k: 4096 }, big).is_ok());
        let c2 = FusedConfig { tile: TileConfig::swapped_wide_c2(208, Epilogue::TmaStore), split_slices: 2, ..cfg };
        assert!(err(c2, s).contains("no slices"));
        // Nor column-fitted ones (whole tiles on the fused path; their default never splits).
        let cols = FusedConfig { tile: TileConfig::cols_tma_store(144), split_slices: 2, ..cfg };
        let e = err(cols, s);
        assert!(e.contains("`split_slices`") && e.contains("column-fitted tiles whole"), "{e}");
        assert_eq!(FusedConfig::choose_split(GemmShape { m: 2048, n: 8192, k: 4096 }, cols.tile, 132, CommPath::Epilogue, big), 1);
        // (a tile without a fused kernel has no path at all)
        assert!(CommPath::all_for(TileConfig::cols_tma_store(120), 2).is_empty() && CommPath::all_for(TileConfig::cols_tma_store(144), 2) == [CommPath::Epilogue]);
        // The option: auto by default, off, or a count.
        assert_eq!(LastWaveSplit::default(), LastWaveSplit::Auto);
        assert_eq!(LastWaveSplit::parse("off").unwrap(), LastWaveSplit::Off);
        assert_eq!(LastWaveSplit::parse("auto").unwrap(), LastWaveSplit::Auto);
        assert_eq!(LastWaveSplit::parse("4").unwrap(), LastWaveSplit::Slices(4));
        for bad in ["0", "-2", "four", ""] {
            let e = LastWaveSplit::parse(bad).unwrap_err().to_string();
            assert!(e.contains("`split_last_wave`") && e.contains("off, auto"), "{bad}: {e}");
        }
    }

    #[test]
    fn epilogue_path_has_no_communication_ctas_and_its_own_shared_memory() {
        let t = TileConfig::WIDE_TMA_STORE;
        assert_eq!(CommPath::by_name("epilogue"), Some(CommPath::Epilogue));
        assert!(!CommPath::Epilogue.claims_tiles() && !CommPath::Epilogue.has_comm_ctas() && CommPath::Epilogue.adds_into_out());
        assert!(CommPath::ALL.iter().filter(|p| **p != CommPath::Epilogue && **p != CommPath::Local).all(|p| p.has_comm_ctas()));
        assert!(CommPath::Epilogue.check(8192, t, 2).is_ok());
        for world in [1, 3, 4, 8] {
            let e = CommPath::Epilogue.check(8192, t, world).unwrap_err().to_string();
            assert!(e.contains("`comm_path`") && e.contains("epilogue"), "world {world}: {e}");
        }
        let e = CommPath::Epilogue.check(8192, TileConfig::WIDE, 2).unwrap_err().to_string();
        assert!(e.contains("`comm_path`"), "{e}");
        assert!(CommPath::Epilogue.check(8190, t, 2).is_err());
        // Its own kernel, with one mbarrier more than the tile's shared memory.
        assert_ne!(kernel_name(t, 2, CommPath::Epilogue), kernel_name(t, 2, CommPath::TmaReduce));
        for tile in TileConfig::ALL.into_iter().filter(|t| CommPath::Epilogue.check(8192, *t, 2).is_ok()) {
            assert_eq!(smem_bytes(tile, CommPath::Epilogue), tile.smem_bytes() + EPILOGUE_EXTRA_SMEM_BYTES);
            assert!(smem_bytes(tile, CommPath::Epilogue) <= 232_448, "{tile}");
            assert_eq!(smem_bytes(tile, CommPath::TmaReduce), tile.smem_bytes());
            let src = source(tile, 2, CommPath::Epilogue).unwrap();
            // (the device's shared-memory size is checked against the host's when it compiles)
            assert!(src.source.contains(&format!("kSmemBytes == {}", tile.smem_bytes())), "{tile}");
            assert!(src.source.contains("mk::CommPath::Epilogue") && src.source.contains("kEpilogueExtraSmem"), "{tile}");
        }
        // comm_ctas must be 0 there (and >= 1 elsewhere); no tail CTAs.
        let bufs = RankBuffers { rank: 0, world: 2, workspace: [0; MAX_RANKS], layout: WorkspaceLayout::new(1 << 20, 2).unwrap(), status: 0 };
        let shape = GemmShape { m: 1024, n: 1024, k: 64 };
        let cfg = FusedConfig { tile: t, comm_ctas: 0, grid: 132, path: CommPath::Epilogue, tail_ctas: 0, pace: EpiloguePace::default(), split_slices: 1, diag_skip: 0 };
        assert!(validate(shape, &cfg, &bufs).is_ok());
        assert_eq!(cfg.to_string(), format!("{t}, 0 comm + 132 compute CTAs, epilogue path"));
        let e = validate(shape, &FusedConfig { comm_ctas: 4, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`comm_ctas`") && e.contains("must be 0"), "{e}");
        let e = validate(shape, &FusedConfig { tail_ctas: 4, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`tail_ctas`"), "{e}");
        let e = validate(shape, &FusedConfig { grid: 0, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`grid`"), "{e}");
        // The default pace is the clock; the sleep pace is the epilogue path's only, and
        // named in the config.
        assert_eq!(cfg.pace, EpiloguePace::Clock);
        let sleep = FusedConfig { pace: EpiloguePace::Sleep, ..cfg };
        assert!(validate(shape, &sleep, &bufs).is_ok());
        assert!(sleep.to_string().ends_with("epilogue path (sleep pace)"), "{sleep}");
        let e = validate(shape, &FusedConfig { comm_ctas: 8, path: CommPath::TmaOneShot, ..sleep }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`epilogue_pace`") && e.contains("one-shot"), "{e}");
        assert!(validate(shape, &FusedConfig { comm_ctas: 8, path: CommPath::TmaOneShot, ..cfg }, &bufs).is_ok());
        assert_eq!(EpiloguePace::by_name("clock"), Some(EpiloguePace::default()));
        assert_eq!(EpiloguePace::by_name("sleep"), Some(EpiloguePace::Sleep));
        assert_eq!(EpiloguePace::by_name("fast"), None);
        let e = validate(shape, &FusedConfig { comm_ctas: 0, path: CommPath::TmaOneShot, ..cfg }, &bufs).unwrap_err().to_string();
        assert!(e.contains("`comm_ctas`") && e.contains("1.."), "{e}");
    }

    #[test]
    fn push_path_needs_two_ranks_a_tma_store_tile_and_aligned_rows() {
        let t = TileConfig::WIDE_TMA_STORE;
        assert_eq!(CommPath::by_name("push"), Some(CommPath::Push));
        assert!(CommPath::Push.claims_tiles());
        assert!(CommPath::Push.check(8192, t, 2).is_ok());
        // Never chosen by default.
        assert_eq!(CommPath::choose(8192, t, 2), CommPath::TmaOneShot);
        // Push runs the reduce path's kernel: one name, one catalog entry.
        assert_eq!(kernel_name(t, 2, CommPath::Push), kernel_name(t, 2, CommPath::TmaReduce));
        for world in [1, 3, 4, 8] {
            let e = CommPath::Push.check(8192, t, world).unwrap_err().to_string();
            assert!(e.contains("`comm_path`") && e.contains("push"), "world {world}: {e}");
            assert!(source(t, world, CommPath::Push).is_err(), "world {world}");
        }
        for tile in [TileConfig::WIDE, TileConfig::NARROW, TileConfig::M64_WIDE] {
            let e = CommPath::Push.check(8192, tile, 2).unwrap_err().to_string();
            assert!(e.contains("`comm_path`") && e.contains("push"), "{tile}: {e}");
            let e = source(tile, 2, CommPath::Push).unwrap_err().to_string();
            assert!(e.contains("`comm_path`") && e.contains("push"), "{tile}: {e}");
        }
        let e = CommPath::Push.check(8190, t, 2).unwrap_err().to_string();
        assert!(e.contains("N % 8"), "{e}");
    }
}
