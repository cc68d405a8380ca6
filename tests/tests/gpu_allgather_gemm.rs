//! GPU, one process driving every rank: the fused all-gather + GEMM
//! (`Communicator::allgather_gemm`) against cuBLAS's fp32 product of the whole A (every
//! rank's shard, concatenated on the host) with each rank's own B, with poisoned outputs
//! and fresh random data: shards that split a row block between ranks, ragged M and N,
//! Registers, TMA-store, 64-row and clustered tiles, one to many chunks per row block,
//! world sizes 2-4 (ranks round-robin on the GPUs present, several per GPU when needed),
//! 100 epochs interleaved with all-reduces, a missing peer and argument errors. Skips
//! without a GPU (see mkernel-tests).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::Cublas;
use mkernel::check;
use mkernel::{AllGatherGemmOptions, CommConfig, Communicator, Error, GemmAllReduceOptions, GemmShape, TileConfig};
use mkernel_tests::gpu_or_skip;

struct Group {
    comms: Vec<Communicator>,
    streams: Vec<Arc<CudaStream>>,
    blas: Vec<Cublas>,
}

/// `world` ranks placed round-robin on the GPUs present; `None` when `test` is skipped.
fn group(test: &str, world: usize, max_elems: u64, timeout: Duration) -> Option<Group> {
    let gpus = gpu_or_skip(test, 1)?;
    let devices: Vec<usize> = (0..world).map(|r| r % gpus).collect();
    let config = CommConfig { max_output_elems: max_elems, timeout, ..Default::default() };
    let comms = Communicator::local_group(&devices, config).unwrap();
    let streams: Vec<_> = comms.iter().map(|c| c.context().new_stream().unwrap()).collect();
    let blas = streams.iter().map(|s| Cublas::new(s).unwrap()).collect();
    Some(Group { comms, streams, blas })
}

struct Bufs {
    /// This rank's rows of A, [M / world, K].
    a: CudaSlice<bf16>,
    b: CudaSlice<bf16>,
    out: CudaSlice<bf16>,
}

fn bufs(g: &Group, s: GemmShape) -> Vec<Bufs> {
    let w = g.comms.len();
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    g.streams
        .iter()
        .map(|st| Bufs { a: st.alloc_zeros(m / w * k).unwrap(), b: st.alloc_zeros(n * k).unwrap(), out: st.alloc_zeros(m * n).unwrap() })
        .collect()
}

/// One call's inputs: every rank's shard [M / world, K] and weights [N, K] (host copies,
/// for the reference).
struct Inputs {
    shards: Vec<Vec<bf16>>,
    weights: Vec<Vec<bf16>>,
}

fn inputs(world: usize, s: GemmShape, seed: u64) -> Inputs {
    let (rows, n, k) = (s.m as usize / world, s.n as usize, s.k as usize);
    Inputs {
        shards: (0..world).map(|r| check::random_bf16(rows * k, seed.wrapping_add(2 * r as u64))).collect(),
        weights: (0..world).map(|r| check::random_bf16(n * k, seed.wrapping_add(2 * r as u64 + 1))).collect(),
    }
}

/// Every rank's `out` against cuBLAS's fp32 product of the concatenated shards with its own
/// weights.
fn verify(g: &mut Group, outs: &[&CudaSlice<bf16>], s: GemmShape, x: &Inputs, what: &str) {
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let full_a: Vec<bf16> = x.shards.concat();
    for (r, out) in outs.iter().enumerate() {
        let st = &g.streams[r];
        let a = st.clone_htod(&full_a).unwrap();
        let b = st.clone_htod(&x.weights[r]).unwrap();
        let mut want = st.alloc_zeros::<f32>(m * n).unwrap();
        g.blas[r].gemm_f32_out(&a, &b, &mut want, s).unwrap();
        let cmp = check::compare(&st.clone_dtoh(*out).unwrap(), &st.clone_dtoh(&want).unwrap(), None, n, k);
        assert!(cmp.passed(), "rank {r} {what}: {cmp}");
    }
}

fn sync_all(g: &Group, what: &str) {
    let errors: Vec<String> =
        g.comms.iter().enumerate().filter_map(|(r, c)| c.synchronize(&g.streams[r]).err().map(|e| format!("rank {r}: {e}"))).collect();
    assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
}

/// Fresh shards and weights from `seed` on every rank, poisoned outputs, one call per rank,
/// then every rank's `out` against the reference ([`verify`]). Returns rank 0's plan.
fn round(g: &mut Group, bs: &mut [Bufs], s: GemmShape, seed: u64, opts: AllGatherGemmOptions) -> mkernel::AllGatherConfig {
    let x = inputs(g.comms.len(), s, seed);
    for (r, b) in bs.iter_mut().enumerate() {
        g.streams[r].memcpy_htod(&x.shards[r], &mut b.a).unwrap();
        g.streams[r].memcpy_htod(&x.weights[r], &mut b.b).unwrap();
        check::poison(&g.streams[r], &mut b.out).unwrap();
    }
    let mut plan = None;
    for (r, b) in bs.iter_mut().enumerate() {
        plan.get_or_insert(g.comms[r].allgather_gemm(&g.streams[r], &b.a, &b.b, &mut b.out, s, opts).unwrap());
    }
    let plan = plan.unwrap();
    let what = format!("{s:?} world {} {plan} (seed {seed:#x})", g.comms.len());
    sync_all(g, &what);
    let outs: Vec<&CudaSlice<bf16>> = bs.iter().map(|b| &b.out).collect();
    verify(g, &outs, s, &x, &what);
    plan
}

/// Two to four ranks: default plans on LLM-like and ragged shapes, shards that split a row
/// block between two ranks (M / world not a multiple of the tile's rows: the block is read
/// from the gathered A, including this rank's own rows), N % 8 != 0 (a Registers tile),
/// forced 64-row, narrow, clustered and column-fitted tiles, chunks of 16 rows (several flags a row block)
/// and of a whole shard, one and many push CTAs, and all but one CTA pushing (one compute CTA
/// takes every tile); each with fresh data twice.
#[test]
fn matches_the_reference_at_world_sizes_2_3_4() {
    for w in [2usize, 3, 4] {
        let wu = w as u32;
        let d = AllGatherGemmOptions::default();
        let mut cases: Vec<((u32, u32, u32), AllGatherGemmOptions)> = vec![
            ((1024 * wu, 4096, 512), d),
            ((520 * wu, 2048, 256), d),
            ((129 * wu, 1001, 64), d),
            ((8 * wu, 512, 64), d),
            ((300 * wu, 1024, 128), AllGatherGemmOptions { tile: Some(TileConfig::M64_WIDE_TMA_STORE), chunk_rows: Some(16), ..d }),
            ((300 * wu, 1024, 128), AllGatherGemmOptions { tile: Some(TileConfig::NARROW), push_ctas: Some(1), ..d }),
            ((700 * wu, 2048, 256), AllGatherGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), push_ctas: Some(4), chunk_rows: Some(700), ..d }),
            ((260 * wu, 1000, 192), AllGatherGemmOptions { tile: Some(TileConfig::WIDE), chunk_rows: Some(1), push_ctas: Some(16), ..d }),
            ((200 * wu, 1024, 128), AllGatherGemmOptions { tile: Some(TileConfig::M64_WIDE_TMA_STORE_C2), chunk_rows: Some(u32::MAX), push_ctas: Some(2), ..d }),
            // (column-fitted tiles: one unswizzled staging box, N not a multiple of the width)
            ((520 * wu, 2000, 256), AllGatherGemmOptions { tile: Some(TileConfig::cols_tma_store(168)), ..d }),
            ((300 * wu, 1064, 200), AllGatherGemmOptions { tile: Some(TileConfig::cols_tma_store_c2(176)), push_ctas: Some(2), ..d }),
        ];
        let max = cases.iter().map(|&((m, n, k), _)| (m as u64 * n as u64).max(m as u64 * k as u64)).max().unwrap();
        let Some(mut g) = group("matches_the_reference_at_world_sizes_2_3_4", w, max, Duration::from_secs(20)) else { return };
        let grid = g.comms[0].grid();
        cases.push(((1024 * wu, 4096, 512), AllGatherGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE), push_ctas: Some(grid - 1), chunk_rows: Some(16), ..d }));
        for ((m, n, k), opts) in cases {
            let s = GemmShape { m, n, k };
            let mut bs = bufs(&g, s);
            let seed = check::fresh_seed();
            let plan = round(&mut g, &mut bs, s, seed, opts);
            round(&mut g, &mut bs, s, seed.wrapping_add(17), opts);
            if let Some(t) = opts.tile {
                assert_eq!(plan.tile, t, "{s:?}: {plan}");
            }
            if let Some(c) = opts.chunk_rows {
                assert_eq!(plan.chunk_rows, c.min(m / wu), "{s:?}: {plan}");
            }
            if let Some(c) = opts.push_ctas {
                assert_eq!(plan.push_ctas, c, "{s:?}: {plan}");
            }
            eprintln!("ok world {w} {s:?} {plan}");
        }
    }
}

/// 100 calls with fresh data each, every one checked, every tenth followed by a checked
/// GEMM + all-reduce on the same communicator (its epochs, flags and the workspace region
/// that holds the gathered A are shared). Then 16 calls enqueued with no host
/// synchronisation, alternating two input sets (so a call whose pushes overwrote a peer's
/// gathered A while the peer still read the call before would change that call's result),
/// each into its own poisoned output, with an all-reduce after the eighth, all checked at
/// the end. Two ranks.
#[test]
fn epochs_back_to_back_and_interleaved_with_all_reduces() {
    let s = GemmShape { m: 1040, n: 2048, k: 256 };
    let Some(mut g) = group("epochs_back_to_back_and_interleaved_with_all_reduces", 2, s.m as u64 * s.n as u64, Duration::from_secs(20)) else { return };
    let mut bs = bufs(&g, s);
    let seed = check::fresh_seed();
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    // The all-reduce's operands: A [M, K] per rank (K its shard), B [N, K], out [M, N].
    let mut ar_a: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(m * k).unwrap()).collect();
    let mut ar_b: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(n * k).unwrap()).collect();
    let mut ar_out: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(m * n).unwrap()).collect();
    let all_reduce = |g: &mut Group, ar_a: &mut [CudaSlice<bf16>], ar_b: &mut [CudaSlice<bf16>], ar_out: &mut [CudaSlice<bf16>], seed: u64| {
        let case = check::AllReduceCase { shape: s, world: 2, seed };
        for r in 0..2 {
            case.fill_inputs(&g.streams[r], r as u32, &mut ar_a[r], &mut ar_b[r]).unwrap();
            check::poison(&g.streams[r], &mut ar_out[r]).unwrap();
        }
        for r in 0..2 {
            g.comms[r].gemm_allreduce(&g.streams[r], &ar_a[r], &ar_b[r], &mut ar_out[r], s, GemmAllReduceOptions::default()).unwrap();
        }
        case
    };
    let check_all_reduce = |g: &mut Group, ar_out: &[CudaSlice<bf16>], case: check::AllReduceCase, what: &str| {
        for r in 0..2 {
            let cmp = case.verify_on_device(&g.streams[r], &mut g.blas[r], &ar_out[r]).unwrap();
            assert!(cmp.passed(), "rank {r} all-reduce {what}: {cmp}");
        }
    };
    for i in 0..100u64 {
        round(&mut g, &mut bs, s, seed.wrapping_add(i), AllGatherGemmOptions::default());
        if i % 10 == 9 {
            let case = all_reduce(&mut g, &mut ar_a, &mut ar_b, &mut ar_out, seed.wrapping_add(1000 + i));
            sync_all(&g, "all-reduce");
            check_all_reduce(&mut g, &ar_out, case, &format!("after call {i}"));
        }
    }
    // Two input sets on the GPUs at once, 16 outputs.
    let sets = [inputs(2, s, seed.wrapping_add(5000)), inputs(2, s, seed.wrapping_add(6000))];
    let mut dev: Vec<Vec<(CudaSlice<bf16>, CudaSlice<bf16>)>> = Vec::new();
    for x in &sets {
        dev.push((0..2).map(|r| (g.streams[r].clone_htod(&x.shards[r]).unwrap(), g.streams[r].clone_htod(&x.weights[r]).unwrap())).collect());
    }
    let mut outs: Vec<Vec<CudaSlice<bf16>>> = (0..16).map(|_| g.streams.iter().map(|st| st.alloc_zeros(m * n).unwrap()).collect()).collect();
    for o in outs.iter_mut() {
        for (r, buf) in o.iter_mut().enumerate() {
            check::poison(&g.streams[r], buf).unwrap();
        }
    }
    let mut case = None;
    for (i, o) in outs.iter_mut().enumerate() {
        for (r, buf) in o.iter_mut().enumerate() {
            let (a, b) = &dev[i % 2][r];
            g.comms[r].allgather_gemm(&g.streams[r], a, b, buf, s, AllGatherGemmOptions::default()).unwrap();
        }
        if i == 7 {
            case = Some(all_reduce(&mut g, &mut ar_a, &mut ar_b, &mut ar_out, seed.wrapping_add(7000)));
        }
    }
    sync_all(&g, "16 calls without host synchronisation");
    for (i, o) in outs.iter().enumerate() {
        let refs: Vec<&CudaSlice<bf16>> = o.iter().collect();
        verify(&mut g, &refs, s, &sets[i % 2], &format!("call {i} of 16 enqueued back to back"));
    }
    if let Some(case) = case {
        check_all_reduce(&mut g, &ar_out, case, "between the back-to-back calls");
    }
    eprintln!("ok {s:?}: 116 all-gather + GEMM calls, 11 all-reduces between them");
}

/// One rank never launches: the other's call reports a PeerTimeout naming it (its wait for
/// a chunk of the missing rank: the lanes poll several at once) within the timeout plus a margin, and the communicator
/// then refuses work. Each rank alone in turn.
#[test]
fn missing_peer_times_out_naming_it() {
    let s = GemmShape { m: 512, n: 1024, k: 256 };
    for me in [0usize, 1] {
        let timeout = Duration::from_secs(2);
        let Some(g) = group("missing_peer_times_out_naming_it", 2, s.m as u64 * s.n as u64, timeout) else { return };
        let st = &g.streams[me];
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let a = st.alloc_zeros::<bf16>(m / 2 * k).unwrap();
        let b = st.alloc_zeros::<bf16>(n * k).unwrap();
        let mut out = st.alloc_zeros::<bf16>(m * n).unwrap();
        let start = Instant::now();
        g.comms[me].allgather_gemm(st, &a, &b, &mut out, s, AllGatherGemmOptions::default()).unwrap();
        let err = g.comms[me].synchronize(st).unwrap_err();
        let elapsed = start.elapsed();
        match &err {
            Error::PeerTimeout { rank, peer, .. } => assert_eq!((*rank, *peer), (me as u32, 1 - me as u32), "{err}"),
            other => panic!("expected PeerTimeout naming rank {}, got {other}", 1 - me),
        }
        assert!(err.to_string().contains("chunk"), "{err}");
        assert!(elapsed < timeout + Duration::from_secs(3), "took {elapsed:?}");
        eprintln!("missing peer reported to rank {me} after {elapsed:?}: {err}");
        let again = g.comms[me].allgather_gemm(st, &a, &b, &mut out, s, AllGatherGemmOptions::default()).unwrap_err();
        assert!(matches!(again, Error::Poisoned { .. }), "{again}");
    }
}

/// Bad arguments are refused by name before anything is launched (the group still works
/// after them): a short shard, weights or output, M not a multiple of the world size, K
/// not a multiple of 8, a gathered A larger than the workspace, a swapped-operand tile.
#[test]
fn bad_arguments_are_named() {
    let s = GemmShape { m: 256, n: 512, k: 64 };
    let Some(mut g) = group("bad_arguments_are_named", 2, 256 * 512, Duration::from_secs(20)) else { return };
    let st = g.streams[0].clone();
    let c = &g.comms[0];
    let d = AllGatherGemmOptions::default();
    let a = st.alloc_zeros::<bf16>(128 * 64).unwrap();
    let b = st.alloc_zeros::<bf16>(512 * 64).unwrap();
    let mut out = st.alloc_zeros::<bf16>(256 * 512).unwrap();
    let short_a = st.alloc_zeros::<bf16>(128 * 64 - 1).unwrap();
    let mut short_out = st.alloc_zeros::<bf16>(256 * 512 - 1).unwrap();
    let e = c.allgather_gemm(&st, &short_a, &b, &mut out, s, d).unwrap_err().to_string();
    assert!(e.contains("`a`") && e.contains("M / world"), "{e}");
    let e = c.allgather_gemm(&st, &a, &b, &mut short_out, s, d).unwrap_err().to_string();
    assert!(e.contains("`out`"), "{e}");
    let e = c.allgather_gemm(&st, &a, &b, &mut out, GemmShape { m: 255, ..s }, d).unwrap_err().to_string();
    assert!(e.contains("`shape`") && e.contains("multiple of the world size"), "{e}");
    let e = c.allgather_gemm(&st, &a, &b, &mut out, GemmShape { k: 60, ..s }, d).unwrap_err().to_string();
    assert!(e.contains("`shape`") && e.contains("multiple of 8"), "{e}");
    let e = c.allgather_gemm(&st, &a, &b, &mut out, GemmShape { k: 1024, ..s }, d).unwrap_err().to_string();
    assert!(e.contains("gathered A"), "{e}");
    let swapped = AllGatherGemmOptions { tile: Some(TileConfig::swapped_tma_store(136)), ..d };
    let e = c.allgather_gemm(&st, &a, &b, &mut out, s, swapped).unwrap_err().to_string();
    assert!(e.contains("`tile`"), "{e}");
    let mut bs = bufs(&g, s);
    round(&mut g, &mut bs, s, check::fresh_seed(), d);
}
