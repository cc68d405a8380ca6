//! `mkernel plan`: what a call of each shape would run, without a GPU. The plain GEMM's
//! tile, last-wave split and grid (`mkernel::plan_gemm`), the fused GEMM + all-reduce's
//! tile, path and SM partition (`mkernel::plan_gemm_allreduce`), the other fused calls'
//! (reduce-scatter, all-gather, MoE dispatch, MoE combine, ring attention), on a described machine
//! (SMs per GPU, world size): the default rules (`TileConfig::choose_for` and the split
//! rules; `FusedConfig`'s) or the overrides given, checked as the calls check them. For
//! seeing which tile a model's layers take before a GPU is at hand, and for reviewing a
//! change to the rules: the output of two commits, diffed, is every plan it changes.

use clap::{Args, Subcommand};
use mkernel::{AttentionShape, Collective, CommConfig, CommPath, EpiloguePace, GemmAllReduceOptions, GemmOptions, GemmShape, LastWaveSplit, PlanContext, RingAttentionOptions};
use serde::Serialize;

use crate::bench::{self, usage, BenchResult};

#[derive(Subcommand)]
pub enum PlanCmd {
    /// The plain GEMM on one GPU (`mkernel::gemm`, or `mkernel::gemm_with_workspace` with
    /// --workspace-bytes): tile, last-wave split, grid.
    Gemm(PlanGemmArgs),
    /// The fused GEMM + all-reduce (`Communicator::gemm_allreduce`): tile, communication
    /// path, SM partition, last-wave split.
    GemmAllreduce(PlanArArgs),
    /// The fused GEMM + reduce-scatter (`Communicator::gemm_reduce_scatter`), as
    /// gemm-allreduce (bench gemm-reduce-scatter's list; --models leaves out M = 1).
    GemmReduceScatter(PlanArArgs),
    /// The fused all-gather + GEMM (`Communicator::allgather_gemm`; M all ranks' rows): tile,
    /// push and compute CTAs, chunk rows (bench allgather-gemm's list).
    AllgatherGemm(PlanAgArgs),
    /// The fused MoE dispatch + grouped GEMM (`Communicator::moe_dispatch_gemm`): tile, push and
    /// compute CTAs, chunk tokens, receive capacity and the workspace it needs (bench
    /// moe-dispatch-gemm's shapes; M: the rows a rank gets from an even routing, tokens x topk).
    MoeDispatchGemm(PlanMoeArgs),
    /// The fused MoE grouped GEMM + combine (`Communicator::moe_gemm_combine`): tile, push and
    /// compute CTAs, receive capacity and the workspace it needs (bench moe-gemm-combine's
    /// shapes: N the hidden size, K the experts' intermediate size; M: the rows a rank's experts
    /// compute under an even routing, tokens x topk). No --chunk-rows: the combine has no chunks.
    MoeGemmCombine(PlanMoeArgs),
    /// Ring attention (`Communicator::ring_attention`): push and compute CTAs, chunk rows,
    /// units (128 query rows of one sequence and head, 192 at D = 64; zigzag: of one half of
    /// the shard), the workspace it needs and each rank's FLOPs (the causal imbalance of
    /// contiguous shards; zigzag's balance) (bench ring-attention's shapes).
    RingAttention(PlanRaArgs),
}

/// The flags every plan takes: the machine's SMs, which shapes, printed how.
#[derive(Args, Clone, Debug)]
pub struct PlanBase {
    /// SMs per GPU (132 on the H100 SXM and H200), 2 to 65536; with --gpu-shared (the fused
    /// plans) the CTAs of each rank's share of its GPU, by default 132 / --world-size (every
    /// rank on one GPU, as `bench --share-gpu` runs them); else 132 by default.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(2..=mkernel::MAX_PLAN_GRID as i64))]
    pub sms: Option<u32>,
    /// Plan only the shapes whose label or dimensions (MxNxK, e.g. "2048x8192"; the MoE plans:
    /// an even routing's, M = tokens x topk; ring-attention: BxSxHxHKVxD[c|cz]) contain this
    /// text, case-sensitive.
    #[arg(long)]
    pub filter: Option<String>,
    /// Print one JSON object instead of the text: "context" (the machine, world size and
    /// overrides planned for) and "plans" (a record per shape; a refused shape has "refused").
    #[arg(long)]
    pub json: bool,
}

/// [`PlanBase`] and the shapes to plan instead of the bench's list.
#[derive(Args, Clone, Debug)]
pub struct PlanInputs {
    #[command(flatten)]
    pub base: PlanBase,
    /// Plan these shapes (MxNxK, comma-separated or repeated; K each rank's shard for
    /// gemm-allreduce and gemm-reduce-scatter, M all ranks' rows for allgather-gemm) instead
    /// of the bench's list (bench gemm's, gemm-allreduce's, gemm-reduce-scatter's or
    /// allgather-gemm's).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, value_parser = bench::parse_gemm_shape)]
    pub shape: Vec<GemmShape>,
}

/// The communicator an all-gather's, an MoE dispatch's or combine's plan is for.
#[derive(Args, Clone, Debug)]
pub struct PlanRanks {
    /// Ranks of the communicator, 2 to 8.
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(2..=8))]
    pub world_size: u32,
    /// Some GPU holds more than one rank (--sms is then each rank's share).
    #[arg(long)]
    pub gpu_shared: bool,
    /// `CommConfig::max_output_elems` (1 to 2^37): holds the all-gather's gathered A (M x K),
    /// the MoE dispatch's receive buffer (recv_capacity x K) and counts, the MoE combine's
    /// slots (max_tokens x topk x N), out (recv_capacity x N) and map, or ring attention's
    /// gathered keys and values (world x 2 x B x S x Hkv x D). Default: ring-attention and
    /// the MoE plans size it as their bench does, for the largest of the planned shapes (at
    /// the receive capacity given, else the worst case); allgather-gemm takes CommConfig's.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS))]
    pub max_output_elems: Option<u64>,
}

impl PlanRanks {
    /// The SMs a rank plans for (`plan_sms`), the workspace's elements (--max-output-elems,
    /// else `default(world size)`) and the plan context.
    fn context(&self, sms: Option<u32>, default: impl FnOnce(u32) -> u64) -> BenchResult<(u32, u64, PlanContext)> {
        let max_output_elems = self.max_output_elems.unwrap_or_else(|| default(self.world_size));
        let sms = plan_sms(sms, self.gpu_shared, self.world_size);
        let ctx = PlanContext::new(self.world_size, sms, self.gpu_shared, max_output_elems).map_err(|e| usage(e.to_string()))?;
        Ok((sms, max_output_elems, ctx))
    }
}

#[derive(Args, Clone, Debug)]
pub struct PlanAgArgs {
    #[command(flatten)]
    pub inputs: PlanInputs,
    /// Force a tile of the all-gather's catalog: one of the 10 unswapped catalog tiles (wide,
    /// narrow, m64-wide, each also -tma-store, m64-narrow-tma-store, wide-tma-store-c2,
    /// narrow-tma-store-c2, m64-wide-tma-store-c2) or a column-fitted TMA-store tile
    /// (cols-128xC-tma-store, cols-128xC-tma-store-c2); no swapped-operand tile.
    #[arg(long)]
    pub tile: Option<String>,
    #[command(flatten)]
    pub ranks: PlanRanks,
    /// Force the push CTAs per rank: a positive multiple of the tile's cluster size (2 for
    /// the -c2 tiles, which the default may be; force an unclustered --tile for odd counts)
    /// below the rank's CTAs.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32))]
    pub push_ctas: Option<u32>,
    /// Force the rows of a shard per arrival flag (at least 1; more than a rank's M / world
    /// rows: one chunk a shard).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32))]
    pub chunk_rows: Option<u32>,
}

#[derive(Args, Clone, Debug)]
pub struct PlanRaArgs {
    #[command(flatten)]
    pub base: PlanBase,
    #[command(flatten)]
    pub ranks: PlanRanks,
    /// Plan these shapes (BxSxHxHKVxD with S a rank's positions, `c` for causal over
    /// contiguous shards, `cz` over zigzag ones, S even; comma-separated or repeated) instead
    /// of bench ring-attention's list.
    #[arg(long, value_delimiter = ',', value_parser = bench::parse_attention_shape_syntax)]
    pub shape: Vec<AttentionShape>,
    /// Force the push CTAs per rank (at least 1, below the rank's CTAs).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32))]
    pub push_ctas: Option<u32>,
    /// Force the positions of a sequence per arrival flag (at least 1).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32))]
    pub chunk_rows: Option<u32>,
}

#[derive(Args, Clone, Debug)]
pub struct PlanMoeArgs {
    #[command(flatten)]
    pub base: PlanBase,
    #[command(flatten)]
    pub ranks: PlanRanks,
    #[command(flatten)]
    pub shape: bench::MoeShapeArgs,
    /// Force the receive capacity, rows (a positive multiple of 128; default: the worst case;
    /// the combine's: the dispatch's it follows, h's rows).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32))]
    pub recv_capacity: Option<u32>,
}

/// Options plan gemm, gemm-allreduce and gemm-reduce-scatter take.
#[derive(Args, Clone, Debug)]
pub struct PlanCommon {
    #[command(flatten)]
    pub inputs: PlanInputs,
    /// Plan the linear layers of `bench gemm --models`'s models instead (Llama-3-8B/70B and
    /// Qwen2.5-32B; plan gemm: every projection at TP 1-8 and M = 1-4096, and DeepSeek-V3's
    /// experts and router; plan gemm-allreduce and gemm-reduce-scatter: the row-parallel o
    /// and down projections at TP = --world-size, 2, 4 or 8, and M = 1-16384, the
    /// reduce-scatter's those whose M the world size divides).
    #[arg(long, conflicts_with = "shape")]
    pub models: bool,
    /// Force a tile: a catalog name, as the benches' --tile takes (listed by `mkernel bench
    /// gemm --help` and `mkernel bench gemm-allreduce --help`); not bench gemm's fitted
    /// names (swap-ab, cols-fit, ...). Default: the rules' tile per shape.
    #[arg(long)]
    pub tile: Option<String>,
    /// K-slices per tile of the last wave: auto (the default: the split rules), off (the
    /// default tile, unsplit) or a count, 1 or more (the default's unclustered twin, since
    /// clusters never split: so 1 may differ from off; plan gemm: 2 or more needs
    /// --workspace-bytes, as only mkernel::gemm_with_workspace takes a count).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_split_last_wave)]
    pub split_last_wave: Option<LastWaveSplit>,
}

#[derive(Args, Clone, Debug)]
pub struct PlanGemmArgs {
    #[command(flatten)]
    pub common: PlanCommon,
    /// Plan `mkernel::gemm_with_workspace` with a workspace of this many bytes of slots (at
    /// least 4) instead of `mkernel::gemm`, which sizes its own as the split rules need.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(4..))]
    pub workspace_bytes: Option<u64>,
}

#[derive(Args, Clone, Debug)]
pub struct PlanArArgs {
    #[command(flatten)]
    pub common: PlanCommon,
    /// Ranks of the communicator, 1 to 8.
    #[arg(long, default_value_t = 2, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub world_size: u32,
    /// Some GPU holds more than one rank (as `bench gemm-allreduce --share-gpu`): no
    /// epilogue path or tail CTAs by default. --sms is then each rank's share.
    #[arg(long)]
    pub gpu_shared: bool,
    /// `CommConfig::max_output_elems`: the largest M x N the workspace holds (1 to 2^37;
    /// default CommConfig's, 16384 x 8192). Its split scratch bounds the last-wave split.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS))]
    pub max_output_elems: Option<u64>,
    /// Force the communication path: epilogue, one-shot, reduce, push, tma, vec16, scalar
    /// or local (one rank); gemm-reduce-scatter: epilogue, vec16, scalar or local only.
    /// Default: as the calls choose (bench gemm-allreduce --help).
    #[arg(long)]
    pub comm_path: Option<String>,
    /// Force the number of communication CTAs, 1 to --sms - 1. Without --comm-path, the
    /// path is then one that has them (one-shot for 2 ranks; gemm-reduce-scatter: vec16,
    /// or scalar for N % 8 != 0), never epilogue.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub sm_comm: Option<u32>,
    /// Force the number of tail CTAs (one-shot, reduce and push paths), 0 to --sms.
    /// Without --comm-path, the path is then one that has them, as with --sm-comm.
    /// gemm-reduce-scatter: refused (none of its paths takes tail CTAs).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32))]
    pub tail_ctas: Option<u32>,
    /// The epilogue path's pacing: clock (default) or sleep.
    #[arg(long)]
    pub epilogue_pace: Option<String>,
}

fn parse_split_last_wave(v: &str) -> Result<LastWaveSplit, String> {
    LastWaveSplit::parse(v).map_err(|e| e.to_string())
}

/// What was planned for: printed first, and the JSON's "context", so that a saved plan
/// says what it is a plan of.
#[derive(Serialize, Debug)]
struct PlanContextRow {
    op: &'static str,
    sms: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    world_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_shared: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_elems: Option<u64>,
    /// Where max_output_elems was not given: sized as the bench sizes it for the planned
    /// shapes (ring-attention, the MoE plans), not CommConfig's default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    bench_sized_workspace: bool,
    /// plan gemm: the workspace's bytes (`None`: mkernel::gemm's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace_bytes: Option<u64>,
    /// The overriding flags given, as given ("" for none).
    overrides: String,
}

/// A planned shape's dimensions (the JSON's fields: m, n, k; or the attention's).
#[derive(Serialize, Debug, PartialEq, Clone, Copy)]
#[serde(untagged)]
enum Dims {
    Gemm { m: u32, n: u32, k: u32 },
    Attention {
        batch: u32,
        seq: u32,
        heads: u32,
        kv_heads: u32,
        head_dim: u32,
        mask: &'static str,
        #[serde(skip)]
        shape: AttentionShape,
    },
}

impl Dims {
    fn gemm(s: GemmShape) -> Self {
        Dims::Gemm { m: s.m, n: s.n, k: s.k }
    }

    fn attention(s: AttentionShape) -> Self {
        Dims::Attention { batch: s.batch, seq: s.seq, heads: s.heads, kv_heads: s.kv_heads, head_dim: s.head_dim, mask: s.mask_name(), shape: s }
    }

    /// As a shape is written (MxNxK; an attention's as `--shape` takes it).
    fn text(&self) -> String {
        match self {
            Dims::Gemm { m, n, k } => format!("{m}x{n}x{k}"),
            Dims::Attention { shape, .. } => bench::attention_tag(shape),
        }
    }
}

/// One shape's plan, or its refusal, as printed and as written with --json.
#[derive(Serialize, Debug, PartialEq)]
struct PlanRow {
    label: String,
    #[serde(flatten)]
    dims: Dims,
    #[serde(flatten)]
    planned: Option<Planned>,
    /// Why the call would be refused (an argument error naming the argument and rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<String>,
}

#[derive(Serialize, Debug, PartialEq)]
struct Planned {
    /// The tile (plan ring-attention: the kernel's name).
    tile: String,
    /// K-slices per tile left over after the full waves (1: no split).
    split_slices: u32,
    /// Tiles of the output (with the padding of whole clusters; plan ring-attention: units of
    /// `block_m` query rows: 128 at D = 128, 192 at D = 64).
    tiles: u64,
    /// CTAs of the GEMM's launch: plan gemm and the one-rank local path, the plain GEMM's
    /// (one per tile up to the SMs); fused, compute plus communication CTAs, without tail CTAs.
    grid: u32,
    /// Fused only: the communication path, its CTAs and tail CTAs.
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comm_ctas: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tail_ctas: Option<u32>,
    /// The whole configuration as the benchmarks print it.
    config: String,
    /// The two numbers to write down before a run (`bench::floors`): 2 M N K at the
    /// measured matrix rate, us; and the bytes over the measured bandwidth, us: plan gemm,
    /// A, B and C once over HBM; plan gemm-allreduce, one rank's all-reduce bytes over NVLink.
    floor_compute_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    floor_hbm_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    floor_link_us: Option<f64>,
    /// plan ring-attention: the workspace's elements the call needs, and the least and the
    /// most FLOPs of a rank (`AttentionShape::flops`).
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace_elems: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rank_flops: Option<[f64; 2]>,
}

impl Planned {
    /// The plan of a kernel whose first `push_ctas` CTAs push (the all-gather's, the MoE
    /// dispatch's): no split, no path, no tail CTAs; `config` as printed, the floors in us.
    fn pushing(tile: mkernel::TileConfig, grid: u32, push_ctas: u32, tiles: u64, config: String, floor_compute_us: f64, floor_link_us: f64) -> Self {
        Planned {
            tile: tile.name(),
            split_slices: 1,
            tiles,
            grid,
            path: None,
            comm_ctas: Some(push_ctas),
            tail_ctas: None,
            config,
            floor_compute_us,
            floor_hbm_us: None,
            floor_link_us: Some(floor_link_us),
            workspace_elems: None,
            rank_flops: None,
        }
    }
}

/// The floors as the text output ends a row (below 0.05 us, in significant digits).
fn floors_note(p: &Planned) -> String {
    let us = |v: f64| if v > 0.0 && v < 0.05 { format!("{v:.2e}") } else { format!("{v:.1}") };
    let mut s = format!("; floors: compute {} us", us(p.floor_compute_us));
    if let Some(h) = p.floor_hbm_us {
        s += &format!(", HBM {} us", us(h));
    }
    if let Some(l) = p.floor_link_us {
        s += &format!(", link {} us", us(l));
    }
    s
}

#[derive(Serialize, Debug)]
struct PlanOutput {
    context: PlanContextRow,
    plans: Vec<PlanRow>,
}

pub fn run(cmd: PlanCmd) -> BenchResult<()> {
    let (out, json) = match cmd {
        PlanCmd::Gemm(a) => (plan_gemm_rows(&a)?, a.common.inputs.base.json),
        PlanCmd::GemmAllreduce(a) => (plan_fused_rows(&a, Collective::AllReduce)?, a.common.inputs.base.json),
        PlanCmd::GemmReduceScatter(a) => (plan_fused_rows(&a, Collective::ReduceScatter)?, a.common.inputs.base.json),
        PlanCmd::AllgatherGemm(a) => (plan_allgather_rows(&a)?, a.inputs.base.json),
        PlanCmd::MoeDispatchGemm(a) => (plan_moe_rows(&a)?, a.base.json),
        PlanCmd::MoeGemmCombine(a) => (plan_moe_combine_rows(&a)?, a.base.json),
        PlanCmd::RingAttention(a) => (plan_ring_attention_rows(&a)?, a.base.json),
    };
    let text = if json { serde_json::to_string_pretty(&out)? + "\n" } else { render(&out) };
    // (a reader that stops early, `| head`, is not an error)
    match std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    refusals(&out.plans)
}

/// The text output: a context line, then a line per shape.
fn render(out: &PlanOutput) -> String {
    let c = &out.context;
    let mut s = format!("# plan {}: {} SMs", c.op, c.sms);
    if let Some(w) = c.world_size {
        s += &format!(", world size {w}, {}", if c.gpu_shared == Some(true) { "ranks sharing a GPU (--sms: a rank's share)" } else { "a GPU per rank" });
    }
    if let Some(e) = c.max_output_elems {
        if c.bench_sized_workspace && !out.plans.is_empty() && out.plans.iter().all(|p| p.refused.is_some()) {
            // (the bench would refuse every shape, not create a workspace: helper-122)
            s += ", max_output_elems: none (the bench would refuse every shape)";
        } else {
            s += &format!(", max_output_elems {e}{}", if c.bench_sized_workspace { " (sized as the bench sizes it for these shapes)" } else { "" });
        }
    }
    if c.op == "gemm" {
        s += &match c.workspace_bytes {
            Some(b) => format!(", gemm_with_workspace with {b} bytes"),
            None => ", mkernel::gemm's own workspace".to_string(),
        };
    }
    s += &format!("; overrides: {}\n", if c.overrides.is_empty() { "none" } else { &c.overrides });
    for r in &out.plans {
        // (a listed shape's label is its dimensions already)
        let dims = r.dims.text();
        let label = if r.label.ends_with(&dims) { r.label.clone() } else { format!("{} ({dims})", r.label) };
        match (&r.planned, &r.refused) {
            (Some(p), _) => s += &format!("{label}: {}; {}{}\n", p.tile, p.config, floors_note(p)),
            (None, reason) => s += &format!("{label}: refused: {}\n", reason.as_deref().unwrap_or("")),
        }
    }
    s
}

/// An argument error (exit status 2) where a shape was refused, after every plan is printed.
fn refusals(rows: &[PlanRow]) -> BenchResult<()> {
    let refused: Vec<&str> = rows.iter().filter(|r| r.refused.is_some()).map(|r| r.label.as_str()).collect();
    match refused.first() {
        None => Ok(()),
        Some(first) => Err(usage(format!("{} of the {} shapes would be refused (above), the first '{first}'", refused.len(), rows.len()))),
    }
}

/// The listed shapes (labelled "shape MxNxK"), or `default` where none is, filtered.
fn shape_list(shapes: &[GemmShape], default: Vec<(String, GemmShape)>, filter: Option<&str>) -> BenchResult<Vec<(String, GemmShape)>> {
    bench::check_unique_shapes(shapes)?;
    let list = if shapes.is_empty() { default } else { shapes.iter().map(|s| (format!("shape {}x{}x{}", s.m, s.n, s.k), *s)).collect() };
    bench::filter_shapes(list, filter)
}

/// A row for `s`: its plan, or the call's refusal.
fn row(label: String, s: GemmShape, planned: Result<Planned, mkernel::Error>) -> PlanRow {
    row_of(label, Dims::gemm(s), planned)
}

/// A row of any kind of shape.
fn row_of(label: String, dims: Dims, planned: Result<Planned, mkernel::Error>) -> PlanRow {
    let (planned, refused) = match planned {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    PlanRow { label, dims, planned, refused }
}

/// The flags given that override the defaults, as given, for the context line.
fn overrides(pairs: &[(&str, Option<String>)]) -> String {
    pairs.iter().filter_map(|(flag, v)| v.as_ref().map(|v| format!("{flag} {v}"))).collect::<Vec<_>>().join(" ")
}

fn split_name(s: LastWaveSplit) -> String {
    match s {
        LastWaveSplit::Off => "off".into(),
        LastWaveSplit::Auto => "auto".into(),
        LastWaveSplit::Slices(n) => n.to_string(),
    }
}

/// SMs (CTAs) a rank plans for: --sms, else the H100 / H200's 132, or with ranks sharing a
/// GPU 132 / world (all on one GPU: a communicator gives each rank sm_count / ranks there).
fn plan_sms(sms: Option<u32>, gpu_shared: bool, world_size: u32) -> u32 {
    const WHOLE_GPU: u32 = 132;
    sms.unwrap_or(if gpu_shared { (WHOLE_GPU / world_size.max(1)).max(2) } else { WHOLE_GPU })
}

/// The listed shapes whose M the world size divides (a reduce-scatter and an all-gather
/// split M over the ranks; as their benches, which leave the others out); with none left and
/// no --shape (`given`), a usage error naming the rule and `needs` ("a reduce-scatter").
fn shapes_split_by_ranks(list: Vec<(String, GemmShape)>, world: u32, given: &[GemmShape], needs: &str) -> BenchResult<Vec<(String, GemmShape)>> {
    let kept: Vec<_> = list.into_iter().filter(|(_, s)| s.m % world == 0).collect();
    if kept.is_empty() && given.is_empty() {
        return Err(usage(format!("no listed shape has an M that the world size ({world}) divides, which {needs} needs; give --shape")));
    }
    Ok(kept)
}

/// The plain GEMM's plan of `s` as a row's fields.
fn gemm_planned(s: GemmShape, opts: GemmOptions, sms: u32, workspace_bytes: Option<u64>) -> Result<Planned, mkernel::Error> {
    let run = mkernel::plan_gemm(s, opts, sms, workspace_bytes)?;
    let tiles = run.tile.tiles(s.m, s.n);
    let mut config = format!("{}, {tiles} tiles on {} CTAs", run.tile, run.grid);
    if run.split_slices > 1 {
        // (the left-over tiles are those past the full waves of the grid: SplitLaunch::check)
        let rest = tiles % run.grid.max(1) as u64;
        config += &format!(", the last wave's {rest} in {} K-slices", run.split_slices);
    } else {
        config += &format!(": {:.2} waves", tiles as f64 / run.grid.max(1) as f64);
    }
    Ok(Planned {
        tile: run.tile.name(),
        split_slices: run.split_slices,
        tiles,
        grid: run.grid,
        path: None,
        comm_ctas: None,
        tail_ctas: None,
        config,
        floor_compute_us: bench::floors::compute_us(s),
        floor_hbm_us: Some(bench::floors::hbm_us(s)),
        floor_link_us: None,
        workspace_elems: None,
        rank_flops: None,
    })
}

fn plan_gemm_rows(a: &PlanGemmArgs) -> BenchResult<PlanOutput> {
    let c = &a.common;
    let tile = bench::parse_tile(c.tile.as_deref(), false)?;
    let split = c.split_last_wave.unwrap_or_default();
    if let (LastWaveSplit::Slices(n @ 2..), None) = (split, a.workspace_bytes) {
        return Err(usage(format!(
            "--split-last-wave {n}: a count of 2 or more plans mkernel::gemm_with_workspace, which takes the caller's workspace: give --workspace-bytes (mkernel::gemm takes no count)"
        )));
    }
    let sms = plan_sms(c.inputs.base.sms, false, 1);
    let default = if c.models { bench::gemm_model_shapes() } else { bench::gemm_shapes() };
    let opts = GemmOptions { tile, split_last_wave: split, ..Default::default() };
    let plans = shape_list(&c.inputs.shape, default, c.inputs.base.filter.as_deref())?
        .into_iter()
        .map(|(label, s)| row(label, s, gemm_planned(s, opts, sms, a.workspace_bytes)))
        .collect();
    let context = PlanContextRow {
        op: "gemm",
        sms,
        world_size: None,
        gpu_shared: None,
        max_output_elems: None,
        bench_sized_workspace: false,
        workspace_bytes: a.workspace_bytes,
        overrides: overrides(&[("--tile", c.tile.clone()), ("--split-last-wave", c.split_last_wave.map(split_name))]),
    };
    Ok(PlanOutput { context, plans })
}

/// `--models` of the fused plan: the row-parallel layers of `bench gemm --models`'s dense
/// models ([`bench::DENSE_MODELS`]) at tensor parallelism `world`, the all-reduce after
/// each: the o projection (N = hidden, K = query heads x head dim / world) and the down
/// projection (N = hidden, K = FFN / world), at M = 1 to 16384 tokens (decode to prefill).
fn fused_model_shapes(world: u32) -> BenchResult<Vec<(String, GemmShape)>> {
    if ![2, 4, 8].contains(&world) {
        return Err(usage(format!("--models: the models' layers are sharded for 2, 4 or 8 ranks, got --world-size {world}")));
    }
    let mut v = Vec::new();
    for (name, hidden, ffn, q, _kv, hd) in bench::DENSE_MODELS {
        for (layer, k) in [("o", q * hd / world), ("down", ffn / world)] {
            for m in [1u32, 16, 64, 256, 1024, 2048, 4096, 8192, 16384] {
                v.push((format!("M={m} {name} tp{world} {layer}"), GemmShape { m, n: hidden, k }));
            }
        }
    }
    Ok(v)
}

fn plan_fused_rows(a: &PlanArArgs, collective: Collective) -> BenchResult<PlanOutput> {
    let c = &a.common;
    let tile = bench::parse_tile(c.tile.as_deref(), false)?;
    let comm_path = match a.comm_path.as_deref() {
        None => None,
        Some(name) => Some(CommPath::by_name(name).ok_or_else(|| usage(format!("--comm-path: unknown path '{name}' ({})", CommPath::ALL.map(|p| p.name()).join(", "))))?),
    };
    let epilogue_pace = match a.epilogue_pace.as_deref() {
        None => None,
        Some(name) => Some(EpiloguePace::by_name(name).ok_or_else(|| usage(format!("--epilogue-pace: unknown pace '{name}' (sleep, clock)")))?),
    };
    if a.gpu_shared && a.world_size < 2 {
        return Err(usage("--gpu-shared: ranks sharing a GPU are 2 or more (--world-size 2..8); got --world-size 1"));
    }
    if let (Collective::ReduceScatter, Some(t)) = (collective, a.tail_ctas) {
        return Err(usage(format!("--tail-ctas {t}: a reduce-scatter's paths (epilogue, vec16, scalar, local) take no tail CTAs")));
    }
    let max_output_elems = a.max_output_elems.unwrap_or(CommConfig::default().max_output_elems);
    let sms = plan_sms(c.inputs.base.sms, a.gpu_shared, a.world_size);
    let ctx = PlanContext::new(a.world_size, sms, a.gpu_shared, max_output_elems).map_err(|e| usage(e.to_string()))?;
    let listed = match (c.models, collective) {
        (true, _) => fused_model_shapes(a.world_size)?,
        (false, Collective::ReduceScatter) => bench::reduce_scatter_shapes(),
        (false, Collective::AllReduce) => bench::gemm_allreduce_shapes(),
    };
    // (a reduce-scatter splits M over the ranks: M = 1 has no rows to give each; --shape's
    // are planned, or refused, as given)
    let default = match collective {
        Collective::ReduceScatter => shapes_split_by_ranks(listed, a.world_size, &c.inputs.shape, "a reduce-scatter")?,
        Collective::AllReduce => listed,
    };
    let opts = GemmAllReduceOptions {
        tile,
        comm_path,
        comm_ctas: a.sm_comm,
        tail_ctas: a.tail_ctas,
        split_last_wave: c.split_last_wave,
        epilogue_pace,
        ..Default::default()
    };
    let plan = |s: GemmShape| -> Result<Planned, mkernel::Error> {
        let cfg = match collective {
            Collective::AllReduce => mkernel::plan_gemm_allreduce(s, opts, ctx)?,
            Collective::ReduceScatter => mkernel::plan_gemm_reduce_scatter(s, opts, ctx)?,
        };
        let tiles = cfg.tile.tiles(s.m, s.n);
        let (grid, config) = if cfg.path == CommPath::Local {
            // One rank: the plain GEMM's launch for the tile and split, in the workspace's
            // split slots (`gemm_allreduce::launch`'s local path), with its own grid.
            let split = if cfg.split_slices > 1 { LastWaveSplit::Slices(cfg.split_slices) } else { LastWaveSplit::Off };
            let local = gemm_planned(s, GemmOptions { tile: Some(cfg.tile), split_last_wave: split, ..Default::default() }, ctx.grid, Some(ctx.split_scratch_bytes))?;
            (local.grid, format!("{cfg}; {tiles} tiles on {} CTAs", local.grid))
        } else {
            (cfg.grid, format!("{cfg}{}", bench::waves_note(&cfg, s)))
        };
        Ok(Planned {
            tile: cfg.tile.name(),
            split_slices: cfg.split_slices,
            tiles,
            grid,
            path: Some(cfg.path.name()),
            comm_ctas: Some(cfg.comm_ctas),
            tail_ctas: Some(cfg.tail_ctas),
            config,
            floor_compute_us: bench::floors::compute_us(s),
            floor_hbm_us: None,
            floor_link_us: Some(bench::floors::link_us(s, ctx.world_size, collective)),
            workspace_elems: None,
            rank_flops: None,
        })
    };
    let plans = shape_list(&c.inputs.shape, default, c.inputs.base.filter.as_deref())?.into_iter().map(|(label, s)| row(label, s, plan(s))).collect();
    let context = PlanContextRow {
        op: match collective {
            Collective::AllReduce => "gemm-allreduce",
            Collective::ReduceScatter => "gemm-reduce-scatter",
        },
        sms,
        world_size: Some(a.world_size),
        gpu_shared: Some(a.gpu_shared),
        max_output_elems: Some(max_output_elems),
        bench_sized_workspace: false,
        workspace_bytes: None,
        overrides: overrides(&[
            ("--tile", c.tile.clone()),
            ("--split-last-wave", c.split_last_wave.map(split_name)),
            ("--comm-path", a.comm_path.clone()),
            ("--sm-comm", a.sm_comm.map(|v| v.to_string())),
            ("--tail-ctas", a.tail_ctas.map(|v| v.to_string())),
            ("--epilogue-pace", a.epilogue_pace.clone()),
        ]),
    };
    Ok(PlanOutput { context, plans })
}

fn plan_allgather_rows(a: &PlanAgArgs) -> BenchResult<PlanOutput> {
    let tile = bench::parse_tile(a.tile.as_deref(), false)?;
    let (sms, max_output_elems, ctx) = a.ranks.context(a.inputs.base.sms, |_| CommConfig::default().max_output_elems)?;
    let opts = mkernel::AllGatherGemmOptions { tile, push_ctas: a.push_ctas, chunk_rows: a.chunk_rows };
    let plan = |s: GemmShape| -> Result<Planned, mkernel::Error> {
        let cfg = mkernel::plan_allgather_gemm(s, opts, ctx)?;
        let tiles = cfg.tile.tiles(s.m, s.n);
        let compute = cfg.grid - cfg.push_ctas;
        Ok(Planned::pushing(
            cfg.tile,
            cfg.grid,
            cfg.push_ctas,
            tiles,
            format!("{cfg}, {tiles} tiles on {compute} CTAs: {:.2} waves", tiles as f64 / compute.max(1) as f64),
            bench::floors::compute_us(s),
            bench::floors::allgather_link_us(s, a.ranks.world_size),
        ))
    };
    // (as the bench: helper-102)
    let default = shapes_split_by_ranks(bench::allgather_shapes(), a.ranks.world_size, &a.inputs.shape, "an all-gather")?;
    let plans = shape_list(&a.inputs.shape, default, a.inputs.base.filter.as_deref())?.into_iter().map(|(label, s)| row(label, s, plan(s))).collect();
    let context = PlanContextRow {
        op: "allgather-gemm",
        sms,
        world_size: Some(a.ranks.world_size),
        gpu_shared: Some(a.ranks.gpu_shared),
        max_output_elems: Some(max_output_elems),
        bench_sized_workspace: false,
        workspace_bytes: None,
        overrides: overrides(&[
            ("--tile", a.tile.clone()),
            ("--push-ctas", a.push_ctas.map(|v| v.to_string())),
            ("--chunk-rows", a.chunk_rows.map(|v| v.to_string())),
        ]),
    };
    Ok(PlanOutput { context, plans })
}

fn plan_ring_attention_rows(a: &PlanRaArgs) -> BenchResult<PlanOutput> {
    if let Some(s) = bench::first_repeat(&a.shape) {
        return Err(usage(format!("--shape {} is listed twice (each shape is planned once)", bench::attention_tag(s))));
    }
    let list = if a.shape.is_empty() { bench::attention_shapes() } else { a.shape.iter().map(|s| (format!("shape {}", bench::attention_tag(s)), *s)).collect() };
    let list = bench::filter_shapes_by(list, a.base.filter.as_deref(), bench::attention_tag)?;
    // (without --max-output-elems, the workspace bench ring-attention creates for these shapes)
    let (sms, max_output_elems, ctx) = a.ranks.context(a.base.sms, |world| bench::attention_workspace_elems(&list, world))?;
    let world = a.ranks.world_size;
    let opts = RingAttentionOptions { push_ctas: a.push_ctas, chunk_rows: a.chunk_rows, softmax_scale: None };
    let plan = |s: AttentionShape| -> Result<Planned, mkernel::Error> {
        let cfg = mkernel::plan_ring_attention(s, opts, ctx)?;
        let units = mkernel_kernels::ring_attention::units(s, world);
        let flops: Vec<f64> = (0..world).map(|r| s.flops(world, r)).collect();
        let (lo, hi) = flops.iter().fold((f64::INFINITY, 0f64), |(lo, hi), &f| (lo.min(f), hi.max(f)));
        let mask = mkernel_kernels::ring_attention::Mask::of(s, world);
        // (every rank's call ends only once every peer has read its keys: the least busy rank
        // waits in the exit handshake for the busiest, bounded by CommConfig::timeout)
        let timeout_s = mkernel::CommConfig::default().timeout.as_secs_f64();
        let spread_s = (bench::floors::attention_compute_us(hi) - bench::floors::attention_compute_us(lo)) * 1e-6;
        let note = if spread_s > 0.25 * timeout_s {
            format!(
                "; warning: the busiest rank computes >= {spread_s:.1} s longer than the least busy one, which waits for it within CommConfig::timeout (default {timeout_s:.0} s): raise the timeout or use the zigzag layout (cz)"
            )
        } else {
            String::new()
        };
        Ok(Planned {
            tile: mkernel_kernels::ring_attention::kernel_name(s.head_dim, mask, world),
            split_slices: 1,
            tiles: units,
            grid: cfg.grid,
            path: None,
            comm_ctas: Some(cfg.push_ctas),
            tail_ctas: None,
            // (the push CTAs compute too once their pushes are out: units are dealt over the grid)
            config: format!(
                "{cfg}, {units} unit{} on {} CTAs: {:.2} waves; workspace >= {} elements; a rank's {:.3e}-{:.3e} FLOPs (the most {:.2}x the least)",
                if units == 1 { "" } else { "s" },
                cfg.grid,
                units as f64 / cfg.grid.max(1) as f64,
                mkernel_kernels::ring_attention::workspace_elems_needed(s, world),
                lo,
                hi,
                hi / lo.max(1.0)
            ) + &note,
            // (the rank with the most keys sets the time)
            floor_compute_us: bench::floors::attention_compute_us(hi),
            floor_hbm_us: None,
            floor_link_us: Some(bench::floors::ring_attention_link_us(s, world)),
            workspace_elems: Some(mkernel_kernels::ring_attention::workspace_elems_needed(s, world)),
            rank_flops: Some([lo, hi]),
        })
    };
    let plans = list.into_iter().map(|(label, s)| row_of(label, Dims::attention(s), plan(s))).collect();
    let context = PlanContextRow {
        op: "ring-attention",
        sms,
        world_size: Some(world),
        gpu_shared: Some(a.ranks.gpu_shared),
        max_output_elems: Some(max_output_elems),
        bench_sized_workspace: a.ranks.max_output_elems.is_none(),
        workspace_bytes: None,
        overrides: overrides(&[("--push-ctas", a.push_ctas.map(|v| v.to_string())), ("--chunk-rows", a.chunk_rows.map(|v| v.to_string()))]),
    };
    Ok(PlanOutput { context, plans })
}

fn plan_moe_rows(a: &PlanMoeArgs) -> BenchResult<PlanOutput> {
    let opts = a.shape.options(a.recv_capacity)?;
    let list = bench::filter_moe_shapes(a.shape.shapes(), a.base.filter.as_deref())?;
    // (without --max-output-elems, the workspace bench moe-dispatch-gemm creates for these shapes)
    let (sms, max_output_elems, ctx) = a.ranks.context(a.base.sms, |world| bench::moe_workspace_elems(&list, world, a.recv_capacity))?;
    let world = a.ranks.world_size;
    let plan = |s: mkernel::MoeShape, even: GemmShape| -> Result<Planned, mkernel::Error> {
        let cfg = mkernel::plan_moe_dispatch_gemm(s, opts, ctx)?;
        Ok(moe_planned(
            // (every CTA computes: the push CTAs claim tiles once their pushes are out)
            (cfg.tile, cfg.grid, cfg.push_ctas, cfg.recv_capacity, cfg.grid),
            &cfg,
            mkernel::moe_workspace_elems_needed(cfg.recv_capacity, s.k),
            even,
            s.experts / world,
            bench::floors::moe_dispatch_link_us(s.tokens, s.topk, s.k, world),
        ))
    };
    Ok(moe_output(a, "moe-dispatch-gemm", sms, max_output_elems, moe_plan_rows(list, plan)))
}

/// An MoE plan's row: the call's (tile, grid, push CTAs, receive rows, CTAs that compute the
/// GEMM: the dispatch's whole grid, its tiles being claimed, the combine's compute CTAs) and its
/// config `cfg` printed, the workspace it needs, an even routing's tiles and waves (with the
/// capacity warning), and the floors (the even routing's GEMM, `link_us`).
fn moe_planned(call: (mkernel::TileConfig, u32, u32, u32, u32), cfg: &dyn std::fmt::Display, workspace: u64, even: GemmShape, local_experts: u32, link_us: f64) -> Planned {
    let (tile, grid, push_ctas, recv_capacity, compute) = call;
    // (the GEMM runs over the layout's rows in use: every segment padded to SEGMENT_ALIGN
    // rows; helper-122: tiles over M alone were too few where a segment is not)
    let tiles = tile.tiles(even_rows_in_use(even.m, local_experts), even.n);
    Planned::pushing(
        tile,
        grid,
        push_ctas,
        tiles,
        format!(
            "{cfg}, workspace >= {workspace} elements; an even routing: {} rows a rank, {tiles} tiles on {compute} CTAs: {:.2} waves{}",
            even.m,
            tiles as f64 / compute.max(1) as f64,
            moe_capacity_warning(recv_capacity, even.m)
        ),
        bench::floors::compute_us(even),
        link_us,
    )
}

/// An MoE plan's output: the context line (`op`, the communicator, the overrides) and `plans`.
fn moe_output(a: &PlanMoeArgs, op: &'static str, sms: u32, max_output_elems: u64, plans: Vec<PlanRow>) -> PlanOutput {
    let context = PlanContextRow {
        op,
        sms,
        world_size: Some(a.ranks.world_size),
        gpu_shared: Some(a.ranks.gpu_shared),
        max_output_elems: Some(max_output_elems),
        bench_sized_workspace: a.ranks.max_output_elems.is_none(),
        workspace_bytes: None,
        overrides: moe_overrides(a),
    };
    PlanOutput { context, plans }
}

/// A row per MoE shape of `list`, planned by `plan` with the even routing's GEMM: M the rows
/// a rank's experts get when every expert gets its share, tokens x topk, N x K.
fn moe_plan_rows(list: Vec<(String, mkernel::MoeShape)>, plan: impl Fn(mkernel::MoeShape, GemmShape) -> Result<Planned, mkernel::Error>) -> Vec<PlanRow> {
    list.into_iter()
        .map(|(label, s)| {
            // (M: the rows a rank receives when every expert gets its share)
            let even = GemmShape { m: s.tokens.saturating_mul(s.topk), n: s.n, k: s.k };
            row(label, even, plan(s, even))
        })
        .collect()
}

/// The rows in use of a rank's layout (the GEMM's M) when `rows` are shared as evenly as
/// they can be by `local_experts` experts: every segment padded to a multiple of
/// `SEGMENT_ALIGN` rows (the dispatch's layout, `moe_segment_ends` in ops/moe_dispatch_gemm.cuh).
pub(crate) fn even_rows_in_use(rows: u32, local_experts: u32) -> u32 {
    let align = mkernel_kernels::moe_dispatch_gemm::SEGMENT_ALIGN as u64;
    let el = local_experts.max(1) as u64;
    let (each, extra) = (rows as u64 / el, rows as u64 % el);
    let padded = |n: u64| n.div_ceil(align) * align;
    (extra * padded(each + 1) + (el - extra) * padded(each)).min(u32::MAX as u64) as u32
}

/// A warning where a receive capacity is below the rows an even routing gives a rank (its
/// segments' padding not counted): every routing close to even would not fit (the dispatch
/// refuses it on the device, RecvCapacityExceeded; helper-115).
fn moe_capacity_warning(recv_capacity: u32, even_rows: u32) -> String {
    if recv_capacity < even_rows {
        format!("; warning: recv_capacity {recv_capacity} is below an even routing's {even_rows} rows a rank: a routing near even does not fit (the dispatch reports it on the device and skips the call)")
    } else {
        String::new()
    }
}

/// The MoE plans' overriding flags, as given, for the context line.
fn moe_overrides(a: &PlanMoeArgs) -> String {
    overrides(&[
        ("--tokens", a.shape.tokens.map(|v| v.to_string())),
        ("--experts", a.shape.experts.map(|v| v.to_string())),
        ("--topk", a.shape.topk.map(|v| v.to_string())),
        ("--n", a.shape.n.map(|v| v.to_string())),
        ("--k", a.shape.k.map(|v| v.to_string())),
        ("--tile", a.shape.tile.clone()),
        ("--push-ctas", a.shape.push_ctas.map(|v| v.to_string())),
        ("--chunk-rows", a.shape.chunk_rows.map(|v| v.to_string())),
        ("--recv-capacity", a.recv_capacity.map(|v| v.to_string())),
    ])
}

/// plan moe-gemm-combine: bench moe-gemm-combine's shapes (N the hidden size, K the experts'
/// intermediate size) with the overrides, planned as `Communicator::moe_gemm_combine` would;
/// the floors an even routing's: its GEMM (tokens x topk rows a rank, N x K) and the rows that
/// go back to other ranks' tokens.
fn plan_moe_combine_rows(a: &PlanMoeArgs) -> BenchResult<PlanOutput> {
    // (as bench moe-gemm-combine: the flag is the dispatch's)
    if let Some(c) = a.shape.chunk_rows {
        return Err(usage(format!("--chunk-rows {c}: the MoE GEMM + combine has no token chunks (an option of moe-dispatch-gemm)")));
    }
    let opts = bench::moe_combine_options(&a.shape, a.recv_capacity)?;
    let list = bench::filter_moe_shapes(a.shape.shapes_from(bench::moe_combine_shapes), a.base.filter.as_deref())?;
    // (without --max-output-elems, the workspace bench moe-gemm-combine creates for these shapes)
    let (sms, max_output_elems, ctx) = a.ranks.context(a.base.sms, |world| bench::moe_combine_workspace_elems(&list, world, a.recv_capacity))?;
    let world = a.ranks.world_size;
    let plan = |s: mkernel::MoeShape, even: GemmShape| -> Result<Planned, mkernel::Error> {
        let cfg = mkernel::plan_moe_gemm_combine(s, opts, ctx)?;
        Ok(moe_planned(
            // (the compute CTAs: the push CTAs push tiles as they are stored)
            (cfg.tile, cfg.grid, cfg.push_ctas, cfg.recv_capacity, cfg.grid.saturating_sub(cfg.push_ctas)),
            &cfg,
            mkernel::moe_combine_workspace_elems_needed(s, cfg.recv_capacity),
            even,
            s.experts / world,
            bench::floors::moe_combine_link_us(s.tokens, s.topk, s.n, world),
        ))
    };
    Ok(moe_output(a, "moe-gemm-combine", sms, max_output_elems, moe_plan_rows(list, plan)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: PlanCmd,
    }

    fn output(args: &[&str]) -> BenchResult<PlanOutput> {
        let cli = Cli::try_parse_from(std::iter::once("plan").chain(args.iter().copied()))?;
        match cli.cmd {
            PlanCmd::Gemm(a) => plan_gemm_rows(&a),
            PlanCmd::GemmAllreduce(a) => plan_fused_rows(&a, Collective::AllReduce),
            PlanCmd::GemmReduceScatter(a) => plan_fused_rows(&a, Collective::ReduceScatter),
            PlanCmd::AllgatherGemm(a) => plan_allgather_rows(&a),
            PlanCmd::MoeDispatchGemm(a) => plan_moe_rows(&a),
            PlanCmd::MoeGemmCombine(a) => plan_moe_combine_rows(&a),
            PlanCmd::RingAttention(a) => plan_ring_attention_rows(&a),
        }
    }

    /// A GEMM row's shape.
    fn gemm_of(r: &PlanRow) -> GemmShape {
        match r.dims {
            Dims::Gemm { m, n, k } => GemmShape { m, n, k },
            Dims::Attention { .. } => panic!("{}: not a GEMM row", r.label),
        }
    }

    /// plan ring-attention: the bench's shapes planned as the call would (the kernel, units,
    /// workspace), each rank's FLOPs (contiguous causal shards 3x apart at world 2, zigzag
    /// ones equal), the floors (the busiest rank's FLOPs; a rank's keys and values to every
    /// peer), refusals by name (a workspace too small, 0 push CTAs; an odd zigzag S at parse).
    #[test]
    fn ring_attention_plans_and_refusals() {
        let planned = rows(&["ring-attention"]).unwrap();
        assert_eq!(planned.len(), bench::attention_shapes().len());
        for ((r, p), (label, s)) in planned.iter().zip(bench::attention_shapes()) {
            assert_eq!((&r.label, r.dims), (&label, Dims::attention(s)));
            let cfg = mkernel::plan_ring_attention(s, RingAttentionOptions::default(), PlanContext::new(2, 132, false, CommConfig::default().max_output_elems).unwrap()).unwrap();
            assert_eq!((p.grid, p.comm_ctas, p.tiles), (cfg.grid, Some(cfg.push_ctas), mkernel_kernels::ring_attention::units(s, 2)));
            let most = s.flops(2, 0).max(s.flops(2, 1));
            assert_eq!(p.floor_compute_us, bench::floors::attention_compute_us(most));
            let link = 2.0 * s.kv_elems() as f64 * 2.0 / 394e9 * 1e6;
            assert!((p.floor_link_us.unwrap() - link).abs() < 1e-9, "{label}");
            let balance = if s.causal && s.layout == mkernel::SeqLayout::Contiguous { "(the most 3.00x the least)" } else { "(the most 1.00x the least)" };
            assert!(p.config.contains(balance) && p.tile.contains(if s.layout == mkernel::SeqLayout::Zigzag { "_causal_zz_w2" } else { "_w2" }), "{label}: {} {}", p.tile, p.config);
        }
        let out = output(&["ring-attention", "--world-size", "8", "--shape", "1x16384x64x8x128cz", "--max-output-elems", "1000000"]).unwrap();
        assert!(out.plans[0].refused.as_deref().is_some_and(|e| e.contains("`shape`") && e.contains("max_output_elems >= ")), "{:?}", out.plans);
        let out = output(&["ring-attention", "--push-ctas", "0", "--filter", "full S=4096"]).unwrap();
        assert!(out.plans[0].refused.as_deref().is_some_and(|e| e.contains("`push_ctas`")), "{:?}", out.plans);
        // (a shape against the rules is refused in its own row, the others planned)
        let out = output(&["ring-attention", "--shape", "1x4095x64x8x128cz,1x100x6x4x128,1x64x2x2x64"]).unwrap();
        assert!(out.plans[0].refused.as_deref().is_some_and(|e| e.contains("`shape`") && e.contains("even")), "{:?}", out.plans);
        assert!(out.plans[1].refused.as_deref().is_some_and(|e| e.contains("`shape`") && e.contains("multiple of kv_heads")), "{:?}", out.plans);
        assert!(out.plans[2].planned.is_some(), "{:?}", out.plans);
        assert!(output(&["ring-attention", "--shape", "1x4294967296x8x2x128"]).is_err());
        assert!(output(&["ring-attention", "--shape", "1x64x2x2x64,1x64x2x2x64"]).is_err());
        let v: serde_json::Value = serde_json::to_value(output(&["ring-attention", "--filter", "1x4096x64x8x128cz"]).unwrap()).unwrap();
        assert_eq!((v["plans"][0]["mask"].as_str(), v["plans"][0]["seq"].as_u64()), (Some("causal zigzag"), Some(4096)), "{v}");
        let zz = AttentionShape { batch: 1, seq: 4096, heads: 64, kv_heads: 8, head_dim: 128, causal: true, layout: mkernel::SeqLayout::Zigzag };
        assert_eq!(v["plans"][0]["workspace_elems"].as_u64(), Some(zz.gathered_elems(2)), "{v}");
        assert_eq!(v["plans"][0]["rank_flops"][0].as_f64(), Some(zz.flops(2, 0)), "{v}");
        assert_eq!(v["plans"][0]["rank_flops"][1].as_f64(), Some(zz.flops(2, 1)), "{v}");
        // Every CTA computes (the push CTAs once their pushes are out): waves over the grid.
        let one = output(&["ring-attention", "--push-ctas", "131", "--filter", "causal S=1024"]).unwrap();
        assert!(one.plans[0].planned.as_ref().unwrap().config.contains("512 units on 132 CTAs: 3.88 waves"), "{:?}", one.plans[0]);
        // (a causal imbalance near the timeout is flagged; zigzag's balance is not)
        let big = ["ring-attention", "--world-size", "8", "--max-output-elems", "137438953472", "--shape"];
        let warned = |shape: &str| output(&[&big[..], &[shape]].concat()).unwrap().plans[0].planned.as_ref().unwrap().config.contains("warning: the busiest rank");
        assert!(warned("1x262144x64x8x128c"));
        assert!(!warned("1x262144x64x8x128cz") && !warned("1x4096x64x8x128c"));
        let tiny = render(&output(&["ring-attention", "--shape", "1x1x1x1x128"]).unwrap());
        assert!(tiny.contains("floors: compute ") && !tiny.contains("compute 0.0 us"), "{tiny}");
        assert!(render(&output(&["ring-attention", "--filter", "zigzag S=4096"]).unwrap()).contains("llama70b causal zigzag S=4096 (1x4096x64x8x128cz): mkernel_ring_attention_d128_causal_zz_w2;"));
    }

    /// Without --max-output-elems, plan ring-attention, moe-dispatch-gemm and moe-gemm-combine
    /// size the workspace as their bench does (`bench::*workspace_elems`), for the planned
    /// shapes: every default row is planned (before: CommConfig's default refused ring
    /// attention's S = 16384 at world 8 and the DeepSeek-V3-like MoE rows), the context says
    /// so; a given --max-output-elems is taken as given, its refusals naming the size.
    #[test]
    fn default_workspace_is_the_one_the_bench_creates() {
        for (args, bench_elems) in [
            (vec!["ring-attention"], bench::attention_workspace_elems(&bench::attention_shapes(), 2)),
            (vec!["ring-attention", "--world-size", "8"], bench::attention_workspace_elems(&bench::attention_shapes(), 8)),
            (vec!["ring-attention", "--world-size", "8", "--gpu-shared"], bench::attention_workspace_elems(&bench::attention_shapes(), 8)),
            (vec!["moe-dispatch-gemm"], bench::moe_workspace_elems(&bench::moe_shapes(4096), 2, None)),
            (vec!["moe-dispatch-gemm", "--world-size", "8"], bench::moe_workspace_elems(&bench::moe_shapes(4096), 8, None)),
            (vec!["moe-gemm-combine"], bench::moe_combine_workspace_elems(&bench::moe_combine_shapes(4096), 2, None)),
            (vec!["moe-gemm-combine", "--world-size", "4"], bench::moe_combine_workspace_elems(&bench::moe_combine_shapes(4096), 4, None)),
        ] {
            let out = output(&args).unwrap();
            refusals(&out.plans).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!((out.context.max_output_elems, out.context.bench_sized_workspace), (Some(bench_elems), true), "{args:?}");
            // (the largest workspace a planned row needs: no larger)
            let most = out.plans.iter().map(|r| needed_elems(r.planned.as_ref().unwrap())).max().unwrap();
            assert_eq!(most, bench_elems, "{args:?}");
            assert!(render(&out).contains(&format!("max_output_elems {bench_elems} (sized as the bench sizes it for these shapes)")), "{}", render(&out));
        }
        // (the largest default ring-attention shape at world 8: 8 x 2 x 16384 x 8 x 128 elements)
        assert_eq!(bench::attention_workspace_elems(&bench::attention_shapes(), 8), 1 << 28);
        // Sized for the shapes planned: --filter, --shape, --recv-capacity (above the worst case).
        let out = output(&["moe-dispatch-gemm", "--filter", "mixtral"]).unwrap();
        assert_eq!(out.context.max_output_elems, Some(mkernel::moe_workspace_elems_needed(16896, 4096)));
        let out = output(&["moe-dispatch-gemm", "--filter", "mixtral", "--recv-capacity", "131072"]).unwrap();
        assert!(out.plans[0].planned.is_some(), "{:?}", out.plans[0]);
        assert_eq!(out.context.max_output_elems, Some(mkernel::moe_workspace_elems_needed(131072, 4096)));
        let out = output(&["ring-attention", "--shape", "1x1024x64x8x128c"]).unwrap();
        assert_eq!(out.context.max_output_elems, Some(2 * 2 * 1024 * 8 * 128));
        // A shape beyond the largest workspace is refused naming it; the others are planned,
        // in a workspace sized for them.
        let out = output(&["ring-attention", "--shape", "512x1048576x8x8x128,1x1024x64x8x128c"]).unwrap();
        assert!(out.plans[0].refused.as_deref().is_some_and(|e| e.contains("largest communicator workspace")), "{:?}", out.plans[0]);
        assert!(out.plans[1].planned.is_some(), "{:?}", out.plans[1]);
        assert_eq!(out.context.max_output_elems, Some(2 * 2 * 1024 * 8 * 128));
        // Given, the size is taken: the rows it cannot hold are refused naming the size needed.
        let out = output(&["ring-attention", "--world-size", "8", "--max-output-elems", "134217728"]).unwrap();
        assert_eq!((out.context.max_output_elems, out.context.bench_sized_workspace), (Some(134217728), false));
        let refused: Vec<_> = out.plans.iter().filter_map(|r| r.refused.as_deref()).collect();
        assert_eq!(refused.len(), 2, "{:?}", out.plans);
        assert!(refused.iter().all(|e| e.contains("max_output_elems >= 268435456")), "{refused:?}");
        assert!(!render(&out).contains("sized as the bench"));
        let v: serde_json::Value = serde_json::to_value(&out).unwrap();
        assert!(v["context"].get("bench_sized_workspace").is_none(), "{v}");
        let v: serde_json::Value = serde_json::to_value(output(&["moe-gemm-combine"]).unwrap()).unwrap();
        assert_eq!(v["context"]["bench_sized_workspace"], true, "{v}");
        // (a plan whose bench creates no communicator sized to it keeps CommConfig's)
        let out = output(&["allgather-gemm"]).unwrap();
        assert_eq!((out.context.max_output_elems, out.context.bench_sized_workspace), (Some(CommConfig::default().max_output_elems), false));
    }

    /// A planned row's "workspace >= N elements".
    fn needed_elems(p: &Planned) -> u64 {
        let tail = p.config.split("workspace >= ").nth(1).expect("a workspace in the config");
        tail.split(' ').next().and_then(|n| n.parse().ok()).expect("a number of elements")
    }

    /// A ring-attention shape whose gathered keys and values exceed 2^40 elements is refused
    /// naming the rule that binds, the largest workspace's 2^37 elements (before: it named
    /// 2^40), with or without --max-output-elems; one whose element counts pass u64 is
    /// refused, not a panic (before: "attempt to multiply with overflow").
    #[test]
    fn ring_attention_refusals_name_the_binding_limit() {
        for extra in [&[][..], &["--max-output-elems", "137438953472"][..]] {
            let out = output(&[&["ring-attention", "--shape", "512x1048576x8x8x128"][..], extra].concat()).unwrap();
            let e = out.plans[0].refused.as_deref().unwrap_or_default();
            assert!(e.contains("`shape`") && e.contains("largest communicator workspace") && e.contains("2^37") && !e.contains("2^40"), "{extra:?}: {e}");
        }
        let out = output(&["ring-attention", "--shape", "4294967295x1048576x256x256x64"]).unwrap();
        assert!(out.plans[0].refused.as_deref().is_some_and(|e| e.contains("`shape`") && e.contains("exceed 2^40")), "{:?}", out.plans[0]);
    }

    /// A plan whose every shape is refused, its workspace sized as the bench's: the header says
    /// none is sized (helper-122: it read "max_output_elems 1"); one row planned: the size.
    #[test]
    fn all_refused_plans_size_no_workspace() {
        let out = output(&["moe-dispatch-gemm", "--experts", "3"]).unwrap();
        assert!(out.plans.iter().all(|p| p.refused.is_some()), "{out:?}");
        assert!(render(&out).contains("max_output_elems: none (the bench would refuse every shape)"), "{}", render(&out));
        let out = output(&["moe-dispatch-gemm", "--filter", "mixtral"]).unwrap();
        assert!(render(&out).contains("(sized as the bench sizes it for these shapes)"), "{}", render(&out));
    }

    /// An even routing's rows in use: every segment padded to 128 rows (helper-122: 128 rows
    /// over 4 experts are 4 segments of 128, 4 row blocks, not 1).
    #[test]
    fn even_rows_in_use_pad_every_segment() {
        assert_eq!(even_rows_in_use(128, 4), 4 * 128);
        assert_eq!(even_rows_in_use(8192, 4), 8192);
        assert_eq!(even_rows_in_use(1000, 128), 128 * 128);
        assert_eq!(even_rows_in_use(130, 4), 4 * 128);
        assert_eq!(even_rows_in_use(520, 4), 4 * 256, "130 rows an expert: two row blocks each");
        assert_eq!(even_rows_in_use(0, 4), 0);
        assert_eq!(even_rows_in_use(5, 8), 5 * 128, "five one-row segments padded, three empty ones");
        assert_eq!(even_rows_in_use(u32::MAX, 1), u32::MAX);
        let p = rows(&["moe-dispatch-gemm", "--tokens", "64", "--filter", "mixtral", "--n", "31744"]).unwrap();
        assert!(p[0].1.config.contains("128 rows a rank, 496 tiles on 132 CTAs"), "{:?}", p[0].1.config);
    }

    /// plan moe-dispatch-gemm: the bench's shapes planned as the call would (the workspace
    /// each needs named; CommConfig's default, given, is too small for 256 experts at 4096
    /// tokens, refused naming the size to create it with), the overrides taken or refused by
    /// name, and an even routing's rows and link floor.
    #[test]
    fn moe_plans_and_refusals() {
        let planned = rows(&["moe-dispatch-gemm", "--max-output-elems", "1000000000"]).unwrap();
        assert_eq!(planned.len(), bench::moe_shapes(4096).len());
        for (r, p) in &planned {
            assert!(p.config.contains("workspace >= ") && p.floor_link_us.is_some_and(|l| l > 0.0), "{r:?} {p:?}");
        }
        let (mixtral, p) = &planned[0];
        assert_eq!(gemm_of(mixtral), GemmShape { m: 8192, n: 28672, k: 4096 });
        // (8192 rows of 8 KiB, half of them to the other rank, over 394 GB/s: ~85 us)
        let link = bench::floors::moe_dispatch_link_us(4096, 2, 4096, 2);
        assert_eq!(p.floor_link_us, Some(link));
        assert!((link - 4096.0 * 2.0 * 4096.0 * 2.0 / 2.0 / 394e9 * 1e6).abs() < 1e-9, "{link}");
        let out = output(&["moe-dispatch-gemm", "--max-output-elems", "134217728"]).unwrap();
        let refused: Vec<_> = out.plans.iter().filter(|r| r.refused.is_some()).collect();
        assert!(!refused.is_empty() && refused.iter().all(|r| r.refused.as_ref().unwrap().contains("max_output_elems >= ")), "{refused:?}");
        let out = output(&["moe-dispatch-gemm", "--experts", "7", "--filter", "mixtral"]).unwrap();
        assert!(out.plans[0].refused.as_ref().unwrap().contains("experts must be"), "{out:?}");
        let out = output(&["moe-dispatch-gemm", "--tokens", "64", "--recv-capacity", "100", "--filter", "mixtral"]).unwrap();
        assert!(out.plans[0].refused.as_ref().unwrap().contains("`recv_capacity`"), "{out:?}");
        let out = output(&["moe-dispatch-gemm", "--tokens", "64", "--tile", "wide-tma-store-c2", "--filter", "mixtral"]).unwrap();
        assert!(out.plans[0].refused.as_ref().unwrap().contains("`tile`"), "{out:?}");
        assert!(output(&["moe-dispatch-gemm", "--filter", "nothing"]).is_err());
        assert!(output(&["moe-dispatch-gemm", "--world-size", "1"]).is_err());
    }

    /// plan moe-gemm-combine: bench moe-gemm-combine's shapes (N the hidden size, K the
    /// intermediate size) planned as the call would, the workspace each needs named in the
    /// output (the default communicator's too small for DeepSeek-V3-like, refused naming the
    /// size), an even routing's rows and floors (the combine's rows of N going back), the
    /// overrides taken or refused by name, and --chunk-rows (the dispatch's) refused.
    #[test]
    fn moe_combine_plans_and_refusals() {
        let big = 1_000_000_000u64;
        let planned = rows(&["moe-gemm-combine", "--max-output-elems", "1000000000"]).unwrap();
        let list = bench::moe_combine_shapes(4096);
        assert_eq!(planned.len(), list.len());
        let ctx = PlanContext::new(2, 132, false, big).unwrap();
        for ((r, p), (label, s)) in planned.iter().zip(&list) {
            assert!(r.label.starts_with(label.as_str()), "{} {label}", r.label);
            let cfg = mkernel::plan_moe_gemm_combine(*s, mkernel::MoeGemmCombineOptions::default(), ctx).unwrap();
            assert_eq!((p.tile.clone(), p.grid, p.comm_ctas), (cfg.tile.name(), cfg.grid, Some(cfg.push_ctas)), "{label}");
            let need = mkernel::moe_combine_workspace_elems_needed(*s, cfg.recv_capacity);
            assert!(p.config.contains(&format!("{} receive rows, workspace >= {need} elements", cfg.recv_capacity)), "{label}: {}", p.config);
            let even = GemmShape { m: s.tokens * s.topk, n: s.n, k: s.k };
            assert_eq!(gemm_of(r), even);
            assert_eq!(p.floor_compute_us, bench::floors::compute_us(even));
            assert_eq!(p.floor_link_us, Some(bench::floors::moe_combine_link_us(s.tokens, s.topk, s.n, 2)));
        }
        // Mixtral-like: 8192 rows a rank of N = 4096 by K = 14336; half of them (8 KiB each) go
        // back to the other rank over 394 GB/s, ~85 us; 16384 rows + 128 of padding per local expert.
        let (mixtral, p) = &planned[0];
        assert_eq!(gemm_of(mixtral), GemmShape { m: 8192, n: 4096, k: 14336 });
        let link = 4096.0 * 2.0 * 4096.0 * 2.0 / 2.0 / 394e9 * 1e6;
        assert!((p.floor_link_us.unwrap() - link).abs() < 1e-9, "{p:?}");
        let need_mixtral = mkernel::moe_combine_workspace_elems_needed(mkernel::MoeShape { tokens: 4096, max_tokens: 4096, topk: 2, experts: 8, n: 4096, k: 14336 }, 16896);
        assert!(p.config.contains(&format!("16896 receive rows, workspace >= {need_mixtral} elements")), "{}", p.config);
        // CommConfig's default workspace, given: Mixtral-like fits, DeepSeek-V3-like is refused
        // naming the size to create it with; the text and the JSON say the workspace too.
        let out = output(&["moe-gemm-combine", "--max-output-elems", "134217728"]).unwrap();
        assert!(out.plans[0].planned.is_some(), "{:?}", out.plans[0]);
        let need = mkernel::moe_combine_workspace_elems_needed(list[1].1, 81792);
        assert!(out.plans[1].refused.as_ref().is_some_and(|e| e.contains("`max_output_elems`") && e.contains(&format!("max_output_elems >= {need}"))), "{:?}", out.plans[1]);
        assert_eq!(bench::exit_status(refusals(&out.plans).unwrap_err().as_ref()), 2);
        assert!(render(&out).contains(&format!("16896 receive rows, workspace >= {need_mixtral} elements;")), "{}", render(&out));
        let v: serde_json::Value = serde_json::to_value(&out).unwrap();
        assert_eq!(v["context"]["op"], "moe-gemm-combine");
        assert!(v["plans"][0]["config"].as_str().is_some_and(|c| c.contains(&format!("workspace >= {need_mixtral} elements"))), "{v}");
        // Refusals by name: N not a multiple of 8, experts, the receive capacity, the tile.
        let out = output(&["moe-gemm-combine", "--n", "4100", "--filter", "mixtral"]).unwrap();
        assert!(out.plans[0].refused.as_ref().is_some_and(|e| e.contains("`shape`") && e.contains("N must be a multiple of 8")), "{out:?}");
        assert_eq!(out.context.overrides, "--n 4100");
        let out = output(&["moe-gemm-combine", "--experts", "7", "--filter", "mixtral"]).unwrap();
        assert!(out.plans[0].refused.as_ref().unwrap().contains("experts must be"), "{out:?}");
        let out = output(&["moe-gemm-combine", "--tokens", "64", "--recv-capacity", "100", "--filter", "mixtral"]).unwrap();
        assert!(out.plans[0].refused.as_ref().unwrap().contains("`recv_capacity`"), "{out:?}");
        // (a capacity below an even routing's rows plans, with a warning; the default none)
        for (op, cap, warned) in [("moe-gemm-combine", "128", true), ("moe-dispatch-gemm", "128", true), ("moe-gemm-combine", "16896", false)] {
            let out = output(&[op, "--recv-capacity", cap, "--filter", "mixtral"]).unwrap();
            let cfg = &out.plans[0].planned.as_ref().unwrap().config;
            assert_eq!(cfg.contains("warning: recv_capacity 128 is below an even routing's 8192 rows a rank"), warned, "{op} {cap}: {cfg}");
        }
        let out = output(&["moe-gemm-combine", "--tokens", "64", "--tile", "wide-tma-store-c2", "--filter", "mixtral"]).unwrap();
        assert!(out.plans[0].refused.as_ref().unwrap().contains("`tile`"), "{out:?}");
        // Overrides reach the plan: a given capacity and push CTAs.
        let r = rows(&["moe-gemm-combine", "--tokens", "64", "--recv-capacity", "1024", "--push-ctas", "4", "--filter", "deepseek"]).unwrap();
        assert_eq!((r[0].1.comm_ctas, gemm_of(&r[0].0).m), (Some(4), 512));
        assert!(r[0].1.config.contains("4 push + 128 compute CTAs, 1024 receive rows"), "{}", r[0].1.config);
        // --chunk-rows is the dispatch's: refused by flag, before any plan.
        let e = output(&["moe-gemm-combine", "--chunk-rows", "64"]).unwrap_err();
        assert!(e.to_string().contains("--chunk-rows 64") && e.to_string().contains("no token chunks"), "{e}");
        assert_eq!(bench::exit_status(e.as_ref()), 2);
        assert!(output(&["moe-gemm-combine", "--filter", "nothing"]).is_err());
        assert!(output(&["moe-gemm-combine", "--world-size", "1"]).is_err());
    }

    /// plan allgather-gemm: the bench's list planned as the call would, the link floor one
    /// rank's rows to each other rank, and a call's refusal (M not a multiple of the world
    /// size, a swapped tile) a row naming the argument and an exit-2 error after the table.
    #[test]
    fn allgather_plans_and_refusals() {
        let planned = rows(&["allgather-gemm"]).unwrap();
        assert_eq!(planned.len(), bench::allgather_shapes().len());
        for (r, p) in &planned {
            let s = gemm_of(r);
            assert!(p.config.contains("push") && p.comm_ctas.is_some_and(|c| c > 0) && p.grid <= 132, "{}: {}", r.label, p.config);
            assert_eq!(p.floor_link_us, Some(bench::floors::allgather_link_us(s, 2)));
        }
        let out = output(&["allgather-gemm", "--world-size", "4", "--shape", "4096x8192x8192,2049x512x64"]).unwrap();
        assert!(out.plans[0].refused.is_none() && out.plans[1].refused.as_deref().is_some_and(|e| e.contains("`shape`")), "{:?}", out.plans);
        let e = refusals(&out.plans).unwrap_err();
        assert_eq!(bench::exit_status(e.as_ref()), 2);
        let out = output(&["allgather-gemm", "--tile", "swap-ab-64x136-tma-store", "--shape", "1024x5120x8192"]).unwrap();
        assert!(out.plans[0].refused.as_deref().is_some_and(|e| e.contains("`tile`")), "{:?}", out.plans);
        assert!(output(&["allgather-gemm", "--world-size", "1"]).is_err());
    }

    /// The rows of a plan where every shape is planned (an error naming the first refusal).
    fn rows(args: &[&str]) -> BenchResult<Vec<(PlanRow, Planned)>> {
        let out = output(args)?;
        refusals(&out.plans)?;
        Ok(out.plans.into_iter().map(|mut r| {
            let p = r.planned.take().expect("planned");
            (r, p)
        }).collect())
    }

    #[test]
    fn gemm_plan_is_the_calls_plan_for_every_listed_shape() {
        for (args, ws) in [(vec!["gemm"], None), (vec!["gemm", "--models"], None), (vec!["gemm", "--workspace-bytes", "1048576"], Some(1u64 << 20))] {
            let got = rows(&args).unwrap();
            let list = if args.contains(&"--models") { bench::gemm_model_shapes() } else { bench::gemm_shapes() };
            assert_eq!(got.len(), list.len());
            for ((r, p), (label, s)) in got.iter().zip(&list) {
                let run = mkernel::plan_gemm(*s, GemmOptions::default(), 132, ws).unwrap();
                assert_eq!((&r.label, p.tile.clone(), p.split_slices, p.grid), (label, run.tile.name(), run.split_slices, run.grid));
                assert_eq!(p.tiles, run.tile.tiles(s.m, s.n));
            }
        }
    }

    /// `plan gemm-reduce-scatter` prints `plan_gemm_reduce_scatter`'s plan for every shape
    /// of its list at world sizes 2, 4 and 8 (and ranks sharing a GPU), with the
    /// reduce-scatter's link floor (half the all-reduce's); `--models` leaves out M = 1.
    #[test]
    fn reduce_scatter_plan_is_the_communicators_plan_for_every_listed_shape() {
        for (world, shared) in [(2u32, false), (2, true), (4, false), (8, false)] {
            let w = world.to_string();
            let mut args = vec!["gemm-reduce-scatter", "--world-size", &w];
            if shared {
                args.push("--gpu-shared");
            }
            let out = output(&args).unwrap();
            assert_eq!(out.context.op, "gemm-reduce-scatter");
            // (ranks sharing a GPU plan on their share of it: 132 / world)
            let ctx = PlanContext::new(world, if shared { 132 / world } else { 132 }, shared, CommConfig::default().max_output_elems).unwrap();
            let list = bench::reduce_scatter_shapes();
            assert_eq!(out.plans.len(), list.len());
            for (r, (label, s)) in out.plans.iter().zip(list) {
                let p = r.planned.as_ref().unwrap_or_else(|| panic!("{label} refused at world {world}"));
                let cfg = mkernel::plan_gemm_reduce_scatter(s, GemmAllReduceOptions::default(), ctx).unwrap();
                assert_eq!((&r.label, p.path, p.comm_ctas, p.grid), (&label, Some(cfg.path.name()), Some(cfg.comm_ctas), cfg.grid));
                assert!(mkernel::Collective::ReduceScatter.runs_on(cfg.path), "{label}: {cfg}");
                let ar_link = bench::floors::allreduce_link_us(s, world);
                assert!((p.floor_link_us.unwrap() - ar_link / 2.0).abs() < 1e-9, "{label}");
            }
        }
        let got = rows(&["gemm-reduce-scatter", "--models", "--filter", "llama3-70b"]).unwrap();
        assert!(!got.is_empty() && got.iter().all(|(r, _)| !r.label.starts_with("M=1 ")), "M = 1 is left out");
        let e = output(&["gemm-reduce-scatter", "--shape", "129x8192x4096"]).unwrap();
        assert!(refusals(&e.plans).unwrap_err().to_string().contains("1 of the 1 shapes would be refused"));
    }

    #[test]
    fn fused_plan_is_the_communicators_plan_for_every_listed_shape() {
        for world in [1u32, 2, 4, 8] {
            let w = world.to_string();
            let got = rows(&["gemm-allreduce", "--world-size", &w]).unwrap();
            let ctx = PlanContext::new(world, 132, false, CommConfig::default().max_output_elems).unwrap();
            for ((r, p), (label, s)) in got.iter().zip(bench::gemm_allreduce_shapes()) {
                let cfg = mkernel::plan_gemm_allreduce(s, GemmAllReduceOptions::default(), ctx).unwrap();
                assert_eq!((&r.label, p.path, p.comm_ctas, p.split_slices), (&label, Some(cfg.path.name()), Some(cfg.comm_ctas), cfg.split_slices));
                assert!(p.config.starts_with(&cfg.to_string()), "{}", p.config);
                if world == 1 {
                    // (the local path's grid is the plain GEMM's launch, not the communicator's)
                    let split = if cfg.split_slices > 1 { LastWaveSplit::Slices(cfg.split_slices) } else { LastWaveSplit::Off };
                    let run = mkernel::plan_gemm(s, GemmOptions { tile: Some(cfg.tile), split_last_wave: split, ..Default::default() }, 132, Some(ctx.split_scratch_bytes)).unwrap();
                    assert_eq!(p.grid, run.grid, "{label}");
                } else {
                    assert_eq!(p.grid, cfg.grid, "{label}");
                }
            }
        }
        // One rank, one tile: the plain GEMM launches one CTA, not the communicator's grid.
        let one = rows(&["gemm-allreduce", "--world-size", "1", "--shape", "8x8x8"]).unwrap();
        assert_eq!((one[0].1.path, one[0].1.grid), (Some("local"), 1));
        // The row-parallel layers at TP 2: the o and down projections only, K sharded, the
        // same shapes as bench gemm --models's at its M.
        let got = rows(&["gemm-allreduce", "--models", "--filter", "llama3-70b"]).unwrap();
        assert_eq!(got.len(), 18, "{got:?}");
        assert!(got.iter().all(|(r, _)| gemm_of(r).n == 8192 && (gemm_of(r).k == 4096 || gemm_of(r).k == 14336)), "{got:?}");
        let plain = bench::gemm_model_shapes();
        for (r, _) in got.iter().filter(|(r, _)| [1, 16, 64, 256, 1024, 4096].contains(&gemm_of(r).m)) {
            assert!(plain.iter().any(|(l, s)| *l == r.label && *s == gemm_of(r)), "{}", r.label);
        }
        assert!(got.iter().any(|(r, _)| gemm_of(r).m == 16384));
        // (--filter matches the dimensions too)
        assert_eq!(rows(&["gemm-allreduce", "--models", "--filter", "x8192x14336"]).unwrap().len(), 9);
    }

    #[test]
    fn overrides_reach_the_plan_and_refusals_name_the_shape_and_rule() {
        let r = rows(&["gemm-allreduce", "--shape", "1024x8192x4096", "--comm-path", "one-shot", "--sm-comm", "16", "--tail-ctas", "0"]).unwrap();
        assert_eq!((r[0].1.path, r[0].1.comm_ctas, r[0].1.tail_ctas, r[0].1.grid), (Some("one-shot"), Some(16), Some(0), 132));
        let r = rows(&["gemm", "--shape", "4096x4096x4096", "--tile", "narrow-tma-store", "--sms", "114"]).unwrap();
        assert_eq!((r[0].1.tile.as_str(), r[0].1.grid), ("narrow-tma-store", 114));
        // A refused shape is a row with the call's reason, the others still planned, and
        // the command an argument error (exit status 2) naming the first.
        let out = output(&["gemm-allreduce", "--shape", "1024x8192x4096,1024x8191x4096", "--comm-path", "epilogue"]).unwrap();
        assert!(out.plans[0].planned.is_some() && out.plans[0].refused.is_none());
        let why = out.plans[1].refused.as_deref().unwrap();
        assert!(why.contains("comm_path") && why.contains("N % 8 == 0"), "{why}");
        assert!(render(&out).contains("shape 1024x8191x4096: refused: "), "{}", render(&out));
        let e = refusals(&out.plans).unwrap_err();
        assert!(e.to_string().contains("1 of the 2 shapes") && e.to_string().contains("'shape 1024x8191x4096'"), "{e}");
        assert_eq!(bench::exit_status(e.as_ref()), 2);
        // A count on plan gemm needs --workspace-bytes, said by flag.
        let e = output(&["gemm", "--shape", "2049x8192x4096", "--split-last-wave", "4"]).unwrap_err().to_string();
        assert!(e.contains("--split-last-wave 4") && e.contains("--workspace-bytes"), "{e}");
        let out = output(&["gemm-allreduce", "--shape", "16384x16384x64", "--max-output-elems", "1000"]).unwrap();
        assert!(out.plans[0].refused.as_deref().unwrap().contains("max_output_elems"));
        for (args, flag) in [
            (vec!["gemm-allreduce", "--models", "--world-size", "3"], "--world-size 3"),
            (vec!["gemm-allreduce", "--gpu-shared", "--world-size", "1"], "--gpu-shared"),
            (vec!["gemm", "--shape", "8x8x8,8x8x8"], "listed twice"),
            (vec!["gemm", "--tile", "widest"], "--tile widest"),
        ] {
            let e = output(&args).unwrap_err();
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
        assert!(output(&["gemm", "--sms", "1"]).is_err());
    }

    /// Ranks sharing a GPU plan on their share of it by default, as a communicator with
    /// every rank on one GPU gives them (helper-102: the default planned a whole GPU each);
    /// --sms still says it outright.
    #[test]
    fn shared_gpus_plan_each_ranks_share() {
        for (op, world, want) in [("allgather-gemm", "2", 66), ("gemm-allreduce", "2", 66), ("gemm-reduce-scatter", "4", 33), ("allgather-gemm", "8", 16)] {
            let shared = output(&[op, "--gpu-shared", "--world-size", world, "--shape", "1024x4096x4096"]).unwrap();
            assert_eq!(shared.context.sms, want, "{op} --world-size {world}");
            let grid = shared.plans[0].planned.as_ref().map(|p| p.grid);
            assert!(grid.is_some_and(|g| g <= want), "{op}: {:?}", shared.plans[0].refused);
            let own = output(&[op, "--world-size", world, "--shape", "1024x4096x4096"]).unwrap();
            assert_eq!(own.context.sms, 132, "{op}");
            let given = output(&[op, "--gpu-shared", "--world-size", world, "--sms", "100", "--shape", "1024x4096x4096"]).unwrap();
            assert_eq!(given.context.sms, 100, "{op}");
        }
    }

    #[test]
    fn the_output_says_what_it_is_a_plan_of() {
        let out = output(&["gemm-allreduce", "--filter", "odd M=129", "--sms", "114", "--tile", "wide-tma-store"]).unwrap();
        let text = render(&out);
        assert!(text.starts_with("# plan gemm-allreduce: 114 SMs, world size 2, a GPU per rank, max_output_elems 134217728; overrides: --tile wide-tma-store\n"), "{text}");
        let v: serde_json::Value = serde_json::to_value(&out).unwrap();
        assert_eq!((v["context"]["sms"].as_u64(), v["context"]["world_size"].as_u64()), (Some(114), Some(2)));
        assert_eq!(v["plans"][0]["m"], 129);
        assert_eq!(v["plans"][0]["tile"], "wide-tma-store");
        assert!(v["plans"][0]["path"].is_string() && v["plans"][0].get("refused").is_none(), "{v}");
        // The two numbers: o-proj M=129 x 8192 x 4096 at 790 TFLOP/s and its 2 MiB over 394 GB/s.
        let f = |k: &str| v["plans"][0][k].as_f64().unwrap();
        assert!((f("floor_compute_us") - 2.0 * 129.0 * 8192.0 * 4096.0 / 790e6).abs() < 1e-6);
        assert!((f("floor_link_us") - 129.0 * 8192.0 * 2.0 / 394e3).abs() < 1e-6);
        assert!(text.contains("; floors: compute 11.0 us, link 5.4 us\n"), "{text}");
        let g: serde_json::Value = serde_json::to_value(output(&["gemm", "--filter", "square 4096"]).unwrap()).unwrap();
        assert!(g["plans"][0]["floor_hbm_us"].as_f64().unwrap() > 0.0 && g["plans"][0].get("floor_link_us").is_none(), "{g}");
        assert!(g["plans"][0].get("path").is_none() && g["context"].get("world_size").is_none(), "{g}");
        assert!(render(&output(&["gemm", "--filter", "square 4096"]).unwrap()).contains("mkernel::gemm's own workspace; overrides: none"));
    }
}
