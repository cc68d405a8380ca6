//! Benchmarks: each runs a fused kernel and its unfused baseline side by side in one
//! process on the same inputs, warms up, takes the median of many iterations (every
//! iteration a new epoch, so it really waits for its data), rotates input sets larger
//! than L2, prints a table and writes JSON with device, driver, commit and date.

pub(crate) mod floors;
mod allgather_gemm;
mod moe_dispatch_gemm;
mod moe_gemm_combine;
mod gemm;
mod gemm_allreduce;
mod proxy_stream;
mod ring_attention;

// (for `mkernel plan`: the benches' shape lists and parsers, so that it plans what they time)
pub(crate) use gemm::{model_shapes as gemm_model_shapes, parse_shape as parse_gemm_shape, shapes as gemm_shapes, DENSE_MODELS};
pub(crate) use allgather_gemm::shapes as allgather_shapes;
pub(crate) use moe_dispatch_gemm::{filter_moe_shapes, workspace_elems as moe_workspace_elems, MoeShapeArgs};
pub(crate) use moe_gemm_combine::{options as moe_combine_options, shapes as moe_combine_shapes, workspace_elems as moe_combine_workspace_elems};
#[cfg(test)]
pub(crate) use moe_dispatch_gemm::shapes as moe_shapes;
pub(crate) use ring_attention::{parse_shape_syntax as parse_attention_shape_syntax, shapes as attention_shapes, tag as attention_tag, workspace_elems as attention_workspace_elems};
pub(crate) use gemm_allreduce::{reduce_scatter_shapes, shapes as gemm_allreduce_shapes, waves_note};

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use serde::Serialize;

pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// An error in a command's arguments (a flag's value, flags that do not go together, a
/// device or GPU count the machine does not have), said before any kernel runs. `main`
/// exits with status 2 for it, as clap does for the arguments it rejects itself, and
/// with 1 for every other failure (no GPU or driver, a failed `--check`, a timeout), so
/// that a script can tell its own mistake from the machine's.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A [`UsageError`] with `msg`, boxed as the benchmarks' errors are.
pub fn usage(msg: impl Into<String>) -> Box<dyn std::error::Error> {
    Box::new(UsageError(msg.into()))
}

/// The workspace (elements, `CommConfig::max_output_elems`) a bench creates its communicators
/// with: the largest of its shapes' `needs` that the largest workspace holds
/// (`MAX_CAPACITY_ELEMS`, 2^37; a shape that needs more is refused by its plan, naming the
/// rule), at least 1.
pub(crate) fn largest_workspace(needs: impl Iterator<Item = u64>) -> u64 {
    needs.filter(|&n| n <= mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS).max().unwrap_or(1).max(1)
}

/// The process exit status for a benchmark's error: 2 for a [`UsageError`], else 1.
pub fn exit_status(e: &(dyn std::error::Error + 'static)) -> u8 {
    if e.is::<UsageError>() { 2 } else { 1 }
}

#[derive(Subcommand)]
pub enum BenchCmd {
    /// Our Hopper GEMM vs cuBLAS on one GPU.
    Gemm(gemm::GemmArgs),
    /// Fused GEMM + all-reduce vs cuBLAS + NCCL on the GPUs present.
    GemmAllreduce(gemm_allreduce::ArArgs),
    /// Fused GEMM + reduce-scatter vs cuBLAS + NCCL's reduce-scatter on the GPUs present
    /// (gemm-allreduce's options; each rank keeps its M / world rows of the sum; shapes
    /// whose M the world size does not divide are left out; paths: epilogue, vec16, scalar).
    GemmReduceScatter(gemm_allreduce::ArArgs),
    /// Fused all-gather + GEMM (each rank holds M / world rows of A) vs NCCL's all-gather then
    /// cuBLAS on the GPUs present (--share-gpu: ranks on GPU 0, no NCCL).
    AllgatherGemm(allgather_gemm::AgArgs),
    /// Fused MoE dispatch + grouped GEMM (uniform top-k routing) vs NCCL's all-to-all then cuBLAS
    /// per expert over the received tokens on the GPUs present (--share-gpu: ranks on GPU 0, no
    /// NCCL: against the experts' GEMMs alone).
    #[command(mut_arg("check", |a| a.help(MOE_DISPATCH_CHECK_HELP)), mut_arg("filter", |a| a.help(MOE_FILTER_HELP)))]
    MoeDispatchGemm(moe_dispatch_gemm::MoeArgs),
    /// Fused MoE grouped GEMM + combine (the way back: the experts' down projection, rows
    /// returned to their tokens' ranks and summed by their top-k weights; uniform top-k routing)
    /// vs cuBLAS per expert, NCCL's all-to-all back and the weighted sum on the GPUs present
    /// (--share-gpu: ranks on GPU 0, no NCCL: against the experts' GEMMs alone).
    #[command(mut_arg("check", |a| a.help(moe_combine_check_help())), mut_arg("filter", |a| a.help(MOE_COMBINE_FILTER_HELP)))]
    MoeGemmCombine(moe_dispatch_gemm::MoeArgs),
    /// Fused ring attention (each rank holds S positions of every sequence) vs NCCL's
    /// all-gather of K and V then the unfused attention (the same loop) on the GPUs present
    /// (--share-gpu: ranks on GPU 0, no NCCL).
    #[command(mut_arg("check", |a| a.help(ATTENTION_CHECK_HELP)), mut_arg("filter", |a| a.help(ATTENTION_FILTER_HELP)))]
    RingAttention(ring_attention::RaArgs),
    /// GPU-driven inter-node stream through the host proxy (two GPUs as two nodes, libfabric
    /// shm/tcp) vs pinned-copy bandwidth and NCCL with P2P disabled (needs `--features fabric`).
    #[command(
        mut_arg("check", |a| a.help("Refused: bench proxy-stream has no reference check (the transport tests check the bytes)")),
        mut_arg("filter", |a| a.help("Refused: bench proxy-stream has no shapes (--sizes picks the transfers)")),
        mut_arg("warmup_ms", |a| a.help("Refused: bench proxy-stream times one transfer kind at a time, after --warmup iterations only"))
    )]
    ProxyStream(proxy_stream::ProxyStreamArgs),
}

// The help of [`Common`]'s --check and --filter for the benches whose check or shapes are not
// the GEMM benches' (an fp32 reference; MxNxK), set on their subcommands above.
const ATTENTION_CHECK_HELP: &str = "Verify every rank's fused output first, bit for bit against the unfused attention over the gathered keys and values, and sampled rows against an fp64 reference (fails loudly on a mismatch)";
const ATTENTION_FILTER_HELP: &str = "Only shapes whose label or dimensions (BxSxHxHKVxD[c|cz], as --shape takes them, e.g. \"1x4096x64x8x128cz\") contain this text (case-sensitive)";
const MOE_DISPATCH_CHECK_HELP: &str = "Verify first, exactly, the call's layout and every rank's dest_rows against the host's model of the routing, and with a GPU per rank (NCCL) the baseline's rows against the fused call's (fails loudly on a mismatch)";
fn moe_combine_check_help() -> String {
    format!(
        "Verify first the setup dispatch's layout and dest_rows exactly against the host's model of the routing, every rank's y for its first {} tokens against an fp64 reference, and with a GPU per rank (NCCL) the baseline's y against the fused call's (fails loudly on a mismatch)",
        moe_gemm_combine::CHECK_TOKENS
    )
}
const MOE_FILTER_HELP: &str = "Only shapes whose label or even routing's dimensions (MxNxK with M = tokens x topk, the rows a rank's experts get, e.g. \"8192x28672\") contain this text (case-sensitive)";
const MOE_COMBINE_FILTER_HELP: &str = "Only shapes whose label or even routing's dimensions (MxNxK with M = tokens x topk, the rows a rank's experts get, N the hidden size, e.g. \"8192x4096\") contain this text (case-sensitive)";

/// Options every benchmark takes.
#[derive(Args, Clone, Debug)]
pub struct Common {
    /// Timed iterations per measurement (the median is reported), 1 to 100000. Where a
    /// bench times several kernels (ours against a baseline), they run round-robin, one
    /// iteration of each per round, so all see the same clocks.
    #[arg(long, default_value_t = 30, allow_negative_numbers = true, value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(1..=100_000))]
    pub iters: usize,
    /// Untimed warm-up iterations (rounds of every timed kernel), 0 to 100000.
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(0..=100_000))]
    pub warmup: usize,
    /// After --warmup, further untimed rounds (in blocks of 8) until this many milliseconds
    /// have passed since the first warm-up round (the --warmup rounds count), per shape; 0 to
    /// 600000 (0: none). 3000 brings the GPUs to the clocks of sustained load (an H200 at its
    /// 700 W cap: ~1.5 GHz instead of 1.98 within ~2 s; bench/NOTES.md 9.2).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = clap::builder::RangedI64ValueParser::<u64>::new().range(0..=600_000))]
    pub warmup_ms: u64,
    // (--check's and --filter's help is the GEMM benches'; BenchCmd sets the others')
    /// Verify results against an fp32 reference (fails loudly on a mismatch).
    #[arg(long)]
    pub check: bool,
    /// Only shapes whose label or dimensions (MxNxK, e.g. "2048x8192") contain this text
    /// (case-sensitive).
    #[arg(long)]
    pub filter: Option<String>,
    /// Directory for the JSON result.
    #[arg(long, default_value = "bench/results")]
    pub out_dir: PathBuf,
    /// Do not write JSON.
    #[arg(long)]
    pub no_json: bool,
}

pub fn run(cmd: BenchCmd) -> BenchResult<()> {
    match cmd {
        BenchCmd::Gemm(a) => gemm::run(a),
        BenchCmd::GemmAllreduce(a) => gemm_allreduce::run(a, gemm_allreduce::Op(mkernel::Collective::AllReduce)),
        BenchCmd::GemmReduceScatter(a) => gemm_allreduce::run(a, gemm_allreduce::Op(mkernel::Collective::ReduceScatter)),
        BenchCmd::AllgatherGemm(a) => allgather_gemm::run(a),
        BenchCmd::MoeDispatchGemm(a) => moe_dispatch_gemm::run(a),
        BenchCmd::MoeGemmCombine(a) => moe_gemm_combine::run(a),
        BenchCmd::RingAttention(a) => ring_attention::run(a),
        BenchCmd::ProxyStream(a) => proxy_stream::run(a),
    }
}

pub fn compile_catalog() -> BenchResult<()> {
    let rt = mkernel_kernels::driver::Runtime::global();
    let reports = mkernel_kernels::catalog::compile_all(rt.compiler())?;
    for r in &reports {
        let spills = match r.spill_store_bytes {
            Some(b) if b > 0 => format!("  {b} bytes of spill stores"),
            _ => String::new(),
        };
        println!("{:<64} {:>8} bytes  {}{spills}", r.name, r.bytes, if r.from_cache { "cached".to_string() } else { format!("{} ms", r.millis) });
    }
    let cached = reports.iter().filter(|r| r.from_cache).count();
    let cache = rt.compiler().cache_dir().map_or("no disk cache".to_string(), |d| format!("cache {}", d.display()));
    println!("{} kernels: {} compiled, {} from the cache ({cache})", reports.len(), reports.len() - cached, cached);
    Ok(())
}

/// The rule a tile name of a parameterised family breaks (`swap-ab-64xR`, `swap-ab-128xR`,
/// `cols-128xC`, with their suffixes), naming `flag` (the argument that gave the name), or
/// `None` for a name outside those families.
fn tile_family_rule(flag: &str, name: &str) -> Option<String> {
    let (family, rest) = [("swap-ab-64x", "swap-ab-64xR"), ("swap-ab-128x", "swap-ab-128xR"), ("cols-128x", "cols-128xC")]
        .into_iter()
        .find_map(|(prefix, family)| name.strip_prefix(prefix).map(|rest| (family, rest)))?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let suffix = &rest[digits.len()..];
    // A size written with leading zeros (`cols-128x0144-tma-store`): the canonical name,
    // when it is a tile, rather than a range the size is in.
    let trimmed = digits.trim_start_matches('0');
    if digits.len() > 1 && trimmed.len() < digits.len() {
        let canonical = format!("{}{trimmed}{suffix}", &name[..name.len() - rest.len()]);
        if mkernel::TileConfig::by_name(&canonical).is_some() {
            return Some(format!("{flag} {name}: write the size without leading zeros: {canonical}"));
        }
    }
    let c2 = suffix.ends_with("-c2");
    let n2 = family == "cols-128xC" && suffix.ends_with("-n2");
    let rule = match (family, c2) {
        _ if n2 => "C a multiple of 16 in 48..=160 (128: narrow-tma-store-n2), with the TMA store (-tma-store-n2)",
        ("swap-ab-64xR", false) => "R a multiple of 8 in 8..=256",
        ("swap-ab-64xR", true) => "R a multiple of 16 in 16..=256 (and no -tma-store with -c2)",
        ("swap-ab-128xR", false) => "R a multiple of 8 in 64..=256",
        ("swap-ab-128xR", true) => "R a multiple of 16 in 128..=256",
        ("cols-128xC", true) => "C = 48, 64, 72, 80, ..., 120 or 136, 144, ..., 248, with the TMA store (-tma-store-c2)",
        _ => "C a multiple of 8 in 8..=120 or 136..=248 (128 is the narrow tile, 256 the wide one)",
    };
    let suffixes = match family {
        "cols-128xC" => "-tma-store, -tma-store-c2 (C = 48, 64, 72, 80, ..., 120 or 136, 144, ..., 248), -tma-store-n2 (C a multiple of 16 in 48..=160)",
        "swap-ab-64xR" => "-tma-store, -c2 (not both)",
        _ => "-tma-store, -c2, -tma-store-c2",
    };
    // A suffix outside the family's, on a valid size: the suffix is what is wrong
    // (e.g. `-c2-tma-store` for `-tma-store-c2`).
    let known = ["", "-tma-store", "-c2", "-tma-store-c2", "-tma-store-n2"].contains(&suffix);
    if !known && !digits.is_empty() && mkernel::TileConfig::by_name(&name[..name.len() - suffix.len()]).is_some() {
        return Some(format!("{flag} {name}: '{suffix}' is not a suffix of {family} tiles; suffixes: none, {suffixes} (a combined one in that order: -tma-store-c2, not -c2-tma-store)"));
    }
    let cluster = if c2 { "-c2" } else if n2 { "-n2" } else { "" };
    Some(format!("{flag} {name}: a {family}{cluster} tile needs {rule}; suffixes: none, {suffixes}"))
}

/// The tile name nearest to `name` (edit distance, ignoring case) if it is close: at most
/// a quarter of the name's length away, and at least 2 (`WIDE` -> `wide`,
/// `narrow-tma-store-n4` -> `narrow-tma-store-n2`). Catalog names, and with `fitted`
/// `bench gemm`'s fitted ones (which `bench gemm-allreduce` does not take).
fn nearest_tile_name(name: &str, fitted: bool) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let fitted_names = ["swap-ab", "swap-ab-c2", "swap-ab-128-fit", "cols-fit", "cols-fit-tma-store"].map(String::from);
    let (dist, best) = mkernel::TileConfig::gemm_catalog()
        .map(|t| t.name())
        .chain(fitted_names.into_iter().filter(|_| fitted))
        .map(|c| (strsim::levenshtein(&lower, &c), c))
        .min()?;
    (dist <= (name.len() / 4).max(2)).then_some(best)
}

/// Why `name`, given to `flag`, is not a tile, before the list of names: a parameterised
/// family's rule (the whole message), or else "did you mean" the nearest name (among
/// `bench gemm`'s fitted names too with `fitted`), or else nothing.
pub fn unknown_tile(flag: &str, name: &str, fitted: bool) -> Result<String, String> {
    match tile_family_rule(flag, name) {
        Some(rule) => Err(rule),
        None => Ok(nearest_tile_name(name, fitted).map(|t| format!("did you mean {t}? ")).unwrap_or_default()),
    }
}

/// Parses `--tile NAME` (see `TileConfig::by_name`); `fitted`: the bench also takes
/// `bench gemm`'s fitted names (parsed before this), which a near miss may then be told.
pub fn parse_tile(name: Option<&str>, fitted: bool) -> BenchResult<Option<mkernel::TileConfig>> {
    match name {
        None => Ok(None),
        Some(n) => mkernel::TileConfig::by_name(n).map(Some).ok_or_else(|| {
            // (a name of a parameterised family gets that family's rule)
            let hint = match unknown_tile("--tile", n, fitted) {
                Ok(hint) => hint,
                Err(rule) => return usage(rule),
            };
            usage(format!(
                "--tile {n}: {hint}expected one of {}, or (both benches) {}, or (bench gemm, and bench gemm-allreduce with one rank on its local path) swap-ab-64xR, swap-ab-64xR-c2 (R a multiple of 16), swap-ab-128xR[-tma-store] (R = 64, 72, ..., 256), swap-ab-128xR-c2 (R a multiple of 16 from 128), cols-128xC (C = 8, 16, ..., 120, 136, 144, ..., 248), cols-128xC-tma-store (C = 8, 16, ..., 120), cols-128xC-tma-store-c2 (C = 48, 64, 72, 80, ..., 120 and 136, 152, ..., 248), cols-128xC-tma-store-n2 (C = 48, 64, ..., 160 but 128; 2-CTA clusters along N), narrow-tma-store-n2, or (bench gemm only) swap-ab, swap-ab-c2, swap-ab-128-fit, cols-fit or cols-fit-tma-store; got {n}",
                mkernel::TileConfig::ALL.map(|t| t.name()).join(", "),
                mkernel_kernels::gemm::FUSED_OTHER_TILES
            ))
        }),
    }
}

/// The first value of `values` that an earlier one equals (the list's first repeat).
pub fn first_repeat<T: PartialEq>(values: &[T]) -> Option<&T> {
    values.iter().enumerate().find(|&(i, v)| values[..i].contains(v)).map(|(_, v)| v)
}

/// --shape: each shape once (a repeated one would be timed, or planned, and written to the
/// JSON, twice).
pub fn check_unique_shapes(shapes: &[mkernel::GemmShape]) -> BenchResult<()> {
    match first_repeat(shapes) {
        Some(s) => Err(usage(format!("--shape {}x{}x{} is listed twice (each shape is run once)", s.m, s.n, s.k))),
        None => Ok(()),
    }
}

/// The shapes whose label or dimensions ("MxNxK") contain `filter` (all without one); an
/// error naming the labels when none does, so that a typo does not run nothing and write
/// an empty JSON.
pub fn filter_shapes(
    shapes: Vec<(String, mkernel::GemmShape)>,
    filter: Option<&str>,
) -> BenchResult<Vec<(String, mkernel::GemmShape)>> {
    filter_shapes_by(shapes, filter, |s| format!("{}x{}x{}", s.m, s.n, s.k))
}

/// [`filter_shapes`] for any kind of shape, whose dimensions `dims` writes.
pub fn filter_shapes_by<T>(shapes: Vec<(String, T)>, filter: Option<&str>, dims: impl Fn(&T) -> String) -> BenchResult<Vec<(String, T)>> {
    let Some(f) = filter else { return Ok(shapes) };
    let labels: Vec<String> = shapes.iter().map(|(l, _)| l.clone()).collect();
    let kept: Vec<_> = shapes.into_iter().filter(|(l, s)| l.contains(f) || dims(s).contains(f)).collect();
    if kept.is_empty() {
        return Err(usage(format!("--filter {f:?} matches no shape; the labels are: {}", labels.join(", "))));
    }
    Ok(kept)
}

/// Median of a sample (NaN-free by construction).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Times `iters` iterations of `step` on several streams (one per local rank): each
/// iteration is bracketed by events on every stream, and its time is the slowest
/// stream's. Returns every iteration's time in milliseconds.
pub fn time_iters_ms(
    streams: &[Arc<CudaStream>],
    warmup: usize,
    iters: usize,
    mut step: impl FnMut(usize) -> BenchResult<()>,
) -> BenchResult<Vec<f64>> {
    let mut t = time_rounds_ms(streams, Warmup { rounds: warmup, ms: 0 }, Ok, |_| Ok(()), iters, 1, |_, i| step(i))?;
    Ok(t.pop().unwrap_or_default())
}

/// Untimed rounds before the timed ones: `rounds`, then, while fewer than `ms`
/// milliseconds have passed since the first, blocks of [`WARMUP_BLOCK`] more.
#[derive(Clone, Copy, Debug)]
pub struct Warmup {
    pub rounds: usize,
    pub ms: u64,
}

/// Longest a round may take to enqueue behind its host gate (aligned timing); far above
/// any round's host time, far below a hang.
pub(super) const GATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Where in a round [`time_rounds_ms`] calls its `pace` hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Before the round's first step is enqueued (e.g. hold the GPUs behind a host gate).
    RoundStart,
    /// Before each step's start events (e.g. a device barrier of the ranks).
    Step,
    /// After the round's last step and its end events were enqueued (open the gate).
    RoundEnd,
}

/// A buffer twice the size of a GPU's L2 cache, zeroed on a stream before a timed step
/// so that every step starts with none of the previous step's lines in L2, whichever
/// step came before it (nvbench flushes L2 the same way before each measurement). On
/// 2 x H200 the fused kernel ran 1.5-3.6 us faster after another fused call than after
/// NCCL (bench/NOTES.md 12.2): without a flush a variant's time depends on its place in
/// the round.
pub struct L2Flush {
    buf: cudarc::driver::CudaSlice<u8>,
}

impl L2Flush {
    /// Allocates 2 x the L2 size of `stream`'s device (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`).
    pub fn new(stream: &Arc<CudaStream>) -> BenchResult<Self> {
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
        let l2 = stream.context().attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
        let bytes = 2 * usize::try_from(l2).map_err(|_| format!("L2 flush: the device reports an L2 of {l2} bytes"))?.max(1);
        Ok(Self { buf: stream.alloc_zeros::<u8>(bytes)? })
    }

    /// Enqueues the flush (a memset of the whole buffer) on `stream`.
    pub fn run(&mut self, stream: &Arc<CudaStream>) -> BenchResult<()> {
        Ok(stream.memset_zeros(&mut self.buf)?)
    }
}

/// The pacing of a fused benchmark's rounds ([`time_rounds_ms`]'s `pace`): each round held
/// behind a host gate per GPU while it is enqueued (none without gates), and each step
/// started after an L2 flush per stream (none without flushes) and, with gates, a device
/// barrier of the ranks (so a step is not charged for the skew the steps before it left).
pub struct StepAlignment {
    pub gates: Vec<mkernel::HostGate>,
    pub flushes: Vec<L2Flush>,
}

impl StepAlignment {
    /// Gates (`align`) and L2 flushes (`flush`) for the ranks of `comms` on `streams`.
    pub fn new(comms: &[mkernel::Communicator], streams: &[Arc<CudaStream>], align: bool, flush: bool) -> BenchResult<Self> {
        let gates = if align { comms.iter().map(|c| mkernel::HostGate::new(c.context())).collect::<Result<_, _>>()? } else { Vec::new() };
        let flushes = if flush { streams.iter().map(L2Flush::new).collect::<BenchResult<_>>()? } else { Vec::new() };
        Ok(Self { gates, flushes })
    }

    /// Whether every gate released its round in time (an expired gate let its round run as
    /// the host enqueued it: the round's times are not aligned).
    pub fn check_gates(&self) -> Result<(), String> {
        self.gates.iter().try_for_each(|g| g.check().map_err(|e| e.to_string()))
    }

    /// What happens at `at` of a round.
    pub fn pace(&mut self, at: Pace, comms: &[mkernel::Communicator], streams: &[Arc<CudaStream>]) -> BenchResult<()> {
        match at {
            Pace::RoundStart => {
                for (g, st) in self.gates.iter_mut().zip(streams.iter()) {
                    g.hold(st, GATE_TIMEOUT)?;
                }
            }
            Pace::Step => {
                for (f, st) in self.flushes.iter_mut().zip(streams.iter()) {
                    f.run(st)?;
                }
                if !self.gates.is_empty() {
                    for (r, cm) in comms.iter().enumerate() {
                        cm.device_barrier(&streams[r])?;
                    }
                }
            }
            Pace::RoundEnd => self.gates.iter_mut().for_each(|g| g.open()),
        }
        Ok(())
    }
}

/// The order in which round `round` runs its `variants` steps: a permutation drawn from a
/// generator seeded with the round's index alone, so every process of a multi-process run
/// draws the same one (their collective steps must match). ChaCha8, whose output rand
/// specifies (unlike `StdRng`'s), so separately built binaries draw the same orders too
/// (pinned by a test). Each variant follows each
/// other one equally often on average: on 2 x H200 a fused call ran 1.5-3.6 us faster
/// after another fused call than after NCCL, also with L2 flushed between the steps
/// (bench/NOTES.md 12.2), so a fixed order favours the variants placed late.
pub fn round_order(round: usize, variants: usize) -> Vec<usize> {
    use rand::{seq::SliceRandom, SeedableRng};
    let mut order: Vec<usize> = (0..variants).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6d6b_6e6c_0000_0000 ^ round as u64);
    order.shuffle(&mut rng);
    order
}

/// Rounds per warm-up block (between two checks of the time, after synchronizing).
pub const WARMUP_BLOCK: usize = 8;

/// Times `variants` kinds of step side by side: the untimed rounds of `warmup`, then
/// `iters` timed ones, round i running `step(v, k)` once for every variant v, in the
/// order [`round_order`]`(i, variants)`, with k = i x variants + the step's place in the
/// round (consecutive steps get consecutive k: a step may pick its input set by k), each
/// bracketed by its own events on every stream (one per local rank). Before each timed
/// warm-up block the streams are synchronized and `agree(this rank's verdict)` returns
/// the verdict every rank follows (with one process per GPU, rank 0's: every rank must
/// run the same rounds, whose collectives wait for each other; `Ok` where one process
/// drives every GPU). Interleaved this way every
/// variant runs under the same clocks: timed one after another, a later variant runs
/// on a hotter GPU, and near its power cap an H200 drops from 1980 MHz to ~1500 MHz
/// within a second of GEMMs (bench/NOTES.md 9.2). `pace(at)` runs at the points of
/// [`Pace`] of every round, warm-up included: `gemm-allreduce` (unless --no-align-ranks) holds each
/// round behind a host gate (so its steps run back to back whatever the host's launch
/// rate) and starts each step after a device barrier of the ranks (so a step does not
/// inherit the skew the steps before it left: a kernel that synchronises the ranks, like
/// the fused one, would otherwise be charged for it; bench/NOTES.md 11); `|_| Ok(())`
/// leaves the timing as it was. The first round is never gated (no `RoundStart` or
/// `RoundEnd`): it compiles and loads every kernel and sets up NCCL, work that may
/// synchronise a context or outlast a gate. `RoundEnd` follows a gated round's steps even
/// when one fails (an error must not leave the GPUs held). Returns, per variant, every
/// round's time in milliseconds (the slowest stream's).
#[allow(clippy::too_many_arguments)]
pub fn time_rounds_ms(
    streams: &[Arc<CudaStream>],
    warmup: Warmup,
    mut agree: impl FnMut(bool) -> BenchResult<bool>,
    mut pace: impl FnMut(Pace) -> BenchResult<()>,
    iters: usize,
    variants: usize,
    mut step: impl FnMut(usize, usize) -> BenchResult<()>,
) -> BenchResult<Vec<Vec<f64>>> {
    let start = std::time::Instant::now();
    let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    // events[stream][v * iters + i]: timed round i's events of variant v.
    let mut events: Vec<Vec<(CudaEvent, CudaEvent)>> = Vec::new();
    for s in streams {
        let ctx: &Arc<CudaContext> = s.context();
        let mut v = Vec::with_capacity(variants * iters);
        for _ in 0..variants * iters {
            v.push((ctx.new_event(timing)?, ctx.new_event(timing)?));
        }
        events.push(v);
    }
    // Round `r` (timed round `timed`, if any, whose steps are bracketed by their events):
    // its steps between its pace points (none for round 0); the round is closed
    // (RoundEnd) even when a step fails.
    let mut round = |r: usize, timed: Option<usize>, pace: &mut dyn FnMut(Pace) -> BenchResult<()>| -> BenchResult<()> {
        let mut body = |pace: &mut dyn FnMut(Pace) -> BenchResult<()>| -> BenchResult<()> {
            for (pos, v) in round_order(r, variants).into_iter().enumerate() {
                pace(Pace::Step)?;
                if let Some(i) = timed {
                    for (s, ev) in streams.iter().zip(&events) {
                        ev[v * iters + i].0.record(s)?;
                    }
                }
                step(v, r * variants + pos)?;
                if let Some(i) = timed {
                    for (s, ev) in streams.iter().zip(&events) {
                        ev[v * iters + i].1.record(s)?;
                    }
                }
            }
            Ok(())
        };
        if r == 0 {
            return body(pace);
        }
        pace(Pace::RoundStart)?;
        let result = body(pace);
        let end = pace(Pace::RoundEnd);
        result.and(end)
    };
    let mut warm = 0;
    while warm < warmup.rounds {
        round(warm, None, &mut pace)?;
        warm += 1;
    }
    if warmup.ms > 0 {
        loop {
            for s in streams {
                s.synchronize()?;
            }
            if !agree((start.elapsed().as_millis() as u64) < warmup.ms)? {
                break;
            }
            for _ in 0..WARMUP_BLOCK {
                round(warm, None, &mut pace)?;
                warm += 1;
            }
        }
    }
    for i in 0..iters {
        round(warm + i, Some(i), &mut pace)?;
    }
    let mut times = vec![vec![0f64; iters]; variants];
    for ev in &events {
        for (k, (a, b)) in ev.iter().enumerate() {
            b.synchronize()?;
            let t = &mut times[k / iters][k % iters];
            *t = t.max(a.elapsed_ms(b)? as f64);
        }
    }
    Ok(times)
}

/// Identification written into every JSON result.
#[derive(Serialize, Debug, Clone)]
pub struct RunInfo {
    pub device: String,
    pub gpus: usize,
    pub sm_count: u32,
    pub driver: String,
    pub nvrtc: String,
    pub commit: String,
    pub date: String,
}

pub fn run_info(ctx: &Arc<CudaContext>) -> BenchResult<RunInfo> {
    let mut drv = 0;
    // SAFETY: out-pointer to a local.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut drv) }.result()?;
    let nv = mkernel_kernels::jit::nvrtc_version().map(|(a, b)| format!("{a}.{b}")).unwrap_or_else(|_| "none".into());
    Ok(RunInfo {
        device: ctx.name()?,
        gpus: mkernel::device_count()?,
        sm_count: mkernel_kernels::driver::device_info(ctx)?.sm_count,
        driver: format!("CUDA driver API {}.{}", drv / 1000, (drv % 1000) / 10),
        nvrtc: nv,
        commit: env!("MKERNEL_GIT_COMMIT").to_string(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    })
}

/// `stream.alloc_zeros(len)`, whose failure (out of GPU memory, most likely) is the
/// library's [`mkernel::Error::Allocation`] naming the buffer, the shape and the size
/// instead of the driver's bare error code (helper-89: a shape no GPU can hold passes the
/// argument checks).
pub fn alloc<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
    label: &str,
    what: &str,
) -> BenchResult<cudarc::driver::CudaSlice<T>> {
    let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
    stream.alloc_zeros::<T>(len).map_err(|source| mkernel::Error::Allocation { what: alloc_what(label, what), bytes, source }.into())
}

/// What a failed [`alloc`] names: "WHAT for LABEL".
fn alloc_what(label: &str, what: &str) -> String {
    format!("{what} for {label}")
}

/// Unless --no-json: checks that --out-dir can be created and a file created in it (a
/// probe file, removed again, and the directories it had to create, so that a run that
/// fails later leaves nothing behind; [`write_json`] creates them again), so that an
/// unwritable directory fails before any GPU work rather than after all of it.
pub fn check_out_dir(c: &Common) -> BenchResult<()> {
    if c.no_json {
        return Ok(());
    }
    let dir = &c.out_dir;
    // The outermost directory of the path that does not exist yet.
    let mut created_top = None;
    let mut p = dir.as_path();
    while !p.as_os_str().is_empty() && !p.exists() {
        created_top = Some(p.to_path_buf());
        match p.parent() {
            Some(q) => p = q,
            None => break,
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| usage(format!("--out-dir {}: cannot create the directory ({e}); pass another or --no-json", dir.display())))?;
    // Unique per process: the ranks of `--procs` probe the same directory at once.
    let probe = dir.join(format!(".mkernel-write-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| usage(format!("--out-dir {}: cannot create a file there ({e}); pass another or --no-json", dir.display())))?;
    std::fs::remove_file(&probe).map_err(|e| format!("--out-dir {}: cannot remove the probe file {} ({e})", dir.display(), probe.display()))?;
    if let Some(top) = created_top {
        // (empty directories only: remove_dir refuses anything another process put there)
        let mut d = dir.to_path_buf();
        while std::fs::remove_dir(&d).is_ok() && d != top && d.pop() {}
    }
    Ok(())
}

/// What one step of a fused benchmark's round runs ([`time_fused_and_baseline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The fused call on every rank.
    Fused,
    /// The unfused baseline's computation alone (on every rank).
    Compute,
    /// The unfused baseline's communication alone (NCCL).
    Comm,
    /// The unfused baseline's step after its communication where it has one (the MoE
    /// combine's weighted sum: [`time_fused_and_baseline_steps`]); asked of no other bench.
    Sum,
}

/// Medians of a fused benchmark's variants, ms: the fused call, the baseline's computation
/// alone, the baseline (communication then computation) and its communication alone (the
/// last two NaN without a communication baseline).
#[derive(Debug, Clone, Copy)]
pub struct FusedTimes {
    pub fused: f64,
    pub compute: f64,
    pub baseline: f64,
    pub comm: f64,
}

/// Times a fused multi-rank call against its unfused baseline on the same streams, one
/// iteration of each variant per round in a random order ([`time_rounds_ms`]), each step
/// held behind a host gate per GPU, an L2 flush and a device barrier of the ranks
/// ([`StepAlignment`]); `run` enqueues one part on every rank. Variants: the fused call, the
/// computation alone, and with `with_comm` the communication then the computation, and the
/// communication alone. Synchronises every rank after, and fails naming `label` if a gate
/// was missed.
pub fn time_fused_and_baseline(
    comms: &[mkernel::Communicator],
    streams: &[Arc<CudaStream>],
    common: &Common,
    with_comm: bool,
    label: &str,
    run: impl FnMut(Part) -> BenchResult<()>,
) -> BenchResult<FusedTimes> {
    let steps: &[Part] = &[Part::Comm, Part::Compute];
    time_fused_and_baseline_steps(comms, streams, common, with_comm.then_some(steps), label, run)
}

/// [`time_fused_and_baseline`] with the baseline's steps in the order given (`baseline`: e.g.
/// the MoE combine's computation, communication then weighted sum); `None`: no communication
/// baseline (the fused call and the computation alone).
pub fn time_fused_and_baseline_steps(
    comms: &[mkernel::Communicator],
    streams: &[Arc<CudaStream>],
    common: &Common,
    baseline: Option<&[Part]>,
    label: &str,
    mut run: impl FnMut(Part) -> BenchResult<()>,
) -> BenchResult<FusedTimes> {
    let mut align = StepAlignment::new(comms, streams, true, true)?;
    let pace = |at: Pace| align.pace(at, comms, streams);
    let warmup = Warmup { rounds: common.warmup, ms: common.warmup_ms };
    let times = time_rounds_ms(streams, warmup, Ok, pace, common.iters, if baseline.is_some() { 4 } else { 2 }, |v, _| match v {
        0 => run(Part::Fused),
        1 => run(Part::Compute),
        2 => baseline.unwrap_or_default().iter().try_for_each(|&p| run(p)),
        _ => run(Part::Comm),
    })?;
    for (r, c) in comms.iter().enumerate() {
        c.synchronize(&streams[r])?;
    }
    align.check_gates().map_err(|e| format!("{label}: aligned timing: {e}"))?;
    let med = |i: usize| times.get(i).map_or(f64::NAN, |t| median(&mut t.clone()));
    Ok(FusedTimes { fused: med(0), compute: med(1), baseline: med(2), comm: med(3) })
}

/// The JSON of the fused multi-rank benchmarks (allgather-gemm, moe-dispatch-gemm,
/// moe-gemm-combine, ring-attention): the run, whether the ranks shared one GPU, a row per shape.
#[derive(Serialize)]
pub struct RanksReport<R: Serialize> {
    pub info: RunInfo,
    pub shared_gpu: bool,
    /// --iters, --warmup and --warmup-ms, as gemm's and gemm-allreduce's JSON record them.
    pub iters: usize,
    pub warmup: usize,
    pub warmup_ms: u64,
    pub rows: Vec<R>,
}

/// Writes a [`RanksReport`] as `stem` JSON under `--out-dir` (not with `--no-json`) and says where.
pub fn save_ranks_report<R: Serialize>(common: &Common, stem: &str, info: RunInfo, shared_gpu: bool, rows: Vec<R>) -> BenchResult<()> {
    if common.no_json {
        return Ok(());
    }
    let date = info.date.clone();
    let path = write_json(&common.out_dir, stem, &date, &RanksReport { info, shared_gpu, iters: common.iters, warmup: common.warmup, warmup_ms: common.warmup_ms, rows })?;
    println!("# wrote {}", path.display());
    Ok(())
}


/// Writes `value` as pretty JSON to `<dir>/<stem>-<date>.json` and returns the path.
pub fn write_json<T: Serialize>(dir: &std::path::Path, stem: &str, date: &str, value: &T) -> BenchResult<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{stem}-{}.json", date.replace(':', "")));
    std::fs::write(&path, serde_json::to_string_pretty(value)?)?;
    Ok(path)
}

/// Number of input sets to rotate so their total exceeds twice the L2 (50 MiB).
pub fn rotation_sets(bytes_per_set: u64) -> usize {
    let l2x2 = 2 * 50 * 1024 * 1024u64;
    (l2x2.div_ceil(bytes_per_set.max(1)) as usize).clamp(1, 4)
}

/// Test helper for every bench: `run` is given cheap arguments (one iteration, one shape)
/// and an `--out-dir` under a plain file, which no run can create; the error must name
/// `--out-dir` and the path, before any GPU is touched (a machine without one gets the
/// same error). `tag` keeps the benches' scratch files apart.
#[cfg(test)]
pub(crate) fn assert_out_dir_checked_first(tag: &str, run: impl FnOnce(&[std::ffi::OsString]) -> Result<(), String>) {
    let file = std::env::temp_dir().join(format!("mkernel-{tag}-out-dir-file-{}", std::process::id()));
    std::fs::write(&file, b"not a directory").unwrap();
    let bad = file.join("sub");
    // Cheap options, should the check ever come after the GPU work.
    let args: Vec<std::ffi::OsString> =
        ["x", "--iters", "1", "--warmup", "0", "--filter", "M=129", "--out-dir"].iter().map(Into::into).chain([bad.clone().into_os_string()]).collect();
    let e = run(&args);
    std::fs::remove_file(&file).unwrap();
    let e = e.unwrap_err();
    assert!(e.contains("--out-dir") && e.contains(&*bad.to_string_lossy()), "{e}");
}

/// Test helper: replays an exchange of [`mkernel::baseline::P2pBlocks`] on the host as
/// `Nccl::exchange_blocks` runs it (rank a's sends to b matched in listed order with b's
/// receives from a), copying each block of `send[a]` into `recv[b]`. Panics (a test's
/// failure) on unmatched blocks, a length mismatch or a receive range written twice.
#[cfg(test)]
pub(crate) fn replay_exchange<T: Copy>(blocks: &[mkernel::baseline::P2pBlocks], send: &[Vec<T>], recv: &mut [Vec<T>]) {
    let mut written: Vec<Vec<bool>> = recv.iter().map(|r| vec![false; r.len()]).collect();
    for a in 0..blocks.len() {
        for b in 0..blocks.len() {
            let sends = blocks[a].sends.iter().filter(|x| x.0 == b);
            let recvs = blocks[b].recvs.iter().filter(|x| x.0 == a);
            assert_eq!(sends.clone().count(), recvs.clone().count(), "rank {a} -> rank {b}: sends and receives");
            for (&(_, from, len), &(_, to, n)) in sends.zip(recvs) {
                assert_eq!(len, n, "rank {a} -> rank {b}: block lengths");
                assert!(written[b][to..to + len].iter().all(|w| !w), "rank {b}: a receive row written twice");
                written[b][to..to + len].fill(true);
                recv[b][to..to + len].copy_from_slice(&send[a][from..from + len]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        common: Common,
    }

    #[test]
    fn failed_allocations_name_the_shape_buffer_and_size() {
        // (helper-89: 65536 x 2097152 passes the argument checks; its C is 256 GiB)
        // (the size and the driver's error are `mkernel::Error::Allocation`'s: its tests)
        assert_eq!(alloc_what("shape 65536x2097152x8, rank 1", "C [M, N] bf16 (fused)"), "C [M, N] bf16 (fused) for shape 65536x2097152x8, rank 1");
    }

    /// A malformed name of a parameterised tile family gets that family's rule, naming the
    /// argument; a valid one parses; anything else gets the list of names.
    #[test]
    fn tile_names_of_a_family_report_its_rule() {
        let err = |n: &str| parse_tile(Some(n), true).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err("swap-ab-128x200-c2").contains("R a multiple of 16 in 128..=256"), "{}", err("swap-ab-128x200-c2"));
        assert!(err("swap-ab-64x12").contains("R a multiple of 8 in 8..=256"));
        assert!(err("swap-ab-128x56-tma-store").contains("in 64..=256"));
        assert!(err("cols-128x250").contains("C a multiple of 8 in 8..=120 or 136..=248"));
        assert!(err("cols-128x250").starts_with("--tile cols-128x250"));
        // Clustered column-fitted tiles: 48, 64, 72..=120 and 136..=248 (each CTA's half of B
        // whole 8-row swizzle atoms, overlapping by 8 rows at widths of 16j + 8), TMA store only.
        assert!(err("cols-128x250-tma-store-c2").contains("C = 48, 64, 72, 80, ..., 120 or 136, 144, ..., 248"), "{}", err("cols-128x250-tma-store-c2"));
        assert!(err("cols-128x56-tma-store-c2").contains("C = 48, 64, 72, 80, ..., 120 or"), "{}", err("cols-128x56-tma-store-c2"));
        assert!(err("cols-128x128-tma-store-c2").contains("or 136, 144, ..., 248"), "{}", err("cols-128x128-tma-store-c2"));
        for ok in ["cols-128x96-tma-store-c2", "cols-128x88-tma-store-c2", "cols-128x120-tma-store-c2", "cols-128x72-tma-store-c2", "cols-128x136-tma-store-c2", "cols-128x168-tma-store-c2", "cols-128x248-tma-store-c2"] {
            assert!(parse_tile(Some(ok), true).is_ok(), "{ok}");
        }
        assert!(err("cols-128x176-c2").contains("with the TMA store (-tma-store-c2)"), "{}", err("cols-128x176-c2"));
        // Tiles in clusters along N: a multiple of 16 in 48..=160, TMA store only.
        assert!(err("cols-128x72-tma-store-n2").contains("C a multiple of 16 in 48..=160"), "{}", err("cols-128x72-tma-store-n2"));
        let e = err("cols-128x96-n2");
        assert!(e.contains("'-n2' is not a suffix") && e.contains("-tma-store-n2 (C a multiple of 16 in 48..=160)"), "{e}");
        assert!(err("nonsense").contains("expected one of wide, narrow") && err("nonsense").contains("narrow-tma-store-n2"));
        // Near misses name the nearest tile; far ones do not guess.
        assert!(err("WIDE").starts_with("--tile WIDE: did you mean wide? expected one of"), "{}", err("WIDE"));
        assert!(err("narrow-tma-store-n4").contains("did you mean narrow-tma-store-n2?"), "{}", err("narrow-tma-store-n4"));
        assert!(err("cols-fit-tmastore").contains("did you mean cols-fit-tma-store?"), "{}", err("cols-fit-tmastore"));
        assert!(!err("nonsense").contains("did you mean"), "{}", err("nonsense"));
        // bench gemm-allreduce takes no fitted names, so it is not told one (helper-88).
        let e = parse_tile(Some("cols-fit-tmastore"), false).unwrap_err().to_string();
        assert!(!e.contains("did you mean cols-fit"), "{e}");
        // A zero-padded size is told the canonical name, not a range it is in (helper-88).
        for (bad, good) in [("cols-128x0144-tma-store", "cols-128x144-tma-store"), ("swap-ab-128x0208-tma-store-c2", "swap-ab-128x208-tma-store-c2")] {
            let e = err(bad);
            assert!(e.starts_with(&format!("--tile {bad}: write the size without leading zeros: {good}")), "{e}");
        }
        assert!(err("cols-128x0250").contains("C a multiple of 8 in 8..=120 or 136..=248"), "{}", err("cols-128x0250"));
        assert!(unknown_tile("--sweep-tiles", "cols-128x250", false).unwrap_err().starts_with("--sweep-tiles cols-128x250: a cols-128xC tile"));
        // A 128-row swapped name is not told the 64-row tiles' suffix rule.
        assert!(!err("swap-ab-128x136-foo").contains("not both") && err("swap-ab-64x8-foo").contains("-c2 (not both)"), "{}", err("swap-ab-128x136-foo"));
        // Argument errors are UsageErrors (exit status 2), as clap's own.
        let e = parse_tile(Some("WIDE"), true).unwrap_err();
        assert_eq!(exit_status(e.as_ref()), 2);
        let other: Box<dyn std::error::Error> = "no GPU".into();
        assert_eq!(exit_status(other.as_ref()), 1);
        assert!(check_unique_shapes(&[mkernel::GemmShape { m: 8, n: 8, k: 8 }; 2]).unwrap_err().to_string().contains("--shape 8x8x8 is listed twice"));
        assert!(check_unique_shapes(&[mkernel::GemmShape { m: 8, n: 8, k: 8 }, mkernel::GemmShape { m: 8, n: 8, k: 16 }]).is_ok());
        // A valid size with a suffix out of order or unknown blames the suffix (helper-44).
        for (bad, suffix) in [("swap-ab-128x144-c2-tma-store", "-c2-tma-store"), ("swap-ab-64x8-foo", "-foo"), ("cols-128x72-tma", "-tma")] {
            let e = err(bad);
            assert!(e.starts_with(&format!("--tile {bad}: '{suffix}' is not a suffix")) && e.contains("in that order"), "{e}");
        }
        for ok in ["swap-ab-128x208-tma-store-c2", "swap-ab-128x208-c2", "swap-ab-64x136", "cols-128x176-tma-store", "cols-128x176-tma-store-c2", "wide-tma-store-c2", "cols-128x96-tma-store-n2", "cols-128x48-tma-store-n2", "narrow-tma-store-n2"] {
            assert!(matches!(parse_tile(Some(ok), true), Ok(Some(_))), "{ok}");
        }
    }

    /// The round-robin timer gives every variant its own events and slot: a step that
    /// clears 16x the bytes of the others takes longer, in its own row, every round;
    /// `warmup_ms` keeps warming for at least that long. Needs a GPU (skips with the
    /// reason without one, fails instead under MKERNEL_REQUIRE_GPU=1).
    #[test]
    fn rounds_time_each_variant_in_its_own_slot() {
        let required = std::env::var("MKERNEL_REQUIRE_GPU").is_ok_and(|v| v == "1");
        let reason = match mkernel::device_count() {
            Ok(n) if n >= 1 => None,
            Ok(_) => Some("no GPU present".to_string()),
            Err(e) => Some(e.to_string()),
        };
        if let Some(reason) = reason {
            assert!(!required, "MKERNEL_REQUIRE_GPU=1 but {reason}");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("SKIP rounds_time_each_variant_in_its_own_slot: {reason}\n").as_bytes());
            return;
        }
        let stream = CudaContext::new(0).unwrap().new_stream().unwrap();
        const SMALL: usize = 16 << 20;
        let mut buf = stream.alloc_zeros::<u8>(16 * SMALL).unwrap();
        let (iters, variants) = (9, 3);
        let mut calls = vec![0usize; variants];
        let t = time_rounds_ms(std::slice::from_ref(&stream), Warmup { rounds: 2, ms: 0 }, |_| panic!("no timed warm-up"), |_| Ok(()), iters, variants, |v, i| {
            calls[v] += 1;
            assert!(i < (2 + iters) * variants, "step index {i}");
            let bytes = if v == 1 { 16 * SMALL } else { SMALL };
            stream.memset_zeros(&mut buf.slice_mut(..bytes))?;
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, vec![2 + iters; variants], "every variant once per round");
        assert_eq!(t.iter().map(Vec::len).collect::<Vec<_>>(), vec![iters; variants]);
        for round in 0..iters {
            assert!(t[1][round] > 4.0 * t[0][round].max(t[2][round]), "round {round}: {:?}", t.iter().map(|v| v[round]).collect::<Vec<_>>());
        }
        // Timed warm-up: whole blocks, the time checked after synchronizing, until 30 ms.
        let (start, mut checks, mut steps) = (std::time::Instant::now(), 0, 0);
        let warm = Warmup { rounds: 3, ms: 30 };
        let t = time_rounds_ms(std::slice::from_ref(&stream), warm, |go| { checks += 1; Ok(go) }, |_| Ok(()), 1, 1, |_, _| {
            steps += 1;
            Ok(stream.memset_zeros(&mut buf)?)
        })
        .unwrap();
        assert!(start.elapsed().as_millis() >= 30 && t[0].len() == 1, "{:?} {t:?}", start.elapsed());
        assert_eq!(steps, 3 + (checks - 1) * WARMUP_BLOCK + 1, "{checks} checks");
    }

    /// Every round runs each variant once; the order is the same for a round index
    /// whoever draws it (the processes of a run), and it varies: over many rounds every
    /// variant leads, and every variant follows every other one.
    #[test]
    fn round_order_is_a_shared_permutation_that_varies() {
        let v = 6;
        let mut first = vec![0usize; v];
        let mut follows = vec![vec![0usize; v]; v];
        for r in 0..600 {
            let o = round_order(r, v);
            assert_eq!(o, round_order(r, v), "round {r}: not reproducible");
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..v).collect::<Vec<_>>(), "round {r}: {o:?}");
            first[o[0]] += 1;
            for w in o.windows(2) {
                follows[w[1]][w[0]] += 1;
            }
        }
        // 600 rounds: 100 leads per variant and 100 per ordered pair expected (each of the
        // 5 adjacent pairs of a round is a given ordered pair with probability 1/30).
        assert!(first.iter().all(|&n| (50..=150).contains(&n)), "leads {first:?}");
        for (b, row) in follows.iter().enumerate() {
            for (a, &n) in row.iter().enumerate() {
                assert!(a == b || (40..=130).contains(&n), "{b} after {a}: {n} times; {follows:?}");
            }
        }
        assert_eq!(round_order(0, 1), vec![0]);
        assert!(round_order(0, 0).is_empty());
        // Pinned: processes built apart (a launcher on several hosts) must draw these.
        assert_eq!([round_order(0, 6), round_order(1, 6), round_order(2, 6)], [[4, 5, 0, 2, 1, 3], [1, 0, 5, 4, 2, 3], [0, 2, 1, 3, 5, 4]].map(Vec::from));
    }

    /// What `time_rounds_ms` calls, in order, with no stream (no GPU needed).
    #[derive(Debug, Clone, PartialEq)]
    enum Call {
        Pace(Pace),
        Step(usize, usize),
    }

    /// The calls of a run of `warm` untimed and `iters` timed rounds of `variants`
    /// steps; `fail_at`: the n-th step (1-based) fails.
    fn calls(warm: usize, iters: usize, variants: usize, fail_at: Option<usize>) -> (BenchResult<Vec<Vec<f64>>>, Vec<Call>) {
        let log = std::cell::RefCell::new(Vec::new());
        let mut n = 0usize;
        let r = time_rounds_ms(&[], Warmup { rounds: warm, ms: 0 }, Ok, |p| {
            log.borrow_mut().push(Call::Pace(p));
            Ok(())
        }, iters, variants, |v, k| {
            log.borrow_mut().push(Call::Step(v, k));
            n += 1;
            if Some(n) == fail_at {
                return Err("step failed".into());
            }
            Ok(())
        });
        (r, log.into_inner())
    }

    /// Every round but the first is gated (RoundStart ... RoundEnd), warm-up and timed
    /// alike; every step follows a Step pace point and runs once per round in the round's
    /// order with k = round x variants + its place; the first round is never gated.
    #[test]
    fn rounds_pace_their_steps_in_the_drawn_order_with_consecutive_indices() {
        let (warm, iters, variants) = (3, 4, 5);
        let (r, log) = calls(warm, iters, variants, None);
        assert_eq!(r.unwrap().len(), variants);
        let mut expected = Vec::new();
        for round in 0..warm + iters {
            if round > 0 {
                expected.push(Call::Pace(Pace::RoundStart));
            }
            for (pos, v) in round_order(round, variants).into_iter().enumerate() {
                expected.push(Call::Pace(Pace::Step));
                expected.push(Call::Step(v, round * variants + pos));
            }
            if round > 0 {
                expected.push(Call::Pace(Pace::RoundEnd));
            }
        }
        assert_eq!(log, expected);
        // No warm-up: the first timed round is round 0, ungated.
        assert_eq!(calls(0, 2, 3, None).1.first(), Some(&Call::Pace(Pace::Step)));
    }

    /// A failing step still closes its gated round (the GPUs must not stay held), and the
    /// run stops there; a failure in the ungated first round has no round to close.
    #[test]
    fn a_failed_step_still_closes_its_round() {
        for fail in [2 * 4 + 2, 5 * 4 + 3] {
            let (r, log) = calls(3, 4, 4, Some(fail));
            assert!(r.is_err());
            assert_eq!(log.last(), Some(&Call::Pace(Pace::RoundEnd)), "step {fail}: {log:?}");
            assert_eq!(log.iter().filter(|c| matches!(c, Call::Step(..))).count(), fail);
        }
        let (r, log) = calls(3, 4, 4, Some(1));
        assert!(r.is_err() && !log.contains(&Call::Pace(Pace::RoundEnd)), "{log:?}");
    }

    /// The error of parsing `args` (after the program name), or "" when they parse.
    fn parse_err(args: &[&str]) -> String {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn iters_and_warmup_name_their_range_also_when_negative() {
        let cli = Cli::try_parse_from(["x", "--iters", "100000", "--warmup", "0"]).unwrap();
        assert_eq!((cli.common.iters, cli.common.warmup), (100_000, 0));
        let cli = Cli::try_parse_from(["x", "--warmup", "100000"]).unwrap();
        assert_eq!((cli.common.iters, cli.common.warmup), (30, 100_000));
        for bad in ["-5", "0", "100001"] {
            let e = parse_err(&["--iters", bad]);
            assert!(e.contains("--iters") && e.contains("1..=100000") && e.contains(bad), "{bad}: {e}");
        }
        for bad in ["-1", "100001"] {
            let e = parse_err(&["--warmup", bad]);
            assert!(e.contains("--warmup") && e.contains("0..=100000") && e.contains(bad), "{bad}: {e}");
        }
    }

    /// The shared flags' help is each bench's own: --check names what that bench checks
    /// against and --filter the dimensions its shapes are written in (before: ring attention's
    /// and the MoE benches' said "fp32 reference" and "MxNxK"); --warmup-ms is every timing
    /// bench's (before: it said "bench gemm and gemm-allreduce"), and proxy-stream's help says
    /// it refuses the three.
    #[test]
    fn shared_flags_help_is_each_benchs_own() {
        #[derive(Parser)]
        struct Benches {
            #[command(subcommand)]
            cmd: BenchCmd,
        }
        let mut cmd = <Benches as clap::CommandFactory>::command();
        cmd.build();
        cmd.clone().debug_assert();
        let mut seen = Vec::new();
        // (clap adds a `help` subcommand)
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let name = sub.get_name();
            let help = |id: &str| sub.get_arguments().find(|a| a.get_id() == id).and_then(|a| a.get_help()).map(|h| h.to_string()).unwrap_or_else(|| panic!("{name}: no help for {id}"));
            let (check, filter, warmup_ms) = (help("check"), help("filter"), help("warmup_ms"));
            match name {
                "gemm" | "gemm-allreduce" | "gemm-reduce-scatter" | "allgather-gemm" => {
                    assert!(check.contains("fp32 reference") && filter.contains("MxNxK"), "{name}: {check} / {filter}");
                }
                "ring-attention" => {
                    assert!(check.contains("unfused attention") && check.contains("fp64") && !check.contains("fp32"), "{name}: {check}");
                    assert!(filter.contains("BxSxHxHKVxD[c|cz]") && !filter.contains("MxNxK"), "{name}: {filter}");
                }
                "moe-dispatch-gemm" | "moe-gemm-combine" => {
                    assert!(check.contains("routing") && !check.contains("fp32"), "{name}: {check}");
                    assert!(filter.contains("M = tokens x topk"), "{name}: {filter}");
                }
                "proxy-stream" => {
                    for h in [&check, &filter, &warmup_ms] {
                        assert!(h.starts_with("Refused: bench proxy-stream"), "{name}: {h}");
                    }
                }
                other => panic!("a bench this test does not know: {other}"),
            }
            if name != "proxy-stream" {
                assert!(warmup_ms.starts_with("After --warmup, further untimed rounds") && !warmup_ms.contains("gemm-allreduce"), "{name}: {warmup_ms}");
            }
            seen.push(name.to_string());
        }
        assert_eq!(seen.len(), 8, "{seen:?}");
        assert!(moe_combine_check_help().contains(&format!("first {} tokens", moe_gemm_combine::CHECK_TOKENS)));
    }

    /// A fresh path under the temp directory (not created).
    fn temp_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("mkernel-{name}-{}", std::process::id()))
    }

    /// The JSON of the fused multi-rank benches (all-gather, MoE, ring attention) says how
    /// they were warmed and timed, as gemm's and gemm-allreduce's does.
    #[test]
    fn ranks_report_records_iters_and_warm_up() {
        let dir = temp_path("ranks-report");
        let cli = Cli::try_parse_from(["x", "--iters", "7", "--warmup", "3", "--warmup-ms", "1500", "--out-dir", dir.to_str().unwrap()]).unwrap();
        let info = RunInfo { device: "none".into(), gpus: 2, sm_count: 132, driver: "-".into(), nvrtc: "-".into(), commit: "-".into(), date: "2026-01-01T00:00:00Z".into() };
        save_ranks_report(&cli.common, "ranks-test", info, true, vec![1u32]).unwrap();
        let path = dir.join("ranks-test-2026-01-01T000000Z.json");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!((v["iters"].as_u64(), v["warmup"].as_u64(), v["warmup_ms"].as_u64(), v["shared_gpu"].as_bool()), (Some(7), Some(3), Some(1500), Some(true)), "{v}");
    }

    #[test]
    fn out_dir_is_probed_and_left_clean() {
        let file = temp_path("out-dir-file");
        std::fs::write(&file, b"not a directory").unwrap();
        let bad = file.join("sub");
        let cli = Cli::try_parse_from(["x".as_ref(), "--out-dir".as_ref(), bad.as_os_str()]).unwrap();
        let e = check_out_dir(&cli.common).unwrap_err().to_string();
        assert!(e.contains("--out-dir") && e.contains(&*bad.to_string_lossy()), "{e}");
        // --no-json writes nothing, so nothing is probed.
        let cli = Cli::try_parse_from(["x".as_ref(), "--out-dir".as_ref(), bad.as_os_str(), "--no-json".as_ref()]).unwrap();
        assert!(check_out_dir(&cli.common).is_ok());
        std::fs::remove_file(&file).unwrap();

        let good = temp_path("out-dir-good").join("nested");
        let cli = Cli::try_parse_from(["x".as_ref(), "--out-dir".as_ref(), good.as_os_str()]).unwrap();
        check_out_dir(&cli.common).unwrap();
        // (helper-44: a run that then failed left an empty bench/results behind)
        assert!(!good.parent().unwrap().exists(), "the directories the probe created are left behind");
        // An existing directory stays, empty.
        std::fs::create_dir_all(&good).unwrap();
        check_out_dir(&cli.common).unwrap();
        assert_eq!(std::fs::read_dir(&good).unwrap().count(), 0, "the probe file is left behind");
        std::fs::remove_dir_all(good.parent().unwrap()).unwrap();
    }

    #[test]
    fn filter_keeps_matches_and_refuses_no_match() {
        let shapes = gemm_allreduce::shapes();
        let all = shapes.len();
        assert_eq!(filter_shapes(shapes.clone(), None).unwrap().len(), all);
        assert!(filter_shapes(shapes.clone(), Some("M=129")).unwrap().iter().all(|(l, _)| l.contains("M=129")));
        // (the dimensions match too: the down projections, K = 14336)
        let down = filter_shapes(shapes.clone(), Some("x8192x14336")).unwrap();
        assert!(down.len() == 5 && down.iter().all(|(l, s)| l.contains("down") && s.k == 14336), "{down:?}");
        let e = filter_shapes(shapes, Some("nomatch")).unwrap_err().to_string();
        assert!(e.contains("--filter") && e.contains("nomatch") && e.contains("odd M=129"), "{e}");
    }
}
