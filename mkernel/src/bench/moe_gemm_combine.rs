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
//! expert on its segment's token rows of h, no padding, into an `out` buffer of the fused
//! call's layout), the experts' GEMMs alone: a lower bound for any unfused combine; and with
//! a GPU per rank (NCCL; not with `--share-gpu`, where NCCL cannot run) (a) the unfused
//! baseline: (g), then NCCL's all-to-all of the rows back to their tokens' ranks (`ncclSend` /
//! `ncclRecv` blocks per (source rank, expert) in one group, the rank's own included: the
//! rows of segment e from source s go back to s: [`CombineExchange`]), then a weighted-sum
//! kernel on each rank (`mkernel::baseline::combine_sum`: y\[t\] = sum over k of
//! topk_weights\[t, k\] x the row of (t, k) in fp32, rounded once to bf16), and (c) that
//! all-to-all alone. The rows land on their token's rank grouped by (expert rank, local
//! expert), token order within (the order the dispatch's exchange sent them), and the
//! baseline is given the permutation back to token order for free (each (token, k)'s
//! landing row, computed on the host from the routing and uploaded before timing), as the
//! dispatch's baseline is given its sorted tokens: a real one would compute it, and the
//! counts' exchange and host synchronisation that size its buffers are not timed either.
//! Reported: the medians, g / d (the share of the fused call the experts' GEMMs alone
//! account for), and with NCCL speedup a / d and overlap max(g, c) / d.
//!
//! The unfused baseline (its exchange, the weighted-sum kernel and their `--check`) was
//! written without a GPU run: it needs a GPU per rank (two or more), which its author did
//! not have; the host's blocks and landing rows are tested on the CPU
//! (`combine_exchange_returns_every_row_to_its_entry`) and the kernel compiles with NVRTC.
//!
//! `--check`: the dispatch's layout (segment starts, rows used, every rank's token counts) and
//! dest_rows against the host's model of the routing ([`mkernel::check::MoeRouting`], the one
//! the tests use), exactly; then every rank's y of one fused call (poisoned before) for its
//! first [`CHECK_TOKENS`] tokens, all columns, against an fp64 host reference of sum over k of
//! topk_weights\[t, k\] x (h_q\[row\] W_e^T), with the GPU tests' scale (sum over k of
//! |w x row| + |y|: `tests/tests/gpu_moe_gemm_combine.rs`); and with NCCL the baseline's y
//! (poisoned before) against that fused call's, every token, with the same scale rule (the
//! magnitudes from the baseline's landed rows), so that a wrong baseline is caught.
//! Correctness otherwise is the GPU tests'.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::{Cublas, Nccl, P2pBlocks};
use mkernel::check::{self, MoeRouting};
use mkernel::{CommConfig, Communicator, MoeDispatchGemmOptions, MoeGemmCombineOptions, MoeShape};
use rand::{Rng, SeedableRng};

use super::moe_dispatch_gemm::{routing, MoeArgs, MoeShapeArgs};
use super::{run_info, usage, BenchResult, Part};

/// The unfused baseline's steps, in order: cuBLAS per expert, the all-to-all back, the
/// weighted sum.
const BASELINE_STEPS: &[Part] = &[Part::Compute, Part::Comm, Part::Sum];

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

/// The workspace (elements, `CommConfig::max_output_elems`) the bench creates its
/// communicators with for `shapes` on `world` ranks, and `plan moe-gemm-combine` plans with
/// unless given --max-output-elems: the larger of the setup dispatch's (receive rows of
/// [`SETUP_K`], with the counts) and the combine's (slots, out, map:
/// [`mkernel::moe_combine_workspace_elems_needed`]) at `recv_capacity` rows (None: each
/// shape's worst case, the calls' default), the largest of the shapes a communicator can run
/// (the shape rules, a worst case within u32, within the largest workspace; the others the
/// bench refuses before any GPU, the plan in their rows).
pub(crate) fn workspace_elems(shapes: &[(String, MoeShape)], world: u32, recv_capacity: Option<u32>) -> u64 {
    super::largest_workspace(shapes.iter().filter_map(|(_, s)| {
        mkernel_kernels::moe_gemm_combine::check_shape(*s, world).ok()?;
        let rows = recv_capacity.or_else(|| s.worst_case_recv_rows(world))?;
        Some(mkernel::moe_workspace_elems_needed(rows, SETUP_K).max(mkernel::moe_combine_workspace_elems_needed(*s, rows)))
    }))
}

/// The combine's options from the flags (`recv_capacity` as given: the setup dispatch's; `plan
/// moe-gemm-combine`'s too). --chunk-rows is not the combine's: the callers refuse it.
pub(crate) fn options(a: &MoeShapeArgs, recv_capacity: Option<u32>) -> BenchResult<MoeGemmCombineOptions> {
    let tile = super::moe_dispatch_gemm::parse_moe_tile(a.tile.as_deref())?;
    Ok(MoeGemmCombineOptions { tile, push_ctas: a.push_ctas, recv_capacity })
}

/// The unfused baseline's all-to-all back for one routing (`m`, the host's model): each expert
/// rank's rows (its `out`, in the fused call's layout: segment e holds the rows of source 0,
/// then source 1, ..., token order within) go back to their tokens' ranks, where they land
/// grouped by (expert rank, local expert), token order within: the order the dispatch's
/// exchange sent them. Blocks in elements of N-column rows, the rank's own included;
/// `index[r]` \[tokens x topk\] is the landing row of each of rank r's entries (u32::MAX:
/// none), the permutation back to token order; `land_rows[r]` the rows that land on rank r.
struct CombineExchange {
    blocks: Vec<P2pBlocks>,
    index: Vec<Vec<u32>>,
    land_rows: Vec<usize>,
}

fn combine_exchange(m: &MoeRouting, s: MoeShape) -> CombineExchange {
    let (n, el, world) = (s.n as usize, m.local_experts(), m.world());
    let mut blocks = vec![P2pBlocks::default(); world];
    let mut index: Vec<Vec<u32>> = m.dest.iter().map(|d| vec![u32::MAX; d.len()]).collect();
    let mut land_rows = Vec::with_capacity(world);
    for (src, per_expert) in m.entries().iter().enumerate() {
        let mut row = 0usize;
        // (g = q x El + e: by expert rank q, then local expert e)
        for (g, entries) in per_expert.iter().enumerate() {
            let q = g / el;
            for (j, &i) in entries.iter().enumerate() {
                index[src][i] = (row + j) as u32;
            }
            // (src's rows of g's segment, after the sources before it)
            let from = m.block_start(src, g).unwrap_or_default() as usize * n;  // (src and g are the model's)
            // (q sends to src, and src receives from q, in e order: matched in listed order)
            blocks[q].sends.push((src, from, entries.len() * n));
            blocks[src].recvs.push((q, row * n, entries.len() * n));
            row += entries.len();
        }
        land_rows.push(row);
    }
    CombineExchange { blocks, index, land_rows }
}

/// The check's scale of the weighted sums of `land` \[rows, N\] by `index` and `tw` (each
/// \[tokens x topk\]): per element of y \[tokens, N\], sum over k of |tw\[t, k\] x
/// land\[index\[t, k\]\]| (entries without a row: none), on the host's threads.
fn landed_magnitudes(land: &[bf16], index: &[u32], tw: &[f32], n: usize, topk: usize) -> BenchResult<Vec<f32>> {
    let tokens = index.len() / topk.max(1);
    let rows = land.len() / n.max(1);
    let mut mags = vec![0f32; tokens * n];
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1).min(64);
    let per = tokens.div_ceil(threads).max(1) * n;
    std::thread::scope(|sc| {
        let handles: Vec<_> = mags
            .chunks_mut(per.max(1))
            .enumerate()
            .map(|(c, part)| {
                sc.spawn(move || {
                    for (j, out) in part.chunks_mut(n.max(1)).enumerate() {
                        let t = c * (per / n.max(1)) + j;
                        for k in 0..topk {
                            let row = index[t * topk + k] as usize;
                            if row >= rows {
                                continue;
                            }
                            let w = tw[t * topk + k].abs();
                            for (m, v) in out.iter_mut().zip(&land[row * n..(row + 1) * n]) {
                                *m += w * v.to_f32().abs();
                            }
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().map_err(|_| "--check: a thread of the baseline's magnitudes panicked"))
    })?;
    Ok(mags)
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
    // (--filter, as plan matches it, and the shapes (the plan's check_shape) where the ranks
    // are known without a GPU count: --share-gpu or --gpus)
    let check = mkernel_kernels::moe_gemm_combine::check_shape;
    let list = args.checked_shapes(shapes, args.known_world(), check)?;
    let present = mkernel::device_count()?;
    let world = if args.share_gpu { args.gpus.unwrap_or(2) } else { args.gpus.unwrap_or(present) };
    if !args.share_gpu && (world < 2 || world > present) {
        return Err(usage(format!("--gpus: an MoE combine needs 2 ranks or more, and {world} ranks need as many GPUs ({present} present); --share-gpu puts them on GPU 0")));
    }
    let devices: Vec<usize> = if args.share_gpu { vec![0; world] } else { (0..world).collect() };
    for (label, s) in &list {
        check(*s, world as u32).map_err(|e| usage(format!("{label}: {e} ({}, {world} ranks)", args.shape_flags())))?;
        s.worst_case_recv_rows(world as u32).ok_or_else(|| usage(format!("{label}: receive rows exceed u32")))?;
    }
    let max = workspace_elems(&list, world as u32, None);
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
    let nccl = if args.share_gpu { None } else { Some(Nccl::local_group(&streams)?) };
    let info = run_info(streams[0].context())?;
    println!("# mkernel bench moe-gemm-combine: {world} ranks on {} ({}), commit {}", if args.share_gpu { "GPU 0".to_string() } else { format!("{world} GPUs") }, info.device, info.commit);
    println!(
        "{:<28} {:>9} {:>12} {:>7} {:>9} {:>9} {:>7} {:>7}  rows a rank / config / check",
        "shape", "fused ms", "cuBLAS/exp", "share", "base ms", "NCCL a2a", "speedup", "overlap"
    );
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
        let model = MoeRouting::new(&host_ids, s.experts).map_err(|e| format!("{label}: the host's routing model: {e}"))?;
        let (mut rows, mut layouts) = (Vec::new(), Vec::new());
        let mut bad = Vec::new();
        for (r, st) in streams.iter().enumerate() {
            let l = st.clone_dtoh(&layout[r])?;
            rows.push(l[el]);
            // The model: segment starts, rows used, tokens of every source for each expert.
            if let Err(e) = model.check_layout(r, &l) {
                bad.push(e);
            }
            layouts.push(l);
        }
        let mut checked = None;
        // (the fused call's y of every token, with NCCL: the baseline's check compares with it)
        let mut fused_y = None;
        if args.common.check {
            if !bad.is_empty() {
                return Err(format!("{label}: the setup dispatch's layout FAIL: {}", bad.join("; ")).into());
            }
            // dest_rows, exactly; then y of one fused call (poisoned before) for the first tokens.
            for (r, st) in streams.iter().enumerate() {
                model.check_dest(r, &st.clone_dtoh(&dest[r])?, topk).map_err(|e| format!("{label}: the setup dispatch's dest_rows FAIL: {e}"))?;
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
                        (g / el == q).then_some(Entry { src, entry: i, expert: g % el, row: model.dest[src][i] as usize })
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
            if nccl.is_some() {
                fused_y = Some(streams.iter().zip(&y).map(|(st, yr)| st.clone_dtoh(yr)).collect::<Result<Vec<_>, _>>()?);
            }
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
        // The baseline's all-to-all back and weighted sum (a GPU per rank): the landing rows,
        // each entry's landing row (given for free) and the baseline's y.
        let back = nccl.as_ref().map(|_| combine_exchange(&model, s));
        let (mut land, mut index, mut yb) = (Vec::new(), Vec::new(), Vec::new());
        if let Some(b) = &back {
            for (r, st) in streams.iter().enumerate() {
                land.push(super::alloc::<bf16>(st, b.land_rows[r].max(1) * n, &label, "the baseline's landing rows")?);
                index.push(if b.index[r].is_empty() { super::alloc::<u32>(st, 1, &label, "the baseline's landing index")? } else { st.clone_htod(&b.index[r])? });
                yb.push(super::alloc::<bf16>(st, t * n, &label, "the baseline's y")?);
            }
        }
        let all_to_all = |gc: &[CudaSlice<bf16>], land: &mut [CudaSlice<bf16>]| -> BenchResult<()> {
            let (Some(nc), Some(b)) = (&nccl, &back) else { return Ok(()) };
            let sends: Vec<&CudaSlice<bf16>> = gc.iter().collect();
            let mut recvs: Vec<&mut CudaSlice<bf16>> = land.iter_mut().collect();
            nc.exchange_blocks(&sends, &mut recvs, &b.blocks)?;
            Ok(())
        };
        let weighted_sum = |land: &[CudaSlice<bf16>], yb: &mut [CudaSlice<bf16>]| -> BenchResult<()> {
            for (r, yr) in yb.iter_mut().enumerate() {
                mkernel::baseline::combine_sum(&streams[r], &index[r], &tw[r], &land[r], yr, s.tokens, s.topk, s.n)?;
            }
            Ok(())
        };
        if let (Some(b), Some(fy)) = (&back, &fused_y) {
            // The baseline's y (cuBLAS per expert, the all-to-all back, the weighted sum; y
            // poisoned before) against the fused call's, every token, with the scale rule above.
            for (r, st) in streams.iter().enumerate() {
                check::poison(st, &mut yb[r])?;
                blas[r].gemm_bf16_groups(&h[r], &w[r], &mut gc[r], s.n, s.k, &groups[r])?;
            }
            all_to_all(&gc, &mut land)?;
            weighted_sum(&land, &mut yb)?;
            for (r, c) in comms.iter().enumerate() {
                c.synchronize(&streams[r])?;
            }
            for (r, st) in streams.iter().enumerate() {
                let got = st.clone_dtoh(&yb[r])?;
                let mags = landed_magnitudes(&st.clone_dtoh(&land[r])?, &b.index[r], &host_tw[r], n, topk)?;
                let reference: Vec<f32> = fy[r].iter().map(|v| v.to_f32()).collect();
                let scale: Vec<f32> = mags.iter().zip(&reference).map(|(&a, &v)| a + v.abs()).collect();
                let cmp = check::compare(&got, &reference, Some(&scale), n, k);
                if !cmp.passed() {
                    return Err(format!("{label}: rank {r}: the baseline's y differs from the fused call's (seed {seed:#x}): {cmp}").into());
                }
            }
            checked = checked.map(|c| format!("{c}, baseline = fused (all tokens)"));
        }
        let times = super::time_fused_and_baseline_steps(&comms, &streams, &args.common, back.as_ref().map(|_| BASELINE_STEPS), &label, |part| -> BenchResult<()> {
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
                // (with NCCL: the all-to-all of the rows back to their tokens' ranks)
                Part::Comm => all_to_all(&gc, &mut land)?,
                // (with NCCL: the weighted sum of each token's landed rows)
                Part::Sum => weighted_sum(&land, &mut yb)?,
            }
            Ok(())
        })?;
        rows_out.push(super::moe_dispatch_gemm::moe_row(label, s, world, plan.to_string(), rows, &times, back.is_some(), checked));
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

    /// The baseline's blocks, carried out on the host (each pair's sends and receives matched
    /// in listed order, as NCCL does), bring every routed entry's row of its expert rank's
    /// `out` (where the dispatch's dest_rows put it) to the landing row its index names, on
    /// its token's rank; the landing rows are grouped by (expert rank, expert), token order
    /// within, and each row lands once.
    #[test]
    fn combine_exchange_returns_every_row_to_its_entry() {
        for (world, experts, topk, tokens) in [(2usize, 8u32, 2u32, [37u32, 50, 0, 0]), (3, 6, 3, [20, 0, 33, 0]), (4, 16, 4, [9, 17, 25, 3])] {
            let s = MoeShape { tokens: 0, max_tokens: 50, topk, experts, n: 8, k: 16 };
            let (n, el) = (s.n as usize, experts as usize / world);
            let mut host_ids: Vec<Vec<i32>> = (0..world).map(|r| routing(tokens[r], s, 5 + r as u64)).collect();
            if let Some(first) = host_ids[0].first_mut() {
                *first = -1;
            }
            let m = MoeRouting::new(&host_ids, experts).unwrap();
            let ex = combine_exchange(&m, s);
            // (out[q]: each element names its rank and row)
            let out: Vec<Vec<u32>> = (0..world).map(|q| (0..m.rows_used()[q] as usize * n).map(|i| (q * 100_000 + i / n) as u32).collect()).collect();
            let mut land: Vec<Vec<u32>> = ex.land_rows.iter().map(|&r| vec![u32::MAX; r * n]).collect();
            super::super::replay_exchange(&ex.blocks, &out, &mut land);
            let dest = &m.dest;
            for src in 0..world {
                assert_eq!(ex.land_rows[src], host_ids[src].iter().filter(|&&g| g >= 0).count());
                assert!(land[src].iter().all(|&v| v != u32::MAX), "world {world} rank {src}: a landing row unwritten");
                for (i, &g) in host_ids[src].iter().enumerate() {
                    let Ok(g) = usize::try_from(g) else {
                        assert_eq!(ex.index[src][i], u32::MAX);
                        continue;
                    };
                    let row = ex.index[src][i] as usize;
                    let want = ((g / el) * 100_000 + dest[src][i] as usize) as u32;
                    assert!(land[src][row * n..(row + 1) * n].iter().all(|&v| v == want), "world {world} rank {src} entry {i}");
                }
                // (grouped by expert rank and expert, token order within)
                let mut order: Vec<(usize, usize)> =
                    host_ids[src].iter().enumerate().filter_map(|(i, &g)| usize::try_from(g).ok().map(|g| (g, ex.index[src][i] as usize))).collect();
                order.sort();
                assert!(order.windows(2).all(|w| w[0].1 < w[1].1), "world {world} rank {src}: landing order");
            }
        }
    }

    /// The check's magnitudes are the sums of |w x row| a plain loop gives, entries without a
    /// row (u32::MAX) or past the landing rows left out.
    #[test]
    fn landed_magnitudes_match_a_plain_loop() {
        let (n, topk, rows, tokens) = (16usize, 3usize, 7usize, 11usize);
        let land = check::random_bf16(rows * n, 3);
        let index: Vec<u32> = (0..tokens * topk).map(|i| if i % 5 == 0 { u32::MAX } else if i % 7 == 0 { 99 } else { (i % rows) as u32 }).collect();
        let tw: Vec<f32> = (0..tokens * topk).map(|i| 0.3 * i as f32 - 2.0).collect();
        let got = landed_magnitudes(&land, &index, &tw, n, topk).unwrap();
        assert_eq!(got.len(), tokens * n);
        for t in 0..tokens {
            for c in 0..n {
                let want: f32 = (0..topk)
                    .filter(|&k| (index[t * topk + k] as usize) < rows)
                    .map(|k| (tw[t * topk + k] * land[index[t * topk + k] as usize * n + c].to_f32()).abs())
                    .sum();
                assert!((got[t * n + c] - want).abs() <= 1e-5 * want.max(1.0), "{t} {c}");
            }
        }
    }

    /// --filter matches a label or the even routing's MxNxK, as plan does (tokens x topk rows);
    /// one that matches nothing is a usage error naming --filter, before any GPU is touched.
    #[test]
    fn filter_matches_labels_and_dims_as_plan_does() {
        let cli = Cli::try_parse_from(["x", "--filter", "8192x4096x14336"]).unwrap();
        let kept = cli.moe.checked_shapes(shapes, None, mkernel_kernels::moe_gemm_combine::check_shape).unwrap();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].0.starts_with("mixtral"), "{}", kept[0].0);
        let cli = Cli::try_parse_from(["x", "--filter", "deepseek"]).unwrap();
        assert!(cli.moe.checked_shapes(shapes, None, mkernel_kernels::moe_gemm_combine::check_shape).unwrap()[0].0.starts_with("deepseek"));
        for args in [&["x", "--filter", "nothing", "--no-json"][..], &["x", "--share-gpu", "--filter", "nothing", "--no-json"]] {
            let e = run(Cli::try_parse_from(args).unwrap().moe).unwrap_err();
            assert_eq!(super::super::exit_status(e.as_ref()), 2, "{e}");
            assert!(e.to_string().contains("--filter") && e.to_string().contains("mixtral"), "{e}");
        }
    }

    /// With --share-gpu (or --gpus) the ranks are known, so a shape they cannot run is a usage
    /// error naming the flags given, before any GPU is touched.
    #[test]
    fn shapes_are_checked_before_any_gpu_when_the_ranks_are_known() {
        for (args, flag) in [
            (&["x", "--share-gpu", "--experts", "7", "--no-json"][..], "--experts 7"),
            (&["x", "--share-gpu", "--gpus", "3", "--filter", "mixtral", "--no-json"], "--gpus 3"),
            (&["x", "--gpus", "3", "--filter", "mixtral", "--no-json"], "--gpus 3"),
            (&["x", "--share-gpu", "--topk", "9", "--filter", "mixtral", "--no-json"], "--topk 9"),
        ] {
            let e = run(Cli::try_parse_from(args).unwrap().moe).unwrap_err();
            assert_eq!(super::super::exit_status(e.as_ref()), 2, "{args:?}: {e}");
            assert!(e.to_string().contains(flag) && e.to_string().contains("`shape`"), "{args:?}: {e}");
        }
    }

    #[test]
    fn out_dir_is_checked_before_any_gpu() {
        crate::bench::assert_out_dir_checked_first("moe-combine", |args| run(Cli::try_parse_from(args).unwrap().moe).map_err(|e| e.to_string()));
    }
}
