//! GPU, one process driving every rank: ring attention (`Communicator::ring_attention`) and
//! the unfused attention (`mkernel::attention`) against an fp64 reference of softmax(q K^T x
//! scale) V over the whole sequence (every rank's keys, in rank order), with poisoned
//! outputs and fresh random data: causal and full masks, contiguous and zigzag shards
//! (the reference places each rank's positions by `AttentionShape::position`), head dimensions 64 and 128,
//! grouped-query heads, batches, ragged sequence lengths (not multiples of the 128-row query
//! or 64-row key blocks), chunks of one position to a whole sequence, the log-sum-exp,
//! world sizes 2-4 (ranks round-robin on the GPUs present), many epochs, a missing peer and
//! argument errors. Skips without a GPU (see mkernel-tests).
//!
//! Tolerance: P = softmax(S) enters P V rounded to bf16 (relative error <= 2^-8 per
//! element) and the output is rounded once more, so |out - ref| <= 2^-8 (sum_j |p_j v_j| +
//! |ref|); the check allows 2^-7 of that scale (`check::compare`'s rule with the
//! all-reduce's kind of scale), and the relative Frobenius error must stay below 1e-2 (a
//! lost key block of 64 out of a few hundred keys is ~10%).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::check;
use mkernel::{attention, AttentionOptions, AttentionShape, Error, KvSources, RingAttentionOptions, SeqLayout};
use mkernel_tests::{gpu_or_skip, ranks, Ranks};

/// A contiguous shape (`causal`: over contiguous shards).
fn shape(batch: u32, seq: u32, heads: u32, kv_heads: u32, head_dim: u32, causal: bool) -> AttentionShape {
    AttentionShape { batch, seq, heads, kv_heads, head_dim, causal, layout: SeqLayout::Contiguous }
}

/// A causal shape over zigzag shards (S even).
fn zigzag(batch: u32, seq: u32, heads: u32, kv_heads: u32, head_dim: u32) -> AttentionShape {
    AttentionShape { causal: true, layout: SeqLayout::Zigzag, ..shape(batch, seq, heads, kv_heads, head_dim, true) }
}

/// Every rank's q [B, S, H, D], k and v [B, S, Hkv, D] (host copies).
struct Inputs {
    q: Vec<Vec<bf16>>,
    k: Vec<Vec<bf16>>,
    v: Vec<Vec<bf16>>,
}

fn inputs(world: usize, s: AttentionShape, seed: u64) -> Inputs {
    let (qn, kn) = (s.q_elems() as usize, s.kv_elems() as usize);
    let r = |i: u64| seed.wrapping_add(i);
    Inputs {
        q: (0..world).map(|w| check::random_bf16(qn, r(3 * w as u64))).collect(),
        k: (0..world).map(|w| check::random_bf16(kn, r(3 * w as u64 + 1))).collect(),
        v: (0..world).map(|w| check::random_bf16(kn, r(3 * w as u64 + 2))).collect(),
    }
}

/// Rank `rank`'s output and lse against `check::attention_reference` over every row.
fn verify(got: &[bf16], got_lse: Option<&[f32]>, x: &Inputs, s: AttentionShape, rank: usize, scale: f32, what: &str) {
    verify_rows(got, got_lse, x, s, rank, scale, what, |_| true);
}

/// [`verify`] over the rows (b, h, i) that `keep` keeps.
#[allow(clippy::too_many_arguments)]
fn verify_rows(got: &[bf16], got_lse: Option<&[f32]>, x: &Inputs, s: AttentionShape, rank: usize, scale: f32, what: &str, keep: impl Fn(&(usize, usize, usize)) -> bool) {
    let d = s.head_dim as usize;
    let rows: Vec<(usize, usize, usize)> = (0..s.batch as usize)
        .flat_map(|b| (0..s.seq as usize).flat_map(move |i| (0..s.heads as usize).map(move |h| (b, h, i))))
        .filter(|r| keep(r))
        .collect();
    let at = |&(b, h, i): &(usize, usize, usize)| ((b * s.seq as usize + i) * s.heads as usize + h) * d;
    let got: Vec<bf16> = rows.iter().flat_map(|r| got[at(r)..][..d].iter().copied()).collect();
    let k: Vec<&[bf16]> = x.k.iter().map(|v| v.as_slice()).collect();
    let v: Vec<&[bf16]> = x.v.iter().map(|v| v.as_slice()).collect();
    let reference = check::attention_reference(&x.q[rank], &k, &v, s, rank, scale, &rows).unwrap();
    // (rows in [B, S, H] order: the output's)
    let want: Vec<f32> = reference.iter().flat_map(|r| r.out.iter().map(|&o| o as f32)).collect();
    let err_scale: Vec<f32> = reference.iter().flat_map(|r| r.scale.iter().map(|&o| o as f32)).collect();
    let cmp = check::compare(&got, &want, Some(&err_scale), d, 0);
    assert!(cmp.passed(), "rank {rank} {what}: {cmp}");
    if let Some(lse) = got_lse {
        assert_eq!(lse.len(), reference.len());
        for (&(b, h, i), r) in rows.iter().zip(&reference) {
            let g = lse[(b * s.heads as usize + h) * s.seq as usize + i];
            assert!((g as f64 - r.lse).abs() <= 1e-3 + 1e-4 * r.lse.abs(), "rank {rank} {what}: lse[b {b}, h {h}, i {i}] = {g}, reference {}", r.lse);
        }
    }
}

struct RankBufs {
    q: CudaSlice<bf16>,
    k: CudaSlice<bf16>,
    v: CudaSlice<bf16>,
    out: CudaSlice<bf16>,
    lse: CudaSlice<f32>,
}

fn upload(g: &Ranks, s: AttentionShape, x: &Inputs) -> Vec<RankBufs> {
    g.streams
        .iter()
        .enumerate()
        .map(|(r, st)| {
            let mut out = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
            check::poison(st, &mut out).unwrap();
            let lse = st.clone_htod(&vec![f32::NAN; s.lse_elems() as usize]).unwrap();
            RankBufs { q: st.clone_htod(&x.q[r]).unwrap(), k: st.clone_htod(&x.k[r]).unwrap(), v: st.clone_htod(&x.v[r]).unwrap(), out, lse }
        })
        .collect()
}

/// Fresh inputs from `seed`, one fused call per rank (all enqueued before any wait), then
/// every rank's output and lse against the reference. `late`: the last rank enqueues its call
/// that long after the others (their kernels run meanwhile: a rank that did not wait for the
/// late rank's keys would read what its gathered KV held before, the previous call's).
fn round_late(g: &Ranks, s: AttentionShape, seed: u64, opts: RingAttentionOptions, late: Duration) {
    let world = g.comms.len();
    let x = inputs(world, s, seed);
    let mut bs = upload(g, s, &x);
    for st in &g.streams {
        st.synchronize().unwrap();
    }
    let mut plan = None;
    for (r, b) in bs.iter_mut().enumerate() {
        if r + 1 == world && !late.is_zero() {
            std::thread::sleep(late);
        }
        plan.get_or_insert(g.comms[r].ring_attention(&g.streams[r], &b.q, &b.k, &b.v, &mut b.out, Some(&mut b.lse), s, opts).unwrap());
    }
    let plan = plan.unwrap();
    let what = format!("{s} world {world} {plan} (seed {seed:#x})");
    g.sync_all(&what);
    for (r, b) in bs.iter().enumerate() {
        let st = &g.streams[r];
        verify(&st.clone_dtoh(&b.out).unwrap(), Some(&st.clone_dtoh(&b.lse).unwrap()), &x, s, r, plan.softmax_scale, &what);
    }
}

fn round(g: &Ranks, s: AttentionShape, seed: u64, opts: RingAttentionOptions) {
    round_late(g, s, seed, opts, Duration::ZERO);
}

/// One call whose values are all +Inf (outputs not checked), so every rank's gathered KV
/// then holds Inf where the next call's values go: a key block that read rows of the next
/// call before their arrival (a zigzag segment's ragged last block reads the next segment's
/// rows, masked: helper-108) would turn 0 x Inf into NaN.
fn leave_inf_values(g: &Ranks, s: AttentionShape, seed: u64, opts: RingAttentionOptions) {
    let mut x = inputs(g.comms.len(), s, seed);
    for v in &mut x.v {
        v.fill(bf16::INFINITY);
    }
    let mut bs = upload(g, s, &x);
    for (r, b) in bs.iter_mut().enumerate() {
        g.comms[r].ring_attention(&g.streams[r], &b.q, &b.k, &b.v, &mut b.out, None, s, opts).unwrap();
    }
    g.sync_all("the call that leaves Inf values in the gathered KV");
}

/// One `mkernel::attention` call on `st` over `x` (the queries of `src.rank`, every source's
/// keys and values), its output poisoned and lse NaN before, then both against the reference
/// (`scale`: None for 1 / sqrt(D)).
fn unfused_round(st: &Arc<CudaStream>, x: &Inputs, s: AttentionShape, src: KvSources, scale: Option<f32>, what: &str) {
    let q = st.clone_htod(&x.q[src.rank as usize]).unwrap();
    let k = st.clone_htod(&x.k.concat()).unwrap();
    let v = st.clone_htod(&x.v.concat()).unwrap();
    let mut out = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
    check::poison(st, &mut out).unwrap();
    let mut lse = st.clone_htod(&vec![f32::NAN; s.lse_elems() as usize]).unwrap();
    let opts = AttentionOptions { softmax_scale: scale, sources: src, ctas: None };
    attention(st, &q, &k, &v, &mut out, Some(&mut lse), s, opts).unwrap();
    st.synchronize().unwrap();
    let scale = scale.unwrap_or(1.0 / (s.head_dim as f32).sqrt());
    // (the reference takes rank `src.rank`'s queries: it is given every source's keys and that rank's q)
    verify(&st.clone_dtoh(&out).unwrap(), Some(&st.clone_dtoh(&lse).unwrap()), x, s, src.rank as usize, scale, what);
    eprintln!("ok unfused {what}");
}

/// The unfused kernel on one GPU: plain attention (one source) with ragged lengths, both
/// masks and head dimensions, grouped-query heads and a batch; and the baseline's form
/// (three sources, the queries of rank 1), whose causal mask starts at rank 1's positions;
/// zigzag shards (two and three sources, ragged segments of 129 and 150 positions).
#[test]
fn attention_matches_the_reference_on_one_gpu() {
    let Some(_) = gpu_or_skip("attention_matches_the_reference_on_one_gpu", 1) else { return };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let st = ctx.new_stream().unwrap();
    let cases: Vec<(AttentionShape, u32, u32, Option<f32>)> = vec![
        (shape(1, 256, 2, 2, 128, false), 1, 0, None),
        (shape(2, 333, 4, 1, 128, true), 1, 0, None),
        (shape(1, 1, 1, 1, 64, true), 1, 0, None),
        (shape(1, 200, 8, 2, 64, false), 1, 0, Some(0.5)),
        (shape(1, 129, 2, 1, 64, true), 1, 0, Some(4.0)),
        (shape(2, 100, 2, 2, 128, true), 3, 1, None),
        (shape(1, 70, 4, 2, 128, false), 3, 2, Some(0.01)),
        (zigzag(2, 300, 4, 1, 128), 3, 1, None),
        (zigzag(1, 258, 2, 1, 64), 2, 0, None),
        (zigzag(1, 258, 2, 1, 64), 2, 1, Some(3.0)),
        (zigzag(1, 258, 2, 1, 128), 2, 1, Some(1.5)),
    ];
    for (s, world, rank, scale) in cases {
        let seed = check::fresh_seed();
        let x = inputs(world as usize, s, seed);
        unfused_round(&st, &x, s, KvSources { world, rank }, scale, &format!("{s} sources {world} rank {rank} (seed {seed:#x})"));
    }
}

/// The softmax's base moves only where a block's row max passes it by 2^8 (conditional
/// rescaling, FlashAttention-4's): keys scaled by 2^b in key block b (exact in bf16) make
/// the row maxima grow block after block, so some blocks move the base and rescale O and
/// others leave it (rows of one warp deciding differently), and with one source the reverse
/// order keeps every row's first block's base with P down to 2^-100s (with three, the kernel
/// takes the own rank's blocks first, so both orders mix: the base moves where the sources
/// change); ragged lengths, both masks and head dimensions; against the fp64 reference.
/// helper-118's model of this construction: O never rescaled fails 7 of the 8 cases, a
/// branch decided by one lane all 4 growing ones.
#[test]
fn growing_row_maxima_move_the_softmax_base() {
    let Some(_) = gpu_or_skip("growing_row_maxima_move_the_softmax_base", 1) else { return };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let st = ctx.new_stream().unwrap();
    for (s, world, rank) in [
        (shape(1, 700, 2, 1, 128, false), 1u32, 0u32),
        (shape(1, 700, 2, 2, 64, true), 1, 0),
        (shape(1, 300, 4, 2, 128, true), 3, 2),
        (shape(1, 300, 2, 1, 64, false), 3, 1),
    ] {
        for growing in [true, false] {
            let seed = check::fresh_seed();
            let mut x = inputs(world as usize, s, seed);
            let (seq, row) = (s.seq as usize, (s.kv_heads * s.head_dim) as usize);
            let blocks = (world as usize * seq).div_ceil(128);
            for (w, k) in x.k.iter_mut().enumerate() {
                for (i, v) in k.chunks_mut(row).enumerate() {
                    let block = (w * seq + i % seq) / 128;  // (key position over every source, batch 1)
                    let e = if growing { block } else { blocks - 1 - block };
                    let f = bf16::from_f32((e as f32).exp2());
                    v.iter_mut().for_each(|a| *a *= f);
                }
            }
            let what = format!("{s} sources {world} rank {rank}, keys x 2^block {} (seed {seed:#x})", if growing { "growing" } else { "shrinking" });
            unfused_round(&st, &x, s, KvSources { world, rank }, None, &what);
        }
    }
}

/// Two to four ranks: full and causal masks, contiguous and zigzag shards, both head
/// dimensions, grouped-query heads, a batch, ragged lengths (zigzag: segments of 1, 150 and
/// 258 positions), chunks of one position (many flags a key block), of a whole sequence and
/// straddling the segments, one push CTA, a large scale (peaked softmax); each with fresh data
/// twice (two epochs), the second time with the last rank 150 ms late (helper-105: so that a
/// missing wait would read the first call's keys; zigzag, after a call that leaves Inf values).
#[test]
fn ring_attention_matches_the_reference_at_world_sizes_2_3_4() {
    let d = RingAttentionOptions::default();
    let cases: Vec<(AttentionShape, RingAttentionOptions)> = vec![
        (shape(1, 256, 4, 2, 128, false), d),
        (shape(1, 256, 4, 2, 128, true), d),
        (shape(2, 300, 2, 1, 64, true), d),
        (shape(1, 200, 2, 2, 64, false), RingAttentionOptions { chunk_rows: Some(1), ..d }),
        (shape(2, 130, 4, 4, 128, false), RingAttentionOptions { chunk_rows: Some(u32::MAX), push_ctas: Some(1), ..d }),
        (shape(1, 64, 2, 1, 128, true), RingAttentionOptions { softmax_scale: Some(2.0), chunk_rows: Some(48), ..d }),
        (shape(1, 5, 1, 1, 64, false), d),
        (zigzag(1, 256, 4, 2, 128), d),
        (zigzag(2, 300, 2, 1, 64), RingAttentionOptions { chunk_rows: Some(100), ..d }),
        (zigzag(1, 516, 2, 2, 128), RingAttentionOptions { chunk_rows: Some(1), push_ctas: Some(1), ..d }),
        (zigzag(1, 2, 1, 1, 64), d),
    ];
    for w in [2usize, 3, 4] {
        let max = cases.iter().map(|(s, _)| s.gathered_elems(w as u32)).max().unwrap();
        let Some(g) = ranks("ring_attention_matches_the_reference_at_world_sizes_2_3_4", w, max, Duration::from_secs(20)) else { return };
        for &(s, opts) in &cases {
            let seed = check::fresh_seed();
            round(&g, s, seed, opts);
            // (the gathered KV now holds this call's keys: the next call's must be waited for)
            if s.layout == SeqLayout::Zigzag {
                leave_inf_values(&g, s, seed.wrapping_add(5), opts);
            }
            round_late(&g, s, seed.wrapping_add(77), opts, Duration::from_millis(150));
            eprintln!("ok world {w} {s}");
        }
    }
}

/// Zigzag shards whose segments end inside a key block (S = 100: segments of 50, one block
/// reading both): the first value row of rank 0's segment 1 (position 3 S / 2 of 2 S, seen by
/// rank 0's segment-1 queries only, each at or after it, so no query masks it within a block
/// it shares) is +Inf, and every other query's output must stay finite and right, fused (two
/// ranks) and unfused: a segment-0 block reads its own segment only (its rows past it as
/// zeros), never multiplying a masked score by the next segment's Inf. (A value masked
/// causally within its own diagonal block still meets a zero P, as in FlashAttention: 0 x Inf
/// is NaN there; run 434 tried the sequence's last position and met exactly that.)
#[test]
fn zigzag_blocks_stay_within_their_segment() {
    let s = zigzag(1, 100, 2, 1, 64);
    let Some(g) = ranks("zigzag_blocks_stay_within_their_segment", 2, s.gathered_elems(2), Duration::from_secs(20)) else { return };
    let seed = check::fresh_seed();
    let mut x = inputs(2, s, seed);
    let half = s.seq as usize / 2;
    let row = s.kv_heads as usize * s.head_dim as usize;
    x.v[0][half * row..(half + 1) * row].fill(bf16::INFINITY);
    assert_eq!(s.position(2, 0, s.seq / 2), 3 * s.seq as u64 / 2, "rank 0's segment 1 starts at position 3 S / 2");
    let keep = |r: usize| move |&(_, _, i): &(usize, usize, usize)| r != 0 || i < half;
    let scale = 1.0 / 8.0;
    // (fused)
    let mut bs = upload(&g, s, &x);
    for (r, b) in bs.iter_mut().enumerate() {
        g.comms[r].ring_attention(&g.streams[r], &b.q, &b.k, &b.v, &mut b.out, None, s, RingAttentionOptions::default()).unwrap();
    }
    g.sync_all("zigzag with an Inf value");
    for (r, b) in bs.iter().enumerate() {
        verify_rows(&g.streams[r].clone_dtoh(&b.out).unwrap(), None, &x, s, r, scale, &format!("fused {s} (seed {seed:#x})"), keep(r));
    }
    // (unfused, each rank's queries against both sources)
    let st = &g.streams[0];
    let (k, v) = (st.clone_htod(&x.k.concat()).unwrap(), st.clone_htod(&x.v.concat()).unwrap());
    for r in 0..2 {
        let q = st.clone_htod(&x.q[r]).unwrap();
        let mut out = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
        check::poison(st, &mut out).unwrap();
        attention(st, &q, &k, &v, &mut out, None, s, AttentionOptions { softmax_scale: None, sources: KvSources { world: 2, rank: r as u32 }, ctas: None }).unwrap();
        st.synchronize().unwrap();
        verify_rows(&st.clone_dtoh(&out).unwrap(), None, &x, s, r, scale, &format!("unfused {s} rank {r} (seed {seed:#x})"), keep(r));
    }
    eprintln!("ok {s}: rank 0's segment-1 first value +Inf, every query not seeing it finite and right");
}

/// More units than CTAs (helper-105: the other cases give every CTA at most one unit), so
/// each CTA reuses its Q stages and K/V stages across units, its consumer warpgroups' turns go
/// on from unit to unit, and it carries its watermarks from one unit to the next: 2 sequences x
/// 1024 positions x 16 heads at D = 64 (192 units of 192 rows), on the unfused kernel (one GPU:
/// every SM, then 5 CTAs, ~38 units each, helper-110) and on two ranks, both masks,
/// contiguous and zigzag shards (one source: the zigzag layout is the contiguous one); then
/// D = 128 against two sources on 3 CTAs (two warpgroups, 128-row units).
#[test]
fn many_units_per_cta() {
    let s = shape(2, 1024, 16, 4, 64, false);
    let Some(g) = ranks("many_units_per_cta", 2, s.gathered_elems(2), Duration::from_secs(20)) else { return };
    let st = &g.streams[0];
    for (causal, layout) in [(false, SeqLayout::Contiguous), (true, SeqLayout::Contiguous), (true, SeqLayout::Zigzag)] {
        let s = AttentionShape { causal, layout, ..s };
        let seed = check::fresh_seed();
        // (unfused: every SM of the GPU, then 5 CTAs)
        let x = inputs(1, s, seed);
        let (q, k, v) = (st.clone_htod(&x.q[0]).unwrap(), st.clone_htod(&x.k[0]).unwrap(), st.clone_htod(&x.v[0]).unwrap());
        for ctas in [None, Some(5)] {
            let mut out = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
            check::poison(st, &mut out).unwrap();
            attention(st, &q, &k, &v, &mut out, None, s, AttentionOptions { ctas, ..AttentionOptions::default() }).unwrap();
            st.synchronize().unwrap();
            verify(&st.clone_dtoh(&out).unwrap(), None, &x, s, 0, 1.0 / 8.0, &format!("unfused {s} on {ctas:?} CTAs (seed {seed:#x})"));
        }
        // (fused, two ranks)
        round_late(&g, s, seed.wrapping_add(1), RingAttentionOptions::default(), Duration::from_millis(100));
        eprintln!("ok {s}: many units a CTA");
    }
    for s in [shape(1, 600, 8, 2, 128, true), zigzag(1, 600, 8, 2, 128)] {
        let seed = check::fresh_seed();
        let x = inputs(2, s, seed);
        let (q, k, v) = (st.clone_htod(&x.q[1]).unwrap(), st.clone_htod(&x.k.concat()).unwrap(), st.clone_htod(&x.v.concat()).unwrap());
        let mut out = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
        check::poison(st, &mut out).unwrap();
        let opts = AttentionOptions { sources: KvSources { world: 2, rank: 1 }, ctas: Some(3), ..AttentionOptions::default() };
        attention(st, &q, &k, &v, &mut out, None, s, opts).unwrap();
        st.synchronize().unwrap();
        verify(&st.clone_dtoh(&out).unwrap(), None, &x, s, 1, 1.0 / (128f32).sqrt(), &format!("unfused {s} rank 1 of 2 on 3 CTAs (seed {seed:#x})"));
        eprintln!("ok {s}: two sources on 3 CTAs");
    }
}

/// 100 calls back to back on one communicator with fresh data each (epochs), rotating
/// through the full mask, causal over contiguous and over zigzag shards, and 8 calls enqueued
/// without a host synchronisation between them (each with its own outputs), checked
/// afterwards.
#[test]
fn epochs_back_to_back() {
    let s = shape(1, 192, 2, 1, 128, false);
    let Some(g) = ranks("epochs_back_to_back", 2, s.gathered_elems(2), Duration::from_secs(20)) else { return };
    let seed = check::fresh_seed();
    for i in 0..100u64 {
        let layout = if i % 3 == 2 { SeqLayout::Zigzag } else { SeqLayout::Contiguous };
        let s = AttentionShape { causal: i % 3 != 0, layout, ..s };
        round(&g, s, seed.wrapping_add(10 * i), RingAttentionOptions::default());
    }
    let sets: Vec<Inputs> = (0..8).map(|i| inputs(2, s, seed.wrapping_add(5000 + i))).collect();
    let mut bufs: Vec<Vec<RankBufs>> = sets.iter().map(|x| upload(&g, s, x)).collect();
    for b in bufs.iter_mut() {
        for (r, rb) in b.iter_mut().enumerate() {
            g.comms[r].ring_attention(&g.streams[r], &rb.q, &rb.k, &rb.v, &mut rb.out, None, s, RingAttentionOptions::default()).unwrap();
        }
    }
    g.sync_all("8 calls without host synchronisation");
    for (i, b) in bufs.iter().enumerate() {
        for (r, rb) in b.iter().enumerate() {
            verify(&g.streams[r].clone_dtoh(&rb.out).unwrap(), None, &sets[i], s, r, 1.0 / 128f32.sqrt(), &format!("call {i} of 8"));
        }
    }
    eprintln!("ok {s}: 108 ring attention calls");
}

/// One rank never launches: the other's call reports a PeerTimeout naming it (its wait for a
/// chunk of the missing rank's keys) within the timeout plus a margin, and the communicator
/// then refuses work. Each rank alone in turn (full mask: every rank waits for the other).
#[test]
fn missing_peer_times_out_naming_it() {
    let s = shape(1, 256, 2, 2, 64, false);
    for me in [0usize, 1] {
        let timeout = Duration::from_secs(2);
        let Some(g) = ranks("missing_peer_times_out_naming_it", 2, s.gathered_elems(2), timeout) else { return };
        let st = &g.streams[me];
        let q = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
        let k = st.alloc_zeros::<bf16>(s.kv_elems() as usize).unwrap();
        let v = st.alloc_zeros::<bf16>(s.kv_elems() as usize).unwrap();
        let mut out = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
        let start = Instant::now();
        g.comms[me].ring_attention(st, &q, &k, &v, &mut out, None, s, RingAttentionOptions::default()).unwrap();
        let err = g.comms[me].synchronize(st).unwrap_err();
        let elapsed = start.elapsed();
        match &err {
            Error::PeerTimeout { rank, peer, .. } => assert_eq!((*rank, *peer), (me as u32, 1 - me as u32), "{err}"),
            other => panic!("expected PeerTimeout naming rank {}, got {other}", 1 - me),
        }
        assert!(err.to_string().contains("keys and values"), "{err}");
        assert!(elapsed < timeout + Duration::from_secs(3), "took {elapsed:?}");
        eprintln!("missing peer reported to rank {me} after {elapsed:?}: {err}");
        let again = g.comms[me].ring_attention(st, &q, &k, &v, &mut out, None, s, RingAttentionOptions::default()).unwrap_err();
        assert!(matches!(again, Error::Poisoned { .. }), "{again}");
    }
}

/// Bad arguments are refused by name before anything is launched (the group still works
/// after them).
#[test]
fn bad_arguments_are_named() {
    let s = shape(1, 128, 4, 2, 128, true);
    let Some(g) = ranks("bad_arguments_are_named", 2, s.gathered_elems(2), Duration::from_secs(20)) else { return };
    let st = g.streams[0].clone();
    let c = &g.comms[0];
    let d = RingAttentionOptions::default();
    let q = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
    let k = st.alloc_zeros::<bf16>(s.kv_elems() as usize).unwrap();
    let mut out = st.alloc_zeros::<bf16>(s.q_elems() as usize).unwrap();
    let short = st.alloc_zeros::<bf16>(s.kv_elems() as usize - 1).unwrap();
    let mut short_lse = st.alloc_zeros::<f32>(s.lse_elems() as usize - 1).unwrap();
    let e = c.ring_attention(&st, &q, &short, &k, &mut out, None, s, d).unwrap_err().to_string();
    assert!(e.contains("`k`"), "{e}");
    let e = c.ring_attention(&st, &q, &k, &k, &mut out, Some(&mut short_lse), s, d).unwrap_err().to_string();
    assert!(e.contains("`lse`"), "{e}");
    let e = c.ring_attention(&st, &q, &k, &k, &mut out, None, AttentionShape { head_dim: 80, ..s }, d).unwrap_err().to_string();
    assert!(e.contains("head_dim"), "{e}");
    let e = c.ring_attention(&st, &q, &k, &k, &mut out, None, AttentionShape { seq: 4096, ..s }, d).unwrap_err().to_string();
    assert!(e.contains("max_output_elems"), "{e}");
    let e = c.ring_attention(&st, &q, &k, &k, &mut out, None, AttentionShape { seq: 127, ..zigzag(1, 128, 4, 2, 128) }, d).unwrap_err().to_string();
    assert!(e.contains("`shape`") && e.contains("even"), "{e}");
    for sc in [f32::NAN, -0.1] {
        let e = c.ring_attention(&st, &q, &k, &k, &mut out, None, s, RingAttentionOptions { softmax_scale: Some(sc), ..d }).unwrap_err().to_string();
        assert!(e.contains("`softmax_scale`") && e.contains("positive"), "{e}");
    }
    for ctas in [0, 65536, u32::MAX] {
        let e = attention(&st, &q, &k, &k, &mut out, None, s, AttentionOptions { ctas: Some(ctas), ..AttentionOptions::default() }).unwrap_err().to_string();
        assert!(e.contains("`ctas`"), "{e}");
    }
    round(&g, s, check::fresh_seed(), d);
}
