//! Ring attention (sequence parallelism) over the ranks of one node
//! (`ops/ring_attention.cuh`): rank r holds S positions of every sequence of the batch (its
//! queries, keys and values: positions \[r S, (r + 1) S), or, in the zigzag layout
//! ([`SeqLayout::Zigzag`]), two chunks of S / 2 from both ends) and computes its queries' attention over every
//! rank's keys and values in one persistent kernel, whose push CTAs copy its keys and values
//! into every peer's gathered KV, chunk by chunk, each chunk announced by an epoch-tagged
//! arrival flag, while its compute CTAs start on the rank's own keys and take each peer's
//! key blocks as they arrive.
//!
//! The compute loop is FlashAttention-2's (Dao, "FlashAttention-2: Faster Attention with
//! Better Parallelism and Work Partitioning", 2023) on Hopper's warpgroup MMA as
//! FlashAttention-3 uses it (Shah et al., 2024): 128 query rows a CTA (192 at D = 64: [`block_m`]), 64 a warpgroup, key
//! blocks of 128 positions, S = Q K^T on `wgmma` from shared memory and O += P V on `wgmma`
//! with P from registers, the online softmax in registers. The unfused kernel ([`unfused_source`]) runs the
//! same loop on keys and values already whole: the baseline after an all-gather, and plain
//! attention on one GPU (world 1).
//!
//! The workspace is the fused all-reduce's ([`crate::gemm_allreduce::WorkspaceLayout`]): the gathered KV,
//! \[world\]\[2\]\[B, S, Hkv, D\], lives in the partial region (so it must fit
//! `capacity_elems`), the arrival flags in the ready inboxes (one per chunk), the exit flags,
//! control block and status are shared with every other fused call.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime};
use crate::error::{invalid, Result};
use crate::gemm_allreduce::RankBuffers;
use crate::jit::KernelSource;
use crate::params::{RingAttentionParams, MAX_RANKS};

/// Key/value positions of a block (`kAttnBN`).
pub const BLOCK_N: u32 = 128;
/// `kAttnConsumersD64`: consumer warpgroups at D = 64.
const CONSUMERS_D64: u32 = 3;

/// Consumer warpgroups of a CTA at this head dimension (`AttnCfg<D>::kConsumers`): two at
/// D = 128, three at D = 64 (FlashAttention-3's 192-row tiles there: a warpgroup's softmax
/// is as long as its MMAs, so it needs two others' MMAs to hide under).
pub fn consumers(head_dim: u32) -> u32 {
    if head_dim == 64 { CONSUMERS_D64 } else { 2 }
}

/// Query rows of a unit (`AttnCfg<D>::kBM`): 64 a consumer warpgroup.
pub fn block_m(head_dim: u32) -> u32 {
    64 * consumers(head_dim)
}

/// Threads of a CTA (`AttnCfg<D>::kThreads`): the consumer warpgroups and a producer
/// warpgroup (one warp of it issues the TMA loads).
pub fn threads(head_dim: u32) -> u32 {
    128 * (consumers(head_dim) + 1)
}
/// Head dimensions with kernels.
pub const HEAD_DIMS: [u32; 2] = [64, 128];
/// Positions of a sequence per arrival flag by default: the design's 128-row KV tile
/// (`../shared/DESIGN.md` section 3; 128 x 8 heads x 128 x 2 bytes = 256 KiB of keys and as
/// many values at Llama-3-70B's 8 key/value heads).
pub const DEFAULT_CHUNK_ROWS: u32 = 128;
/// Push CTAs by default: as the all-gather's, a first guess, not tuned.
pub const DEFAULT_PUSH_CTAS: u32 = 4;

/// Which positions of a sequence each rank holds (its shard of S positions, in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SeqLayout {
    /// Rank r holds positions \[r S, (r + 1) S). Under a causal mask rank r computes r + 1/2
    /// shards' worth of keys: the last rank takes longest.
    #[default]
    Contiguous,
    /// The load-balanced layout of context parallelism (Megatron-LM's context parallel,
    /// ring-flash-attention's zigzag): the sequence of world x S positions is cut into 2 x
    /// world chunks of S / 2, and rank r holds chunk r, then chunk 2 world - 1 - r (S even).
    /// Under a causal mask every rank then computes as many query-key pairs, (2 world - 1)
    /// (S/2)^2 + (S/2) (S/2 + 1) a sequence and head ([`AttentionShape::flops`]).
    /// A full mask gives the same outputs in either layout (the kernels ignore it there).
    Zigzag,
}

/// The sizes of one rank's ring attention call (the same on every rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    /// Sequences (B).
    pub batch: u32,
    /// Positions of each sequence on each rank (S: the whole sequence is world x S long;
    /// which positions a rank holds: `layout`).
    pub seq: u32,
    /// Query heads (H).
    pub heads: u32,
    /// Key/value heads (Hkv; H % Hkv == 0: query head h reads key/value head h / (H / Hkv)).
    pub kv_heads: u32,
    /// Head dimension (D): one of [`HEAD_DIMS`].
    pub head_dim: u32,
    /// Causal: a query at position i sees keys at positions <= i only.
    pub causal: bool,
    /// Which positions each rank holds (what a causal mask compares).
    pub layout: SeqLayout,
}

/// The mask a kernel is specialised for (`kMask*` in `ops/ring_attention.cuh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mask {
    /// Every key.
    Full,
    /// Keys at positions <= the query's, contiguous shards.
    Causal,
    /// Keys at positions <= the query's, zigzag shards ([`SeqLayout::Zigzag`]).
    CausalZigzag,
}

impl Mask {
    /// Every mask, in the catalog's order.
    pub const ALL: [Mask; 3] = [Mask::Full, Mask::Causal, Mask::CausalZigzag];

    /// The kernel's mask for `shape` over `world` sources (a full mask ignores the layout;
    /// with one source the zigzag layout is the contiguous one).
    pub fn of(shape: AttentionShape, world: u32) -> Mask {
        match (shape.causal, shape.layout) {
            (false, _) => Mask::Full,
            (true, SeqLayout::Zigzag) if world > 1 => Mask::CausalZigzag,
            (true, _) => Mask::Causal,
        }
    }

    /// The template argument (`mk::kMaskFull`, ..).
    fn cuda(self) -> &'static str {
        match self {
            Mask::Full => "mk::kMaskFull",
            Mask::Causal => "mk::kMaskCausal",
            Mask::CausalZigzag => "mk::kMaskZigzag",
        }
    }

    /// The kernel names' tag.
    fn tag(self) -> &'static str {
        match self {
            Mask::Full => "full",
            Mask::Causal => "causal",
            Mask::CausalZigzag => "causal_zz",
        }
    }
}

impl AttentionShape {
    /// The position in the whole sequence of position `i` of rank `rank`'s shard on `world`
    /// ranks (`layout`; zigzag: chunk r for i < S / 2, chunk 2 world - 1 - r after: a
    /// permutation of the world x S positions for S even, or world 1).
    pub fn position(&self, world: u32, rank: u32, i: u32) -> u64 {
        let (s, w, r, i) = (self.seq as u64, world as u64, rank as u64, i as u64);
        match self.layout {
            SeqLayout::Contiguous => r * s + i,
            SeqLayout::Zigzag => {
                let half = s / 2;
                if i < half { r * half + i } else { (2 * w - 1 - r) * half + (i - half) }
            }
        }
    }

    /// Elements of one rank's keys (or values): B x S x Hkv x D (the element counts saturate
    /// at u64::MAX: four u32 dimensions can exceed it, and a shape that large is refused by
    /// [`check_shape`], not wrapped to a small one).
    pub fn kv_elems(&self) -> u64 {
        saturating_product(&[self.batch, self.seq, self.kv_heads, self.head_dim])
    }

    /// Elements of one rank's queries (or output): B x S x H x D.
    pub fn q_elems(&self) -> u64 {
        saturating_product(&[self.batch, self.seq, self.heads, self.head_dim])
    }

    /// Elements of the log-sum-exp output: B x H x S (f32).
    pub fn lse_elems(&self) -> u64 {
        saturating_product(&[self.batch, self.heads, self.seq])
    }

    /// Elements of the gathered KV in each rank's workspace: world x 2 x B x S x Hkv x D.
    pub fn gathered_elems(&self, world: u32) -> u64 {
        (world as u64 * 2).saturating_mul(self.kv_elems())
    }

    /// Floating-point operations of one rank's attention (2 GEMMs of 2 x S x (keys seen) x
    /// D per head and sequence; causal: the keys each query sees, about half): the unit of
    /// the benchmark's TFLOP/s. Zigzag (S = 2L): (2 world - 1) L^2 + L (L + 1) pairs on every
    /// rank (a segment-0 query sees r chunks and its own diagonal, a segment-1 query world + (world
    /// - 1 - r) chunks and its own diagonal).
    pub fn flops(&self, world: u32, rank: u32) -> f64 {
        let (s, w) = (self.seq as f64, world as f64);
        let pairs = match Mask::of(*self, world) {
            Mask::Full => s * s * w,
            Mask::Causal => rank as f64 * s * s + s * (s + 1.0) / 2.0,
            Mask::CausalZigzag => {
                let l = (self.seq / 2) as f64;
                (2.0 * w - 1.0) * l * l + l * (l + 1.0)
            }
        };
        4.0 * pairs * self.batch as f64 * self.heads as f64 * self.head_dim as f64
    }
}

impl AttentionShape {
    /// The mask in words: "full", "causal" (contiguous shards) or "causal zigzag".
    pub fn mask_name(&self) -> &'static str {
        match (self.causal, self.layout) {
            (false, _) => "full",
            (true, SeqLayout::Contiguous) => "causal",
            (true, SeqLayout::Zigzag) => "causal zigzag",
        }
    }
}

/// The product of `dims`, at most u64::MAX.
fn saturating_product(dims: &[u32]) -> u64 {
    dims.iter().fold(1u64, |p, &d| p.saturating_mul(d as u64))
}

impl std::fmt::Display for AttentionShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "B={} S={} H={} Hkv={} D={}", self.batch, self.seq, self.heads, self.kv_heads, self.head_dim)?;
        if self.causal {
            write!(f, " {}", self.mask_name())?;
        }
        Ok(())
    }
}

/// What one rank's fused ring attention launch runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RingAttentionConfig {
    /// CTAs that push this rank's keys and values to the peers (the first ones of the grid;
    /// they compute too once their pushes are out).
    pub push_ctas: u32,
    /// CTAs of the launch: push CTAs, then compute CTAs.
    pub grid: u32,
    /// Positions of a sequence per arrival flag.
    pub chunk_rows: u32,
    /// The softmax scale (1 / sqrt(D) by default).
    pub softmax_scale: f32,
}

impl std::fmt::Display for RingAttentionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} push + {} compute CTAs, chunks of {} position{}, scale {}",
            self.push_ctas,
            self.grid.saturating_sub(self.push_ctas),
            self.chunk_rows,
            if self.chunk_rows == 1 { "" } else { "s" },
            self.softmax_scale
        )
    }
}

/// `kAttnQStages`: Q stages (the next unit's Q loads while this one computes).
const Q_STAGES: u32 = 2;

/// `kAttnStages`: stages of the K ring and of the V ring (each).
const KV_STAGES: u32 = 2;

/// Shared memory of a CTA, bytes (`AttnSmem<D>::kBytes`): `Q_STAGES` (two) stages of Q \[BM, D\] and
/// `KV_STAGES` (two) of K and of V \[128, D\], bf16, their mbarriers (full and empty each, and a
/// turn a consumer warpgroup), 32 bytes of watermarks, and 1024 bytes of slack to align the
/// tiles to the 128B swizzle's period (197 776 bytes at D = 128).
pub fn smem_bytes(head_dim: u32) -> u32 {
    2 * head_dim * (Q_STAGES * block_m(head_dim) + 2 * KV_STAGES * BLOCK_N) + 8 * (2 * Q_STAGES + 4 * KV_STAGES + consumers(head_dim)) + 4 * MAX_RANKS as u32 + 1024
}

/// The kernels' TMA maps of q, k and v (and, fused, of the gathered KV): each a row-major
/// 4-D bf16 tensor \[batches\]\[S\]\[heads\]\[D\] read in boxes of 128 positions (q: BM) x
/// 64 columns of one head (128B swizzle), positions past S read as zeros. `kv_batches`: B, or
/// world x B for the unfused kernel's whole keys; `gathered`: (address, world). The zigzag
/// mask's (`segments`) view each sequence as its two segments, \[2 batches\]\[S / 2\]: a
/// block never reads past its segment (zeros there, not the next segment's values, which a
/// masked score would still multiply: 0 x Inf = NaN).
fn tma_maps(s: AttentionShape, b: &AttentionBuffers, kv_batches: u64, gathered: Option<(u64, u32)>, segments: bool, p: &mut RingAttentionParams) -> Result<()> {
    let boxes = [64, 1, BLOCK_N, 1];
    let (d, seq, per) = if segments { (s.head_dim as u64, s.seq as u64 / 2, 2) } else { (s.head_dim as u64, s.seq as u64, 1) };
    p.tma_q = driver::tma_4d_bf16(b.q, [d, s.heads as u64, seq, per * s.batch as u64], [64, 1, block_m(s.head_dim), 1], "q")?;
    p.tma_k = driver::tma_4d_bf16(b.k, [d, s.kv_heads as u64, seq, per * kv_batches], boxes, "k")?;
    p.tma_v = driver::tma_4d_bf16(b.v, [d, s.kv_heads as u64, seq, per * kv_batches], boxes, "v")?;
    if let Some((addr, world)) = gathered {
        p.tma_kv = driver::tma_4d_bf16(addr, [d, s.kv_heads as u64, seq, per * world as u64 * 2 * s.batch as u64], boxes, "workspace")?;
    }
    Ok(())
}

/// Units of a call over `world` sources (a unit: `block_m` query rows of one sequence and
/// head; the zigzag mask's, of one of its two segments of S / 2): the most compute CTAs that
/// find work.
pub fn units(s: AttentionShape, world: u32) -> u64 {
    let bm = block_m(s.head_dim);
    let rows = match Mask::of(s, world) {
        Mask::CausalZigzag => 2 * (s.seq / 2).div_ceil(bm),
        Mask::Full | Mask::Causal => s.seq.div_ceil(bm),
    };
    rows as u64 * s.batch as u64 * s.heads as u64
}

/// Chunks of a rank's keys and values (arrival flags a source needs): B x ceil(S / chunk_rows).
pub fn chunks(s: AttentionShape, chunk_rows: u32) -> u64 {
    s.batch as u64 * s.seq.div_ceil(chunk_rows.max(1)) as u64
}

/// The default positions per chunk: [`DEFAULT_CHUNK_ROWS`], at most the sequence. (Any chunk
/// length fits the arrival flags of a workspace that holds the gathered KV: it has
/// capacity / 64 >= world x 2 x B x S x Hkv x D / 64 >= 4 x B x S flags a rank, and a source
/// needs B x ceil(S / chunk_rows) <= B x S.)
pub fn default_chunk_rows(s: AttentionShape) -> u32 {
    DEFAULT_CHUNK_ROWS.min(s.seq.max(1))
}

/// The shape rules on `world` ranks (1..=[`MAX_RANKS`]; the fused kernel needs 2): batch,
/// seq, heads and kv_heads positive, heads a multiple of kv_heads, head_dim one of
/// [`HEAD_DIMS`], seq below 2^31 (TMA's signed coordinates), a sequence's queries below 2^40
/// bytes (TMA's strides), every tensor's elements within 2^40, seq even under a causal mask
/// in the zigzag layout on more than one rank (`shape`).
pub fn check_shape(s: AttentionShape, world: u32) -> Result<()> {
    check_tensor_rules(s, world)?;
    if s.gathered_elems(world) > 1 << 40 {
        return Err(invalid("shape", format!("{s}: the keys and values of {world} ranks, {} elements, exceed 2^40", s.gathered_elems(world))));
    }
    Ok(())
}

/// The fused call's shape rules on `world` ranks with a workspace of `capacity_elems`:
/// [`check_shape`]'s, with the gathered keys and values held to the workspace
/// ([`check_gathered_fits`]) instead of 2^40. The largest workspace (2^37 elements) binds
/// before 2^40 does, so a refusal names the workspace rule, not a limit the call cannot reach.
pub fn check_fused_shape(s: AttentionShape, world: u32, capacity_elems: u64) -> Result<()> {
    check_tensor_rules(s, world)?;
    check_gathered_fits(s, world, capacity_elems)
}

/// [`check_shape`]'s rules but the gathered keys and values'.
fn check_tensor_rules(s: AttentionShape, world: u32) -> Result<()> {
    if world == 0 || world as usize > MAX_RANKS {
        return Err(invalid("world_size", format!("attention runs on 1..={MAX_RANKS} ranks, got {world}")));
    }
    if s.batch == 0 || s.seq == 0 || s.heads == 0 || s.kv_heads == 0 {
        return Err(invalid("shape", format!("batch, seq, heads and kv_heads must be positive, got {s}")));
    }
    if !s.heads.is_multiple_of(s.kv_heads) {
        return Err(invalid("shape", format!("heads ({}) must be a multiple of kv_heads ({}): grouped-query attention", s.heads, s.kv_heads)));
    }
    if !HEAD_DIMS.contains(&s.head_dim) {
        return Err(invalid("shape", format!("head_dim must be one of {HEAD_DIMS:?}, got {}", s.head_dim)));
    }
    if Mask::of(s, world) == Mask::CausalZigzag && !s.seq.is_multiple_of(2) {
        return Err(invalid("shape", format!("seq must be even in the zigzag layout (two chunks of S / 2 a rank), got {}", s.seq)));
    }
    if s.seq >= 1 << 31 {
        return Err(invalid("shape", format!("seq must be below 2^31 (TMA's signed 32-bit coordinates), got {}", s.seq)));
    }
    // (TMA: a sequence's stride, S x H x D x 2 bytes for q, the largest, below 2^40)
    let seq_bytes = s.seq as u64 * s.heads as u64 * s.head_dim as u64 * 2;
    if seq_bytes >= 1 << 40 {
        return Err(invalid("shape", format!("one sequence's queries, S x H x D = {} bf16, must stay below 2^40 bytes (TMA's strides)", seq_bytes / 2)));
    }
    if s.q_elems() > 1 << 40 {
        return Err(invalid("shape", format!("{s}: q and out of {} elements exceed 2^40", s.q_elems())));
    }
    Ok(())
}

/// The largest softmax scale [`check_scale`] takes (2^16; 1 / sqrt(D) is 0.088-0.125).
pub const MAX_SOFTMAX_SCALE: f32 = 65536.0;

/// The softmax scale rule: finite, positive and at most [`MAX_SOFTMAX_SCALE`]
/// (`softmax_scale`). The kernels take a block's max of the raw scores and P = 2^(s scale
/// log2(e) - m) in one FFMA (FlashAttention-3's softmax); with a negative scale the largest
/// scaled score would be the smallest raw one (FlashAttention's kernels take the same max,
/// with no sign). The base m is the scaled max rounded to fp32, so P's exponent is off by up
/// to half an ulp of it: harmless (O and l share it) while |scaled max| stays below ~2^27 in
/// base 2, past which P overflows or flushes (helper-118); the bound keeps that to raw
/// scores of ~2^11 and more at the largest scale, ~2^30 at 1 / sqrt(128).
pub fn check_scale(scale: f32) -> Result<()> {
    if !(scale.is_finite() && scale > 0.0 && scale <= MAX_SOFTMAX_SCALE) {
        return Err(invalid("softmax_scale", format!("must be finite, positive and at most {MAX_SOFTMAX_SCALE} (2^16), got {scale}")));
    }
    Ok(())
}

/// Name of the fused kernel.
pub fn kernel_name(head_dim: u32, mask: Mask, world: u32) -> String {
    format!("mkernel_ring_attention_d{head_dim}_{}_w{world}", mask.tag())
}

/// Name of the unfused kernel (`world` sources of keys and values).
pub fn unfused_kernel_name(head_dim: u32, mask: Mask, world: u32) -> String {
    format!("mkernel_attention_d{head_dim}_{}_w{world}", mask.tag())
}

fn entry(name: &str, call: &str, head_dim: u32) -> Result<KernelSource> {
    let (smem, threads, bm) = (smem_bytes(head_dim), threads(head_dim), block_m(head_dim));
    let entry = format!(
        "#include \"ops/ring_attention.cuh\"\n\
         extern \"C\" __global__ void __launch_bounds__({threads}, 1) {name}(const __grid_constant__ RingAttentionParams p) {{\n\
         \x20 {call}(p);\n}}\n\
         static_assert(mk::AttnSmem<{head_dim}>::kBytes == {smem}, \"shared memory differs from the host's smem_bytes\");\n\
         static_assert(mk::kAttnStages == {KV_STAGES} && mk::kAttnQStages == {Q_STAGES}, \"K/V or Q stages differ from the host's\");\n\
         static_assert(mk::AttnCfg<{head_dim}>::kThreads == {threads} && mk::AttnCfg<{head_dim}>::kBM == {bm} && mk::kAttnBN == {BLOCK_N}, \"tile differs from the host's\");\n"
    );
    Ok(KernelSource { name: name.to_string(), source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
}

fn check_kernel_args(head_dim: u32, world: u32, min_world: u32) -> Result<()> {
    if !HEAD_DIMS.contains(&head_dim) {
        return Err(invalid("head_dim", format!("must be one of {HEAD_DIMS:?}, got {head_dim}")));
    }
    crate::catalog::check_world(world, min_world, "this attention kernel")
}

/// Source of the fused kernel. Errors: a head dimension outside [`HEAD_DIMS`] (`head_dim`),
/// a world size outside 2..=[`MAX_RANKS`] (`world_size`).
pub fn source(head_dim: u32, mask: Mask, world: u32) -> Result<KernelSource> {
    check_kernel_args(head_dim, world, 2)?;
    entry(&kernel_name(head_dim, mask, world), &format!("mk::ring_attention_kernel<{head_dim}, {world}, {}>", mask.cuda()), head_dim)
}

/// Source of the unfused kernel. Errors: as [`source`], world sizes 1..=[`MAX_RANKS`] (2..
/// for the zigzag mask: with one source it is the contiguous one).
pub fn unfused_source(head_dim: u32, mask: Mask, world: u32) -> Result<KernelSource> {
    check_kernel_args(head_dim, world, if mask == Mask::CausalZigzag { 2 } else { 1 })?;
    entry(&unfused_kernel_name(head_dim, mask, world), &format!("mk::attention_kernel<{head_dim}, {world}, {}>", mask.cuda()), head_dim)
}

/// Every kernel: fused at world sizes 2..=[`MAX_RANKS`] and unfused at 1..=MAX_RANKS (the
/// zigzag mask from 2), for each head dimension and mask.
pub fn catalog() -> Result<Vec<KernelSource>> {
    let mut v = Vec::new();
    for d in HEAD_DIMS {
        for mask in Mask::ALL {
            if mask != Mask::CausalZigzag {
                v.push(unfused_source(d, mask, 1)?);
            }
            for world in 2..=MAX_RANKS as u32 {
                v.push(source(d, mask, world)?);
                v.push(unfused_source(d, mask, world)?);
            }
        }
    }
    Ok(v)
}

/// Checks a fused launch: the shape (on 2..=[`MAX_RANKS`] ranks), the gathered KV within the
/// workspace, the chunks within the inbox, the CTA split and the scale.
///
/// Errors name the argument: `world_size`, `shape`, `cfg`, `softmax_scale`, `rank`, `layout`.
pub fn validate(s: AttentionShape, cfg: &RingAttentionConfig, bufs: &RankBuffers) -> Result<()> {
    let world = bufs.world;
    if world < 2 {
        return Err(invalid("world_size", format!("ring attention needs 2..={MAX_RANKS} ranks (with one, call the unfused attention), got {world}")));
    }
    check_fused_shape(s, world, bufs.layout.capacity_elems)?;
    bufs.check()?;
    let l = bufs.layout;
    if cfg.chunk_rows == 0 || cfg.chunk_rows > s.seq {
        return Err(invalid("cfg", format!("chunk_rows must be 1..=seq = {}, got {}", s.seq, cfg.chunk_rows)));
    }
    if chunks(s, cfg.chunk_rows) > l.max_tiles {
        return Err(invalid(
            "cfg",
            format!("{} chunks of {} positions exceed the workspace's {} arrival flags a rank; use longer chunks", chunks(s, cfg.chunk_rows), cfg.chunk_rows, l.max_tiles),
        ));
    }
    if cfg.push_ctas == 0 || cfg.push_ctas >= cfg.grid {
        return Err(invalid("cfg", format!("push_ctas must be positive and below the grid, got {} of {}", cfg.push_ctas, cfg.grid)));
    }
    check_scale(cfg.softmax_scale)
}

/// Buffers of one attention launch (device addresses, bf16 unless said).
#[derive(Debug, Clone, Copy)]
pub struct AttentionBuffers {
    /// Queries \[B, S, H, D\].
    pub q: u64,
    /// Keys: fused, this rank's \[B, S, Hkv, D\]; unfused, every source's, \[world\]\[B, S, Hkv, D\].
    pub k: u64,
    /// Values, as `k`.
    pub v: u64,
    /// Output \[B, S, H, D\].
    pub out: u64,
    /// f32 \[B, H, S\] log-sum-exp of each query's scaled scores (natural log), or 0.
    pub lse: u64,
}

fn base_params(s: AttentionShape, b: AttentionBuffers, rank: u32, scale: f32) -> RingAttentionParams {
    RingAttentionParams {
        q: b.q,
        k: b.k,
        v: b.v,
        out: b.out,
        lse: b.lse,
        batch: s.batch,
        seq: s.seq,
        heads: s.heads,
        kv_heads: s.kv_heads,
        head_dim: s.head_dim,
        rank,
        scale_log2: scale * std::f32::consts::LOG2_E,
        ..Default::default()
    }
}

/// Launches one rank's fused ring attention on `stream`.
///
/// # Safety
/// The buffers must be valid device buffers of the shape's sizes (16-byte aligned) in
/// `stream`'s context, and every `bufs.workspace[q]` (q < world) must be mapped in it, with
/// all ranks launching the same shape and config (a collective call).
pub unsafe fn launch(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    buffers: AttentionBuffers,
    s: AttentionShape,
    cfg: RingAttentionConfig,
    bufs: &RankBuffers,
    timeout: Duration,
) -> Result<()> {
    validate(s, &cfg, bufs)?;
    let l = bufs.layout;
    let me = bufs.rank as usize;
    let mut p = RingAttentionParams {
        control: bufs.workspace[me] + l.control_offset(),
        status: bufs.status,
        chunk_rows: cfg.chunk_rows,
        num_comm_ctas: cfg.push_ctas,
        flag_stride: l.max_tiles as u32,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        ..base_params(s, buffers, bufs.rank, cfg.softmax_scale)
    };
    for q in 0..bufs.world as usize {
        let base = bufs.workspace[q];
        p.kv_gathered[q] = base + l.partial_offset();
        p.arrived[q] = base + l.ready_offset();
        p.exit_flags[q] = base + l.exit_offset();
    }
    let (d, world) = (s.head_dim, bufs.world);
    tma_maps(s, &buffers, s.batch as u64, Some((p.kv_gathered[me], world)), Mask::of(s, world) == Mask::CausalZigzag, &mut p)?;
    let mask = Mask::of(s, world);
    let f = rt.function_named(stream.context(), &kernel_name(d, mask, world), || source(d, mask, world))?;
    driver::launch(&f, LaunchDims { grid: cfg.grid, block: threads(d), smem_bytes: smem_bytes(d) }, stream, &p)
}

/// Launches the unfused attention of rank `rank` of `world` on `stream`: its queries against
/// `world` sources of keys and values already whole (`buffers.k`, `buffers.v`: \[world\]\[B,
/// S, Hkv, D\], source q holding rank q's positions, `s.layout`), on `grid` CTAs (at most
/// [`units`] find work). With world 1: plain attention on one GPU.
///
/// Errors: `world_size`, `shape`, `rank` (outside the world), `grid` (0), `softmax_scale`.
///
/// # Safety
/// The buffers must be valid device buffers of those sizes (16-byte aligned) in `stream`'s
/// context.
pub unsafe fn launch_unfused(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    buffers: AttentionBuffers,
    s: AttentionShape,
    world: u32,
    rank: u32,
    grid: u32,
    softmax_scale: f32,
) -> Result<()> {
    check_shape(s, world)?;
    check_scale(softmax_scale)?;
    if rank >= world {
        return Err(invalid("rank", format!("rank {rank} is outside the world of {world}")));
    }
    if grid == 0 {
        return Err(invalid("grid", "must be at least 1 CTA"));
    }
    let mut p = base_params(s, buffers, rank, softmax_scale);
    tma_maps(s, &buffers, world as u64 * s.batch as u64, None, Mask::of(s, world) == Mask::CausalZigzag, &mut p)?;
    let d = s.head_dim;
    let mask = Mask::of(s, world);
    let f = rt.function_named(stream.context(), &unfused_kernel_name(d, mask, world), || unfused_source(d, mask, world))?;
    driver::launch(&f, LaunchDims { grid, block: threads(d), smem_bytes: smem_bytes(d) }, stream, &p)
}

/// The fused call's workspace rule (`shape`): its gathered KV, world x 2 x B x S x Hkv x D
/// elements, within the communicator's workspace of `capacity_elems`, and so within the
/// largest workspace there is ([`crate::gemm_allreduce::MAX_CAPACITY_ELEMS`]); the error says
/// which to change.
pub fn check_gathered_fits(s: AttentionShape, world: u32, capacity_elems: u64) -> Result<()> {
    let need = s.gathered_elems(world);
    if need > capacity_elems {
        return Err(invalid(
            "shape",
            format!(
                "the gathered keys and values, {world} x 2 x B x S x Hkv x D = {need} elements, exceed the communicator workspace ({capacity_elems} elements); {}",
                crate::gemm_allreduce::workspace_remedy(need, "split the call into fewer sequences or positions")
            ),
        ));
    }
    Ok(())
}

/// The workspace capacity (elements, `CommConfig::max_output_elems`) a fused call of `s` on
/// `world` ranks needs at least: its gathered KV.
pub fn workspace_elems_needed(s: AttentionShape, world: u32) -> u64 {
    s.gathered_elems(world)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm_allreduce::WorkspaceLayout;

    fn shape() -> AttentionShape {
        AttentionShape { batch: 2, seq: 1000, heads: 8, kv_heads: 2, head_dim: 128, causal: true, layout: SeqLayout::Contiguous }
    }

    fn bufs(world: u32, capacity: u64) -> RankBuffers {
        RankBuffers { rank: world - 1, world, workspace: [0x1000_0000; MAX_RANKS], layout: WorkspaceLayout::new(capacity, world).unwrap(), status: 0x3000 }
    }

    #[test]
    fn validate_names_what_is_wrong() {
        let s = shape();
        let good = RingAttentionConfig { push_ctas: 4, grid: 132, chunk_rows: 128, softmax_scale: 0.088 };
        let b = bufs(2, 1 << 24);
        validate(s, &good, &b).unwrap();
        let err = |s, cfg: RingAttentionConfig, b: &RankBuffers| validate(s, &cfg, b).unwrap_err().to_string();
        assert!(err(AttentionShape { heads: 6, kv_heads: 4, ..s }, good, &b).contains("multiple of kv_heads"));
        assert!(err(AttentionShape { head_dim: 96, ..s }, good, &b).contains("head_dim"));
        for z in [AttentionShape { batch: 0, ..s }, AttentionShape { seq: 0, ..s }, AttentionShape { heads: 0, ..s }, AttentionShape { kv_heads: 0, ..s }] {
            assert!(err(z, good, &b).contains("`shape`"), "{z}");
        }
        let e = err(s, good, &bufs(2, 1 << 20));
        assert!(e.contains("gathered keys and values") && e.contains("max_output_elems >= 2048000"), "{e}");
        for c in [0, 1001] {
            assert!(err(s, RingAttentionConfig { chunk_rows: c, ..good }, &b).contains("chunk_rows"), "{c}");
        }
        assert!(err(s, RingAttentionConfig { push_ctas: 0, ..good }, &b).contains("push_ctas"));
        assert!(err(s, RingAttentionConfig { push_ctas: 132, ..good }, &b).contains("push_ctas"));
        for sc in [0.0, -0.0, -0.1, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, 2.4e38, 65536.01, 1e9] {
            assert!(err(s, RingAttentionConfig { softmax_scale: sc, ..good }, &b).contains("`softmax_scale`"), "{sc}");
        }
        assert!(err(s, good, &bufs(1, 1 << 24)).contains("`world_size`"));
        let e = err(AttentionShape { seq: 1 << 30, ..s }, good, &b);
        assert!(e.contains("2^40"), "{e}");
        // (TMA: coordinates below 2^31; one sequence's queries below 2^40 bytes)
        let e = check_shape(AttentionShape { batch: 1, seq: 1 << 31, heads: 1, kv_heads: 1, head_dim: 64, causal: false, layout: SeqLayout::Contiguous }, 2).unwrap_err().to_string();
        assert!(e.contains("seq must be below 2^31"), "{e}");
        let e = check_shape(AttentionShape { batch: 1, seq: 1 << 30, heads: 8, kv_heads: 1, head_dim: 128, causal: false, layout: SeqLayout::Contiguous }, 2).unwrap_err().to_string();
        assert!(e.contains("TMA's strides"), "{e}");
        // Beyond the largest workspace there is: no max_output_elems to suggest.
        let big = AttentionShape { batch: 1, seq: 1 << 28, heads: 8, kv_heads: 8, head_dim: 64, causal: false, layout: SeqLayout::Contiguous };
        check_shape(big, 2).unwrap();
        let e = check_gathered_fits(big, 2, 1 << 37).unwrap_err().to_string();
        assert!(e.contains("largest communicator workspace") && !e.contains("max_output_elems >="), "{e}");
        assert!(check_gathered_fits(s, 2, s.gathered_elems(2)).is_ok());
    }

    /// The fused call's gathered keys and values are held to the workspace (2^37 elements
    /// at most), which binds before check_shape's 2^40: a refusal names it; and element counts
    /// saturate rather than wrap (a debug build panicked on B x S x H x D past u64).
    #[test]
    fn fused_refusals_name_the_binding_rule() {
        let huge = AttentionShape { batch: 512, seq: 1 << 20, heads: 8, kv_heads: 8, head_dim: 128, causal: false, layout: SeqLayout::Contiguous };
        assert!(huge.gathered_elems(2) > 1 << 40 && huge.q_elems() <= 1 << 40);
        assert!(check_shape(huge, 2).unwrap_err().to_string().contains("exceed 2^40"));
        let good = RingAttentionConfig { push_ctas: 4, grid: 132, chunk_rows: 128, softmax_scale: 0.088 };
        for e in [check_fused_shape(huge, 2, 1 << 37).unwrap_err().to_string(), validate(huge, &good, &bufs(2, 1 << 24)).unwrap_err().to_string()] {
            assert!(e.contains("largest communicator workspace") && e.contains("2^37") && !e.contains("2^40"), "{e}");
        }
        let s = shape();
        assert!(check_fused_shape(s, 2, s.gathered_elems(2)).is_ok());
        let e = check_fused_shape(s, 2, s.gathered_elems(2) - 1).unwrap_err().to_string();
        assert!(e.contains(&format!("max_output_elems >= {}", s.gathered_elems(2))), "{e}");
        assert!(check_fused_shape(AttentionShape { head_dim: 96, ..s }, 2, 1 << 37).unwrap_err().to_string().contains("head_dim"));
        let wide = AttentionShape { batch: u32::MAX, seq: 1 << 20, heads: 256, kv_heads: 256, head_dim: 64, causal: false, layout: SeqLayout::Contiguous };
        assert_eq!((wide.q_elems(), wide.kv_elems(), wide.gathered_elems(8)), (u64::MAX, u64::MAX, u64::MAX));
        assert_eq!(AttentionShape { batch: u32::MAX, seq: u32::MAX, heads: u32::MAX, ..wide }.lse_elems(), u64::MAX);
        assert!(check_shape(wide, 2).unwrap_err().to_string().contains("exceed 2^40"));
        assert!(check_fused_shape(wide, 2, 1 << 37).is_err());
    }

    #[test]
    fn default_chunks_fit_the_flags() {
        let s = shape();
        assert_eq!(default_chunk_rows(s), 128);
        assert_eq!(default_chunk_rows(AttentionShape { seq: 100, ..s }), 100);
        // Chunks of one position fit the flags of the smallest workspace that holds the KV.
        for t in [s, AttentionShape { kv_heads: 1, head_dim: 64, heads: 1, ..s }] {
            let flags = WorkspaceLayout::new(t.gathered_elems(2), 2).unwrap().max_tiles;
            assert!(chunks(t, 1) <= flags, "{t}: {} chunks, {flags} flags", chunks(t, 1));
        }
    }

    #[test]
    fn flops_count_the_pairs_each_rank_sees() {
        let s = AttentionShape { batch: 1, seq: 4, heads: 1, kv_heads: 1, head_dim: 64, causal: false, layout: SeqLayout::Contiguous };
        assert_eq!(s.flops(2, 0), 4.0 * 32.0 * 64.0);
        let c = AttentionShape { causal: true, ..s };
        // rank 1: all 4 x 4 pairs of rank 0's keys, 10 on its own diagonal
        assert_eq!(c.flops(2, 1), 4.0 * 26.0 * 64.0);
        assert_eq!(c.flops(2, 0), 4.0 * 10.0 * 64.0);
    }

    /// The pairs (query, key) with key position <= query position that rank `rank` sees,
    /// counted from `position` alone.
    fn causal_pairs(s: AttentionShape, world: u32, rank: u32) -> f64 {
        let mut n = 0u64;
        for i in 0..s.seq {
            let qp = s.position(world, rank, i);
            n += (0..world).flat_map(|src| (0..s.seq).map(move |j| (src, j))).filter(|&(src, j)| s.position(world, src, j) <= qp).count() as u64;
        }
        n as f64
    }

    #[test]
    fn zigzag_positions_cover_the_sequence_and_balance_causal_work() {
        for (world, seq) in [(2u32, 4u32), (3, 6), (4, 10), (2, 2)] {
            let z = AttentionShape { batch: 1, seq, heads: 1, kv_heads: 1, head_dim: 64, causal: true, layout: SeqLayout::Zigzag };
            let mut all: Vec<u64> = (0..world).flat_map(|r| (0..seq).map(move |i| z.position(world, r, i))).collect();
            all.sort();
            assert_eq!(all, (0..(world * seq) as u64).collect::<Vec<_>>(), "world {world} S {seq}: a permutation");
            // Rank r: chunk r, then chunk 2 world - 1 - r, each in order.
            let half = (seq / 2) as u64;
            assert_eq!(z.position(world, 0, 0), 0);
            assert_eq!(z.position(world, 0, seq / 2), (2 * world as u64 - 1) * half);
            for r in 0..world {
                let want = causal_pairs(z, world, r);
                assert_eq!(z.flops(world, r), 4.0 * want * 64.0, "world {world} S {seq} rank {r}");
                assert_eq!(z.flops(world, r), z.flops(world, 0), "balanced");
                let c = AttentionShape { layout: SeqLayout::Contiguous, ..z };
                assert_eq!(c.flops(world, r), 4.0 * causal_pairs(c, world, r) * 64.0, "contiguous: world {world} rank {r}");
            }
        }
        // The kernels' masks: a full mask ignores the layout, one source has no zigzag.
        let z = AttentionShape { batch: 1, seq: 8, heads: 1, kv_heads: 1, head_dim: 64, causal: true, layout: SeqLayout::Zigzag };
        assert_eq!(Mask::of(z, 2), Mask::CausalZigzag);
        assert_eq!(Mask::of(z, 1), Mask::Causal);
        assert_eq!(Mask::of(AttentionShape { causal: false, ..z }, 4), Mask::Full);
        assert_eq!(units(z, 2), 2);
        let z128 = AttentionShape { head_dim: 128, ..z };
        assert_eq!(units(AttentionShape { seq: 258, ..z128 }, 2), 4, "two ragged segments of 129");
        assert_eq!(units(AttentionShape { seq: 258, ..z128 }, 1), 3, "one source: the contiguous kernel's units");
        let bm64 = block_m(64) as u64;
        assert_eq!(units(AttentionShape { seq: 258, ..z }, 2), 2 * 129u64.div_ceil(bm64), "D = 64: units of block_m(64) rows");
        assert_eq!(units(AttentionShape { seq: 258, ..z }, 1), 258u64.div_ceil(bm64));
        let e = check_shape(AttentionShape { seq: 7, ..z }, 2).unwrap_err().to_string();
        assert!(e.contains("`shape`") && e.contains("even"), "{e}");
        check_shape(AttentionShape { seq: 7, causal: false, ..z }, 2).unwrap();
        check_shape(AttentionShape { seq: 7, ..z }, 1).unwrap();
        let mut one: Vec<u64> = (0..7).map(|i| AttentionShape { seq: 7, ..z }.position(1, 0, i)).collect();
        one.sort();
        assert_eq!(one, (0..7).collect::<Vec<_>>(), "world 1: the contiguous order");
    }

    #[test]
    fn catalog_names_are_unique_and_cover_every_world_size() {
        let c = catalog().unwrap();
        assert_eq!(c.len(), HEAD_DIMS.len() * (2 * (1 + 2 * (MAX_RANKS - 1)) + 2 * (MAX_RANKS - 1)));
        let mut names: Vec<_> = c.iter().map(|k| k.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), c.len());
        assert!(source(128, Mask::Full, 1).is_err() && unfused_source(128, Mask::Full, 0).is_err() && source(96, Mask::Causal, 2).is_err());
        assert!(unfused_source(128, Mask::CausalZigzag, 1).is_err() && unfused_source(128, Mask::CausalZigzag, 2).is_ok());
        assert_eq!(smem_bytes(128), 196608 + 112 + 32 + 1024);
        assert!(smem_bytes(128) <= 232_448, "Hopper's shared memory per CTA");
        let c64 = consumers(64);
        assert_eq!((block_m(64), threads(64), block_m(128), threads(128)), (64 * c64, 128 * (c64 + 1), 128, 384));
        assert_eq!(smem_bytes(64), 2 * 64 * (2 * 64 * c64 + 4 * 128) + 8 * (4 + 8 + c64) + 32 + 1024);
        assert!(smem_bytes(64) <= 232_448, "Hopper's shared memory per CTA");
    }
}
