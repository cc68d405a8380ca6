//! `mkernel bench moe-dispatch-gemm`: the fused MoE dispatch + grouped GEMM
//! (`Communicator::moe_dispatch_gemm`) on the GPUs of this machine (one process driving every
//! GPU, rank i on GPU i; `--share-gpu`: every rank on GPU 0), with a uniform random top-k
//! routing of every rank's tokens.
//!
//! Side by side in one process (one iteration of each per round, in a random order per round:
//! [`super::time_rounds_ms`], after an L2 flush and a device barrier of the ranks): (d) the
//! fused call; (g) cuBLAS per local expert over the tokens each rank received (one call per
//! expert on its segment's rows, no padding), the experts' GEMMs alone; and with a GPU per
//! rank (NCCL) (a) the unfused baseline, an all-to-all of the token rows (`ncclSend` /
//! `ncclRecv` blocks per (rank, expert) in one group, the rank's own included) into the same
//! segments, then (g), and (c) that all-to-all alone. The baseline is given its routing
//! for free: its tokens are uploaded already sorted by destination and expert, and the
//! counts' exchange and the host synchronisation a real one needs to size its buffers are not
//! timed. Reported: the medians, speedup a / d, overlap max(g, c) / d, and g / d (the share of
//! the fused call the experts' GEMMs alone account for). `--check`: the layout and `dest_rows`
//! against the host's routing, and with NCCL the baseline's rows against the fused call's.
//! Correctness is the GPU tests' (`tests/tests/gpu_moe_dispatch_gemm.rs`); `--check` here
//! checks the call's layout (segment starts, rows used, every rank's counts) and every rank's
//! `dest_rows` (every (token, k) entry's row on its expert's rank) against the host's model of
//! the routing, [`mkernel::check::MoeRouting`], the one the tests use, exactly
//! ([`routing_verdict`]); the baseline's blocks come from that model too.

use std::sync::Arc;

use clap::Args;
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::{Cublas, Nccl};
use mkernel::check::{self, MoeRouting};
use mkernel::{CommConfig, Communicator, MoeDispatchGemmOptions, MoeShape};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::{run_info, usage, BenchResult, Common, Part};

#[derive(Args, Clone, Debug)]
pub struct MoeArgs {
    #[command(flatten)]
    pub common: Common,
    /// Number of GPUs (ranks), 2 to 8; default: all visible. With --share-gpu, the number
    /// of ranks on GPU 0 (default 2).
    #[arg(long, value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(2..=8))]
    pub gpus: Option<usize>,
    /// Put every rank on GPU 0 (each kernel on its share of the SMs).
    #[arg(long)]
    pub share_gpu: bool,
    #[command(flatten)]
    pub shape: MoeShapeArgs,
}

/// The shapes and overrides `bench moe-dispatch-gemm`, `plan moe-dispatch-gemm` and `bench
/// moe-gemm-combine` take (each with its own default shapes: [`MoeShapeArgs::shapes_from`]).
#[derive(Args, Clone, Debug)]
pub struct MoeShapeArgs {
    /// Tokens per rank (and max_tokens), overriding the shapes' 4096.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub tokens: Option<u32>,
    /// Experts of all ranks, overriding each shape's (a multiple of the ranks).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub experts: Option<u32>,
    /// Experts per token, overriding each shape's.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub topk: Option<u32>,
    /// Output columns (N: the dispatch's expert width, the combine's hidden size), overriding
    /// each shape's.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub n: Option<u32>,
    /// Inner dimension (K, a multiple of 8: the dispatch's hidden size, the combine's
    /// intermediate size), overriding each shape's.
    #[arg(long, value_parser = clap::value_parser!(u32).range(8..))]
    pub k: Option<u32>,
    /// Force the GEMM tile: wide, narrow, wide-tma-store, narrow-tma-store or
    /// m64-wide-tma-store (mkernel_kernels::moe_dispatch_gemm::tiles).
    #[arg(long)]
    pub tile: Option<String>,
    /// Push CTAs per rank (default: the call's options', MoeDispatchGemmOptions or
    /// MoeGemmCombineOptions).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub push_ctas: Option<u32>,
    /// Tokens per arrival flag (default: MoeDispatchGemmOptions's; more than max_tokens: one
    /// chunk a segment). The dispatch's only: bench moe-gemm-combine refuses it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_rows: Option<u32>,
}

impl MoeShapeArgs {
    /// [`shapes`] with the overrides applied, labelled with their sizes.
    pub fn shapes(&self) -> Vec<(String, MoeShape)> {
        self.shapes_from(shapes)
    }

    /// The default shapes `base` gives for the tokens (4096 unless --tokens) with the
    /// overrides applied, labelled with their sizes.
    pub fn shapes_from(&self, base: fn(u32) -> Vec<(String, MoeShape)>) -> Vec<(String, MoeShape)> {
        base(self.tokens.unwrap_or(4096))
            .into_iter()
            .map(|(l, s)| {
                let s = MoeShape {
                    experts: self.experts.unwrap_or(s.experts),
                    topk: self.topk.unwrap_or(s.topk),
                    n: self.n.unwrap_or(s.n),
                    k: self.k.unwrap_or(s.k),
                    ..s
                };
                // (with --experts or --topk the label keeps the model's name only, not its
                // "E8 top2": the sizes follow; helper-122)
                let l = if self.experts.is_some() || self.topk.is_some() { l.split(" E").next().unwrap_or(&l).to_string() } else { l };
                let tokens = if s.tokens == 1 { "1 token".to_string() } else { format!("{} tokens", s.tokens) };
                (format!("{l} ({tokens}, {} experts, top-{}, {}x{})", s.experts, s.topk, s.n, s.k), s)
            })
            .collect()
    }

    /// The call's options (`recv_capacity` as given; a tile of the catalog, which the call
    /// itself refuses where the MoE dispatch has no kernel for it: `plan` shows that per shape).
    pub fn options(&self, recv_capacity: Option<u32>) -> BenchResult<MoeDispatchGemmOptions> {
        let tile = parse_moe_tile(self.tile.as_deref())?;
        Ok(MoeDispatchGemmOptions { tile, push_ctas: self.push_ctas, chunk_rows: self.chunk_rows, recv_capacity })
    }
}

/// --tile of the MoE benches and plans: a catalog tile's name (the call refuses one the MoE
/// kernels lack, naming theirs); a name no tile has is refused listing the MoE calls' tiles,
/// not the GEMM benches' long list (helper-122).
pub(crate) fn parse_moe_tile(name: Option<&str>) -> BenchResult<Option<mkernel::TileConfig>> {
    match name {
        Some(n) if mkernel::TileConfig::by_name(n).is_none() => {
            let names: Vec<String> = mkernel_kernels::moe_dispatch_gemm::tiles().map(|t| t.name()).collect();
            Err(super::usage(format!("--tile {n}: expected one of the MoE calls' tiles, {}", names.join(", "))))
        }
        n => super::parse_tile(n, false),
    }
}

impl MoeArgs {
    /// The ranks, where the flags say them without a GPU count: --share-gpu's (--gpus, 2 by
    /// default) or a given --gpus; `None` where they are the GPUs present.
    pub fn known_world(&self) -> Option<usize> {
        if self.share_gpu { Some(self.gpus.unwrap_or(2)) } else { self.gpus }
    }

    /// The flags given that shape a shape (its routing and sizes, the ranks), as "--experts 7,
    /// --gpus 3", so that a refused shape names what made it; "no shape flag" without one.
    pub fn shape_flags(&self) -> String {
        let given: Vec<String> = [
            ("--tokens", self.shape.tokens),
            ("--experts", self.shape.experts),
            ("--topk", self.shape.topk),
            ("--n", self.shape.n),
            ("--k", self.shape.k),
            ("--gpus", self.gpus.map(|g| g as u32)),
        ]
        .iter()
        .filter_map(|(flag, v)| v.map(|v| format!("{flag} {v}")))
        .collect();
        if given.is_empty() { "no shape flag".to_string() } else { given.join(", ") }
    }

    /// The shapes `base` gives with the overrides that --filter keeps ([`filter_moe_shapes`]),
    /// each checked by `check` at `world` ranks where they are known: refused flags are usage
    /// errors naming the shape, the rule and the flags given. Needs no GPU.
    pub fn checked_shapes(
        &self,
        base: fn(u32) -> Vec<(String, MoeShape)>,
        world: Option<usize>,
        check: fn(MoeShape, u32) -> mkernel_kernels::Result<()>,
    ) -> BenchResult<Vec<(String, MoeShape)>> {
        let list = filter_moe_shapes(self.shape.shapes_from(base), self.common.filter.as_deref())?;
        if let Some(world) = world {
            for (label, s) in &list {
                check(*s, world as u32).map_err(|e| usage(format!("{label}: {e} ({}, {world} ranks)", self.shape_flags())))?;
            }
        }
        Ok(list)
    }
}

/// An MoE shape's dimensions as `plan` writes them: its even routing's GEMM, M = tokens x topk
/// (the rows a rank's experts get when every expert gets its share), "MxNxK".
pub(crate) fn even_dims(s: &MoeShape) -> String {
    format!("{}x{}x{}", s.tokens.saturating_mul(s.topk), s.n, s.k)
}

/// The shapes whose label or [`even_dims`] contain `filter`, as `plan` matches them (all
/// without one); a usage error naming --filter and the labels when none is left.
pub(crate) fn filter_moe_shapes(list: Vec<(String, MoeShape)>, filter: Option<&str>) -> BenchResult<Vec<(String, MoeShape)>> {
    super::filter_shapes_by(list, filter, even_dims)
}

/// The default shapes, per rank: Mixtral-8x7B-like (8 experts, top-2, the gate + up
/// projection 2 x 14336 by hidden 4096) and DeepSeek-V3-like (256 routed experts, top-8, gate +
/// up 2 x 2048 by hidden 7168), 4096 tokens a rank.
pub fn shapes(tokens: u32) -> Vec<(String, MoeShape)> {
    vec![
        ("mixtral-like E8 top2".into(), MoeShape { tokens, max_tokens: tokens, topk: 2, experts: 8, n: 28672, k: 4096 }),
        ("deepseek-v3-like E256 top8".into(), MoeShape { tokens, max_tokens: tokens, topk: 8, experts: 256, n: 4096, k: 7168 }),
    ]
}

/// One MoE bench row (the dispatch's and the combine's): the shape, the plan, the medians and
/// what they make; the baseline's entries only with a GPU per rank.
#[derive(Serialize)]
pub(super) struct MoeRow {
    label: String,
    tokens: u32,
    topk: u32,
    experts: u32,
    /// The GEMM's N (the dispatch's expert width; the combine's hidden size).
    n: u32,
    /// The GEMM's K (the dispatch's hidden size; the combine's intermediate size).
    k: u32,
    world: usize,
    config: String,
    /// Rows each rank's GEMM covered (its segments, padding included).
    rows: Vec<u32>,
    fused_ms: f64,
    cublas_per_expert_ms: f64,
    /// cublas_per_expert_ms / fused_ms.
    gemm_share: f64,
    /// With a GPU per rank: the unfused baseline (the dispatch's: the all-to-all then cuBLAS
    /// per expert; the combine's: cuBLAS per expert, the all-to-all back, the weighted sum),
    /// the all-to-all alone, speedup (baseline / fused) and overlap (max(cuBLAS, all-to-all)
    /// / fused). None on a shared GPU.
    baseline_ms: Option<f64>,
    nccl_ms: Option<f64>,
    speedup: Option<f64>,
    overlap: Option<f64>,
    check: Option<String>,
}

/// Prints a bench row and returns it for the JSON: `times` the medians, with the baseline's
/// (and the all-to-all's) where `with_baseline`.
#[allow(clippy::too_many_arguments)]
pub(super) fn moe_row(label: String, s: MoeShape, world: usize, plan: String, rows: Vec<u32>, times: &super::FusedTimes, with_baseline: bool, check: Option<String>) -> MoeRow {
    let (fused, cublas) = (times.fused, times.compute);
    let share = cublas / fused;
    let (baseline, a2a) = if with_baseline { (Some(times.baseline), Some(times.comm)) } else { (None, None) };
    let speedup = baseline.map(|b| b / fused);
    let overlap = a2a.map(|c| cublas.max(c) / fused);
    let opt = |v: Option<f64>, w: usize, p: usize| v.map_or(format!("{:>w$}", "-"), |x| format!("{x:>w$.p$}"));
    println!(
        "{label:<28} {fused:>9.4} {cublas:>12.4} {share:>7.3} {} {} {} {}  {rows:?} / {plan}{}",
        opt(baseline, 9, 4),
        opt(a2a, 9, 4),
        opt(speedup, 7, 3),
        opt(overlap, 7, 3),
        check.as_ref().map_or(String::new(), |c| format!(" | {c}"))
    );
    MoeRow {
        label,
        tokens: s.tokens,
        topk: s.topk,
        experts: s.experts,
        n: s.n,
        k: s.k,
        world,
        config: plan,
        rows,
        fused_ms: fused,
        cublas_per_expert_ms: cublas,
        gemm_share: share,
        baseline_ms: baseline,
        nccl_ms: a2a,
        speedup,
        overlap,
        check,
    }
}

/// The unfused baseline's all-to-all for one routing (`m`, the host's model): each rank's
/// tokens sorted by (destination rank, local expert), token order within (`sorted` host rows),
/// and the NCCL blocks (in elements, the rank's own included) into the segments of the fused
/// call's layout (the model's, which `--check` compares with the call's).
struct Exchange {
    sorted: Vec<Vec<bf16>>,
    blocks: Vec<mkernel::baseline::P2pBlocks>,
}

fn exchange(host_x: &[Vec<bf16>], m: &MoeRouting, s: MoeShape) -> Exchange {
    let (k, topk, el, world) = (s.k as usize, s.topk as usize, m.local_experts(), m.world());
    let mut sorted = Vec::new();
    let mut blocks = vec![mkernel::baseline::P2pBlocks::default(); world];
    for (src, per_expert) in m.entries().iter().enumerate() {
        let mut rows: Vec<bf16> = Vec::new();
        // (g = q x El + e: by destination rank q, then local expert e)
        for (g, entries) in per_expert.iter().enumerate() {
            let q = g / el;
            let first = rows.len();
            for &i in entries {
                let t = i / topk;
                rows.extend_from_slice(&host_x[src][t * k..(t + 1) * k]);
            }
            let n = rows.len() - first;
            // (where src's rows for g land on q: the segment's start, after ranks before src)
            let dst = m.block_start(src, g).unwrap_or_default() as usize * k;  // (src and g are the model's)
            blocks[src].sends.push((q, first, n));
            blocks[q].recvs.push((src, dst, n));
        }
        sorted.push(rows);
    }
    Exchange { sorted, blocks }
}

/// `--check`'s verdict on the dispatch's routing: every rank's layout (`layouts[q]`: segment
/// starts, rows used, tokens of every source for each expert) and `dest_rows` (`dests[r]`,
/// \[tokens x topk\]: every entry's row on its expert's rank), each against the host's
/// model, exactly. "layout PASS, dest_rows PASS"; else an error saying "check FAIL" with
/// both verdicts, each failure naming the rank and its first differing word or entry (the
/// value read and the model's).
fn routing_verdict(model: &MoeRouting, layouts: &[Vec<u32>], dests: &[Vec<u32>], topk: usize) -> Result<String, String> {
    let verdict = |what: &str, bad: Vec<String>| if bad.is_empty() { format!("{what} PASS") } else { format!("{what} FAIL: {}", bad.join("; ")) };
    let bad_layouts: Vec<String> = layouts.iter().enumerate().filter_map(|(q, l)| model.check_layout(q, l).err()).collect();
    let bad_dests: Vec<String> = dests.iter().enumerate().filter_map(|(r, d)| model.check_dest(r, d, topk).err()).collect();
    let pass = bad_layouts.is_empty() && bad_dests.is_empty();
    let text = format!("{}, {}", verdict("layout", bad_layouts), verdict("dest_rows", bad_dests));
    if pass { Ok(text) } else { Err(format!("check FAIL: {text}")) }
}

/// The workspace (elements, `CommConfig::max_output_elems`) the bench creates its
/// communicators with for `shapes` on `world` ranks, and `plan moe-dispatch-gemm` plans with
/// unless given --max-output-elems: the largest receive buffer of `recv_capacity` rows (None:
/// each shape's worst case, the call's default) of K, with the counts
/// ([`mkernel::moe_workspace_elems_needed`]), of the shapes a communicator can run (the shape
/// rules, a worst case within u32, within the largest workspace; the others the bench refuses
/// before any GPU, the plan in their rows).
pub(crate) fn workspace_elems(shapes: &[(String, MoeShape)], world: u32, recv_capacity: Option<u32>) -> u64 {
    super::largest_workspace(shapes.iter().filter_map(|(_, s)| {
        mkernel_kernels::moe_dispatch_gemm::check_shape(*s, world).ok()?;
        let rows = recv_capacity.or_else(|| s.worst_case_recv_rows(world))?;
        Some(mkernel::moe_workspace_elems_needed(rows, s.k))
    }))
}

/// Distinct experts per token drawn uniformly (a fresh routing from `seed`).
pub(super) fn routing(tokens: u32, s: MoeShape, seed: u64) -> Vec<i32> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut ids = Vec::with_capacity(tokens as usize * s.topk as usize);
    for _ in 0..tokens {
        let mut pick: Vec<i32> = Vec::with_capacity(s.topk as usize);
        while pick.len() < s.topk as usize {
            let g = rng.random_range(0..s.experts as i32);
            if !pick.contains(&g) {
                pick.push(g);
            }
        }
        ids.extend(pick);
    }
    ids
}

pub fn run(args: MoeArgs) -> BenchResult<()> {
    super::check_out_dir(&args.common)?;
    // (options refused before any GPU is touched)
    let opts = args.shape.options(None)?;
    if let Some(t) = opts.tile.filter(|t| !mkernel_kernels::moe_dispatch_gemm::has_kernel(*t)) {
        let names: Vec<String> = mkernel_kernels::moe_dispatch_gemm::tiles().map(|x| x.name()).collect();
        return Err(usage(format!("--tile {}: the MoE dispatch + GEMM has kernels for {} only", t.name(), names.join(", "))));
    }
    if args.shape.k.is_some_and(|k| k % 8 != 0) {
        return Err(usage("--k: the hidden size must be a multiple of 8 (16-byte rows)".to_string()));
    }
    // (--filter, as plan matches it, and the shapes where the ranks are known without a GPU
    // count: --share-gpu or --gpus)
    let check = mkernel_kernels::moe_dispatch_gemm::check_shape;
    let list = args.checked_shapes(shapes, args.known_world(), check)?;
    let present = mkernel::device_count()?;
    let world = if args.share_gpu { args.gpus.unwrap_or(2) } else { args.gpus.unwrap_or(present) };
    if !args.share_gpu && (world < 2 || world > present) {
        return Err(usage(format!("--gpus: an MoE dispatch needs 2 ranks or more, and {world} ranks need as many GPUs ({present} present); --share-gpu puts them on GPU 0")));
    }
    let devices: Vec<usize> = if args.share_gpu { vec![0; world] } else { (0..world).collect() };
    for (label, s) in &list {
        check(*s, world as u32).map_err(|e| usage(format!("{label}: {e} ({}, {world} ranks)", args.shape_flags())))?;
        s.worst_case_recv_rows(world as u32).ok_or_else(|| usage(format!("{label}: receive rows exceed u32")))?;
    }
    let max = workspace_elems(&list, world as u32, None);
    let comms = Communicator::local_group(&devices, CommConfig { max_output_elems: max, ..Default::default() })?;
    let mut plans = Vec::new();
    for (label, s) in &list {
        plans.push(comms[0].plan_moe_dispatch_gemm(*s, opts).map_err(|e| usage(format!("{label}: {e}")))?);
    }
    let streams: Vec<Arc<CudaStream>> = comms.iter().map(|c| c.context().new_stream()).collect::<Result<_, _>>()?;
    let mut blas: Vec<Cublas> = streams.iter().map(Cublas::new).collect::<Result<_, _>>()?;
    let nccl = if args.share_gpu { None } else { Some(Nccl::local_group(&streams)?) };
    let info = run_info(streams[0].context())?;
    println!("# mkernel bench moe-dispatch-gemm: {world} ranks on {} ({}), commit {}", if args.share_gpu { "GPU 0".to_string() } else { format!("{world} GPUs") }, info.device, info.commit);
    println!(
        "{:<28} {:>9} {:>12} {:>7} {:>9} {:>9} {:>7} {:>7}  rows a rank / config / check",
        "shape", "fused ms", "cuBLAS/exp", "share", "base ms", "NCCL a2a", "speedup", "overlap"
    );
    let mut rows_out = Vec::new();
    for ((label, s), plan) in list.into_iter().zip(plans) {
        let (t, k, n, topk) = (s.tokens as usize, s.k as usize, s.n as usize, s.topk as usize);
        let el = (s.experts as usize) / world;
        let seed = check::fresh_seed();
        let (mut x, mut ids, mut w, mut out, mut dest, mut layout) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut host_ids, mut host_x) = (Vec::new(), Vec::new());
        for (r, st) in streams.iter().enumerate() {
            let hx = check::random_bf16(t * k, seed.wrapping_add(3 * r as u64));
            x.push(st.clone_htod(&hx)?);
            host_x.push(hx);
            let hid = routing(s.tokens, s, seed.wrapping_add(3 * r as u64 + 1));
            ids.push(st.clone_htod(&hid)?);
            host_ids.push(hid);
            w.push(st.clone_htod(&check::random_bf16(el * n * k, seed.wrapping_add(3 * r as u64 + 2)))?);
            out.push(super::alloc::<bf16>(st, plan.recv_capacity as usize * n, &label, "out")?);
            dest.push(super::alloc::<u32>(st, t * topk, &label, "dest_rows")?);
            layout.push(super::alloc::<u32>(st, mkernel::moe_layout_words(el as u32, world as u32), &label, "layout")?);
        }
        // One call first: its layout gives each rank's rows for the cuBLAS floor.
        for r in 0..world {
            comms[r].moe_dispatch_gemm(&streams[r], &x[r], &ids[r], &w[r], &mut out[r], &mut dest[r], &mut layout[r], s, opts)?;
        }
        for (r, c) in comms.iter().enumerate() {
            c.synchronize(&streams[r])?;
        }
        let model = MoeRouting::new(&host_ids, s.experts).map_err(|e| format!("{label}: the host's routing model: {e}"))?;
        let (mut rows, mut layouts) = (Vec::new(), Vec::new());
        let mut checked = None;
        for (r, st) in streams.iter().enumerate() {
            let l = st.clone_dtoh(&layout[r])?;
            rows.push(l[el]);
            layouts.push(l);
        }
        if args.common.check {
            let dests = streams.iter().zip(&dest).map(|(st, d)| st.clone_dtoh(d)).collect::<Result<Vec<_>, _>>()?;
            checked = Some(routing_verdict(&model, &layouts, &dests, topk).map_err(|e| format!("{label}: {e}"))?);
        }
        // cuBLAS per local expert over each rank's received rows (the segments' tokens, as
        // the layout says) by that expert's weights: the unfused grouped GEMM, on the same
        // buffers' layout (the fused call's receive rows stand in for an all-to-all's).
        let mut groups = Vec::new();
        let (mut ga, mut gc) = (Vec::new(), Vec::new());
        for (r, st) in streams.iter().enumerate() {
            let l = &layouts[r];
            groups.push((0..el).map(|e| (l[e], (0..world).map(|src| l[el + 1 + e * world + src]).sum(), (e * n) as u32)).collect::<Vec<(u32, u32, u32)>>());
            let m = rows[r].max(1) as usize;
            ga.push(st.clone_htod(&check::random_bf16(m * k, seed.wrapping_add(100 + r as u64)))?);
            gc.push(super::alloc::<bf16>(st, m * n, &label, "cuBLAS out")?);
        }
        // The baseline's all-to-all (a GPU per rank): the sorted tokens, then into `ga`'s segments.
        let plan_a2a = nccl.as_ref().map(|_| exchange(&host_x, &model, s));
        let mut sorted = Vec::new();
        if let Some(p) = &plan_a2a {
            for (r, st) in streams.iter().enumerate() {
                sorted.push(if p.sorted[r].is_empty() { st.alloc_zeros::<bf16>(1)? } else { st.clone_htod(&p.sorted[r])? });
            }
        }
        let all_to_all = |ga: &mut Vec<CudaSlice<bf16>>| -> BenchResult<()> {
            let (Some(nc), Some(p)) = (&nccl, &plan_a2a) else { return Ok(()) };
            let sends: Vec<&CudaSlice<bf16>> = sorted.iter().collect();
            let mut recvs: Vec<&mut CudaSlice<bf16>> = ga.iter_mut().collect();
            nc.exchange_blocks(&sends, &mut recvs, &p.blocks)?;
            Ok(())
        };
        if plan_a2a.is_some() {
            all_to_all(&mut ga)?;
            if args.common.check {
                // The baseline's rows (all-to-all, then cuBLAS per expert) against the fused call's.
                for r in 0..world {
                    blas[r].gemm_bf16_groups(&ga[r], &w[r], &mut gc[r], s.n, s.k, &groups[r])?;
                }
                for (r, st) in streams.iter().enumerate() {
                    let (fused_rows, base_rows) = (st.clone_dtoh(&out[r])?, st.clone_dtoh(&gc[r])?);
                    let (mut got, mut want) = (Vec::new(), Vec::new());
                    for &(first, tot, _) in &groups[r] {
                        let span = first as usize * n..(first + tot) as usize * n;
                        got.extend_from_slice(&base_rows[span.clone()]);
                        want.extend(fused_rows[span].iter().map(|v| v.to_f32()));
                    }
                    let cmp = check::compare(&got, &want, None, n, k);
                    if !cmp.passed() {
                        return Err(format!("{label}: rank {r}: the baseline's rows differ from the fused call's: {cmp}").into());
                    }
                }
                checked = checked.map(|c| format!("{c}, baseline = fused"));
            }
        }
        let t = super::time_fused_and_baseline(&comms, &streams, &args.common, plan_a2a.is_some(), &label, |part| -> BenchResult<()> {
            match part {
                // (no weighted sum: time_fused_and_baseline asks for none)
                Part::Sum => return Err("bench moe-dispatch-gemm has no weighted sum".into()),
                Part::Fused => {
                    for r in 0..world {
                        comms[r].moe_dispatch_gemm(&streams[r], &x[r], &ids[r], &w[r], &mut out[r], &mut dest[r], &mut layout[r], s, opts)?;
                    }
                }
                // (with NCCL: the all-to-all of the token rows)
                Part::Comm => all_to_all(&mut ga)?,
                // (cuBLAS per expert)
                Part::Compute => {
                    for r in 0..world {
                        blas[r].gemm_bf16_groups(&ga[r], &w[r], &mut gc[r], s.n, s.k, &groups[r])?;
                    }
                }
            }
            Ok(())
        })?;
        rows_out.push(moe_row(label, s, world, plan.to_string(), rows, &t, plan_a2a.is_some(), checked));
    }
    super::save_ranks_report(&args.common, "moe_dispatch_gemm", info, args.share_gpu, rows_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Labels after overrides: --experts / --topk drop the model's "E8 top2" (the sizes follow),
    /// one token is "1 token"; without them the default labels.
    #[test]
    fn labels_follow_the_overrides() {
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            moe: MoeArgs,
        }
        let labels = |args: &[&str]| -> Vec<String> {
            let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
            cli.moe.shape.shapes().into_iter().map(|(l, _)| l).collect()
        };
        let d = labels(&[]);
        assert!(d[0].starts_with("mixtral-like E8 top2 (4096 tokens, 8 experts, top-2,"), "{d:?}");
        let e = labels(&["--experts", "4", "--tokens", "1"]);
        assert!(e[0].starts_with("mixtral-like (1 token, 4 experts, top-2,") && !e[0].contains("E8"), "{e:?}");
        assert!(e[1].starts_with("deepseek-v3-like (1 token, 4 experts, top-8,"), "{e:?}");
        assert!(labels(&["--topk", "1"])[0].starts_with("mixtral-like (4096 tokens, 8 experts, top-1,"));
    }

    /// --tile: an unknown name is refused listing the MoE kernels' tiles (every one of them,
    /// and none of the GEMM benches' families); a catalog name parses.
    #[test]
    fn unknown_tiles_are_refused_naming_the_moe_tiles() {
        let e = parse_moe_tile(Some("bogus")).unwrap_err().to_string();
        assert!(e.contains("--tile bogus") && !e.contains("swap-ab"), "{e}");
        for t in mkernel_kernels::moe_dispatch_gemm::tiles() {
            assert!(e.contains(&t.name()), "{e}: {t}");
            assert_eq!(parse_moe_tile(Some(&t.name())).unwrap(), Some(t));
        }
        assert_eq!(parse_moe_tile(None).unwrap(), None);
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        moe: MoeArgs,
    }

    /// The baseline's blocks, carried out on the host (each pair's sends and receives matched
    /// in listed order, as NCCL does), put every routed token row where the fused call's
    /// layout has it: segment start + the tokens of earlier ranks + its place in token order.
    #[test]
    fn exchange_blocks_land_in_the_fused_layout() {
        for (world, experts, topk, tokens) in [(2usize, 8u32, 2u32, [37u32, 50, 0, 0]), (3, 6, 3, [20, 0, 33, 0]), (4, 16, 4, [9, 17, 25, 3])] {
            let s = MoeShape { tokens: 0, max_tokens: 50, topk, experts, n: 8, k: 16 };
            let (k, el) = (s.k as usize, experts as usize / world);
            let host_ids: Vec<Vec<i32>> = (0..world).map(|r| routing(tokens[r], s, 7 + r as u64)).collect();
            // (each row's values name it: 64 src + token, exact in bf16 below 256)
            let host_x: Vec<Vec<bf16>> =
                (0..world).map(|r| (0..tokens[r] as usize * k).map(|i| bf16::from_f32((r * 64 + i / k) as f32)).collect()).collect();
            let model = MoeRouting::new(&host_ids, experts).unwrap();
            let ex = exchange(&host_x, &model, s);
            let mut recv: Vec<Vec<bf16>> = model.rows_used().iter().map(|&rows| vec![bf16::from_f32(-1.0); rows as usize * k]).collect();
            super::super::replay_exchange(&ex.blocks, &ex.sorted, &mut recv);
            for (q, (recv_q, starts)) in recv.iter().zip(model.seg_start()).enumerate() {
                for (e, &start) in starts.iter().enumerate() {
                    let g = q * el + e;
                    let mut row = start as usize;
                    for (src, ids) in host_ids.iter().enumerate() {
                        for (i, _) in ids.iter().enumerate().filter(|(_, &id)| id == g as i32) {
                            let want = (src * 64 + i / topk as usize) as f32;
                            assert!(recv_q[row * k..(row + 1) * k].iter().all(|v| v.to_f32() == want), "world {world} rank {q} expert {e} row {row}");
                            row += 1;
                        }
                    }
                }
            }
        }
    }

    /// --check's verdict: PASS for the model's own layouts and dest_rows; a wrong dest_rows
    /// entry or layout word fails naming the rank, the entry (token, choice, expert) or word,
    /// the value read and the model's, with the other part's verdict alongside.
    #[test]
    fn routing_verdict_checks_layouts_and_dest_rows_of_every_rank() {
        let (world, experts, topk) = (3usize, 6u32, 2usize);
        let s = MoeShape { tokens: 0, max_tokens: 40, topk: topk as u32, experts, n: 8, k: 16 };
        let host_ids: Vec<Vec<i32>> = [40u32, 0, 25].iter().enumerate().map(|(r, &t)| routing(t, s, 11 + r as u64)).collect();
        let model = MoeRouting::new(&host_ids, experts).unwrap();
        let layouts: Vec<Vec<u32>> = (0..world).map(|q| model.layout(q).unwrap()).collect();
        let dests = model.dest.clone();
        assert_eq!(routing_verdict(&model, &layouts, &dests, topk).unwrap(), "layout PASS, dest_rows PASS");
        // The last rank's entry 7 (token 3, choice 1) one row off.
        let mut bad = dests.clone();
        bad[2][7] += 1;
        let g = host_ids[2][7];
        let e = routing_verdict(&model, &layouts, &bad, topk).unwrap_err();
        let want = format!(
            "check FAIL: layout PASS, dest_rows FAIL: rank 2's dest_rows: 1 of 50 entries differ, first entry 7 (token 3, choice 1, expert {g} on rank {}): row {}, model row {}",
            g / 2,
            model.dest[2][7] + 1,
            model.dest[2][7]
        );
        assert_eq!(e, want);
        // Unwritten dest_rows (zeros) on rank 0 and a wrong layout word on rank 1: both named.
        bad[0].iter_mut().for_each(|d| *d = 0);
        let mut bad_layouts = layouts.clone();
        bad_layouts[1][0] = 128;
        let e = routing_verdict(&model, &bad_layouts, &bad, topk).unwrap_err();
        assert!(e.starts_with("check FAIL: layout FAIL: rank 1's layout:"), "{e}");
        assert!(e.contains("dest_rows FAIL: rank 0's dest_rows:") && e.contains("; rank 2's dest_rows: 1 of 50"), "{e}");
        // A rank without tokens has nothing to differ in; a short read is named.
        let mut short = dests.clone();
        short[2].pop();
        assert!(routing_verdict(&model, &layouts, &short, topk).unwrap_err().contains("rank 2's dest_rows: 49 entries, model 50"));
    }

    /// --filter matches a label or the even routing's MxNxK, as plan does; with --share-gpu a
    /// shape the ranks cannot run and a --filter matching nothing are usage errors (exit 2)
    /// naming the flag, before any GPU is touched.
    #[test]
    fn filter_and_shapes_are_checked_before_any_gpu() {
        let cli = Cli::try_parse_from(["x", "--filter", "32768x4096x7168"]).unwrap();
        let kept = cli.moe.checked_shapes(shapes, Some(2), mkernel_kernels::moe_dispatch_gemm::check_shape).unwrap();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].0.starts_with("deepseek"), "{}", kept[0].0);
        for (args, flag) in [
            (&["x", "--share-gpu", "--filter", "nothing", "--no-json"][..], "--filter"),
            (&["x", "--share-gpu", "--experts", "7", "--no-json"], "--experts 7"),
        ] {
            let e = run(Cli::try_parse_from(args).unwrap().moe).unwrap_err();
            assert_eq!(super::super::exit_status(e.as_ref()), 2, "{args:?}: {e}");
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
    }

    /// Bad options are usage errors (exit 2) before any GPU is touched: a tile without an
    /// MoE kernel, K not a multiple of 8; 0 tokens, push CTAs or chunk rows are refused by
    /// the parser.
    #[test]
    fn bad_options_are_usage_errors_before_any_gpu() {
        let refused = |args: &[&str]| {
            let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
            let e = run(cli.moe).unwrap_err();
            (super::super::exit_status(e.as_ref()), e.to_string())
        };
        let (code, e) = refused(&["--tile", "wide-tma-store-c2", "--no-json"]);
        assert_eq!(code, 2, "{e}");
        assert!(e.contains("--tile") && e.contains("wide-tma-store") && e.contains("m64-wide-tma-store"), "{e}");
        let (code, e) = refused(&["--k", "1001", "--no-json"]);
        assert_eq!(code, 2, "{e}");
        assert!(e.contains("--k"), "{e}");
        for flag in ["--tokens", "--push-ctas", "--chunk-rows", "--experts", "--topk", "--n"] {
            assert!(Cli::try_parse_from(["x", flag, "0"]).is_err(), "{flag} 0");
            assert!(Cli::try_parse_from(["x", flag, "2"]).is_ok(), "{flag} 2");
        }
    }
}
