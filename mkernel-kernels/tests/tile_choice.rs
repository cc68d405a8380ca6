//! Property: whatever the shape and SM count, the plain GEMM's default tile
//! (`TileConfig::choose_for`, rules stacked: small M, misaligned K, mid M, columns,
//! clusters) is a configuration the plain GEMM launches for that output, and its grid and
//! shared memory are valid. (A rule that returned a tile outside the catalog, or a TMA-store
//! tile for N % 8 != 0, would make `mkernel::gemm` refuse its own default.)

use mkernel_kernels::gemm::{Epilogue, GemmShape, SplitLaunch, SplitWorkspace, TileConfig};
use proptest::prelude::*;

fn shape() -> impl Strategy<Value = GemmShape> {
    // Small and odd sizes often, large ones sometimes (the rules switch at 64, 128, 256,
    // 1024, 8192 rows and at N / 128 parities).
    let dim = prop_oneof![1u32..=300, 1u32..=20_000, Just(2049u32), Just(8192u32), (1u32..=64).prop_map(|i| 128 * i)];
    (dim.clone(), dim.clone(), dim).prop_map(|(m, n, k)| GemmShape { m, n, k })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]
    #[test]
    fn the_default_tile_is_launchable(s in shape(), sm_count in prop_oneof![Just(132u32), Just(114u32), Just(66u32), 1u32..=200]) {
        let t = TileConfig::choose_for(s, sm_count);
        prop_assert!(t.validate_for_gemm().is_ok(), "{s:?} on {sm_count} SMs: {t:?} is not in the plain GEMM's catalog");
        prop_assert!(t.check_output(s.n).is_ok(), "{s:?}: {t} cannot store N={}", s.n);
        prop_assert!(t.smem_bytes() <= 232_448, "{t}");
        let tiles = t.tiles(s.m, s.n);
        prop_assert!(tiles > 0);
        let grid = t.grid_for(tiles, sm_count);
        prop_assert!(grid >= 1 && grid.is_multiple_of(t.cluster_size()), "{t}: grid {grid}");
        // Clusters along N only as the cluster-N rule states them: the 128 x 128 tile, long
        // K, M >= 1024, column blocks that pair up, one wave; and never a tile the split
        // rules start from.
        if t.cluster_n > 1 {
            prop_assert_eq!(t, TileConfig::NARROW_TMA_STORE_N2, "{:?}", s);
            prop_assert!(s.m >= 1024 && s.k >= 7168 && s.k % 64 == 0 && s.n.div_ceil(128) % 2 == 0, "{:?}: {}", s, t);
            prop_assert!(t.tiles(s.m, s.n) <= sm_count as u64 && t.tiles(s.m, s.n) * 2 > sm_count as u64, "{:?} on {}: {}", s, sm_count, t);
            prop_assert_eq!(TileConfig::choose_before_cluster_n(s, sm_count), TileConfig::NARROW_TMA_STORE);
        }
        // The 128 x 128 tile clustered at two row blocks only as its rule states it: M =
        // 193-256, K >= 7168, one wave more than two thirds full, in place of the unclustered tile.
        if t == TileConfig::NARROW_TMA_STORE_C2 && s.m <= 256 {
            prop_assert!(s.m >= 193 && s.k >= 7168 && s.k % 64 == 0 && s.n % 8 == 0, "{:?}: {}", s, t);
            prop_assert!(t.tiles(s.m, s.n) <= sm_count as u64 && t.tiles(s.m, s.n) * 3 > sm_count as u64 * 2, "{:?} on {}: {}", s, sm_count, t);
            prop_assert_eq!(TileConfig::choose_before_cluster_n(s, sm_count), TileConfig::NARROW_TMA_STORE);
        }
        prop_assert_eq!(TileConfig::choose_before_cluster_n(s, sm_count).cluster_n, 1);
        prop_assert_eq!(TileConfig::choose_for_split(s, sm_count).cluster_n, 1);
        if t.epilogue == Epilogue::TmaStore {
            prop_assert_eq!(s.n % 8, 0);
        }
        if t.cluster_m > 1 && s.k % 64 == 0 {
            // K % 64 == 0 takes clusters only where the pairs come out even (no padding tile)...
            let blocks = if t.swap_ab { s.n.div_ceil(t.bm) } else { s.m.div_ceil(t.bm) };
            prop_assert_eq!(blocks % 2, 0, "{:?}: {}", s, t);
            // ... and only in the measured range (K >= 4096).
            prop_assert!(s.k >= 4096, "{:?}: {}", s, t);
        }
    }
}

/// The small-N rule's ground (N <= 168, K often a multiple of 64) on any SM count, M up to
/// the largest the GEMM takes.
fn small_n_shape() -> impl Strategy<Value = GemmShape> {
    let m = prop_oneof![1u32..=300, 1u32..=70_000, Just(mkernel_kernels::gemm::MAX_DIM as u32)];
    let n = prop_oneof![(1u32..=21).prop_map(|i| 8 * i), 1u32..=170];
    let k = prop_oneof![(1u32..=256).prop_map(|i| 64 * i), (1u32..=2500).prop_map(|i| 8 * i)];
    (m, n, k).prop_map(|(m, n, k)| GemmShape { m, n, k })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]
    /// Property: there, the default tile (the small-N rule's where it applies: always for N
    /// <= 64) and the split rules' pick are launchable, and the workspace the rules ask for
    /// makes them pick the same split, which the launch check accepts (helper-49).
    #[test]
    fn small_n_defaults_and_their_splits_are_launchable(s in small_n_shape(), sm_count in prop_oneof![Just(0u32), Just(1u32), Just(2u32), Just(132u32), Just(u32::MAX), 1u32..=300]) {
        prop_assume!(s.validate_dims().is_ok());
        let t = TileConfig::choose_for(s, sm_count);
        prop_assert!(t.validate_for_gemm().is_ok() && t.check_output(s.n).is_ok(), "{:?} on {}: {}", s, sm_count, t);
        if let Some(small) = TileConfig::small_n_for(s, sm_count) {
            prop_assert!(small.swap_ab == (s.n > 32) && small.can_split_last_wave(), "{}", small);
            if s.n <= 64 {
                prop_assert_eq!(t, small);
            }
        }
        if let Some((bytes, counts)) = TileConfig::split_rule_workspace(s, sm_count) {
            let pick = TileConfig::split_rule_for(s, sm_count, bytes, counts);
            prop_assert_eq!(pick, TileConfig::split_rule_for(s, sm_count, u64::MAX, u64::MAX));
            let Some((pt, slices)) = pick else { return Err(TestCaseError::fail("no pick within its own workspace")) };
            prop_assert!(pt.validate_for_gemm().is_ok() && pt.check_output(s.n).is_ok());
            let grid = pt.split_grid(pt.tiles(s.m, s.n), slices, sm_count);
            let workspace = SplitWorkspace { scratch: 1 << 20, scratch_bytes: bytes, counts: 1 << 30, counts_len: counts };
            prop_assert!(SplitLaunch { slices, workspace }.check(pt, s, grid).is_ok(), "{:?} on {}: {} in {}", s, sm_count, pt, slices);
        }
    }
}

/// Broad shapes for the split rules: M and N small, mid and huge, K a multiple of 8 or of
/// 64 across the rules' thresholds (4096, 7168, 9216), the few-tiles rule's ground often.
fn split_shape() -> impl Strategy<Value = GemmShape> {
    let big = mkernel_kernels::gemm::MAX_DIM as u32;
    let m = prop_oneof![3 => 1u32..=1100, 1 => 1u32..=70_000, 1 => Just(big), 1 => Just(big - 1), 1 => Just(1u32 << 30), 1 => (1u32..=64).prop_map(|i| 64 * i + 1)];
    let n = prop_oneof![3 => (1u32..=256).prop_map(|i| 8 * i), 1 => 1u32..=20_000, 1 => Just(big), 1 => (1u32..=32).prop_map(|i| 64 * i)];
    let k = prop_oneof![1 => (1u32..=1093).prop_map(|i| 64 * i), 1 => (1u32..=8750).prop_map(|i| 8 * i), 2 => (64u32..=224).prop_map(|i| 64 * i)];
    // (not both huge: at most 2^32 output tiles)
    (m, n, k).prop_map(|(m, n, k)| GemmShape { m, n: if m > 70_000 && n > 20_000 { n % 20_000 + 1 } else { n }, k })
}

fn split_sms() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32), Just(1u32), Just(2u32), Just(3u32), Just(66u32), Just(78u32), Just(114u32), Just(132u32),
        Just(144u32), Just(u32::MAX), 1u32..=300
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]
    /// Property: the split rules' pick (the few-tiles rule's 64 x 64 swapped tile among them; a pick of 1 slice
    /// needs no workspace and is picked without one)
    /// is launchable on the workspace `split_rule_workspace` asks for, which makes them pick
    /// the same; on any smaller workspace their pick (if any) is launchable on it; and the
    /// few-tiles rule's smaller tile holds its stated conditions. Nothing panics.
    #[test]
    fn split_rule_picks_are_launchable(s in split_shape(), sm_count in split_sms(), shrink in 0u64..=64, counts_cut in 0u64..=64) {
        prop_assume!(s.validate_dims().is_ok());
        let t = TileConfig::choose_for(s, sm_count);
        prop_assert!(t.validate_for_gemm().is_ok() && t.check_output(s.n).is_ok(), "{:?} on {}: {}", s, sm_count, t);
        let d = TileConfig::choose_for_split(s, sm_count);
        // (the rule asks for the default's slices: it applies only where the default splits)
        let smaller = d.few_tiles_slices(s, sm_count).and_then(|ds| TileConfig::few_tiles_smaller_instead_of(d, ds, s, sm_count).map(|p| (p, ds)));
        if let Some(((small, sl), ds)) = smaller {
            prop_assert_eq!(small, TileConfig::swapped_tma_store(64));
            prop_assert!(s.m >= 65 && s.k % 64 == 0 && (4096..=28672).contains(&s.k) && (s.m as u64 + s.n as u64) * s.k as u64 * 2 <= 32 << 20, "{:?}", s);
            prop_assert!(sm_count >= 2 && small.tiles(s.m, s.n) <= (sm_count / 2) as u64, "{:?} on {}", s, sm_count);
            prop_assert!(small.tiles(s.m, s.n) * 4096 <= d.tiles(s.m, s.n) * (d.bm * d.bn) as u64, "{:?}: {}", s, d);
            prop_assert!(d.tiles(s.m, s.n) * ds as u64 * 8 <= sm_count as u64 * 7, "{:?} on {}: {} in {}", s, sm_count, d, ds);
            prop_assert!(sl >= 2 && small.tiles(s.m, s.n) * sl as u64 <= sm_count as u64);
        }
        let unbounded = TileConfig::split_rule_for(s, sm_count, u64::MAX, u64::MAX);
        let need = TileConfig::split_rule_workspace(s, sm_count);
        // (a pick of 1 slice, a tile unsplit, needs no workspace, and the rules pick it with none)
        prop_assert_eq!(unbounded.is_some_and(|(_, sl)| sl >= 2), need.is_some());
        if let Some((t, 1)) = unbounded {
            prop_assert_eq!(TileConfig::split_rule_for(s, sm_count, 0, 0), Some((t, 1)), "{:?} on {}", s, sm_count);
            prop_assert!(t.validate_for_gemm().is_ok() && t.check_output(s.n).is_ok() && t.tiles(s.m, s.n) <= sm_count as u64, "{:?} on {}: {}", s, sm_count, t);
        }
        let Some((bytes, counts)) = need else { return Ok(()) };
        let pick = TileConfig::split_rule_for(s, sm_count, bytes, counts);
        prop_assert_eq!(pick, unbounded, "{:?} on {}: {} bytes, {} counts", s, sm_count, bytes, counts);
        // (and any larger workspace too)
        prop_assert_eq!(TileConfig::split_rule_for(s, sm_count, bytes.saturating_add(shrink << 20), counts + counts_cut), unbounded);
        let launchable = |pick: Option<(TileConfig, u32)>, bytes: u64, counts: u64| -> Result<(), TestCaseError> {
            let Some((pt, slices)) = pick else { return Ok(()) };
            prop_assert!(slices >= 1, "{:?} on {}: {} in {}", s, sm_count, pt, slices);
            prop_assert!(pt.validate_for_gemm().is_ok() && pt.check_output(s.n).is_ok(), "{:?} on {}: {}", s, sm_count, pt);
            prop_assert!(pt.smem_bytes() + mkernel_kernels::gemm::SPLIT_EXTRA_SMEM <= 232_448, "{}", pt);
            let grid = pt.split_grid(pt.tiles(s.m, s.n), slices, sm_count);
            let workspace = SplitWorkspace { scratch: 1 << 20, scratch_bytes: bytes, counts: 1 << 30, counts_len: counts };
            let r = SplitLaunch { slices, workspace }.check(pt, s, grid);
            prop_assert!(r.is_ok(), "{:?} on {}: {} in {} (grid {}): {:?}", s, sm_count, pt, slices, grid, r);
            Ok(())
        };
        launchable(pick, bytes, counts)?;
        // A smaller workspace (a caller's): whatever the rules pick fits it.
        let (b2, c2) = (bytes / (shrink + 1), counts.saturating_sub(counts_cut));
        launchable(TileConfig::split_rule_for(s, sm_count, b2, c2), b2, c2)?;
    }
}
