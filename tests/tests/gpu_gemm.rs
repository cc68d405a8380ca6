//! GPU: the Hopper GEMM engine against an fp32 cuBLAS reference (itself cross-checked
//! in fp64 on sampled rows), on fresh random data, with poisoned outputs, for odd and
//! LLM shapes and both tile configurations. Skips without a GPU (see mkernel-tests).

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use std::sync::Arc;
use half::bf16;
use mkernel::baseline::Cublas;
use mkernel::{check, GemmOptions, GemmShape, GemmWorkspace, LastWaveSplit, TileConfig};
use mkernel_tests::gpu_or_skip;

/// The SM count of `ctx`'s GPU (what the tile heuristics are given).
fn sm_count(ctx: &CudaContext) -> u32 {
    ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).unwrap() as u32
}

/// Fresh random operands for `s` (A [M, K], B [N, K], bf16) and their fp32 cuBLAS reference
/// C [M, N] on the host; `seed` for failure messages.
struct Operands {
    a: CudaSlice<bf16>,
    b: CudaSlice<bf16>,
    want: Vec<f32>,
    seed: u64,
}

fn operands(stream: &Arc<CudaStream>, blas: &mut Cublas, s: GemmShape) -> Operands {
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let seed = check::fresh_seed();
    let mut a = stream.alloc_zeros::<bf16>(m * k).unwrap();
    let mut b = stream.alloc_zeros::<bf16>(n * k).unwrap();
    check::fill_uniform(stream, &mut a, seed).unwrap();
    check::fill_uniform(stream, &mut b, seed + 1).unwrap();
    let mut reference = stream.alloc_zeros::<f32>(m * n).unwrap();
    blas.gemm_f32_out(&a, &b, &mut reference, s).unwrap();
    let want = stream.clone_dtoh(&reference).unwrap();
    Operands { a, b, want, seed }
}

fn run_case(s: GemmShape, tile: Option<TileConfig>) -> TileConfig {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut blas = Cublas::new(&stream).unwrap();
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let seed = check::fresh_seed();
    let mut a = stream.alloc_zeros::<bf16>(m * k).unwrap();
    let mut b = stream.alloc_zeros::<bf16>(n * k).unwrap();
    check::fill_uniform(&stream, &mut a, seed).unwrap();
    check::fill_uniform(&stream, &mut b, seed + 1).unwrap();
    let mut c = stream.alloc_zeros::<bf16>(m * n).unwrap();
    check::poison(&stream, &mut c).unwrap();
    let used = mkernel::gemm(&stream, &a, &b, &mut c, s, GemmOptions { tile, ..Default::default() }).unwrap();
    let mut reference = stream.alloc_zeros::<f32>(m * n).unwrap();
    blas.gemm_f32_out(&a, &b, &mut reference, s).unwrap();
    let got = stream.clone_dtoh(&c).unwrap();
    let want = stream.clone_dtoh(&reference).unwrap();
    let cmp = check::compare(&got, &want, None, n, k);
    assert!(cmp.passed(), "{s:?} with {used}: {cmp} (seed {seed:#x})");
    // The reference itself, in fp64, on three rows.
    let ah = stream.clone_dtoh(&a).unwrap();
    let bh = stream.clone_dtoh(&b).unwrap();
    let rows = [0, m / 2, m - 1];
    let exact = check::reference_rows_f64(&ah, &bh, &rows, n, k).unwrap();
    // (the absolute term is `check::compare`'s floor for these rows, at least 1e-3: a fixed
    // 1e-3 failed an element near zero at K = 16384, |error| 1.2e-3 where the rows' rms is
    // ~43 and the floor 2.6e-3; run 393, bench/NOTES.md 50.4)
    let rms = (exact.iter().map(|e| e * e).sum::<f64>() / exact.len().max(1) as f64).sqrt();
    let floor = (check::abs_floor(rms, k) as f64).max(1e-3);
    for (ri, &r) in rows.iter().enumerate() {
        for j in 0..n {
            let e = exact[ri * n + j];
            let g = got[r * n + j].to_f64();
            assert!((g - e).abs() <= e.abs() * check::REL_TOL + floor, "{s:?} [{r}, {j}]: got {g}, fp64 {e}, tolerance {:.2e} (seed {seed:#x})", e.abs() * check::REL_TOL + floor);
        }
    }
    eprintln!("ok {s:?} {used}: {cmp}");
    used
}

#[test]
fn gemm_matches_reference_on_odd_shapes() {
    if gpu_or_skip("gemm_matches_reference_on_odd_shapes", 1).is_none() {
        return;
    }
    for (m, n, k) in [
        (1, 8192, 4096),
        (127, 384, 136),
        (129, 2880, 1000),
        (2049, 8192, 4096),
        (300, 257, 64),
        (64, 4099, 8),
        (513, 1000, 4104),
        // (the default's 128-row swapped tiles where 64-row ones would need two waves)
        (160, 14336, 512),
        (129, 9224, 128),
    ] {
        // (and, for M <= 256, the swapped-operand tiles that hold all of M)
        let swapped = [TileConfig::swapped_for(m, 1), TileConfig::swapped_for(m, 2)];
        for tile in [None].into_iter().chain(TileConfig::ALL.map(Some)).chain(swapped.into_iter().flatten().map(Some)) {
            if tile.is_some_and(|t| t.check_output(n).is_err()) {
                continue; // the TMA-store epilogue needs N % 8 == 0 (refusal tested below)
            }
            run_case(GemmShape { m, n, k }, tile);
        }
    }
}

/// Swapped-operand tiles (C^T = B A^T, transposed store) of several widths, alone and in
/// 2-CTA clusters sharing A: one or many tiles along M, M not a multiple of the width or of 8, N odd or not a multiple of 64,
/// K not a multiple of 64, and the LLM decode shapes they are for.
#[test]
fn swapped_operand_tiles_match_reference() {
    if gpu_or_skip("swapped_operand_tiles_match_reference", 1).is_none() {
        return;
    }
    for (m, n, k, rows) in [
        (200, 1000, 512, 8),
        (200, 1000, 512, 24),
        (200, 1000, 512, 64),
        (200, 1000, 512, 136),
        (200, 1000, 512, 256),
        (1, 64, 8, 8),
        (17, 131, 72, 16),
        (129, 8192, 4096, 136),
        (256, 8192, 4096, 256),
        (32, 28672, 8192, 32),
        (3, 4099, 1000, 8),
    ] {
        run_case(GemmShape { m, n, k }, Some(TileConfig::swapped(rows)));
        if n % 8 == 0 {
            run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_tma_store(rows)));
        }
        if rows % 16 == 0 {
            run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_c2(rows)));
        }
    }
    // 128 rows of B per tile (two consumer warpgroups), heights fitted to M > 256.
    use mkernel::Epilogue;
    for (m, n, k, rows) in [(2049, 8192, 1024, 208), (300, 1000, 200, 152), (257, 4099, 64, 136), (513, 384, 4096, 256)] {
        run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_wide(rows, Epilogue::Registers)));
        if n % 8 == 0 {
            run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_wide(rows, Epilogue::TmaStore)));
        }
        // in 2-CTA clusters sharing the A tile (rows a multiple of 16; 4099 / 128 and
        // 384 / 128 are odd numbers of B row blocks: a padding tile per A row block)
        if rows % 16 == 0 {
            run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_wide_c2(rows, Epilogue::Registers)));
            if n % 8 == 0 {
                run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_wide_c2(rows, Epilogue::TmaStore)));
            }
        }
    }
    run_case(GemmShape { m: 257, n: 4099, k: 64 }, Some(TileConfig::swapped_wide_c2(144, Epilogue::Registers)));
    run_case(GemmShape { m: 257, n: 4104, k: 64 }, Some(TileConfig::swapped_wide_c2(144, Epilogue::TmaStore)));
    // 128-row tiles of 136..=248 columns (not swapped), N and M ragged.
    // (192 columns: the TMA store stages three swizzled 64-column boxes; the others one unswizzled box)
    for (m, n, k, cols) in [(2048, 7168, 512, 224), (300, 1000, 200, 136), (129, 4099, 64, 248), (1000, 5120, 1024, 160), (520, 1000, 192, 192)] {
        run_case(GemmShape { m, n, k }, Some(TileConfig::cols(cols)));
        if n % 8 == 0 {
            run_case(GemmShape { m, n, k }, Some(TileConfig::cols_tma_store(cols)));
        }
    }
    // The TMA-store ones of 136..=248 columns in 2-CTA clusters sharing B (at 136, 152, ...,
    // 248 the CTAs' halves of B overlap by 8 rows): even and odd numbers of A row blocks (an
    // odd one leaves a padding tile per column block), K ragged, one swizzled width (192).
    for (m, n, k, cols) in [
        (2048, 7168, 512, 176),
        (2049, 7168, 1000, 176),
        (520, 1000, 192, 192),
        (777, 2880, 1088, 240),
        (129, 1000, 64, 144),
        (777, 2880, 1088, 216),
        (129, 1000, 64, 136),
        (2049, 7168, 1000, 248),
        (1000, 5000, 520, 168),
    ] {
        run_case(GemmShape { m, n, k }, Some(TileConfig::cols_tma_store_c2(cols)));
    }
    // and the opt-in ones of 48..=120 columns: ragged M with an even and an odd number of
    // row blocks, N not a multiple of the width, 64 columns (one swizzled box); 72, 88, 104
    // and 120, where the CTAs' halves of B overlap by 8 rows (the last column block's past N:
    // TMA's zero fill), K ragged.
    for (m, n, k, cols) in [
        (1440, 1000, 1000, 96),
        (777, 1000, 200, 48),
        (300, 1048, 4160, 112),
        (1024, 768, 64, 64),
        (1216, 1032, 520, 80),
        (777, 1000, 1000, 72),
        (200, 1048, 4160, 88),
        (1024, 1000, 520, 104),
        (129, 4104, 200, 120),
    ] {
        let t = TileConfig::cols_tma_store_c2(cols);
        assert_eq!(run_case(GemmShape { m, n, k }, Some(t)), t);
    }
    // 128-row tiles of 8..=120 columns (64: one swizzled box; the others unswizzled), and
    // the default's one-row-block rule that takes them (M = 112-128 where 128 x 128 tiles
    // leave SMs idle; K % 64 != 0 only forced). 8..=56: a small N in the wgmma's n (an MoE
    // router's), one column block or several, ragged.
    for (m, n, k, cols) in [
        (300, 1000, 200, 64),
        (129, 4099, 64, 72),
        (117, 10240, 1000, 80),
        (128, 9216, 4160, 120),
        (1000, 8, 4096, 8),
        (300, 24, 200, 24),
        (129, 56, 1000, 56),
        (5000, 40, 4160, 16),
        (77, 20, 64, 8),
    ] {
        run_case(GemmShape { m, n, k }, Some(TileConfig::cols(cols)));
        if n % 8 == 0 {
            run_case(GemmShape { m, n, k }, Some(TileConfig::cols_tma_store(cols)));
        }
    }
    let ctx = CudaContext::new(0).unwrap();
    let sms = sm_count(&ctx);
    for (m, n, k) in [(120, 9216, 4096), (113, 10240, 4160), (128, 14336, 4096)] {
        let s = GemmShape { m, n, k };
        let used = run_case(s, None);
        assert_eq!(used, TileConfig::choose_for(s, sms), "{s:?}");
        if TileConfig::NARROW_TMA_STORE.tiles(m, n) < sms as u64 && sms >= 128 {
            assert!(!used.swap_ab && used.bm == 128 && used.bn < 128, "{s:?}: the one-row-block rule's tile, not {used}");
        }
    }
    // 128-row swapped tiles of 64..=120 rows of A, forced (M ragged, N odd, K % 64 != 0) and
    // through the default's padding rule (65 <= M <= 111 where 128 x 128 tiles fit a wave).
    for (m, n, k, rows) in [(70, 1000, 200, 72), (100, 4099, 64, 104), (64, 384, 4104, 64), (111, 8200, 1000, 112)] {
        run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_wide(rows, Epilogue::Registers)));
        if n % 8 == 0 {
            run_case(GemmShape { m, n, k }, Some(TileConfig::swapped_wide(rows, Epilogue::TmaStore)));
        }
    }
    for (m, n, k) in [(96, 9216, 4096), (65, 10240, 4160), (111, 8704, 4096)] {
        let s = GemmShape { m, n, k };
        let used = run_case(s, None);
        assert_eq!(used, TileConfig::choose_for(s, sms), "{s:?}");
        if TileConfig::NARROW_TMA_STORE.tiles(m, n) <= sms as u64 && sms >= 128 {
            assert!(used.swap_ab && used.bm == 128 && used.bn < 128, "{s:?}: the padding rule's tile, not {used}");
        }
    }
    // 2-CTA clusters with an odd number of B row blocks (a padding tile per pair).
    run_case(GemmShape { m: 129, n: 8200, k: 256 }, Some(TileConfig::swapped_c2(144)));
    run_case(GemmShape { m: 40, n: 65, k: 64 }, Some(TileConfig::swapped_c2(48)));
}

/// 128-row TMA-store tiles of 48..=160 columns in 2-CTA clusters along N sharing the A
/// tile by multicast (opt-in, `cols-128xC-tma-store-n2`, `narrow-tma-store-n2`): an odd
/// number of column blocks (a padding tile past N per row block), a single column block
/// (a cluster of one tile and its padding), one wave and several, ragged M and K (K % 64 !=
/// 0, one K block), 64 columns (swizzled boxes) and the others (one unswizzled box).
#[test]
fn clusters_along_n_match_reference() {
    if gpu_or_skip("clusters_along_n_match_reference", 1).is_none() {
        return;
    }
    for (m, n, k, cols) in [
        (1024, 1536, 8192, 96),
        (768, 2048, 8192, 96),
        (384, 3072, 4096, 80),
        (1000, 8200, 520, 80),
        (777, 2888, 1000, 48),
        (129, 4104, 64, 144),
        (2049, 1240, 4160, 160),
        (3000, 880, 2048, 64),
        (117, 9216, 1000, 112),
        (1, 64, 8, 64),
        (300, 1048, 200, 128),
    ] {
        let t = if cols == 128 { TileConfig::NARROW_TMA_STORE_N2 } else { TileConfig::cols_tma_store_n2(cols) };
        let used = run_case(GemmShape { m, n, k }, Some(t));
        assert_eq!(used, t);
    }
}

/// The small-N rule's default (`TileConfig::small_n_for`: N <= 160; the 128-row TMA-store
/// tile N columns wide for N <= 32, else the swapped 64-row one holding 64, 128 or 256
/// rows of A) below K = 4096 (where `mkernel::gemm`'s own workspace may split it: 64 x 16 x
/// 2048 and 129 x 32 x 3968 in 8 slices since run 236): M ragged, N of 8-152 columns, each height.
#[test]
fn small_n_default_matches_reference() {
    // (N <= 64 takes the rule on any GPU; 5000 x 152, three column blocks of 128 rows of A, where
    // its 120 tiles fit one wave)
    let cases = [(300, 56, 2048), (9000, 8, 640), (20000, 40, 1024), (65, 64, 3072), (4097, 16, 128), (70001, 24, 256), (129, 32, 3968), (64, 16, 2048), (5000, 152, 2048)];
    defaults_match_reference("small_n_default_matches_reference", &cases, |s, sms| (s.n <= 64).then(|| TileConfig::small_n_for(s, sms).expect("the small-N rule applies")));
}

/// [`defaults_match_reference`] on cases (M, N, K, width) of 128-row tiles chosen on 132 SMs
/// (the H100 SXM's and the H200's): there the default must be `tile(width)`; elsewhere
/// whatever `choose_for` or the split rules give.
fn widths_match_reference(name: &str, cases: &[(u32, u32, u32, u32)], tile: fn(u32) -> TileConfig) {
    let shapes: Vec<_> = cases.iter().map(|&(m, n, k, _)| (m, n, k)).collect();
    defaults_match_reference(name, &shapes, |s, sms| {
        let width = cases.iter().find(|c| (c.0, c.1, c.2) == (s.m, s.n, s.k)).map(|c| c.3)?;
        (sms == 132).then(|| tile(width))
    });
}

/// The default (no tile forced) on each of `cases` against the reference: it runs
/// `TileConfig::choose_for`'s tile, or the split rules' where `mkernel::gemm`'s own workspace
/// lets one split it (on other SM counts than the cases were chosen for), and `expect(shape,
/// SMs)`'s where that gives one.
fn defaults_match_reference(name: &str, cases: &[(u32, u32, u32)], expect: impl Fn(GemmShape, u32) -> Option<TileConfig>) {
    if gpu_or_skip(name, 1).is_none() {
        return;
    }
    let sms = sm_count(&CudaContext::new(0).unwrap());
    for &(m, n, k) in cases {
        let s = GemmShape { m, n, k };
        let used = run_case(s, None);
        let split = TileConfig::split_rule_for(s, sms, u64::MAX, GemmWorkspace::COUNTS as u64).map(|(t, _)| t);
        assert_eq!(used, split.unwrap_or_else(|| TileConfig::choose_for(s, sms)), "{s:?}");
        // (and `mkernel::plan_gemm`, for `gemm`'s own workspace, says so without the GPU)
        assert_eq!(used, mkernel::plan_gemm(s, GemmOptions::default(), sms, None).unwrap().tile, "{s:?}");
        if let Some(want) = expect(s, sms) {
            assert_eq!(used, want, "{s:?}");
        }
    }
}

/// One wave of 128 x 128 tiles with long K: the 128 x 128 tile in 2-CTA clusters along N in
/// place of the unclustered one or of 128 x 136 (`TileConfig::cluster_n_instead_of`: M >=
/// 1024, K >= 7168, column blocks that pair up; 1600 x 1280 x 9216 was 128 x 136 on 132
/// SMs), M ragged (2000: the last row block short; 8190) and N ragged (1016: the last
/// column block short), against the reference, where its tiles fit one wave.
#[test]
fn cluster_n_default_matches_reference() {
    let n2 = TileConfig::NARROW_TMA_STORE_N2;
    let cases = [(1024, 2048, 8192), (1600, 1280, 9216), (2000, 1016, 7168), (8190, 256, 7168)];
    // (on 132 SMs, the H100 SXM's and the H200's, all four take it; on other counts the
    // default is still checked against `choose_for`)
    defaults_match_reference("cluster_n_default_matches_reference", &cases, |_, sms| (sms == 132).then_some(n2));
}

/// Two row blocks with long K, one wave more than two thirds full: the 128 x 128 tile in 2-CTA
/// clusters along M sharing B (`TileConfig::two_row_blocks_c2_instead_of`: M = 193-256, K >=
/// 7168), M ragged (211, 193: the last row block short), N ragged (8136, 8000: the last
/// column block short), against the reference. (On 132 SMs all three take it; on other
/// counts the default is still checked against `choose_for` or the split rules.)
#[test]
fn two_row_blocks_c2_default_matches_reference() {
    let c2 = TileConfig::NARROW_TMA_STORE_C2;
    let cases = [(211, 8136, 8192), (256, 8192, 7168), (193, 8000, 9216)];
    defaults_match_reference("two_row_blocks_c2_default_matches_reference", &cases, |_, sms| (sms == 132).then_some(c2));
}

/// Two row blocks where the rules above leave 224 columns (N = 14336 and 28672 on 132 SMs):
/// the 112-column tile in 2-CTA clusters along M (`TileConfig::half_width_c2_instead_of`),
/// about two tiles per CTA (four at N = 28600), M ragged (250, 201: the last row block short), N ragged (14296,
/// 14328, 28600: the last column block short), against the reference.
#[test]
fn half_width_c2_default_matches_reference() {
    let c112 = TileConfig::cols_tma_store_c2(112);
    let cases = [(250, 14296, 4096), (201, 14328, 6144), (256, 28600, 8192)];
    defaults_match_reference("half_width_c2_default_matches_reference", &cases, |_, sms| (sms == 132).then_some(c112));
}

/// Two row blocks where the one-wave-cols rule leaves 80-120 columns with K >= 6144 (176-224
/// above K = 14336): that
/// tile in 2-CTA clusters along M sharing B (`TileConfig::one_wave_cols_c2_instead_of`; at
/// 88, 104 and 120 columns the CTAs' halves of B overlap by 8 rows), M ragged (200, 211,
/// 201, 214, 203, 243: the last row block short), N ragged (5112, 6088, 7144, 5696,
/// 6856, 7416: the last column block short), K from 6144 to 16384 (15040 and 14080 with K /
/// 64 odd), against the reference; on 132 SMs the widths are asserted (elsewhere the
/// default's, whatever it is).
#[test]
fn one_wave_cols_c2_default_matches_reference() {
    let cases = [
        (200, 5112, 6144, 80),
        (211, 6088, 16384, 96),
        (256, 6144, 6912, 96),
        (201, 7144, 9216, 112),
        (214, 5696, 16384, 88),
        (203, 6856, 15040, 104),
        (243, 7416, 14080, 120),
        // Above K = 14336 in place of 128 x 256 (run 390): 184 columns, M and N ragged (130
        // tiles in place of 94), and 216 (the halves of B overlapping by 8 rows), N ragged.
        (233, 11888, 16256, 184),
        (242, 14000, 18432, 216),
    ];
    widths_match_reference("one_wave_cols_c2_default_matches_reference", &cases, TileConfig::cols_tma_store_c2);
}

/// Few tiles with K < 4096 (no split): the default's 64 x 64 swapped TMA-store tile
/// (`TileConfig::few_tiles_unsplit_smaller_instead_of`), M and N ragged, against the
/// reference, where it makes at most half this GPU's SMs' tiles.
#[test]
fn few_tiles_unsplit_default_matches_reference() {
    let small = TileConfig::swapped_tma_store(64);
    let cases = [(256, 256, 2048), (300, 520, 1024), (1000, 200, 3072)];
    defaults_match_reference("few_tiles_unsplit_default_matches_reference", &cases, |s, sms| (small.tiles(s.m, s.n) <= (sms / 2) as u64).then_some(small));
}

/// Few tiles with 512 <= K < 4096 where the default was the 128 x 128 tile or a swapped
/// one of more than 64 rows of A: the 64 x 128 TMA-store tile
/// (`TileConfig::few_tiles_short_k_m64_instead_of`), M and N ragged, K = 3968 unsplit,
/// against the reference, where its tiles fit one wave.
#[test]
fn few_tiles_short_k_m64_default_matches_reference() {
    let m64 = TileConfig::M64_NARROW_TMA_STORE;
    let cases = [(640, 1024, 2048), (190, 4088, 2048), (130, 1536, 2560), (600, 1000, 3968), (384, 2040, 1024), (760, 768, 512)];
    defaults_match_reference("few_tiles_short_k_m64_default_matches_reference", &cases, |s, sms| (m64.tiles(s.m, s.n) <= sms as u64).then_some(m64));
}

/// Few tiles with K >= 4096 where the 128 x 128 or 64 x 256 tile would split in 2..=4
/// slices: the 64 x 128 TMA-store tile in fewer, down to none
/// (`TileConfig::few_tiles_half_height_fewer_slices_instead_of`), through `mkernel::gemm`,
/// M and N ragged, against the reference. A pick of 1 slice runs with no workspace
/// (`split_rule_workspace` has none for it), so this checks that `gemm` picks it without
/// one; on 132 SMs all but the last are that pick.
#[test]
fn few_tiles_half_height_default_matches_reference() {
    let half = TileConfig::M64_NARROW_TMA_STORE;
    let cases = [(1024, 1024, 4096), (1001, 1000, 4096), (300, 2304, 4096), (1536, 384, 5120), (252, 4136, 6144), (700, 640, 4096)];
    defaults_match_reference("few_tiles_half_height_default_matches_reference", &cases, |s, sms| {
        let pick = TileConfig::split_rule_for(s, sms, u64::MAX, u64::MAX);
        if sms == 132 {
            let want = if (s.m, s.n, s.k) == (700, 640, 4096) { (half, 2) } else { (half, 1) };
            assert_eq!(pick, Some(want), "{s:?}");
        }
        pick.filter(|&(t, sl)| t == half && sl == 1).map(|(t, _)| {
            assert_eq!(TileConfig::split_rule_workspace(s, sms), None, "{s:?}");
            t
        })
    });
}

/// The clustered column-fitted default (`TileConfig::cols_c2_instead_of`: 176-208 columns
/// in 2-CTA clusters where they fit the waves better than the clustered wide tile), M and N
/// ragged (M = 4095 and 8190: 32 and 64 row blocks, the last one short; N = 9208 and 7160:
/// the last column block short), against the reference. (On 132 SMs: 208, 192, 176 and 176
/// columns.)
#[test]
fn clustered_cols_default_matches_reference() {
    let cases = [(4095, 9208, 7168), (8190, 8192, 4096), (2048, 28672, 4096), (8100, 7160, 9216)];
    defaults_match_reference("clustered_cols_default_matches_reference", &cases, |s, sms| {
        TileConfig::cols_c2_instead_of(TileConfig::WIDE_TMA_STORE_C2, s, sms)
    });
}

/// M >= 1024 where both the mid-M rule's swapped tile and a column-fitted one would
/// replace the wide tile and the model puts the column tile ahead
/// (`TileConfig::beats_swapped_fit`), M ragged (1088, 1150, 1067, 1487: the last
/// row block short), N's last column block short (5000, 8072, 3800), K from 1024 to 8192,
/// against the reference; on 132 SMs the tiles are asserted (208, 176, 184, 176 columns,
/// and 160 in 2-CTA clusters at 1024 x 5120 x 5120).
#[test]
fn cols_over_swapped_fit_default_matches_reference() {
    let (cols, cols_c2) = (TileConfig::cols_tma_store, TileConfig::cols_tma_store_c2);
    let cases = [
        (1088, 6032, 8192, cols(208)),
        (1150, 5000, 4096, cols(176)),
        (1067, 8072, 1024, cols(184)),
        (1487, 3800, 2048, cols(176)),
        (1024, 5120, 5120, cols_c2(160)),
    ];
    let shapes: Vec<_> = cases.iter().map(|&(m, n, k, _)| (m, n, k)).collect();
    defaults_match_reference("cols_over_swapped_fit_default_matches_reference", &shapes, |s, sms| {
        let want = cases.iter().find(|c| (c.0, c.1, c.2) == (s.m, s.n, s.k)).map(|c| c.3)?;
        (sms == 132).then_some(want)
    });
}

/// 193 <= M <= 2048 where the default's tiles leave SMs idle: the narrowest 128-row
/// TMA-store tile filling one wave (`TileConfig::one_wave_cols_instead_of`), M ragged (200,
/// 250, 193, 1000, 1500, 1001, 510, 206, 254, 235: the last row block short) and N's last column block
/// short (10232, 5112, 3576, 1272, 760, 1784, 7160, 4824, 4256, 5320; K from 576 to 5120 at
/// two row blocks: from K = 6144 80-120 columns there are clustered,
/// `one_wave_cols_c2_default_matches_reference`), against the reference;
/// on 132 SMs the widths are asserted (elsewhere the default's, whatever it is). K stays below
/// `ONE_WAVE_COLS_SPLIT_MIN_K` where the width is at most 80 (`mkernel::gemm`'s own workspace
/// would split twice the width there: `split_rule_default_matches_reference` covers it).
#[test]
fn one_wave_cols_default_matches_reference() {
    let cases = [
        (256, 10232, 4096, 160),
        (200, 5112, 5120, 80),
        (250, 3576, 4096, 56),
        (256, 14336, 3968, 224), // (from K = 4096 the 112-column clustered tile: half_width_c2_default_matches_reference)
        (193, 9216, 3456, 144),
        (256, 6144, 5120, 96),
        // From three row blocks (runs 269-270), M and N ragged: in place of the 128 x 128 tile
        // (TMA-store since run 296; unsplit, and split in 2 at 1000 x 760) and of the 128 x 256
        // TMA-store one.
        (1000, 1272, 4096, 80),
        (1500, 1280, 8192, 120),
        (1000, 760, 4096, 48),
        (1001, 1784, 2048, 112),
        (510, 7160, 4096, 224),
        // Two row blocks below K = 2048 (run 360-361, ONE_WAVE_COLS_SHORT_MIN_K): 72, 80 and 88
        // columns, M and N ragged, K from 576.
        (206, 4824, 576, 80),
        (254, 4256, 704, 72),
        (235, 5320, 1920, 88),
    ];
    widths_match_reference("one_wave_cols_default_matches_reference", &cases, TileConfig::cols_tma_store);
}

#[test]
fn gemm_matches_reference_on_large_shapes() {
    if gpu_or_skip("gemm_matches_reference_on_large_shapes", 1).is_none() {
        return;
    }
    for (m, n, k) in [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 28672, 8192), (8192, 7168, 9216)] {
        run_case(GemmShape { m, n, k }, None);
        run_case(GemmShape { m, n, k }, Some(TileConfig::WIDE_TMA_STORE));
        run_case(GemmShape { m, n, k }, Some(TileConfig::WIDE_TMA_STORE_C2));
    }
}

#[test]
fn gemm_rejects_bad_arguments_naming_them() {
    if gpu_or_skip("gemm_rejects_bad_arguments_naming_them", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let a = stream.alloc_zeros::<bf16>(64 * 100).unwrap();
    let b = stream.alloc_zeros::<bf16>(64 * 100).unwrap();
    let mut c = stream.alloc_zeros::<bf16>(64 * 64).unwrap();
    let e = mkernel::gemm(&stream, &a, &b, &mut c, GemmShape { m: 64, n: 64, k: 100 }, GemmOptions::default()).unwrap_err();
    assert!(e.to_string().contains("`k`") && e.to_string().contains("multiple of 8"), "{e}");
    let e = mkernel::gemm(&stream, &a, &b, &mut c, GemmShape { m: 65, n: 64, k: 96 }, GemmOptions::default()).unwrap_err();
    assert!(e.to_string().contains("`c`"), "{e}");
    let opts = GemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE), ..Default::default() };
    let e = mkernel::gemm(&stream, &a, &b, &mut c, GemmShape { m: 64, n: 63, k: 96 }, opts).unwrap_err();
    assert!(e.to_string().contains("`tile`") && e.to_string().contains("N % 8"), "{e}");
    if mkernel::device_count().unwrap() > 1 {
        let other = CudaContext::new(1).unwrap().new_stream().unwrap();
        let e = mkernel::gemm(&other, &a, &b, &mut c, GemmShape { m: 64, n: 64, k: 96 }, GemmOptions::default()).unwrap_err();
        assert!(e.to_string().contains("GPU 0") && e.to_string().contains("GPU 1"), "{e}");
    }
}

/// The last row block of a ragged M reads its 128 (or 64) rows of A ending at row M
/// (`a_row0` in sm90_gemm.cuh): the tile families' output (both epilogues, 64- and 128-row
/// tiles, clusters along M and N, split) against the reference where that block holds 1,
/// 32, 65 or 127 valid rows, and nothing written past row M: C is allocated with a poisoned
/// row block beyond M, which the register epilogue would reach with a wrong `row_lo` (the
/// TMA store's tensor map ends at row M, so there a wrong staging row shows as a wrong
/// value instead); a second call into the same C gives the same bits.
#[test]
fn ragged_last_row_block_matches_reference_and_writes_nothing_past_m() {
    if gpu_or_skip("ragged_last_row_block_matches_reference_and_writes_nothing_past_m", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut blas = Cublas::new(&stream).unwrap();
    let mut ws = GemmWorkspace::new(&stream).unwrap();
    let cols88 = TileConfig::cols_tma_store(88);
    let cases: [(u32, u32, u32, TileConfig, LastWaveSplit); 19] = [
        // 88 columns (unswizzled staging): 65, 32, 1 and 127 rows in the last block
        (321, 3536, 1024, cols88, LastWaveSplit::Off),
        (1440, 960, 512, cols88, LastWaveSplit::Off),
        (129, 1000, 640, cols88, LastWaveSplit::Off),
        (255, 1000, 640, cols88, LastWaveSplit::Off),
        // the register epilogue, the swizzled staging, 64-row tiles
        (300, 1000, 1000, TileConfig::NARROW, LastWaveSplit::Off),
        (300, 1000, 1000, TileConfig::WIDE_TMA_STORE, LastWaveSplit::Off),
        (300, 1000, 1000, TileConfig::M64_WIDE_TMA_STORE, LastWaveSplit::Off),
        (1000, 520, 1000, TileConfig::M64_NARROW_TMA_STORE, LastWaveSplit::Off),
        (300, 1000, 1000, TileConfig::M64_WIDE, LastWaveSplit::Off),
        (300, 1000, 1000, TileConfig::M64_WIDE_TMA_STORE_C2, LastWaveSplit::Off),
        // clusters along M (an odd and an even number of row blocks) and along N
        (300, 1000, 1000, TileConfig::NARROW_TMA_STORE_C2, LastWaveSplit::Off),
        (400, 1000, 1000, TileConfig::WIDE_TMA_STORE_C2, LastWaveSplit::Off),
        (300, 1000, 1000, TileConfig::NARROW_TMA_STORE_N2, LastWaveSplit::Off),
        (300, 1096, 1000, TileConfig::NARROW_TMA_STORE_N2, LastWaveSplit::Off), // 9 column blocks: a padding tile
        (1440, 960, 512, TileConfig::cols_tma_store_n2(96), LastWaveSplit::Off),
        (321, 3536, 1024, TileConfig::cols_tma_store_c2(176), LastWaveSplit::Off),
        // split last wave: every slice of the last row block's tiles shifted alike
        (300, 1000, 1000, TileConfig::NARROW_TMA_STORE, LastWaveSplit::Slices(3)),
        (300, 1000, 1000, TileConfig::M64_WIDE_TMA_STORE, LastWaveSplit::Slices(2)),
        (1440, 352, 4096, cols88, LastWaveSplit::Slices(2)),
    ];
    for (m, n, k, tile, split) in cases {
        let s = GemmShape { m, n, k };
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let Operands { a, b, want, seed } = operands(&stream, &mut blas, s);
        // C with 128 more rows than M, all poisoned; only the first M rows may change.
        let mut c = stream.alloc_zeros::<bf16>((mu + 128) * nu).unwrap();
        check::poison(&stream, &mut c).unwrap();
        let before = stream.clone_dtoh(&c).unwrap();
        let mut first: Option<Vec<bf16>> = None;
        for round in 0..2 {
            let opts = GemmOptions { tile: Some(tile), split_last_wave: split, ..Default::default() };
            let ran = mkernel::gemm_with_workspace(&stream, &a, &b, &mut c, s, opts, &mut ws).unwrap();
            assert_eq!(ran.tile, tile, "{s:?}");
            let got = stream.clone_dtoh(&c).unwrap();
            let cmp = check::compare(&got[..mu * nu], &want, None, nu, ku);
            assert!(cmp.passed(), "{s:?} {tile} {split:?} round {round}: {cmp} (seed {seed:#x})");
            let past = got[mu * nu..].iter().zip(&before[mu * nu..]).position(|(g, p)| g.to_bits() != p.to_bits());
            assert!(past.is_none(), "{s:?} {tile} {split:?}: element {} past row M was written (seed {seed:#x})", past.unwrap_or(0) + mu * nu);
            match &first {
                None => first = Some(got),
                Some(f) => assert!(f.iter().zip(&got).all(|(x, y)| x.to_bits() == y.to_bits()), "{s:?} {tile} {split:?}: a second call gave other bits (seed {seed:#x})"),
            }
            eprintln!("ok {s:?} {tile} {split:?} round {round}: {cmp}");
        }
    }
}

/// The split last wave (K-slices of the tiles left over after the full waves, summed in
/// fp32 by the slice that arrives last): against the reference for one wave of slices,
/// slices spread over several waves, a multi-wave GEMM's short last wave, K % 64 != 0 and
/// N not a multiple of the tile; each case twice on one workspace (the counts must be back
/// at 0: the second call, on freshly poisoned output, must give the same bits) and then
/// with another slice count on the same workspace.
#[test]
fn split_last_wave_matches_reference() {
    if gpu_or_skip("split_last_wave_matches_reference", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut blas = Cublas::new(&stream).unwrap();
    let mut ws = GemmWorkspace::new(&stream).unwrap();
    for (m, n, k, tile, slices) in [
        (129, 8192, 14336, TileConfig::swapped_wide(136, mkernel::Epilogue::TmaStore), [2, 3]),
        (129, 1000, 4104, TileConfig::swapped_wide(136, mkernel::Epilogue::TmaStore), [3, 2]),
        (64, 4096, 2048, TileConfig::swapped_tma_store(64), [4, 2]),
        (300, 1000, 1000, TileConfig::NARROW_TMA_STORE, [2, 5]),
        (2049, 8192, 4096, TileConfig::WIDE_TMA_STORE, [8, 2]),
        (1, 8, 128, TileConfig::swapped_tma_store(8), [2, 2]),
        // the column-fitted TMA-store tiles (unswizzled staging: 176, 72 and 120 columns)
        (300, 1000, 1000, TileConfig::cols_tma_store(176), [2, 5]),
        (120, 2000, 4160, TileConfig::cols_tma_store(72), [4, 2]),
        (129, 2040, 1000, TileConfig::cols_tma_store(120), [3, 2]),
        // 8- and 40-column tiles (a small N in the wgmma's n), the fix-up's batched loads
        (1000, 8, 4096, TileConfig::cols_tma_store(8), [7, 4]),
        (300, 80, 2048, TileConfig::cols_tma_store(40), [5, 2]),
        // the short 128-row swapped tiles (64..=120 rows of A), the forced split's default at M = 65-111
        (96, 2000, 4160, TileConfig::swapped_wide(96, mkernel::Epilogue::TmaStore), [2, 3]),
        (65, 1000, 1000, TileConfig::swapped_wide(72, mkernel::Epilogue::TmaStore), [4, 2]),
    ] {
        let s = GemmShape { m, n, k };
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let Operands { a, b, want, seed } = operands(&stream, &mut blas, s);
        let mut first: Option<Vec<bf16>> = None;
        for (round, n_slices) in [slices[0], slices[0], slices[1]].into_iter().enumerate() {
            let mut c = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
            check::poison(&stream, &mut c).unwrap();
            let opts = GemmOptions { tile: Some(tile), split_last_wave: LastWaveSplit::Slices(n_slices), ..Default::default() };
            let ran = mkernel::gemm_with_workspace(&stream, &a, &b, &mut c, s, opts, &mut ws).unwrap();
            assert_eq!((ran.tile, ran.split_slices), (tile, n_slices), "{s:?}");
            let got = stream.clone_dtoh(&c).unwrap();
            let cmp = check::compare(&got, &want, None, nu, ku);
            assert!(cmp.passed(), "{s:?} {tile} {n_slices} slices, round {round}: {cmp} (seed {seed:#x})");
            match (&first, round) {
                (None, _) => first = Some(got),
                (Some(f), 1) => assert!(f.iter().zip(&got).all(|(x, y)| x.to_bits() == y.to_bits()), "{s:?} {tile}: a second call with {n_slices} slices on one workspace gave other bits (seed {seed:#x})"),
                _ => {}
            }
            eprintln!("ok {s:?} {tile} {n_slices} slices round {round}: {cmp}");
        }
    }
}

/// A forced count (`LastWaveSplit::Slices`, no tile forced) on shapes whose default is a
/// 2-CTA tile (clusters never split): the call runs the unclustered tile the default was
/// chosen as (`TileConfig::choose_for_split`; helper-55 found `--split-last-wave N` stopping
/// at the first clustered default), against the reference.
#[test]
fn forced_split_on_a_clustered_default_runs_unclustered() {
    if gpu_or_skip("forced_split_on_a_clustered_default_runs_unclustered", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let sms = sm_count(&ctx);
    let stream = ctx.new_stream().unwrap();
    let mut blas = Cublas::new(&stream).unwrap();
    let mut ws = GemmWorkspace::new(&stream).unwrap();
    // (counts whose slots fit the default workspace: 2048 x 7168 x 9216 leaves 128 tiles of
    // 128 x 176 over, 3 slices of which would need 33.8 MB, refused naming split_last_wave)
    for (m, n, k, n_slices) in [(2049, 8192, 4096, 2), (2048, 7168, 9216, 2), (4096, 4096, 1000, 2)] {
        let s = GemmShape { m, n, k };
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let Operands { a, b, want, seed } = operands(&stream, &mut blas, s);
        let mut c = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
        check::poison(&stream, &mut c).unwrap();
        let opts = GemmOptions { split_last_wave: LastWaveSplit::Slices(n_slices), ..Default::default() };
        let ran = mkernel::gemm_with_workspace(&stream, &a, &b, &mut c, s, opts, &mut ws).unwrap();
        let default = TileConfig::choose_for(s, sms);
        assert_eq!((ran.tile, ran.split_slices), (TileConfig::choose_for_split(s, sms), n_slices), "{s:?}");
        assert!(ran.tile.cluster_m == 1, "{s:?}: ran {}", ran.tile);
        let cmp = check::compare(&stream.clone_dtoh(&c).unwrap(), &want, None, nu, ku);
        assert!(cmp.passed(), "{s:?} {} in {n_slices} slices (default {default}): {cmp} (seed {seed:#x})", ran.tile);
        eprintln!("ok {s:?}: default {default}, ran {} in {n_slices} slices: {cmp}", ran.tile);
    }
}

/// The default with a workspace (`LastWaveSplit::Auto`, no tile forced) takes the split
/// rules' tile and slices where they apply (small M whose 64-row swapped tiles spill a few
/// past one wave, long K; one row block of A with a long K on tiles that make at most
/// half the SMs' tiles; tiles filling at most half the SMs with a long K; tiles filling
/// half to two thirds of them with K >= 13824) and matches the
/// reference; twice on one workspace with the same bits, a call on other data between
/// them (so a slice that read the previous call's slots would show).
#[test]
fn split_rule_default_matches_reference() {
    if gpu_or_skip("split_rule_default_matches_reference", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let sms = sm_count(&ctx);
    let mut blas = Cublas::new(&stream).unwrap();
    let mut ws = GemmWorkspace::new(&stream).unwrap();
    // 64-row tiles: SMs + 12 of them (N = 64 * (SMs + 12)), the small-M rule's case on any
    // SM count; one row block over 128-column tiles (N = 64 * SMs: SMs / 2 tiles), the
    // row-block rule's (ragged M, K >= 9216); the Llama-3-70B down-projection decode shape.
    let n = 64 * (sms + 12);
    let row_block_n = 64 * (sms - sms % 2);
    // Its 144- and 112-column tiles (N = 144 or 112 x SMs / 2), and 128 x 128 tiles filling
    // half the SMs, the few-tiles rule's, from 12 SMs: of three row blocks (N = 128 x SMs /
    // 6) at K = 14336 in 2 slices, of two (N = 128 x SMs / 4) the 64 x 128 tile unsplit in
    // their place (few_tiles_half_height_fewer_slices_instead_of, a pick of 1 slice). Then shapes that hold on an H200 (skipped where no rule applies): the 128 x 128
    // TMA-store default (1000 x 1000; a Registers default before run 296), N ragged by 8,
    // K % 64 != 0, 3 slices.
    let half = sms / 2;
    let cases = [
        (64, n, 7168, true),
        (8, n, 7168, true),
        (33, n, 8192, true),
        (16, n, 4096, true),
        (128, row_block_n, 9216, true),
        (117, row_block_n, 14336, true),
        (120, 144 * half, 9216, true),
        (128, 112 * half, 9216, true),
        (384, 128 * (sms / 6), 14336, true),
        (256, 128 * (sms / 4), 4096, true),
        (128, 8192, 14336, false),
        (256, 4096, 14336, false),
        (1000, 1000, 16384, false),
        (200, 2056, 9224, false),
        // The few-tiles rule's other tiles (64 x 256, 128 x 256, 64-row swapped of 104 and
        // 160 rows of A) and K = 4096 (4 slices).
        (300, 2048, 16384, false),
        (128, 16896, 9216, false),
        (160, 4096, 14336, false),
        (100, 4096, 8192, false),
        (256, 2048, 4096, false),
        // K % 64 != 0 on the 64 x 256 and 128 x 256 tiles (helper-48).
        (8, 4096, 4104, false),
        (128, 16896, 4104, false),
        // The small-N rule's tiles (an MoE router), split: N columns wide for N <= 32 (8 in
        // 8 and, at M = 64, 16 slices, 24 in 3, 32 in 5; on 132 SMs), swapped above (64 rows of A in 7 slices, two column
        // blocks of 64 rows in 2); M ragged, N not a power of two.
        (1000, 8, 4096, false),
        (64, 8, 7168, false),
        (5000, 24, 4096, false),
        (3001, 32, 7168, false),
        (200, 56, 7168, false),
        (2000, 120, 7168, false),
        // ... up to 16 slices (runs 221, 232; counts on 132 SMs): 8 columns in 16 slices at K
        // = 14336, 16 in 14 at M ragged, 32 in 16 and 24 in 14 (two L2 round trips of the
        // fix-up), M ragged.
        (64, 8, 14336, false),
        (200, 16, 7168, false),
        (200, 32, 9216, false),
        (300, 24, 7168, false),
        // ... and below K = 4096 from K = 1024 (runs 235-236): 32 columns in 8 slices of 4 K blocks,
        // 8 in 8 of 2, M ragged.
        (200, 32, 2048, false),
        (100, 8, 1024, false),
        // The 64 x 64 swapped tiles below K = 4096 (run 238): 12 of them in 4 slices, M and N
        // ragged; 8 in 6 slices of 8 K blocks.
        (200, 136, 2048, false),
        (256, 128, 3072, false),
        // ... in as many slices as fit one wave (runs 244-245): 36 in 3, 45 in 2 (M and N
        // ragged), and the small-M rule's Registers tiles through their TMA-store twins, 32
        // in 4 and 16 of 64 x 8 in 6 (M ragged); 36 tiles of 128 x 128 in 3.
        (384, 384, 3072, false),
        (320, 520, 3072, false),
        (64, 2048, 2048, false),
        (5, 1024, 3072, false),
        // ... the 64 x 128 tiles in place of 128 x 128 or wide swapped ones, from K = 3072 in
        // slices of >= 16 K blocks (runs 247-248): 64 in 2 (M ragged), 40 in 3.
        (200, 2048, 3072, false),
        (128, 2560, 3584, false),
        // ... and the small-M swapped tiles from K = 1536 in 3 slices (run 250): 32 of 64 x 32.
        (30, 2048, 1536, false),
        // The few-tiles rule's 64 x 64 swapped tiles in place of the default's (K <= 14336,
        // A + B <= 32 MiB): 16 in 7 slices, M and N ragged (45 in 2), K = 5120, 16 in 8 at K =
        // 14336, 40 in 3 at K = 12288 with M and N ragged.
        (256, 256, 7168, false),
        (300, 520, 4096, false),
        (1000, 200, 5120, false),
        (256, 256, 14336, false),
        (200, 600, 12288, false),
        // Two rounds of thirds (run 259): 3/5 of the SMs' worth of 64 x 8 swapped tiles in 3
        // slices, M ragged (any SM count); 80 tiles of 128 x 128 at M = 256.
        (3, 64 * (sms * 3 / 5), 13824, true),
        (256, 5120, 27648, false),
        // The short swapped tiles in up to 16 slices (runs 259-260): a router at decode, 4
        // tiles of 64 x 8 in 14 slices; 6 of 64 x 16 in 11 (M ragged); 4 in 16.
        (1, 256, 7168, false),
        (13, 384, 7168, false),
        (1, 256, 14336, false),
        // Two row blocks, N ragged: 64 x 128 tiles in 2 slices in place of 128 x 128 in 4
        // (few_tiles_half_height_instead_of, run 298).
        (250, 1784, 5120, false),
        // ... and in 3 where those fit one wave (run 372): 40 tiles, M and N ragged.
        (236, 1272, 6144, false),
        // The 64 x 128 tile in fewer slices than the 128 x 128 or 64 x 256 split (runs
        // 332-333): unsplit in place of 2 slices (M and N ragged) and of 3 at K = 4096, in 2
        // in place of 4 (M and N ragged) and of 64 x 256 in 3.
        (1001, 1000, 4096, false),
        (512, 1152, 4096, false),
        (1560, 232, 4096, false),
        (300, 1664, 8192, false),
        // Narrower swapped tiles at small M (few_tiles_narrower_swapped_instead_of, run 344):
        // 16 of 64 x 16 in 8 in place of 4 of 64 x 64 in 4; 15 of 64 x 16 in 8 (M and N ragged);
        // 8 of 64 x 16 in 16 (two row blocks of 16 for M = 24).
        (64, 256, 4096, false),
        (45, 264, 7168, false),
        (24, 256, 14336, false),
        // The two-warpgroup 128 x 64 tile in 4 slices in place of the 64 x 64 swapped one in 2
        // (few_tiles_two_warpgroups_instead_of, runs 348-349): M and N ragged, 26 tiles.
        (236, 808, 9024, false),
        // The swapped 128 x 64 tile in 4 slices in place of the 64 x 64 swapped one in 2 at tall M
        // (few_tiles_two_warpgroups_instead_of, runs 352, 355): DeepSeek-V3's router at 1024
        // tokens (32 tiles), M ragged at N = 256 (30) and 128 (24).
        (1024, 256, 7168, false),
        (900, 256, 6144, false),
        (1500, 128, 5120, false),
    ];
    // Picks pinned on 132 SMs (columns, slices). Two row blocks at K >= 6912 (run 267): tiles twice the one-wave width
    // in 2 slices, 160 columns at N = 5120 and 5112 (the last column block short; M ragged),
    // 96 at 3072; and from three row blocks (run 269): 160 columns at M = 330 and N = 3400
    // (both ragged; K = 6912: above M = 256 from K = 8192 W >= 72 stays unsplit, run 318),
    // 144 at M = 380 and N = 3064 and at 1000 x 1152; in place of the 64 x 256 tile (runs
    // 277, 318): 144 at 899 x 1040 and 160 at 433 x 2480 (both ragged); 96 columns (W = 48)
    // at 373 x 2048 x 14336; where 2W's slices overfill one wave, the narrowest wider width
    // whose slices fit (run 324): 104 at 2049 x 296 x 8192, 136 at 2259 x 400 x 6912, 120 at 3043 x 240
    // x 14336 (M and N ragged). On 132 SMs they must take that rule, not be skipped.
    let pinned = [
        (256, 5120, 8192, 160, 2),
        (200, 5112, 6912, 160, 2),
        (250, 3072, 14336, 96, 2),
        (330, 3400, 6912, 160, 2),
        (380, 3064, 6912, 144, 2),
        (1000, 1152, 6912, 144, 2),
        (899, 1040, 6912, 144, 2),
        (433, 2480, 6912, 160, 2),
        (373, 2048, 14336, 96, 2),
        (2049, 296, 8192, 104, 2),
        (2259, 400, 6912, 136, 2),
        (3043, 240, 14336, 120, 2),
        // Above two row blocks, narrower tiles in the 128 x 128 split's slices where they pad N
        // less (few_tiles_narrower_instead_of, run 329): 39 of 128 x 96 in 3 (M and N ragged),
        // 32 of 128 x 104 in 4.
        (1586, 280, 4096, 96, 3),
        (971, 392, 7168, 104, 4),
    ];
    if sms == 132 {
        for (m, n, k, w, slices) in pinned {
            let s = GemmShape { m, n, k };
            let want = Some((TileConfig::cols_tma_store(w), slices));
            assert_eq!(TileConfig::split_rule_for(s, sms, GemmWorkspace::DEFAULT_BYTES as u64, GemmWorkspace::COUNTS as u64), want, "{s:?}");
        }
    }
    for (m, n, k, on_any_gpu) in cases.into_iter().chain(pinned.map(|(m, n, k, _, _)| (m, n, k, false))) {
        let s = GemmShape { m, n, k };
        let want_tile = TileConfig::split_rule_for(s, sms, GemmWorkspace::DEFAULT_BYTES as u64, GemmWorkspace::COUNTS as u64);
        if !on_any_gpu && want_tile.is_none() {
            eprintln!("skip {s:?}: no split rule on {sms} SMs");
            continue;
        }
        assert!(want_tile.is_some(), "{s:?}: the rule should apply on {sms} SMs");
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let Operands { a, b, want, seed } = operands(&stream, &mut blas, s);
        let mut first: Option<Vec<bf16>> = None;
        for round in 0..2 {
            let mut c = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
            check::poison(&stream, &mut c).unwrap();
            let ran = mkernel::gemm_with_workspace(&stream, &a, &b, &mut c, s, GemmOptions::default(), &mut ws).unwrap();
            assert_eq!(Some((ran.tile, ran.split_slices)), want_tile, "{s:?}");
            // (what the call ran is what `mkernel::plan_gemm` says it would, grid included)
            assert_eq!(mkernel::plan_gemm(s, GemmOptions::default(), sms, Some(ws.bytes() as u64)).unwrap(), ran, "{s:?}");
            let used = ran.tile;
            let got = stream.clone_dtoh(&c).unwrap();
            let cmp = check::compare(&got, &want, None, nu, ku);
            assert!(cmp.passed(), "{s:?} {used} round {round}: {cmp} (seed {seed:#x})");
            if let Some(f) = &first {
                assert!(f.iter().zip(&got).all(|(x, y)| x.to_bits() == y.to_bits()), "{s:?}: other bits in round {round} (seed {seed:#x})");
            }
            first = Some(got);
            eprintln!("ok {s:?} default {used} round {round}: {cmp}");
            if round == 0 {
                // Other data on the same workspace: its slots now hold another product.
                let mut b2 = stream.alloc_zeros::<bf16>(nu * ku).unwrap();
                check::fill_uniform(&stream, &mut b2, seed + 2).unwrap();
                let mut reference2 = stream.alloc_zeros::<f32>(mu * nu).unwrap();
                blas.gemm_f32_out(&a, &b2, &mut reference2, s).unwrap();
                let mut c2 = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
                check::poison(&stream, &mut c2).unwrap();
                mkernel::gemm_with_workspace(&stream, &a, &b2, &mut c2, s, GemmOptions::default(), &mut ws).unwrap();
                let cmp2 = check::compare(&stream.clone_dtoh(&c2).unwrap(), &stream.clone_dtoh(&reference2).unwrap(), None, nu, ku);
                assert!(cmp2.passed(), "{s:?} {used} on other data: {cmp2} (seed {seed:#x})");
            }
        }
    }
}

/// `mkernel::gemm` (no workspace argument) takes the split rules' split on a workspace it
/// keeps per stream: on two streams, the same bits as `gemm_with_workspace` with the
/// caller's workspace (the split, deterministic) and not those of the unsplit call,
/// within tolerance of the reference; again after a larger split grew the kept workspace
/// and after `release_gemm_workspaces`.
#[test]
fn gemm_splits_on_a_workspace_it_keeps_per_stream() {
    if gpu_or_skip("gemm_splits_on_a_workspace_it_keeps_per_stream", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let sms = sm_count(&ctx);
    // (few tiles with a long K, 128 x 128 in 3 slices; then one row block over 112..144-column
    // tiles: a larger slot)
    let shapes = [GemmShape { m: 768, n: 896, k: 14336 }, GemmShape { m: 128, n: 9216, k: 14336 }];
    if shapes.iter().any(|&s| TileConfig::split_rule_workspace(s, sms).is_none()) {
        assert!(sms < 128, "the split rules should apply on {sms} SMs");
        eprintln!("skip gemm_splits_on_a_workspace_it_keeps_per_stream: no split rule for its shapes on {sms} SMs");
        return;
    }
    let streams = [ctx.new_stream().unwrap(), ctx.new_stream().unwrap()];
    for round in 0..2 {
        for s in shapes {
            for stream in &streams {
                let mut blas = Cublas::new(stream).unwrap();
                let (mu, nu, ku) = (s.m as usize, s.n as usize, s.k as usize);
                let Operands { a, b, want, seed } = operands(stream, &mut blas, s);
                let run = |opts: GemmOptions, ws: Option<&mut GemmWorkspace>| {
                    let mut c = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
                    check::poison(stream, &mut c).unwrap();
                    match ws {
                        Some(w) => {
                            let ran = mkernel::gemm_with_workspace(stream, &a, &b, &mut c, s, opts, w).unwrap();
                            assert!(ran.split_slices >= 2, "{s:?}: {ran:?}");
                        }
                        None => {
                            mkernel::gemm(stream, &a, &b, &mut c, s, opts).unwrap();
                        }
                    }
                    let got = stream.clone_dtoh(&c).unwrap();
                    let cmp = check::compare(&got, &want, None, nu, ku);
                    assert!(cmp.passed(), "{s:?} {opts:?}: {cmp} (seed {seed:#x})");
                    got
                };
                let kept = run(GemmOptions::default(), None);
                let mut ws = GemmWorkspace::new(stream).unwrap();
                let theirs = run(GemmOptions::default(), Some(&mut ws));
                let unsplit = run(GemmOptions { split_last_wave: LastWaveSplit::Off, ..Default::default() }, None);
                let same = |x: &[bf16], y: &[bf16]| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
                assert!(same(&kept, &theirs), "{s:?} round {round}: mkernel::gemm did not run the workspace's split (seed {seed:#x})");
                // (two K-slices summed differ from one accumulation in some of ~10^6 elements)
                assert!(!same(&kept, &unsplit), "{s:?} round {round}: mkernel::gemm ran unsplit (seed {seed:#x})");
                eprintln!("ok {s:?} round {round}: split on the kept workspace");
            }
        }
        mkernel::release_gemm_workspaces();
    }
}

/// `mkernel::gemm`'s kept workspaces stay correct where the cache evicts and where threads
/// share a stream: on CACHED_WORKSPACES + 3 streams, all calls queued before any output
/// is read (so a workspace is evicted, freed in its stream's order, while that stream's
/// GEMM may still run), in turn and then in reverse order (allocated again), and from 4
/// threads calling on one stream at once (each call takes the kept workspace or a new
/// one), every output has the bits of the split on a caller's workspace and matches the
/// reference.
#[test]
fn gemm_kept_workspaces_hold_past_eviction_and_across_threads() {
    if gpu_or_skip("gemm_kept_workspaces_hold_past_eviction_and_across_threads", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let sms = sm_count(&ctx);
    // 128 x 128 tiles of three row blocks filling half the SMs at K = 8192 (above K = 5120 the
    // 64 x 128 tile's rule leaves them): the few-tiles rule's 2 slices, from 12 SMs.
    let s = GemmShape { m: 384, n: 128 * (sms / 6), k: 8192 };
    if TileConfig::split_rule_workspace(s, sms).is_none() {
        assert!(sms < 12, "the few-tiles rule should apply to {s:?} on {sms} SMs");
        eprintln!("skip: no split rule for {s:?} on {sms} SMs");
        return;
    }
    mkernel::release_gemm_workspaces();
    let home = ctx.new_stream().unwrap();
    let (mu, nu, ku) = (s.m as usize, s.n as usize, s.k as usize);
    let seed = check::fresh_seed();
    let mut a = home.alloc_zeros::<bf16>(mu * ku).unwrap();
    let mut b = home.alloc_zeros::<bf16>(nu * ku).unwrap();
    check::fill_uniform(&home, &mut a, seed).unwrap();
    check::fill_uniform(&home, &mut b, seed + 1).unwrap();
    let mut reference = home.alloc_zeros::<f32>(mu * nu).unwrap();
    Cublas::new(&home).unwrap().gemm_f32_out(&a, &b, &mut reference, s).unwrap();
    let want = home.clone_dtoh(&reference).unwrap();
    let mut c = home.alloc_zeros::<bf16>(mu * nu).unwrap();
    let ran = mkernel::gemm_with_workspace(&home, &a, &b, &mut c, s, GemmOptions::default(), &mut GemmWorkspace::new(&home).unwrap()).unwrap();
    assert!(ran.split_slices >= 2, "{s:?}: {ran:?}");
    let split_bits: Vec<u16> = home.clone_dtoh(&c).unwrap().iter().map(|x| x.to_bits()).collect();
    let cmp = check::compare(&home.clone_dtoh(&c).unwrap(), &want, None, nu, ku);
    assert!(cmp.passed(), "{s:?} on a caller's workspace: {cmp} (seed {seed:#x})");
    home.synchronize().unwrap();
    let check_out = |stream: &Arc<CudaStream>, c: &CudaSlice<bf16>, what: &str| {
        let got = stream.clone_dtoh(c).unwrap();
        let bad = got.iter().zip(&split_bits).filter(|(x, y)| x.to_bits() != **y).count();
        assert_eq!(bad, 0, "{s:?} {what}: {bad} elements differ from the split on a caller's workspace (seed {seed:#x})");
    };

    let streams: Vec<_> = (0..mkernel::CACHED_WORKSPACES + 3).map(|_| ctx.new_stream().unwrap()).collect();
    for round in 0..2 {
        let order: Vec<usize> = if round == 0 { (0..streams.len()).collect() } else { (0..streams.len()).rev().collect() };
        let mut outs = Vec::new();
        for i in order {
            let stream = &streams[i];
            let mut c = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
            check::poison(stream, &mut c).unwrap();
            mkernel::gemm(stream, &a, &b, &mut c, s, GemmOptions::default()).unwrap();
            outs.push((i, c));
        }
        for (i, c) in &outs {
            check_out(&streams[*i], c, &format!("stream {i} round {round}"));
        }
    }
    eprintln!("ok {s:?}: {} streams, two rounds", streams.len());

    let shared = ctx.new_stream().unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (shared, a, b, check_out) = (&shared, &a, &b, &check_out);
            scope.spawn(move || {
                for call in 0..6 {
                    let mut c = shared.alloc_zeros::<bf16>(mu * nu).unwrap();
                    check::poison(shared, &mut c).unwrap();
                    mkernel::gemm(shared, a, b, &mut c, s, GemmOptions::default()).unwrap();
                    check_out(shared, &c, &format!("thread {t} call {call} on a shared stream"));
                }
            });
        }
    });
    eprintln!("ok {s:?}: 4 threads x 6 calls on one stream");
    mkernel::release_gemm_workspaces();
}

/// `mkernel::gemm` captured into a CUDA graph on a stream that has a kept workspace runs
/// unsplit (the graph must not hold a workspace the cache frees: it is released before
/// the replays), and every replay on fresh inputs matches the reference with the bits of
/// the eager unsplit call.
#[test]
fn gemm_in_a_graph_capture_runs_unsplit_and_replays() {
    if gpu_or_skip("gemm_in_a_graph_capture_runs_unsplit_and_replays", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    // (128 x 128 tiles in 3 slices on an H200; a rule's 1-slice pick would run in the capture)
    let s = GemmShape { m: 768, n: 896, k: 14336 };
    if TileConfig::split_rule_workspace(s, sm_count(&ctx)).is_none() {
        eprintln!("skip gemm_in_a_graph_capture_runs_unsplit_and_replays: no split rule for {s:?} on this GPU");
        return;
    }
    // SAFETY: every buffer of this test is used on its one stream only (cudarc's event
    // tracking would make the capture wait on work recorded outside it).
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap();
    let mut blas = Cublas::new(&stream).unwrap();
    let (mu, nu, ku) = (s.m as usize, s.n as usize, s.k as usize);
    let mut a = stream.alloc_zeros::<bf16>(mu * ku).unwrap();
    let mut b = stream.alloc_zeros::<bf16>(nu * ku).unwrap();
    let mut c = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
    // Eager first: compiles and loads the kernels, and leaves a kept workspace for `stream`.
    mkernel::gemm(&stream, &a, &b, &mut c, s, GemmOptions::default()).unwrap();
    stream.synchronize().unwrap();
    stream.begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    mkernel::gemm(&stream, &a, &b, &mut c, s, GemmOptions::default()).unwrap();
    let graph = stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH).unwrap().unwrap();
    mkernel::release_gemm_workspaces();
    let seed = check::fresh_seed();
    for rep in 0..3u64 {
        check::fill_uniform(&stream, &mut a, seed + 2 * rep).unwrap();
        check::fill_uniform(&stream, &mut b, seed + 2 * rep + 1).unwrap();
        check::poison(&stream, &mut c).unwrap();
        stream.synchronize().unwrap();
        graph.launch().unwrap();
        stream.synchronize().unwrap();
        let got = stream.clone_dtoh(&c).unwrap();
        let mut reference = stream.alloc_zeros::<f32>(mu * nu).unwrap();
        blas.gemm_f32_out(&a, &b, &mut reference, s).unwrap();
        let cmp = check::compare(&got, &stream.clone_dtoh(&reference).unwrap(), None, nu, ku);
        assert!(cmp.passed(), "graph replay {rep}: {cmp} (seed {seed:#x})");
        let mut eager = stream.alloc_zeros::<bf16>(mu * nu).unwrap();
        mkernel::gemm(&stream, &a, &b, &mut eager, s, GemmOptions { split_last_wave: LastWaveSplit::Off, ..Default::default() }).unwrap();
        let eager = stream.clone_dtoh(&eager).unwrap();
        assert!(got.iter().zip(&eager).all(|(x, y)| x.to_bits() == y.to_bits()), "graph replay {rep}: not the unsplit call's bits (seed {seed:#x})");
    }
}

/// Programmatic dependent launch (the default): a chain of GEMMs enqueued back to back,
/// each reading the output of the one before and writing over the input of the one
/// before that (two buffers in turn), on several tiles and split rules (few tiles at K =
/// 4096 and 2048, small N, K = 16), has at every step the bits of the same chain run with the launch
/// serialized and the stream synchronized after each step, whose every step matches the
/// fp32 reference of its own input; the same chain captured into a CUDA graph too.
#[test]
fn dependent_launch_chain_matches_the_serialized_chain() {
    if gpu_or_skip("dependent_launch_chain_matches_the_serialized_chain", 1).is_none() {
        return;
    }
    // (on 132 SMs: 128 x 128 in 2 slices, 64 x 64 swapped in 2, unsplit at K = 1024,
    // small-N in 8, K = 16, and at K = 2048 64 x 64 swapped in 4: a short-K split)
    dependent_chain_matches_serialized(200, &[4096, 4096, 1024, 4096, 16, 2048, 512]);
    // Decode (M = 1), the calls run programmatically since run 277: 1 x 14336 x 4096 (64-row
    // swapped tiles, two waves unsplit), 1 x 4096 x 14336 (swapped 64 x 8, split), 1 x 7168
    // x 4096, 1 x 256 x 7168 (a router: split in many slices).
    dependent_chain_matches_serialized(1, &[4096, 14336, 4096, 7168, 256]);
}

/// The chain of GEMMs whose step i maps `dims[i]` columns to `dims[i + 1]` (M = `m`), each
/// step reading the previous step's output: serialized (each step against a cuBLAS fp32
/// reference), then back to back x10 and captured in a graph x3, with the serialized
/// chain's bits.
fn dependent_chain_matches_serialized(m: u32, dims: &[u32]) {
    let ctx = CudaContext::new(0).unwrap();
    // SAFETY: every buffer of this test is used on its one stream only (cudarc's event
    // tracking would make the capture wait on work recorded outside it).
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap();
    let mut blas = Cublas::new(&stream).unwrap();
    let steps: Vec<GemmShape> = dims.windows(2).map(|d| GemmShape { m, n: d[1], k: d[0] }).collect();
    let mu = m as usize;
    let widest = *dims.iter().max().unwrap() as usize;
    let seed = check::fresh_seed();
    let mut x0 = stream.alloc_zeros::<bf16>(mu * dims[0] as usize).unwrap();
    check::fill_uniform(&stream, &mut x0, seed).unwrap();
    let weights: Vec<CudaSlice<bf16>> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut w = stream.alloc_zeros::<bf16>((s.n * s.k) as usize).unwrap();
            check::fill_uniform(&stream, &mut w, seed + 1 + i as u64).unwrap();
            w
        })
        .collect();
    let mut bufs = [stream.alloc_zeros::<bf16>(mu * widest).unwrap(), stream.alloc_zeros::<bf16>(mu * widest).unwrap()];
    // Step i reads x0 (i = 0) or bufs[(i - 1) % 2] and writes bufs[i % 2].
    let run_step = |bufs: &mut [CudaSlice<bf16>; 2], i: usize, opts: GemmOptions, ws: Option<&mut GemmWorkspace>| {
        let (lo, hi) = bufs.split_at_mut(1);
        let (out, input): (&mut CudaSlice<bf16>, &CudaSlice<bf16>) = match i {
            0 => (&mut lo[0], &x0),
            _ if i.is_multiple_of(2) => (&mut lo[0], &hi[0]),
            _ => (&mut hi[0], &lo[0]),
        };
        match ws {
            Some(w) => {
                mkernel::gemm_with_workspace(&stream, input, &weights[i], out, steps[i], opts, w).unwrap();
            }
            None => {
                mkernel::gemm(&stream, input, &weights[i], out, steps[i], opts).unwrap();
            }
        }
    };
    let out_of = |bufs: &[CudaSlice<bf16>; 2], i: usize| -> Vec<bf16> {
        let v = stream.clone_dtoh(&bufs[i % 2]).unwrap();
        v[..mu * steps[i].n as usize].to_vec()
    };
    let poison_both = |bufs: &mut [CudaSlice<bf16>; 2]| {
        for b in bufs.iter_mut() {
            check::poison(&stream, b).unwrap();
        }
    };
    // Serialized, one step at a time, each against its reference.
    poison_both(&mut bufs);
    let serial = GemmOptions { dependent_launch: false, ..Default::default() };
    let mut want_bits: Vec<Vec<bf16>> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        run_step(&mut bufs, i, serial, None);
        stream.synchronize().unwrap();
        let input = if i == 0 { &x0 } else { &bufs[(i - 1) % 2] };
        let mut reference = stream.alloc_zeros::<f32>(mu * s.n as usize).unwrap();
        blas.gemm_f32_out(input, &weights[i], &mut reference, *s).unwrap();
        let got = out_of(&bufs, i);
        let cmp = check::compare(&got, &stream.clone_dtoh(&reference).unwrap(), None, s.n as usize, s.k as usize);
        assert!(cmp.passed(), "serialized step {i} {s:?}: {cmp} (seed {seed:#x})");
        want_bits.push(got);
    }
    let same = |x: &[bf16], y: &[bf16]| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
    let last = steps.len() - 1;
    // Back to back: the whole chain enqueued, nothing between its calls; both buffers
    // hold the last two steps' outputs afterwards.
    for rep in 0..10 {
        poison_both(&mut bufs);
        for i in 0..steps.len() {
            run_step(&mut bufs, i, GemmOptions::default(), None);
        }
        for i in [last - 1, last] {
            assert!(same(&out_of(&bufs, i), &want_bits[i]), "back to back, rep {rep}: step {i} {:?} differs from the serialized chain (seed {seed:#x})", steps[i]);
        }
    }
    // Captured: the chain's launches become graph nodes with programmatic edges.
    let mut ws = GemmWorkspace::new(&stream).unwrap();
    stream.synchronize().unwrap();
    stream.begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    for i in 0..steps.len() {
        run_step(&mut bufs, i, GemmOptions::default(), Some(&mut ws));
    }
    let graph = stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH).unwrap().unwrap();
    for rep in 0..3 {
        poison_both(&mut bufs);
        stream.synchronize().unwrap();
        graph.launch().unwrap();
        stream.synchronize().unwrap();
        for i in [last - 1, last] {
            assert!(same(&out_of(&bufs, i), &want_bits[i]), "graph replay {rep}: step {i} {:?} differs from the serialized chain (seed {seed:#x})", steps[i]);
        }
    }
    mkernel::release_gemm_workspaces();
    eprintln!("ok: M = {m}, {} steps back to back x10 and in a graph x3, the serialized chain's bits", steps.len());
}

/// A split last wave's refusals, each naming its argument and rule.
#[test]
fn split_last_wave_refuses_what_it_cannot_do() {
    if gpu_or_skip("split_last_wave_refuses_what_it_cannot_do", 1).is_none() {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut ws = GemmWorkspace::new(&stream).unwrap();
    let a = stream.alloc_zeros::<bf16>(256 * 1024).unwrap();
    let b = stream.alloc_zeros::<bf16>(1024 * 1024).unwrap();
    let mut c = stream.alloc_zeros::<bf16>(256 * 1024).unwrap();
    let s = GemmShape { m: 256, n: 1024, k: 1024 };
    let split = |tile: TileConfig, n: u32| GemmOptions { tile: Some(tile), split_last_wave: LastWaveSplit::Slices(n), ..Default::default() };
    let cases: Vec<(GemmOptions, GemmShape, &str)> = vec![
        (split(TileConfig::NARROW, 2), s, "TMA-store tiles without clusters"),
        (split(TileConfig::WIDE_TMA_STORE_C2, 2), s, "TMA-store tiles without clusters"),
        (split(TileConfig::cols_tma_store_n2(64), 2), s, "TMA-store tiles without clusters"),
        (split(TileConfig::NARROW_TMA_STORE, 17), s, "exceed the 16 K blocks"),
        (split(TileConfig::NARROW_TMA_STORE, 0), s, "at least 1 slice"),
    ];
    for (opts, shape, rule) in cases {
        let e = mkernel::gemm_with_workspace(&stream, &a, &b, &mut c, shape, opts, &mut ws).unwrap_err().to_string();
        assert!(e.contains("split_last_wave") && e.contains(rule), "{opts:?}: {e}");
    }
    // Without a workspace, and with another stream's.
    let e = mkernel::gemm(&stream, &a, &b, &mut c, s, split(TileConfig::NARROW_TMA_STORE, 2)).unwrap_err().to_string();
    assert!(e.contains("split_last_wave") && e.contains("workspace"), "{e}");
    let other = ctx.new_stream().unwrap();
    let e = mkernel::gemm_with_workspace(&other, &a, &b, &mut c, s, split(TileConfig::NARROW_TMA_STORE, 2), &mut ws).unwrap_err().to_string();
    assert!(e.contains("workspace") && e.contains("another stream"), "{e}");
    // The per-thread default stream is a different stream on each thread: no workspace.
    let e = GemmWorkspace::new(&ctx.per_thread_stream()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("`stream`") && e.contains("per-thread"), "{e}");
    // The default stream by its handle: cudarc's default_stream() makes a new Arc each time.
    let mut on_default = GemmWorkspace::new(&ctx.default_stream()).unwrap();
    let ran = mkernel::gemm_with_workspace(&ctx.default_stream(), &a, &b, &mut c, s, split(TileConfig::NARROW_TMA_STORE, 2), &mut on_default).unwrap();
    assert_eq!(ran.split_slices, 2, "{ran:?}");
    // A workspace too small for the slots.
    let mut small = GemmWorkspace::with_bytes(&stream, 1 << 16).unwrap();
    let e = mkernel::gemm_with_workspace(&stream, &a, &b, &mut c, s, split(TileConfig::NARROW_TMA_STORE, 4), &mut small).unwrap_err().to_string();
    assert!(e.contains("split_last_wave") && e.contains("exceed the workspace"), "{e}");
    // Nothing left over: whole waves (one tile per SM on this GPU).
    let sms = sm_count(&ctx);
    let whole = GemmShape { m: 128, n: 128 * sms, k: 1024 };
    let bw = stream.alloc_zeros::<bf16>(whole.n as usize * 1024).unwrap();
    let mut cw = stream.alloc_zeros::<bf16>(128 * whole.n as usize).unwrap();
    let aw = stream.alloc_zeros::<bf16>(128 * 1024).unwrap();
    let e = mkernel::gemm_with_workspace(&stream, &aw, &bw, &mut cw, whole, split(TileConfig::NARROW_TMA_STORE, 2), &mut ws).unwrap_err().to_string();
    assert!(e.contains("split_last_wave") && e.contains("nothing to split"), "{e}");
}
