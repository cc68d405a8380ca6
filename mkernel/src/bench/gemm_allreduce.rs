//! `mkernel bench gemm-allreduce`: the fused GEMM + all-reduce against cuBLAS + NCCL
//! on the GPUs of this machine; `mkernel bench gemm-reduce-scatter` the same with the
//! fused GEMM + reduce-scatter against cuBLAS + NCCL's reduce-scatter ([`Op`]: the same
//! options, steps and checks; each rank's output is its M / world rows of the sum).
//! Two modes, as the communicator has:
//! - default: one process drives every GPU (rank i on GPU i);
//! - `--procs N`: this process starts N copies of itself, one per GPU, with the
//!   launcher variables set (`--launched` is what they run; it also works directly
//!   under torchrun/srun). Timings are the slowest rank's per iteration, exchanged
//!   through the communicator's bootstrap; rank 0 prints and writes the JSON.
//!
//! Per shape, on the same inputs and streams, side by side (one iteration of each per
//! round, in a random order per round, so all run under the same clocks and none gains
//! from its place; by default each step after an L2 flush and a barrier of the ranks;
//! `--warmup-ms 3000` first brings the GPUs to the clocks of sustained load): (a) cuBLAS
//! GEMM then NCCL all-reduce (the unfused baseline), (a_gemm) cuBLAS alone, (b) our GEMM
//! alone, (c) NCCL all-reduce alone, (d) the fused kernel with the heuristic split, plus
//! (d@N) any static splits given with --sm-comm and the configurations of --sweep-paths,
//! --sweep-same, --sweep-split, --sweep-tiles and --sweep-diag (at most
//! MAX_FUSED_CONFIGS in all). Speedup = a / d; overlap efficiency =
//! max(b, c) / d (1.0 = the communication is completely hidden behind our GEMM), and
//! against the baseline's parts, max(a_gemm, c) / d (`ovl/cuBLAS`: also charges the
//! fused kernel for our GEMM being slower than cuBLAS).

use std::sync::Arc;

use clap::Args;
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::{Cublas, Nccl};
use mkernel::trace::TraceBuffer;
use mkernel::{check, Collective, CommConfig, CommPath, Communicator, FusedConfig, GemmAllReduceOptions, GemmOptions, GemmShape};
use serde::Serialize;

use super::{rotation_sets, run_info, time_rounds_ms, BenchResult, Common, Pace, Warmup};

#[derive(Args, Clone, Debug)]
pub struct ArArgs {
    #[command(flatten)]
    pub common: Common,
    /// Time these shapes instead of the issue's list: MxNxK with K each rank's shard,
    /// comma-separated or repeated (e.g. --shape 32x8192x4096,129x8192x4096 for decode
    /// batches); --filter still applies (their labels are "shape MxNxK").
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, value_parser = parse_fused_shape)]
    pub shape: Vec<GemmShape>,
    /// Number of GPUs (ranks), 1 to 8; default: all visible. With --share-gpu, the number
    /// of ranks on GPU 0, 2 to 8 (default 2). Not with --procs or --launched (the
    /// launcher's world size counts there).
    #[arg(long, allow_negative_numbers = true, conflicts_with_all = ["procs", "launched"], value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(1..=8))]
    pub gpus: Option<usize>,
    /// Static numbers of communication CTAs to sweep, e.g. 4,8,16,32 (each 1 to the
    /// grid size - 1), on the --comm-path given or else the default path with
    /// communication CTAs (one-shot for 2 ranks; gemm-reduce-scatter: vec16, or scalar
    /// for N % 8 != 0; not the epilogue path, which has none).
    /// Each count once.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = parse_sm_comm)]
    pub sm_comm: Vec<u32>,
    /// With --check: repetitions per shape, each on fresh random data, 1 to 1000000.
    #[arg(long, default_value_t = 1, requires = "check", allow_negative_numbers = true, value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub check_reps: usize,
    /// One process per GPU: start this many ranks (processes), 1 to 8, on GPUs 0..N.
    /// Not with --launched (what the started ranks run).
    #[arg(long, allow_negative_numbers = true, conflicts_with = "launched", value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(1..=8))]
    pub procs: Option<usize>,
    /// Run as one rank of a launcher (reads RANK, WORLD_SIZE, LOCAL_RANK, ...).
    #[arg(long)]
    pub launched: bool,
    /// DIAGNOSTIC, for a machine with one GPU: put every rank (--gpus N, default 2) on
    /// GPU 0, each rank's kernels on its share of the SMs. NCCL refuses two ranks on one
    /// GPU, so there is no baseline: the base, NCCL, speedup and comm columns are NaN (null
    /// in the JSON, written as gemm-allreduce-wN-shared-* or gemm-reduce-scatter-wN-shared-*); "cuBLAS" and "our gemm" time
    /// every rank's GEMM on the one GPU, and "overlap" is our GEMMs' time over the fused
    /// call's. The ranks' "link" is
    /// the GPU's own memory, far faster than NVLink, so the copies after the GEMM cost
    /// little: the fused times compare configurations (--sweep-*) on their GEMM side,
    /// they are not the numbers of two GPUs over NVLink. Ranks sharing a GPU take no tail
    /// CTAs and, by default, not the epilogue path (2 ranks: one-shot; more: tma or vec16;
    /// N % 8 != 0: scalar; gemm-reduce-scatter: vec16 or scalar): --comm-path epilogue for the epilogue path, which the
    /// epilogue-only options (--split-last-wave N, --sweep-split, --sweep-diag,
    /// --epilogue-pace) need here, and which makes the default row and a --sweep-tiles row
    /// of an epilogue-only tile (clustered, swapped-operand, column-fitted) compare on one
    /// path (without it the default row keeps its own path). To stand for a pair's rank, halve M (keeping the row
    /// blocks even): each rank's half of the SMs then takes the pair's tiles per CTA and
    /// waves; halving N does so only where the tile's width divides N/2 (a column-fitted
    /// tile otherwise gets one more wave: bench/NOTES.md 50.4).
    #[arg(long, conflicts_with_all = ["procs", "launched"])]
    pub share_gpu: bool,
    /// Force a tile configuration: wide, narrow, m64-wide, each also -tma-store,
    /// m64-narrow-tma-store, the 2-CTA cluster tiles wide-tma-store-c2, narrow-tma-store-c2,
    /// m64-wide-tma-store-c2, the swapped-operand TMA-store tiles swap-ab-64xR-tma-store
    /// (R = 8, 16, ..., 256) and swap-ab-128xR-tma-store (R = 128, 136, ..., 256), also in
    /// 2-CTA clusters as swap-ab-128xR-tma-store-c2 (R a multiple of 16), and the
    /// column-fitted TMA-store tiles cols-128xC-tma-store (C = 136, 144, ..., 248), also as
    /// cols-128xC-tma-store-c2 (C = 144, 160, ..., 240); both whole tiles with 2 ranks (no
    /// --split-last-wave or --sweep-split counts). The clustered, swapped and
    /// column-fitted ones take the epilogue path with 2 ranks, or the local path with one.
    /// The plain GEMM's other tiles (swap-ab-64xR, cols-128xC with other widths or the
    /// Registers epilogue) are `bench gemm` only, but for one rank on the local path (--gpus
    /// 1 or --procs 1).
    #[arg(long)]
    pub tile: Option<String>,
    /// Force how the all-reduce moves data: epilogue (every SM computes, each CTA
    /// all-reduces its own tiles), reduce or push (2 ranks, TMA-store tiles), one-shot,
    /// tma, vec16, scalar, local (one rank: the plain GEMM alone); gemm-reduce-scatter:
    /// epilogue, vec16, scalar or local only (its default: epilogue on 2 ranks with a GPU
    /// each, else vec16, or scalar for N % 8 != 0). Default: local with one
    /// rank (unless --tail-ctas; --sm-comm adds one-shot rows); epilogue on 2 ranks with a GPU each, a TMA-store tile
    /// (a *-tma-store --tile, or the default tile, which is one on most shapes with
    /// N % 8 == 0) and N % 8 == 0; else one-shot (1-2 ranks), tma/vec16 (more ranks) or
    /// scalar (N % 8 != 0). With --sm-comm or --tail-ctas, never epilogue (see there).
    #[arg(long)]
    pub comm_path: Option<String>,
    /// Also time these paths per shape, each with its default tile, split and tail
    /// (side by side with the default path, same data; timed, not checked), e.g.
    /// epilogue,one-shot; paths a shape cannot take (N % 8) are left out of its row.
    #[arg(long, value_delimiter = ',')]
    pub sweep_paths: Vec<String>,
    /// How the epilogue path paces its copies to the peer: clock (default) or sleep
    /// (fixed sleeps, slower beyond two tiles per SM); applies to the epilogue path wherever it runs (default,
    /// --comm-path or --sweep-paths), refused with another --comm-path.
    #[arg(long)]
    pub epilogue_pace: Option<String>,
    /// Epilogue and local paths: split a last wave that leaves SMs idle into K-slices:
    /// auto (the default: FusedConfig::choose_split on the epilogue path, the plain GEMM's
    /// split rules on one rank's local path), off or a slice count. Applies wherever the
    /// epilogue path runs (default, --comm-path or --sweep-paths) and to the local path
    /// (--gpus 1 without --comm-path or --tail-ctas, or --comm-path local); other paths
    /// never split, so off, auto and 1 are accepted with them and a count of 2 or more is
    /// refused. A count a shape cannot take stops the run before any timing, naming the
    /// shape and split_last_wave.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_split_last_wave)]
    pub split_last_wave: Option<mkernel::LastWaveSplit>,
    /// Force the number of tail CTAs (one-shot, reduce and push paths; 0 to the grid size;
    /// refused by gemm-reduce-scatter, whose paths take none):
    /// CTAs that join the communication once compute CTAs finish. Default: one per
    /// compute CTA on those paths, none on the others. Given without --comm-path, the
    /// path is one with communication CTAs (one-shot for 2 ranks), never epilogue, unless
    /// --tile is one with the epilogue path only (clustered, swapped-operand or
    /// column-fitted; then only 0).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_tail_ctas)]
    pub tail_ctas: Option<u32>,
    /// After timing each shape, run one more fused call per rank with an event trace,
    /// queued behind three untraced calls (so the ranks start as aligned as in the timed
    /// loop): print where its time went (compute end, tail, copies, claim waits) and
    /// write the events as JSON (`trace-<shape>-r<rank>-<date>.json` in --out-dir).
    #[arg(long)]
    pub trace: bool,
    /// Time without aligning the ranks. By default (with more than one rank) every step
    /// (each variant of each round, warm-up rounds too) starts with the ranks aligned by
    /// a device barrier (`Communicator::device_barrier`, before the step's start event),
    /// and each round but the first (which loads the kernels) is held behind a host gate
    /// per GPU (`HostGate`) while it is enqueued, so its steps run back to back whatever
    /// the host's launch rate. Without
    /// alignment a step inherits the skew between the GPUs that the steps before it left,
    /// and a kernel that synchronises the ranks (NCCL, the fused kernel) is charged for
    /// it: ~12 us at o-proj M=2048, where GPU 1 runs the unsynchronised GEMMs of the round
    /// slower (bench/NOTES.md 11.3, 12.1).
    #[arg(long, overrides_with = "align_ranks")]
    pub no_align_ranks: bool,
    /// Align the ranks before every step (the default; see --no-align-ranks).
    #[arg(long, overrides_with = "no_align_ranks")]
    pub align_ranks: bool,
    /// Do not flush L2 before each step. By default every step (each variant of each
    /// round, warm-up too) is preceded, before the ranks' barrier and its start event, by
    /// a memset of twice the L2 size (`bench::L2Flush`, as nvbench does), so no step's
    /// time depends on what the step before it left in L2 (bench/NOTES.md 12.2).
    #[arg(long)]
    pub no_l2_flush: bool,
    /// Also time the shape's default configuration a second time, as its own row (an
    /// A/A check of the timing: the two rows should agree within the noise).
    #[arg(long)]
    pub sweep_same: bool,
    /// DIAGNOSTIC: also time the default configuration with parts of the all-reduce
    /// skipped (`GemmAllReduceOptions::diagnostic_skip`, epilogue path; results wrong,
    /// never checked): 1 = copies store nothing, 2 = no load or add of the peer's copy,
    /// 3 = both; e.g. --sweep-diag 1,2,3.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=3))]
    pub sweep_diag: Vec<u32>,
    /// Also time the shape's default configuration with its last wave split into each of
    /// these slice counts (`GemmAllReduceOptions::split_last_wave`; epilogue or local path; counts
    /// the shape cannot take are left out of its row), side by side with the default
    /// (timed, not checked), e.g. --sweep-split 1,2,3 (1: no split).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub sweep_split: Vec<u32>,
    /// Also time the shape's default configuration with each of these tiles instead
    /// (names as for --tile; the split and path are planned again for the tile; tiles the
    /// shape's plan refuses are left out of its row, and a tile that no call of the run
    /// can take, by --tile's path and world-size rules, is refused), side by side with the default
    /// (timed, not checked), e.g. --sweep-tiles narrow-tma-store,wide-tma-store.
    #[arg(long, value_delimiter = ',')]
    pub sweep_tiles: Vec<String>,
    /// Device-side wait bound in seconds (0.001 to 86400).
    #[arg(long, default_value_t = 20.0, allow_negative_numbers = true, value_parser = parse_timeout_s)]
    pub timeout_s: f64,
}

/// --shape of the fused bench: [`super::gemm::parse_shape`]'s rules, and an output the
/// communicator's symmetric workspace can hold (M x N <= 2^37 elements,
/// `CommConfig::max_output_elems`), checked before any device is opened.
fn parse_fused_shape(v: &str) -> Result<GemmShape, String> {
    let s = super::gemm::parse_shape(v)?;
    let max = mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS;
    if s.m as u64 * s.n as u64 > max {
        return Err(format!("'{v}': M x N must be at most 2^37 = {max} output elements (the fused call's symmetric workspace), got {}", s.m as u64 * s.n as u64));
    }
    Ok(s)
}

/// --sm-comm: a count of CTAs, at least 1 (the grid bound is checked once the GPU is known).
fn parse_sm_comm(v: &str) -> Result<u32, String> {
    if v.trim().is_empty() {
        return Err("an empty count in the list (two commas, or a comma at an end)".to_string());
    }
    match v.trim().parse::<i64>() {
        Ok(c) if (1..=i64::from(u32::MAX)).contains(&c) => Ok(c as u32),
        Ok(c) => Err(format!("{c} communication CTAs: must be at least 1 and below the grid size (the SM count; checked once the GPU is known)")),
        Err(e) => Err(format!("'{v}' is not a whole number of CTAs ({e})")),
    }
}

/// --sm-comm: each count once (a repeated one would time the same split twice).
/// Which input set a step takes: consecutive steps that read A and B take consecutive
/// sets (a step that reads neither, NCCL alone, takes none), so with 2 or more sets none
/// finds its inputs in L2 from the one before, whatever the round's order.
#[derive(Default)]
struct InputRotation {
    reads: usize,
}

impl InputRotation {
    /// The set index (modulo the number of sets) of the next step.
    fn next(&mut self, reads_inputs: bool) -> usize {
        let i = self.reads;
        self.reads += usize::from(reads_inputs);
        i
    }
}

/// A sweep's values, each once (each configuration is timed once per round).
fn check_unique<T: PartialEq + std::fmt::Display>(flag: &str, values: &[T]) -> Result<(), String> {
    if values.iter().any(|v| v.to_string().trim().is_empty()) {
        return Err(format!("{flag}: an empty name in the list (two commas, or a comma at an end)"));
    }
    match super::first_repeat(values) {
        Some(v) => Err(format!("{flag}: {v} is listed twice (each configuration is timed once)")),
        None => Ok(()),
    }
}

/// Most fused configurations one round times (the default, --sm-comm's and the sweeps'):
/// a round is enqueued whole behind its host gate (about six operations per step and
/// stream), and a round's steps should stay within a stream's launch queue and a few
/// seconds.
const MAX_FUSED_CONFIGS: usize = 32;

/// --tail-ctas: a count of CTAs, 0 or more (the grid bound is checked once the GPU is known).
fn parse_tail_ctas(v: &str) -> Result<u32, String> {
    match v.trim().parse::<i64>() {
        Ok(c) if (0..=i64::from(u32::MAX)).contains(&c) => Ok(c as u32),
        Ok(c) => Err(format!("{c} tail CTAs: must be 0 or more, at most the grid size (the SM count; checked once the GPU is known)")),
        Err(e) => Err(format!("'{v}' is not a whole number of CTAs ({e})")),
    }
}

pub(super) fn parse_split_last_wave(v: &str) -> Result<mkernel::LastWaveSplit, String> {
    mkernel::LastWaveSplit::parse(v).map_err(|e| e.to_string())
}

fn parse_timeout_s(v: &str) -> Result<f64, String> {
    let t: f64 = v.parse().map_err(|e| format!("{e}"))?;
    if (0.001..=86_400.0).contains(&t) {
        Ok(t)
    } else {
        Err(format!("must be between 0.001 and 86400 seconds, got {v}"))
    }
}

/// The shape list of the GEMM + all-reduce issue (K is each rank's shard).
pub fn shapes() -> Vec<(String, GemmShape)> {
    let mut v = Vec::new();
    for m in [1024u32, 2048, 4096, 8192, 16384] {
        v.push((format!("llama70b-tp2 o M={m}"), GemmShape { m, n: 8192, k: 4096 }));
        v.push((format!("llama70b-tp2 down M={m}"), GemmShape { m, n: 8192, k: 14336 }));
        v.push((format!("deepseek-v3 M={m}"), GemmShape { m, n: 7168, k: 9216 }));
    }
    for m in [129u32, 2049] {
        v.push((format!("odd M={m}"), GemmShape { m, n: 8192, k: 4096 }));
    }
    v
}

/// The reduce-scatter bench's list: the all-reduce's LLM shapes, and for the odd M two
/// ragged ones (M = 136, 2056: not multiples of the 128-row tiles, but of 1, 2, 4 and 8
/// ranks, so that the two ranks' rows meet inside a tile). Shapes whose M the world size
/// does not divide are left out of a run, saying so.
pub fn reduce_scatter_shapes() -> Vec<(String, GemmShape)> {
    let mut v: Vec<_> = shapes().into_iter().filter(|(label, _)| !label.starts_with("odd")).collect();
    for m in [136u32, 2056] {
        v.push((format!("ragged M={m}"), GemmShape { m, n: 8192, k: 4096 }));
    }
    v
}

/// The fused call a run times, planned and called the same way by every step, check,
/// sweep and trace: `Communicator::gemm_allreduce` or `gemm_reduce_scatter` (whose
/// output is rank r's rows, [`Op::rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op(pub Collective);

impl Op {
    /// The bench's name (JSON `bench`, file names): `gemm-allreduce` or `gemm-reduce-scatter`.
    pub fn bench(self) -> &'static str {
        match self.0 {
            Collective::AllReduce => "gemm-allreduce",
            Collective::ReduceScatter => "gemm-reduce-scatter",
        }
    }
    fn plan(self, comm: &Communicator, s: GemmShape, opts: GemmAllReduceOptions) -> mkernel::Result<FusedConfig> {
        match self.0 {
            Collective::AllReduce => comm.plan_gemm_allreduce(s, opts),
            Collective::ReduceScatter => comm.plan_gemm_reduce_scatter(s, opts),
        }
    }
    #[allow(clippy::too_many_arguments)]
    fn call(
        self,
        comm: &Communicator,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        s: GemmShape,
        opts: GemmAllReduceOptions,
        trace: Option<&mut TraceBuffer>,
    ) -> mkernel::Result<FusedConfig> {
        match (self.0, trace) {
            (Collective::AllReduce, None) => comm.gemm_allreduce(stream, a, b, out, s, opts),
            (Collective::AllReduce, Some(t)) => comm.gemm_allreduce_traced(stream, a, b, out, s, opts, t),
            (Collective::ReduceScatter, None) => comm.gemm_reduce_scatter(stream, a, b, out, s, opts),
            (Collective::ReduceScatter, Some(t)) => comm.gemm_reduce_scatter_traced(stream, a, b, out, s, opts, t),
        }
    }
    /// Rows of the sum rank `rank` of `world` ends with.
    fn rows(self, s: GemmShape, world: u32, rank: u32) -> std::ops::Range<u32> {
        let rows = self.0.out_rows(s.m, world);
        match self.0 {
            Collective::AllReduce => 0..s.m,
            Collective::ReduceScatter => rank * rows..(rank + 1) * rows,
        }
    }
}

#[derive(Serialize, Clone)]
struct Row {
    label: String,
    /// `all-reduce` or `reduce-scatter` (NCCL's collective in the baseline, and what the
    /// fused call ends with).
    collective: &'static str,
    m: u32,
    n: u32,
    k: u32,
    world: usize,
    config: String,
    baseline_ms: f64,
    cublas_ms: f64,
    ours_gemm_ms: f64,
    nccl_ms: f64,
    fused_ms: f64,
    speedup: f64,
    overlap_efficiency: f64,
    overlap_vs_cublas: f64,
    comm_share_of_baseline: f64,
    /// The shape's two floors for one rank on its own GPU (`super::floors`; with
    /// --share-gpu, as for the pair it stands for): 2 M N K at the matrix rate, and its
    /// all-reduce (reduce-scatter) bytes over NVLink, ms.
    floor_compute_ms: f64,
    floor_link_ms: f64,
    sweep: Vec<(u32, f64)>,
    /// --sweep-paths, --sweep-same, --sweep-split and --sweep-tiles:
    /// (what was swept, config, median fused ms).
    path_sweep: Vec<(String, String, f64)>,
    /// --sweep-diag: (what was skipped, config, median fused ms); results wrong, never
    /// checked: kept apart from real configurations.
    diagnostic_sweep: Vec<(String, String, f64)>,
    check: Option<String>,
}

struct RankData {
    a: Vec<CudaSlice<bf16>>,
    b: Vec<CudaSlice<bf16>>,
    /// The fused call's output, [M, N] (a reduce-scatter writes its first M / world rows).
    out_fused: CudaSlice<bf16>,
    /// cuBLAS's [M, N] (NCCL's all-reduce sums it in place).
    out_base: CudaSlice<bf16>,
    /// NCCL's reduce-scatter of `out_base`: this rank's [M / world, N] rows (none for an
    /// all-reduce).
    out_rows: Option<CudaSlice<bf16>>,
}

fn alloc_rank(stream: &Arc<CudaStream>, s: GemmShape, label: &str, sets: usize, seed: u64, op: Op, world: u32) -> BenchResult<RankData> {
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for i in 0..sets {
        let mut x = super::alloc::<bf16>(stream, m * k, label, "A [M, K] bf16")?;
        let mut y = super::alloc::<bf16>(stream, n * k, label, "B [N, K] bf16")?;
        check::fill_uniform(stream, &mut x, seed.wrapping_add(2 * i as u64))?;
        check::fill_uniform(stream, &mut y, seed.wrapping_add(2 * i as u64 + 1))?;
        a.push(x);
        b.push(y);
    }
    let out_fused = super::alloc::<bf16>(stream, m * n, label, "C [M, N] bf16 (fused)")?;
    let out_base = super::alloc::<bf16>(stream, m * n, label, "C [M, N] bf16 (baseline)")?;
    let out_rows = match op.0 {
        Collective::AllReduce => None,
        Collective::ReduceScatter => {
            Some(super::alloc::<bf16>(stream, op.0.out_rows(s.m, world) as usize * n, label, "C rows [M / world, N] bf16 (NCCL's reduce-scatter)")?)
        }
    };
    Ok(RankData { a, b, out_fused, out_base, out_rows })
}

/// Fresh inputs, poisoned outputs, one fused call on every rank, and every rank's
/// output compared with the fp32 sum of all ranks' cuBLAS fp32 products (its rows of it,
/// for a reduce-scatter).
#[allow(clippy::too_many_arguments)]
fn check_once(
    op: Op,
    comms: &[Communicator],
    streams: &[Arc<CudaStream>],
    blas: &mut [Cublas],
    data: &mut [RankData],
    s: GemmShape,
    seed: u64,
    opts: GemmAllReduceOptions,
    on_device: bool,
) -> BenchResult<mkernel::check::Comparison> {
    let case = check::AllReduceCase { shape: s, world: comms[0].world_size(), seed };
    for (r, d) in data.iter_mut().enumerate() {
        case.fill_inputs(&streams[r], comms[r].rank(), &mut d.a[0], &mut d.b[0])?;
        check::poison(&streams[r], &mut d.out_fused)?;
    }
    for (r, d) in data.iter_mut().enumerate() {
        op.call(&comms[r], &streams[r], &d.a[0], &d.b[0], &mut d.out_fused, s, opts, None)?;
    }
    for (r, c) in comms.iter().enumerate() {
        c.synchronize(&streams[r])?;
    }
    let mut worst: Option<check::Comparison> = None;
    for (r, d) in data.iter().enumerate() {
        // The first repetition compares on the host; later ones on the device (the test
        // `device_and_host_verification_agree` ties the two together).
        let rows = op.rows(s, comms[r].world_size(), comms[r].rank());
        let cmp = if on_device {
            case.verify_rows_on_device(&streams[r], &mut blas[r], &d.out_fused, rows)?
        } else {
            case.verify_rows(&streams[r], &mut blas[r], &d.out_fused, rows)?
        };
        if !cmp.passed() {
            return Err(format!("rank {}: fused output wrong ({cmp}; seed {seed:#x})", comms[r].rank()).into());
        }
        if worst.as_ref().is_none_or(|w| cmp.rel_fro_err > w.rel_fro_err) {
            worst = Some(cmp);
        }
    }
    worst.ok_or_else(|| "no ranks".into())
}

/// A reduce-scatter runs on the epilogue, vec16, scalar and local paths, none of which
/// takes tail CTAs: a --comm-path or --sweep-paths entry outside them, or --tail-ctas (any
/// count: 0 is what it runs anyway), is refused before any GPU is opened.
fn check_collective_args(op: Op, comm_path: Option<CommPath>, sweep_paths: &[CommPath], tail_ctas: Option<u32>) -> Result<(), String> {
    if op.0 == Collective::AllReduce {
        return Ok(());
    }
    let runs = CommPath::ALL.into_iter().filter(|&p| op.0.runs_on(p)).map(|p| p.name()).collect::<Vec<_>>().join(", ");
    if let Some(p) = comm_path.filter(|&p| !op.0.runs_on(p)) {
        return Err(format!("--comm-path {}: a reduce-scatter runs on {runs}", p.name()));
    }
    if let Some(p) = sweep_paths.iter().find(|&&p| !op.0.runs_on(p)) {
        return Err(format!("--sweep-paths {}: a reduce-scatter runs on {runs}", p.name()));
    }
    if let Some(t) = tail_ctas {
        return Err(format!("--tail-ctas {t}: a reduce-scatter's paths ({runs}) take no tail CTAs"));
    }
    Ok(())
}

/// The reduce-scatter's rules that need the world size, checked as soon as it is known
/// (from --gpus, --procs or --share-gpu before any GPU is opened, else once the GPUs are
/// counted): one rank runs the plain GEMM (no fused kernel to force or sweep), the
/// epilogue path needs 2 ranks, and every --shape's M must be a multiple of the world size
/// (the default list's others are left out, saying so).
fn check_reduce_scatter_world(op: Op, world: usize, comm_path: Option<CommPath>, sm_comm: &[u32], sweep_paths: &[CommPath], shapes: &[GemmShape]) -> Result<(), String> {
    if op.0 == Collective::AllReduce {
        return Ok(());
    }
    let fused = |p: &CommPath| *p != CommPath::Local;
    if world == 1 {
        let one = "with one rank a reduce-scatter is the plain GEMM into all M rows (the local path): its fused kernels need 2 ranks or more";
        if let Some(p) = comm_path.filter(fused) {
            return Err(format!("--comm-path {}: {one}", p.name()));
        }
        if !sm_comm.is_empty() {
            return Err(format!("--sm-comm: {one}"));
        }
        if let Some(p) = sweep_paths.iter().find(|p| fused(p)) {
            return Err(format!("--sweep-paths {}: {one}", p.name()));
        }
    }
    if world != 2 && comm_path == Some(CommPath::Epilogue) {
        return Err(format!("--comm-path epilogue: the epilogue path needs 2 ranks, and this run has {world}"));
    }
    if let Some(s) = shapes.iter().find(|s| !(s.m as usize).is_multiple_of(world)) {
        return Err(format!(
            "--shape {}x{}x{}: a reduce-scatter gives each of the {world} ranks M / world rows, and M={} is not a multiple of {world}",
            s.m, s.n, s.k, s.m
        ));
    }
    Ok(())
}

/// NCCL's collective of `op` on every local rank's cuBLAS output: the all-reduce of
/// `out_base` in place, or its reduce-scatter into `out_rows` (which `alloc_rank` made for it).
fn nccl_collective(op: Op, nccl: &mut Nccl, data: &mut [RankData]) -> BenchResult<()> {
    match op.0 {
        Collective::AllReduce => {
            let mut outs: Vec<&mut CudaSlice<bf16>> = data.iter_mut().map(|d| &mut d.out_base).collect();
            nccl.all_reduce_sum(&mut outs)?;
        }
        Collective::ReduceScatter => {
            let (mut sends, mut recvs): (Vec<&CudaSlice<bf16>>, Vec<&mut CudaSlice<bf16>>) = (Vec::new(), Vec::new());
            for d in data.iter_mut() {
                recvs.push(d.out_rows.as_mut().ok_or("a reduce-scatter's rank data has no rows buffer (alloc_rank)")?);
                sends.push(&d.out_base);
            }
            nccl.reduce_scatter_sum(&sends, &mut recvs)?;
        }
    }
    Ok(())
}

/// Untraced calls queued right before the traced one: the traced call then starts when
/// the previous one ends on each GPU, with the ranks as aligned as in the timed loop
/// (an isolated call would also show the host's launch skew between ranks).
const TRACE_LEAD_CALLS: usize = 3;

/// Names of --sweep-diag entries (kept apart from real configurations in the output).
const DIAGNOSTIC_PREFIX: &str = "DIAGNOSTIC";

/// One traced fused call on every local rank, queued behind [`TRACE_LEAD_CALLS`]
/// untraced ones: prints each rank's summary, writes its events as JSON (unless
/// --no-json).
#[allow(clippy::too_many_arguments)]
fn trace_call(
    op: Op,
    comms: &[Communicator],
    streams: &[Arc<CudaStream>],
    data: &mut [RankData],
    s: GemmShape,
    opts: GemmAllReduceOptions,
    label: &str,
    date: &str,
    out_dir: &std::path::Path,
    no_json: bool,
    bar: &indicatif::ProgressBar,
) -> BenchResult<()> {
    // One rank's default is the plain GEMM alone (the local path): no events to record.
    if op.plan(&comms[0], s, opts)?.path == CommPath::Local {
        let fused = if op.0 == Collective::AllReduce { "--comm-path one-shot traces the fused kernel" } else { "a reduce-scatter's fused kernels need 2 ranks" };
        bar.suspend(|| println!("{:<26} trace: none, the local path (one rank: the plain GEMM alone) has no events; {fused}", label));
        return Ok(());
    }
    // Events (see TraceBuffer::new): up to 3 per CTA, plus 2 per slice of a split last
    // wave (left-over tiles x slices: a few hundred on the shapes timed; events past the
    // capacity are dropped and counted), within the 4096; per tile, 5 on the epilogue path
    // (TileStaged, CopyIssued, CopyFenced, TileStored, PeerAdded; its tiles span at least
    // two 64x128 units, except edge tiles, one event short each, within the 4096), else 1
    // plus 2 per claim of 2 tiles: 4 per 64x128 unit.
    let tiles = (s.m as u64).div_ceil(64) * (s.n as u64).div_ceil(128);
    let capacity = u32::try_from(4 * tiles + 4096).map_err(|_| format!("--trace: {label} has too many tiles to trace"))?;
    let mut bufs = Vec::new();
    for st in streams {
        bufs.push(TraceBuffer::new(st, capacity)?);
    }
    // Each call takes the next input set, as in the timed loop (time_rounds_ms), so the
    // traced call does not find its inputs in L2 from the call before: on one set, the
    // traced call of o-proj M=1024 ran ~8 us faster than the timed ones (run 69).
    for i in 0..TRACE_LEAD_CALLS {
        for (r, d) in data.iter_mut().enumerate() {
            let set = i % d.a.len().max(1);
            op.call(&comms[r], &streams[r], &d.a[set], &d.b[set], &mut d.out_fused, s, opts, None)?;
        }
    }
    for (r, d) in data.iter_mut().enumerate() {
        let set = TRACE_LEAD_CALLS % d.a.len().max(1);
        op.call(&comms[r], &streams[r], &d.a[set], &d.b[set], &mut d.out_fused, s, opts, Some(&mut bufs[r]))?;
    }
    for (r, c) in comms.iter().enumerate() {
        c.synchronize(&streams[r])?;
    }
    let slug: String = label.chars().map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' }).collect();
    for (r, buf) in bufs.iter().enumerate() {
        let trace = buf.read(&streams[r])?;
        let rank = comms[r].rank();
        bar.suspend(|| println!("{:<26} trace rank {rank}: {}", "", trace.summary()));
        if !no_json {
            #[derive(Serialize)]
            struct Out<'a> {
                shape: &'a str,
                rank: u32,
                summary: mkernel::trace::TraceSummary,
                trace: &'a mkernel::trace::FusedTrace,
            }
            let out = Out { shape: label, rank, summary: trace.summary(), trace: &trace };
            super::write_json(out_dir, &format!("trace-{slug}-r{rank}"), date, &out)?;
        }
    }
    Ok(())
}

/// Starts `procs` copies of this binary as the ranks of one node and waits for them.
fn spawn_ranks(procs: usize) -> BenchResult<()> {
    let present = mkernel::device_count()?;
    if procs == 0 || procs > present {
        return Err(super::usage(format!("--procs {procs}: {present} GPU(s) present")));
    }
    // A free port whose successor is free too (the bootstrap listens on MASTER_PORT + 1).
    let port = mkernel_topology::loopback_port_pair()?;
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--procs" {
            it.next();
        } else if !a.starts_with("--procs=") {
            args.push(a);
        }
    }
    args.push("--launched".into());
    let exe = std::env::current_exe()?;
    let mut kids = Vec::new();
    for r in 0..procs {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(&args)
            .env("RANK", r.to_string())
            .env("WORLD_SIZE", procs.to_string())
            .env("LOCAL_RANK", r.to_string())
            .env("LOCAL_WORLD_SIZE", procs.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .env("NCCL_NVLS_ENABLE", "0")
            .env("NVSHMEM_DISABLE_NVLS", "1")
            .env("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1");
        if r != 0 {
            cmd.stdout(std::process::Stdio::null());
        }
        kids.push(cmd.spawn()?);
    }
    // mkernel's own waits are bounded, but a rank that fails outside them (e.g. before
    // an NCCL call of the baseline) can leave its peers blocked inside NCCL. So: poll,
    // and once a rank has failed give the others a grace period, then stop them (by the
    // PIDs started here).
    let grace = std::time::Duration::from_secs(30);
    let mut status: Vec<Option<bool>> = vec![None; kids.len()];
    let mut first_failure: Option<std::time::Instant> = None;
    while status.iter().any(Option::is_none) {
        for (r, k) in kids.iter_mut().enumerate() {
            if status[r].is_none() {
                if let Some(st) = k.try_wait()? {
                    status[r] = Some(st.success());
                    if !st.success() {
                        first_failure.get_or_insert_with(std::time::Instant::now);
                    }
                }
            }
        }
        if first_failure.is_some_and(|t| t.elapsed() > grace) {
            for (r, k) in kids.iter_mut().enumerate() {
                if status[r].is_none() {
                    eprintln!("rank {r} still running {grace:?} after a peer failed: stopping it (pid {})", k.id());
                    let _ = k.kill();
                    let _ = k.wait();
                    status[r] = Some(false);
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let failed: Vec<usize> = status.iter().enumerate().filter(|(_, s)| **s != Some(true)).map(|(r, _)| r).collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("ranks {failed:?} failed (see their messages above)").into())
    }
}

/// The ranks this process drives, and what they share.
struct Local {
    comms: Vec<Communicator>,
    streams: Vec<Arc<CudaStream>>,
    /// None with --share-gpu (no baseline).
    nccl: Option<Nccl>,
    blas: Vec<Cublas>,
}

impl Local {
    fn world(&self) -> u32 {
        self.comms[0].world_size()
    }
    fn is_printer(&self) -> bool {
        self.comms[0].rank() == 0
    }
    fn boot(&self) -> Option<&mkernel_topology::Bootstrap> {
        self.comms[0].bootstrap()
    }
    /// Per-iteration slowest-rank times across processes, then the median.
    fn median_ms(&self, mut local: Vec<f64>) -> BenchResult<f64> {
        if let Some(b) = self.boot() {
            let bytes: Vec<u8> = local.iter().flat_map(|t| t.to_le_bytes()).collect();
            for other in b.all_gather(&bytes)? {
                for (t, chunk) in local.iter_mut().zip(other.chunks_exact(8)) {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(chunk);
                    *t = t.max(f64::from_le_bytes(w));
                }
            }
        }
        Ok(super::median(&mut local))
    }
}

/// Rank 0's `v` on every rank (one process per GPU: through the bootstrap); `v` itself
/// where one process drives every GPU.
fn agree_u64(boot: Option<&mkernel_topology::Bootstrap>, v: u64) -> BenchResult<u64> {
    match boot {
        None => Ok(v),
        Some(b) => {
            let got = b.broadcast(0, &v.to_le_bytes())?;
            let mut w = [0u8; 8];
            w.copy_from_slice(got.get(..8).ok_or("bootstrap: short broadcast")?);
            Ok(u64::from_le_bytes(w))
        }
    }
}

/// Combines every rank's check outcome (one process per GPU: through the bootstrap):
/// the first failure anywhere fails all ranks.
fn agree_check(boot: Option<&mkernel_topology::Bootstrap>, local: Result<f64, String>) -> BenchResult<f64> {
    let Some(b) = boot else { return local.map_err(Into::into) };
    let msg = match &local {
        Ok(e) => format!("ok {e}"),
        Err(m) => format!("err {m}"),
    };
    let mut worst = 0f64;
    for (r, m) in b.all_gather(msg.as_bytes())?.into_iter().enumerate() {
        let m = String::from_utf8_lossy(&m).into_owned();
        match m.strip_prefix("ok ") {
            Some(e) => worst = worst.max(e.parse().unwrap_or(f64::INFINITY)),
            None => return Err(format!("rank {r}: {}", m.trim_start_matches("err ")).into()),
        }
    }
    Ok(worst)
}

/// Whether a run's calls take the local path (the plain GEMM alone): --comm-path local, or
/// one rank (`world`: --procs or --gpus) with neither --comm-path nor --tail-ctas.
fn takes_local_path(path: Option<CommPath>, tail_ctas: Option<u32>, world: Option<usize>) -> bool {
    path == Some(CommPath::Local) || (world == Some(1) && path.is_none() && tail_ctas.is_none())
}

/// The --comm-path / --tile / --tail-ctas combinations refused whatever the shape and
/// device (checked before any GPU is touched); `world`: --procs or --gpus when given.
fn check_path_args(tile: Option<mkernel::TileConfig>, path: Option<CommPath>, tail_ctas: Option<u32>, world: Option<usize>) -> Result<(), String> {
    check_path_args_as("--tile", tile, path, tail_ctas, world)
}

/// [`check_path_args`] for a tile given by `flag` (`--tile`, or `--sweep-tiles` for a swept
/// one), which its errors name.
fn check_path_args_as(flag: &str, tile: Option<mkernel::TileConfig>, path: Option<CommPath>, tail_ctas: Option<u32>, world: Option<usize>) -> Result<(), String> {
    // --comm-path local, or one rank with no path and no tail CTAs: the local path (the
    // plain GEMM alone), which takes any tile of the plain GEMM's catalog.
    let local = takes_local_path(path, tail_ctas, world);
    if let Some(t) = tile {
        // (of the swapped-operand tiles of `bench gemm`, only the -tma-store ones have a fused kernel)
        let checked = if local { t.validate_for_gemm() } else { t.validate() };
        checked.map_err(|e| {
            let hint = if world.is_none() && path.is_none() && tail_ctas.is_none() && t.validate_for_gemm().is_ok() {
                " (with one rank, --gpus 1, the local path takes it)"
            } else {
                ""
            };
            format!("{flag} {}: {e}{hint}", t.name())
        })?;
    }
    if let (Some(t), Some(1), false) = (tile.filter(|t| t.fused_epilogue_only()), world, local) {
        return Err(format!(
            "{flag} {}: with one rank, --comm-path or --tail-ctas ask for a fused kernel, and this tile has one with 2 ranks only; drop them for the local path (the plain GEMM alone)",
            t.name()
        ));
    }
    if let (Some(t), Some(p)) = (tail_ctas, path) {
        if t > 0 && !p.claims_tiles() {
            let takers: Vec<&str> = CommPath::ALL.iter().filter(|p| p.claims_tiles()).map(|p| p.name()).collect();
            return Err(format!("--tail-ctas {t}: the {} path takes no tail CTAs (only {} do)", p.name(), takers.join(", ")));
        }
    }
    if let Some(p) = path.filter(|p| p.adds_into_out()) {
        if let Some(t) = tile.filter(|t| t.epilogue != mkernel_kernels::gemm::Epilogue::TmaStore) {
            return Err(format!("--comm-path {}: needs a TMA-store tile, got {flag} {}", p.name(), t.name()));
        }
        if let Some(w) = world.filter(|&w| w != 2) {
            return Err(format!("--comm-path {}: needs exactly 2 ranks, got {w}", p.name()));
        }
    }
    if let (Some(CommPath::TmaOneShot), Some(w)) = (path, world.filter(|&w| w > 2)) {
        return Err(format!("--comm-path one-shot: needs 1 or 2 ranks, got {w}"));
    }
    if let (Some(CommPath::Local), Some(w)) = (path, world.filter(|&w| w != 1)) {
        return Err(format!("--comm-path local: one rank only (the plain GEMM alone), got {w}"));
    }
    // Clustered tiles (-c2), swapped-operand and column-fitted ones: the epilogue path with
    // 2 ranks only (no communication or tail CTAs), or with one rank the local path (the
    // plain GEMM).
    if let Some(t) = tile.filter(|t| t.fused_epilogue_only()) {
        let kind = if t.swap_ab {
            "swapped-operand"
        } else if t.cluster_m > 1 {
            "clustered"
        } else {
            "column-fitted"
        };
        if let Some(p) = path.filter(|p| *p != CommPath::Epilogue && *p != CommPath::Local) {
            return Err(format!("{flag} {}: {kind} tiles take the epilogue path only (local with one rank), not --comm-path {}", t.name(), p.name()));
        }
        if let Some(w) = world.filter(|&w| w != 2 && !(w == 1 && local)) {
            return Err(format!("{flag} {}: {kind} tiles take the epilogue path, which needs exactly 2 ranks (or one rank: the plain GEMM alone), got {w}", t.name()));
        }
        if tail_ctas.is_some_and(|c| c > 0) {
            return Err(format!("{flag} {}: {kind} tiles take the epilogue path, which has no tail CTAs", t.name()));
        }
    }
    Ok(())
}

/// A column-fitted TMA-store tile of the fused kernel (`TileConfig::is_fused_column_fitted`) as
/// `--tile` or in `--sweep-tiles` takes whole tiles in the fused kernel: with `world`
/// ranks (when known) on a fused path, `--split-last-wave N` and `--sweep-split` counts of
/// 2 or more are refused (one rank's local path is the plain GEMM's, which splits it).
fn check_fused_cols_split(args: &ArArgs, tile: Option<mkernel::TileConfig>, sweep_tiles: &[(&str, Option<mkernel::TileConfig>)], comm_path: Option<CommPath>, world: Option<usize>) -> Result<(), String> {
    let Some(w) = world.filter(|_| !takes_local_path(comm_path, args.tail_ctas, world)) else { return Ok(()) };
    let fused_cols = |t: Option<mkernel::TileConfig>| t.filter(|t| t.is_fused_column_fitted());
    if let Some(t) = fused_cols(tile) {
        if forces_split(args.split_last_wave) || args.sweep_split.iter().any(|&s| s >= 2) {
            return Err(format!("--split-last-wave/--sweep-split: --tile {} computes whole tiles in the fused kernel ({w} ranks), no K-slices (one rank's plain GEMM splits it)", t.name()));
        }
    }
    for t in sweep_tiles.iter().filter_map(|&(_, t)| fused_cols(t)) {
        if forces_split(args.split_last_wave) {
            return Err(format!("--sweep-tiles {}: with --split-last-wave, which this tile cannot take in the fused kernel ({w} ranks: whole tiles)", t.name()));
        }
    }
    Ok(())
}

/// The run's path flags that decide which path its calls take, for the checks of options
/// that only some paths take.
#[derive(Clone, Copy)]
struct PathFlags<'a> {
    comm_path: Option<CommPath>,
    sweep_paths: &'a [CommPath],
    tile: Option<mkernel::TileConfig>,
    tail_ctas: Option<u32>,
    /// --procs or --gpus when given.
    world: Option<usize>,
    /// --share-gpu: ranks sharing one GPU.
    shared: bool,
}

impl PathFlags<'_> {
    /// Options of the epilogue path only (`flag`: --epilogue-pace, --sweep-diag, a
    /// --split-last-wave count) are refused when no call of the run can take that path:
    /// another --comm-path, --tail-ctas without --comm-path (a path with communication
    /// CTAs), a --tile without the TMA-store epilogue, or other than 2 ranks, or ranks
    /// sharing a GPU (their default path is one-shot) without --comm-path epilogue or a
    /// tile that takes only that path; unless --sweep-paths times the epilogue path too
    /// (with its default tile; the world size still applies).
    fn check_epilogue_only(&self, flag: &str) -> Result<(), String> {
        if let Some(w) = self.world.filter(|&w| w != 2) {
            let one = if w == 1 {
                " (one rank runs the local path, the plain GEMM, which takes only --split-last-wave and --sweep-split, or with --comm-path or --tail-ctas a fused path, which never splits)"
            } else {
                ""
            };
            return Err(format!("{flag}: only the epilogue path takes it, which needs 2 ranks, and this run has {w}{one}"));
        }
        if self.sweep_paths.contains(&CommPath::Epilogue) {
            return Ok(());
        }
        if let Some(p) = self.comm_path.filter(|p| *p != CommPath::Epilogue) {
            return Err(format!("{flag}: only the epilogue path takes it, and neither --comm-path {} nor --sweep-paths does", p.name()));
        }
        // (a tile with the epilogue path only takes it whatever --tail-ctas, which must be 0 then)
        let forced_by_tile = self.tile.is_some_and(|t| t.fused_epilogue_only());
        if self.comm_path.is_none() && self.tail_ctas.is_some() && !forced_by_tile {
            return Err(format!("{flag}: --tail-ctas without --comm-path picks a path with communication CTAs, not the epilogue path"));
        }
        if let Some(t) = self.tile.filter(|t| t.epilogue != mkernel_kernels::gemm::Epilogue::TmaStore) {
            return Err(format!("{flag}: the epilogue path needs a TMA-store tile (a *-tma-store --tile), not --tile {} ({t})", t.name()));
        }
        if self.shared && self.comm_path.is_none() && !forced_by_tile {
            return Err(format!("{flag}: ranks sharing a GPU (--share-gpu) do not take the epilogue path by default; add --comm-path epilogue"));
        }
        Ok(())
    }

    /// --split-last-wave N (N >= 2) and --sweep-split: the local path takes them (the
    /// plain GEMM's split, checked per shape by the plan); else the epilogue path's rules.
    fn check_split(&self, flag: &str) -> Result<(), String> {
        if takes_local_path(self.comm_path, self.tail_ctas, self.world) {
            return Ok(());
        }
        self.check_epilogue_only(flag)
    }
}

/// Whether --split-last-wave asks for slices (a count of 2 or more), which only the
/// epilogue and local paths take; off, auto and 1 also suit paths that never split.
fn forces_split(v: Option<mkernel::LastWaveSplit>) -> bool {
    matches!(v, Some(mkernel::LastWaveSplit::Slices(n)) if n >= 2)
}

fn parse_epilogue_pace(name: Option<&str>, comm_path: Option<CommPath>, sweep_paths: &[CommPath]) -> Result<Option<mkernel::EpiloguePace>, String> {
    let Some(name) = name else { return Ok(None) };
    let pace = mkernel::EpiloguePace::by_name(name).ok_or_else(|| format!("--epilogue-pace: unknown pace '{name}' (sleep, clock)"))?;
    if let Some(p) = comm_path.filter(|p| *p != CommPath::Epilogue && !sweep_paths.contains(&CommPath::Epilogue)) {
        return Err(format!("--epilogue-pace: only the epilogue path is paced, and neither --comm-path {} nor --sweep-paths takes it", p.name()));
    }
    Ok(Some(pace))
}

/// --sweep-paths: known names, each once, each allowed for the world size when it is
/// known (the rules of --comm-path; a swept path takes its default tile).
fn parse_sweep_paths(names: &[String], world: Option<usize>) -> Result<Vec<CommPath>, String> {
    let mut paths: Vec<CommPath> = Vec::new();
    for name in names {
        let p = CommPath::by_name(name)
            .ok_or_else(|| format!("--sweep-paths: unknown path '{name}' ({})", CommPath::ALL.map(|p| p.name()).join(", ")))?;
        if paths.contains(&p) {
            return Err(format!("--sweep-paths: {name} is listed twice"));
        }
        // (the rules are --comm-path's, whose name its messages start with: this flag's instead)
        check_path_args(None, Some(p), None, world).map_err(|e| format!("--sweep-paths: {}", e.strip_prefix("--comm-path ").unwrap_or(&e)))?;
        paths.push(p);
    }
    Ok(paths)
}

pub fn run(args: ArArgs, op: Op) -> BenchResult<()> {
    // Argument errors before any rank is started or device touched.
    let c = &args.common;
    let tile = super::parse_tile(args.tile.as_deref(), false)?;
    let comm_path = match args.comm_path.as_deref() {
        None => None,
        Some(name) => Some(CommPath::by_name(name).ok_or_else(|| {
            format!("--comm-path: unknown path '{name}' ({})", CommPath::ALL.map(|p| p.name()).join(", "))
        }).map_err(super::usage)?),
    };
    // The world size the path rules are checked against: --procs or --gpus, or with
    // --launched the launcher's WORLD_SIZE (read again, with the rest, by the communicator).
    let world_asked = if args.launched {
        Some(mkernel_topology::launch::LaunchEnv::from_env()?.world_size)
    } else if args.share_gpu {
        Some(args.gpus.unwrap_or(2))
    } else {
        args.procs.or(args.gpus)
    };
    // Ranks sharing a GPU: at least two (else nothing is shared), the one-shot path by
    // default, no tail CTAs.
    let shared = args.share_gpu;
    if shared {
        if world_asked.is_some_and(|w| w < 2) {
            return Err(super::usage("--share-gpu: puts 2 or more ranks on GPU 0 (--gpus 2..8); got --gpus 1"));
        }
        if let Some(t) = args.tail_ctas.filter(|&t| t > 0) {
            return Err(super::usage(format!("--tail-ctas {t}: ranks sharing a GPU (--share-gpu) take no tail CTAs")));
        }
    }
    check_path_args(tile, comm_path, args.tail_ctas, world_asked).map_err(super::usage)?;
    if let (Some(p), false) = (comm_path.filter(|p| !p.has_comm_ctas()), args.sm_comm.is_empty()) {
        return Err(super::usage(format!("--sm-comm: the {} path has no communication CTAs to sweep", p.name())));
    }
    check_unique("--sm-comm", &args.sm_comm).map_err(super::usage)?;
    let sweep_paths = parse_sweep_paths(&args.sweep_paths, world_asked).map_err(super::usage)?;
    check_collective_args(op, comm_path, &sweep_paths, args.tail_ctas).map_err(super::usage)?;
    if let Some(w) = world_asked {
        check_reduce_scatter_world(op, w, comm_path, &args.sm_comm, &sweep_paths, &args.shape).map_err(super::usage)?;
    }
    let epilogue_pace = parse_epilogue_pace(args.epilogue_pace.as_deref(), comm_path, &sweep_paths).map_err(super::usage)?;
    let flags = PathFlags { comm_path, sweep_paths: &sweep_paths, tile, tail_ctas: args.tail_ctas, world: world_asked, shared };
    // The diagnostic and the split sweep vary the shape's own configuration: --sweep-paths
    // does not count for them.
    let own_config = PathFlags { sweep_paths: &[], ..flags };
    if epilogue_pace.is_some() {
        flags.check_epilogue_only("--epilogue-pace").map_err(super::usage)?;
    }
    // off, auto (the default) and 1 mean "no split" on every other path; a count of 2 or
    // more needs a call that takes the epilogue or local path.
    if forces_split(args.split_last_wave) {
        flags.check_split("--split-last-wave").map_err(super::usage)?;
    }
    if !args.sweep_diag.is_empty() {
        own_config.check_epilogue_only("--sweep-diag").map_err(super::usage)?;
    }
    if !args.sweep_split.is_empty() {
        own_config.check_split("--sweep-split").map_err(super::usage)?;
    }
    // A clustered, swapped-operand or column-fitted tile takes the epilogue path: no
    // communication CTAs to sweep; a clustered one also takes whole tiles (a cluster's
    // pair), no slices, and so does a column-fitted one on 2 ranks (the fused kernel's).
    if let Some(t) = tile.filter(|t| t.fused_epilogue_only()) {
        if !args.sm_comm.is_empty() {
            return Err(super::usage(format!("--sm-comm: its rows run a path with communication CTAs, which --tile {} has none of (it takes the epilogue path with 2 ranks, local with one)", t.name())));
        }
    }
    // (clusters along M or N alike: -c2 and -n2 tiles)
    if let Some(t) = tile.filter(|t| t.cluster_size() > 1) {
        if forces_split(args.split_last_wave) || args.sweep_split.iter().any(|&s| s >= 2) {
            return Err(super::usage(format!("--split-last-wave/--sweep-split: --tile {} computes whole tiles (a cluster's pair), no K-slices", t.name())));
        }
    }
    // --sm-comm's rows run a fused kernel with communication CTAs: a plain-GEMM-only tile
    // (taken on one rank's local path) has none.
    if let (Some(t), false) = (tile, args.sm_comm.is_empty()) {
        if let Err(e) = t.validate() {
            return Err(super::usage(format!("--sm-comm: its rows run a fused kernel, and --tile {}: {e}", t.name())));
        }
    }
    check_unique("--sweep-diag", &args.sweep_diag).map_err(super::usage)?;
    check_unique("--sweep-split", &args.sweep_split).map_err(super::usage)?;
    check_unique("--sweep-tiles", &args.sweep_tiles).map_err(super::usage)?;
    let sweep_tiles = args
        .sweep_tiles
        .iter()
        .map(|n| {
            if let Some(t) = mkernel::TileConfig::by_name(n) {
                return Ok((n.as_str(), Some(t)));
            }
            // (a parameterised family's rule, or the nearest name, as for --tile)
            let hint = super::unknown_tile("--sweep-tiles", n, false)?;
            Err(format!(
                "--sweep-tiles {n}: {hint}expected names among {}, or {}",
                mkernel::TileConfig::ALL.map(|t| t.name()).join(", "),
                mkernel_kernels::gemm::FUSED_OTHER_TILES
            ))
        })
        .collect::<Result<Vec<_>, String>>().map_err(super::usage)?;
    // A swept tile that no call of this run can take (the path or world size rules, as for
    // --tile) is refused here; one that only some shapes refuse is left out of their rows.
    for &(_, t) in &sweep_tiles {
        check_path_args_as("--sweep-tiles", t, comm_path, args.tail_ctas, world_asked).map_err(super::usage)?;
        // (as for --tile: a clustered tile computes whole tiles, no K-slices; the swept call
        // would inherit --split-last-wave and be refused on every shape)
        if let Some(t) = t.filter(|t| t.cluster_size() > 1) {
            if forces_split(args.split_last_wave) {
                return Err(super::usage(format!("--sweep-tiles {}: with --split-last-wave, which this tile cannot take (it computes whole tiles)", t.name())));
            }
        }
    }
    // (a column-fitted tile computes whole tiles in the fused kernel; checked again below
    // once the GPUs present decide the world size)
    check_fused_cols_split(&args, tile, &sweep_tiles, comm_path, world_asked).map_err(super::usage)?;
    super::check_unique_shapes(&args.shape)?;
    let list = if !args.shape.is_empty() {
        args.shape.iter().map(|s| (format!("shape {}x{}x{}", s.m, s.n, s.k), *s)).collect()
    } else if op.0 == Collective::ReduceScatter {
        reduce_scatter_shapes()
    } else {
        shapes()
    };
    let list = super::filter_shapes(list, c.filter.as_deref())?;
    // (a reduce-scatter with the world size known: some listed shape must have an M it divides)
    if let (Collective::ReduceScatter, Some(w)) = (op.0, world_asked) {
        if !list.iter().any(|(_, s)| (s.m as usize).is_multiple_of(w)) {
            return Err(super::usage(format!("no listed shape has an M that the world size ({w}) divides, which a reduce-scatter needs; give --shape")));
        }
    }
    // A forced TMA-store tile must be able to write every listed shape (N % 8 == 0).
    if let Some(t) = tile {
        if let Some((label, s)) = list.iter().find(|(_, s)| t.check_output(s.n).is_err()) {
            return Err(super::usage(format!("--tile {}: the TMA-store epilogue needs N % 8 == 0, but '{label}' has N={}", t.name(), s.n)));
        }
    }
    // A path asked for must be able to take every listed shape too: refused here, before
    // any GPU is opened, rather than per shape (helper-89).
    if let Some(p) = comm_path {
        for (label, s) in &list {
            p.check_n(s.n).map_err(|e| super::usage(format!("--comm-path {}: '{label}': {e}", p.name())))?;
        }
    }
    // A swept one is left out of the rows it cannot write; one that no listed shape can
    // take would time nothing (helper-88).
    for t in sweep_tiles.iter().filter_map(|&(_, t)| t) {
        if let (Some((label, s)), true) = (list.first(), list.iter().all(|(_, s)| t.check_output(s.n).is_err())) {
            let more = if list.len() > 1 { format!(", nor has any other of the {} shapes listed", list.len()) } else { String::new() };
            return Err(super::usage(format!("--sweep-tiles {}: the TMA-store epilogue needs N % 8 == 0, which '{label}' (N={}) has not{more}", t.name(), s.n)));
        }
    }
    super::check_out_dir(c)?;
    if let Some(procs) = args.procs {
        if !args.launched {
            return spawn_ranks(procs);
        }
    }
    let base_opts = GemmAllReduceOptions { tile, comm_path, tail_ctas: args.tail_ctas, ..Default::default() };
    // The pace goes to the calls that take the epilogue path (the plan refuses it on
    // others), the split to those and to the local path's (helper-53: `--gpus 1
    // --split-last-wave off` was dropped and the local path split).
    let splits = |path: CommPath| path == CommPath::Epilogue || path == CommPath::Local;
    let with_pace = |opts: GemmAllReduceOptions, path: CommPath| GemmAllReduceOptions {
        epilogue_pace: if path == CommPath::Epilogue { epilogue_pace } else { None },
        split_last_wave: if splits(path) { args.split_last_wave } else { None },
        ..opts
    };
    // (at least 2^21 elements: the split scratch is then its full 32 MiB, so the slice
    // counts a shape can take do not depend on the other shapes of the run)
    let largest = list.iter().max_by_key(|(_, s)| s.m as u64 * s.n as u64);
    let max_elems = largest.map_or(1, |(_, s)| s.m as u64 * s.n as u64).max(1 << 21);
    // (a workspace no GPU can hold names the shape that sized it, not only the config;
    // below the 2^21 floor the floor sized it, and the config's value says so)
    let sized_by = |e: mkernel::Error| -> Box<dyn std::error::Error> {
        match (&e, largest) {
            (mkernel::Error::Allocation { .. }, Some((label, s))) if s.m as u64 * s.n as u64 == max_elems => {
                format!("{label} (the largest listed M x N, which sizes every rank's workspace): {e}").into()
            }
            _ => e.into(),
        }
    };
    let config = CommConfig {
        timeout: std::time::Duration::from_secs_f64(args.timeout_s),
        max_output_elems: max_elems,
        ..Default::default()
    };
    let (comms, mode) = if args.launched {
        (vec![Communicator::from_env(config).map_err(sized_by)?], "one process per GPU")
    } else {
        let present = mkernel::device_count()?;
        let world = if args.share_gpu { args.gpus.unwrap_or(2) } else { args.gpus.unwrap_or(present) };
        // (the rules on the world size again, now that it is known: before any NCCL or cuBLAS
        // setup, a usage error naming the flag; helper-97)
        check_path_args(tile, comm_path, args.tail_ctas, Some(world)).map_err(super::usage)?;
        check_reduce_scatter_world(op, world, comm_path, &args.sm_comm, &sweep_paths, &args.shape).map_err(super::usage)?;
        check_fused_cols_split(&args, tile, &sweep_tiles, comm_path, Some(world)).map_err(super::usage)?;
        if args.share_gpu {
            (Communicator::local_group(&vec![0; world], config).map_err(sized_by)?, "one process, every rank on GPU 0 (--share-gpu: no baseline)")
        } else {
            if world == 0 || world > present {
                return Err(super::usage(format!("--gpus {world}: {present} GPU(s) present")));
            }
            let devices: Vec<usize> = (0..world).collect();
            (Communicator::local_group(&devices, config).map_err(sized_by)?, "one process, all GPUs")
        }
    };
    // A reduce-scatter gives each rank M / world rows: a shape whose M the world size does not
    // divide is left out (said below), before NCCL or any buffer is set up.
    let world_size = comms[0].world_size();
    let (list, left_out): (Vec<_>, Vec<_>) = list.into_iter().partition(|(_, s)| op.0.check_m(*s, world_size).is_ok());
    if list.is_empty() {
        let first = left_out.first().map(|(label, _)| format!(", '{label}' the first")).unwrap_or_default();
        return Err(super::usage(format!("no listed shape has an M that the world size ({world_size}) divides, which a reduce-scatter needs ({} listed{first})", left_out.len())));
    }
    let grid = comms[0].grid();
    if let Some(bad) = args.sm_comm.iter().find(|&&cc| cc >= grid) {
        return Err(super::usage(format!("--sm-comm {bad}: must be in 1..{grid} (this rank's fused kernels have {grid} CTAs)")));
    }
    if let Some(t) = args.tail_ctas.filter(|&t| t > grid) {
        return Err(super::usage(format!("--tail-ctas {t}: must be in 0..={grid} (this rank's fused kernels have {grid} CTAs)")));
    }
    let streams: Vec<Arc<CudaStream>> = comms.iter().map(|c| c.context().new_stream()).collect::<Result<_, _>>()?;
    // (none with --share-gpu: NCCL refuses two ranks on one GPU)
    let nccl = match comms[0].bootstrap() {
        _ if args.share_gpu => None,
        Some(b) => Some(Nccl::from_bootstrap(&streams[0], b)?),
        None => Some(Nccl::local_group(&streams)?),
    };
    let blas: Vec<Cublas> = streams.iter().map(Cublas::new).collect::<Result<_, _>>()?;
    let mut local = Local { comms, streams, nccl, blas };
    let world = local.world() as usize;
    // Aligned timing (unless --no-align-ranks); one rank: nothing to align.
    let align = !args.no_align_ranks && world > 1;
    let info = run_info(local.comms[0].context())?;
    let printer = local.is_printer();
    if printer {
        println!(
            "# mkernel bench {}: {world} x {} ({} SMs), {mode}, {}, commit {}",
            op.bench(),
            info.device, info.sm_count, info.driver, info.commit
        );
        println!(
            "{:<26} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>10} {:>5}  {}",
            "shape", "base ms", "cuBLAS", "our gemm", "NCCL", "fused ms", "speedup", "overlap", "ovl/cuBLAS", "comm", "config / check"
        );
    }
    if printer {
        for (label, s) in &left_out {
            println!("{label:<26} left out: a reduce-scatter gives each of the {world} ranks M / world rows, and M={} is not a multiple of {world}", s.m);
        }
    }
    let bar = if printer { indicatif::ProgressBar::new(list.len() as u64) } else { indicatif::ProgressBar::hidden() };
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
    let mut rows = Vec::new();
    for (label, s) in list {
        // This shape's options: the pace goes along where the plan takes the epilogue path.
        let planned = op.plan(&local.comms[0], s, base_opts)?.path;
        let shape_opts = with_pace(base_opts, planned);
        // A forced split that this shape cannot take stops the run here, before any timing,
        // on the swept paths too (a path that cannot take the shape at all, N % 8 or the
        // world size, is left out of the sweep below instead).
        op.plan(&local.comms[0], s, shape_opts).map_err(|e| format!("{label}: {e}"))?;
        for &p in &sweep_paths {
            let plain = GemmAllReduceOptions { comm_path: Some(p), ..Default::default() };
            if op.plan(&local.comms[0], s, plain).is_ok() {
                op.plan(&local.comms[0], s, with_pace(plain, p)).map_err(|e| format!("{label}: --sweep-paths {}: {e}", p.name()))?;
            }
        }
        bar.set_message(label.clone());
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let sets = rotation_sets(((m * k + n * k) * 2) as u64);
        let seed = agree_u64(local.boot(), check::fresh_seed())?;
        let Local { comms, streams, nccl, blas } = &mut local;
        let mut data: Vec<RankData> = streams
            .iter()
            .zip(comms.iter())
            .map(|(st, cm)| alloc_rank(st, s, &format!("{label}, rank {}", cm.rank()), sets, seed.wrapping_add(100 * cm.rank() as u64), op, world as u32))
            .collect::<Result<_, _>>()?;
        let verdict = if c.check {
            let mut worst = 0f64;
            for rep in 0..args.check_reps {
                let outcome = check_once(op, comms, streams, blas, &mut data, s, seed.wrapping_add(7919 * rep as u64), shape_opts, rep > 0)
                    .map(|cmp| cmp.rel_fro_err)
                    .map_err(|e| e.to_string());
                let w = agree_check(comms[0].bootstrap(), outcome).map_err(|e| format!("{label}: repetition {rep}: {e}"))?;
                worst = worst.max(w);
            }
            Some(format!("PASS x{} (worst rel_fro_err {worst:.2e})", args.check_reps))
        } else {
            None
        };
        // Every fused configuration timed here: the shape's, then --sm-comm's, then the
        // swept paths this shape can take (N % 8, world size; a split they cannot take
        // stopped the run above).
        let mut fused_opts = vec![shape_opts];
        let mut sweep_path = "";
        for &cc in &args.sm_comm {
            let opts = GemmAllReduceOptions { comm_ctas: Some(cc), ..base_opts };
            sweep_path = op.plan(&comms[0], s, opts)?.path.name();
            fused_opts.push(opts);
        }
        let mut swept = Vec::new();
        if args.sweep_same {
            fused_opts.push(shape_opts);
            swept.push("default again (A/A)".to_string());
        }
        // A swept configuration this shape cannot take is left out of its row, saying why.
        let mut left_out: Vec<String> = Vec::new();
        {
            let mut sweep_one = |what: String, opts: GemmAllReduceOptions| match op.plan(&comms[0], s, opts) {
                Ok(_) => {
                    fused_opts.push(opts);
                    swept.push(what);
                }
                Err(e) => left_out.push(format!("{what}: {e}")),
            };
            for &(name, t) in &sweep_tiles {
                // (planned afresh for the tile: its own path, split and pace; a tile the shape
                // refuses is refused again by sweep_one, which says why)
                let opts = GemmAllReduceOptions { tile: t, ..base_opts };
                let path = op.plan(&comms[0], s, opts).map(|plan| plan.path).unwrap_or(CommPath::Epilogue);
                sweep_one(format!("tile {name}"), with_pace(opts, path));
            }
            for &n in &args.sweep_split {
                let split = if n == 1 { mkernel::LastWaveSplit::Off } else { mkernel::LastWaveSplit::Slices(n) };
                sweep_one(format!("split {n}"), GemmAllReduceOptions { split_last_wave: Some(split), ..shape_opts });
            }
            for &d in &args.sweep_diag {
                sweep_one(format!("{DIAGNOSTIC_PREFIX} skip {d}"), GemmAllReduceOptions { diagnostic_skip: Some(d), ..shape_opts });
            }
            for &p in &sweep_paths {
                sweep_one(p.name().to_string(), with_pace(GemmAllReduceOptions { comm_path: Some(p), ..Default::default() }, p));
            }
        }
        if printer {
            for why in &left_out {
                bar.suspend(|| println!("{label:<26} left out of the sweep: {why}"));
            }
        }
        // Side by side, each round in its own random order (time_rounds_ms): (a) the
        // unfused baseline, cuBLAS then NCCL on each rank's stream, (a_gemm) cuBLAS alone,
        // (b) our GEMM alone, (c) NCCL alone, (d) the fused kernel in each configuration.
        const FUSED: usize = 4;
        // (the configurations each fused variant ran, printed after the timing, not in it)
        let mut used_cfgs: Vec<Option<mkernel::FusedConfig>> = vec![None; fused_opts.len()];
        // Consecutive steps that read A and B (all but NCCL alone) take consecutive input
        // sets, so none finds its inputs in L2 from the one before.
        const NCCL_ALONE: usize = 3;
        if fused_opts.len() > MAX_FUSED_CONFIGS {
            return Err(format!(
                "{label}: {} fused configurations per round (the default, --sm-comm's and the sweeps') exceed {MAX_FUSED_CONFIGS}; time fewer at once",
                fused_opts.len()
            )
            .into());
        }
        let variants = FUSED + fused_opts.len();
        let boot = comms[0].bootstrap();
        // Every rank must time the same steps in the same order (their collectives wait
        // for each other): the ranks' plans (GPU model, SM count) decide which swept
        // configurations a shape takes, so they are compared before any step.
        let variants0 = agree_u64(boot, variants as u64)?;
        let same = if variants0 == variants as u64 { Ok(0.0) } else { Err(format!("{label}: this rank would time {variants} variants, rank 0 {variants0} (the ranks' GPUs plan the sweeps differently)")) };
        agree_check(boot, same)?;
        let warmup = Warmup { rounds: c.warmup, ms: c.warmup_ms };
        let agree = |mine: bool| agree_u64(boot, u64::from(mine)).map(|v| v != 0);
        // Aligned timing (unless --no-align-ranks): every round is held behind a host gate
        // per GPU while it is enqueued, and every step starts with the ranks aligned by a
        // device barrier (see time_rounds_ms), after an L2 flush (unless --no-l2-flush).
        let mut alignment = super::StepAlignment::new(comms, streams, align, !args.no_l2_flush)?;
        let pace = |at: Pace| alignment.pace(at, comms, streams);
        let mut reads = InputRotation::default();
        let times = time_rounds_ms(streams, warmup, agree, pace, c.iters, variants, |v, _| {
            let i = reads.next(v != NCCL_ALONE);
            match v {
                0 | 1 => {
                    for (r, d) in data.iter_mut().enumerate() {
                        blas[r].gemm_bf16(&d.a[i % sets], &d.b[i % sets], &mut d.out_base, s)?;
                    }
                    if let (0, Some(nccl)) = (v, nccl.as_mut()) {
                        nccl_collective(op, nccl, &mut data)?;
                    }
                }
                2 => {
                    // (launch serialized: with PDL its set-up could run before the step's start event)
                    let opts = GemmOptions { dependent_launch: false, ..Default::default() };
                    for (r, d) in data.iter_mut().enumerate() {
                        mkernel::gemm(&streams[r], &d.a[i % sets], &d.b[i % sets], &mut d.out_base, s, opts)?;
                    }
                }
                NCCL_ALONE => {
                    // (--share-gpu: nothing; its column is reported as NaN)
                    if let Some(nccl) = nccl.as_mut() {
                        nccl_collective(op, nccl, &mut data)?;
                    }
                }
                _ => {
                    for (r, d) in data.iter_mut().enumerate() {
                        let used = op.call(&comms[r], &streams[r], &d.a[i % sets], &d.b[i % sets], &mut d.out_fused, s, fused_opts[v - FUSED], None)?;
                        used_cfgs[v - FUSED] = Some(used);
                    }
                }
            }
            Ok(())
        })?;
        for (r, cm) in comms.iter().enumerate() {
            cm.synchronize(&streams[r])?;
        }
        // A gate that expired let its round run as the host enqueued it; every rank stops
        // (with one process per GPU the verdict is shared, so no rank waits for a peer
        // that stopped).
        if align {
            let local = alignment.check_gates().map(|()| 0.0).map_err(|e| format!("{label}: aligned timing: {e}"));
            agree_check(comms[0].bootstrap(), local)?;
        }
        if times.len() != variants {
            return Err(format!("{label}: the timer returned {} variants, not {variants}", times.len()).into());
        }
        let mut times = times.into_iter();
        let mut next = || times.next().unwrap_or_default();
        let (baseline, cublas, ours_gemm, nccl_ms, fused) = (next(), next(), next(), next(), next());
        let mut fused_times = times;
        let cfgs: Vec<String> = used_cfgs.iter().map(|u| u.map(|u| format!("{u}{}", waves_note(&u, s))).unwrap_or_default()).collect();
        let cfg = cfgs.first().cloned().unwrap_or_default();
        let sweep_local: Vec<(u32, Vec<f64>)> = args.sm_comm.iter().copied().zip(fused_times.by_ref()).collect();
        let path_sweep_local: Vec<(String, String, Vec<f64>)> =
            swept.into_iter().zip(cfgs.into_iter().skip(1 + args.sm_comm.len())).zip(fused_times).map(|((p, c), t)| (p, c, t)).collect();
        if args.trace {
            trace_call(op, comms, streams, &mut data, s, shape_opts, &label, &info.date, &c.out_dir, c.no_json, &bar)?;
        }
        // (--share-gpu: no NCCL, so no baseline or all-reduce time)
        let no_baseline = local.nccl.is_none();
        let baseline = if no_baseline { f64::NAN } else { local.median_ms(baseline)? };
        let cublas = local.median_ms(cublas)?;
        let ours_gemm = local.median_ms(ours_gemm)?;
        let nccl_ms = if no_baseline { f64::NAN } else { local.median_ms(nccl_ms)? };
        let fused = local.median_ms(fused)?;
        let mut sweep = Vec::new();
        for (cc, t) in sweep_local {
            sweep.push((cc, local.median_ms(t)?));
        }
        let (mut path_sweep, mut diagnostic_sweep) = (Vec::new(), Vec::new());
        for (p, cfg, t) in path_sweep_local {
            let entry = (p, cfg, local.median_ms(t)?);
            if entry.0.starts_with(DIAGNOSTIC_PREFIX) { diagnostic_sweep.push(entry) } else { path_sweep.push(entry) }
        }
        let row = Row {
            label: label.clone(),
            collective: op.0.name(),
            m: s.m,
            n: s.n,
            k: s.k,
            world,
            config: cfg.clone(),
            baseline_ms: baseline,
            cublas_ms: cublas,
            ours_gemm_ms: ours_gemm,
            nccl_ms,
            fused_ms: fused,
            speedup: baseline / fused,
            overlap_efficiency: ours_gemm.max(nccl_ms) / fused,
            overlap_vs_cublas: cublas.max(nccl_ms) / fused,
            comm_share_of_baseline: nccl_ms / (cublas + nccl_ms),
            floor_compute_ms: super::floors::compute_us(s) / 1e3,
            floor_link_ms: super::floors::link_us(s, world as u32, op.0) / 1e3,
            sweep: sweep.clone(),
            path_sweep: path_sweep.clone(),
            diagnostic_sweep: diagnostic_sweep.clone(),
            check: verdict.clone(),
        };
        if printer {
            bar.suspend(|| {
            println!(
                "{:<26} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>7.3} {:>7.3} {:>10.3} {:>4.0}%  {}{}",
                label,
                baseline,
                cublas,
                ours_gemm,
                nccl_ms,
                fused,
                row.speedup,
                row.overlap_efficiency,
                row.overlap_vs_cublas,
                100.0 * row.comm_share_of_baseline,
                cfg,
                verdict.as_deref().map(|v| format!(" | {v}")).unwrap_or_default()
            );
            if !sweep.is_empty() {
                let s: Vec<String> = sweep.iter().map(|(cc, t)| format!("{cc}:{t:.4}")).collect();
                println!("{:<26} sweep comm CTAs ({sweep_path} path) -> ms: {}", "", s.join(" "));
            }
            for (p, cfg, t) in &path_sweep {
                println!(
                    "{:<26} path {p:<9} fused {t:.4} ms, speedup {:.3}, overlap {:.3} ({cfg}; timed, not checked)",
                    "",
                    baseline / t,
                    ours_gemm.max(nccl_ms) / t
                );
            }
            for (p, cfg, t) in &diagnostic_sweep {
                println!("{:<26} {p}: fused {t:.4} ms (RESULT WRONG, timing only; {cfg})", "");
            }
            });
        }
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if !c.no_json && printer {
        #[derive(Serialize)]
        struct Out<'a> {
            bench: &'a str,
            mode: &'a str,
            info: super::RunInfo,
            iters: usize,
            warmup: usize,
            warmup_ms: u64,
            /// Aligned timing (the default; false with --no-align-ranks or one rank): every
            /// step started after a device barrier of the ranks.
            align_ranks: bool,
            /// Every step was preceded by an L2 flush (the default; false with
            /// --no-l2-flush).
            l2_flush: bool,
            rows: Vec<Row>,
        }
        let date = info.date.clone();
        let out = Out { bench: op.bench(), mode, info, iters: c.iters, warmup: c.warmup, warmup_ms: c.warmup_ms, align_ranks: align, l2_flush: !args.no_l2_flush, rows };
        let bench = op.bench();
        let stem = if args.launched {
            format!("{bench}-w{world}-mp")
        } else if args.share_gpu {
            format!("{bench}-w{world}-shared")
        } else {
            format!("{bench}-w{world}")
        };
        let p = super::write_json(&c.out_dir, &stem, &date, &out)?;
        println!("# wrote {}", p.display());
    }
    Ok(())
}

/// What a fused configuration's tiles make of `s`, appended to its printed config: ", T
/// tiles on C CTAs: W waves" (C the compute CTAs; T with the padding of whole clusters), so
/// that a sweep shows where a tile's width adds a wave (a --share-gpu sweep at N halved gave
/// 144-column tiles 8 waves where the pair's rank has 7: bench/NOTES.md 50.4). Empty on the
/// local path, whose plain GEMM launch makes its own grid.
pub(crate) fn waves_note(used: &mkernel::FusedConfig, s: GemmShape) -> String {
    let ctas = used.grid.saturating_sub(used.comm_ctas);
    if used.path == CommPath::Local || ctas == 0 {
        return String::new();
    }
    let tiles = used.tile.tiles(s.m, s.n);
    format!(", {tiles} tiles on {ctas} CTAs: {:.2} waves", tiles as f64 / ctas as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bench gemm-allreduce` (the tests below check its argument rules).
    fn run(args: ArArgs) -> BenchResult<()> {
        super::run(args, Op(Collective::AllReduce))
    }

    /// `bench gemm-reduce-scatter` refuses, before any GPU is opened, the paths without a
    /// reduce-scatter (forced or swept), tail CTAs, and, with the world size known from the
    /// arguments, one rank's fused options and an M it does not divide; its list replaces
    /// the odd M by ragged ones that 1, 2, 4 and 8 ranks divide.
    #[test]
    fn reduce_scatter_refuses_paths_without_one() {
        use clap::Parser;
        let rs = |args: &[&str]| {
            let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
            super::run(cli.ar, Op(Collective::ReduceScatter)).unwrap_err().to_string()
        };
        for (args, want) in [
            (&["--comm-path", "one-shot"][..], "--comm-path one-shot: a reduce-scatter runs on epilogue, vec16, scalar, local"),
            (&["--comm-path", "tma"][..], "--comm-path tma: a reduce-scatter"),
            (&["--sweep-paths", "epilogue,push"][..], "--sweep-paths push: a reduce-scatter"),
            (&["--tail-ctas", "4"][..], "--tail-ctas 4: a reduce-scatter's paths"),
            (&["--tail-ctas", "0"][..], "--tail-ctas 0: a reduce-scatter's paths"),
            // (the world size known from the arguments: refused before any GPU is opened)
            (&["--gpus", "1", "--comm-path", "vec16"][..], "--comm-path vec16: with one rank a reduce-scatter is the plain GEMM"),
            (&["--gpus", "1", "--sm-comm", "8"][..], "--sm-comm: with one rank"),
            (&["--procs", "1", "--sweep-paths", "scalar"][..], "--sweep-paths scalar: with one rank"),
            (&["--gpus", "2", "--shape", "129x8192x4096"][..], "--shape 129x8192x4096: a reduce-scatter gives each of the 2 ranks"),
            (&["--share-gpu", "--gpus", "3"][..], "no listed shape has an M that the world size (3) divides"),
        ] {
            let e = rs(args);
            assert!(e.contains(want), "{args:?}: {e}");
        }
        let list = reduce_scatter_shapes();
        assert!(list.iter().all(|(_, s)| s.m % 8 == 0), "{:?}", list.iter().map(|(l, _)| l).collect::<Vec<_>>());
        assert_eq!(list.len(), shapes().len(), "the odd M replaced one for one");
        assert!(list.iter().any(|(_, s)| s.m % 128 != 0), "a ragged M stays");
        assert_eq!(Op(Collective::ReduceScatter).rows(GemmShape { m: 2056, n: 8, k: 8 }, 4, 3), 1542..2056);
        assert_eq!(Op(Collective::AllReduce).rows(GemmShape { m: 2056, n: 8, k: 8 }, 4, 3), 0..2056);
        assert_eq!((Op(Collective::AllReduce).bench(), Op(Collective::ReduceScatter).bench()), ("gemm-allreduce", "gemm-reduce-scatter"));
    }

    #[test]
    fn cta_counts_state_their_rule() {
        assert_eq!(parse_sm_comm("4"), Ok(4));
        assert!(parse_sm_comm("0").unwrap_err().contains("at least 1"));
        assert!(parse_sm_comm("-3").unwrap_err().contains("at least 1"));
        assert!(parse_sm_comm("x").unwrap_err().contains("whole number"));
        assert_eq!(parse_tail_ctas("0"), Ok(0));
        assert!(parse_tail_ctas("-1").unwrap_err().contains("0 or more"));
        assert!(parse_tail_ctas("99999999999").unwrap_err().contains("grid size"));
    }

    #[test]
    fn epilogue_only_options_are_refused_where_no_call_takes_the_path() {
        let wide = Some(mkernel::TileConfig::WIDE);
        let tma = Some(mkernel::TileConfig::WIDE_TMA_STORE);
        let ok = |comm_path, sweep_paths: &[CommPath], tile, tail_ctas, world| {
            PathFlags { comm_path, sweep_paths, tile, tail_ctas, world, shared: false }.check_epilogue_only("--split-last-wave")
        };
        assert_eq!(ok(None, &[], None, None, None), Ok(()));
        assert_eq!(ok(Some(CommPath::Epilogue), &[], tma, None, Some(2)), Ok(()));
        let e = ok(None, &[], None, None, Some(1)).unwrap_err();
        assert!(e.contains("2 ranks") && e.contains("local path"), "{e}");
        for (e, why) in [
            (ok(Some(CommPath::TmaOneShot), &[], None, None, None), "--comm-path one-shot"),
            (ok(None, &[], None, Some(0), None), "--tail-ctas"),
            (ok(None, &[], wide, None, None), "TMA-store tile"),
            (ok(None, &[], None, None, Some(4)), "2 ranks"),
            (ok(None, &[CommPath::Epilogue], None, None, Some(3)), "2 ranks"),
        ] {
            let e = e.unwrap_err();
            assert!(e.starts_with("--split-last-wave") && e.contains(why), "{e}");
        }
        // A sweep that times the epilogue path (with its default tile) takes it.
        assert_eq!(ok(Some(CommPath::TmaOneShot), &[CommPath::Epilogue], wide, Some(0), Some(2)), Ok(()));
    }

    /// --split-last-wave N and --sweep-split: one rank's local path takes them (the plain
    /// GEMM's split, helper-53); one rank asked for a fused path, or another world size
    /// without the epilogue path, is refused as before.
    #[test]
    fn split_flags_suit_the_local_path() {
        let split = |comm_path, tile, tail_ctas, world| {
            PathFlags { comm_path, sweep_paths: &[], tile, tail_ctas, world, shared: false }.check_split("--sweep-split")
        };
        let cols = Some(mkernel::TileConfig::cols_tma_store(176));
        assert_eq!(split(None, None, None, Some(1)), Ok(()));
        assert_eq!(split(None, cols, None, Some(1)), Ok(()));
        assert_eq!(split(Some(CommPath::Local), None, Some(0), Some(1)), Ok(()));
        for (e, why) in [
            (split(Some(CommPath::TmaOneShot), None, None, Some(1)), "never splits"),
            (split(None, None, Some(0), Some(1)), "never splits"),
            (split(None, None, None, Some(4)), "2 ranks"),
        ] {
            let e = e.unwrap_err();
            assert!(e.starts_with("--sweep-split") && e.contains(why), "{e}");
        }
    }

    #[test]
    fn only_a_slice_count_needs_the_epilogue_path() {
        use mkernel::LastWaveSplit;
        assert!(!forces_split(None));
        for v in ["off", "auto", "1"] {
            assert!(!forces_split(Some(parse_split_last_wave(v).unwrap())), "{v}");
        }
        for v in ["2", "8", "9"] {
            assert!(forces_split(Some(parse_split_last_wave(v).unwrap())), "{v}");
        }
        assert_eq!(parse_split_last_wave("auto"), Ok(LastWaveSplit::Auto));
    }

    #[test]
    fn epilogue_pace_is_known_and_only_for_the_epilogue_path() {
        use mkernel::EpiloguePace;
        assert_eq!(parse_epilogue_pace(None, Some(CommPath::TmaOneShot), &[]), Ok(None));
        assert_eq!(parse_epilogue_pace(Some("clock"), None, &[]), Ok(Some(EpiloguePace::Clock)));
        assert_eq!(parse_epilogue_pace(Some("sleep"), Some(CommPath::Epilogue), &[]), Ok(Some(EpiloguePace::Sleep)));
        // One-shot forced, epilogue swept: the swept calls take the pace.
        assert_eq!(parse_epilogue_pace(Some("clock"), Some(CommPath::TmaOneShot), &[CommPath::Epilogue]), Ok(Some(EpiloguePace::Clock)));
        let e = parse_epilogue_pace(Some("fast"), None, &[]).unwrap_err();
        assert!(e.contains("--epilogue-pace") && e.contains("fast") && e.contains("clock"), "{e}");
        let e = parse_epilogue_pace(Some("clock"), Some(CommPath::TmaOneShot), &[CommPath::TmaReduce]).unwrap_err();
        assert!(e.contains("--epilogue-pace") && e.contains("one-shot"), "{e}");
    }

    #[test]
    fn sweep_paths_are_known_unique_and_fit_the_world_size() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_sweep_paths(&names(&["epilogue", "one-shot"]), Some(2)).unwrap(), vec![CommPath::Epilogue, CommPath::TmaOneShot]);
        assert_eq!(parse_sweep_paths(&names(&["epilogue"]), None).unwrap(), vec![CommPath::Epilogue]);
        let e = parse_sweep_paths(&names(&["bogus"]), None).unwrap_err();
        assert!(e.contains("--sweep-paths") && e.contains("bogus") && e.contains("epilogue"), "{e}");
        let e = parse_sweep_paths(&names(&["epilogue", "epilogue"]), None).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let e = parse_sweep_paths(&names(&["epilogue"]), Some(3)).unwrap_err();
        assert!(e.contains("--sweep-paths") && e.contains("2 ranks") && !e.contains("--comm-path"), "{e}");
        let e = parse_sweep_paths(&names(&["one-shot"]), Some(4)).unwrap_err();
        assert!(e.contains("--sweep-paths") && e.contains("1 or 2 ranks") && !e.contains("--comm-path"), "{e}");
        assert!(parse_sweep_paths(&[], Some(8)).unwrap().is_empty());
    }
    use clap::Parser;
    use mkernel::TileConfig;

    #[test]
    fn share_gpu_takes_no_launcher() {
        assert!(Cli::try_parse_from(["x", "--share-gpu", "--gpus", "4"]).unwrap().ar.share_gpu);
        for other in ["--procs", "--launched"] {
            let args: Vec<&str> = if other == "--procs" { vec!["x", "--share-gpu", other, "2"] } else { vec!["x", "--share-gpu", other] };
            let e = Cli::try_parse_from(args).err().expect(other).to_string();
            assert!(e.contains("--share-gpu") && e.contains(other), "{e}");
        }
        // Refused before any device is touched: one rank, tail CTAs, and the epilogue-only
        // options without the epilogue path (a shared GPU's default is one-shot).
        for (args, want) in [
            (&["x", "--share-gpu", "--gpus", "1"][..], "2 or more ranks"),
            (&["x", "--share-gpu", "--tail-ctas", "4"][..], "no tail CTAs"),
            (&["x", "--share-gpu", "--split-last-wave", "4"][..], "add --comm-path epilogue"),
            (&["x", "--share-gpu", "--sweep-split", "2,4"][..], "add --comm-path epilogue"),
            (&["x", "--share-gpu", "--sweep-diag", "1"][..], "add --comm-path epilogue"),
            (&["x", "--share-gpu", "--epilogue-pace", "sleep"][..], "add --comm-path epilogue"),
        ] {
            let e = run(Cli::try_parse_from(args).unwrap().ar).unwrap_err().to_string();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        // With the epilogue path, or a tile that takes only that path, they pass every
        // argument check: the run stops at the next one, an --out-dir it cannot write,
        // before any device is touched.
        for args in [
            &["x", "--share-gpu", "--comm-path", "epilogue", "--split-last-wave", "4"][..],
            &["x", "--share-gpu", "--tile", "swap-ab-64x136-tma-store", "--sweep-split", "2"][..],
            &["x", "--share-gpu", "--sweep-tiles", "swap-ab-64x136-tma-store", "--comm-path", "epilogue", "--split-last-wave", "2"][..],
        ] {
            let args: Vec<&str> = args.iter().copied().chain(["--out-dir", "/dev/null/not-a-dir"]).collect();
            let e = run(Cli::try_parse_from(&args).unwrap().ar).unwrap_err().to_string();
            assert!(e.contains("--out-dir /dev/null/not-a-dir"), "{args:?}: {e}");
        }
    }

    #[test]
    fn custom_shapes_are_parsed_and_checked_before_any_device_is_touched() {
        let cli = Cli::try_parse_from(["x", "--shape", "32x8192x4096,129x8192x4096", "--shape", "7x64x8"]).unwrap();
        let got: Vec<(u32, u32, u32)> = cli.ar.shape.iter().map(|s| (s.m, s.n, s.k)).collect();
        assert_eq!(got, [(32, 8192, 4096), (129, 8192, 4096), (7, 64, 8)]);
        for bad in ["0x8192x4096", "32x8192x4095", "32x8192", "axbxc"] {
            let e = Cli::try_parse_from(["x", "--shape", bad]).err().expect(bad).to_string();
            assert!(e.contains("--shape") || e.contains(bad), "{bad}: {e}");
        }
        let e = run(Cli::try_parse_from(["x", "--shape", "32x8192x4096", "--filter", "M=129"]).unwrap().ar).unwrap_err().to_string();
        assert!(e.contains("shape 32x8192x4096"), "the labels are listed: {e}");
        let e = run(Cli::try_parse_from(["x", "--shape", "32x1001x4096", "--tile", "wide-tma-store"]).unwrap().ar).unwrap_err().to_string();
        assert!(e.contains("--tile wide-tma-store") && e.contains("N % 8") && e.contains("N=1001"), "{e}");
        // (helper-89) a path that needs 16-byte rows, before any GPU is opened; scalar takes any N
        for p in ["epilogue", "one-shot", "reduce", "tma", "vec16"] {
            let e = run(Cli::try_parse_from(["x", "--gpus", "2", "--shape", "32x8192x4096,32x1001x4096", "--comm-path", p]).unwrap().ar).unwrap_err().to_string();
            assert!(e.contains(&format!("--comm-path {p}")) && e.contains("N % 8") && e.contains("N=1001") && e.contains("scalar"), "{e}");
        }
        assert!(!CommPath::Scalar.needs_16_byte_rows() && !CommPath::Local.needs_16_byte_rows());
    }

    #[test]
    fn clustered_tiles_are_refused_off_the_epilogue_path_before_any_device_is_touched() {
        let c2 = Some(TileConfig::WIDE_TMA_STORE_C2);
        assert!(check_path_args(c2, Some(CommPath::Epilogue), None, Some(2)).is_ok());
        assert!(check_path_args(c2, None, None, None).is_ok());
        // One rank: the local path (the plain GEMM alone) takes any tile; other world sizes refuse it.
        assert!(check_path_args(c2, Some(CommPath::Local), None, Some(1)).is_ok() && check_path_args(c2, None, None, Some(1)).is_ok());
        let e = check_path_args(None, Some(CommPath::Local), None, Some(2)).unwrap_err();
        assert!(e.contains("--comm-path local") && e.contains("one rank"), "{e}");
        // (tail CTAs at one rank mean a fused path: not the local one, so no clustered tile;
        // a plain-GEMM tile only on the local path: helper-51)
        let e = check_path_args(c2, None, Some(0), Some(1)).unwrap_err();
        assert!(e.contains("--tile wide-tma-store-c2"), "{e}");
        let cols = Some(TileConfig::cols(176));
        assert!(check_path_args(cols, None, None, Some(1)).is_ok() && check_path_args(cols, Some(CommPath::Local), None, Some(1)).is_ok());
        for (path, tail, world) in [(None, None, Some(2)), (None, None, None), (None, Some(0), Some(1)), (Some(CommPath::TmaOneShot), None, Some(1))] {
            let e = check_path_args(cols, path, tail, world).unwrap_err();
            assert!(e.contains("only the plain GEMM"), "{path:?} {tail:?} {world:?}: {e}");
        }
        // The column-fitted TMA-store tiles have a fused kernel: the epilogue path with 2
        // ranks (or the local path with one), as the clustered and swapped ones.
        for t in [TileConfig::cols_tma_store(144), TileConfig::cols_tma_store_c2(176)] {
            assert!(check_path_args(Some(t), None, None, Some(2)).is_ok() && check_path_args(Some(t), Some(CommPath::Epilogue), None, None).is_ok());
            for (path, tail, world, rule) in [
                (Some(CommPath::TmaOneShot), None, Some(2), "epilogue path only"),
                (None, None, Some(4), "exactly 2 ranks"),
                (None, Some(0), Some(1), "2 ranks only"),
            ] {
                let e = check_path_args(Some(t), path, tail, world).unwrap_err();
                assert!(e.contains(&format!("--tile {}", t.name())) && e.contains(rule), "{path:?} {tail:?} {world:?}: {e}");
            }
        }
        let e = run(Cli::try_parse_from(["x", "--gpus", "2", "--tile", "cols-128x144-tma-store", "--split-last-wave", "2"]).unwrap().ar).unwrap_err().to_string();
        assert!(e.contains("cols-128x144-tma-store") && e.contains("no K-slices"), "{e}");
        let e = run(Cli::try_parse_from(["x", "--gpus", "2", "--sweep-tiles", "cols-128x144-tma-store", "--split-last-wave", "2"]).unwrap().ar).unwrap_err().to_string();
        assert!(e.contains("--sweep-tiles cols-128x144-tma-store") && e.contains("whole tiles"), "{e}");
        // Without --gpus the GPUs present decide the world size: checked again then (helper-88).
        let args = Cli::try_parse_from(["x", "--tile", "cols-128x200-tma-store", "--split-last-wave", "2"]).unwrap().ar;
        let t = Some(TileConfig::cols_tma_store(200));
        assert!(check_fused_cols_split(&args, t, &[], None, None).is_ok() && check_fused_cols_split(&args, t, &[], None, Some(1)).is_ok());
        assert!(check_fused_cols_split(&args, t, &[], None, Some(2)).unwrap_err().contains("no K-slices"));
        let args = Cli::try_parse_from(["x", "--sweep-tiles", "cols-128x200-tma-store", "--split-last-wave", "2"]).unwrap().ar;
        assert!(check_fused_cols_split(&args, None, &[("cols-128x200-tma-store", t)], None, Some(2)).unwrap_err().contains("whole tiles"));
        // An epilogue-only tile takes its path with --tail-ctas 0 too, so the epilogue's options
        // pass (up to an --out-dir it cannot write, before any device).
        for tile in ["cols-128x200-tma-store", "wide-tma-store-c2", "swap-ab-64x136-tma-store"] {
            for extra in [["--epilogue-pace", "sleep"], ["--sweep-diag", "1"]] {
                let cli = Cli::try_parse_from(["x", "--gpus", "2", "--tail-ctas", "0", "--tile", tile, extra[0], extra[1], "--out-dir", "/dev/null/x"]).unwrap().ar;
                let e = run(cli).unwrap_err().to_string();
                assert!(e.contains("--out-dir /dev/null/x"), "{tile} {extra:?}: {e}");
            }
        }
        // (helper-52) --comm-path local implies one rank; without --gpus the refusal hints at
        // it; --sm-comm's fused rows refuse a plain-GEMM tile before any device.
        assert!(check_path_args(cols, Some(CommPath::Local), None, None).is_ok());
        assert!(check_path_args(cols, None, None, None).unwrap_err().contains("--gpus 1"));
        let e = check_path_args(c2, None, Some(0), Some(1)).unwrap_err();
        assert!(e.contains("--tail-ctas") && e.contains("local path"), "{e}");
        let cli = Cli::try_parse_from(["x", "--gpus", "1", "--sm-comm", "4", "--tile", "cols-128x136-tma-store"]).unwrap().ar;
        let e = run(cli).unwrap_err().to_string();
        assert!(e.contains("--sm-comm") && e.contains("cols-128x136-tma-store"), "{e}");
        for (path, tail, world, rule) in [
            (Some(CommPath::TmaOneShot), None, None, "epilogue path only"),
            (Some(CommPath::Scalar), None, None, "epilogue path only"),
            (None, None, Some(4), "exactly 2 ranks"),
            (None, Some(4), None, "no tail CTAs"),
        ] {
            let e = check_path_args(c2, path, tail, world).unwrap_err();
            assert!(e.contains("--tile wide-tma-store-c2") && e.contains(rule), "{e}");
        }
        // The swapped-operand TMA-store tiles follow the same rules; the others have no fused kernel.
        let sw = Some(TileConfig::swapped_tma_store(136));
        assert!(check_path_args(sw, None, None, Some(2)).is_ok());
        let e = check_path_args(sw, Some(CommPath::TmaOneShot), None, None).unwrap_err();
        assert!(e.contains("swap-ab-64x136-tma-store") && e.contains("swapped-operand tiles take the epilogue path only"), "{e}");
        let e = check_path_args(Some(TileConfig::swapped(136)), None, None, None).unwrap_err();
        assert!(e.contains("only the plain GEMM"), "{e}");
        // (a swapped-operand tile's last wave splits: every argument check passes it, up to
        // an --out-dir it cannot write, before any device is touched)
        let cli = Cli::try_parse_from(["x", "--tile", "swap-ab-64x136-tma-store", "--split-last-wave", "2", "--out-dir", "/dev/null/x"]).unwrap().ar;
        let e = run(cli).unwrap_err().to_string();
        assert!(e.contains("--out-dir /dev/null/x"), "{e}");
        for args in [
            &["x", "--tile", "wide-tma-store-c2", "--sm-comm", "8"][..],
            &["x", "--tile", "narrow-tma-store-c2", "--split-last-wave", "2"][..],
            &["x", "--tile", "narrow-tma-store-c2", "--sweep-split", "1,2"][..],
        ] {
            let e = run(Cli::try_parse_from(args).unwrap().ar).unwrap_err().to_string();
            assert!(e.contains("-c2"), "{args:?}: {e}");
        }
        // Tiles in clusters along N (plain GEMM, one rank's local path) take no K-slices
        // either, refused before any device is touched (helper-69).
        for args in [
            &["x", "--gpus", "1", "--tile", "narrow-tma-store-n2", "--split-last-wave", "2"][..],
            &["x", "--gpus", "1", "--tile", "cols-128x96-tma-store-n2", "--sweep-split", "2"][..],
            &["x", "--gpus", "1", "--sweep-tiles", "narrow-tma-store-n2", "--split-last-wave", "2"][..],
        ] {
            let e = run(Cli::try_parse_from(args).unwrap().ar).unwrap_err().to_string();
            assert!(e.contains("-n2") && e.contains("whole tiles"), "{args:?}: {e}");
        }
    }

    #[test]
    fn path_arguments_are_refused_before_any_device_is_touched() {
        let ok = |tile, path, tail, world| check_path_args(tile, path, tail, world);
        assert!(ok(None, None, Some(7), None).is_ok());
        assert!(ok(None, Some(CommPath::Tma), Some(0), None).is_ok());
        for p in CommPath::ALL {
            let r = ok(None, Some(p), Some(3), None);
            assert_eq!(r.is_ok(), p.claims_tiles(), "{}", p.name());
            if let Err(e) = r {
                assert!(e.contains("--tail-ctas 3") && e.contains(p.name()) && e.contains("push"), "{e}");
            }
        }
        for p in [CommPath::Push, CommPath::TmaReduce] {
            let e = ok(Some(TileConfig::WIDE), Some(p), None, None).unwrap_err();
            assert!(e.contains("--comm-path") && e.contains("TMA-store"), "{e}");
            assert!(ok(Some(TileConfig::WIDE_TMA_STORE), Some(p), None, Some(2)).is_ok());
            let e = ok(None, Some(p), None, Some(4)).unwrap_err();
            assert!(e.contains("--comm-path") && e.contains("2 ranks"), "{e}");
        }
        assert!(ok(None, Some(CommPath::TmaOneShot), None, Some(4)).is_err());
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ar: ArArgs,
    }

    #[test]
    fn tail_ctas_flag_parses_and_names_itself() {
        let cli = Cli::try_parse_from(["x", "--tail-ctas", "12", "--comm-path", "push"]).unwrap();
        assert_eq!(cli.ar.tail_ctas, Some(12));
        assert_eq!(cli.ar.comm_path.as_deref(), Some("push"));
        for bad in ["-1", "abc", "4294967296"] {
            let e = Cli::try_parse_from(["x", "--tail-ctas", bad]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("--tail-ctas"), "{bad}: {e}");
        }
    }

    /// The error of parsing `args` (after the program name), or "" when they parse.
    fn parse_err(args: &[&str]) -> String {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn negative_numbers_reach_the_parsers_that_state_the_rule() {
        // (arguments, text the error must hold besides the flag: the rule)
        let cases: [(&[&str], &str); 10] = [
            (&["--sm-comm", "-3"], "at least 1"),
            (&["--sm-comm", "4,-3"], "at least 1"),
            (&["--iters", "-5"], "1..=100000"),
            (&["--warmup", "-1"], "0..=100000"),
            (&["--warmup-ms", "-1"], "0..=600000"),
            (&["--timeout-s", "-1"], "between 0.001 and 86400"),
            (&["--gpus", "-2"], "1..=8"),
            (&["--procs", "-1"], "1..=8"),
            (&["--check", "--check-reps", "-1"], "1..=1000000"),
            (&["--tail-ctas", "-1"], "0 or more"),
        ];
        for (args, rule) in cases {
            let e = parse_err(args);
            let flag = args[args.len() - 2];
            assert!(e.contains(flag) && e.contains(rule) && !e.contains("unexpected argument"), "{args:?}: {e}");
        }
        let cli = Cli::try_parse_from(["x", "--sm-comm", "4,8", "--gpus", "2", "--check", "--check-reps", "3", "--timeout-s", "0.5"]).unwrap();
        assert_eq!((cli.ar.sm_comm, cli.ar.gpus, cli.ar.check_reps, cli.ar.timeout_s), (vec![4, 8], Some(2), 3, 0.5));
    }

    /// In any round order, consecutive steps that read A and B never share an input set
    /// (2 to 4 sets, 5 to 14 variants, variant 3 reading none, as NCCL alone).
    #[test]
    fn waves_note_shows_the_wave_a_width_adds() {
        let fused = |tile, grid, comm_ctas, path| mkernel::FusedConfig { tile, grid, comm_ctas, path, tail_ctas: 0, pace: Default::default(), split_slices: 1, diag_skip: 0 };
        let s = |m, n, k| GemmShape { m, n, k };
        let c144 = TileConfig::cols_tma_store_c2(144);
        // (run 391's --share-gpu sweep: N halved on 66 CTAs adds a wave the pair's 132 have not)
        assert_eq!(waves_note(&fused(c144, 132, 0, CommPath::Epilogue), s(2048, 8192, 4096)), ", 912 tiles on 132 CTAs: 6.91 waves");
        assert_eq!(waves_note(&fused(c144, 66, 0, CommPath::Epilogue), s(2048, 4096, 4096)), ", 464 tiles on 66 CTAs: 7.03 waves");
        assert_eq!(waves_note(&fused(c144, 66, 0, CommPath::Epilogue), s(1024, 8192, 4096)), ", 456 tiles on 66 CTAs: 6.91 waves");
        // (communication CTAs compute nothing; clusters pad 3 row blocks to 4)
        assert_eq!(waves_note(&fused(TileConfig::NARROW, 132, 16, CommPath::Tma), s(1024, 8192, 4096)), ", 512 tiles on 116 CTAs: 4.41 waves");
        assert_eq!(waves_note(&fused(c144, 132, 0, CommPath::Epilogue), s(384, 144, 64)), ", 4 tiles on 132 CTAs: 0.03 waves");
        assert_eq!(waves_note(&fused(TileConfig::WIDE, 132, 0, CommPath::Local), s(2048, 8192, 4096)), "");
    }

    #[test]
    fn consecutive_input_readers_take_different_sets() {
        for variants in 5..=14 {
            for sets in 2..=4 {
                let mut rot = InputRotation::default();
                let mut prev: Option<usize> = None;
                let mut steps = 0;
                super::super::time_rounds_ms(&[], super::super::Warmup { rounds: 5, ms: 0 }, Ok, |_| Ok(()), 30, variants, |v, _| {
                    steps += 1;
                    let reads = v != 3;
                    let set = rot.next(reads) % sets;
                    if reads {
                        assert_ne!(Some(set), prev, "{variants} variants, {sets} sets");
                        prev = Some(set);
                    }
                    Ok(())
                })
                .unwrap();
                assert_eq!(steps, 35 * variants);
            }
        }
    }

    /// The side-by-side sweeps parse, bad values are refused naming the flag before any
    /// device is touched, and the alignment flags override each other (last one wins).
    #[test]
    fn sweeps_and_alignment_flags_parse_and_refuse_bad_values() {
        let cli = Cli::try_parse_from(["x", "--sweep-split", "1,2,4", "--sweep-tiles", "narrow-tma-store,wide-tma-store", "--sweep-same"]).unwrap();
        assert_eq!(cli.ar.sweep_split, vec![1, 2, 4]);
        assert_eq!(cli.ar.sweep_tiles, vec!["narrow-tma-store".to_string(), "wide-tma-store".to_string()]);
        assert!(cli.ar.sweep_same && !cli.ar.no_align_ranks && !cli.ar.no_l2_flush);
        // An output the symmetric workspace cannot hold is refused by --shape, not by the
        // communicator's internal field (helper-44).
        let e = parse_err(&["--shape", "370728x370728x8"]);
        assert!(e.contains("--shape") && e.contains("M x N must be at most 2^37"), "{e}");
        assert!(Cli::try_parse_from(["x", "--shape", "16384x8388608x8"]).is_ok());
        for (flag, bad, rule) in [("--sweep-split", "0", "1..=64"), ("--sweep-split", "65", "1..=64"), ("--sweep-split", "-1", "1..=64"), ("--sweep-split", "two", "invalid digit"), ("--sweep-diag", "4", "1..=3"), ("--sweep-diag", "-2", "1..=3")] {
            let e = parse_err(&[flag, bad]);
            assert!(e.contains(flag) && e.contains(rule) && !e.contains("unexpected argument"), "{flag} {bad}: {e}");
        }
        // Each value once; the epilogue path's sweeps refuse a run that forces another.
        for (args, want) in [
            (&["--sweep-split", "2,2"][..], "--sweep-split: 2 is listed twice"),
            (&["--sweep-diag", "1,1"][..], "--sweep-diag: 1 is listed twice"),
            (&["--sweep-tiles", "wide-tma-store,wide-tma-store"][..], "--sweep-tiles: wide-tma-store is listed twice"),
            (&["--sweep-split", "2", "--comm-path", "one-shot"][..], "--sweep-split"),
            (&["--sweep-diag", "1", "--comm-path", "one-shot"][..], "--sweep-diag"),
            // A swept tile no call of the run can take, by the rules --tile follows.
            (&["--sweep-tiles", "wide-tma-store-c2", "--gpus", "4"][..], "--sweep-tiles wide-tma-store-c2: clustered tiles"),
            (&["--sweep-tiles", "narrow-tma-store-c2", "--comm-path", "one-shot"][..], "--sweep-tiles narrow-tma-store-c2: clustered tiles"),
            // Unknown names are told what --tile's are: a family's rule, the nearest name.
            (&["--sweep-tiles", "cols-128x250-tma-store"][..], "--sweep-tiles cols-128x250-tma-store: a cols-128xC tile needs"),
            (&["--sweep-tiles", "wide-tma-stor"][..], "--sweep-tiles wide-tma-stor: did you mean wide-tma-store?"),
        ] {
            let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied()).chain(["--filter", "M=129"])).unwrap();
            let e = run(cli.ar).unwrap_err().to_string();
            // (a swept tile's refusal names --sweep-tiles, not --tile: helper-88)
            assert!(e.contains(want) && (args[0] != "--sweep-tiles" || !e.contains("--tile ")), "{args:?}: {e}");
        }
        // A swept TMA-store tile that no listed shape can write (N % 8 != 0) is refused; one
        // that some shape can write is not refused for the others.
        let sweep_err = |args: &[&str]| run(Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap().ar).err().map(|e| e.to_string()).unwrap_or_default();
        let e = sweep_err(&["--sweep-tiles", "wide,wide-tma-store", "--shape", "129x8191x4096"]);
        assert!(e.starts_with("--sweep-tiles wide-tma-store: the TMA-store epilogue needs N % 8 == 0, which 'shape 129x8191x4096' (N=8191) has not"), "{e}");
        let e = sweep_err(&["--sweep-tiles", "wide-tma-store", "--shape", "129x8191x4096", "--shape", "129x8190x4096"]);
        assert!(e.contains("nor has any other of the 2 shapes listed"), "{e}");
        let e = sweep_err(&["--sweep-tiles", "wide-tma-store", "--shape", "129x8191x4096", "--shape", "129x8192x4096", "--out-dir", "/dev/null/mkernel"]);
        // (stops at the next check, --out-dir under a plain file, before any device)
        assert!(e.contains("--out-dir /dev/null/mkernel") && !e.contains("N % 8"), "{e}");
        let cli = Cli::try_parse_from(["x", "--sweep-tiles", "narrow-tma-store,bogus", "--filter", "M=129"]).unwrap();
        let e = run(cli.ar).unwrap_err().to_string();
        assert!(e.contains("--sweep-tiles") && e.contains("bogus") && e.contains("wide-tma-store"), "{e}");
        assert!(Cli::try_parse_from(["x", "--align-ranks", "--no-align-ranks"]).unwrap().ar.no_align_ranks);
        assert!(!Cli::try_parse_from(["x", "--no-align-ranks", "--align-ranks"]).unwrap().ar.no_align_ranks);
    }

    #[test]
    fn sm_comm_counts_are_refused_twice() {
        assert!(check_unique("--sm-comm", &[4, 8, 16]).is_ok());
        assert!(check_unique::<u32>("--sm-comm", &[]).is_ok());
        let e = check_unique("--sm-comm", &[4, 8, 4]).unwrap_err();
        assert!(e.contains("--sm-comm") && e.contains("4 is listed twice"), "{e}");
        // Through run(): refused before any device is touched.
        let cli = Cli::try_parse_from(["x", "--sm-comm", "4,4", "--no-json", "--iters", "1", "--warmup", "0", "--filter", "M=129"]).unwrap();
        let e = run(cli.ar).unwrap_err().to_string();
        assert!(e.contains("--sm-comm") && e.contains("twice"), "{e}");
    }

    #[test]
    fn world_flags_that_would_be_ignored_conflict() {
        for args in [&["--gpus", "3", "--procs", "2"][..], &["--procs", "2", "--launched"], &["--gpus", "2", "--launched"]] {
            let e = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).err().unwrap_or_else(|| panic!("{args:?} parsed"));
            assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{args:?}: {e}");
            let e = e.to_string();
            assert!(e.contains(args[0]) && e.contains("cannot be used with"), "{args:?}: {e}");
        }
        assert!(Cli::try_parse_from(["x", "--procs", "2"]).is_ok());
        assert!(Cli::try_parse_from(["x", "--launched"]).is_ok());
        assert!(Cli::try_parse_from(["x", "--gpus", "2"]).is_ok());
    }

    #[test]
    fn unwritable_out_dir_fails_before_any_device_is_touched() {
        crate::bench::assert_out_dir_checked_first("ar", |args| run(Cli::try_parse_from(args).unwrap().ar).map_err(|e| e.to_string()));
    }
}
