//! Property: whatever the shape and SM count, the plain GEMM's default tile
//! (`TileConfig::choose_for`, five rules stacked: small M, misaligned K, mid M, columns,
//! clusters) is a configuration the plain GEMM launches for that output, and its grid and
//! shared memory are valid. (A rule that returned a tile outside the catalog, or a TMA-store
//! tile for N % 8 != 0, would make `mkernel::gemm` refuse its own default.)

use mkernel_kernels::gemm::{Epilogue, GemmShape, TileConfig};
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
        prop_assert!(grid >= 1 && grid % t.cluster_m.max(1) == 0, "{t}: grid {grid}");
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
