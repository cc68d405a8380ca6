//! The fused GEMM + all-reduce operator over the ranks of one node (device side in
//! `src/cuda/ops/gemm_allreduce.cuh`, whose header comment draws the schedule).
//!
//! Per rank: `a` [M, K_local] and `b` [N, K_local] bf16 (K-major, as in [`crate::gemm`]),
//! `out` [M, N] bf16 receiving sum over ranks of a_r * b_r^T. The kernel needs a
//! symmetric workspace per rank ([`WorkspaceLayout`]) that every peer can address.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime, Swizzle, Tensor2d};
use crate::error::{invalid, Result};
use crate::gemm::{GemmShape, TileConfig};
use crate::jit::KernelSource;
use crate::params::{AllReduceParams, ControlBlock, MAX_RANKS};

/// Byte layout of one rank's symmetric workspace. Every rank allocates the same
/// layout (same capacity), zeroed once; peers find each region at the same offset.
///
/// ```text
/// [ partial: capacity_elems bf16 | ready inbox: MAX_RANKS x max_tiles u32 |
///   reduced inbox: MAX_RANKS x max_tiles u32 | exit: MAX_RANKS u32 | control: ControlBlock ]
/// ```
/// (each region 256-byte aligned). Inbox row q holds the epochs rank q pushed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceLayout {
    /// Largest M * N the workspace holds.
    pub capacity_elems: u64,
    /// Largest tile count (for the narrowest tile configuration) of such an output.
    pub max_tiles: u64,
}

const fn align256(x: u64) -> u64 {
    (x + 255) & !255
}

impl WorkspaceLayout {
    /// A layout for outputs of up to `capacity_elems` elements with any M.
    pub fn for_capacity(capacity_elems: u64) -> Self {
        // Narrowest tile is 128 x 128; partial tiles at the M and N edges add at most
        // one tile row and column. Bounded generously by elems / (128 * 128) + a margin
        // for skinny shapes, and refused at launch if a shape still exceeds it.
        let tiles = capacity_elems.div_ceil(128 * 128) + 4096;
        Self { capacity_elems, max_tiles: tiles }
    }
    pub fn partial_offset(&self) -> u64 {
        0
    }
    pub fn ready_offset(&self) -> u64 {
        align256(self.capacity_elems * 2)
    }
    pub fn reduced_offset(&self) -> u64 {
        self.ready_offset() + align256(MAX_RANKS as u64 * self.max_tiles * 4)
    }
    pub fn exit_offset(&self) -> u64 {
        self.reduced_offset() + align256(MAX_RANKS as u64 * self.max_tiles * 4)
    }
    pub fn control_offset(&self) -> u64 {
        self.exit_offset() + align256(MAX_RANKS as u64 * 4)
    }
    /// Total bytes to allocate per rank.
    pub fn bytes(&self) -> u64 {
        self.control_offset() + align256(std::mem::size_of::<ControlBlock>() as u64)
    }
}

/// Choices of one fused call: the GEMM tiles and the SM partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FusedConfig {
    pub tile: TileConfig,
    /// CTAs (one per SM) that run the communication role; the rest compute.
    pub comm_ctas: u32,
    /// CTAs in the grid (normally the SM count).
    pub grid: u32,
}

impl std::fmt::Display for FusedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {} comm + {} compute CTAs", self.tile, self.comm_ctas, self.grid - self.comm_ctas)
    }
}

/// How the communication CTAs move data (`mk::CommPath`): TMA boxes when every row
/// stride is 16-byte aligned and the slices divide the tile, else 16-byte vectors,
/// else 2-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommPath {
    Tma = 0,
    Vec16 = 1,
    Scalar = 2,
    TmaOneShot = 3,
}

impl CommPath {
    /// The path a shape takes.
    pub fn choose(n: u32, tile: TileConfig, world: u32) -> Self {
        if n % 8 != 0 {
            Self::Scalar
        } else if world <= 2 {
            Self::TmaOneShot
        } else if tile.bm % world == 0 {
            Self::Tma
        } else {
            Self::Vec16
        }
    }
    /// Paths that exist for `world` (what the catalog instantiates).
    pub fn all_for(tile: TileConfig, world: u32) -> Vec<Self> {
        let mut v = vec![Self::Vec16, Self::Scalar];
        if tile.bm % world == 0 {
            v.insert(0, Self::Tma);
        }
        if world <= 2 {
            v.insert(0, Self::TmaOneShot);
        }
        v
    }
    fn tag(self) -> &'static str {
        match self {
            Self::Tma => "tma",
            Self::TmaOneShot => "tma1",
            Self::Vec16 => "v16",
            Self::Scalar => "v2",
        }
    }
    fn cpp(self) -> &'static str {
        match self {
            Self::Tma => "mk::CommPath::Tma",
            Self::TmaOneShot => "mk::CommPath::TmaOneShot",
            Self::Vec16 => "mk::CommPath::Vec16",
            Self::Scalar => "mk::CommPath::Scalar",
        }
    }
}

/// Source of the fused kernel for a tile config, world size and communication path.
pub fn source(tile: TileConfig, world: u32, path: CommPath) -> Result<KernelSource> {
    if world == 0 || world as usize > MAX_RANKS {
        return Err(invalid("world_size", format!("must be 1..={MAX_RANKS}, got {world}")));
    }
    if path == CommPath::Tma && tile.bm % world != 0 {
        return Err(invalid("world_size", format!("the TMA path needs BM ({}) divisible by the world size ({world})", tile.bm)));
    }
    if path == CommPath::TmaOneShot && world > 2 {
        return Err(invalid("world_size", format!("the one-shot path is for world sizes 1 and 2, got {world}")));
    }
    let name = format!("mkernel_gemm_allreduce_{}_w{}_{}", tile.tag(), world, path.tag());
    let entry = format!(
        "#include \"ops/gemm_allreduce.cuh\"\n\
         extern \"C\" __global__ void __launch_bounds__({threads}, 1) {name}(const __grid_constant__ AllReduceParams p) {{\n\
         \x20 mk::gemm_allreduce_kernel<{cfg_ty}, {world}, {path_ty}>(p);\n}}\n",
        threads = tile.threads(),
        cfg_ty = tile.cpp_type(),
        path_ty = path.cpp(),
    );
    Ok(KernelSource { name, source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
}

/// Everything one rank's launch needs besides the operands.
#[derive(Debug, Clone, Copy)]
pub struct RankBuffers {
    pub rank: u32,
    pub world: u32,
    /// Base address of every rank's workspace as mapped in this rank's context.
    pub workspace: [u64; MAX_RANKS],
    pub layout: WorkspaceLayout,
    /// Device-visible address of this rank's host-mapped `KernelStatus`.
    pub status: u64,
}

/// Checks the rules the fused kernel adds to [`GemmShape::validate`].
pub fn validate(shape: GemmShape, cfg: &FusedConfig, bufs: &RankBuffers) -> Result<()> {
    let elems = shape.m as u64 * shape.n as u64;
    if elems > bufs.layout.capacity_elems {
        return Err(invalid(
            "out",
            format!(
                "M*N = {elems} elements exceeds the communicator workspace ({} elements); create it with a larger max_output_elems",
                bufs.layout.capacity_elems
            ),
        ));
    }
    if cfg.tile.tiles(shape.m, shape.n) as u64 > bufs.layout.max_tiles {
        return Err(invalid("out", format!("{} tiles exceed the workspace's {} flags", cfg.tile.tiles(shape.m, shape.n), bufs.layout.max_tiles)));
    }
    if cfg.comm_ctas == 0 || cfg.comm_ctas >= cfg.grid {
        return Err(invalid(
            "comm_ctas",
            format!("must be in 1..{} (at least one CTA must compute), got {}", cfg.grid, cfg.comm_ctas),
        ));
    }
    Ok(())
}

/// Launches one rank's fused kernel on `stream`.
///
/// # Safety
/// `a`, `b`, `out` must be valid device buffers of the shape's sizes in `stream`'s
/// context, and every `bufs.workspace[q]` (q < world) must be mapped in it, with all
/// ranks launching the same shape and config (a collective call).
pub unsafe fn launch(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    a: u64,
    b: u64,
    out: u64,
    shape: GemmShape,
    cfg: FusedConfig,
    bufs: &RankBuffers,
    timeout: Duration,
) -> Result<()> {
    validate(shape, &cfg, bufs)?;
    cfg.tile.check_output(shape.n)?;
    let (tma_a, tma_b) = crate::gemm::operand_maps(a, b, shape, cfg.tile)?;
    let l = bufs.layout;
    let own_partial = bufs.workspace[bufs.rank as usize] + l.partial_offset();
    let mut p = AllReduceParams {
        tma_a,
        tma_b,
        tma_c: crate::gemm::output_map(own_partial, shape, cfg.tile)?,
        out,
        control: bufs.workspace[bufs.rank as usize] + l.control_offset(),
        status: bufs.status,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        rank: bufs.rank,
        num_comm_ctas: cfg.comm_ctas,
        flag_stride: l.max_tiles as u32,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        ..Default::default()
    };
    let path = CommPath::choose(shape.n, cfg.tile, bufs.world);
    let box_rows = match path {
        CommPath::TmaOneShot => cfg.tile.bm / 2,
        _ => cfg.tile.bm / bufs.world.max(1),
    };
    let tma = matches!(path, CommPath::Tma | CommPath::TmaOneShot);
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
    let f = rt.function(stream.context(), &source(cfg.tile, bufs.world, path)?)?;
    driver::launch(&f, LaunchDims { grid: cfg.grid, block: cfg.tile.threads(), smem_bytes: cfg.tile.smem_bytes() }, stream, &p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_regions_are_aligned_and_disjoint() {
        let l = WorkspaceLayout::for_capacity(16384 * 8192 + 3);
        let offs = [l.partial_offset(), l.ready_offset(), l.reduced_offset(), l.exit_offset(), l.control_offset(), l.bytes()];
        for w in offs.windows(2) {
            assert!(w[0] < w[1]);
        }
        assert!(offs.iter().all(|o| o % 256 == 0));
        assert!(l.ready_offset() >= l.capacity_elems * 2);
        assert!(l.reduced_offset() - l.ready_offset() >= MAX_RANKS as u64 * l.max_tiles * 4);
    }

    #[test]
    fn validation_names_the_rule() {
        let l = WorkspaceLayout::for_capacity(1 << 20);
        let bufs = RankBuffers { rank: 0, world: 2, workspace: [0; MAX_RANKS], layout: l, status: 0 };
        let cfg = FusedConfig { tile: TileConfig::WIDE, comm_ctas: 8, grid: 132 };
        let e = validate(GemmShape { m: 2048, n: 1024, k: 64 }, &cfg, &bufs).unwrap_err().to_string();
        assert!(e.contains("`out`") && e.contains("max_output_elems"), "{e}");
        let bad = FusedConfig { comm_ctas: 132, ..cfg };
        let e = validate(GemmShape { m: 64, n: 64, k: 64 }, &bad, &bufs).unwrap_err().to_string();
        assert!(e.contains("`comm_ctas`"), "{e}");
        assert!(validate(GemmShape { m: 1024, n: 1024, k: 64 }, &cfg, &bufs).is_ok());
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
    }
}
