//! `mkernel bench moe-gemm-combine`: the fused MoE grouped GEMM + combine
//! (`Communicator::moe_gemm_combine`, the way back of `bench moe-dispatch-gemm`) on the GPUs of
//! this machine (one process driving every GPU, rank i on GPU i; `--share-gpu`: every rank on
//! GPU 0), with a uniform random top-k routing of every rank's tokens.
//!
//! The shapes are an MoE layer's down projection: N is the hidden size (y's columns), K the
//! experts' intermediate size (h's columns). Setup per shape: the routing's layout and
//! dest_rows come from one `moe_dispatch_gemm` call of a small width ([`SETUP_N`] x
//! [`SETUP_K`]: a dispatch's layout and dest_rows depend on the routing, experts, topk and
//! max_tokens, not on its N and K), whose receive capacity the combine is given; h
//! \[recv_capacity, K\] is random (every row, padding included), as are the experts' weights
//! \[El, N, K\] and the top-k weights (in \[0, 1)).
//!
//! Side by side in one process (one iteration of each per round, in a random order per round:
//! [`super::time_rounds_ms`], after an L2 flush and a device barrier of the ranks): (d) the
//! fused call; (g) cuBLAS per local expert over the rows each rank received (one call per
//! expert on its segment's token rows of h, no padding), the experts' GEMMs alone: a lower
//! bound for any unfused combine. Reported: the medians and g / d (the share of the fused call
//! the experts' GEMMs alone account for). A full unfused baseline (cuBLAS per expert, NCCL's
//! all-to-all of the rows back to their tokens' ranks, then a weighted-sum kernel) needs a GPU
//! per rank and that kernel: left for later.
//!
//! `--check`: the dispatch's layout (every rank's token counts) and dest_rows against the
//! host's model of the routing, exactly; then every rank's y of one fused call (poisoned
//! before) for its first [`CHECK_TOKENS`] tokens, all columns, against an fp64 host reference
//! of sum over k of topk_weights\[t, k\] x (h_q\[row\] W_e^T), with the GPU tests' scale
//! (sum over k of |w x row| + |y|: `tests/tests/gpu_moe_gemm_combine.rs`). Correctness
//! otherwise is the GPU tests'.

use std::sync::Arc;

use cudarc::driver::CudaStream;
use half::bf16;
use mkernel::baseline::Cublas;
use mkernel::{check, CommConfig, Communicator, MoeDispatchGemmOptions, MoeGemmCombineOptions, MoeShape};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::moe_dispatch_gemm::{routing, MoeArgs, MoeShapeArgs};
use super::{run_info, usage, BenchResult, Part};

/// Columns (N) of the setup dispatch's GEMM: any valid width would do (its layout and
/// dest_rows do not depend on it); small, so that its weights and `out` cost little.
pub const SETUP_N: u32 = 256;
/// Hidden size (K) of the setup dispatch's tokens: small, as [`SETUP_N`].
pub const SETUP_K: u32 = 64;
/// Tokens a rank whose y `--check` compares (the first ones; all of them when fewer).
pub const CHECK_TOKENS: usize = 64;

/// The default shapes, per rank: the down projections of Mixtral-8x7B (8 experts, top-2,
/// hidden 4096 by intermediate 14336) and DeepSeek-V3 (256 routed experts, top-8, hidden 7168
/// by intermediate 2048), 4096 tokens a rank; N the hidden size, K the intermediate size.
pub fn shapes(tokens: u32) -> Vec<(String, MoeShape)> {
    vec![
        ("mixtral-like E8 top2".into(), MoeShape { tokens, max_tokens: tokens, topk: 2, experts: 8, n: 4096, k: 14336 }),
        ("deepseek-v3-like E256 top8".into(), MoeShape { tokens, max_tokens: tokens, topk: 8, experts: 256, n: 7168, k: 2048 }),
    ]
}

/// The setup dispatch's shape for a combine of `s`: its routing (tokens, max_tokens, topk,
/// experts), [`SETUP_N`] x [`SETUP_K`].
fn setup_shape(s: MoeShape) -> MoeShape {
    MoeShape { n: SETUP_N, k: SETUP_K, ..s }
}

/// The combine's options from the flags (`recv_capacity` as given: the setup dispatch's; `plan
/// moe-gemm-combine`'s too). --chunk-rows is not the combine's: the callers refuse it.
pub(crate) fn options(a: &MoeShapeArgs, recv_capacity: Option<u32>) -> BenchResult<MoeGemmCombineOptions> {
    let tile = super::parse_tile(a.tile.as_deref(), false)?;
    Ok(MoeGemmCombineOptions { tile, push_ctas: a.push_ctas, recv_capacity })
}

#[derive(Serialize)]
struct Row {
    label: String,
    tokens: u32,
    topk: u32,
    experts: u32,
    /// The hidden size (y's columns).
    n: u32,
    /// The experts' intermediate size (h's columns).
    k: u32,
    world: usize,
    config: String,
    /// Rows each rank's GEMM covered (its segments, padding included).
    rows: Vec<u32>,
    fused_ms: f64,
    cublas_per_expert_ms: f64,
    /// cublas_per_expert_ms / fused_ms.
    gemm_share: f64,
    check: Option<String>,
}

/// The dispatch's dest_rows as the host models them from its layouts (`layouts[q]`: rank q's):
/// entry i of rank src (token i / topk) routed to expert g = q x El + e lands on rank q in
/// segment e, after the tokens the ranks before src sent to g, in token order; u32::MAX for a
/// -1 entry.
fn model_dest_rows(host_ids: &[Vec<i32>], layouts: &[Vec<u32>], el: usize) -> Vec<Vec<u32>> {
    // (next[q][e]: the next row of rank q's segment e; sources in rank order fill it)
    let mut next: Vec<Vec<u32>> = layouts.iter().map(|l| l[..el].to_vec()).collect();
    host_ids
        .iter()
        .map(|ids| {
            ids.iter()
                .map(|&g| match usize::try_from(g) {
                    Ok(g) => {
                        let slot = &mut next[g / el][g % el];
                        *slot += 1;
                        *slot - 1
                    }
                    Err(_) => u32::MAX,
                })
                .collect()
        })
        .collect()
}

/// A (token, k) entry of a sampled token whose row lies on the expert rank at hand: its source
/// rank, the entry (token x topk + k), the local expert and the row of h.
#[derive(Clone, Copy, Debug)]
struct Entry {
    src: usize,
    entry: usize,
    expert: usize,
    row: usize,
}

/// a . b in fp64 (four partial sums).
fn dot(a: &[bf16], b: &[bf16]) -> f64 {
    let mut acc = [0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x.to_f64() * y.to_f64()).sum();
    for (x, y) in ca.zip(cb) {
        for j in 0..4 {
            acc[j] += x[j].to_f64() * y[j].to_f64();
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Adds every entry's weighted row, topk_weights\[entry\] x (h\[row\] W_e^T) in fp64, to its
/// token's sums (`sums[src]`, \[sampled tokens, N\]) and its magnitude to `mags[src]` (the
/// check's scale); `h` \[rows, K\] and `w` \[El, N, K\] are the expert rank's. The rows are
/// computed on the host's threads.
#[allow(clippy::too_many_arguments)]
fn add_rows(h: &[bf16], w: &[bf16], n: usize, k: usize, topk: usize, entries: &[Entry], tw: &[Vec<f32>], sums: &mut [Vec<f64>], mags: &mut [Vec<f64>]) -> BenchResult<()> {
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1).min(64);
    let chunk = entries.len().div_ceil(threads).max(1);
    let rows: Vec<Vec<Vec<f64>>> = std::thread::scope(|sc| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| {
                sc.spawn(move || {
                    part.iter()
                        .map(|e| {
                            let hr = &h[e.row * k..(e.row + 1) * k];
                            (0..n).map(|c| dot(hr, &w[(e.expert * n + c) * k..(e.expert * n + c + 1) * k])).collect()
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|t| t.join().map_err(|_| "--check: a thread of the host reference panicked")).collect::<Result<_, _>>()
    })?;
    for (e, row) in entries.iter().zip(rows.into_iter().flatten()) {
        let wt = tw[e.src][e.entry] as f64;
        let tok = e.entry / topk;
        for (c, v) in row.into_iter().enumerate() {
            sums[e.src][tok * n + c] += wt * v;
            mags[e.src][tok * n + c] += (wt * v).abs();
        }
    }
    Ok(())
}

/// Seeds of rank r's random inputs (from the shape's `seed`): the setup dispatch's tokens,
/// the routing, the setup dispatch's weights, h, the weights, the top-k weights.
fn seeds(seed: u64, r: usize) -> [u64; 6] {
    std::array::from_fn(|i| seed.wrapping_add(8 * r as u64 + i as u64))
}

pub fn run(args: MoeArgs) -> BenchResult<()> {
    super::check_out_dir(&args.common)?;
    // (options refused before any GPU is touched)
    if args.shape.chunk_rows.is_some() {
        return Err(usage("--chunk-rows: the MoE GEMM + combine has no token chunks (an option of moe-dispatch-gemm)".to_string()));
    }
    let opts = options(&args.shape, None)?;
    if let Some(t) = opts.tile.filter(|t| !mkernel_kernels::moe_gemm_combine::has_kernel(*t)) {
        let names: Vec<String> = mkernel_kernels::moe_gemm_combine::tiles().map(|x| x.name()).collect();
        return Err(usage(format!("--tile {}: the MoE GEMM + combine has kernels for {} only", t.name(), names.join(", "))));
    }
    if args.shape.k.is_some_and(|k| k % 8 != 0) {
        return Err(usage("--k: the intermediate size must be a multiple of 8 (16-byte rows of h)".to_string()));
    }
    if args.shape.n.is_some_and(|n| n % 8 != 0) {
        return Err(usage("--n: the hidden size must be a multiple of 8 (16-byte rows of y)".to_string()));
    }
    let present = mkernel::device_count()?;
    let world = if args.share_gpu { args.gpus.unwrap_or(2) } else { args.gpus.unwrap_or(present) };
    if !args.share_gpu && (world < 2 || world > present) {
        return Err(usage(format!("--gpus: an MoE combine needs 2 ranks or more, and {world} ranks need as many GPUs ({present} present); --share-gpu puts them on GPU 0")));
    }
    let devices: Vec<usize> = if args.share_gpu { vec![0; world] } else { (0..world).collect() };
    // (--filter: a label substring)
    let list: Vec<(String, MoeShape)> =
        args.shape.shapes_from(shapes).into_iter().filter(|(l, _)| args.common.filter.as_deref().is_none_or(|f| l.contains(f))).collect();
    if list.is_empty() {
        return Err(usage("no shape left to time (--filter)".to_string()));
    }
    // The workspace: the larger of the setup dispatch's (receive rows x its K, with the counts)
    // and the combine's (slots, out, map) at the worst-case receive rows, the largest of the list.
    let mut max = 1u64;
    for (label, s) in &list {
        mkernel_kernels::moe_gemm_combine::check_shape(*s, world as u32).map_err(|e| usage(format!("{label}: {e}")))?;
        let rows = s.worst_case_recv_rows(world as u32).ok_or_else(|| usage(format!("{label}: receive rows exceed u32")))?;
        max = max.max(mkernel::moe_workspace_elems_needed(rows, SETUP_K)).max(mkernel::moe_combine_workspace_elems_needed(*s, rows));
    }
    let comms = Communicator::local_group(&devices, CommConfig { max_output_elems: max, ..Default::default() })?;
    // Per shape: the setup dispatch's plan (default options) and the combine's with its capacity.
    let mut plans = Vec::new();
    for (label, s) in &list {
        let dispatch = comms[0].plan_moe_dispatch_gemm(setup_shape(*s), MoeDispatchGemmOptions::default()).map_err(|e| usage(format!("{label}: the setup dispatch: {e}")))?;
        let copts = options(&args.shape, Some(dispatch.recv_capacity))?;
        let combine = comms[0].plan_moe_gemm_combine(*s, copts).map_err(|e| usage(format!("{label}: {e}")))?;
        plans.push((copts, combine));
    }
    let streams: Vec<Arc<CudaStream>> = comms.iter().map(|c| c.context().new_stream()).collect::<Result<_, _>>()?;
    let mut blas: Vec<Cublas> = streams.iter().map(Cublas::new).collect::<Result<_, _>>()?;
    let info = run_info(streams[0].context())?;
    println!("# mkernel bench moe-gemm-combine: {world} ranks on {} ({}), commit {}", if args.share_gpu { "GPU 0".to_string() } else { format!("{world} GPUs") }, info.device, info.commit);
    println!("{:<28} {:>9} {:>12} {:>7}  rows a rank / config / check", "shape", "fused ms", "cuBLAS/exp", "share");
    let mut rows_out = Vec::new();
    for ((label, s), (copts, plan)) in list.into_iter().zip(plans) {
        let (t, k, n, topk) = (s.tokens as usize, s.k as usize, s.n as usize, s.topk as usize);
        let el = (s.experts as usize) / world;
        let cap = plan.recv_capacity as usize;
        let seed = check::fresh_seed();
        let (mut x, mut w1, mut out) = (Vec::new(), Vec::new(), Vec::new());
        let (mut ids, mut dest, mut layout, mut h, mut w, mut tw, mut y) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut host_ids, mut host_tw) = (Vec::new(), Vec::new());
        for (r, st) in streams.iter().enumerate() {
            let [sx, sid, sw1, sh, sw, stw] = seeds(seed, r);
            x.push(st.clone_htod(&check::random_bf16(t * SETUP_K as usize, sx))?);
            let hid = routing(s.tokens, s, sid);
            ids.push(st.clone_htod(&hid)?);
            host_ids.push(hid);
            w1.push(st.clone_htod(&check::random_bf16(el * (SETUP_N * SETUP_K) as usize, sw1))?);
            out.push(super::alloc::<bf16>(st, cap * SETUP_N as usize, &label, "the setup dispatch's out")?);
            dest.push(super::alloc::<u32>(st, t * topk, &label, "dest_rows")?);
            layout.push(super::alloc::<u32>(st, mkernel::moe_layout_words(el as u32, world as u32), &label, "layout")?);
            h.push(st.clone_htod(&check::random_bf16(cap * k, sh))?);
            w.push(st.clone_htod(&check::random_bf16(el * n * k, sw))?);
            let mut rng = rand::rngs::SmallRng::seed_from_u64(stw);
            let htw: Vec<f32> = (0..t * topk).map(|_| rng.random_range(0.0f32..1.0)).collect();
            tw.push(st.clone_htod(&htw)?);
            host_tw.push(htw);
            y.push(super::alloc::<bf16>(st, t * n, &label, "y")?);
        }
        // The routing: one dispatch (its layout and dest_rows are the combine's inputs).
        let setup = setup_shape(s);
        let dopts = MoeDispatchGemmOptions { recv_capacity: Some(plan.recv_capacity), ..Default::default() };
        for r in 0..world {
            comms[r].moe_dispatch_gemm(&streams[r], &x[r], &ids[r], &w1[r], &mut out[r], &mut dest[r], &mut layout[r], setup, dopts)?;
        }
        for (r, c) in comms.iter().enumerate() {
            c.synchronize(&streams[r])?;
        }
        drop((x, w1, out));
        let (mut rows, mut layouts) = (Vec::new(), Vec::new());
        let mut bad = Vec::new();
        for (r, st) in streams.iter().enumerate() {
            let l = st.clone_dtoh(&layout[r])?;
            rows.push(l[el]);
            // The model: tokens rank `src` routed to rank r's expert e.
            for e in 0..el {
                for (src, hid) in host_ids.iter().enumerate() {
                    let want = hid.iter().filter(|&&g| g as usize == r * el + e).count() as u32;
                    if l[el + 1 + e * world + src] != want {
                        bad.push(format!("rank {r} expert {e} from {src}: {} tokens, model {want}", l[el + 1 + e * world + src]));
                    }
                }
            }
            layouts.push(l);
        }
        let mut checked = None;
        if args.common.check {
            if !bad.is_empty() {
                return Err(format!("{label}: the setup dispatch's layout FAIL: {}", bad.join("; ")).into());
            }
            // dest_rows, exactly; then y of one fused call (poisoned before) for the first tokens.
            let model = model_dest_rows(&host_ids, &layouts, el);
            for (r, st) in streams.iter().enumerate() {
                let got = st.clone_dtoh(&dest[r])?;
                if let Some(i) = (0..t * topk).find(|&i| got[i] != model[r][i]) {
                    return Err(format!("{label}: the setup dispatch's dest_rows FAIL: rank {r} entry {i} (token {}, expert {}): row {}, model {}", i / topk, host_ids[r][i], got[i], model[r][i]).into());
                }
            }
            for (r, st) in streams.iter().enumerate() {
                check::poison(st, &mut y[r])?;
                comms[r].moe_gemm_combine(st, &h[r], &w[r], &layout[r], &ids[r], &dest[r], &tw[r], &mut y[r], s, copts)?;
            }
            for (r, c) in comms.iter().enumerate() {
                c.synchronize(&streams[r])?;
            }
            let sample = t.min(CHECK_TOKENS);
            let (mut sums, mut mags) = (vec![vec![0f64; sample * n]; world], vec![vec![0f64; sample * n]; world]);
            // (one expert rank's h and weights on the host at a time, drawn again from their seeds)
            for q in 0..world {
                let [_, _, _, sh, sw, _] = seeds(seed, q);
                let entries: Vec<Entry> = (0..world)
                    .flat_map(|src| (0..sample * topk).map(move |i| (src, i)))
                    .filter_map(|(src, i)| {
                        let g = usize::try_from(host_ids[src][i]).ok()?;
                        (g / el == q).then_some(Entry { src, entry: i, expert: g % el, row: model[src][i] as usize })
                    })
                    .collect();
                if entries.is_empty() {
                    continue;
                }
                let (hq, wq) = (check::random_bf16(cap * k, sh), check::random_bf16(el * n * k, sw));
                add_rows(&hq, &wq, n, k, topk, &entries, &host_tw, &mut sums, &mut mags)?;
            }
            for (r, st) in streams.iter().enumerate() {
                let got = st.clone_dtoh(&y[r])?;
                let scale: Vec<f32> = mags[r].iter().zip(&sums[r]).map(|(&a, &v)| (a + v.abs()) as f32).collect();
                let reference: Vec<f32> = sums[r].iter().map(|&v| v as f32).collect();
                let cmp = check::compare(&got[..sample * n], &reference, Some(&scale), n, k);
                if !cmp.passed() {
                    return Err(format!("{label}: rank {r}: y of its first {sample} tokens FAIL against the fp64 reference (seed {seed:#x}): {cmp}").into());
                }
            }
            checked = Some(format!("routing PASS, y PASS (first {sample} tokens a rank)"));
        }
        // cuBLAS per local expert over each rank's received rows of h (the segments' tokens,
        // as the layout says) by that expert's weights: the unfused grouped GEMM.
        let mut groups = Vec::new();
        let mut gc = Vec::new();
        for (r, st) in streams.iter().enumerate() {
            let l = &layouts[r];
            groups.push((0..el).map(|e| (l[e], (0..world).map(|src| l[el + 1 + e * world + src]).sum(), (e * n) as u32)).collect::<Vec<(u32, u32, u32)>>());
            gc.push(super::alloc::<bf16>(st, rows[r].max(1) as usize * n, &label, "cuBLAS out")?);
        }
        let times = super::time_fused_and_baseline(&comms, &streams, &args.common, false, &label, |part| -> BenchResult<()> {
            match part {
                Part::Fused => {
                    for r in 0..world {
                        comms[r].moe_gemm_combine(&streams[r], &h[r], &w[r], &layout[r], &ids[r], &dest[r], &tw[r], &mut y[r], s, copts)?;
                    }
                }
                // (cuBLAS per expert)
                Part::Compute => {
                    for r in 0..world {
                        blas[r].gemm_bf16_groups(&h[r], &w[r], &mut gc[r], s.n, s.k, &groups[r])?;
                    }
                }
                // (no communication baseline: time_fused_and_baseline asks for none)
                Part::Comm => return Err("bench moe-gemm-combine has no communication baseline".into()),
            }
            Ok(())
        })?;
        let (fused, cublas) = (times.fused, times.compute);
        let share = cublas / fused;
        println!("{label:<28} {fused:>9.4} {cublas:>12.4} {share:>7.3}  {rows:?} / {plan}{}", checked.as_ref().map_or(String::new(), |c| format!(" | {c}")));
        rows_out.push(Row {
            label,
            tokens: s.tokens,
            topk: s.topk,
            experts: s.experts,
            n: s.n,
            k: s.k,
            world,
            config: plan.to_string(),
            rows,
            fused_ms: fused,
            cublas_per_expert_ms: cublas,
            gemm_share: share,
            check: checked,
        });
    }
    super::save_ranks_report(&args.common, "moe_gemm_combine", info, args.share_gpu, rows_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        moe: MoeArgs,
    }

    /// The default shapes are the down projections (N the hidden size, K the intermediate
    /// one), and the shared overrides apply to them.
    #[test]
    fn shapes_are_the_down_projections_with_the_overrides() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        let s: Vec<MoeShape> = cli.moe.shape.shapes_from(shapes).into_iter().map(|(_, s)| s).collect();
        assert_eq!(s.iter().map(|s| (s.experts, s.topk, s.n, s.k, s.tokens)).collect::<Vec<_>>(), vec![(8, 2, 4096, 14336, 4096), (256, 8, 7168, 2048, 4096)]);
        let cli = Cli::try_parse_from(["x", "--tokens", "100", "--n", "1024", "--k", "512", "--topk", "3"]).unwrap();
        for (l, s) in cli.moe.shape.shapes_from(shapes) {
            assert_eq!((s.tokens, s.max_tokens, s.n, s.k, s.topk), (100, 100, 1024, 512, 3), "{l}");
            assert!(l.contains("1024x512"), "{l}");
        }
        // (the dispatch's own list is untouched)
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.moe.shape.shapes()[0].1.n, 28672);
    }

    /// The host's dest_rows fill every segment from its start, sources in rank order and each
    /// source's tokens in order, one row per entry.
    #[test]
    fn modelled_dest_rows_fill_the_segments_in_source_and_token_order() {
        for (world, experts, topk, tokens) in [(2usize, 8u32, 2u32, [37u32, 50, 0, 0]), (3, 6, 3, [20, 0, 33, 0]), (4, 16, 4, [9, 17, 25, 3])] {
            let s = MoeShape { tokens: 0, max_tokens: 50, topk, experts, n: 8, k: 16 };
            let el = experts as usize / world;
            let mut host_ids: Vec<Vec<i32>> = (0..world).map(|r| routing(tokens[r], s, 11 + r as u64)).collect();
            if let Some(first) = host_ids[0].first_mut() {
                *first = -1;
            }
            let count = |g: usize| host_ids.iter().map(|ids| ids.iter().filter(|&&id| id == g as i32).count() as u32).sum::<u32>();
            let layouts: Vec<Vec<u32>> = (0..world)
                .map(|q| {
                    let mut l = Vec::new();
                    let mut row = 0;
                    for e in 0..el {
                        l.push(row);
                        row += count(q * el + e).div_ceil(128) * 128;
                    }
                    l.push(row);
                    l
                })
                .collect();
            let dest = model_dest_rows(&host_ids, &layouts, el);
            assert_eq!(dest[0][0], u32::MAX);
            for q in 0..world {
                for e in 0..el {
                    let g = (q * el + e) as i32;
                    let got: Vec<u32> = (0..world).flat_map(|src| host_ids[src].iter().zip(&dest[src]).filter(|(&id, _)| id == g).map(|(_, &row)| row)).collect();
                    let want: Vec<u32> = (layouts[q][e]..layouts[q][e] + got.len() as u32).collect();
                    assert_eq!(got, want, "world {world} rank {q} expert {e}");
                }
            }
        }
    }

    /// The threaded reference adds each entry's weighted row where a plain loop does.
    #[test]
    fn reference_rows_match_a_plain_loop() {
        let (n, k, topk, el) = (24usize, 40usize, 2usize, 3usize);
        let h = check::random_bf16(10 * k, 1);
        let w = check::random_bf16(el * n * k, 2);
        let tw: Vec<Vec<f32>> = vec![(0..4 * topk).map(|i| 0.25 * i as f32 - 0.5).collect(), (0..4 * topk).map(|i| 0.1 * i as f32).collect()];
        let entries: Vec<Entry> = (0..2).flat_map(|src| (0..4 * topk).map(move |i| Entry { src, entry: i, expert: (i + src) % el, row: (3 * i + src) % 10 })).collect();
        let (mut sums, mut mags) = (vec![vec![0f64; 4 * n]; 2], vec![vec![0f64; 4 * n]; 2]);
        add_rows(&h, &w, n, k, topk, &entries, &tw, &mut sums, &mut mags).unwrap();
        for src in 0..2 {
            for tok in 0..4 {
                for c in 0..n {
                    let (mut want, mut mag) = (0f64, 0f64);
                    for e in entries.iter().filter(|e| e.src == src && e.entry / topk == tok) {
                        let v: f64 = (0..k).map(|j| h[e.row * k + j].to_f64() * w[(e.expert * n + c) * k + j].to_f64()).sum::<f64>() * tw[src][e.entry] as f64;
                        want += v;
                        mag += v.abs();
                    }
                    assert!((sums[src][tok * n + c] - want).abs() <= 1e-9 * mag.max(1.0), "{src} {tok} {c}");
                    assert!((mags[src][tok * n + c] - mag).abs() <= 1e-9 * mag.max(1.0), "{src} {tok} {c}");
                }
            }
        }
    }

    /// Bad options are usage errors (exit 2) before any GPU is touched: a tile without an MoE
    /// kernel, K or N not a multiple of 8, --chunk-rows (the dispatch's).
    #[test]
    fn bad_options_are_usage_errors_before_any_gpu() {
        let refused = |args: &[&str]| {
            let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
            let e = run(cli.moe).unwrap_err();
            (super::super::exit_status(e.as_ref()), e.to_string())
        };
        let (code, e) = refused(&["--tile", "wide-tma-store-c2", "--no-json"]);
        assert_eq!(code, 2, "{e}");
        assert!(e.contains("--tile") && e.contains("combine") && e.contains("m64-wide-tma-store"), "{e}");
        for (flag, value) in [("--k", "1001"), ("--n", "1001"), ("--chunk-rows", "16")] {
            let (code, e) = refused(&[flag, value, "--no-json"]);
            assert_eq!(code, 2, "{e}");
            assert!(e.contains(flag), "{e}");
        }
    }

    #[test]
    fn out_dir_is_checked_before_any_gpu() {
        crate::bench::assert_out_dir_checked_first("moe-combine", |args| run(Cli::try_parse_from(args).unwrap().moe).map_err(|e| e.to_string()));
    }
}
