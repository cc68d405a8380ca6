//! GPU, one process driving every rank: the fused MoE grouped GEMM + combine
//! (`Communicator::moe_gemm_combine`) against an fp64 reference of every token's weighted sum
//! of its experts' rows (each row rounded to bf16 as the kernel's GEMM output is), with the
//! routing (layout, dest_rows) modelled on the host, poisoned outputs and fresh random data:
//! uneven token counts (0 included), -1 entries, all tokens to one rank, topk 1-8 (sum groups
//! of 4-32 tokens), Registers / TMA-store / 64-row / 128-column tiles, one and many push
//! CTAs, world sizes 2-4 (ranks round-robin on the GPUs present); a dispatch chained into the
//! combine; epochs back to back; bad ids and rows, ranks that disagree and a broken layout
//! reported as `DeviceInput` with the group still usable; a missing peer. Skips without a
//! GPU (see mkernel-tests).

use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use half::bf16;
use mkernel::check::{self, MoeRouting};
use mkernel::{Error, MoeDispatchGemmOptions, MoeGemmCombineOptions, MoeShape, TileConfig};
use mkernel_tests::moe::{self, Routing};
use mkernel_tests::{ranks, Ranks};
use rand::{Rng, SeedableRng};

/// One call's inputs on every rank (host copies).
struct Inputs {
    tokens: Vec<u32>,
    ids: Vec<Vec<i32>>,
    /// [tokens, topk] f32 per rank
    tw: Vec<Vec<f32>>,
    /// [recv_capacity, K] per rank (every row random, padding rows too)
    h: Vec<Vec<bf16>>,
    /// [local experts, N, K] per rank
    w: Vec<Vec<bf16>>,
    m: MoeRouting,
}

fn inputs(world: usize, s: MoeShape, cap: u32, tokens: &[u32], routing: Routing, seed: u64) -> Inputs {
    let (k, n, topk, el) = (s.k as usize, s.n as usize, s.topk as usize, s.experts as usize / world);
    let ids = moe::expert_ids(world, s, tokens, routing, seed);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed);
    let m = MoeRouting::new(&ids, s.experts).unwrap();
    Inputs {
        tokens: tokens.to_vec(),
        tw: tokens.iter().map(|&t| (0..t as usize * topk).map(|_| rng.random_range(-1.0f32..1.0)).collect()).collect(),
        h: (0..world).map(|r| check::random_bf16(cap as usize * k, seed.wrapping_add(300 + r as u64))).collect(),
        w: (0..world).map(|r| check::random_bf16(el * n * k, seed.wrapping_add(400 + r as u64))).collect(),
        ids,
        m,
    }
}

struct Bufs {
    h: CudaSlice<bf16>,
    w: CudaSlice<bf16>,
    layout: CudaSlice<u32>,
    ids: CudaSlice<i32>,
    dest: CudaSlice<u32>,
    tw: CudaSlice<f32>,
    y: CudaSlice<bf16>,
}

fn upload_or_one<T: cudarc::driver::DeviceRepr + Default + Clone>(st: &std::sync::Arc<cudarc::driver::CudaStream>, v: &[T]) -> CudaSlice<T> {
    // (zero-length buffers still need an allocation: one element)
    if v.is_empty() { st.clone_htod(&[T::default()]).unwrap() } else { st.clone_htod(v).unwrap() }
}

/// Every rank's inputs on its GPU (layout and dest_rows from the host's model) and y poisoned.
fn upload(g: &Ranks, s: MoeShape, x: &Inputs) -> Vec<Bufs> {
    let world = g.comms.len();
    (0..world)
        .map(|r| {
            let st = &g.streams[r];
            let mut y = st.alloc_zeros((x.tokens[r] as usize * s.n as usize).max(1)).unwrap();
            check::poison(st, &mut y).unwrap();
            Bufs {
                h: st.clone_htod(&x.h[r]).unwrap(),
                w: st.clone_htod(&x.w[r]).unwrap(),
                layout: st.clone_htod(&x.m.layout(r).unwrap()).unwrap(),
                ids: upload_or_one(st, &x.ids[r]),
                dest: upload_or_one(st, &x.m.dest[r]),
                tw: upload_or_one(st, &x.tw[r]),
                y,
            }
        })
        .collect()
}

fn launch_all(g: &Ranks, bs: &mut [Bufs], s: MoeShape, x: &Inputs, opts: MoeGemmCombineOptions) -> Vec<mkernel::Result<mkernel::MoeCombineConfig>> {
    bs.iter_mut()
        .enumerate()
        .map(|(r, b)| g.comms[r].moe_gemm_combine(&g.streams[r], &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, MoeShape { tokens: x.tokens[r], ..s }, opts))
        .collect()
}

/// Row `row` of rank q's out: h_q[row] * W_e^T, fp64 sums (the kernel rounds it to bf16
/// before the sum: within the tolerance, see verify).
fn out_row(x: &Inputs, s: MoeShape, q: usize, l: usize, row: usize) -> Vec<f64> {
    let (n, k) = (s.n as usize, s.k as usize);
    let hr = &x.h[q][row * k..(row + 1) * k];
    (0..n)
        .map(|c| {
            let wr = &x.w[q][(l * n + c) * k..(l * n + c + 1) * k];
            let dot: f64 = hr.iter().zip(wr).map(|(a, b)| a.to_f64() * b.to_f64()).sum();
            dot
        })
        .collect()
}

/// Every rank's y against sum_k w[t, k] * out_q[dest[t, k]] in fp64; entries listed in `skip`
/// ((rank, entry)) are left out, as the kernel leaves out bad ones. The kernel rounds each
/// row and the sum to bf16, so its error is within 2^-8 (sum_k |w row| + |y|): the check's
/// scale (the all-reduce's bound, check's module documentation), K for the floor.
fn verify(g: &Ranks, bs: &[Bufs], s: MoeShape, x: &Inputs, skip: &[(usize, usize)], what: &str) {
    let world = g.comms.len();
    let (n, topk, el) = (s.n as usize, s.topk as usize, s.experts as usize / world);
    for (r, b) in bs.iter().enumerate() {
        let t = x.tokens[r] as usize;
        let got = g.streams[r].clone_dtoh(&b.y).unwrap();
        let mut reference = vec![0f64; t * n];
        let mut scale = vec![0f64; t * n];
        for i in 0..t * topk {
            let gid = x.ids[r][i];
            if gid < 0 || skip.contains(&(r, i)) {
                continue;
            }
            let (q, l) = (gid as usize / el, gid as usize % el);
            let row = out_row(x, s, q, l, x.m.dest[r][i] as usize);
            let wt = x.tw[r][i] as f64;
            let tok = i / topk;
            for c in 0..n {
                reference[tok * n + c] += wt * row[c];
                scale[tok * n + c] += (wt * row[c]).abs();
            }
        }
        let scale: Vec<f32> = scale.iter().zip(&reference).map(|(&a, &y)| (a + y.abs()) as f32).collect();
        let reference: Vec<f32> = reference.iter().map(|&v| v as f32).collect();
        let cmp = check::compare(&got[..t * n], &reference, Some(&scale), n, s.k as usize);
        assert!(cmp.passed(), "rank {r} y, {what}: {cmp}");
    }
}

fn round(g: &Ranks, s: MoeShape, tokens: &[u32], routing: Routing, seed: u64, opts: MoeGemmCombineOptions) -> mkernel::MoeCombineConfig {
    let world = g.comms.len();
    let plan = g.comms[0].plan_moe_gemm_combine(s, opts).unwrap();
    let x = inputs(world, s, plan.recv_capacity, tokens, routing, seed);
    let mut bs = upload(g, s, &x);
    for (r, res) in launch_all(g, &mut bs, s, &x, opts).into_iter().enumerate() {
        let cfg = res.unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert_eq!(cfg, plan, "rank {r} planned alike");
    }
    let what = format!("{s:?} tokens {tokens:?} {routing:?} world {world} {plan} (seed {seed:#x})");
    g.sync_all(&what);
    verify(g, &bs, s, &x, &[], &what);
    plan
}

/// Two to four ranks: uniform routings with -1 entries and uneven token counts (0 on one
/// rank), all tokens to rank 0, topk 1 to 8, one and many push CTAs, Registers, TMA-store,
/// 128 x 128 and 64-row tiles; each twice with fresh data.
#[test]
fn matches_the_reference_at_world_sizes_2_3_4() {
    let d = MoeGemmCombineOptions::default();
    for w in [2usize, 3, 4] {
        let wu = w as u32;
        let cases: Vec<(MoeShape, Vec<u32>, Routing, MoeGemmCombineOptions)> = vec![
            (MoeShape { tokens: 0, max_tokens: 300, topk: 2, experts: 4 * wu, n: 512, k: 256 }, (0..wu).map(|r| 300 - 43 * r).collect(), Routing::Uniform, d),
            (MoeShape { tokens: 0, max_tokens: 200, topk: 3, experts: 2 * wu, n: 1000, k: 128 }, (0..wu).map(|r| if r == 1 { 0 } else { 200 - r }).collect(), Routing::Uniform, MoeGemmCombineOptions { push_ctas: Some(1), ..d }),
            (MoeShape { tokens: 0, max_tokens: 256, topk: 2, experts: 3 * wu, n: 384, k: 192 }, vec![256; w], Routing::AllToRankZero, d),
            (MoeShape { tokens: 0, max_tokens: 130, topk: 4, experts: 8 * wu, n: 640, k: 64 }, vec![130; w], Routing::Uniform, MoeGemmCombineOptions { tile: Some(TileConfig::M64_WIDE_TMA_STORE), push_ctas: Some(16), ..d }),
            (MoeShape { tokens: 0, max_tokens: 520, topk: 1, experts: wu, n: 1024, k: 512 }, vec![520; w], Routing::Uniform, MoeGemmCombineOptions { tile: Some(TileConfig::WIDE_TMA_STORE), ..d }),
            (MoeShape { tokens: 0, max_tokens: 100, topk: 2, experts: 2 * wu, n: 264, k: 96 }, vec![100; w], Routing::Uniform, MoeGemmCombineOptions { tile: Some(TileConfig::WIDE), ..d }),
            (MoeShape { tokens: 0, max_tokens: 97, topk: 8, experts: 4 * wu.max(2), n: 392, k: 128 }, (0..wu).map(|r| 97 - 5 * r).collect(), Routing::Uniform, MoeGemmCombineOptions { tile: Some(TileConfig::NARROW_TMA_STORE), ..d }),
            (MoeShape { tokens: 0, max_tokens: 77, topk: 5, experts: 6 * wu, n: 256, k: 64 }, vec![77; w], Routing::Uniform, MoeGemmCombineOptions { tile: Some(TileConfig::NARROW), push_ctas: Some(3), ..d }),
        ];
        let max = 1u64 << 24;
        let Some(g) = ranks("matches_the_reference_at_world_sizes_2_3_4", w, max, Duration::from_secs(20)) else { return };
        for (s, tokens, routing, opts) in cases {
            let seed = check::fresh_seed();
            let plan = round(&g, s, &tokens, routing, seed, opts);
            round(&g, s, &tokens, routing, seed.wrapping_add(17), opts);
            eprintln!("ok world {w} {s:?} {tokens:?} {routing:?} {plan}");
        }
    }
}

/// An MoE layer's two halves: the dispatch's out is the combine's h (no activation between),
/// its layout and dest_rows the combine's routing; the rows against x W1^T, and y against the
/// fp64 reference of sum_k w * (h W2^T) per token over those rows, twice on each world size.
#[test]
fn dispatch_then_combine() {
    for w in [2usize, 3] {
        let wu = w as u32;
        let Some(g) = ranks("dispatch_then_combine", w, 1 << 24, Duration::from_secs(20)) else { return };
        let (hidden, inter) = (384u32, 256u32);
        let s1 = MoeShape { tokens: 0, max_tokens: 180, topk: 2, experts: 4 * wu, n: inter, k: hidden };
        let s2 = MoeShape { n: hidden, k: inter, ..s1 };
        for rep in 0..2u64 {
            let seed = check::fresh_seed().wrapping_add(rep);
            let tokens: Vec<u32> = (0..wu).map(|r| 180 - 31 * r).collect();
            let cap = g.comms[0].plan_moe_dispatch_gemm(s1, MoeDispatchGemmOptions::default()).unwrap().recv_capacity;
            let opts2 = MoeGemmCombineOptions { recv_capacity: Some(cap), ..Default::default() };
            let el = s1.experts as usize / w;
            let ids = moe::expert_ids(w, s1, &tokens, Routing::Uniform, seed);
            let xs: Vec<Vec<bf16>> = tokens.iter().enumerate().map(|(r, &t)| check::random_bf16(t as usize * hidden as usize, seed.wrapping_add(10 + r as u64))).collect();
            let w1: Vec<Vec<bf16>> = (0..w).map(|r| check::random_bf16(el * (inter * hidden) as usize, seed.wrapping_add(20 + r as u64))).collect();
            let w2: Vec<Vec<bf16>> = (0..w).map(|r| check::random_bf16(el * (inter * hidden) as usize, seed.wrapping_add(30 + r as u64))).collect();
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let tw: Vec<Vec<f32>> = tokens.iter().map(|&t| (0..t as usize * 2).map(|_| rng.random_range(0.0f32..1.0)).collect()).collect();
            let mut ys = Vec::new();
            let mut keep = Vec::new();
            for r in 0..w {
                let st = &g.streams[r];
                let x = upload_or_one(st, &xs[r]);
                let idb = upload_or_one(st, &ids[r]);
                let w1b = st.clone_htod(&w1[r]).unwrap();
                let w2b = st.clone_htod(&w2[r]).unwrap();
                let twb = upload_or_one(st, &tw[r]);
                let h = st.alloc_zeros::<bf16>(cap as usize * inter as usize).unwrap();
                let dest = st.alloc_zeros::<u32>((tokens[r] as usize * 2).max(1)).unwrap();
                let layout = st.alloc_zeros::<u32>(mkernel::moe_layout_words(el as u32, wu)).unwrap();
                let mut y = st.alloc_zeros::<bf16>((tokens[r] * hidden).max(1) as usize).unwrap();
                check::poison(st, &mut y).unwrap();
                ys.push(y);
                keep.push((x, idb, w1b, w2b, twb, h, dest, layout));
            }
            for r in 0..w {
                let (x, idb, w1b, _, _, h, dest, layout) = &mut keep[r];
                g.comms[r].moe_dispatch_gemm(&g.streams[r], x, idb, w1b, h, dest, layout, MoeShape { tokens: tokens[r], ..s1 }, MoeDispatchGemmOptions::default()).unwrap();
            }
            for r in 0..w {
                let (_, idb, _, w2b, twb, h, dest, layout) = &keep[r];
                g.comms[r].moe_gemm_combine(&g.streams[r], h, w2b, layout, idb, dest, twb, &mut ys[r], MoeShape { tokens: tokens[r], ..s2 }, opts2).unwrap();
            }
            g.sync_all("dispatch then combine");
            // The dispatch's rows (h) against x W1^T, then y against the weighted sum of
            // (h W2^T) over the device's h (the middle's bf16 rounding is the dispatch's: a
            // reference rounding it alone could differ from it by an ulp, which W2 spreads).
            let (hd, id) = (hidden as usize, inter as usize);
            let hs: Vec<Vec<bf16>> = (0..w).map(|q| g.streams[q].clone_dtoh(&keep[q].5).unwrap()).collect();
            let dests: Vec<Vec<u32>> = (0..w).map(|r| g.streams[r].clone_dtoh(&keep[r].6).unwrap()).collect();
            for r in 0..w {
                let t = tokens[r] as usize;
                let (mut got_mid, mut ref_mid) = (Vec::new(), Vec::new());
                let mut reference = vec![0f64; t * hd];
                let mut scale = vec![0f64; t * hd];
                for i in 0..t * 2 {
                    let gid = ids[r][i];
                    if gid < 0 {
                        continue;
                    }
                    let (q, l) = (gid as usize / el, gid as usize % el);
                    let row = dests[r][i] as usize;
                    let xr = &xs[r][(i / 2) * hd..(i / 2 + 1) * hd];
                    let mid = &hs[q][row * id..(row + 1) * id];
                    got_mid.extend_from_slice(mid);
                    for c in 0..id {
                        let wr = &w1[q][(l * id + c) * hd..(l * id + c + 1) * hd];
                        ref_mid.push(xr.iter().zip(wr).map(|(a, b)| a.to_f64() * b.to_f64()).sum::<f64>() as f32);
                    }
                    for c in 0..hd {
                        let wr = &w2[q][(l * hd + c) * id..(l * hd + c + 1) * id];
                        let v = mid.iter().zip(wr).map(|(a, b)| a.to_f64() * b.to_f64()).sum::<f64>() * tw[r][i] as f64;
                        reference[(i / 2) * hd + c] += v;
                        scale[(i / 2) * hd + c] += v.abs();
                    }
                }
                let cmp = check::compare(&got_mid, &ref_mid, None, id, hd);
                assert!(cmp.passed(), "rank {r}'s tokens' rows after the dispatch, world {w} (seed {seed:#x}): {cmp}");
                let got = g.streams[r].clone_dtoh(&ys[r]).unwrap();
                let scale: Vec<f32> = scale.iter().zip(&reference).map(|(&a, &y)| (a + y.abs()) as f32).collect();
                let reference: Vec<f32> = reference.iter().map(|&v| v as f32).collect();
                let cmp = check::compare(&got[..t * hd], &reference, Some(&scale), hd, id);
                assert!(cmp.passed(), "rank {r} y after dispatch then combine, world {w} (seed {seed:#x}): {cmp}");
            }
            eprintln!("ok dispatch then combine, world {w}, tokens {tokens:?}");
        }
    }
}

/// 40 calls back to back with fresh routings and data, each checked, on two ranks; then 6
/// calls enqueued without host synchronisation into their own outputs, checked at the end
/// (a push into a peer's slots still read by the call before would change its sums).
#[test]
fn epochs_back_to_back() {
    let s = MoeShape { tokens: 0, max_tokens: 257, topk: 2, experts: 8, n: 512, k: 128 };
    let Some(g) = ranks("epochs_back_to_back", 2, 1 << 22, Duration::from_secs(20)) else { return };
    let seed = check::fresh_seed();
    let d = MoeGemmCombineOptions::default();
    for i in 0..40u64 {
        let t = [257 - (i as u32 % 50), 200 + (i as u32 % 57)];
        round(&g, s, &t, if i % 7 == 3 { Routing::AllToRankZero } else { Routing::Uniform }, seed.wrapping_add(i), d);
    }
    let cap = g.comms[0].plan_moe_gemm_combine(s, d).unwrap().recv_capacity;
    let sets: Vec<Inputs> = (0..6).map(|i| inputs(2, s, cap, &[257, 250], Routing::Uniform, seed.wrapping_add(1000 + i))).collect();
    let mut all: Vec<Vec<Bufs>> = sets.iter().map(|x| upload(&g, s, x)).collect();
    for (x, bs) in sets.iter().zip(all.iter_mut()) {
        for res in launch_all(&g, bs, s, x, d) {
            res.unwrap();
        }
    }
    g.sync_all("6 calls without host synchronisation");
    for (i, (x, bs)) in sets.iter().zip(all.iter()).enumerate() {
        verify(&g, bs, s, x, &[], &format!("call {i} of 6 enqueued back to back"));
    }
    eprintln!("ok {s:?}: 46 calls");
}

/// Bad input on the device: an expert id out of range and a destination row past the
/// capacity on rank 1 (reported there, the entry left out of its sum, the rest correct);
/// ranks that disagree on max_tokens and a broken layout on rank 1 (reported by every
/// rank, nothing summed); a checked call after each.
#[test]
fn bad_device_input_is_reported_and_the_group_goes_on() {
    let s = MoeShape { tokens: 0, max_tokens: 200, topk: 2, experts: 4, n: 256, k: 64 };
    let Some(g) = ranks("bad_device_input_is_reported_and_the_group_goes_on", 2, 1 << 22, Duration::from_secs(5)) else { return };
    let d = MoeGemmCombineOptions::default();
    let cap = g.comms[0].plan_moe_gemm_combine(s, d).unwrap().recv_capacity;
    // (rows: past the capacity, and within it but past the rows rank 0's layout uses, which
    // no tile covers: 2 x 200 tokens x 2 over 4 experts use ~512 of rank 0's 1152 rows)
    for (bad_id, bad_row, want) in [
        (9i32, None, "holds 9".to_string()),
        (-3, None, "holds -3".to_string()),
        (1, Some(cap), format!("at or past {cap}")),
        (1, Some(u32::MAX - 1), format!("at or past {cap}")),
        (0, Some(cap - 1), "rows that rank's layout uses".to_string()),
    ] {
        let mut x = inputs(2, s, cap, &[200, 200], Routing::Uniform, check::fresh_seed());
        // A -1 entry of rank 1 (no row of any layout holds it) gets a bad id, or a good id
        // with a row past the capacity: the kernel leaves it out, as the model does.
        let i0 = x.ids[1].iter().position(|&g| g == -1).expect("a -1 entry among 400");
        x.ids[1][i0] = bad_id;
        if let Some(row) = bad_row {
            x.m.dest[1][i0] = row;
        }
        let mut bs = upload(&g, s, &x);
        for res in launch_all(&g, &mut bs, s, &x, d) {
            res.unwrap();
        }
        assert!(g.comms[0].synchronize(&g.streams[0]).is_ok());
        let e = g.comms[1].synchronize(&g.streams[1]).unwrap_err();
        assert!(matches!(e, Error::DeviceInput { rank: 1, .. }), "{e}");
        assert!(e.to_string().contains(&format!("entry {i0} ")) && e.to_string().contains(&want), "{e}");
        verify(&g, &bs, s, &x, &[(1, i0)], &format!("after bad id {bad_id} / row {bad_row:?} at entry {i0}"));
        round(&g, s, &[200, 199], Routing::Uniform, check::fresh_seed(), d);
    }
    // Ranks that disagree on max_tokens: every rank reports it, twice in a row.
    for _ in 0..2 {
        let x = inputs(2, s, cap, &[200, 200], Routing::Uniform, check::fresh_seed());
        let mut bs = upload(&g, s, &x);
        for (r, b) in bs.iter_mut().enumerate() {
            let sr = MoeShape { tokens: 200, max_tokens: 200 + 100 * r as u32, ..s };
            g.comms[r].moe_gemm_combine(&g.streams[r], &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, sr, MoeGemmCombineOptions { recv_capacity: Some(cap), ..d }).unwrap();
        }
        for r in 0..2 {
            let e = g.comms[r].synchronize(&g.streams[r]).unwrap_err();
            let want = format!("rank {} called with max_tokens = {}", 1 - r, 300 - 100 * r);
            assert!(matches!(e, Error::DeviceInput { .. }) && e.to_string().contains(&want), "{e}");
        }
    }
    round(&g, s, &[200, 200], Routing::Uniform, check::fresh_seed(), d);
    // Ranks that pass different tiles (the arrival flags are per tile: helper-113): both report it.
    // Both kernels are loaded first: with the ranks in one context (one GPU), loading a module
    // waits for the kernels running in it, here rank 0's, which waits for rank 1 (run 444).
    round(&g, s, &[200, 200], Routing::Uniform, check::fresh_seed(), MoeGemmCombineOptions { tile: Some(TileConfig::WIDE_TMA_STORE), ..d });
    let x = inputs(2, s, cap, &[200, 200], Routing::Uniform, check::fresh_seed());
    let mut bs = upload(&g, s, &x);
    for (r, b) in bs.iter_mut().enumerate() {
        let tile = if r == 0 { TileConfig::NARROW_TMA_STORE } else { TileConfig::WIDE_TMA_STORE };
        let o = MoeGemmCombineOptions { tile: Some(tile), recv_capacity: Some(cap), ..d };
        g.comms[r].moe_gemm_combine(&g.streams[r], &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, MoeShape { tokens: 200, ..s }, o).unwrap();
    }
    for r in 0..2 {
        let e = g.comms[r].synchronize(&g.streams[r]).unwrap_err();
        let (theirs, mine) = if r == 0 { ("128x256", "128x128") } else { ("128x128", "128x256") };
        let want = format!("rank {} called with tile = {theirs}, this rank with {mine}", 1 - r);
        assert!(matches!(e, Error::DeviceInput { .. }) && e.to_string().contains(&want), "{e}");
    }
    round(&g, s, &[200, 200], Routing::Uniform, check::fresh_seed(), d);
    // Rank 1's layout does not tile its rows (a segment's start moved by a row): both report it.
    let x = inputs(2, s, cap, &[200, 200], Routing::Uniform, check::fresh_seed());
    let mut bs = upload(&g, s, &x);
    let mut broken = x.m.layout(1).unwrap();
    broken[1] += 1;
    bs[1].layout = g.streams[1].clone_htod(&broken).unwrap();
    for res in launch_all(&g, &mut bs, s, &x, d) {
        res.unwrap();
    }
    for r in 0..2 {
        let e = g.comms[r].synchronize(&g.streams[r]).unwrap_err();
        assert!(matches!(e, Error::DeviceInput { .. }) && e.to_string().contains("rank 1's layout"), "{e}");
    }
    round(&g, s, &[200, 200], Routing::Uniform, check::fresh_seed(), d);
}

/// One rank never launches: the other's call reports a PeerTimeout naming it within the
/// timeout plus a margin, and the communicator then refuses work. Each rank alone in turn.
#[test]
fn missing_peer_times_out_naming_it() {
    let s = MoeShape { tokens: 64, max_tokens: 64, topk: 2, experts: 4, n: 256, k: 64 };
    for me in [0usize, 1] {
        let timeout = Duration::from_secs(2);
        let Some(g) = ranks("missing_peer_times_out_naming_it", 2, 1 << 22, timeout) else { return };
        let d = MoeGemmCombineOptions::default();
        let cap = g.comms[0].plan_moe_gemm_combine(s, d).unwrap().recv_capacity;
        let x = inputs(2, s, cap, &[64, 64], Routing::Uniform, check::fresh_seed());
        let mut bs = upload(&g, s, &x);
        let b = &mut bs[me];
        let st = &g.streams[me];
        let start = Instant::now();
        g.comms[me].moe_gemm_combine(st, &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, s, d).unwrap();
        let err = g.comms[me].synchronize(st).unwrap_err();
        let elapsed = start.elapsed();
        match &err {
            Error::PeerTimeout { rank, peer, .. } => assert_eq!((*rank, *peer), (me as u32, 1 - me as u32), "{err}"),
            other => panic!("expected PeerTimeout naming rank {}, got {other}", 1 - me),
        }
        assert!(err.to_string().contains("routes"), "{err}");
        assert!(elapsed < timeout + Duration::from_secs(3), "took {elapsed:?}");
        eprintln!("missing peer reported to rank {me} after {elapsed:?}: {err}");
        let again = g.comms[me].moe_gemm_combine(st, &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, s, d).unwrap_err();
        assert!(matches!(again, Error::Poisoned { .. }), "{again}");
    }
}

/// Bad arguments are refused by name before anything is launched.
#[test]
fn bad_arguments_are_named() {
    let s = MoeShape { tokens: 64, max_tokens: 64, topk: 2, experts: 4, n: 256, k: 64 };
    let Some(g) = ranks("bad_arguments_are_named", 2, 1 << 22, Duration::from_secs(20)) else { return };
    let d = MoeGemmCombineOptions::default();
    let cap = g.comms[0].plan_moe_gemm_combine(s, d).unwrap().recv_capacity;
    let x = inputs(2, s, cap, &[64, 64], Routing::Uniform, check::fresh_seed());
    let mut bs = upload(&g, s, &x);
    let st = g.streams[0].clone();
    let c = &g.comms[0];
    let short_h = st.alloc_zeros::<bf16>(cap as usize * 64 - 1).unwrap();
    let short_tw = st.alloc_zeros::<f32>(64 * 2 - 1).unwrap();
    let mut short_y = st.alloc_zeros::<bf16>(64 * 256 - 1).unwrap();
    let short_layout = st.alloc_zeros::<u32>(mkernel::moe_layout_words(2, 2) - 1).unwrap();
    let b = &mut bs[0];
    let e = c.moe_gemm_combine(&st, &short_h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, s, d).unwrap_err().to_string();
    assert!(e.contains("`h`") && e.contains("recv_capacity"), "{e}");
    let e = c.moe_gemm_combine(&st, &b.h, &b.w, &short_layout, &b.ids, &b.dest, &b.tw, &mut b.y, s, d).unwrap_err().to_string();
    assert!(e.contains("`layout`"), "{e}");
    let e = c.moe_gemm_combine(&st, &b.h, &b.w, &b.layout, &b.ids, &b.dest, &short_tw, &mut b.y, s, d).unwrap_err().to_string();
    assert!(e.contains("`topk_weights`"), "{e}");
    let e = c.moe_gemm_combine(&st, &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut short_y, s, d).unwrap_err().to_string();
    assert!(e.contains("`y`"), "{e}");
    let e = c.moe_gemm_combine(&st, &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, MoeShape { n: 260, ..s }, d).unwrap_err().to_string();
    assert!(e.contains("`shape`") && e.contains("multiple of 8"), "{e}");
    let e = c.moe_gemm_combine(&st, &b.h, &b.w, &b.layout, &b.ids, &b.dest, &b.tw, &mut b.y, s, MoeGemmCombineOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), ..d }).unwrap_err().to_string();
    assert!(e.contains("`tile`"), "{e}");
    round(&g, s, &[64, 64], Routing::Uniform, check::fresh_seed(), d);
}
