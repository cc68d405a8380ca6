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

/// Fresh shards and weights from `seed` on every rank, poisoned outputs, one call per rank,
/// then every rank's `out` against cuBLAS's fp32 product of the concatenated shards with its
/// own B. Returns rank 0's plan.
fn round(g: &mut Group, bs: &mut [Bufs], s: GemmShape, seed: u64, opts: AllGatherGemmOptions) -> mkernel::AllGatherConfig {
    let w = g.comms.len();
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let rows = m / w;
    let mut full_a = Vec::with_capacity(m * k);
    let mut host_b = Vec::new();
    for (r, b) in bs.iter_mut().enumerate() {
        let a = check::random_bf16(rows * k, seed.wrapping_add(2 * r as u64));
        let wb = check::random_bf16(n * k, seed.wrapping_add(2 * r as u64 + 1));
        g.streams[r].memcpy_htod(&a, &mut b.a).unwrap();
        g.streams[r].memcpy_htod(&wb, &mut b.b).unwrap();
        check::poison(&g.streams[r], &mut b.out).unwrap();
        full_a.extend_from_slice(&a);
        host_b.push(wb);
    }
    let mut plan = None;
    for (r, b) in bs.iter_mut().enumerate() {
        plan.get_or_insert(g.comms[r].allgather_gemm(&g.streams[r], &b.a, &b.b, &mut b.out, s, opts).unwrap());
    }
    let plan = plan.unwrap();
    let what = format!("{s:?} world {w} {plan} (seed {seed:#x})");
    let errors: Vec<String> =
        g.comms.iter().enumerate().filter_map(|(r, c)| c.synchronize(&g.streams[r]).err().map(|e| format!("rank {r}: {e}"))).collect();
    assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
    for r in 0..w {
        let st = &g.streams[r];
        let a = st.clone_htod(&full_a).unwrap();
        let b = st.clone_htod(&host_b[r]).unwrap();
        let mut want = st.alloc_zeros::<f32>(m * n).unwrap();
        g.blas[r].gemm_f32_out(&a, &b, &mut want, s).unwrap();
        let want = st.clone_dtoh(&want).unwrap();
        let got = st.clone_dtoh(&bs[r].out).unwrap();
        let cmp = check::compare(&got, &want, None, n, k);
        assert!(cmp.passed(), "rank {r} {what}: {cmp}");
    }
    plan
}

/// Two to four ranks: default plans on LLM-like and ragged shapes, shards that split a row
/// block between two ranks (M / world not a multiple of the tile's rows: the block is read
/// from the gathered A, including this rank's own rows), N % 8 != 0 (a Registers tile),
/// forced 64-row, narrow and clustered tiles, chunks of 16 rows (several flags a row block)
/// and of a whole shard, one and many push CTAs; each with fresh data twice.
#[test]
fn matches_the_reference_at_world_sizes_2_3_4() {
    for w in [2usize, 3, 4] {
        let wu = w as u32;
        let d = AllGatherGemmOptions::default();
        let cases: Vec<((u32, u32, u32), AllGatherGemmOptions)> = vec![
            ((1024 * wu, 4096, 512), d),
            ((520 * wu, 2048, 256), d),
            ((129 * wu, 1001, 64), d),
            ((8 * wu, 512, 64), d),
            ((300 * wu, 1024, 128), AllGatherGemmOptions { tile: Some(TileConfig::M64_WIDE_TMA_STORE), chunk_rows: Some(16), ..d }),
            ((300 * wu, 1024, 128), AllGatherGemmOptions { tile: Some(TileConfig::NARROW), push_ctas: Some(1), ..d }),
            ((700 * wu, 2048, 256), AllGatherGemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), push_ctas: Some(4), chunk_rows: Some(700), ..d }),
            ((260 * wu, 1000, 192), AllGatherGemmOptions { tile: Some(TileConfig::WIDE), chunk_rows: Some(1), push_ctas: Some(16), ..d }),
        ];
        let max = cases.iter().map(|&((m, n, k), _)| (m as u64 * n as u64).max(m as u64 * k as u64)).max().unwrap();
        let Some(mut g) = group("matches_the_reference_at_world_sizes_2_3_4", w, max, Duration::from_secs(20)) else { return };
        for ((m, n, k), opts) in cases {
            let s = GemmShape { m, n, k };
            let mut bs = bufs(&g, s);
            let seed = check::fresh_seed();
            let plan = round(&mut g, &mut bs, s, seed, opts);
            round(&mut g, &mut bs, s, seed.wrapping_add(17), opts);
            if let Some(t) = opts.tile {
                assert_eq!(plan.tile, t, "{s:?}: {plan}");
            }
            eprintln!("ok world {w} {s:?} {plan}");
        }
    }
}

/// 100 calls back to back with fresh data each, every one checked, alternating every tenth
/// with a GEMM + all-reduce on the same communicator (its epochs and flags are shared), then
/// 50 calls enqueued with no host synchronisation, the last one checked. Two ranks.
#[test]
fn hundred_epochs_interleaved_with_all_reduces() {
    let s = GemmShape { m: 1040, n: 2048, k: 256 };
    let Some(mut g) = group("hundred_epochs_interleaved_with_all_reduces", 2, s.m as u64 * s.n as u64, Duration::from_secs(20)) else { return };
    let mut bs = bufs(&g, s);
    let seed = check::fresh_seed();
    let full: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(s.m as usize * s.k as usize).unwrap()).collect();
    let mut ar_out: Vec<CudaSlice<bf16>> = g.streams.iter().map(|st| st.alloc_zeros(s.m as usize * s.n as usize).unwrap()).collect();
    for i in 0..100u64 {
        round(&mut g, &mut bs, s, seed.wrapping_add(i), AllGatherGemmOptions::default());
        if i % 10 == 9 {
            for r in 0..2 {
                g.comms[r].gemm_allreduce(&g.streams[r], &full[r], &bs[r].b, &mut ar_out[r], s, GemmAllReduceOptions::default()).unwrap();
            }
        }
    }
    for _ in 0..49 {
        for (r, b) in bs.iter_mut().enumerate() {
            g.comms[r].allgather_gemm(&g.streams[r], &b.a, &b.b, &mut b.out, s, AllGatherGemmOptions::default()).unwrap();
        }
    }
    round(&mut g, &mut bs, s, seed.wrapping_add(1000), AllGatherGemmOptions::default());
    eprintln!("ok {s:?}: 150 all-gather + GEMM calls, 10 all-reduces between them");
}

/// One rank never launches: the other's call reports a PeerTimeout naming it (its wait for
/// the missing rank's first chunk) within the timeout plus a margin, and the communicator
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
