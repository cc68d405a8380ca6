//! `Communicator::ring_attention`: sequence-parallel attention, where rank r holds S positions
//! of every sequence (\[r S, (r + 1) S), or in the zigzag layout chunks r and 2 world - 1 - r
//! of S / 2: `SeqLayout`) and computes its queries' attention over the whole
//! sequence's keys and values, in one persistent kernel per GPU that pushes its keys and
//! values to the peers while it computes (`mkernel_kernels::ring_attention`); and
//! [`attention`], the same loop on one GPU over keys and values already whole (plain
//! attention, and the unfused baseline after an all-gather).
//!
//! Status: its tests (`tests/tests/gpu_ring_attention.rs`) pass with 2-4 ranks sharing one
//! GPU and `mkernel bench ring-attention --check` with 2 (runs 429-438, the zigzag layout
//! since 433; bench/NOTES.md 60-63); not yet run with a GPU per rank, so not yet timed
//! against NCCL. The compute loop has FlashAttention-3's structure (a TMA producer warp, two
//! wgmma consumer warpgroups taking turns at the tensor cores (three at D = 64, with units of
//! 192 query rows), the intra-warpgroup overlap, two Q stages, one FFMA and one ex2 a score,
//! O rescaled only where a row's max passes its base by 2^8 (FlashAttention-4's conditional
//! rescaling)): on an H200 (run 447, interleaved with PyTorch's cuDNN backend on the same GPU,
//! ratios per pass) 0.90-1.06x cuDNN's fused attention at D = 128 and 1.00-1.02x at D = 64;
//! 1.5-1.9x PyTorch's FlashAttention-2 backend (runs 435-436, H100, before the rescaling).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};
use half::bf16;
use mkernel_kernels::driver::Runtime;
use mkernel_kernels::ring_attention::{self as ra, AttentionBuffers, AttentionShape, RingAttentionConfig};

use crate::comm::Communicator;
use crate::error::{invalid, Result};
use crate::gemm_allreduce::PlanContext;

/// Overrides of a ring attention call's choices (all `None`: the defaults).
#[derive(Debug, Clone, Copy, Default)]
pub struct RingAttentionOptions {
    /// CTAs that push this rank's keys and values (>= 1, below the rank's CTAs). None:
    /// [`ra::DEFAULT_PUSH_CTAS`], at most half the rank's CTAs.
    pub push_ctas: Option<u32>,
    /// Positions of a sequence per arrival flag (>= 1; more than S means one chunk a
    /// sequence). None: [`ra::default_chunk_rows`] (128).
    pub chunk_rows: Option<u32>,
    /// The softmax scale (finite, positive, at most [`crate::MAX_SOFTMAX_SCALE`] = 2^16:
    /// the kernels' base, the scaled max rounded to fp32, must stay far from overflow). None:
    /// 1 / sqrt(head_dim).
    pub softmax_scale: Option<f32>,
}

fn scale_or_default(s: AttentionShape, scale: Option<f32>) -> Result<f32> {
    let scale = scale.unwrap_or(1.0 / (s.head_dim as f32).sqrt());
    ra::check_scale(scale)?;
    Ok(scale)
}

/// The configuration a ring attention call of `shape` would use on a communicator described
/// by `ctx`.
///
/// Errors: a context no communicator has (`ctx`), one rank (`world_size`: call
/// [`attention`]), a shape outside the rules of
/// `mkernel_kernels::ring_attention::check_fused_shape` (`check_shape`'s, with the gathered
/// keys and values, world x 2 x B x S x Hkv x D, within the workspace, at most 2^37
/// elements) (`shape`), push CTAs that are 0 or leave no compute CTA (`push_ctas`), 0 chunk
/// rows (`chunk_rows`), a bad scale (`softmax_scale`).
pub fn plan_ring_attention(shape: AttentionShape, opts: RingAttentionOptions, ctx: PlanContext) -> Result<RingAttentionConfig> {
    ctx.check()?;
    let world = ctx.world_size;
    if world < 2 {
        return Err(invalid("world_size", format!("ring attention needs 2..={} ranks (with one, call mkernel::attention), got {world}", mkernel_kernels::params::MAX_RANKS)));
    }
    ra::check_fused_shape(shape, world, ctx.max_output_elems)?;
    let push_ctas = match opts.push_ctas {
        Some(c) if c == 0 || c >= ctx.grid => {
            return Err(invalid("push_ctas", format!("must be 1 to {} (below the rank's {} CTAs), got {c}", ctx.grid - 1, ctx.grid)));
        }
        Some(c) => c,
        None => ra::DEFAULT_PUSH_CTAS.min(ctx.grid / 2).max(1),
    };
    // (any length fits the flags of a workspace that holds the gathered KV: ra::default_chunk_rows)
    let chunk_rows = match opts.chunk_rows {
        Some(0) => return Err(invalid("chunk_rows", "must be at least 1")),
        Some(c) => c.min(shape.seq),
        None => ra::default_chunk_rows(shape),
    };
    let softmax_scale = scale_or_default(shape, opts.softmax_scale)?;
    let compute = ra::units(shape, world).min((ctx.grid - push_ctas) as u64) as u32;
    Ok(RingAttentionConfig { push_ctas, grid: push_ctas + compute, chunk_rows, softmax_scale })
}

/// Which keys and values an [`attention`] call reads: `world` sources, source q holding rank
/// q's positions (\[q S, (q + 1) S), or as the shape's `layout` says), and the queries' own
/// rank (which positions they are: what a causal mask compares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvSources {
    /// Sources of keys and values (1..=MAX_RANKS).
    pub world: u32,
    /// The queries' rank (< world).
    pub rank: u32,
}

impl Default for KvSources {
    fn default() -> Self {
        Self { world: 1, rank: 0 }
    }
}

/// The most CTAs `AttentionOptions::ctas` may ask for: far more than any GPU's SMs (each CTA
/// takes a whole SM), so a wrong value is refused by name rather than by the driver.
const MAX_CTAS: u32 = 65535;

/// Options of [`attention`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AttentionOptions {
    /// The softmax scale (finite, positive, at most [`crate::MAX_SOFTMAX_SCALE`] = 2^16). None:
    /// 1 / sqrt(head_dim).
    pub softmax_scale: Option<f32>,
    /// The keys' sources (default: one, the queries' own sequence).
    pub sources: KvSources,
    /// CTAs of the launch, 1 to 65535 (at most [`crate::attention_units`] find work: a unit is
    /// [`crate::attention_block_m`] query rows, 128 at D = 128 and 192 at D = 64, of one
    /// sequence and head; zigzag, of one half of a shard): fewer than the GPU's SMs leaves SMs
    /// to concurrent kernels. None: one per SM, at most the units.
    pub ctas: Option<u32>,
}

fn check_len<T>(arg: &'static str, buf: &CudaSlice<T>, want: u64, what: &str) -> Result<()> {
    if (buf.len() as u64) < want {
        return Err(invalid(arg, format!("must hold {what} = {want} elements, got {}", buf.len())));
    }
    Ok(())
}

/// The length rules of an attention call's buffers (`sources` sources of keys and values
/// each), and the GPU each is on, by argument name.
fn check_buffers(
    q: &CudaSlice<bf16>,
    k: &CudaSlice<bf16>,
    v: &CudaSlice<bf16>,
    out: &CudaSlice<bf16>,
    lse: Option<&CudaSlice<f32>>,
    s: AttentionShape,
    sources: u32,
) -> Result<Vec<(&'static str, usize)>> {
    let kv = if sources == 1 { "[B, S, Hkv, D]" } else { "[sources, B, S, Hkv, D]" };
    check_len("q", q, s.q_elems(), "[B, S, H, D]")?;
    check_len("k", k, sources as u64 * s.kv_elems(), kv)?;
    check_len("v", v, sources as u64 * s.kv_elems(), kv)?;
    check_len("out", out, s.q_elems(), "[B, S, H, D]")?;
    let mut ordinals = vec![("q", q.ordinal()), ("k", k.ordinal()), ("v", v.ordinal()), ("out", out.ordinal())];
    if let Some(l) = lse {
        check_len("lse", l, s.lse_elems(), "[B, H, S] f32")?;
        ordinals.push(("lse", l.ordinal()));
    }
    Ok(ordinals)
}

/// Device addresses of an attention call's buffers on `stream` (the guards record the
/// call's use of each buffer on the stream when they drop, after the launch).
fn addresses<'a>(
    stream: &'a Arc<CudaStream>,
    q: &'a CudaSlice<bf16>,
    k: &'a CudaSlice<bf16>,
    v: &'a CudaSlice<bf16>,
    out: &'a mut CudaSlice<bf16>,
    lse: Option<&'a mut CudaSlice<f32>>,
) -> (AttentionBuffers, Vec<SyncOnDrop<'a>>) {
    let (pq, gq) = q.device_ptr(stream);
    let (pk, gk) = k.device_ptr(stream);
    let (pv, gv) = v.device_ptr(stream);
    let (po, go) = out.device_ptr_mut(stream);
    let mut guards = vec![gq, gk, gv, go];
    let mut plse = 0;
    if let Some(l) = lse {
        let (p, g) = l.device_ptr_mut(stream);
        plse = p;
        guards.push(g);
    }
    (AttentionBuffers { q: pq, k: pk, v: pv, out: po, lse: plse }, guards)
}

/// Attention on one GPU: out\[B, S, H, D\] = softmax(q k^T x scale) v (causal where
/// `shape.causal`), with `k`, `v` \[world\]\[B, S, Hkv, D\] holding `opts.sources.world`
/// sources (one by default: plain attention over S positions), bf16, and optionally
/// `lse` f32 \[B, H, S\] (the natural log of each query's softmax sum of scaled scores, as
/// FlashAttention's `softmax_lse`), enqueued on `stream`. The same loop as
/// [`Communicator::ring_attention`]'s compute CTAs, one CTA per SM (at most the units)
/// unless `opts.ctas` says otherwise.
///
/// Errors: the shape rules (`shape`, `world_size`), `rank` outside the sources, a bad scale
/// (`softmax_scale`), `ctas` outside 1..=65535, a buffer too short (`q`, `k`, `v`, `out`, `lse`) or on
/// another GPU (`stream`), a device that is not sm_90, a compile or driver error.
pub fn attention(
    stream: &Arc<CudaStream>,
    q: &CudaSlice<bf16>,
    k: &CudaSlice<bf16>,
    v: &CudaSlice<bf16>,
    out: &mut CudaSlice<bf16>,
    lse: Option<&mut CudaSlice<f32>>,
    shape: AttentionShape,
    opts: AttentionOptions,
) -> Result<()> {
    let KvSources { world, rank } = opts.sources;
    ra::check_shape(shape, world)?;
    let scale = scale_or_default(shape, opts.softmax_scale)?;
    if rank >= world {
        return Err(invalid("rank", format!("the queries' rank {rank} must be below the {world} sources")));
    }
    if let Some(c) = opts.ctas.filter(|c| !(1..=MAX_CTAS).contains(c)) {
        return Err(invalid("ctas", format!("must be 1 to {MAX_CTAS} (None: one per SM), got {c}")));
    }
    for (arg, ordinal) in check_buffers(q, k, v, out, lse.as_deref(), shape, world)? {
        crate::gemm::check_same_device(stream, ordinal, arg)?;
    }
    let info = mkernel_kernels::driver::device_info(stream.context())?;
    mkernel_kernels::driver::require_hopper(&info)?;
    let grid = opts.ctas.unwrap_or_else(|| (info.sm_count as u64).min(ra::units(shape, world)).max(1) as u32);
    let (b, guards) = addresses(stream, q, k, v, out, lse);
    // SAFETY: buffers checked for the shape on the stream's GPU.
    let launched = unsafe { ra::launch_unfused(Runtime::global(), stream, b, shape, world, rank, grid, scale) };
    drop(guards);
    Ok(launched?)
}

impl Communicator {
    /// The configuration a [`Communicator::ring_attention`] call of this shape would use
    /// ([`plan_ring_attention`] on this communicator).
    ///
    /// Errors: as [`plan_ring_attention`].
    pub fn plan_ring_attention(&self, shape: AttentionShape, opts: RingAttentionOptions) -> Result<RingAttentionConfig> {
        plan_ring_attention(shape, opts, self.plan_context())
    }

    /// Ring attention: this rank holds S positions of each of the batch's sequences
    /// (`shape.layout`: \[r S, (r + 1) S), or zigzag, chunks r and 2 world - 1 - r of S / 2),
    /// `q` \[B, S, H, D\], `k` and `v` \[B, S, Hkv, D\] (bf16, row-major: the
    /// `[batch, seq, heads, head_dim]` layout of FlashAttention), and gets `out` \[B, S, H,
    /// D\] = softmax(q K^T x scale) V over every rank's keys and values K, V (causal: keys at
    /// positions <= the query's), and optionally `lse` f32 \[B, H, S\] (natural log of each
    /// query's softmax sum, for a backward pass or merging), enqueued on `stream`.
    ///
    /// A collective: every rank calls it with the same shape and options, in the same order
    /// relative to the communicator's other calls. The keys and values of every rank are
    /// gathered into the communicator's workspace (world x 2 x B x S x Hkv x D elements must
    /// not exceed `CommConfig::max_output_elems`); a peer that never calls makes this rank's
    /// wait for its keys time out after `CommConfig::timeout`: [`Communicator::synchronize`]
    /// then returns an error naming the peer and the chunk, and the communicator refuses
    /// further calls. Causal attention with contiguous shards is unbalanced (rank r computes
    /// r + 1/2 shards' worth of keys): the last rank takes longest, and every rank's call ends
    /// only when every peer is done reading its keys (the exit handshake, bounded by the same
    /// timeout): where the last rank's compute outlasts the first's by more than
    /// `CommConfig::timeout` (world 8, 64 heads of 128: ~200K positions a rank at the default
    /// 30 s), raise the timeout, or the call reports a `PeerExit` timeout (helper-105). The
    /// zigzag layout (`SeqLayout::Zigzag`) gives every rank the same work.
    ///
    /// Status: see the module documentation.
    ///
    /// Errors: as [`plan_ring_attention`]; a buffer too short for the shape (`q`, `k`, `v`,
    /// `out`, `lse`) or on another GPU; a communicator that failed before.
    #[allow(clippy::too_many_arguments)]
    pub fn ring_attention(
        &self,
        stream: &Arc<CudaStream>,
        q: &CudaSlice<bf16>,
        k: &CudaSlice<bf16>,
        v: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        lse: Option<&mut CudaSlice<f32>>,
        shape: AttentionShape,
        opts: RingAttentionOptions,
    ) -> Result<RingAttentionConfig> {
        self.check_usable()?;
        let cfg = self.plan_ring_attention(shape, opts)?;
        let ordinals = check_buffers(q, k, v, out, lse.as_deref(), shape, 1)?;
        self.check_on_own_gpu(stream, &ordinals)?;
        self.order_after_last(stream)?;
        let (b, guards) = addresses(stream, q, k, v, out, lse);
        let bufs = self.rank_buffers();
        // SAFETY: buffers checked for `shape` on this rank's GPU; the workspace and peer
        // mappings live as long as `self`.
        let launched = unsafe { ra::launch(Runtime::global(), stream, b, shape, cfg, &bufs, self.config().timeout) };
        drop(guards);
        self.finish_launch(launched, stream)?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mkernel_kernels::ring_attention::SeqLayout;

    fn ctx(world: u32, grid: u32, max: u64) -> PlanContext {
        PlanContext::new(world, grid, false, max).unwrap()
    }

    fn shape() -> AttentionShape {
        AttentionShape { batch: 1, seq: 8192, heads: 32, kv_heads: 8, head_dim: 128, causal: false, layout: SeqLayout::Contiguous }
    }

    #[test]
    fn default_plans_are_launchable() {
        let d = RingAttentionOptions::default();
        let p = plan_ring_attention(shape(), d, ctx(2, 132, 1 << 27)).unwrap();
        assert_eq!((p.push_ctas, p.grid, p.chunk_rows), (4, 132, 128), "{p}");
        assert!((p.softmax_scale - 1.0 / 128f32.sqrt()).abs() < 1e-7);
        // Few units: only as many compute CTAs as units.
        let small = AttentionShape { seq: 100, heads: 2, kv_heads: 1, ..shape() };
        let p = plan_ring_attention(small, d, ctx(4, 132, 1 << 27)).unwrap();
        assert_eq!((p.grid - p.push_ctas, p.chunk_rows), (2, 100), "{p}");
        for grid in 2..=9 {
            let p = plan_ring_attention(shape(), d, ctx(2, grid, 1 << 27)).unwrap();
            assert!(p.push_ctas >= 1 && p.push_ctas < p.grid && p.grid <= grid, "{grid}: {p}");
        }
    }

    #[test]
    fn bad_calls_are_refused_by_name() {
        let d = RingAttentionOptions::default();
        let c = ctx(2, 132, 1 << 27);
        let err = |s, o, c| plan_ring_attention(s, o, c).unwrap_err().to_string();
        assert!(err(shape(), d, ctx(1, 132, 1 << 27)).contains("`world_size`"));
        assert!(err(AttentionShape { kv_heads: 5, ..shape() }, d, c).contains("`shape`"));
        let need = ra::workspace_elems_needed(shape(), 2);
        let e = err(shape(), d, ctx(2, 132, need - 1));
        assert!(e.contains("`shape`") && e.contains(&format!("max_output_elems >= {need}")), "{e}");
        assert!(plan_ring_attention(shape(), d, ctx(2, 132, need)).is_ok());
        for pc in [0, 132, 1000] {
            assert!(err(shape(), RingAttentionOptions { push_ctas: Some(pc), ..d }, c).contains("`push_ctas`"), "{pc}");
        }
        assert!(err(shape(), RingAttentionOptions { chunk_rows: Some(0), ..d }, c).contains("`chunk_rows`"));
        // (a workspace that holds the gathered KV has flags for chunks of one position:
        // capacity / 64 of them, against 4 x B x S >= world x 2 x B x S x Hkv x D / 64 needed)
        assert_eq!(plan_ring_attention(shape(), RingAttentionOptions { chunk_rows: Some(1), ..d }, ctx(2, 132, need)).unwrap().chunk_rows, 1);
        assert_eq!(plan_ring_attention(shape(), RingAttentionOptions { chunk_rows: Some(u32::MAX), ..d }, c).unwrap().chunk_rows, 8192);
        for sc in [0.0, -0.1, f32::NAN, f32::NEG_INFINITY, f32::MAX, 65537.0] {
            assert!(err(shape(), RingAttentionOptions { softmax_scale: Some(sc), ..d }, c).contains("`softmax_scale`"), "{sc}");
        }
        assert!(err(shape(), d, PlanContext { grid: 1, ..c }).contains("`ctx`"));
    }
}
