//! `mkernel plan`: what a call of each shape would run, without a GPU. The plain GEMM's
//! tile, last-wave split and grid (`mkernel::plan_gemm`), or the fused GEMM + all-reduce's
//! tile, path and SM partition (`mkernel::plan_gemm_allreduce`), on a described machine
//! (SMs per GPU, world size): the default rules (`TileConfig::choose_for` and the split
//! rules; `FusedConfig`'s) or the overrides given, checked as the calls check them. For
//! seeing which tile a model's layers take before a GPU is at hand, and for reviewing a
//! change to the rules: the output of two commits, diffed, is every plan it changes.

use clap::{Args, Subcommand};
use mkernel::{CommConfig, CommPath, EpiloguePace, GemmAllReduceOptions, GemmOptions, GemmShape, LastWaveSplit, PlanContext};
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
}

/// Options both plans take.
#[derive(Args, Clone, Debug)]
pub struct PlanCommon {
    /// SMs per GPU (132 on the H100 SXM and H200), 2 to 65536. With --gpu-shared, the CTAs
    /// of each rank's share.
    #[arg(long, default_value_t = 132, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(2..=mkernel::MAX_PLAN_GRID as i64))]
    pub sms: u32,
    /// Plan only the shapes whose label contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Print one JSON array (a record per shape) instead of a line per shape.
    #[arg(long)]
    pub json: bool,
    /// Force a tile (catalog names, as the benches' --tile; not bench gemm's fitted names).
    #[arg(long)]
    pub tile: Option<String>,
    /// K-slices for the last wave: off, auto (the default) or a count.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_split_last_wave)]
    pub split_last_wave: Option<LastWaveSplit>,
}

#[derive(Args, Clone, Debug)]
pub struct PlanGemmArgs {
    #[command(flatten)]
    pub common: PlanCommon,
    /// Plan these shapes (MxNxK, comma-separated or repeated) instead of `bench gemm`'s list.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, value_parser = bench::parse_gemm_shape)]
    pub shape: Vec<GemmShape>,
    /// Plan `bench gemm --models`'s shapes (the linear layers of Llama-3-8B/70B and
    /// Qwen2.5-32B at TP 1-8, DeepSeek-V3's experts and router) instead.
    #[arg(long, conflicts_with = "shape")]
    pub models: bool,
    /// Plan `mkernel::gemm_with_workspace` with a workspace of this many bytes of slots (at
    /// least 4) instead of `mkernel::gemm`, which sizes its own as the split rules need.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(4..))]
    pub workspace_bytes: Option<u64>,
}

#[derive(Args, Clone, Debug)]
pub struct PlanArArgs {
    #[command(flatten)]
    pub common: PlanCommon,
    /// Plan these shapes (MxNxK, K each rank's shard) instead of `bench gemm-allreduce`'s list.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, value_parser = bench::parse_gemm_shape)]
    pub shape: Vec<GemmShape>,
    /// Plan the row-parallel layers (o and down projections) of `bench gemm --models`'s
    /// dense models sharded for --world-size ranks, instead (--world-size 2, 4 or 8).
    #[arg(long, conflicts_with = "shape")]
    pub models: bool,
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
    /// Force the communication path (epilogue, one-shot, reduce, push, tma, vec16, scalar, local).
    #[arg(long)]
    pub comm_path: Option<String>,
    /// Force the number of communication CTAs (a path that has them).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub sm_comm: Option<u32>,
    /// Force the number of tail CTAs (one-shot, reduce and push paths).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32))]
    pub tail_ctas: Option<u32>,
    /// The epilogue path's pacing: clock (default) or sleep.
    #[arg(long)]
    pub epilogue_pace: Option<String>,
}

fn parse_split_last_wave(v: &str) -> Result<LastWaveSplit, String> {
    LastWaveSplit::parse(v).map_err(|e| e.to_string())
}

/// One shape's plan, as printed and as written with --json.
#[derive(Serialize, Debug, PartialEq)]
struct PlanRow {
    label: String,
    m: u32,
    n: u32,
    k: u32,
    tile: String,
    /// K-slices per tile left over after the full waves (1: no split).
    split_slices: u32,
    /// Tiles of the output (with the padding of whole clusters).
    tiles: u64,
    /// CTAs of the launch (fused: compute plus communication, without tail CTAs).
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
}

pub fn run(cmd: PlanCmd) -> BenchResult<()> {
    let (rows, json) = match cmd {
        PlanCmd::Gemm(a) => (plan_gemm_rows(&a)?, a.common.json),
        PlanCmd::GemmAllreduce(a) => (plan_fused_rows(&a)?, a.common.json),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        for r in &rows {
            // (a listed shape's label is its dimensions already)
            let dims = format!("{}x{}x{}", r.m, r.n, r.k);
            let label = if r.label.ends_with(&dims) { r.label.clone() } else { format!("{} ({dims})", r.label) };
            println!("{label}: {}; {}", r.tile, r.config);
        }
    }
    Ok(())
}

/// The listed shapes (labelled "shape MxNxK"), or `default` where none is, filtered.
fn shape_list(shapes: &[GemmShape], default: Vec<(String, GemmShape)>, filter: Option<&str>) -> BenchResult<Vec<(String, GemmShape)>> {
    bench::check_unique_shapes(shapes)?;
    let list = if shapes.is_empty() { default } else { shapes.iter().map(|s| (format!("shape {}x{}x{}", s.m, s.n, s.k), *s)).collect() };
    bench::filter_shapes(list, filter)
}

/// A plan's refusal of one shape: an argument error naming the shape (exit status 2).
fn refused(label: &str, e: mkernel::Error) -> Box<dyn std::error::Error> {
    usage(format!("'{label}': {e}"))
}

fn plan_gemm_rows(a: &PlanGemmArgs) -> BenchResult<Vec<PlanRow>> {
    let c = &a.common;
    let tile = bench::parse_tile(c.tile.as_deref(), false)?;
    let default = if a.models { bench::gemm_model_shapes() } else { bench::gemm_shapes() };
    let opts = GemmOptions { tile, split_last_wave: c.split_last_wave.unwrap_or_default(), ..Default::default() };
    let mut rows = Vec::new();
    for (label, s) in shape_list(&a.shape, default, c.filter.as_deref())? {
        let run = mkernel::plan_gemm(s, opts, c.sms, a.workspace_bytes).map_err(|e| refused(&label, e))?;
        let tiles = run.tile.tiles(s.m, s.n);
        let mut config = format!("{}, {tiles} tiles on {} CTAs", run.tile, run.grid);
        if run.split_slices > 1 {
            // (the left-over tiles are those past the full waves of the SMs' CTAs: SplitLaunch::check)
            let rest = tiles % run.grid as u64;
            config += &format!(", the last wave's {rest} in {} K-slices", run.split_slices);
        } else {
            config += &format!(": {:.2} waves", tiles as f64 / run.grid.max(1) as f64);
        }
        rows.push(PlanRow {
            label,
            m: s.m,
            n: s.n,
            k: s.k,
            tile: run.tile.name(),
            split_slices: run.split_slices,
            tiles,
            grid: run.grid,
            path: None,
            comm_ctas: None,
            tail_ctas: None,
            config,
        });
    }
    Ok(rows)
}

/// `--models` of the fused plan: `bench gemm --models`'s o and down projections at
/// tensor parallelism `world` (K the rank's shard, N the hidden size).
fn fused_model_shapes(world: u32) -> BenchResult<Vec<(String, GemmShape)>> {
    if ![2, 4, 8].contains(&world) {
        return Err(usage(format!("--models: the models' layers are sharded for 2, 4 or 8 ranks, got --world-size {world}")));
    }
    let tp = format!(" tp{world} ");
    Ok(bench::gemm_model_shapes()
        .into_iter()
        .filter(|(l, _)| l.contains(&tp) && (l.ends_with(" o") || l.ends_with(" down")))
        .collect())
}

fn plan_fused_rows(a: &PlanArArgs) -> BenchResult<Vec<PlanRow>> {
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
    let max_output_elems = a.max_output_elems.unwrap_or(CommConfig::default().max_output_elems);
    let ctx = PlanContext::new(a.world_size, c.sms, a.gpu_shared, max_output_elems).map_err(|e| usage(e.to_string()))?;
    let default = if a.models { fused_model_shapes(a.world_size)? } else { bench::gemm_allreduce_shapes() };
    let opts = GemmAllReduceOptions {
        tile,
        comm_path,
        comm_ctas: a.sm_comm,
        tail_ctas: a.tail_ctas,
        split_last_wave: c.split_last_wave,
        epilogue_pace,
        ..Default::default()
    };
    let mut rows = Vec::new();
    for (label, s) in shape_list(&a.shape, default, c.filter.as_deref())? {
        let cfg = mkernel::plan_gemm_allreduce(s, opts, ctx).map_err(|e| refused(&label, e))?;
        rows.push(PlanRow {
            label,
            m: s.m,
            n: s.n,
            k: s.k,
            tile: cfg.tile.name(),
            split_slices: cfg.split_slices,
            tiles: cfg.tile.tiles(s.m, s.n),
            grid: cfg.grid,
            path: Some(cfg.path.name()),
            comm_ctas: Some(cfg.comm_ctas),
            tail_ctas: Some(cfg.tail_ctas),
            config: format!("{cfg}{}", bench::waves_note(&cfg, s)),
        });
    }
    Ok(rows)
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

    fn rows(args: &[&str]) -> BenchResult<Vec<PlanRow>> {
        let cli = Cli::try_parse_from(std::iter::once("plan").chain(args.iter().copied()))?;
        match cli.cmd {
            PlanCmd::Gemm(a) => plan_gemm_rows(&a),
            PlanCmd::GemmAllreduce(a) => plan_fused_rows(&a),
        }
    }

    #[test]
    fn gemm_plan_is_the_calls_plan_for_every_listed_shape() {
        for (args, ws) in [(vec!["gemm"], None), (vec!["gemm", "--models"], None), (vec!["gemm", "--workspace-bytes", "1048576"], Some(1u64 << 20))] {
            let got = rows(&args).unwrap();
            let list = if args.contains(&"--models") { bench::gemm_model_shapes() } else { bench::gemm_shapes() };
            assert_eq!(got.len(), list.len());
            for (r, (label, s)) in got.iter().zip(&list) {
                let run = mkernel::plan_gemm(*s, GemmOptions::default(), 132, ws).unwrap();
                assert_eq!((&r.label, r.tile.clone(), r.split_slices, r.grid), (label, run.tile.name(), run.split_slices, run.grid));
                assert_eq!(r.tiles, run.tile.tiles(s.m, s.n));
            }
        }
    }

    #[test]
    fn fused_plan_is_the_communicators_plan_for_every_listed_shape() {
        for world in [1u32, 2, 4, 8] {
            let w = world.to_string();
            let got = rows(&["gemm-allreduce", "--world-size", &w]).unwrap();
            let ctx = PlanContext::new(world, 132, false, CommConfig::default().max_output_elems).unwrap();
            for (r, (label, s)) in got.iter().zip(bench::gemm_allreduce_shapes()) {
                let cfg = mkernel::plan_gemm_allreduce(s, GemmAllReduceOptions::default(), ctx).unwrap();
                assert_eq!((&r.label, r.path, r.comm_ctas, r.split_slices), (&label, Some(cfg.path.name()), Some(cfg.comm_ctas), cfg.split_slices));
                assert!(r.config.starts_with(&cfg.to_string()), "{}", r.config);
            }
        }
        // The row-parallel layers at TP 2: the o and down projections only, K sharded.
        let got = rows(&["gemm-allreduce", "--models", "--filter", "llama3-70b"]).unwrap();
        assert_eq!(got.len(), 12, "{got:?}");
        assert!(got.iter().all(|r| r.n == 8192 && (r.k == 4096 || r.k == 14336)), "{got:?}");
    }

    #[test]
    fn overrides_reach_the_plan_and_refusals_name_the_shape_and_rule() {
        let r = rows(&["gemm-allreduce", "--shape", "1024x8192x4096", "--comm-path", "one-shot", "--sm-comm", "16", "--tail-ctas", "0"]).unwrap();
        assert_eq!((r[0].path, r[0].comm_ctas, r[0].tail_ctas, r[0].grid), (Some("one-shot"), Some(16), Some(0), 132));
        let r = rows(&["gemm", "--shape", "4096x4096x4096", "--tile", "narrow-tma-store", "--sms", "114"]).unwrap();
        assert_eq!((r[0].tile.as_str(), r[0].grid), ("narrow-tma-store", 114));
        // (the epilogue path needs N % 8 == 0; a forced split needs gemm's workspace size)
        let e = rows(&["gemm-allreduce", "--shape", "1024x8191x4096", "--comm-path", "epilogue"]).unwrap_err().to_string();
        assert!(e.contains("'shape 1024x8191x4096'") && e.contains("comm_path"), "{e}");
        assert!(bench::exit_status(rows(&["gemm-allreduce", "--shape", "1024x8191x4096", "--comm-path", "epilogue"]).unwrap_err().as_ref()) == 2);
        let e = rows(&["gemm", "--shape", "2049x8192x4096", "--split-last-wave", "4"]).unwrap_err().to_string();
        assert!(e.contains("split_last_wave") && e.contains("workspace"), "{e}");
        let e = rows(&["gemm-allreduce", "--shape", "16384x16384x64", "--max-output-elems", "1000"]).unwrap_err().to_string();
        assert!(e.contains("max_output_elems"), "{e}");
        let e = rows(&["gemm-allreduce", "--models", "--world-size", "3"]).unwrap_err().to_string();
        assert!(e.contains("--world-size 3"), "{e}");
        assert!(rows(&["gemm", "--sms", "1"]).is_err());
        assert!(rows(&["gemm", "--tile", "widest"]).unwrap_err().to_string().contains("--tile widest"));
    }

    #[test]
    fn json_rows_carry_the_plan() {
        let r = rows(&["gemm-allreduce", "--filter", "odd M=129"]).unwrap();
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(v[0]["m"], 129);
        assert_eq!(v[0]["tile"], r[0].tile.as_str());
        assert!(v[0]["path"].is_string());
        let g: serde_json::Value = serde_json::to_value(rows(&["gemm", "--filter", "square 4096"]).unwrap()).unwrap();
        assert!(g[0].get("path").is_none(), "{g}");
    }
}
