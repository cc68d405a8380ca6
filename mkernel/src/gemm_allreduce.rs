//! `Communicator::gemm_allreduce`: the fused tensor-parallel row-parallel layer,
//! out = sum over ranks of A_r * B_r^T, in one persistent kernel per GPU (with one rank,
//! the plain GEMM alone: [`CommPath::Local`]).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use mkernel_kernels::driver::Runtime;
use mkernel_kernels::gemm::{GemmShape, TileConfig};
use mkernel_kernels::gemm_allreduce::{Collective, CommPath, EpiloguePace, FusedConfig, LastWaveSplit};
use mkernel_sm::{balance, PartitionModel, Workload};

use crate::comm::Communicator;
use crate::error::{invalid, Error, Result};

/// Overrides of the per-call choices (all `None`: the heuristics decide).
#[derive(Debug, Clone, Copy, Default)]
pub struct GemmAllReduceOptions {
    /// GEMM tile configuration, one of [`TileConfig::fused_catalog`]; on the local path
    /// (one rank, `comm_path` unset or [`CommPath::Local`], no `comm_ctas` or `tail_ctas`)
    /// any tile of the plain GEMM's catalog ([`TileConfig::validate_for_gemm`]). With 2
    /// ranks a clustered (`-c2`), swapped-operand or column-fitted (`cols-128xC-tma-store`)
    /// tile takes the epilogue path (with no
    /// `comm_path` given, that path; another is refused). None: with one rank on the
    /// local path the plain GEMM's default ([`TileConfig::choose_for`], or the tile of the
    /// plain GEMM's split rule where one applies: [`TileConfig::split_rule_for`]); else `FusedConfig::choose_tile`,
    /// refined on the epilogue path by `FusedConfig::epilogue_tile` (128 x 128 tiles where
    /// the last wave's copy after the GEMM shrinks more than the GEMM slows, and the
    /// swapped-operand tile holding all of M for M <= 256 where it loads less, and for
    /// 257 <= M <= 8192 the 128-row one fitted to M where `TileConfig::fitted_instead_of`
    /// says it wins, or the 128-row tile fitted to N where the plain GEMM's column rule
    /// takes it and it saves more GEMM time than its last wave adds to the copy:
    /// `FusedConfig::epilogue_cols_tile`), then by `FusedConfig::clustered_epilogue_tile`
    /// (its 2-CTA twin where the fused kernel has one, the row blocks pair up, K >= 4096,
    /// the grid is even and `split_last_wave` is the default and would not split); an
    /// unclustered column tile never replaces a clustered default
    /// (`FusedConfig::epilogue_default_tile`).
    pub tile: Option<TileConfig>,
    /// Number of CTAs (SMs) that communicate; the rest compute. 1..grid-1, where grid is
    /// [`Communicator::grid`] (the SM count, or a rank's share of a shared GPU); none
    /// (0 or unset) on [`CommPath::Epilogue`] and [`CommPath::Local`]. Given without `comm_path` (as is
    /// `tail_ctas`), the heuristic picks a path that has communication CTAs (with one rank,
    /// a fused kernel instead of the local path).
    pub comm_ctas: Option<u32>,
    /// How the all-reduce moves data ([`CommPath::check`] says which paths a shape, tile
    /// and world size allow). Default: with one rank, [`CommPath::Local`] (the plain GEMM
    /// alone as `mkernel::gemm` runs it: its default tile or its split rules' tile and
    /// slices, unless `tile` or `split_last_wave` is given); else
    /// [`CommPath::choose_fused`]: the epilogue path on
    /// 2 ranks with a TMA-store tile, N % 8 == 0 and a GPU of the rank's own; else [`CommPath::choose`] (one-shot for 1-2 ranks, TMA slices for
    /// more, 16-byte vectors when BM % world != 0, 2-byte elements when N % 8 != 0).
    /// When `comm_ctas` or `tail_ctas` is given, [`CommPath::choose`] (a path
    /// that has communication CTAs: `tail_ctas: Some(0)` means one-shot without tail),
    /// except for a clustered or swapped-operand tile, which takes the epilogue path (2
    /// ranks; with one rank such a tile is refused there). With one rank the fused paths
    /// are one-shot, tma, vec16 and scalar ([`CommPath::all_for`]).
    pub comm_path: Option<CommPath>,
    /// Tail CTAs that join the communication once compute CTAs finish
    /// ([`FusedConfig::tail_ctas`]; 0..=grid, one-shot, reduce and push paths only, and
    /// only where the rank's grid is its GPU's SM count: a rank sharing its GPU is
    /// refused any). Default: one per compute CTA on those paths on a GPU the rank has
    /// to itself; none on the others (the epilogue path has none).
    pub tail_ctas: Option<u32>,
    /// How the epilogue path paces its copies to the peer ([`EpiloguePace`]; default
    /// `Clock`). `Sleep` is refused on other paths.
    pub epilogue_pace: Option<EpiloguePace>,
    /// Epilogue and local paths: whether a last wave that leaves SMs idle is split into
    /// K-slices ([`LastWaveSplit`], [`FusedConfig::split_slices`]). Default: `Auto`
    /// ([`FusedConfig::choose_split`]'s count on the epilogue path; on the local path with
    /// no tile forced, the plain GEMM's split rules as `mkernel::gemm` applies them,
    /// [`TileConfig::split_rule_for`]; `Off` never splits). Given (`Off` or a count), the
    /// epilogue path's default tile stays unclustered (`FusedConfig::clustered_epilogue_tile`),
    /// so that comparing split options compares splits alone; on the local path a count
    /// takes `TileConfig::choose_for_split` (a clustered default's unclustered tile). A count must pass [`FusedConfig::check_split`] (on the local
    /// path the plain GEMM's rules); other paths take `Off`, `Auto` (which gives 1 there)
    /// or a count of 1.
    pub split_last_wave: Option<LastWaveSplit>,
    /// Epilogue path only, DIAGNOSTIC: [`FusedConfig::diag_skip`] (0..=3; the result is
    /// wrong when nonzero). Default 0.
    pub diagnostic_skip: Option<u32>,
}

impl Communicator {
    /// The configuration a call of this shape would use (heuristics + overrides).
    ///
    /// Errors: shape rules ([`GemmShape::validate_dims`]), M x N above the
    /// communicator's `CommConfig::max_output_elems`, an override a shape cannot use.
    pub fn plan_gemm_allreduce(&self, shape: GemmShape, opts: GemmAllReduceOptions) -> Result<FusedConfig> {
        let cfg = plan_gemm_allreduce(shape, opts, self.plan_context())?;
        tracing::debug!(rank = self.rank(), m = shape.m, n = shape.n, k = shape.k, %cfg, "gemm_allreduce plan");
        Ok(cfg)
    }

    /// What this communicator's plans depend on ([`PlanContext`]).
    pub(crate) fn plan_context(&self) -> PlanContext {
        PlanContext {
            world_size: self.world_size(),
            grid: self.grid(),
            gpu_shared: self.gpu_shared(),
            max_output_elems: self.config().max_output_elems,
            split_scratch_bytes: self.rank_buffers().layout.split_bytes(),
        }
    }

    /// out\[M,N\] = sum over ranks r of a_r\[M,K\] * b_r\[N,K\]^T, enqueued on `stream`.
    ///
    /// A collective: every rank calls it with the same `shape` (K is the local shard)
    /// and options, in the same order. Layouts as [`crate::gemm`]; `out` may be any
    /// device buffer of this rank's GPU (peers never write into it). Stream-ordered;
    /// consecutive calls need no reset and may be captured in a CUDA graph. A call on a
    /// different stream than the previous one first waits for the previous one (calls
    /// share the workspace). Inside a CUDA-graph capture that ordering is the graph's:
    /// captured calls of one communicator must not run concurrently with each other or
    /// with other calls (no parallel graph branches, one replay at a time), or a fused
    /// call times out and a one-rank call that splits its last wave may write wrong
    /// tiles (its split counts are shared). With one rank and no `comm_path`, `comm_ctas`
    /// or `tail_ctas`, the call is the plain GEMM alone ([`CommPath::Local`]); those
    /// options run a fused kernel there instead.
    ///
    /// Errors: argument rules (named; among them M x N <= `CommConfig::max_output_elems`,
    /// the workspace size), a communicator poisoned by an earlier failure,
    /// compile/driver errors. A peer that never joins is reported by
    /// [`Communicator::synchronize`] as [`crate::Error::PeerTimeout`] after
    /// `CommConfig::timeout`.
    /// Calls already queued behind a call that timed out (and CUDA-graph replays of it)
    /// do nothing and leave `out` unwritten; `synchronize` reports the first failure.
    pub fn gemm_allreduce(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        shape: GemmShape,
        opts: GemmAllReduceOptions,
    ) -> Result<FusedConfig> {
        self.fused_call(stream, a, b, out, shape, opts, Collective::AllReduce, None)
    }

    /// [`Communicator::gemm_allreduce`], recording this rank's events into `trace`
    /// (zeroed on `stream` first; read it back with [`crate::trace::TraceBuffer::read`]).
    /// For diagnosis: the events cost a few atomics per tile.
    ///
    /// Errors: as `gemm_allreduce`, `trace` on another GPU, and a call on the local path
    /// (one rank with `comm_path` unset or [`CommPath::Local`]: the plain GEMM, which
    /// records no events).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_allreduce_traced(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        shape: GemmShape,
        opts: GemmAllReduceOptions,
        trace: &mut crate::trace::TraceBuffer,
    ) -> Result<FusedConfig> {
        self.fused_call(stream, a, b, out, shape, opts, Collective::AllReduce, Some(trace))
    }

    /// One rank's fused call ending with `collective` (`out`: \[M, N\], or this rank's
    /// \[M / world, N\] rows of a reduce-scatter), planned by the collective's plan.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fused_call(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        shape: GemmShape,
        opts: GemmAllReduceOptions,
        collective: Collective,
        trace: Option<&mut crate::trace::TraceBuffer>,
    ) -> Result<FusedConfig> {
        self.check_usable()?;
        match collective {
            Collective::AllReduce => shape.validate(a.len(), b.len(), out.len())?,
            Collective::ReduceScatter => {
                // (the operands as for an all-reduce; `out` holds this rank's rows alone)
                shape.validate(a.len(), b.len(), shape.m as usize * shape.n as usize)?;
                Collective::ReduceScatter.check_m(shape, self.world_size())?;
                let rows = Collective::ReduceScatter.out_rows(shape.m, self.world_size()) as usize;
                if out.len() < rows * shape.n as usize {
                    return Err(invalid(
                        "out",
                        format!(
                            "a reduce-scatter's out is this rank's rows of the sum, [M / world = {rows}, N = {}] = {} elements; got {}",
                            shape.n,
                            rows * shape.n as usize,
                            out.len()
                        ),
                    ));
                }
            }
        }
        self.check_on_own_gpu(stream, &[("a", a.ordinal()), ("b", b.ordinal()), ("out", out.ordinal())])?;
        let ordinal = self.device_info().ordinal;
        if let Some(t) = &trace {
            if t.ordinal() != ordinal {
                return Err(invalid("trace", format!("is on GPU {}, but rank {} runs on GPU {ordinal}", t.ordinal(), self.rank())));
            }
        }
        let cfg = match collective {
            Collective::AllReduce => self.plan_gemm_allreduce(shape, opts)?,
            Collective::ReduceScatter => self.plan_gemm_reduce_scatter(shape, opts)?,
        };
        if trace.is_some() && cfg.path == CommPath::Local {
            return Err(invalid(
                "trace",
                match collective {
                    Collective::AllReduce => "one rank's call runs the plain GEMM (the local path), which records no events; to trace the fused kernel on one rank, set comm_path (e.g. one-shot)",
                    Collective::ReduceScatter => "one rank's reduce-scatter runs the plain GEMM (the local path), which records no events; its fused kernels need 2 ranks or more",
                },
            ));
        }
        self.order_after_last(stream)?;
        let trace = match trace {
            Some(t) => Some(t.arm(stream)?),
            None => None,
        };
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (po, _go) = out.device_ptr_mut(stream);
        let bufs = self.rank_buffers();
        // SAFETY: buffers validated for `shape` on this rank's GPU; the workspace and
        // peer mappings live as long as `self`.
        let launched = unsafe {
            mkernel_kernels::gemm_allreduce::launch(
                Runtime::global(),
                stream,
                pa,
                pb,
                po,
                shape,
                cfg,
                collective,
                &bufs,
                self.config().timeout,
                trace,
            )
        };
        self.finish_launch(launched, stream)?;
        Ok(cfg)
    }
}

/// What a plan depends on besides the call: the communicator and its rank's GPU.
#[derive(Debug, Clone, Copy)]
pub struct PlanContext {
    /// Ranks of the communicator.
    pub world_size: u32,
    /// CTAs of this rank's kernels ([`Communicator::grid`]: the SM count, or a share of a
    /// GPU other ranks use too).
    pub grid: u32,
    /// Whether some GPU of the group holds more than one rank ([`Communicator::gpu_shared`]):
    /// then no rank takes the epilogue path or tail CTAs by default, and none may take
    /// tail CTAs (they would take SMs a co-resident rank's kernel waits on). A property of
    /// the group, not of this rank's GPU, so that ranks on GPUs with different SM counts
    /// (the grid is the group's smallest) plan alike.
    pub gpu_shared: bool,
    /// `CommConfig::max_output_elems`: the largest M x N the workspace holds.
    pub max_output_elems: u64,
    /// Bytes of the workspace's fp32 slots for last-wave K-slices.
    pub split_scratch_bytes: u64,
}

impl PlanContext {
    /// The context of a communicator of `world_size` ranks, `grid` CTAs per rank and a
    /// workspace for outputs of up to `max_output_elems` elements (`CommConfig`'s; its
    /// default 16384 x 8192), with the split scratch such a workspace has
    /// ([`mkernel_kernels::gemm_allreduce::WorkspaceLayout::split_bytes`]): what
    /// [`Communicator::plan_gemm_allreduce`] plans with, for planning without one.
    ///
    /// Errors name `max_output_elems` (outside 1..=2^37) or `world_size` (outside
    /// 1..=MAX_RANKS); the grid is checked by [`plan_gemm_allreduce`].
    pub fn new(world_size: u32, grid: u32, gpu_shared: bool, max_output_elems: u64) -> Result<Self> {
        let layout = mkernel_kernels::gemm_allreduce::WorkspaceLayout::new(max_output_elems, world_size)?;
        Ok(Self { world_size, grid, gpu_shared, max_output_elems, split_scratch_bytes: layout.split_bytes() })
    }
}

impl PlanContext {
    /// Errors: a context no communicator has (`ctx`: world size outside 1..=MAX_RANKS, a
    /// grid outside 2..=[`MAX_PLAN_GRID`] CTAs, a workspace capacity outside 1..=2^37
    /// elements); the fields are public, so the plans check.
    pub(crate) fn check(&self) -> Result<()> {
        if !(1..=mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS).contains(&self.max_output_elems) {
            return Err(invalid(
                "ctx",
                format!(
                    "max_output_elems must be 1..={} (as every communicator's workspace), got {}",
                    mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS,
                    self.max_output_elems
                ),
            ));
        }
        if !(1..=mkernel_kernels::params::MAX_RANKS as u32).contains(&self.world_size) || !(2..=MAX_PLAN_GRID).contains(&self.grid) {
            return Err(invalid(
                "ctx",
                format!(
                    "world size must be 1..={} and the grid 2..={MAX_PLAN_GRID} CTAs (as every communicator's), got world size {} and grid {}",
                    mkernel_kernels::params::MAX_RANKS,
                    self.world_size,
                    self.grid
                ),
            ));
        }
        Ok(())
    }
}

/// A refusal of the path ([`CommPath::check_for`], `comm_path`) where the caller gave no
/// `comm_path`: named by `chooser`, the option that chose the path instead (helper-97):
/// `comm_ctas` or `tail_ctas` (which ask for a path with such CTAs) or `tile` (the path was
/// the tile's default); each plan knows its own order of choice. Other errors, and any
/// where `chooser` is `None`, as they are.
pub(crate) fn path_asked_by(e: Error, opts: &GemmAllReduceOptions, chooser: Option<&'static str>) -> Error {
    match (e, chooser) {
        (Error::InvalidArgument { arg: "comm_path", rule }, Some(arg)) if opts.comm_path.is_none() => {
            let why = if arg == "tile" { "the path was the tile's default".to_string() } else { format!("{arg} asks for a path with such CTAs") };
            Error::InvalidArgument { arg, rule: format!("{rule} (no comm_path given: {why})") }
        }
        (other, _) => other,
    }
}

/// The largest [`PlanContext::grid`] a plan takes: a communicator's grid is its GPUs' SM
/// count (132 on the H100/H200), and the partition search is linear in the grid.
pub const MAX_PLAN_GRID: u32 = 1 << 16;

/// The configuration a call of this shape would use on a communicator described by
/// `ctx` (heuristics + overrides): [`Communicator::plan_gemm_allreduce`] without the
/// communicator, so that every rule can be checked without a GPU.
///
/// Errors: a context no communicator has (`ctx`: world size outside 1..=MAX_RANKS, a
/// grid outside 2..=[`MAX_PLAN_GRID`] CTAs), shape rules ([`GemmShape::validate_dims`]), M x N above
/// `max_output_elems`, an override a shape cannot use (named).
pub fn plan_gemm_allreduce(shape: GemmShape, opts: GemmAllReduceOptions, ctx: PlanContext) -> Result<FusedConfig> {
    plan_fused(shape, opts, ctx, Collective::AllReduce)
}

/// [`plan_gemm_allreduce`] for a call ending with `collective`: the same plan, whose path
/// refusals list only the paths that collective runs ([`CommPath::check_for`]).
pub(crate) fn plan_fused(shape: GemmShape, opts: GemmAllReduceOptions, ctx: PlanContext, collective: Collective) -> Result<FusedConfig> {
    ctx.check()?;
    shape.validate_dims()?;
    let elems = shape.m as u64 * shape.n as u64;
    if elems > ctx.max_output_elems {
        return Err(invalid(
            "shape",
            format!("M x N = {elems} exceeds this communicator's max_output_elems ({})", ctx.max_output_elems),
        ));
    }
    let grid = ctx.grid;
    // A split or tail asked for without a path means a path that has them.
    let tunes_comm_ctas = opts.comm_ctas.is_some() || opts.tail_ctas.is_some();
    // One rank with the local path asked for, or no path and no communication CTAs asked
    // for: the local path (the plain GEMM alone), which takes any tile of the plain
    // GEMM's catalog. (An explicit local path on more ranks is refused by its check.)
    let local = opts.comm_path == Some(CommPath::Local) || (ctx.world_size == 1 && opts.comm_path.is_none() && !tunes_comm_ctas);
    if let Some(t) = opts.tile {
        if local { t.validate_for_gemm()? } else { t.validate()? }
        // One rank asking for communication CTAs asks for a fused kernel, which a clustered,
        // swapped-operand or column-fitted tile has only on the epilogue path, with 2 ranks.
        if ctx.world_size == 1 && !local && t.fused_epilogue_only() {
            return Err(invalid(
                "tile",
                format!(
                    "{t} has a fused kernel with 2 ranks only, and comm_path, comm_ctas or tail_ctas ask one rank for a fused kernel; without them one rank runs it on the local path (the plain GEMM alone)"
                ),
            ));
        }
    }
    // A path asked for with no tile: its N rule first, so that a refusal names the path
    // rather than the TMA-store tile picked for it below (helper-90).
    if let (None, Some(p)) = (opts.tile, opts.comm_path) {
        p.check_n(shape.n)?;
    }
    let tile = opts.tile.unwrap_or_else(|| {
        let t = FusedConfig::choose_tile(shape.m, shape.n, grid);
        // The reduce-add and push paths need the TMA-store epilogue: asked for, they get one.
        if opts.comm_path.is_some_and(CommPath::adds_into_out) { t.with_tma_store() } else { t }
    });
    // A forced TMA-store tile needs N % 8 == 0: refuse it here, as launch would.
    tile.check_output(shape.n)?;
    // A rank sharing its GPU takes no tail CTAs and not the epilogue path by default
    // (see below).
    let own_gpu = !ctx.gpu_shared;
    let path = opts.comm_path.unwrap_or_else(|| {
        if local {
            CommPath::Local // (one rank: nothing to reduce, the plain GEMM alone)
        } else if tile.fused_epilogue_only() {
            CommPath::Epilogue // (the only path a clustered, swapped or column-fitted tile has; checked below)
        } else if tunes_comm_ctas {
            CommPath::choose(shape.n, tile, ctx.world_size)
        } else {
            CommPath::choose_fused(shape.n, tile, ctx.world_size, own_gpu)
        }
    });
    // The epilogue path copies its last wave after the GEMM: narrower tiles where that
    // copy shrinks more than the GEMM slows, swapped-operand tiles for small M (a tile
    // asked for stays as asked).
    // (TMA-store tile for TMA-store tile: the output rule checked above still holds)
    // (choose_tile's narrow TMA-store twin is there to open the epilogue path, run 113;
    // paths that do not add into `out` keep the Registers tile they were measured with)
    let tile = if opts.tile.is_none() && tile == TileConfig::NARROW_TMA_STORE && !path.adds_into_out() { TileConfig::NARROW } else { tile };
    // (the path is checked against the tile it was chosen for first, so that a refusal
    // names that tile rather than a refinement the caller never saw; and what asked for
    // the path, where comm_path did not: path_asked_by)
    // (what chose the path, in the order above: a clustered, swapped-operand or column-
    // fitted tile whatever else was asked, then communication or tail CTAs, then the tile)
    let chooser = match opts.tile {
        Some(t) if t.fused_epilogue_only() => Some("tile"),
        _ if tunes_comm_ctas => Some(if opts.comm_ctas.is_some() { "comm_ctas" } else { "tail_ctas" }),
        Some(_) => Some("tile"),
        None => None,
    };
    path.check_for(shape.n, tile, ctx.world_size, collective).map_err(|e| path_asked_by(e.into(), &opts, chooser))?;
    // The local path (one rank) runs the plain GEMM's kernel as `mkernel::gemm` would on
    // this rank's grid: where a split rule applies (no tile forced, the split left to
    // Auto), its tile and slices in the workspace's split slots and counts
    // (`TileConfig::split_rule_for`); else the plain default tile (`choose_for`; its
    // TMA-store twin where slices are asked for, `choose_for_split`).
    let split = opts.split_last_wave.unwrap_or_default();
    let local_split = match (path, opts.tile, split) {
        (CommPath::Local, None, LastWaveSplit::Auto) => {
            TileConfig::split_rule_for(shape, grid, ctx.split_scratch_bytes, mkernel_kernels::gemm::SPLIT_COUNTS)
        }
        _ => None,
    };
    let tile = match (path, opts.tile, local_split) {
        (CommPath::Local, None, Some((t, _))) => t,
        (CommPath::Local, None, None) if matches!(split, LastWaveSplit::Slices(_)) => TileConfig::choose_for_split(shape, grid),
        (CommPath::Local, None, None) => TileConfig::choose_for(shape, grid),
        _ => tile,
    };
    let tile = if opts.tile.is_none() && path == CommPath::Epilogue {
        // (the epilogue rules, the column rule, and last a 2-CTA twin where the row blocks
        // pair up and the last wave is not split)
        FusedConfig::epilogue_default_tile(shape, tile, grid, opts.split_last_wave.unwrap_or_default(), ctx.split_scratch_bytes)
    } else {
        tile
    };
    path.check_for(shape.n, tile, ctx.world_size, collective)?;
    // (the local path's plain GEMM launch rounds its own grid down to whole clusters)
    if !grid.is_multiple_of(tile.cluster_size()) && path != CommPath::Local {
        return Err(invalid(
            "tile",
            format!("{tile} needs a grid that is a multiple of its cluster size, and this group's kernels have {grid} CTAs each (a share of a GPU other ranks use, or the group's smallest SM count); use a tile without -c2"),
        ));
    }
    let comm_ctas = match opts.comm_ctas {
        _ if !path.has_comm_ctas() => match opts.comm_ctas {
            None | Some(0) => 0,
            Some(c) => {
                return Err(invalid(
                    "comm_ctas",
                    format!(
                        "the {} path has no communication CTAs ({}); got {c}",
                        path.name(),
                        if path == CommPath::Local { "one rank: the plain GEMM alone" } else { "every CTA computes and all-reduces its own tiles" }
                    ),
                ))
            }
        },
        Some(c) => c,
        None => {
            let w = Workload::gemm_allreduce(
                shape.m as u64,
                shape.n as u64,
                shape.k as u64,
                ctx.world_size,
                tile.bm as u64,
                tile.bn as u64,
            );
            let model = if path.adds_into_out() {
                PartitionModel::H200_NVLINK_REDUCE
            } else {
                PartitionModel::H200_NVLINK
            };
            balance(&w, &model, grid).intra_comm.max(1)
        }
    };
    if path.has_comm_ctas() && (comm_ctas == 0 || comm_ctas >= grid) {
        return Err(invalid(
            "comm_ctas",
            format!("must be in 1..{grid} on the {} path (this rank's kernels have {grid} CTAs; 0 only with comm_path epilogue, or local with one rank), got {comm_ctas}", path.name()),
        ));
    }
    // A rank sharing its GPU takes no tail CTAs: they would take the SMs of a
    // co-resident peer's kernel, whose compute CTAs this rank's communication CTAs
    // wait for (a timeout, not a result).
    let tail_ctas = opts.tail_ctas.unwrap_or(if path.claims_tiles() && own_gpu { grid - comm_ctas } else { 0 });
    let scratch_bytes = ctx.split_scratch_bytes;
    let split_slices = match split {
        LastWaveSplit::Off => 1,
        LastWaveSplit::Auto if path == CommPath::Local => local_split.map_or(1, |(_, s)| s),
        LastWaveSplit::Auto => FusedConfig::choose_split(shape, tile, grid, path, scratch_bytes),
        LastWaveSplit::Slices(n) => n,
    };
    let diag_skip = opts.diagnostic_skip.unwrap_or(0);
    if diag_skip > 3 || (diag_skip != 0 && path != CommPath::Epilogue) {
        return Err(invalid("diagnostic_skip", format!("must be 0..=3, nonzero on the epilogue path only; got {diag_skip} on the {} path", path.name())));
    }
    let cfg = FusedConfig { tile, comm_ctas, grid, path, tail_ctas, pace: opts.epilogue_pace.unwrap_or_default(), split_slices, diag_skip };
    cfg.check_pace()?;
    // (FusedConfig names its field; the caller set split_last_wave.)
    cfg.check_split(shape, scratch_bytes).map_err(|e| match e {
        mkernel_kernels::Error::InvalidArgument { rule, .. } => invalid("split_last_wave", format!("{split_slices} slices: {rule}")),
        other => other.into(),
    })?;
    cfg.check_tail_ctas()?;
    if tail_ctas > 0 && !own_gpu {
        return Err(invalid(
            "tail_ctas",
            format!("no rank takes tail CTAs where ranks share a GPU (this group's kernels have {grid} CTAs each), got {tail_ctas}"),
        ));
    }
    Ok(cfg)
}
