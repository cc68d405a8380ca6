//! GPU, one process driving every rank: the fused MoE dispatch + grouped GEMM
//! (`Communicator::moe_dispatch_gemm`) against a host model of the routing (every rank's
//! counts, segments and destination rows, computed independently of the kernel) and an
//! fp64-accumulated reference of each routed token times its expert's weights, with
//! poisoned outputs and fresh random tokens, weights and routings: uneven token counts
//! (0 included), -1 entries, all tokens to one rank (the other's GEMM has no rows), chunks
//! of 1 token, Registers / TMA-store / 64-row tiles, world sizes 2-4 (ranks round-robin on
//! the GPUs present); epochs back to back; a bad expert id and a receive capacity too small
//! reported as `DeviceInput` with the communicator still usable; a missing peer. Skips
//! without a GPU (see mkernel-tests).

use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use half::bf16;
use mkernel::check::{self, MoeRouting};
use mkernel::baseline::Cublas;
use mkernel::{Error, GemmAllReduceOptions, GemmShape, MoeDispatchGemmOptions, MoeShape, TileConfig};
use mkernel_tests::moe::{self, Routing};
use mkernel_tests::{ranks, Ranks};

/// One call's inputs on every rank (host copies).
struct Inputs {
    tokens: Vec<u32>,
    x: Vec<Vec<bf16>>,
    ids: Vec<Vec<i32>>,
    /// [local experts, N, K] per rank
    w: Vec<Vec<bf16>>,
}

fn inputs(world: usize, s: MoeShape, tokens: &[u32], routing: Routing, seed: u64) -> Inputs {
    let (k, n, e) = (s.k as usize, s.n as usize, s.experts as usize);
    let el = e / world;
    Inputs {
        tokens: tokens.to_vec(),
        x: tokens.iter().enumerate().map(|(r, &t)| check::random_bf16(t as usize * k, seed.wrapping_add(100 + r as u64))).collect(),
        ids: moe::expert_ids(world, s, tokens, routing, seed),
        w: (0..world).map(|r| check::random_bf16(el * n * k, seed.wrapping_add(200 + r as u64))).collect(),
    }
}

fn model(s: MoeShape, x: &Inputs) -> MoeRouting {
    MoeRouting::new(&x.ids, s.experts).unwrap()
}

struct Bufs {
    x: CudaSlice<bf16>,
    ids: CudaSlice<i32>,
    w: CudaSlice<bf16>,
    out: CudaSlice<bf16>,
    dest: CudaSlice<u32>,
    layout: CudaSlice<u32>,
}

/// Every rank's inputs on its GPU and its outputs poisoned, `out` sized by the plan of `s`
/// and `opts` (its receive capacity).
fn upload(g: &Ranks, s: MoeShape, x: &Inputs, opts: MoeDispatchGemmOptions) -> Vec<Bufs> {
    let recv_capacity = g.comms[0].plan_moe_dispatch_gemm(s, opts).unwrap().recv_capacity;
    let world = g.comms.len();
    let el = s.experts as usize / world;
    (0..world)
        .map(|r| {
            let st = &g.streams[r];
            // (zero-length buffers still need an allocation: one element)
            let x_r = if x.x[r].is_empty() { st.alloc_zeros(1).unwrap() } else { st.clone_htod(&x.x[r]).unwrap() };
            let ids = if x.ids[r].is_empty() { st.alloc_zeros(1).unwrap() } else { st.clone_htod(&x.ids[r]).unwrap() };
            let mut out = st.alloc_zeros(recv_capacity as usize * s.n as usize).unwrap();
            check::poison(st, &mut out).unwrap();
            let dest = st.clone_htod(&vec![0xDEAD_BEEFu32; (x.tokens[r] as usize * s.topk as usize).max(1)]).unwrap();
            let layout = st.clone_htod(&vec![0xDEAD_BEEFu32; mkernel::moe_layout_words(el as u32, world as u32)]).unwrap();
            Bufs { x: x_r, ids, w: st.clone_htod(&x.w[r]).unwrap(), out, dest, layout }
        })
        .collect()
}

/// [`upload`], then every rank's call enqueued (each must be accepted); the buffers, for
/// [`verify`] after a synchronisation.
fn enqueue(g: &Ranks, s: MoeShape, x: &Inputs, opts: MoeDispatchGemmOptions) -> Vec<Bufs> {
    let mut bs = upload(g, s, x, opts);
    for res in launch_all(g, &mut bs, s, x, opts) {
        res.unwrap();
    }
    bs
}

fn shape_for(s: MoeShape, t: u32) -> MoeShape {
    MoeShape { tokens: t, ..s }
}

fn launch_all(g: &Ranks, bs: &mut [Bufs], s: MoeShape, x: &Inputs, opts: MoeDispatchGemmOptions) -> Vec<mkernel::Result<mkernel::MoeDispatchConfig>> {
    bs.iter_mut()
        .enumerate()
        .map(|(r, b)| g.comms[r].moe_dispatch_gemm(&g.streams[r], &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, shape_for(s, x.tokens[r]), opts))
        .collect()
}

/// Every rank's layout and destination rows exactly as the model says, and every routed
/// token's row of out against x_src[t] * W_e^T (fp64 sums).
fn verify(g: &Ranks, bs: &[Bufs], s: MoeShape, x: &Inputs, what: &str) {
    let world = g.comms.len();
    let m = model(s, x);
    let (n, k, topk, el) = (s.n as usize, s.k as usize, s.topk as usize, s.experts as usize / world);
    for (r, b) in bs.iter().enumerate() {
        let st = &g.streams[r];
        let layout = st.clone_dtoh(&b.layout).unwrap();
        let want = m.layout(r).unwrap();
        assert_eq!(layout, want, "rank {r} layout, {what}");
        let dest = st.clone_dtoh(&b.dest).unwrap();
        assert_eq!(&dest[..x.tokens[r] as usize * topk], &m.dest[r][..], "rank {r} dest_rows, {what}");
    }
    // The rows: gather each rank's expected rows and compare them as one matrix.
    let outs: Vec<Vec<bf16>> = bs.iter().enumerate().map(|(r, b)| g.streams[r].clone_dtoh(&b.out).unwrap()).collect();
    for q in 0..world {
        let mut got = Vec::new();
        let mut reference = Vec::new();
        for src in 0..world {
            for (i, &gid) in x.ids[src].iter().enumerate() {
                if gid < 0 || gid as usize / el != q {
                    continue;
                }
                let l = gid as usize % el;
                let row = m.dest[src][i] as usize;
                let t = i / topk;
                got.extend_from_slice(&outs[q][row * n..(row + 1) * n]);
                let xr = &x.x[src][t * k..(t + 1) * k];
                for c in 0..n {
                    let wr = &x.w[q][(l * n + c) * k..(l * n + c + 1) * k];
                    let dot: f64 = xr.iter().zip(wr).map(|(a, b)| a.to_f64() * b.to_f64()).sum();
                    reference.push(dot as f32);
                }
            }
        }
        let cmp = check::compare(&got, &reference, None, n, k);
        assert!(cmp.passed(), "rank {q} rows, {what}: {cmp}");
    }
}

fn round(g: &Ranks, s: MoeShape, tokens: &[u32], routing: Routing, seed: u64, opts: MoeDispatchGemmOptions) -> mkernel::MoeDispatchConfig {
    let world = g.comms.len();
    let x = inputs(world, s, tokens, routing, seed);
    let plan = g.comms[0].plan_moe_dispatch_gemm(s, opts).unwrap();
    let mut bs = upload(g, s, &x, opts);
    let results = launch_all(g, &mut bs, s, &x, opts);
    for (r, res) in results.into_iter().enumerate() {
        let cfg = res.unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert_eq!(cfg, plan, "rank {r} planned alike");
    }
    let what = format!("{s:?} tokens {tokens:?} {routing:?} world {world} {plan} (seed {seed:#x})");
    g.sync_all(&what);
    verify(g, &bs, s, &x, &what);
    plan
}

/// Two to four ranks: uniform routings with -1 entries and uneven token counts (0 on one
/// rank), all tokens to rank 0, chunks of 1 and of many tokens, one and many push CTAs and all
/// but one CTA pushing (the tiles are claimed: the push CTAs compute once their pushes are out,
/// here most of the tiles), Registers (N % 8 != 0), TMA-store, 128 x 128 and 64-row tiles; each
/// twice with fresh data.
#[test]
fn matches_the_reference_at_world_sizes_2_3_4() {
    let d = MoeDispatchGemmOptions::default();
    for w in [2usize, 3, 4] {
        let wu = w as u32;
        let mut cases: Vec<(MoeShape, Vec<u32>, Routing, MoeDispatchGemmOptions)> = vec![
            (MoeShape { tokens: 0, max_tokens: 300, topk: 2, experts: 4 * wu, n: 512, k: 256 }, (0..wu).map(|r| 300 - 43 * r).collect(), Routing::Uniform, d),
            (MoeShape { tokens: 0, max_tokens: 200, topk: 3, experts: 2 * wu, n: 1000, k: 128 }, (0..wu).map(|r| if r == 1 { 0 } else { 200 - r }).collect(), Routing::Uniform, MoeDispatchGemmOptions { chunk_rows: Some(1), push_ctas: Some(1), ..d }),
            (MoeShape { tokens: 0, max_tokens: 256, topk: 2, experts: 3 * wu, n: 384, k: 192 }, vec![256; w], Routing::AllToRankZero, d),
            (MoeShape { tokens: 0, max_tokens: 130, topk: 4, experts: 8 * wu, n: 640, k: 64 }, vec![130; w], Routing::Uniform, MoeDispatchGemmOptions { tile: Some(TileConfig::M64_WIDE_TMA_STORE), chunk_rows: Some(7), push_ctas: Some(16), ..d }),
            (MoeShape { tokens: 0, max_tokens: 520, topk: 1, experts: wu, n: 1024, k: 512 }, vec![520; w], Routing::Uniform, MoeDispatchGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE), chunk_rows: Some(64), ..d }),
            (MoeShape { tokens: 0, max_tokens: 100, topk: 2, experts: 2 * wu, n: 264, k: 96 }, vec![100; w], Routing::Uniform, MoeDispatchGemmOptions { tile: Some(TileConfig::WIDE), ..d }),
        ];
        let max = 1u64 << 24;
        let Some(g) = ranks("matches_the_reference_at_world_sizes_2_3_4", w, max, Duration::from_secs(20)) else { return };
        let grid = g.comms[0].grid();
        cases.push((MoeShape { tokens: 0, max_tokens: 512, topk: 2, experts: 2 * wu, n: 1024, k: 256 }, vec![512; w], Routing::Uniform, MoeDispatchGemmOptions { push_ctas: Some(grid - 1), ..d }));
        for (s, tokens, routing, opts) in cases {
            let seed = check::fresh_seed();
            let plan = round(&g, s, &tokens, routing, seed, opts);
            round(&g, s, &tokens, routing, seed.wrapping_add(17), opts);
            eprintln!("ok world {w} {s:?} {tokens:?} {routing:?} {plan}");
        }
    }
}

/// 60 calls back to back with fresh routings and data, each checked, on two ranks, every
/// tenth followed by a checked GEMM + all-reduce on the same communicators (whose
/// communication CTAs claim tiles from the same per-call counter as the dispatch's CTAs:
/// a counter not reset between the kernels would leave tiles of either uncomputed); then 8
/// calls enqueued without host synchronisation into their own outputs, checked at the end
/// (a push into a peer still reading the call before would change that call's rows).
#[test]
fn epochs_back_to_back() {
    let s = MoeShape { tokens: 0, max_tokens: 257, topk: 2, experts: 8, n: 512, k: 128 };
    let Some(g) = ranks("epochs_back_to_back", 2, 1 << 22, Duration::from_secs(20)) else { return };
    let seed = check::fresh_seed();
    let d = MoeDispatchGemmOptions::default();
    // The all-reduce's operands: A [M, K] per rank (K its shard), B [N, K], out [M, N].
    let ar = GemmShape { m: 1040, n: 2048, k: 256 };
    let (m, n, k) = (ar.m as usize, ar.n as usize, ar.k as usize);
    let mut ar_a: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(m * k).unwrap()).collect();
    let mut ar_b: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(n * k).unwrap()).collect();
    let mut ar_out: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(m * n).unwrap()).collect();
    let mut blas: Vec<Cublas> = g.streams.iter().map(|st| Cublas::new(st).unwrap()).collect();
    for i in 0..60u64 {
        let t = [257 - (i as u32 % 50), 200 + (i as u32 % 57)];
        round(&g, s, &t, if i % 7 == 3 { Routing::AllToRankZero } else { Routing::Uniform }, seed.wrapping_add(i), d);
        if i % 10 == 9 {
            let case = check::AllReduceCase { shape: ar, world: 2, seed: seed.wrapping_add(1000 + i) };
            for r in 0..2 {
                case.fill_inputs(&g.streams[r], r as u32, &mut ar_a[r], &mut ar_b[r]).unwrap();
                check::poison(&g.streams[r], &mut ar_out[r]).unwrap();
            }
            for r in 0..2 {
                g.comms[r].gemm_allreduce(&g.streams[r], &ar_a[r], &ar_b[r], &mut ar_out[r], ar, GemmAllReduceOptions::default()).unwrap();
            }
            g.sync_all("all-reduce");
            for r in 0..2 {
                let cmp = case.verify(&g.streams[r], &mut blas[r], &ar_out[r]).unwrap();
                assert!(cmp.passed(), "rank {r} all-reduce after dispatch call {i}: {cmp}");
            }
        }
    }
    let sets: Vec<Inputs> = (0..8).map(|i| inputs(2, s, &[257, 250], Routing::Uniform, seed.wrapping_add(1000 + i))).collect();
    let all: Vec<Vec<Bufs>> = sets.iter().map(|x| enqueue(&g, s, x, d)).collect();
    g.sync_all("8 calls without host synchronisation");
    for (i, (x, bs)) in sets.iter().zip(all.iter()).enumerate() {
        verify(&g, bs, s, x, &format!("call {i} of 8 enqueued back to back"));
    }
    eprintln!("ok {s:?}: 68 calls, 6 all-reduces between them");
}

/// A bad expert id on one rank: its synchronize reports DeviceInput naming the entry, the
/// other rank's call completes; both communicators stay usable (a checked call follows),
/// also with a second call enqueued behind the bad one before any synchronisation. Then
/// ranks passing different chunk lengths, and a receive capacity too small for the routing:
/// every rank reports them.
#[test]
fn bad_device_input_is_reported_and_the_group_goes_on() {
    let s = MoeShape { tokens: 0, max_tokens: 200, topk: 2, experts: 4, n: 256, k: 64 };
    let Some(g) = ranks("bad_device_input_is_reported_and_the_group_goes_on", 2, 1 << 22, Duration::from_secs(5)) else { return };
    let d = MoeDispatchGemmOptions::default();
    for bad in [4i32, -2, i32::MAX, 1] {
        let mut x = inputs(2, s, &[200, 200], Routing::Uniform, check::fresh_seed());
        // entry 7 of rank 1 (token 3, k = 1): an id out of range, or (1) a repeat of k = 0's
        x.ids[1][6] = 1;
        x.ids[1][7] = bad;
        let bs = enqueue(&g, s, &x, d);
        assert!(g.comms[0].synchronize(&g.streams[0]).is_ok());
        let e = g.comms[1].synchronize(&g.streams[1]).unwrap_err();
        assert!(matches!(e, Error::DeviceInput { rank: 1, .. }), "{e}");
        assert!(e.to_string().contains("entry 7") && e.to_string().contains(&format!("holds {bad}")), "{e}");
        // (the entry was dropped: the model without it matches what the kernel did)
        x.ids[1][7] = -1;
        verify(&g, &bs, s, &x, &format!("after bad id {bad}"));
        round(&g, s, &[200, 199], Routing::Uniform, check::fresh_seed(), d);
    }
    // A bad id, then a second call enqueued behind it on both ranks with no synchronisation
    // between: the input error waits for synchronize (helper-103: refusing rank 1's next call
    // at its start, alone, would leave rank 0 waiting), and the second call is correct.
    let mut x = inputs(2, s, &[200, 200], Routing::Uniform, check::fresh_seed());
    x.ids[1][11] = 77;
    enqueue(&g, s, &x, d);
    let x2 = inputs(2, s, &[150, 200], Routing::Uniform, check::fresh_seed());
    let bs2 = enqueue(&g, s, &x2, d);
    assert!(g.comms[0].synchronize(&g.streams[0]).is_ok());
    let e = g.comms[1].synchronize(&g.streams[1]).unwrap_err();
    assert!(e.to_string().contains("entry 11") && e.to_string().contains("holds 77"), "{e}");
    verify(&g, &bs2, s, &x2, "the call enqueued behind a bad id");
    // Ranks that disagree on chunk_rows: both report it, nothing is pushed or computed.
    let x = inputs(2, s, &[200, 200], Routing::Uniform, check::fresh_seed());
    let mut bs = upload(&g, s, &x, d);
    for (r, b) in bs.iter_mut().enumerate() {
        let o = MoeDispatchGemmOptions { chunk_rows: Some(16 + r as u32), ..d };
        g.comms[r].moe_dispatch_gemm(&g.streams[r], &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, s, o).unwrap();
    }
    for r in 0..2 {
        let e = g.comms[r].synchronize(&g.streams[r]).unwrap_err();
        assert!(matches!(e, Error::DeviceInput { .. }) && e.to_string().contains(&format!("rank {} called with chunk_rows = {}", 1 - r, 17 - r)), "{e}");
    }
    round(&g, s, &[200, 200], Routing::Uniform, check::fresh_seed(), d);
    // Ranks that disagree on max_tokens (and so on the default capacity: the counts region
    // sits where no argument moves it, helper-104), twice so that the second call could
    // read the first one's words if it were not.
    for _ in 0..2 {
        let x = inputs(2, s, &[200, 200], Routing::Uniform, check::fresh_seed());
        let mut bs = upload(&g, MoeShape { max_tokens: 300, ..s }, &x, d);
        let o = MoeDispatchGemmOptions { chunk_rows: Some(16), ..d };
        for (r, b) in bs.iter_mut().enumerate() {
            let sr = MoeShape { tokens: 200, max_tokens: 200 + 100 * r as u32, ..s };
            g.comms[r].moe_dispatch_gemm(&g.streams[r], &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, sr, o).unwrap();
        }
        for r in 0..2 {
            let e = g.comms[r].synchronize(&g.streams[r]).unwrap_err();
            let want = format!("rank {} called with max_tokens = {}", 1 - r, 300 - 100 * r);
            assert!(matches!(e, Error::DeviceInput { .. }) && e.to_string().contains(&want), "{e}");
        }
    }
    round(&g, s, &[200, 200], Routing::Uniform, check::fresh_seed(), d);
    // All 400 tokens x 2 to rank 0's two experts need 2 x 512 rows; capacity 256.
    let x = inputs(2, s, &[200, 200], Routing::AllToRankZero, check::fresh_seed());
    let small = MoeDispatchGemmOptions { recv_capacity: Some(256), ..d };
    enqueue(&g, s, &x, small);
    for r in 0..2 {
        let e = g.comms[r].synchronize(&g.streams[r]).unwrap_err();
        assert!(matches!(e, Error::DeviceInput { .. }), "{e}");
        assert!(e.to_string().contains("rank 0 would receive 1024 rows") && e.to_string().contains("recv_capacity is 256"), "{e}");
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
        let x = inputs(2, s, &[64, 64], Routing::Uniform, check::fresh_seed());
        let mut bs = upload(&g, s, &x, MoeDispatchGemmOptions::default());
        let b = &mut bs[me];
        let st = &g.streams[me];
        let start = Instant::now();
        g.comms[me].moe_dispatch_gemm(st, &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, s, MoeDispatchGemmOptions::default()).unwrap();
        let err = g.comms[me].synchronize(st).unwrap_err();
        let elapsed = start.elapsed();
        match &err {
            Error::PeerTimeout { rank, peer, .. } => assert_eq!((*rank, *peer), (me as u32, 1 - me as u32), "{err}"),
            other => panic!("expected PeerTimeout naming rank {}, got {other}", 1 - me),
        }
        assert!(err.to_string().contains("counts"), "{err}");
        assert!(elapsed < timeout + Duration::from_secs(3), "took {elapsed:?}");
        eprintln!("missing peer reported to rank {me} after {elapsed:?}: {err}");
        let again = g.comms[me].moe_dispatch_gemm(st, &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, s, MoeDispatchGemmOptions::default()).unwrap_err();
        assert!(matches!(again, Error::Poisoned { .. }), "{again}");
    }
}

/// Bad arguments are refused by name before anything is launched.
#[test]
fn bad_arguments_are_named() {
    let s = MoeShape { tokens: 64, max_tokens: 64, topk: 2, experts: 4, n: 256, k: 64 };
    let Some(g) = ranks("bad_arguments_are_named", 2, 1 << 22, Duration::from_secs(20)) else { return };
    let x = inputs(2, s, &[64, 64], Routing::Uniform, check::fresh_seed());
    let plan = g.comms[0].plan_moe_dispatch_gemm(s, MoeDispatchGemmOptions::default()).unwrap();
    let mut bs = upload(&g, s, &x, MoeDispatchGemmOptions::default());
    let st = g.streams[0].clone();
    let c = &g.comms[0];
    let d = MoeDispatchGemmOptions::default();
    let short_x = st.alloc_zeros::<bf16>(64 * 64 - 1).unwrap();
    let short_ids = st.alloc_zeros::<i32>(64 * 2 - 1).unwrap();
    let mut short_out = st.alloc_zeros::<bf16>(plan.recv_capacity as usize * 256 - 1).unwrap();
    let mut short_layout = st.alloc_zeros::<u32>(mkernel::moe_layout_words(2, 2) - 1).unwrap();
    let b = &mut bs[0];
    let e = c.moe_dispatch_gemm(&st, &short_x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, s, d).unwrap_err().to_string();
    assert!(e.contains("`x`"), "{e}");
    let e = c.moe_dispatch_gemm(&st, &b.x, &short_ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, s, d).unwrap_err().to_string();
    assert!(e.contains("`expert_ids`"), "{e}");
    let e = c.moe_dispatch_gemm(&st, &b.x, &b.ids, &b.w, &mut short_out, &mut b.dest, &mut b.layout, s, d).unwrap_err().to_string();
    assert!(e.contains("`out`") && e.contains("recv_capacity"), "{e}");
    let e = c.moe_dispatch_gemm(&st, &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut short_layout, s, d).unwrap_err().to_string();
    assert!(e.contains("`layout`"), "{e}");
    let e = c.moe_dispatch_gemm(&st, &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, MoeShape { experts: 5, ..s }, d).unwrap_err().to_string();
    assert!(e.contains("`shape`"), "{e}");
    let e = c.moe_dispatch_gemm(&st, &b.x, &b.ids, &b.w, &mut b.out, &mut b.dest, &mut b.layout, s, MoeDispatchGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), ..d }).unwrap_err().to_string();
    assert!(e.contains("`tile`"), "{e}");
    round(&g, s, &[64, 64], Routing::Uniform, check::fresh_seed(), d);
}
