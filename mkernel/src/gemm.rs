//! `mkernel::gemm`: C = A * B^T on one GPU with the Hopper GEMM engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use mkernel_kernels::driver::{LaunchOrder, Runtime};
use mkernel_kernels::gemm::{GemmShape, LastWaveSplit, SplitWorkspace, TileConfig};

use crate::error::{invalid, DriverContext, Result};

/// Options of [`gemm`].
#[derive(Debug, Clone, Copy)]
pub struct GemmOptions {
    /// Tile configuration, one of [`TileConfig::gemm_catalog`] ([`TileConfig::ALL`], the
    /// swapped-operand tiles of [`TileConfig::all_swapped`], the column-fitted ones of
    /// [`TileConfig::cols`], and those in 2-CTA clusters along N,
    /// [`TileConfig::cols_tma_store_n2`] and [`TileConfig::NARROW_TMA_STORE_N2`], which never
    /// split); `None` lets the heuristic choose ([`TileConfig::choose_for`]).
    pub tile: Option<TileConfig>,
    /// Bound on every wait inside the kernel (an expired wait traps the kernel), 1 ms to
    /// 1 day; default 10 s.
    pub timeout: Duration,
    /// K-slices for the tiles left over after the full waves ([`LastWaveSplit`]; TMA-store
    /// tiles without clusters, [`TileConfig::can_split_last_wave`]). `Slices(n)` with
    /// n >= 2 needs [`gemm_with_workspace`]; `Auto` (the default) splits with no tile forced
    /// where a split rule applies ([`TileConfig::split_rule_for`]: in [`gemm`] on a workspace
    /// it keeps for the stream, in [`gemm_with_workspace`] on the caller's), and takes the
    /// rules' picks of 1 slice (a tile unsplit) with or without a workspace
    /// ([`TileConfig::split_rule_without_workspace`]); `Off` never splits and takes the tile
    /// heuristic's tile ([`TileConfig::choose_for`]).
    pub split_last_wave: LastWaveSplit,
    /// Launch as a programmatic dependent launch (CUDA's PDL; default `true`): where the
    /// work directly before the call on `stream` is a kernel, the GEMM's CTAs may start
    /// (shared memory and barrier set-up) while that kernel ends, and they read and write
    /// nothing (A, B, C, the workspace) before it has completed and its writes are
    /// visible (`griddepcontrol.wait`), so the call is as stream-ordered as without. A
    /// GEMM after this one on the stream, launched so too, is scheduled once every CTA of
    /// this one has exited (the kernel triggers nothing earlier), and waits for its
    /// completion as above.
    ///
    /// Measured on one H200, 20 identical calls back to back (`mkernel bench gemm
    /// --back-to-back 20`, bench/NOTES.md 34.1): 1.3-2.1 us less a call than serialized on
    /// every shape of runs 276-277 (64-132 CTAs, M = 1-4096, decode calls of 25-240 us
    /// included). Until run 276 the kernel triggered its dependents right after its wait;
    /// the next grid's CTAs then took the SMs a partial grid left idle and ran 3-14 us (up
    /// to 22%) slower a call (NOTES 30.2's memory-bound decode calls, which were launched
    /// serialized for it, and ragged M = 200-900). 29.1 saw the savings unchanged with
    /// cudarc's event tracking recording events between the calls. `false`:
    /// `cuLaunchKernel`, the grid starts after the previous work has completed.
    pub dependent_launch: bool,
}

impl Default for GemmOptions {
    fn default() -> Self {
        Self { tile: None, timeout: Duration::from_secs(10), split_last_wave: LastWaveSplit::Auto, dependent_launch: true }
    }
}

/// What [`gemm_with_workspace`] ran, or [`plan_gemm`] says a call would run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmRun {
    /// The tile configuration.
    pub tile: TileConfig,
    /// K-slices per tile left over after the full waves (1: no split).
    pub split_slices: u32,
    /// CTAs of the launch: one per tile up to the SMs (the cluster's multiple), or, split,
    /// up to one per work unit on the SMs ([`TileConfig::grid_for`], [`TileConfig::split_grid`]).
    pub grid: u32,
}

impl From<mkernel_kernels::gemm::GemmPlan> for GemmRun {
    fn from(p: mkernel_kernels::gemm::GemmPlan) -> Self {
        Self { tile: p.tile, split_slices: p.split_slices(), grid: p.grid }
    }
}

/// Scratch of the plain GEMM's split last wave ([`gemm_with_workspace`]): fp32 slots (one
/// tile per K-slice) and a u32 count per left-over tile, on the GPU of the stream it was
/// made for. Calls that share a workspace must be stream-ordered (its counts are the
/// slices' rendezvous), so it serves that stream only; others are refused.
pub struct GemmWorkspace {
    stream: Arc<CudaStream>,
    /// The fp32 slots and the u32 counts, owned for their allocations (freed on drop);
    /// launches and [`Self::bytes`] use `split`.
    _buffers: (CudaSlice<f32>, CudaSlice<u32>),
    /// The device addresses of `slots` and `counts`, taken once when allocated: only this
    /// workspace's launches on `stream` touch them, so cudarc's per-call stream events
    /// (`device_ptr_mut`: a wait and a record per buffer) would order nothing; the buffers
    /// are freed in `stream`'s order after the work queued on it (cudarc's drop).
    split: SplitWorkspace,
}

impl GemmWorkspace {
    /// Slot bytes of [`Self::new`]: 32 MiB, 256 slots of the largest tile (128 x 256 fp32).
    pub const DEFAULT_BYTES: usize = 32 << 20;
    /// Counts: one per left-over tile, fewer than the grid's CTAs (at most one per SM).
    pub const COUNTS: usize = mkernel_kernels::gemm::SPLIT_COUNTS as usize;

    /// A workspace of [`Self::DEFAULT_BYTES`] for calls on `stream`.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Self> {
        Self::with_bytes(stream, Self::DEFAULT_BYTES)
    }

    /// A workspace of `bytes` of slots (at least 4; rounded down to whole fp32) for calls
    /// on `stream`, plus [`Self::COUNTS`] u32 counts (16 KiB). Allocated by cudarc on
    /// `stream` (`cuMemAllocAsync` from the device's default pool where the driver has it,
    /// else `cuMemAlloc`; freed the same way when dropped, after the work queued on
    /// `stream`), the counts zeroed in stream order. A workspace too small for a split
    /// rule's slots makes `Auto` take the next rule whose pick fits, or none, so not split
    /// ([`TileConfig::split_rule_for`]; on 132 SMs 2.2
    /// MB covers the small-M rule, 9.3 MiB the one-row-block rule, 16.5 MiB the few-tiles
    /// rule, 10.3 MiB the one-wave-cols split rule (66 tiles of 128 x 160 in 2), 33 MiB the two-rounds rule (88 tiles of
    /// 128 x 256 in 3 slices; 80 of them, 30 MiB, as N = 10240 makes at M = 256 above K =
    /// 14336, fit the default 32 MiB, which covers the rest) and
    /// a forced count an error.
    pub fn with_bytes(stream: &Arc<CudaStream>, bytes: usize) -> Result<Self> {
        if bytes < 4 {
            return Err(invalid("bytes", format!("a GEMM workspace needs at least 4 bytes (one fp32), got {bytes}")));
        }
        if thread_dependent_handle(stream) {
            return Err(invalid(
                "stream",
                "is the per-thread (or legacy) default stream handle, a different stream on each thread; a workspace serves one stream (use CudaContext::new_stream or default_stream)",
            ));
        }
        let mut slots = stream.alloc_zeros::<f32>(bytes / 4).call("cuMemAlloc (GEMM workspace slots)")?;
        let mut counts = stream.alloc_zeros::<u32>(Self::COUNTS).call("cuMemAlloc (GEMM workspace counts)")?;
        let (scratch, counts_ptr) = (slots.device_ptr_mut(stream).0, counts.device_ptr_mut(stream).0);
        let split = SplitWorkspace { scratch, scratch_bytes: slots.len() as u64 * 4, counts: counts_ptr, counts_len: counts.len() as u64 };
        Ok(Self { stream: stream.clone(), _buffers: (slots, counts), split })
    }

    /// Bytes of fp32 slots.
    pub fn bytes(&self) -> usize {
        self.split.scratch_bytes as usize
    }

    /// Diagnostic ([`mkernel_kernels::gemm::probe_cta_spans`]): zeroes the first `ctas`
    /// spans of the scratch, so a following unsplit call's CTAs are the only ones marked.
    #[doc(hidden)]
    pub fn probe_clear(&mut self, ctas: usize) -> Result<()> {
        let n = ctas.saturating_mul(8).min(self._buffers.0.len());
        let mut head = self._buffers.0.slice_mut(0..n);
        self.stream.memset_zeros(&mut head).call("cuMemsetD8Async (probe spans)")?;
        Ok(())
    }

    /// Diagnostic: the first `ctas` spans of the scratch after a call (waits for the
    /// stream): per CTA [SM, start ns, end ns, 1 once written].
    #[doc(hidden)]
    pub fn probe_cta_spans(&self, ctas: usize) -> Result<Vec<[u64; 4]>> {
        let n = ctas.saturating_mul(8).min(self._buffers.0.len());
        let words = self.stream.clone_dtoh(&self._buffers.0.slice(0..n)).call("cuMemcpyDtoH (probe spans)")?;
        let u = |i: usize| words[i].to_bits() as u64;
        Ok((0..n / 8).map(|c| std::array::from_fn(|j| u(8 * c + 2 * j) | (u(8 * c + 2 * j + 1) << 32))).collect())
    }
}

/// Checks that `stream` runs on the GPU that holds the buffers.
pub(crate) fn check_same_device(stream: &CudaStream, ordinal: usize, arg: &'static str) -> Result<()> {
    let s = stream.context().ordinal();
    if s != ordinal {
        return Err(invalid(arg, format!("is on GPU {ordinal} but the stream runs on GPU {s}")));
    }
    Ok(())
}

/// C\[M,N\] = A\[M,K\] * B\[N,K\]^T, bf16 in and out, fp32 accumulation, enqueued on `stream`.
///
/// - `a`: \[M, K\] row-major; `b`: \[N, K\] row-major (B^T of a \[K, N\] matrix, the
///   layout of an `nn.Linear` weight); `c`: \[M, N\] row-major; all contiguous on
///   `stream`'s GPU. Each buffer must hold at least that many elements; the first M x K
///   (N x K, M x N) are used, a longer buffer's tail is neither read nor written.
/// - Any M, N >= 1; K >= 8 with K % 8 == 0 (TMA needs 16-byte row strides); M, N, K at
///   most 2^31 - 256.
/// - With the default options (no tile forced, `split_last_wave` `Auto`), where a split
///   rule applies ([`TileConfig::split_rule_for`]) the call splits the tiles' K loop on a
///   workspace it keeps for `stream`: M <= 64 whose tiles spill a few past one wave
///   ([`TileConfig::split_spill_for`]: 8 x 9216 x 7168 0.050 -> 0.041 ms on an H200), one
///   row block of A (112 <= M <= 128) with K >= 9216 ([`TileConfig::split_row_block_for`]:
///   128 x 8192 x 14336 0.079 -> 0.072 ms), tiles filling at most half the SMs with K >=
///   4096 ([`TileConfig::split_few_tiles_for`]: 256 x 4096 x 14336 0.089 -> 0.064 ms, since
///   bench/NOTES.md 42.7 on the 64 x 128 tile unsplit; at K
///   <= 14336 on 64 x 64 swapped tiles where those are few too, 128 x 256 x 7168 0.0176 ->
///   0.0127 ms; above M = 256 on 128-row tiles of at most 112 columns in place of split
///   128 x 128 ones where those pad N more, 1586 x 280 x 4096 0.026 -> 0.019 ms; for 193 <= M
///   <= 4096 on 64 x 128 tiles in fewer slices, down to none, in place of split 128 x 128
///   ones (above M = 256 only to K = 5120) and 64 x 256 ones (K <= 14336) where a cost model says so,
///   [`TileConfig::few_tiles_half_height_fewer_slices_instead_of`]: 1024 x 1024 x 4096 in 2
///   slices 0.0235 -> 0.0192 ms unsplit, with no workspace), and below K = 4096 the small-N column tiles from K = 1024, few swapped
///   tiles of 64 x 8..64 from K = 1536 (1 x 1024 x 3072 0.0111 -> 0.0062 ms a call back to
///   back) and few 64 x 128 tiles from K = 3072, in as many slices as fit one wave
///   (`TileConfig::short_k_slices`), and tiles filling half to two thirds of the SMs with
///   K >= 13824 in 3 slices over two rounds ([`TileConfig::split_two_rounds_for`]: 1 x 5120
///   x 27648 0.086 -> 0.077 ms), and for 193 <= M <= 4096 with K = 6912-14336 where the
///   default takes 48-80 columns (above M = 256 from K = 8192 only below 72), tiles twice
///   as wide in 2 slices, or where those overfill one wave (above M = 256) the narrowest
///   wider ones up to 144 columns that fit
///   ([`TileConfig::split_one_wave_cols_for`]: 256 x 5120 x 14336 0.086 -> 0.072 ms).
///   The workspace is sized to the split (left-over tiles x slices x one fp32 tile, at most
///   33 MiB on 132 SMs for the rules' picks, rounded up to whole MiB, plus 16 KiB of
///   counts), kept for the last [`CACHED_WORKSPACES`] streams per CUDA context (per GPU
///   with cudarc's primary contexts) that `gemm` split on,
///   reused by later calls on the same CUDA stream (the same context and `CUstream`
///   handle, whatever `Arc` holds it: stream-ordered) and grown when a split needs more.
///   A kept workspace holds its stream, and so the stream's context and that context's
///   device memory, alive until it is evicted or [`release_gemm_workspaces`] frees it.
///   Such a pick of 1 slice takes no workspace. The call runs unsplit (its 1-slice picks
///   still apply) instead where a kept workspace would be unsafe or cannot be
///   had: while `stream` is being captured into a CUDA graph (the graph would keep using
///   a workspace the cache may later free; captured code should call
///   [`gemm_with_workspace`] with a workspace that lives as long as the graph), on the
///   per-thread default stream (one handle, a different stream on each thread), and where
///   the allocation fails (a `tracing` warning, once per process). [`gemm_with_workspace`]
///   takes the caller's workspace instead and reports the split it ran.
/// - Errors: [`crate::Error::InvalidArgument`] naming the argument and rule, or a
///   compile/driver error. Returns the tile configuration used.
pub fn gemm(
    stream: &Arc<CudaStream>,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    c: &mut CudaSlice<bf16>,
    shape: GemmShape,
    opts: GemmOptions,
) -> Result<TileConfig> {
    check_call(stream, a, b, c, shape, opts)?;
    if opts.tile.is_none() && opts.split_last_wave == LastWaveSplit::Auto {
        if let Some(mut ws) = cached_workspace(stream, shape)? {
            let ran = gemm_on(stream, a, b, c, shape, opts, Some(&mut ws));
            keep_workspace(ws);
            return Ok(ran?.tile);
        }
    }
    Ok(gemm_on(stream, a, b, c, shape, opts, None)?.tile)
}

/// How many streams' workspaces [`gemm`] keeps per CUDA context (the most recently used).
pub const CACHED_WORKSPACES: usize = 8;

/// Workspaces [`gemm`] keeps for its split rules, least recently used first. A workspace
/// holds its stream, so the stream (and its context) stay alive while it is kept, and its
/// `CUstream` handle cannot be reused by another stream meanwhile; taken out while a call
/// uses it.
static WORKSPACES: Mutex<Vec<GemmWorkspace>> = Mutex::new(Vec::new());

/// Whether [`gemm`] has warned that a workspace could not be allocated.
static WARNED_NO_WORKSPACE: AtomicBool = AtomicBool::new(false);

/// Whether `stream` is the legacy or per-thread default stream handle (CU_STREAM_LEGACY =
/// 0x1, CU_STREAM_PER_THREAD = 0x2), whose stream depends on the calling thread: no
/// workspace can serve it.
fn thread_dependent_handle(stream: &CudaStream) -> bool {
    matches!(stream.cu_stream() as usize, 0x1 | 0x2)
}

/// Whether two handles name one CUDA stream: the same context and `CUstream` (cudarc
/// hands out a new `Arc` for the default stream on every `default_stream()`).
fn same_stream(a: &CudaStream, b: &CudaStream) -> bool {
    a.context().cu_ctx() == b.context().cu_ctx() && a.cu_stream() == b.cu_stream()
}

/// Frees the workspaces [`gemm`] keeps for its split rules (each after the work queued on
/// its stream, stream-ordered) and lets go of their streams. Later calls allocate again
/// where they split. A workspace a call on another thread is using at that moment goes
/// back to the cache when that call returns.
pub fn release_gemm_workspaces() {
    let kept = std::mem::take(&mut *WORKSPACES.lock().unwrap_or_else(|e| e.into_inner()));
    drop(kept); // (outside the lock: a free may wait for its stream)
}

/// For [`gemm`]: a workspace for `stream` that holds the split `shape` takes under the
/// split rules, taken out of the cache or allocated (slots rounded up to 1 MiB); `None`
/// where no rule applies (or the device is not one the kernels run on: the launch reports
/// it), while `stream` is capturing a graph, on the per-thread default stream (or the
/// legacy handle), or where the allocation failed (warned once; the call runs unsplit).
fn cached_workspace(stream: &Arc<CudaStream>, shape: GemmShape) -> Result<Option<GemmWorkspace>> {
    if thread_dependent_handle(stream) {
        return Ok(None);
    }
    let info = mkernel_kernels::driver::device_info(stream.context())?;
    if mkernel_kernels::driver::require_hopper(&info).is_err() {
        return Ok(None);
    }
    let Some(rounded) = kept_workspace_bytes(shape, info.sm_count) else {
        return Ok(None);
    };
    let capture = stream.capture_status().call("cuStreamIsCapturing")?;
    if capture != cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
        return Ok(None);
    }
    let mut stale = None;
    {
        let mut kept = WORKSPACES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = kept.iter().position(|w| same_stream(&w.stream, stream)) {
            let w = kept.remove(i);
            if w.bytes() as u64 >= rounded {
                return Ok(Some(w));
            }
            stale = Some(w); // too small: replaced below (freed in stream order)
        }
    }
    drop(stale);
    match usize::try_from(rounded).map_err(|_| invalid("shape", "split workspace beyond the address space")).and_then(|b| GemmWorkspace::with_bytes(stream, b)) {
        Ok(w) => Ok(Some(w)),
        Err(e) => {
            if !WARNED_NO_WORKSPACE.swap(true, Ordering::Relaxed) {
                tracing::warn!(m = shape.m, n = shape.n, k = shape.k, bytes = rounded, error = %e, "gemm: no workspace for the split rule; running unsplit (warned once)");
            }
            Ok(None)
        }
    }
}

/// Slot bytes of the workspace [`gemm`] keeps for `shape`'s split on `sm_count` SMs: what the
/// split rules' pick needs ([`TileConfig::split_rule_workspace`]), rounded up to 1 MiB;
/// `None` where no rule splits or the pick needs more counts than a workspace has.
fn kept_workspace_bytes(shape: GemmShape, sm_count: u32) -> Option<u64> {
    let (bytes, counts) = TileConfig::split_rule_workspace(shape, sm_count)?;
    (counts <= GemmWorkspace::COUNTS as u64).then(|| bytes.div_ceil(1 << 20).saturating_mul(1 << 20))
}

/// Puts a workspace [`cached_workspace`] gave back, most recent last, and frees the least
/// recently used of its context's past [`CACHED_WORKSPACES`] (or a second one for the same
/// stream, from concurrent calls on it).
fn keep_workspace(w: GemmWorkspace) {
    let mut evicted = Vec::new();
    {
        let mut kept = WORKSPACES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = kept.iter().position(|k| same_stream(&k.stream, &w.stream)) {
            evicted.push(kept.remove(i));
        }
        let ctx = w.stream.context().cu_ctx();
        kept.push(w);
        while kept.iter().filter(|k| k.stream.context().cu_ctx() == ctx).count() > CACHED_WORKSPACES {
            if let Some(i) = kept.iter().position(|k| k.stream.context().cu_ctx() == ctx) {
                evicted.push(kept.remove(i));
            }
        }
    }
    drop(evicted); // (outside the lock: a free may wait for its stream)
}

/// [`gemm`] with a workspace for a split last wave ([`GemmOptions::split_last_wave`]):
/// the tiles left over after the full waves are computed as K-slices on otherwise idle
/// SMs, written as fp32 to the workspace and summed in slice order by the slice that
/// arrives last (deterministic: the same bits for the same inputs). `workspace` must have
/// been made for `stream`. Errors as [`gemm`], and `split_last_wave` (a tile that cannot
/// split, nothing left over, more slices than K blocks or than the workspace holds) or
/// `workspace` (another stream's: the same context and `CUstream` handle are required). Returns the
/// tile and the slices used.
pub fn gemm_with_workspace(
    stream: &Arc<CudaStream>,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    c: &mut CudaSlice<bf16>,
    shape: GemmShape,
    opts: GemmOptions,
    workspace: &mut GemmWorkspace,
) -> Result<GemmRun> {
    if !same_stream(&workspace.stream, stream) {
        return Err(invalid("workspace", "was made for another stream: calls sharing a workspace must be ordered on one stream"));
    }
    check_call(stream, a, b, c, shape, opts)?;
    gemm_on(stream, a, b, c, shape, opts, Some(workspace))
}

/// What a call of `shape` with `opts` would run on a GPU of `sm_count` SMs (132 on the
/// H100 SXM and H200), without a GPU: the tile, the split of the last wave and the grid
/// of [`gemm_with_workspace`] with a workspace of `workspace_bytes` (`Some`), or of
/// [`gemm`] (`None`: with no tile forced and `split_last_wave` `Auto`, a workspace as
/// large as the split rules' pick needs, [`TileConfig::split_rule_workspace`], as `gemm`
/// keeps one; `gemm` runs unsplit instead where it cannot have one, e.g. while its stream
/// is captured into a CUDA graph). So that every rule can be seen and checked off the GPU
/// (`mkernel plan gemm`).
///
/// Errors ([`crate::Error::InvalidArgument`], naming the argument and rule): `sm_count`
/// outside 1..=[`crate::MAX_PLAN_GRID`], `workspace_bytes` below 4, and what the calls
/// refuse before launching: the shape's rules ([`GemmShape::validate_dims`]), `opts` (a
/// tile outside the plain GEMM's catalog, or one that cannot write N columns; the
/// timeout; 0 slices), a split the tile or shape cannot take, or `Slices(n)`, n >= 2,
/// without a workspace (named `split_last_wave`).
pub fn plan_gemm(shape: GemmShape, opts: GemmOptions, sm_count: u32, workspace_bytes: Option<u64>) -> Result<GemmRun> {
    if !(1..=crate::MAX_PLAN_GRID).contains(&sm_count) {
        return Err(invalid("sm_count", format!("must be 1..={} SMs, got {sm_count}", crate::MAX_PLAN_GRID)));
    }
    // (the shape first: the split rules below size the workspace from it)
    shape.validate_dims()?;
    check_options(opts)?;
    let sized = |bytes: u64| SplitWorkspace { scratch: 0, scratch_bytes: bytes, counts: 0, counts_len: GemmWorkspace::COUNTS as u64 };
    let workspace = match workspace_bytes {
        Some(b) if b < 4 => return Err(invalid("workspace_bytes", format!("a GEMM workspace needs at least 4 bytes (one fp32), got {b}"))),
        // (as GemmWorkspace::with_bytes: whole fp32 slots)
        Some(b) => Some(sized(b / 4 * 4)),
        None if opts.tile.is_none() && opts.split_last_wave == LastWaveSplit::Auto => kept_workspace_bytes(shape, sm_count).map(sized),
        None => None,
    };
    Ok(mkernel_kernels::gemm::plan(shape, opts.tile, opts.split_last_wave, sm_count, workspace)?.into())
}

/// The argument checks of every GEMM call (by [`gemm`] and [`gemm_with_workspace`],
/// before [`gemm_on`]): the shape against the buffers, the options, and the buffers on
/// the stream's GPU.
fn check_call(stream: &Arc<CudaStream>, a: &CudaSlice<bf16>, b: &CudaSlice<bf16>, c: &CudaSlice<bf16>, shape: GemmShape, opts: GemmOptions) -> Result<()> {
    shape.validate(a.len(), b.len(), c.len())?;
    check_options(opts)?;
    for (arg, ord) in [("a", a.ordinal()), ("b", b.ordinal()), ("c", c.ordinal())] {
        check_same_device(stream, ord, arg)?;
    }
    Ok(())
}

/// The checks of `opts` (for [`check_call`] and [`plan_gemm`], after the shape's).
fn check_options(opts: GemmOptions) -> Result<()> {
    if let Some(t) = opts.tile {
        t.validate_for_gemm()?;
    }
    if !crate::comm::TIMEOUT_RANGE.contains(&opts.timeout) {
        return Err(invalid("timeout", format!("must be between 1 ms and 1 day, got {:?}", opts.timeout)));
    }
    if opts.split_last_wave == LastWaveSplit::Slices(0) {
        return Err(invalid("split_last_wave", "must be at least 1 slice (1: no split), got 0"));
    }
    Ok(())
}

fn gemm_on(
    stream: &Arc<CudaStream>,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    c: &mut CudaSlice<bf16>,
    shape: GemmShape,
    opts: GemmOptions,
    workspace: Option<&mut GemmWorkspace>,
) -> Result<GemmRun> {
    let (pa, _ga) = a.device_ptr(stream);
    let (pb, _gb) = b.device_ptr(stream);
    let (pc, _gc) = c.device_ptr_mut(stream);
    let ws = workspace.map(|w| w.split);
    // SAFETY: the three buffers were validated for `shape` and live on `stream`'s GPU, as
    // does the workspace (made for `stream`, borrowed for the call; its buffers outlive
    // the launch, freed in `stream`'s order); the guards keep cudarc's stream ordering for
    // the three until after the launch.
    let ran = unsafe {
        mkernel_kernels::gemm::launch(
            Runtime::global(),
            stream,
            pa,
            pb,
            pc,
            shape,
            opts.tile,
            opts.timeout,
            opts.split_last_wave,
            ws,
            if opts.dependent_launch { LaunchOrder::Programmatic } else { LaunchOrder::Serialized },
        )?
    };
    Ok(ran.into())
}
