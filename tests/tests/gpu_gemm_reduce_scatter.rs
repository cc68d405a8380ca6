//! GPU, one process driving every GPU: the fused GEMM + reduce-scatter
//! (`Communicator::gemm_reduce_scatter`) against the rows of the fp32 sum of every rank's
//! cuBLAS product that each rank keeps, with poisoned outputs and fresh random data, on
//! the epilogue path (tiles across the boundary between two ranks' rows, swapped-operand,
//! clustered, column-fitted and split tiles), the two-phase paths (2-8 ranks), calls
//! interleaved with all-reduces, 100 epochs, CUDA-graph replays, a missing peer and
//! argument errors. Two ranks run on GPUs 0 and 1, or both on GPU 0 (each kernel on its
//! half of the SMs). Skips without a GPU (see mkernel-tests).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::Cublas;
use mkernel::check::{self, AllReduceCase};
use mkernel::{CommConfig, CommPath, Communicator, Error, GemmAllReduceOptions, GemmShape, LastWaveSplit, TileConfig};
use mkernel_tests::gpu_or_skip;

struct Group {
    comms: Vec<Communicator>,
    streams: Vec<Arc<CudaStream>>,
    blas: Vec<Cublas>,
}

/// Rank r on GPU devices[r] (a GPU listed twice holds two ranks).
fn group_on(devices: &[usize], max_output_elems: u64) -> Group {
    let config = CommConfig { max_output_elems, timeout: Duration::from_secs(20), ..Default::default() };
    let comms = Communicator::local_group(devices, config).unwrap();
    let streams: Vec<_> = comms.iter().map(|c| c.context().new_stream().unwrap()).collect();
    let blas = streams.iter().map(|s| Cublas::new(s).unwrap()).collect();
    Group { comms, streams, blas }
}

/// GPUs 0 and 1 where two are present, else GPU 0 twice; `None` when skipped.
fn two_ranks(test: &str) -> Option<Vec<usize>> {
    let n = gpu_or_skip(test, 1)?;
    Some(if n >= 2 { vec![0, 1] } else { vec![0, 0] })
}

struct Bufs {
    a: CudaSlice<bf16>,
    b: CudaSlice<bf16>,
    /// This rank's rows, [M / world, N], then a guard band of the other M - M / world rows
    /// that no call may write (checked poisoned after every call).
    out: CudaSlice<bf16>,
    /// An all-reduce's output, [M, N].
    full: CudaSlice<bf16>,
}

fn bufs(g: &Group, s: GemmShape) -> Vec<Bufs> {
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let rows = m / g.comms.len();
    g.streams
        .iter()
        .map(|st| Bufs {
            a: st.alloc_zeros(m * k).unwrap(),
            b: st.alloc_zeros(n * k).unwrap(),
            out: st.alloc_zeros(rows * n + (m - rows) * n).unwrap(),
            full: st.alloc_zeros(m * n).unwrap(),
        })
        .collect()
}

/// Rank r's rows of the sum.
fn rows_of(s: GemmShape, world: usize, r: usize) -> std::ops::Range<u32> {
    let rows = s.m / world as u32;
    r as u32 * rows..(r as u32 + 1) * rows
}

fn sync_all(g: &Group, what: &str) {
    let errors: Vec<String> =
        g.comms.iter().enumerate().filter_map(|(r, c)| c.synchronize(&g.streams[r]).err().map(|e| format!("rank {r}: {e}"))).collect();
    assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
}

/// Fresh data, poisoned outputs, one reduce-scatter on every rank, each rank's rows
/// against the fp32 reference; then (`same_as_all_reduce`) an all-reduce with the same
/// options, whose rows must be the reduce-scatter's bits (the same path sums the same two
/// bf16 partials the same way), unless the last wave is split on an unswapped tile: there
/// the reduce-scatter's order (the next rank's rows first, its own last, where a rank's
/// rows are whole pairs of row blocks) may split other tiles than the all-reduce's, whose
/// fp32 slice sums can round a partial 1 ulp apart (run 418, on a ragged shape's order
/// since reverted to the common one), and the reference check alone holds. Returns the
/// plan rank 0 ran.
fn round(g: &mut Group, bs: &mut [Bufs], s: GemmShape, seed: u64, opts: GemmAllReduceOptions, same_as_all_reduce: bool) -> mkernel::FusedConfig {
    let w = g.comms.len();
    let case = AllReduceCase { shape: s, world: w as u32, seed };
    for (r, b) in bs.iter_mut().enumerate() {
        case.fill_inputs(&g.streams[r], r as u32, &mut b.a, &mut b.b).unwrap();
        check::poison(&g.streams[r], &mut b.out).unwrap();
        check::poison(&g.streams[r], &mut b.full).unwrap();
    }
    let mut plan = None;
    for (r, b) in bs.iter_mut().enumerate() {
        let p = g.comms[r].gemm_reduce_scatter(&g.streams[r], &b.a, &b.b, &mut b.out, s, opts).unwrap();
        plan.get_or_insert(p);
    }
    let plan = plan.unwrap();
    let what = format!("{s:?} {plan} world {w} (seed {seed:#x})");
    sync_all(g, &what);
    for (r, b) in bs.iter().enumerate() {
        let cmp = if s.m as usize * s.n as usize >= 1 << 20 {
            case.verify_rows_on_device(&g.streams[r], &mut g.blas[r], &b.out, rows_of(s, w, r)).unwrap()
        } else {
            case.verify_rows(&g.streams[r], &mut g.blas[r], &b.out, rows_of(s, w, r)).unwrap()
        };
        assert!(cmp.passed(), "rank {r} {what}: {cmp}");
        // Nothing past this rank's rows (the guard band stays poisoned).
        let rows = s.m as usize / w * s.n as usize;
        let guard = g.streams[r].clone_dtoh(&b.out.slice(rows..)).unwrap();
        if let Some(i) = guard.iter().position(|x| x.to_bits() != check::POISON.to_bits()) {
            panic!("rank {r} {what}: element {} past its {} rows was written ({})", rows + i, s.m as usize / w, guard[i]);
        }
    }
    // (rank-ordered: unswapped, and a rank's rows whole pairs of row blocks)
    let ordered = !plan.tile.swap_ab && (s.m / w as u32).is_multiple_of(plan.tile.bm * plan.tile.cluster_m.max(1));
    if same_as_all_reduce && (plan.split_slices <= 1 || !ordered) {
        for (r, b) in bs.iter_mut().enumerate() {
            let p = g.comms[r].gemm_allreduce(&g.streams[r], &b.a, &b.b, &mut b.full, s, opts).unwrap();
            assert_eq!(p, plan, "the all-reduce's plan for the same options, {what}");
        }
        sync_all(g, &what);
        for (r, b) in bs.iter().enumerate() {
            let got = g.streams[r].clone_dtoh(&b.out).unwrap();
            let full = g.streams[r].clone_dtoh(&b.full).unwrap();
            let n = s.n as usize;
            let rows = rows_of(s, w, r);
            let want = &full[rows.start as usize * n..rows.end as usize * n];
            if let Some(i) = want.iter().zip(&got).position(|(x, y)| x.to_bits() != y.to_bits()) {
                panic!("rank {r} {what}: row {} col {} is {} where the all-reduce gave {}", rows.start as usize + i / n, i % n, got[i], want[i]);
            }
        }
    }
    plan
}

fn epilogue(tile: TileConfig) -> GemmAllReduceOptions {
    GemmAllReduceOptions { tile: Some(tile), comm_path: Some(CommPath::Epilogue), ..Default::default() }
}

/// Two ranks, the epilogue path: the default plan on LLM and odd shapes (where the two
/// ranks' rows meet inside a tile: M / 2 not a multiple of the tile's rows), and forced
/// swapped-operand (64- and 128-row, clustered), column-fitted, clustered and 64-row
/// tiles, and a split last wave; each against the reference on both ranks and with the
/// all-reduce's bits. Then 30 calls back to back alternating with all-reduces.
#[test]
fn epilogue_path_keeps_each_ranks_rows() {
    let Some(devices) = two_ranks("epilogue_path_keeps_each_ranks_rows") else { return };
    let shared = devices[0] == devices[1];
    let cases: Vec<((u32, u32, u32), GemmAllReduceOptions)> = vec![
        ((1024, 8192, 4096), GemmAllReduceOptions::default()),
        ((2048, 8192, 4096), GemmAllReduceOptions::default()),
        ((130, 8192, 4096), GemmAllReduceOptions::default()),
        ((400, 1000, 200), GemmAllReduceOptions::default()),
        ((2, 512, 64), GemmAllReduceOptions::default()),
        ((400, 8192, 512), epilogue(TileConfig::WIDE_TMA_STORE)),
        ((400, 8192, 512), epilogue(TileConfig::NARROW_TMA_STORE)),
        ((300, 2048, 512), epilogue(TileConfig::M64_WIDE_TMA_STORE)),
        ((2050, 8192, 512), epilogue(TileConfig::WIDE_TMA_STORE_C2)),
        ((1100, 4096, 256), epilogue(TileConfig::NARROW_TMA_STORE_C2)),
        ((130, 8192, 1024), epilogue(TileConfig::swapped_tma_store(136))),
        ((200, 1024, 512), epilogue(TileConfig::swapped_tma_store(200))),
        ((2050, 8192, 512), epilogue(TileConfig::swapped_wide(208, mkernel::Epilogue::TmaStore))),
        ((2050, 8192, 512), epilogue(TileConfig::swapped_wide_c2(208, mkernel::Epilogue::TmaStore))),
        ((1100, 1000, 192), epilogue(TileConfig::cols_tma_store(136))),
        ((300, 1064, 200), epilogue(TileConfig::cols_tma_store_c2(176))),
        ((2050, 8192, 1024), GemmAllReduceOptions { split_last_wave: Some(LastWaveSplit::Slices(2)), ..epilogue(TileConfig::WIDE_TMA_STORE) }),
        // Rank-ordered (S = 8 row blocks) with a split last wave (helper-101).
        ((2048, 8192, 1024), GemmAllReduceOptions { split_last_wave: Some(LastWaveSplit::Slices(2)), ..epilogue(TileConfig::WIDE_TMA_STORE) }),
        // One row block, every tile of it a head tile of rank 1 (S = 1); 162 tiles, so the
        // last wave's 30 (132 CTAs, or 66 a rank on a shared GPU) are split: a head tile as
        // the tile a slice stages.
        ((2, 41472, 512), GemmAllReduceOptions { split_last_wave: Some(LastWaveSplit::Slices(2)), ..epilogue(TileConfig::WIDE_TMA_STORE) }),
    ];
    let max = cases.iter().map(|&((m, n, _), _)| m as u64 * n as u64).max().unwrap();
    let mut g = group_on(&devices, max);
    for ((m, n, k), opts) in cases {
        let s = GemmShape { m, n, k };
        // (two ranks of one GPU: the default is vec16; the epilogue path only when asked for)
        let opts = if shared && opts.comm_path.is_none() { GemmAllReduceOptions { comm_path: Some(CommPath::Epilogue), ..opts } } else { opts };
        let mut bs = bufs(&g, s);
        let plan = round(&mut g, &mut bs, s, check::fresh_seed(), opts, true);
        assert_eq!(plan.path, CommPath::Epilogue, "{s:?}: {plan}");
        if let Some(t) = opts.tile {
            assert_eq!(plan.tile, t, "{s:?}: {plan}");
        }
        eprintln!("ok {s:?} {plan}");
    }
    // (S = 520 on 128-row tiles: rank 1's head tiles in every call)
    let s = GemmShape { m: 1040, n: 8192, k: 1024 };
    let mut bs = bufs(&g, s);
    let opts = epilogue(TileConfig::WIDE_TMA_STORE);
    let seed = check::fresh_seed();
    for rep in 0..30 {
        round(&mut g, &mut bs, s, seed.wrapping_add(rep), opts, rep % 2 == 0);
    }
    eprintln!("ok {s:?}: 30 reduce-scatters, 15 all-reduces between them");
}

/// The two-phase paths (vec16; scalar for N % 8 != 0) at world sizes 2, 3, 4 and 8, ranks
/// placed round-robin on the GPUs present: each rank sums its rows from every rank's
/// partial; rows of a tile split between ranks; two calls per shape with fresh data.
#[test]
fn two_phase_paths_at_world_sizes_2_3_4_8() {
    let Some(gpus) = gpu_or_skip("two_phase_paths_at_world_sizes_2_3_4_8", 1) else { return };
    for w in [2usize, 3, 4, 8] {
        let shapes = [(48 * w as u32, 8192, 512), (200 * w as u32, 1000, 200), (1000 * w as u32, 1001, 64), (17 * w as u32, 4096, 1024)];
        let max = shapes.iter().map(|&(m, n, _)| m as u64 * n as u64).max().unwrap();
        let devices: Vec<usize> = (0..w).map(|r| r % gpus).collect();
        let mut g = group_on(&devices, max);
        for (m, n, k) in shapes {
            let s = GemmShape { m, n, k };
            let mut bs = bufs(&g, s);
            let path = if n % 8 == 0 { CommPath::Vec16 } else { CommPath::Scalar };
            for rep in 0..2 {
                let opts = GemmAllReduceOptions { comm_path: Some(path), ..Default::default() };
                let plan = round(&mut g, &mut bs, s, check::fresh_seed().wrapping_add(rep), opts, w == 2);
                assert_eq!(plan.path, path, "{s:?}: {plan}");
            }
            // The default plan too (vec16 or scalar, or the epilogue path on 2 GPUs).
            let plan = round(&mut g, &mut bs, s, check::fresh_seed(), GemmAllReduceOptions::default(), false);
            eprintln!("ok world {w} on {gpus} GPU(s), {s:?} {plan}");
        }
    }
}

/// One rank: the reduce-scatter is the plain GEMM into all M rows.
#[test]
fn one_rank_keeps_every_row() {
    let Some(_) = gpu_or_skip("one_rank_keeps_every_row", 1) else { return };
    let s = GemmShape { m: 333, n: 1000, k: 200 };
    let mut g = group_on(&[0], s.m as u64 * s.n as u64);
    let mut bs = bufs(&g, s);
    let plan = round(&mut g, &mut bs, s, check::fresh_seed(), GemmAllReduceOptions::default(), true);
    assert_eq!(plan.path, CommPath::Local, "{plan}");
}

/// One rank never launches: the other's reduce-scatter (epilogue and vec16 paths) reports
/// a PeerTimeout naming it within the timeout plus a margin, and the communicator then
/// refuses work. Rank 0 alone, and rank 1 alone on a shape whose row block at M / 2 is
/// split between the ranks (rank 1's head tiles, stored by hand, wait for the peer too).
#[test]
fn missing_peer_times_out_naming_it() {
    let Some(devices) = two_ranks("missing_peer_times_out_naming_it") else { return };
    let vec16 = GemmAllReduceOptions { comm_path: Some(CommPath::Vec16), ..Default::default() };
    let cases = [
        (0usize, GemmShape { m: 512, n: 1024, k: 256 }, epilogue(TileConfig::WIDE_TMA_STORE)),
        (0, GemmShape { m: 512, n: 1024, k: 256 }, vec16),
        // (S = 260: the row block of rows 256-383 holds both ranks' rows)
        (1, GemmShape { m: 520, n: 1024, k: 256 }, epilogue(TileConfig::WIDE_TMA_STORE)),
    ];
    for (me, s, opts) in cases {
        let timeout = Duration::from_secs(2);
        let config = CommConfig { max_output_elems: s.m as u64 * s.n as u64, timeout, ..Default::default() };
        let comms = Communicator::local_group(&devices, config).unwrap();
        let st = comms[me].context().new_stream().unwrap();
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let a = st.alloc_zeros::<bf16>(m * k).unwrap();
        let b = st.alloc_zeros::<bf16>(n * k).unwrap();
        let mut out = st.alloc_zeros::<bf16>(m / 2 * n).unwrap(); // (exactly this rank's rows)
        let start = Instant::now();
        comms[me].gemm_reduce_scatter(&st, &a, &b, &mut out, s, opts).unwrap();
        let err = comms[me].synchronize(&st).unwrap_err();
        let elapsed = start.elapsed();
        match &err {
            Error::PeerTimeout { rank, peer, .. } => assert_eq!((*rank, *peer), (me as u32, 1 - me as u32), "{err}"),
            other => panic!("expected PeerTimeout naming rank {}, got {other}", 1 - me),
        }
        assert!(elapsed < timeout + Duration::from_secs(3), "took {elapsed:?}");
        eprintln!("missing peer reported to rank {me} after {elapsed:?} ({s:?}, {opts:?}): {err}");
        let again = comms[me].gemm_reduce_scatter(&st, &a, &b, &mut out, s, opts).unwrap_err();
        assert!(matches!(again, Error::Poisoned { .. }), "{again}");
    }
}

/// IEEE special values through the reduce-scatter's paths: rows whose two partials
/// overflow to ±Inf, cancel, hold a NaN or an Inf minus Inf, or are subnormal
/// ([`mkernel_tests::special`]), placed on each side of M / 2 (in head tiles where M / 2
/// is not a multiple of the tile's rows, whose rows are added by `red.global.add`; the
/// others by TMA reduce-add) and inside each rank's rows, among rows of random data: each
/// rank's special rows are the IEEE bf16 sum of the two cuBLAS partials (NaN not masked,
/// no saturation, no flush to zero), the other rows within the tolerance, nothing past
/// its rows written. The epilogue path (wide, split, swapped, clustered swapped tiles),
/// vec16 and scalar; poisoned outputs, fresh data for every call.
#[test]
fn special_values_sum_as_ieee_bf16() {
    let Some(devices) = two_ranks("special_values_sum_as_ieee_bf16") else { return };
    let wide = TileConfig::WIDE_TMA_STORE;
    let path = |p| GemmAllReduceOptions { comm_path: Some(p), ..Default::default() };
    let cases: Vec<((u32, u32, u32), GemmAllReduceOptions)> = vec![
        ((1040, 8192, 512), GemmAllReduceOptions::default()),
        ((1040, 8192, 512), epilogue(wide)),
        ((1040, 8192, 512), GemmAllReduceOptions { split_last_wave: Some(LastWaveSplit::Slices(2)), ..epilogue(wide) }),
        ((130, 8192, 512), epilogue(TileConfig::swapped_tma_store(136))),
        ((1040, 8192, 512), epilogue(TileConfig::swapped_wide_c2(208, mkernel::Epilogue::TmaStore))),
        ((1040, 8192, 512), path(CommPath::Vec16)),
        ((130, 1001, 64), path(CommPath::Scalar)),
    ];
    let max = cases.iter().map(|&((m, n, _), _)| m as u64 * n as u64).max().unwrap();
    let mut g = group_on(&devices, max);
    for ((m, n, k), opts) in cases {
        let s = GemmShape { m, n, k };
        let mut bs = bufs(&g, s);
        let seed = check::fresh_seed();
        let mut partials = [Vec::new(), Vec::new()];
        for (r, b) in bs.iter_mut().enumerate() {
            partials[r] = mkernel_tests::special::fill(&g.streams[r], &mut g.blas[r], r, s, seed, &mut b.a, &mut b.b).unwrap();
            check::poison(&g.streams[r], &mut b.out).unwrap();
        }
        let mut plan = None;
        for (r, b) in bs.iter_mut().enumerate() {
            plan.get_or_insert(g.comms[r].gemm_reduce_scatter(&g.streams[r], &b.a, &b.b, &mut b.out, s, opts).unwrap());
        }
        let what = format!("{s:?} {} (seed {seed:#x})", plan.unwrap());
        sync_all(&g, &what);
        let mut said = String::new();
        for (r, b) in bs.iter().enumerate() {
            let out = g.streams[r].clone_dtoh(&b.out).unwrap();
            let rows = rows_of(s, 2, r);
            let (mine, guard) = out.split_at(rows.len() * n as usize);
            said = mkernel_tests::special::check(mine, rows.start as usize, n as usize, k as usize, &partials)
                .unwrap_or_else(|e| panic!("rank {r} {what}: {e}"));
            if let Some(i) = guard.iter().position(|x| x.to_bits() != check::POISON.to_bits()) {
                panic!("rank {r} {what}: element {} past its rows was written ({})", mine.len() + i, guard[i]);
            }
        }
        eprintln!("ok {what}: {said}");
    }
}

/// Bad arguments are refused by name before anything is launched: M not a multiple of
/// the world size, an `out` shorter than this rank's rows, a path without a
/// reduce-scatter; an `out` of all M rows is accepted (only the first M / world are
/// written).
#[test]
fn bad_arguments_are_named() {
    let Some(devices) = two_ranks("bad_arguments_are_named") else { return };
    let g = group_on(&devices, 1 << 20);
    let st = &g.streams[0];
    let c = &g.comms[0];
    let a = st.alloc_zeros::<bf16>(129 * 64).unwrap();
    let b = st.alloc_zeros::<bf16>(256 * 64).unwrap();
    let mut out = st.alloc_zeros::<bf16>(129 * 256).unwrap();
    let e = c.gemm_reduce_scatter(st, &a, &b, &mut out, GemmShape { m: 129, n: 256, k: 64 }, Default::default()).unwrap_err();
    assert!(e.to_string().contains("`shape`") && e.to_string().contains("multiple of the world size"), "{e}");
    let mut short = st.alloc_zeros::<bf16>(64 * 256 - 1).unwrap();
    let e = c.gemm_reduce_scatter(st, &a, &b, &mut short, GemmShape { m: 128, n: 256, k: 64 }, Default::default()).unwrap_err();
    assert!(e.to_string().contains("`out`") && e.to_string().contains("M / world = 64"), "{e}");
    let one_shot = GemmAllReduceOptions { comm_path: Some(CommPath::TmaOneShot), ..Default::default() };
    let e = c.gemm_reduce_scatter(st, &a, &b, &mut out, GemmShape { m: 128, n: 256, k: 64 }, one_shot).unwrap_err();
    assert!(e.to_string().contains("`comm_path`") && e.to_string().contains("one-shot"), "{e}");
    let e = c.gemm_reduce_scatter(st, &a, &b, &mut out, GemmShape { m: 128, n: 256, k: 60 }, Default::default()).unwrap_err();
    assert!(e.to_string().contains("`k`"), "{e}");
    // Nothing was launched: the group still works.
    let mut g = g;
    let s = GemmShape { m: 128, n: 256, k: 64 };
    let mut bs = bufs(&g, s);
    round(&mut g, &mut bs, s, check::fresh_seed(), GemmAllReduceOptions::default(), false);
}

/// 100 reduce-scatters with fresh data each (every rank's rows checked each time), then
/// 100 enqueued back to back with no host synchronisation, the last checked: the epochs
/// advance with no reset, on the default path and on vec16. Two ranks.
#[test]
fn hundred_back_to_back_epochs_with_fresh_data() {
    let Some(devices) = two_ranks("hundred_back_to_back_epochs_with_fresh_data") else { return };
    let s = GemmShape { m: 2050, n: 8192, k: 1024 };
    let mut g = group_on(&devices, s.m as u64 * s.n as u64);
    let mut bs = bufs(&g, s);
    let shared = devices[0] == devices[1];
    let default = if shared { GemmAllReduceOptions { comm_path: Some(CommPath::Epilogue), ..Default::default() } } else { GemmAllReduceOptions::default() };
    for opts in [default, GemmAllReduceOptions { comm_path: Some(CommPath::Vec16), ..Default::default() }] {
        let seed = check::fresh_seed();
        for rep in 0..100 {
            round(&mut g, &mut bs, s, seed.wrapping_add(rep), opts, false);
        }
        for _ in 0..100 {
            for (r, b) in bs.iter_mut().enumerate() {
                g.comms[r].gemm_reduce_scatter(&g.streams[r], &b.a, &b.b, &mut b.out, s, opts).unwrap();
            }
        }
        sync_all(&g, &format!("{opts:?} after 100 queued calls"));
        let case = AllReduceCase { shape: s, world: 2, seed: seed.wrapping_add(99) };
        for (r, b) in bs.iter().enumerate() {
            let cmp = case.verify_rows_on_device(&g.streams[r], &mut g.blas[r], &b.out, rows_of(s, 2, r)).unwrap();
            assert!(cmp.passed(), "rank {r} {opts:?} after 100 queued calls: {cmp}");
        }
        eprintln!("ok {s:?} {opts:?}: 100 checked calls, 100 queued");
    }
}

/// A reduce-scatter captured in a CUDA graph on a side stream, replayed 5 times with
/// fresh inputs: each replay advances the epoch and leaves each rank's rows right.
#[test]
fn cuda_graph_replays_advance_epochs() {
    let Some(devices) = two_ranks("cuda_graph_replays_advance_epochs") else { return };
    // (S = 520 on 128-row tiles: the replays include rank 1's head tiles)
    let s = GemmShape { m: 1040, n: 8192, k: 1024 };
    let mut g = group_on(&devices, s.m as u64 * s.n as u64);
    let mut bs = bufs(&g, s);
    let opts = epilogue(TileConfig::WIDE_TMA_STORE);
    // Warm up (JIT compile + module load outside the capture).
    round(&mut g, &mut bs, s, 1, opts, false);
    for c in &g.comms {
        // SAFETY: every buffer of this test is used on its rank's one stream (or its
        // capture stream, after a synchronisation) only.
        unsafe { c.context().disable_event_tracking() };
    }
    let capture: Vec<_> = g.comms.iter().map(|c| c.context().new_stream().unwrap()).collect();
    for st in &g.streams {
        st.synchronize().unwrap();
    }
    let mut graphs = Vec::new();
    for (r, b) in bs.iter_mut().enumerate() {
        let st = &capture[r];
        st.begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
        g.comms[r].gemm_reduce_scatter(st, &b.a, &b.b, &mut b.out, s, opts).unwrap();
        let graph = st.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH).unwrap().unwrap();
        graphs.push(graph);
    }
    let seed = check::fresh_seed();
    for rep in 0..5u64 {
        let case = AllReduceCase { shape: s, world: 2, seed: seed + rep };
        for (r, b) in bs.iter_mut().enumerate() {
            case.fill_inputs(&g.streams[r], r as u32, &mut b.a, &mut b.b).unwrap();
            check::poison(&g.streams[r], &mut b.out).unwrap();
        }
        for st in &g.streams {
            st.synchronize().unwrap();
        }
        for gr in &graphs {
            gr.launch().unwrap();
        }
        for (r, c) in g.comms.iter().enumerate() {
            c.synchronize(&capture[r]).unwrap();
        }
        for (r, b) in bs.iter().enumerate() {
            let cmp = case.verify_rows(&g.streams[r], &mut g.blas[r], &b.out, rows_of(s, 2, r)).unwrap();
            assert!(cmp.passed(), "rank {r}, graph replay {rep}: {cmp}");
        }
    }
}
