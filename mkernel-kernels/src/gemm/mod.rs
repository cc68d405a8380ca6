//! The plain GEMM operator: C\[M,N\] = A\[M,K\] * B\[N,K\]^T on one GPU.
//!
//! Layouts (bf16, row-major, contiguous):
//! - `a`: \[M, K\] (K contiguous),
//! - `b`: \[N, K\] (K contiguous: the layout of a PyTorch `nn.Linear` weight, i.e. B^T
//!   of a [K, N] matrix; both operands K-major is what TMA + wgmma read natively),
//! - `c`: \[M, N\] (N contiguous), fp32 accumulation rounded once to bf16.
//!
//! Any M, N >= 1 and K >= 8 with K % 8 == 0 work: partial tiles are zero-filled by TMA
//! on load and masked on store. K % 8 != 0 is refused because TMA needs every row
//! stride to be a multiple of 16 bytes.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, LaunchOrder, Runtime, Tensor2d};
use crate::error::{invalid, Result};
use crate::jit::KernelSource;
use crate::params::GemmParams;

mod rules;
pub use rules::*;

/// JIT constants of the GEMM engine (`mk::GemmConfig<BM, BN, BK, STAGES>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileConfig {
    /// Rows of C per tile (two consumer warpgroups of 64).
    pub bm: u32,
    /// Columns of C per tile (the wgmma N).
    pub bn: u32,
    /// K per pipeline stage (one 128-byte swizzle row).
    pub bk: u32,
    /// Shared-memory pipeline stages.
    pub stages: u32,
    /// How finished tiles leave the SM.
    pub epilogue: Epilogue,
    /// CTAs per cluster along M (1 or 2): with 2, the two CTAs of a cluster compute
    /// vertically adjacent tiles together and each B tile is TMA-multicast to both from
    /// one read of L2 (within the GPU; no NVLink multicast). The grid is then even, and
    /// an odd number of row blocks gets one padding tile per column block.
    pub cluster_m: u32,
    /// CTAs per cluster along N (1 or 2; with 2, `cluster_m` is 1 and the operands are not
    /// swapped): the two CTAs of a cluster compute horizontally adjacent tiles of one row
    /// block and each A tile is TMA-multicast to both from one read of L2 (within the
    /// GPU; no NVLink multicast). The grid is then even, and an odd number of column
    /// blocks gets one padding tile per row block. Plain GEMM only, unsplit:
    /// [`Self::cols_tma_store_n2`] (opt-in), [`Self::NARROW_TMA_STORE_N2`] (the default's
    /// last step where it applies: [`Self::cluster_n_instead_of`]).
    pub cluster_n: u32,
    /// Swapped operands, for small and mid M: the kernel computes C^T = B A^T, so a tile
    /// is `bm` = 64 or 128 rows of B (columns of C) by `bn` rows of A (rows of C), `bn` any
    /// multiple of 8 up to 256; one tile then holds every row of a skinny A (M=129: 64 x
    /// 136 tiles), or a height fitted to M (M=2049: 128 x 208), instead of padding M to
    /// 64 or 128 rows. Registers epilogue (a transposed store; with `cluster_m` = 2 the
    /// pair shares the A tile by multicast) or TMA-store (staged transposed; these the
    /// fused kernel's epilogue path takes too). See [`Self::swapped`],
    /// [`Self::swapped_tma_store`], [`Self::swapped_wide`].
    pub swap_ab: bool,
}

/// How the GEMM engine writes a finished tile (`mk::Epilogue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Consumers store their accumulator fragments straight to global memory (any N).
    Registers,
    /// Consumers stage the tile in shared memory and a storer warp TMA-stores it while
    /// they start the next tile (needs N % 8 == 0; costs a pipeline stage of shared
    /// memory).
    TmaStore,
}

impl std::fmt::Display for TileConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tile {}x{}x{}, {} stages", self.bm, self.bn, self.bk, self.stages)?;
        if self.epilogue == Epilogue::TmaStore {
            write!(f, ", TMA-store epilogue")?;
        }
        if self.cluster_m > 1 {
            // (with swapped operands the shared tile is A's)
            write!(f, ", {}-CTA clusters ({} multicast)", self.cluster_m, if self.swap_ab { "A" } else { "B" })?;
        }
        if self.cluster_n > 1 {
            write!(f, ", {}-CTA clusters along N (A multicast)", self.cluster_n)?;
        }
        if self.swap_ab {
            write!(f, ", swapped operands (C^T = B A^T)")?;
        }
        Ok(())
    }
}

/// The fused kernel's tiles beyond [`TileConfig::ALL`] ([`TileConfig::fused_catalog`]), as
/// the refusals of [`TileConfig::validate`] and of the bench's tile arguments name them.
pub const FUSED_OTHER_TILES: &str = "a tile of the fused kernel's epilogue path (2 ranks): swapped-operand TMA-store (swap-ab-64xR-tma-store, R = 8, 16, ..., 256; swap-ab-128xR-tma-store, R = 128, 136, ..., 256; swap-ab-128xR-tma-store-c2, R = 128, 144, ..., 256) or column-fitted TMA-store (cols-128xC-tma-store, C = 136, 144, ..., 248; cols-128xC-tma-store-c2, C = 144, 160, ..., 240)";

impl TileConfig {
    /// 128 x 256 tiles, 4 stages: the large-problem configuration.
    pub const WIDE: Self = Self { bm: 128, bn: 256, bk: 64, stages: 4, epilogue: Epilogue::Registers, cluster_m: 1, cluster_n: 1, swap_ab: false };
    /// 128 x 128 tiles, 6 stages: more tiles for small problems.
    pub const NARROW: Self = Self { bm: 128, bn: 128, bk: 64, stages: 6, epilogue: Epilogue::Registers, cluster_m: 1, cluster_n: 1, swap_ab: false };
    /// [`Self::WIDE`] with the TMA-store epilogue (3 stages + a 64 KiB staging tile).
    pub const WIDE_TMA_STORE: Self = Self { bm: 128, bn: 256, bk: 64, stages: 3, epilogue: Epilogue::TmaStore, cluster_m: 1, cluster_n: 1, swap_ab: false };
    /// [`Self::NARROW`] with the TMA-store epilogue (5 stages + a 32 KiB staging tile).
    pub const NARROW_TMA_STORE: Self = Self { bm: 128, bn: 128, bk: 64, stages: 5, epilogue: Epilogue::TmaStore, cluster_m: 1, cluster_n: 1, swap_ab: false };
    /// 64 x 256 tiles (one consumer warpgroup), 5 stages: less padding and more tiles
    /// for small M (M=129 is 3 row blocks instead of 2 half-empty ones). Opt-in, not yet
    /// measured on a GPU (bench/NOTES.md 4.5).
    pub const M64_WIDE: Self = Self { bm: 64, bn: 256, bk: 64, stages: 5, epilogue: Epilogue::Registers, cluster_m: 1, cluster_n: 1, swap_ab: false };
    /// [`Self::M64_WIDE`] with the TMA-store epilogue (4 stages + a 32 KiB staging tile).
    pub const M64_WIDE_TMA_STORE: Self = Self { bm: 64, bn: 256, bk: 64, stages: 4, epilogue: Epilogue::TmaStore, cluster_m: 1, cluster_n: 1, swap_ab: false };
    /// 64 x 128 tiles (one consumer warpgroup), 8 stages, TMA-store epilogue: twice the
    /// tiles of [`Self::M64_WIDE_TMA_STORE`], for small M where 64 x 256 tiles fill less
    /// than one wave (M=129 on 132 SMs: 96 tiles; 192 of these, whose last wave the fused
    /// epilogue path can split). Opt-in: slower than 64 x 256 tiles on the H200 (fused
    /// M=129 0.0617 against 0.0586 ms, plain 0.0446 against 0.034; bench/NOTES.md 14.1).
    pub const M64_NARROW_TMA_STORE: Self = Self { bm: 64, bn: 128, bk: 64, stages: 8, epilogue: Epilogue::TmaStore, cluster_m: 1, cluster_n: 1, swap_ab: false };
    /// [`Self::WIDE_TMA_STORE`] in 2-CTA clusters sharing B (TMA multicast). The plain
    /// GEMM's default when K % 64 != 0 ([`Self::choose_for`]); otherwise opt-in (within
    /// +-2% there, bench/NOTES.md 13.2).
    pub const WIDE_TMA_STORE_C2: Self = Self { cluster_m: 2, ..Self::WIDE_TMA_STORE };
    /// [`Self::NARROW_TMA_STORE`] in 2-CTA clusters sharing B. The plain GEMM's default's last
    /// step at two row blocks with long K ([`Self::two_row_blocks_c2_instead_of`], runs
    /// 375-380); elsewhere opt-in (NOTES 13.2).
    pub const NARROW_TMA_STORE_C2: Self = Self { cluster_m: 2, ..Self::NARROW_TMA_STORE };
    /// [`Self::M64_WIDE_TMA_STORE`] in 2-CTA clusters sharing B. The plain GEMM's
    /// default in place of that tile when K % 64 != 0 and M > 64 ([`Self::choose_for`]).
    pub const M64_WIDE_TMA_STORE_C2: Self = Self { cluster_m: 2, ..Self::M64_WIDE_TMA_STORE };
    /// [`Self::NARROW_TMA_STORE`] in 2-CTA clusters along N sharing A (TMA multicast),
    /// `narrow-tma-store-n2`. Plain GEMM only; [`Self::choose_for`]'s last step where one wave
    /// of 128 x 128 tiles has long K ([`Self::cluster_n_instead_of`], run 299).
    pub const NARROW_TMA_STORE_N2: Self = Self { cluster_n: 2, ..Self::NARROW_TMA_STORE };
    /// Every configuration the catalog instantiates.
    pub const ALL: [Self; 10] = [
        Self::WIDE,
        Self::NARROW,
        Self::WIDE_TMA_STORE,
        Self::NARROW_TMA_STORE,
        Self::M64_WIDE,
        Self::M64_WIDE_TMA_STORE,
        Self::WIDE_TMA_STORE_C2,
        Self::NARROW_TMA_STORE_C2,
        Self::M64_WIDE_TMA_STORE_C2,
        Self::M64_NARROW_TMA_STORE,
    ];

    /// The swapped-operand tile (see [`Self::swap_ab`]) holding `rows` rows of A: 64 rows
    /// of B by `rows` rows of A, as many pipeline stages as fit shared memory (at most 8).
    /// `rows` must be a multiple of 8 in 8..=256; other values give a configuration that
    /// [`Self::validate_for_gemm`] refuses.
    pub const fn swapped(rows: u32) -> Self {
        Self::swapped_tile(64, rows, Epilogue::Registers)
    }

    /// A swapped-operand tile of `bm` rows of B by `rows` rows of A ([`Self::fitted_stages`]).
    const fn swapped_tile(bm: u32, rows: u32, epilogue: Epilogue) -> Self {
        Self::fitted_stages(bm, rows, epilogue, true)
    }

    /// An unclustered BM x BN tile with as many stages as fit next to the staging tile
    /// (TMA store; with the fused epilogue path's 16 bytes), at most 8. Saturating: an
    /// out-of-range `bn` must reach validate_for_gemm's refusal.
    const fn fitted_stages(bm: u32, bn: u32, epilogue: Epilogue, swap_ab: bool) -> Self {
        let stage = (bm * 64 * 2).saturating_add(bn.saturating_mul(64 * 2));
        let staging = if matches!(epilogue, Epilogue::TmaStore) { bn.saturating_mul(bm * 2).saturating_add(16) } else { 0 };
        let fit = (232_448u32 - 1024).saturating_sub(staging) / stage.saturating_add(16);
        let stages = if fit > 8 { 8 } else { fit };
        Self { bm, bn, bk: 64, stages, epilogue, cluster_m: 1, cluster_n: 1, swap_ab }
    }

    /// A 128-row tile (operands not swapped) `cols` columns of C wide, `cols` a multiple of
    /// 8 in 136..=248 (the widths between the narrow and the wide tile) or in 8..=120, Registers
    /// epilogue, as many stages as fit (at most 8). Plain GEMM only. For N that 256-column
    /// tiles cut into a poor last wave: N=7168 at M=2048 makes 448 tiles of 128 x 256 on
    /// 132 SMs (3.4 waves: the fourth 39% full), and 656 of 128 x 176 (5.0 waves of 176
    /// columns: 880 against 1024).
    pub const fn cols(cols: u32) -> Self {
        Self::fitted_stages(128, cols, Epilogue::Registers, false)
    }

    /// [`Self::cols`] with the TMA-store epilogue: the tile staged as one unswizzled box
    /// (rows `cols` * 2 bytes apart; 192 columns as three swizzled 64-column boxes) and
    /// TMA-stored. N % 8 == 0. Plain GEMM only, but at 136-248 columns, which the fused
    /// kernel's epilogue path takes too ([`Self::fused_catalog`]).
    pub const fn cols_tma_store(cols: u32) -> Self {
        Self::fitted_stages(128, cols, Epilogue::TmaStore, false)
    }

    /// The 128-row TMA-store tile `cols` wide as the catalog names it: [`Self::NARROW_TMA_STORE`]
    /// at 128 columns, [`Self::WIDE_TMA_STORE`] at 256, else [`Self::cols_tma_store`].
    pub const fn rows128_tma_store(cols: u32) -> Self {
        match cols {
            128 => Self::NARROW_TMA_STORE,
            256 => Self::WIDE_TMA_STORE,
            c => Self::cols_tma_store(c),
        }
    }

    /// [`Self::cols_tma_store`] in 2-CTA clusters sharing the B tile by TMA multicast (the
    /// two CTAs of a cluster take neighbouring 128-row blocks of A; each loads half of B's
    /// `cols` rows in whole 8-row swizzle atoms ([`Self::shared_rows_per_cta`]): 136, 144, ...,
    /// 248, and 48, 64, ..., 112 and 72, 88, 104, 120 (where half of `cols` is not whole
    /// atoms the two shares overlap by 8 rows), of which 80-120 (and 176-224 above K = 14336)
    /// are defaults at two row blocks,
    /// [`Self::half_width_c2_instead_of`] and [`Self::one_wave_cols_c2_instead_of`]), as
    /// [`Self::WIDE_TMA_STORE_C2`] does for 256 columns.
    /// `cols-128xC-tma-store-c2`. Plain GEMM only, but at 144-240 columns, which the fused
    /// kernel's epilogue path takes too ([`Self::fused_catalog`]).
    pub const fn cols_tma_store_c2(cols: u32) -> Self {
        Self { cluster_m: 2, ..Self::cols_tma_store(cols) }
    }

    /// [`Self::cols_tma_store`] in 2-CTA clusters along N sharing the A tile by TMA
    /// multicast: the two CTAs of a cluster take neighbouring column blocks of one row
    /// block and each loads half of A's 128 rows (64 rows: whole 1024-byte swizzle atoms)
    /// and its own B tile, so A crosses from L2 once per pair instead of once per tile.
    /// `cols` a multiple of 16 in 48..=160 other than 128 (`cols_n2_widths`; 128
    /// is [`Self::NARROW_TMA_STORE_N2`]): the widths of the one-wave tiles at M = 384-2048,
    /// which cuBLAS runs as 80- and 96-column tiles in such clusters (CUPTI, run 275,
    /// bench/NOTES.md 34.2). `cols-128xC-tma-store-n2`. Opt-in, plain GEMM only, unsplit;
    /// other values give a configuration that [`Self::validate_for_gemm`] refuses.
    pub const fn cols_tma_store_n2(cols: u32) -> Self {
        Self { cluster_n: 2, ..Self::cols_tma_store(cols) }
    }

    /// The widths of [`Self::cols_tma_store_n2`]: 48, 64, ..., 160 less 128 (multiples of
    /// 16: the pairs of one-wave widths cuBLAS and our rules take, 80 and 96, and their
    /// neighbours on both sides).
    fn cols_n2_widths() -> impl Iterator<Item = u32> {
        (3..=10).map(|i| 16 * i).filter(|&c| c != 128)
    }

    /// The tiles in 2-CTA clusters along N: [`Self::cols_tma_store_n2`] of every width of
    /// [`Self::cols_n2_widths`], then [`Self::NARROW_TMA_STORE_N2`]. Plain GEMM only.
    fn all_cols_n2() -> impl Iterator<Item = Self> {
        Self::cols_n2_widths().map(Self::cols_tma_store_n2).chain([Self::NARROW_TMA_STORE_N2])
    }

    /// The column-fitted tiles of [`Self::cols`], one per width 136, 144, ..., 248 and
    /// 8, 16, ..., 120 ([`Self::narrow_cols_widths`]), with either epilogue, then the
    /// TMA-store ones of 136, 144, ..., 248 columns in 2-CTA clusters
    /// ([`Self::cols_tma_store_c2`]), then those of [`Self::narrow_c2_widths`].
    fn all_cols() -> impl Iterator<Item = Self> {
        let widths = || Self::cols_widths().chain(Self::narrow_cols_widths());
        let clustered = Self::cols_widths().filter(|&c| Self::cols_clusters(c)).chain(Self::narrow_c2_widths()).map(Self::cols_tma_store_c2);
        widths().map(Self::cols).chain(widths().map(Self::cols_tma_store)).chain(clustered)
    }

    /// The widths below 128 of [`Self::cols_tma_store_c2`]: 48, 64, ..., 112 (B's half a
    /// whole number of 8-row swizzle atoms), then 72, 88, 104 and 120 (each CTA loads
    /// half of B's rows rounded up to whole atoms, 40-64 rows, the two shares overlapping by
    /// 8: [`Self::shared_rows_per_cta`]; the one-wave widths at two row blocks, NOTES 47.3). Opt-in but 112, which
    /// [`Self::half_width_c2_instead_of`] takes in place of 224 columns at two row blocks
    /// (NOTES 46.6), and 80-120, which [`Self::one_wave_cols_c2_instead_of`] takes in place of
    /// the unclustered one-wave tile there from K = 6144 (NOTES 47.2-47.3). They halve the B
    /// tile's L2 reads of the one-wave widths; run 307 had them 25% slower than the
    /// unclustered tile at ragged M (1440 x 960 x 8192 on 96 columns 0.055 ms against 0.043)
    /// and runs 307-308 1.5-2.5% faster at M % 128 == 0 on 96 and 112 columns, mixed on 80
    /// (bench/NOTES.md 39.1).
    fn narrow_c2_widths() -> impl Iterator<Item = u32> {
        (3..=7).map(|i| 16 * i).chain([72, 88, 104, 120])
    }

    /// The rows of the shared operand tile (B's `bn` rows along M; with swapped operands A's)
    /// each CTA of a 2-CTA cluster along M loads and multicasts: `bn / cluster_m` rounded up
    /// to whole 8-row swizzle atoms (1024 bytes of bf16 at 64 columns), the box of its TMA
    /// descriptor; the last CTA's share ends at the tile's last row, so where `bn /
    /// cluster_m` is not whole atoms (`bn` = 72, 88, 104, 120) the shares overlap by 8 rows
    /// (`GemmConfig::kBRowsPerCta` in sm90_gemm.cuh). `bn` without clusters along M.
    pub fn shared_rows_per_cta(&self) -> u32 {
        (self.bn / self.cluster_m.max(1)).div_ceil(8) * 8
    }

    /// Whether the column-fitted TMA-store tile `cols` wide has a 2-CTA twin
    /// ([`Self::cols_tma_store_c2`]): every width of [`Self::cols_widths`], 136, 144, ...,
    /// 248 (at 136, 152, ..., 248 each CTA loads half of B rounded up to whole 8-row swizzle
    /// atoms, the halves overlapping by 8 rows: [`Self::shared_rows_per_cta`]; before, only the
    /// multiples of 16 had one).
    fn cols_clusters(cols: u32) -> bool {
        Self::cols_widths().any(|c| c == cols)
    }

    /// The widths below the narrow tile's, 8, 16, ..., 120: 128-row tiles that spread a
    /// single row block of A over more SMs (M <= 128 at N = 8704-9216 makes 68-72 tiles of
    /// 128 x 128 on 132 SMs; 116 of 128 x 80), and, at 8..=56, tiles whose wgmma n holds a
    /// small N without padding (MoE routers: N = 8 experts on the swapped tiles computes 64
    /// rows for 8, bench/NOTES.md 23.8). The default takes 8..=32 for N <= 32
    /// ([`Self::small_n_for`], run 203) and 72..=120 for M = 112-128
    /// ([`Self::narrow_cols_instead_of`]); [`Self::cols_fit`] does not rank them.
    fn narrow_cols_widths() -> impl Iterator<Item = u32> {
        (1..=15).map(|i| 8 * i)
    }

    /// The widths of the column-fitted tiles: 136, 144, ..., 248.
    fn cols_widths() -> impl Iterator<Item = u32> {
        (17..=31).map(|i| 8 * i)
    }

    /// The tile of [`Self::cols`] (or the wide 128 x 256 one) whose width best fits N on
    /// `sm_count` SMs: the fewest waves x columns per tile (ties to the wider tile); `None`
    /// where that is the wide tile, or for an empty shape. Where that is 136 columns and 128
    /// make as many tiles in one wave, the 128 x 128 tile ([`Self::NARROW`]; its TMA-store twin where
    /// the column rule takes it): run 301 (each kernel in its own process, three passes, ms,
    /// 128 x 136 -> 128 x 128 TMA store) 1088 x 1792 x 4096 0.0343-0.0365 -> 0.0316-0.0324,
    /// 1440 x 1280 x 4096 0.0327-0.0329 -> 0.0304-0.0319, 1824 x 1024 x 4096 0.0309-0.0324 ->
    /// 0.0299-0.0312, 2752 x 768 x 4096 0.0337-0.0340 -> 0.0281-0.0325, 1440 x 1280 x 2048
    /// 0.0180-0.0193 -> 0.0170-0.0177, 1088 x 1792 x 6144 0.0455-0.0468 -> 0.0412-0.0446;
    /// from K = 7168 its clustered twin beat 128 x 136 by 4-17% on 6 shapes (run 300,
    /// [`Self::cluster_n_instead_of`]). The rules after the column rule then see the 128 x 128
    /// tile and may replace it (the one-wave width, the 64 x 128 few-tiles tile, the split
    /// rules): run 302 (two passes, the 128 x 136 pick -> the rules' pick now) 1216 x 384 x
    /// 1024 0.0086 -> 0.0052 ms (64 x 128), 1216 x 1152 x 7168 0.0431-0.0436 -> 0.0348-0.0356
    /// (96), 1600 x 960 x 4096 0.0264-0.0266 -> 0.0217 (96), 1088 x 1016 x 2048 0.0146-0.0148
    /// -> 0.0116-0.0117 (80): faster on 19 of 27, by up to 40%; slower where -n2 had replaced
    /// 128 x 136 (1088 x 1280 x 8192 0.0449-0.0461 -> 0.0502-0.0528 on 96 columns; run 304
    /// alike) (bench/NOTES.md 38.2).
    pub fn cols_fit(m: u32, n: u32, sm_count: u32) -> Option<Self> {
        if m == 0 || n == 0 || sm_count == 0 {
            return None;
        }
        let best = Self::cols_widths().map(Self::cols).min_by_key(|t| t.fit_cost(m, n, sm_count))?;
        // (136 columns making as many tiles as 128 do, in one wave: the 128 x 128 tile, 3-17% faster)
        let tiles = best.tiles(m, n);
        let best = if best.bn == 136 && Self::NARROW.tiles(m, n) == tiles && tiles <= sm_count as u64 { Self::NARROW } else { best };
        (best.fit_cost(m, n, sm_count) < Self::WIDE.fit_cost(m, n, sm_count)).then_some(best)
    }

    /// The ranking of [`Self::cols_fit`] and [`Self::swapped_fit`] (lower fits better):
    /// waves of tiles on `sm_count` SMs times BN (the columns, or for a swapped tile the
    /// rows of A, each tile covers), ties to the larger BN. `sm_count` must not be 0.
    fn fit_cost(&self, m: u32, n: u32, sm_count: u32) -> (u64, u32) {
        (self.tiles(m, n).div_ceil(sm_count as u64).saturating_mul(self.bn as u64), u32::MAX - self.bn)
    }

    /// [`Self::swapped`] in 2-CTA clusters: the two CTAs take neighbouring 64-row blocks of
    /// B and each loads half of the shared A tile, multicast into both (within the GPU).
    /// `rows` must be a multiple of 16 up to 256 (each half a whole 8-row swizzle atom);
    /// other values give a configuration that [`Self::validate_for_gemm`] refuses.
    pub const fn swapped_c2(rows: u32) -> Self {
        let t = Self::swapped(rows);
        Self { bm: t.bm, bn: t.bn, bk: t.bk, stages: t.stages, epilogue: t.epilogue, cluster_m: 2, cluster_n: 1, swap_ab: true }
    }

    /// The swapped-operand tile that holds all M rows of A in one tile, for M <= 256
    /// (`None` above, or for a cluster size other than 1 or 2): M rounded up to 8, or
    /// with `cluster_m` = 2 to 16.
    pub fn swapped_for(m: u32, cluster_m: u32) -> Option<Self> {
        if !(1..=256).contains(&m) {
            return None;
        }
        match cluster_m {
            1 => Some(Self::swapped(m.div_ceil(8) * 8)),
            2 => Some(Self::swapped_c2(m.div_ceil(16) * 16)),
            _ => None,
        }
    }

    /// [`Self::swapped`] with the TMA-store epilogue: the fragment is staged transposed as
    /// one box of [`rows` rows of C x 64 columns] and TMA-stored. The tiles the fused
    /// kernel can take (its epilogue path, 2 ranks). `rows` as for [`Self::swapped`]; N %
    /// 8 == 0 (TMA store); the staging tile costs pipeline stages at the widest heights
    /// (256 rows: 4 instead of 5).
    pub const fn swapped_tma_store(rows: u32) -> Self {
        Self::swapped_tile(64, rows, Epilogue::TmaStore)
    }

    /// The swapped-operand TMA-store tiles, one per width 8, 16, ..., 256.
    fn all_swapped_tma_store() -> impl Iterator<Item = Self> {
        (1..=32).map(|i| Self::swapped_tma_store(8 * i))
    }

    /// Swapped-operand tiles of 128 rows of B (two consumer warpgroups of 64, as the
    /// 128-row tiles) by `rows` rows of A, for M above 256 where a tile height fitted to M
    /// wastes less than 64- or 128-row blocks do (cuBLAS's M=2049 kernel on the H200 has
    /// 176 rows of M per tile, bench/NOTES.md 15.2). `rows` a multiple of 8 in 128..=256;
    /// `epilogue` Registers (plain GEMM) or TmaStore (also the fused kernel's epilogue
    /// path: two staging boxes of [rows x 64]). As many stages as fit (at most 8). The
    /// plain GEMM also takes 64..=120 rows (M below 128 without padding rows,
    /// [`Self::swapped_short_instead_of`]).
    pub const fn swapped_wide(rows: u32, epilogue: Epilogue) -> Self {
        Self::swapped_tile(128, rows, epilogue)
    }

    /// [`Self::swapped_wide`] in 2-CTA clusters: the two CTAs take neighbouring 128-row
    /// blocks of B and each loads half of the shared A tile, multicast into both (within
    /// the GPU). `rows` a multiple of 16 in 128..=256; either epilogue. Plain GEMM (its
    /// mid-M default where the height, N and K allow, [`Self::clustered_instead_of`]); the
    /// fused kernel's epilogue path takes the TMA-store ones
    /// ([`crate::gemm_allreduce::FusedConfig::clustered_epilogue_tile`]).
    pub const fn swapped_wide_c2(rows: u32, epilogue: Epilogue) -> Self {
        Self { cluster_m: 2, ..Self::swapped_wide(rows, epilogue) }
    }

    /// The clustered 128-row swapped tiles with `epilogue`, one per height 128, 144, ..., 256.
    fn all_swapped_wide_c2(epilogue: Epilogue) -> impl Iterator<Item = Self> {
        (8..=16).map(move |i| Self::swapped_wide_c2(16 * i, epilogue))
    }

    /// The 128-row swapped tile ([`Self::swapped_wide`], Registers epilogue) whose height
    /// best fits M on `sm_count` SMs: of the heights 128..=256 (multiples of 8), the one
    /// with the fewest waves x rows per tile (the tensor-core work of the busiest SM, up
    /// to the padding of the last row block; ties to the taller tile), for 257 <= M <=
    /// 8192 (`None` otherwise). M=2049 x N=8192 on 132 SMs: 208 rows (10 row blocks, 640
    /// tiles, 5 waves; the wide 128 x 256 tiles make 544, 5 waves of 256 rows). The
    /// defaults take it where [`Self::fitted_instead_of`] says it wins (the plain GEMM's
    /// default not where a column tile beats it, [`Self::beats_swapped_fit`]).
    pub fn swapped_fit(m: u32, n: u32, sm_count: u32) -> Option<Self> {
        if !(257..=8192).contains(&m) || n == 0 || sm_count == 0 {
            return None;
        }
        Self::all_swapped_wide(Epilogue::Registers).min_by_key(|t| t.fit_cost(m, n, sm_count))
    }

    /// The 128-row swapped tiles of [`Self::swapped_wide`] with `epilogue`, one per height
    /// 128, 136, ..., 256 (the fused catalog's and the mid-M fit's; 64..=120 are
    /// [`Self::all_swapped_wide_short`]).
    fn all_swapped_wide(epilogue: Epilogue) -> impl Iterator<Item = Self> {
        (16..=32).map(move |i| Self::swapped_wide(8 * i, epilogue))
    }

    /// The 128-row swapped tiles of [`Self::swapped_wide`] holding 64..=120 rows of A (a
    /// multiple of 8), with `epilogue`: plain GEMM only (`swap-ab-128xR`); for M below 128
    /// they compute at most 7 padding rows where the 128 x 128 tile computes 128 - M. The
    /// default takes the Registers ones for M = 65-111 ([`Self::swapped_short_instead_of`]).
    fn all_swapped_wide_short(epilogue: Epilogue) -> impl Iterator<Item = Self> {
        (8..=15).map(move |i| Self::swapped_wide(8 * i, epilogue))
    }

    /// Every swapped-operand tile: each multiple of 8 up to 256 rows of A (the wgmma N
    /// values) alone and with the TMA-store epilogue, each multiple of 16 in 2-CTA
    /// clusters, the 128-row ones of 64..=256 rows with either epilogue, and those of
    /// 128..=256 rows in 2-CTA clusters.
    pub fn all_swapped() -> impl Iterator<Item = Self> {
        (1..=32)
            .map(|i| Self::swapped(8 * i))
            .chain((1..=16).map(|i| Self::swapped_c2(16 * i)))
            .chain(Self::all_swapped_tma_store())
            .chain(Self::all_swapped_wide(Epilogue::Registers))
            .chain(Self::all_swapped_wide(Epilogue::TmaStore))
            .chain(Self::all_swapped_wide_short(Epilogue::Registers))
            .chain(Self::all_swapped_wide_short(Epilogue::TmaStore))
            .chain(Self::all_swapped_wide_c2(Epilogue::Registers))
            .chain(Self::all_swapped_wide_c2(Epilogue::TmaStore))
    }

    /// Every configuration the fused GEMM + all-reduce can take: [`Self::ALL`], then the
    /// swapped-operand tiles with the TMA-store epilogue, unclustered and the 128-row ones
    /// in 2-CTA clusters, then the column-fitted TMA-store tiles of 136, 144, ..., 248
    /// columns ([`Self::cols_tma_store`]) and their 2-CTA twins ([`Self::cols_tma_store_c2`]
    /// where [`Self::cols_clusters`]); all but [`Self::ALL`] on the epilogue path only
    /// ([`Self::fused_epilogue_only`]).
    pub fn fused_catalog() -> impl Iterator<Item = Self> {
        Self::ALL
            .into_iter()
            .chain(Self::all_swapped_tma_store())
            .chain(Self::all_swapped_wide(Epilogue::TmaStore))
            .chain(Self::all_swapped_wide_c2(Epilogue::TmaStore))
            .chain(Self::fused_cols())
    }

    /// The column-fitted tiles of [`Self::fused_catalog`]: [`Self::cols_tma_store`] of every
    /// width of [`Self::cols_widths`], then [`Self::cols_tma_store_c2`] of those whose halves
    /// of B are whole swizzle atoms (multiples of 16: 144, 160, ..., 240).
    ///
    /// Why: on the fused kernel's epilogue path the last wave's output crosses the link
    /// after the GEMM; a width that makes more, smaller tiles for about the same work
    /// shrinks that burst (o-proj 2048 x 8192 x 4096: 128 x 256 tiles leave 116 tiles,
    /// 7.6 MB, ~22 us at the link's 350 GB/s; 144 columns leave 120 of 36 KiB, 4.4 MB, for
    /// 1.6% less work on the busiest SM; bench/NOTES.md 48). The plain GEMM at that shape
    /// (run 393, one H200): 144 columns in clusters 2.2% (~4.5 us) slower than the clustered
    /// 128 x 256 tile, so ~4.5 us net at best, and with a pair's ranks on one H200 (run 394)
    /// even; opt-in there. The default where the plain GEMM's column rule takes them and
    /// they pay for their last wave (`FusedConfig::epilogue_tile`: DeepSeek M=2048, 176
    /// columns in clusters, 6.7% faster in run 394; NOTES 52).
    fn fused_cols() -> impl Iterator<Item = Self> {
        Self::cols_widths().map(Self::cols_tma_store).chain(Self::cols_widths().filter(|&c| c % 16 == 0).map(Self::cols_tma_store_c2))
    }

    /// Whether this is one of the fused kernel's column-fitted tiles ([`Self::fused_cols`]),
    /// which it takes whole (no K-slices of a split last wave).
    pub fn is_fused_column_fitted(&self) -> bool {
        Self::fused_cols().any(|t| t == *self)
    }

    /// Whether the fused kernel takes this tile, if it has a kernel for it at all
    /// ([`Self::validate`]), on its epilogue path only (world size 2, no communication
    /// CTAs): a tile in clusters (no communication CTAs inside a cluster), a
    /// swapped-operand tile (its C region is not the row slices the other paths split), or
    /// a column-fitted one (its tile and staging are not the 128- or 256-column ones the
    /// other paths' communication CTAs were built and measured on); every tile but the
    /// unclustered ones of [`Self::ALL`].
    pub fn fused_epilogue_only(&self) -> bool {
        // (no swapped-operand tile is in ALL)
        self.cluster_m > 1 || !Self::ALL.contains(self)
    }

    /// Every configuration the plain GEMM can launch: [`Self::ALL`], then the
    /// swapped-operand tiles, then the column-fitted ones ([`Self::cols`]), then those in
    /// clusters along N ([`Self::cols_tma_store_n2`], opt-in).
    pub fn gemm_catalog() -> impl Iterator<Item = Self> {
        Self::ALL.into_iter().chain(Self::all_swapped()).chain(Self::all_cols()).chain(Self::all_cols_n2())
    }

    /// The configuration of the catalog with this one's tile shape, cluster and the
    /// TMA-store epilogue (itself if it has it, or if it is a clustered 64-row
    /// swapped-operand tile, which has no TMA-store variant).
    pub fn with_tma_store(self) -> Self {
        if self.cluster_n > 1 {
            // (every tile in clusters along N has the TMA store)
            return self;
        }
        if self.swap_ab {
            return match (self.cluster_m, self.bm) {
                (1, 128) => Self::swapped_wide(self.bn, Epilogue::TmaStore),
                (1, _) => Self::swapped_tma_store(self.bn),
                (2, 128) => Self::swapped_wide_c2(self.bn, Epilogue::TmaStore),
                _ => self,
            };
        }
        if Self::all_cols().any(|t| t == self) {
            // (a clustered one has the TMA store already)
            return if self.cluster_m > 1 { self } else { Self::cols_tma_store(self.bn) };
        }
        Self::ALL
            .into_iter()
            .find(|t| {
                t.epilogue == Epilogue::TmaStore
                    && t.bm == self.bm
                    && t.bn == self.bn
                    && t.bk == self.bk
                    && t.cluster_m == self.cluster_m
            })
            .unwrap_or(self)
    }

    /// The command-line name of a configuration of [`Self::gemm_catalog`].
    pub fn name(&self) -> String {
        let epi = if self.epilogue == Epilogue::TmaStore { "-tma-store" } else { "" };
        let cluster = match (self.cluster_m, self.cluster_n) {
            (cm, _) if cm > 1 => format!("-c{cm}"),
            (_, cn) if cn > 1 => format!("-n{cn}"),
            _ => String::new(),
        };
        if self.swap_ab {
            return format!("swap-ab-{}x{}{epi}{cluster}", self.bm, self.bn);
        }
        let base = match (self.bm, self.bn) {
            (64, 128) => "m64-narrow",
            (64, _) => "m64-wide",
            (_, 256) => "wide",
            (_, 128) => "narrow",
            (bm, bn) => return format!("cols-{bm}x{bn}{epi}{cluster}"),
        };
        format!("{base}{epi}{cluster}")
    }

    /// Looks a configuration up by its command-line name: `wide`, `narrow`,
    /// `wide-tma-store`, `narrow-tma-store`, `m64-wide`, `m64-wide-tma-store`,
    /// `m64-narrow-tma-store`, the
    /// clustered `wide-tma-store-c2`, `narrow-tma-store-c2`, `m64-wide-tma-store-c2`, and
    /// the swapped-operand `swap-ab-64xR` (R = 8, 16, ..., 256), `swap-ab-64xR-c2` (R a
    /// multiple of 16), `swap-ab-128xR` (R = 64, 72, ..., 256), `swap-ab-128xR-c2` (R a
    /// multiple of 16), and the column-fitted `cols-128xC[-tma-store]` (C = 8, 16, ..., 120 and 136, 144, ..., 248)
    /// and `cols-128xC-tma-store-c2` (C = 48, 64, 72, 80, ..., 120 and 136, 144, ..., 248), and in clusters along N
    /// `cols-128xC-tma-store-n2` (C = 48, 64, ..., 160 but 128) and `narrow-tma-store-n2`,
    /// plain GEMM only, and `swap-ab-64xR-tma-store`, `swap-ab-128xR-tma-store`,
    /// `swap-ab-128xR-tma-store-c2` (R a multiple of 16), `cols-128xC-tma-store` (C = 136,
    /// ..., 248) and `cols-128xC-tma-store-c2` (C = 144, ..., 240), which the fused
    /// kernel's epilogue path takes too.
    pub fn by_name(name: &str) -> Option<Self> {
        Self::gemm_catalog().find(|t| t.name() == name)
    }

    /// Checks that this is one of the configurations the fused kernel's catalog
    /// instantiates ([`Self::fused_catalog`]: [`Self::ALL`], the swapped-operand
    /// TMA-store tiles and the column-fitted TMA-store tiles of 136-248 columns). The fields are public, but no kernel exists for other values (and
    /// a zero `bm`/`bn` would divide by zero in the tile counts). The plain GEMM takes more:
    /// [`Self::validate_for_gemm`].
    pub fn validate(&self) -> Result<()> {
        if Self::fused_catalog().any(|t| t == *self) {
            return Ok(());
        }
        if self.cluster_n > 1 {
            // (gemm_allreduce.cuh static_asserts CN == 1 too)
            return Err(invalid(
                "tile",
                format!(
                    "{self} is in clusters along N (cluster_n = {}), which only the plain GEMM (mkernel::gemm) takes; the fused kernel takes no clusters along N: use one of {} or {FUSED_OTHER_TILES}",
                    self.cluster_n,
                    Self::ALL.map(|t| t.name()).join(", ")
                ),
            ));
        }
        let kind = if self.swap_ab && Self::all_swapped().any(|t| t == *self) {
            Some("swapped-operand")
        } else if Self::all_cols().any(|t| t == *self) {
            Some("column-fitted")
        } else {
            None
        };
        if let Some(kind) = kind {
            // (a column-fitted one: the fused tile of the same clustering nearest in width, helper-89)
            let nearest = Self::fused_cols()
                .filter(|t| t.cluster_m == self.cluster_m)
                .min_by_key(|t| t.bn.abs_diff(self.bn))
                .filter(|_| kind == "column-fitted")
                .map(|t| format!(" (the nearest the fused kernel takes: {})", t.name()))
                .unwrap_or_default();
            return Err(invalid(
                "tile",
                format!(
                    "{} is a {kind} tile only the plain GEMM (mkernel::gemm) takes{nearest}; the fused kernel takes one of {} or {FUSED_OTHER_TILES}",
                    self.name(),
                    Self::ALL.map(|t| t.name()).join(", ")
                ),
            ));
        }
        Err(invalid(
            "tile",
            format!(
                "{self:?} is not a catalog configuration; use one of TileConfig::ALL ({}) or {FUSED_OTHER_TILES}",
                Self::ALL.map(|t| t.name()).join(", ")
            ),
        ))
    }

    /// [`Self::validate`] for the plain GEMM, which also takes the swapped-operand tiles
    /// ([`Self::all_swapped`]) and the column-fitted ones ([`Self::cols`]).
    /// Clusters along N (`cluster_n` > 1) are refused naming the rule broken: 2 CTAs only,
    /// not with `cluster_m` > 1 nor swapped operands (a cluster is one pair of tiles, and
    /// the engine multicasts A along N: sm90_gemm.cuh's GemmConfig checks), and only the
    /// tiles of [`Self::cols_tma_store_n2`] and [`Self::NARROW_TMA_STORE_N2`].
    pub fn validate_for_gemm(&self) -> Result<()> {
        if (self.swap_ab && Self::all_swapped().any(|t| t == *self)) || Self::all_cols().any(|t| t == *self) {
            return Ok(());
        }
        if self.cluster_n > 1 {
            return self.validate_cluster_n();
        }
        if self.swap_ab {
            return Err(invalid(
                "tile",
                format!(
                    "{self:?} is not a swapped-operand tile of the catalog; use TileConfig::swapped(rows) or TileConfig::swapped_tma_store(rows) with rows a multiple of 8 in 8..=256, or TileConfig::swapped_c2(rows) with rows a multiple of 16 up to 256"
                ),
            ));
        }
        self.validate()
    }

    /// [`Self::validate_for_gemm`] for a tile in clusters along N (`cluster_n` > 1).
    fn validate_cluster_n(&self) -> Result<()> {
        if Self::all_cols_n2().any(|t| t == *self) {
            return Ok(());
        }
        let rule = if self.cluster_n != 2 {
            format!("clusters along N are of 2 CTAs, got cluster_n = {} (4-CTA clusters lost where not all of a grid's clusters were co-resident: bench/NOTES.md 21.1)", self.cluster_n)
        } else if self.cluster_m > 1 {
            format!("clusters along N exclude clusters along M: cluster_n = 2 needs cluster_m = 1, got {}", self.cluster_m)
        } else if self.swap_ab {
            "clusters along N need operands not swapped (the A tile is what the pair shares)".to_string()
        } else {
            format!(
                "{self} has no kernel in clusters along N; use TileConfig::cols_tma_store_n2(cols), cols a multiple of 16 in 48..=160 other than 128 (the 128-row TMA-store tile, stages as cols_tma_store), or TileConfig::NARROW_TMA_STORE_N2"
            )
        };
        Err(invalid("tile", rule))
    }

    /// Threads per CTA: one producer warpgroup plus BM/64 consumer warpgroups.
    /// (Saturating: a hand-made configuration outside the catalog must reach `validate`'s
    /// refusal rather than overflow here.)
    pub fn threads(&self) -> u32 {
        (self.bm / 64).saturating_mul(128).saturating_add(128)
    }

    /// Dynamic shared memory per CTA in bytes (mirrors `GemmConfig::kSmemBytes`, checked
    /// when the kernels compile). Saturates at u32::MAX for configurations outside the
    /// catalog (which `validate` refuses).
    pub fn smem_bytes(&self) -> u32 {
        let (bm, bn, bk, stages) = (self.bm as u64, self.bn as u64, self.bk as u64, self.stages as u64);
        let staging = if self.epilogue == Epilogue::TmaStore { bm * bn * 2 } else { 0 };
        let bytes = stages * (bm * bk * 2 + bn * bk * 2) + staging + 2 * stages * 8 + 1024;
        bytes.min(u32::MAX as u64) as u32
    }

    /// Number of tiles the kernel schedules for an M x N problem: the output tiles, and
    /// with clusters one padding tile per column block when the row blocks are odd, or
    /// along N one per row block when the column blocks are odd
    /// (mirrors `TileScheduler::total`; flags and waves count these). Swapped-operand
    /// tiles: row blocks of B (N, padded to whole clusters) by row blocks of A (M).
    pub fn tiles(&self, m: u32, n: u32) -> u64 {
        if self.swap_ab {
            // Row blocks of B (padded to whole clusters) by row blocks of A.
            let cm = self.cluster_m.max(1) as u64;
            return (n.div_ceil(self.bm.max(1)) as u64).div_ceil(cm) * cm * m.div_ceil(self.bn.max(1)) as u64;
        }
        let (cm, cn) = (self.cluster_m.max(1) as u64, self.cluster_n.max(1) as u64);
        (m.div_ceil(self.bm.max(1)) as u64).div_ceil(cm) * cm * (n.div_ceil(self.bn.max(1)) as u64).div_ceil(cn) * cn
    }

    /// CTAs per cluster: `cluster_m` x `cluster_n` (1 without clusters; saturating, for
    /// configurations outside the catalog, which `validate` refuses).
    pub fn cluster_size(&self) -> u32 {
        self.cluster_m.max(1).saturating_mul(self.cluster_n.max(1))
    }

    /// CTAs of a persistent grid on `sm_count` SMs for `tiles` scheduled tiles: one per
    /// tile up to one per SM, rounded down to whole clusters (at least one cluster, so
    /// with fewer SMs than a cluster it exceeds `sm_count`: CTAs then wait for SMs).
    pub fn grid_for(&self, tiles: u64, sm_count: u32) -> u32 {
        let cm = self.cluster_size();
        let g = tiles.min(sm_count as u64).max(1) as u32;
        (g / cm * cm).max(cm)
    }

    /// The C++ type naming this configuration.
    pub fn cpp_type(&self) -> String {
        let epi = match self.epilogue {
            Epilogue::Registers => "mk::Epilogue::Registers",
            Epilogue::TmaStore => "mk::Epilogue::TmaStore",
        };
        if self.swap_ab {
            format!("mk::GemmConfig<{}, {}, {}, {}, {epi}, {}, true>", self.bm, self.bn, self.bk, self.stages, self.cluster_m)
        } else if self.cluster_n > 1 {
            format!("mk::GemmConfig<{}, {}, {}, {}, {epi}, {}, false, {}>", self.bm, self.bn, self.bk, self.stages, self.cluster_m, self.cluster_n)
        } else if self.cluster_m > 1 {
            format!("mk::GemmConfig<{}, {}, {}, {}, {epi}, {}>", self.bm, self.bn, self.bk, self.stages, self.cluster_m)
        } else {
            format!("mk::GemmConfig<{}, {}, {}, {}, {epi}>", self.bm, self.bn, self.bk, self.stages)
        }
    }

    /// The entry point's cluster attribute (empty without clusters): the cluster's CTAs
    /// are consecutive block indices along x, along M or N alike (the scheduler's pairs).
    pub fn cluster_attribute(&self) -> String {
        if self.cluster_size() > 1 {
            format!(" __cluster_dims__({}, 1, 1)", self.cluster_size())
        } else {
            String::new()
        }
    }

    /// Short tag used in kernel names.
    pub fn tag(&self) -> String {
        let epi = if self.epilogue == Epilogue::TmaStore { "_te" } else { "" };
        let cluster = if self.cluster_m > 1 { format!("_c{}", self.cluster_m) } else { String::new() };
        let cluster_n = if self.cluster_n > 1 { format!("_n{}", self.cluster_n) } else { String::new() };
        let swap = if self.swap_ab { "_swab" } else { "" };
        format!("bm{}_bn{}_bk{}_s{}{epi}{cluster}{cluster_n}{swap}", self.bm, self.bn, self.bk, self.stages)
    }

    /// Whether the plain GEMM can split this tile's last wave into K-slices
    /// ([`source_split`]): the TMA-store epilogue (the slice that arrives last stages the
    /// sum) and no cluster, along M or N (a cluster's CTAs take whole tiles of one pair).
    pub fn can_split_last_wave(&self) -> bool {
        self.epilogue == Epilogue::TmaStore && self.cluster_size() <= 1
    }

    /// Bytes of one fp32 slot of a split last wave: a whole tile.
    pub fn split_slot_bytes(&self) -> u64 {
        self.bm as u64 * self.bn as u64 * 4
    }

    /// The most K-slices each of `rest` left-over tiles of a K-deep product can take on
    /// `grid` CTAs, the bound every split choice shares (the plain GEMM's rules,
    /// [`crate::gemm_allreduce::FusedConfig::choose_split`]): as many as the CTAs hold
    /// (`grid / rest`), each at least [`crate::gemm_allreduce::MIN_SPLIT_K_BLOCKS`] K
    /// blocks, at most [`crate::gemm_allreduce::MAX_SPLIT_SLICES`]. 0 where `rest` is 0.
    pub fn split_slices_bound(&self, k: u32, rest: u64, grid: u64) -> u64 {
        if rest == 0 {
            return 0;
        }
        let k_blocks = (k as u64).div_ceil(self.bk.max(1) as u64);
        (grid / rest).min(k_blocks / crate::gemm_allreduce::MIN_SPLIT_K_BLOCKS).min(crate::gemm_allreduce::MAX_SPLIT_SLICES)
    }

    /// CTAs of the plain GEMM's grid with `slices` K-slices per left-over tile: where the
    /// tiles are fewer than the SMs, one CTA per slice up to one per SM (the tiles are all
    /// left over); else one per SM ([`Self::grid_for`]), the tiles past the full waves
    /// being left over.
    pub fn split_grid(&self, tiles: u64, slices: u32, sm_count: u32) -> u32 {
        if slices <= 1 || tiles >= sm_count as u64 {
            self.grid_for(tiles, sm_count)
        } else {
            self.grid_for(tiles.saturating_mul(slices as u64), sm_count)
        }
    }

    /// Checks that this configuration can produce an N-column output.
    pub fn check_output(&self, n: u32) -> Result<()> {
        if self.epilogue == Epilogue::TmaStore && !n.is_multiple_of(8) {
            return Err(invalid(
                "tile",
                format!("the TMA-store epilogue needs N % 8 == 0 (16-byte rows of C), got N={n}; use a Registers configuration"),
            ));
        }
        Ok(())
    }

    /// Heuristic: wide tiles unless they leave most SMs idle (fewer tiles than half
    /// the SMs), then narrow ones. Wide tiles use the TMA-store epilogue when N allows
    /// it (N % 8 == 0): on the H200 it was 5-33% faster on every wide shape of `bench
    /// gemm` (bench/NOTES.md, run 2026-11-30T062710Z).
    ///
    /// Before that: 64x256 tiles (TMA-store epilogue) when M <= 4096 ends in a short
    /// row of 128-row tiles (M % 128 in 1..=64), where 128-row tiles would compute up to
    /// 64 padding rows per column of tiles: on the H200 they took M=1 from 0.046 to
    /// 0.034 ms, M=129 from 0.048 to 0.034 ms and M=2049 from 0.230 to 0.223 ms (N=8192,
    /// K=4096; bench/NOTES.md, run 10), and the fused M=129 call from 0.080 to 0.054 ms.
    pub fn choose(m: u32, n: u32, sm_count: u32) -> Self {
        if n.is_multiple_of(8) && m <= 4096 && (1..=64).contains(&(m % 128)) {
            Self::M64_WIDE_TMA_STORE
        } else if Self::WIDE.tiles(m, n) * 2 < sm_count as u64 {
            Self::NARROW
        } else if n.is_multiple_of(8) {
            Self::WIDE_TMA_STORE
        } else {
            Self::WIDE
        }
    }
}


/// Largest M, N or K: tile coordinates (up to a tile past the edge) must stay within
/// TMA's signed 32-bit coordinates.
pub const MAX_DIM: usize = (1 << 31) - 256;

/// Shape of one GEMM: C\[M,N\] = A\[M,K\] * B\[N,K\]^T.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmShape {
    /// Rows of A and C.
    pub m: u32,
    /// Rows of B, columns of C.
    pub n: u32,
    /// Columns of A and B (the reduction dimension).
    pub k: u32,
}

impl GemmShape {
    /// Floating-point operations (2 M N K).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Checks the shape rules and the operand lengths (in elements).
    pub fn validate(&self, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
        self.validate_dims()?;
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        if a_len < m * k {
            return Err(invalid("a", format!("expected [M={m}, K={k}] = {} elements, got {a_len}", m * k)));
        }
        if b_len < n * k {
            return Err(invalid("b", format!("expected [N={n}, K={k}] = {} elements, got {b_len}", n * k)));
        }
        if c_len < m * n {
            return Err(invalid("c", format!("expected [M={m}, N={n}] = {} elements, got {c_len}", m * n)));
        }
        Ok(())
    }

    /// Checks the shape rules alone (no operands): M, N, K in 1..=[`MAX_DIM`], at most
    /// 2^32 128x128 output tiles, K % 8 == 0.
    pub fn validate_dims(&self) -> Result<()> {
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        if m == 0 || n == 0 || k == 0 {
            return Err(invalid("shape", format!("M, N and K must be >= 1, got M={m}, N={n}, K={k}")));
        }
        if m > MAX_DIM || n > MAX_DIM || k > MAX_DIM {
            return Err(invalid(
                "shape",
                format!(
                    "M, N and K must be at most 2^31 - 256 = {MAX_DIM} (TMA coordinates are signed 32-bit), got M={m}, N={n}, K={k}"
                ),
            ));
        }
        if (m.div_ceil(128) as u64) * (n.div_ceil(128) as u64) > u32::MAX as u64 {
            return Err(invalid("shape", format!("M={m} x N={n} has more than 2^32 output tiles")));
        }
        if k % 8 != 0 {
            return Err(invalid(
                "k",
                format!("K must be a multiple of 8 (TMA needs the rows of A and B to be a multiple of 16 bytes apart), got K={k}"),
            ));
        }
        Ok(())
    }
}

/// Name of the GEMM kernel for `cfg`.
pub fn kernel_name(cfg: TileConfig) -> String {
    format!("mkernel_gemm_{}", cfg.tag())
}

/// Whether a GEMM splits the tiles left over after its full waves (a last wave that
/// leaves SMs idle) into K-slices: the fused kernel's epilogue path
/// ([`crate::gemm_allreduce::FusedConfig::split_slices`]) and the plain GEMM with a
/// workspace ([`SplitLaunch`], TMA-store tiles without clusters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LastWaveSplit {
    /// No split.
    Off,
    /// The default. The plain GEMM with no forced tile (given a workspace; without one only
    /// their picks of 1 slice, [`TileConfig::split_rule_without_workspace`]): the split rules
    /// ([`TileConfig::split_rule_for`]: M <= 64 whose swapped tiles spill a few past one
    /// wave, K >= 4096, [`TileConfig::split_spill_for`]; one row block of A, 112 <= M <=
    /// 128, on 112..=144-column tiles in 2 slices, K >= 9216,
    /// [`TileConfig::split_row_block_for`]; K >= 4096 where the default's tiles fill at
    /// most half the SMs, each in 2-8 slices (the small-N column tiles and the swapped tiles
    /// of 64 x 8..16 up to 16; 128 x 128 tiles above M = 256 on the narrowest tile of at
    /// most 112 columns whose slices fit one wave and compute less padding; from M = 193
    /// the 2-4 slices of 128 x 128 (above M = 256 K <= 5120) and 64 x 256 tiles on 64 x 128 tiles in
    /// fewer, down to none, where a cost model says so,
    /// `TileConfig::few_tiles_half_height_fewer_slices_instead_of`; below K =
    /// 4096 the small-N column tiles from K = 1024 in 4-8, few swapped tiles of 64 x 8..64
    /// from K = 1536 and few 64 x 128 tiles from K = 3072 in 2-8 within one wave,
    /// `TileConfig::short_k_slices`), [`TileConfig::split_few_tiles_for`]; K >= 13824
    /// where they fill half to two thirds of the SMs, each in 3 slices over two rounds,
    /// [`TileConfig::split_two_rounds_for`]; 193 <= M <= 4096 with K = 6912-14336 where the
    /// default's tiles fill one wave 48-80 columns wide (above M = 256 from K = 8192 below 72),
    /// tiles twice as wide in 2 slices, or where those overfill one wave (above M = 256) the
    /// narrowest wider ones up to 144 columns that fit, [`TileConfig::split_one_wave_cols_for`]), else no split (the 128-row swapped tiles' win at 129 x 8192 x
    /// 14336 in 2 slices, 0.0799 -> 0.0726 ms, was not matched nearby; run 153-154,
    /// bench/NOTES.md 19). The fused kernel's epilogue path: [`crate::gemm_allreduce::FusedConfig::choose_split`]'s
    /// count (1 where nothing is left over, or where the left-over tiles fill more than
    /// half the SMs). Measured on 2x H200
    /// (bench/NOTES.md 8, runs 35-36, medians of 20-30, split against not): o-proj M=2049
    /// 0.256 ms against 0.269, DeepSeek M=2048 0.412 against 0.448, down-proj M=16384
    /// 5.83 against 5.98, o-proj and DeepSeek M=16384 within 1%.
    #[default]
    Auto,
    /// This many K-slices per left-over tile (1: none). Plain GEMM: the rules of
    /// [`SplitLaunch::check`] (a TMA-store tile without clusters, tiles left over after the
    /// full waves, at most one slice per K block, within the workspace), each an error, so
    /// without a forced tile whether a count is accepted depends on the tile the
    /// heuristic picks for the shape. Fused epilogue path:
    /// [`crate::gemm_allreduce::FusedConfig::check_split`] (unclustered tiles,
    /// swapped-operand ones included). Where R left-over tiles x
    /// slices exceed the grid, the slices run in several shorter waves (a CTA takes
    /// several): the GEMM ends about when an unsplit last wave would, but only the tiles
    /// whose slices run in the last of those waves are left to cross the link after it
    /// (M=129 x 8192 x 4096 on 64 x 136 swapped tiles, 128 tiles on 132 SMs, 2 slices: 62
    /// tiles instead of 128). Slower where measured: two ranks sharing one H200 (`bench
    /// gemm-allreduce --share-gpu`, runs 136-139, bench/NOTES.md 18.6), 129 x 4096 x 4096
    /// 0.0447 -> 0.0549 ms with 2 slices, 1024 x 4096 x 4096 0.129 -> 0.143 (2) and 0.167
    /// (4): each slice's fixup (slot write, count, sum) and the wait for the staging tile
    /// cost more than the shorter copy after the GEMM saves; not timed on the pair.
    Slices(u32),
}

impl LastWaveSplit {
    /// Parses `off`, `auto` or a slice count (1 or more); errors name `split_last_wave`.
    pub fn parse(v: &str) -> Result<Self> {
        match v {
            "off" => Ok(Self::Off),
            "auto" => Ok(Self::Auto),
            _ => match v.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(Self::Slices(n)),
                _ => Err(invalid(
                    "split_last_wave",
                    format!("must be off, auto or a slice count in 1..={} (the call then refuses a count above the tile's K blocks or what the workspace holds), got '{v}'", u32::MAX),
                )),
            },
        }
    }
}

/// The caller's workspace for a plain GEMM with a split last wave (device addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitWorkspace {
    /// fp32 slots, one tile ([`TileConfig::split_slot_bytes`]) per slice.
    pub scratch: u64,
    /// Bytes at `scratch`.
    pub scratch_bytes: u64,
    /// One u32 per left-over tile, all 0 between calls (the kernel leaves them so).
    pub counts: u64,
    /// u32s at `counts`.
    pub counts_len: u64,
}


/// Counts a split workspace holds: one u32 per left-over tile, and the left-over tiles are
/// fewer than the grid's CTAs (at most one CTA per SM), so 4096 covers any GPU's SMs.
/// (`mkernel::GemmWorkspace` and the communicator's workspace both hold this many.)
pub const SPLIT_COUNTS: u64 = 4096;

/// A split last wave of one launch: K-slices per left-over tile, in `workspace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitLaunch {
    /// K-slices per left-over tile (1: no split; the unsplit kernel runs).
    pub slices: u32,
    /// Where the slices' slots and counts go.
    pub workspace: SplitWorkspace,
}

impl SplitLaunch {
    /// The split of one call: none for 1 slice, else `slices` in `workspace`; errors
    /// (naming `split_last_wave`) for 0 slices and for 2 or more without a workspace.
    pub fn for_call(slices: u32, workspace: Option<SplitWorkspace>) -> Result<Option<Self>> {
        match (slices, workspace) {
            (0, _) => Err(invalid("split_last_wave", "must be at least 1 slice (1: no split), got 0")),
            (1, _) => Ok(None),
            (_, None) => Err(invalid("split_last_wave", format!("{slices} slices need a workspace (mkernel::gemm_with_workspace)"))),
            (_, Some(workspace)) => Ok(Some(Self { slices, workspace })),
        }
    }

    /// Checks `slices` for tile `cfg` on `shape` with a grid of `grid` CTAs: 1, or a
    /// tile that can split ([`TileConfig::can_split_last_wave`]), tiles left over after
    /// the full waves, at most one slice per K block, the slots within `scratch_bytes` and
    /// the counts within `counts_len`. Errors name `split_last_wave`.
    pub fn check(&self, cfg: TileConfig, shape: GemmShape, grid: u32) -> Result<()> {
        let s = self.slices as u64;
        if s == 0 {
            return Err(invalid("split_last_wave", "must be at least 1 slice (1: no split), got 0"));
        }
        if s == 1 {
            return Ok(());
        }
        if !cfg.can_split_last_wave() {
            return Err(invalid("split_last_wave", format!("{s} slices asked with {cfg}: only TMA-store tiles without clusters split their last wave")));
        }
        let tiles = cfg.tiles(shape.m, shape.n);
        let rest = tiles % grid.max(1) as u64;
        if rest == 0 {
            return Err(invalid("split_last_wave", format!("{s} slices asked, but the {tiles} tiles fill whole waves of {grid} CTAs: nothing to split")));
        }
        let k_blocks = (shape.k as u64).div_ceil(cfg.bk as u64);
        if s > k_blocks {
            return Err(invalid("split_last_wave", format!("{s} slices exceed the {k_blocks} K blocks of {} columns in K = {}: at most {k_blocks} (a slice takes at least one K block)", cfg.bk, shape.k)));
        }
        let slots = rest.saturating_mul(s);
        // (the kernel counts its work units, whole tiles then slices, in u32: WorkUnits)
        let units = (tiles - rest).saturating_add(slots);
        if units > u32::MAX as u64 {
            return Err(invalid("split_last_wave", format!("{s} slices of {rest} left-over tiles make {units} work units; the kernel counts at most 2^32 - 1")));
        }
        let ws = &self.workspace;
        if slots.saturating_mul(cfg.split_slot_bytes()) > ws.scratch_bytes || rest > ws.counts_len {
            return Err(invalid(
                "split_last_wave",
                format!(
                    "{slots} slots of {} bytes and {rest} counts exceed the workspace ({} bytes of slots, {} counts)",
                    cfg.split_slot_bytes(),
                    ws.scratch_bytes,
                    ws.counts_len
                ),
            ));
        }
        Ok(())
    }
}

/// Shared memory a kernel with a split last wave takes past [`TileConfig::smem_bytes`]
/// (`kSplitExtraSmem` in ops/gemm.cuh).
pub const SPLIT_EXTRA_SMEM: u32 = 16;

/// Shared memory a kernel whose CTAs claim their tiles takes past [`TileConfig::smem_bytes`]
/// (the MoE dispatch + GEMM's: [`crate::moe_dispatch_gemm::smem_bytes`]; `kClaimExtraSmem` in
/// gemm/sm90_gemm.cuh): the claimed units' words beside the ring's mbarriers.
pub const CLAIM_EXTRA_SMEM_BYTES: u32 = 48;

/// Name of the GEMM kernel with a split last wave ([`source_split`]).
pub fn kernel_name_split(cfg: TileConfig) -> String {
    format!("mkernel_gemm_{}_split", cfg.tag())
}

/// Source of the GEMM kernel instantiated with `cfg`.
pub fn source(cfg: TileConfig) -> Result<KernelSource> {
    cfg.validate_for_gemm()?;
    entry_source(cfg, kernel_name(cfg), false)
}

/// Source of the GEMM kernel instantiated with `cfg` and a split last wave (the
/// engine's `WorkUnits`; [`SplitLaunch`]): TMA-store tiles without clusters only
/// ([`TileConfig::can_split_last_wave`]).
pub fn source_split(cfg: TileConfig) -> Result<KernelSource> {
    cfg.validate_for_gemm()?;
    if !cfg.can_split_last_wave() {
        return Err(invalid("split_last_wave", format!("{cfg}: only TMA-store tiles without clusters split their last wave")));
    }
    entry_source(cfg, kernel_name_split(cfg), true)
}

/// Diagnostic: whether `MKERNEL_PROBE_CTA_SPANS` was set (any value) when the process
/// first asked. Its GEMM kernels are then built to record every CTA's SM, start and end
/// (`%globaltimer` ns) into the workspace's scratch on unsplit calls given a workspace
/// ([`launch`]; four u64 per CTA, the fourth 1 once written; read with
/// `mkernel::GemmWorkspace::probe_cta_spans`; `bench gemm` writes them to
/// `cta-spans.csv`). Never for timing the library: the build differs.
pub fn probe_cta_spans() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MKERNEL_PROBE_CTA_SPANS").is_some())
}

fn entry_source(cfg: TileConfig, name: String, split: bool) -> Result<KernelSource> {
    let probe = if probe_cta_spans() { "#define MKERNEL_PROBE_CTA_SPANS 1\n" } else { "" };
    let entry = format!(
        "{probe}#include \"ops/gemm.cuh\"\n{wrapper}\
         extern \"C\" __global__ void __launch_bounds__({threads}, 1){cluster} {name}(const __grid_constant__ GemmParams p) {{\n\
         \x20 mk::gemm_kernel<{cfg_ty}, {split}>(p);\n}}\n\
         static_assert({cfg_ty}::kSmemBytes == {smem}, \"shared memory differs from the host's TileConfig::smem_bytes\");\n",
        wrapper = wgmma_wrapper_for(cfg),
        threads = cfg.threads(),
        cluster = cfg.cluster_attribute(),
        cfg_ty = cfg.cpp_type(),
        smem = cfg.smem_bytes()
    );
    Ok(KernelSource { name, source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
}

/// The wgmma wrapper a kernel with tile `cfg` needs besides `ptx/wgmma.cuh`'s hand-kept
/// n128 and n256 ones (`wgmma_wrapper`), to be placed after the engine's headers; empty
/// for those widths.
pub(crate) fn wgmma_wrapper_for(cfg: TileConfig) -> String {
    if matches!(cfg.bn, 128 | 256) {
        String::new()
    } else {
        wgmma_wrapper(cfg.bn)
    }
}

/// `mk::wgmma_tile_k16<N>` for a wgmma N that `ptx/wgmma.cuh` has no wrapper for (the
/// swapped-operand tiles' widths): D\[64 x N\] (+)= A\[64 x 16\] B\[N x 16\]^T, bf16 from
/// shared memory (K-major, 128B swizzle descriptors), N / 2 fp32 accumulators per thread,
/// in the fragment layout of the PTX ISA's "Asynchronous Warpgroup Level Matrix Multiply"
/// (the same as the hand-kept n128 and n256 wrappers).
fn wgmma_wrapper(n: u32) -> String {
    let regs = n / 2;
    let list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(d[{i}])")).collect();
    format!(
        "namespace mk {{\ntemplate <>\n__device__ __forceinline__ void wgmma_tile_k16<{n}>(float (&d)[{regs}], u64 da, u64 db, u32 scale_d) {{\n\
         \x20 asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{scale}, 0;\\n\"\n\
         \x20   \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{list}}}, %{da}, %{db}, p, 1, 1, 0, 0;\\n}}\\n\"\n\
         \x20   : {outs}\n\
         \x20   : \"l\"(da), \"l\"(db), \"r\"(scale_d));\n}}\n}}  // namespace mk\n",
        scale = regs + 2,
        da = regs,
        db = regs + 1,
        list = list.join(", "),
        outs = outs.join(", "),
    )
}

/// TMA descriptors of the two K-major operands for tile config `cfg`.
pub fn operand_maps(
    a: u64,
    b: u64,
    shape: GemmShape,
    cfg: TileConfig,
) -> Result<(crate::params::TmaDescriptor, crate::params::TmaDescriptor)> {
    let k = shape.k as u64;
    let ta = Tensor2d { ptr: a, rows: shape.m as u64, cols: k, row_stride_bytes: 2 * k };
    let tb = Tensor2d { ptr: b, rows: shape.n as u64, cols: k, row_stride_bytes: 2 * k };
    if cfg.swap_ab {
        // Swapped operands: the engine's first operand is B (tiles of bm rows), its
        // second A (tiles of bn rows); see GemmParams.
        return Ok((
            driver::tma_2d_bf16(tb, cfg.bm, cfg.bk, driver::Swizzle::B128, "b")?,
            // (with clusters each CTA loads, and multicasts, 1 / cluster_m of the A tile in
            // whole 8-row swizzle atoms: shared_rows_per_cta)
            driver::tma_2d_bf16(ta, cfg.shared_rows_per_cta(), cfg.bk, driver::Swizzle::B128, "a")?,
        ));
    }
    Ok((
        // (with clusters along N each CTA loads, and multicasts, 1 / cluster_n of the A tile)
        driver::tma_2d_bf16(ta, cfg.bm / cfg.cluster_n.max(1), cfg.bk, driver::Swizzle::B128, "a")?,
        // (with clusters each CTA loads, and multicasts, 1 / cluster_m of the B tile rounded up
        // to whole 8-row swizzle atoms, the shares overlapping at 72-120 columns: shared_rows_per_cta)
        driver::tma_2d_bf16(tb, cfg.shared_rows_per_cta(), cfg.bk, driver::Swizzle::B128, "b")?,
    ))
}

/// TMA descriptor of an \[M, N\] bf16 output for the TMA-store epilogue (box [BM rows x
/// 64 columns], or [BN rows x 64] for a swapped-operand tile, 128B swizzle; [BM x BN]
/// unswizzled for a column-fitted tile, BN % 64 != 0); a zeroed descriptor for the
/// Registers epilogue.
pub fn output_map(c: u64, shape: GemmShape, cfg: TileConfig) -> Result<crate::params::TmaDescriptor> {
    if cfg.epilogue != Epilogue::TmaStore {
        return Ok(Default::default());
    }
    let t = Tensor2d { ptr: c, rows: shape.m as u64, cols: shape.n as u64, row_stride_bytes: 2 * shape.n as u64 };
    // (a swapped-operand tile covers bn rows of C by bm = 64 columns: one box)
    let box_rows = if cfg.swap_ab { cfg.bn } else { cfg.bm };
    if !cfg.swap_ab && !cfg.bn.is_multiple_of(64) {
        // (a column-fitted tile: one unswizzled box of the whole tile, GemmConfig::kCSwizzled)
        return driver::tma_2d_bf16(t, cfg.bm, cfg.bn, driver::Swizzle::None, "c");
    }
    driver::tma_2d_bf16(t, box_rows, 64, driver::Swizzle::B128, "c")
}

/// What a plain GEMM call runs ([`plan`]): the tile, the split of its last wave, and the
/// grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmPlan {
    /// The tile configuration (forced, or the heuristic's).
    pub tile: TileConfig,
    /// The last wave's K-slices and where they go; `None`: unsplit (1 slice).
    pub split: Option<SplitLaunch>,
    /// CTAs of the launch ([`TileConfig::grid_for`], or [`TileConfig::split_grid`] when split).
    pub grid: u32,
}

impl GemmPlan {
    /// K-slices per tile left over after the full waves (1: no split).
    pub fn split_slices(&self) -> u32 {
        self.split.map_or(1, |sp| sp.slices)
    }
}

/// The tile, split and grid of a plain GEMM call of `shape` on a GPU of `sm_count` SMs,
/// without a GPU: what [`launch`] runs. `cfg`: a forced tile, or `None` for the
/// heuristic's; `split`: the last wave's K-slices (`Auto` with no forced tile:
/// [`TileConfig::split_rule_for`] within `workspace`, or without one
/// [`TileConfig::split_rule_without_workspace`]); `workspace`: only its sizes count here
/// (a planning caller may pass 0 for the addresses).
///
/// Errors ([`crate::Error::InvalidArgument`], naming the argument and rule): `sm_count` 0,
/// a shape outside [`GemmShape::validate_dims`], a tile outside the plain GEMM's catalog
/// ([`TileConfig::validate_for_gemm`]) or whose epilogue cannot write N columns
/// ([`TileConfig::check_output`]), and a split [`SplitLaunch::for_call`] or
/// [`SplitLaunch::check`] refuses (named `split_last_wave`).
pub fn plan(shape: GemmShape, cfg: Option<TileConfig>, split: LastWaveSplit, sm_count: u32, workspace: Option<SplitWorkspace>) -> Result<GemmPlan> {
    if sm_count == 0 {
        return Err(invalid("sm_count", "must be at least 1 SM, got 0"));
    }
    shape.validate_dims()?;
    // Auto, with no tile forced: the split rules' tile and count where one applies within the
    // workspace ([`TileConfig::split_rule_for`]; with none, only their picks of 1 slice, a
    // tile unsplit: [`TileConfig::split_rule_without_workspace`]); else the tile heuristic,
    // unsplit.
    let auto = match (cfg, split, workspace) {
        (None, LastWaveSplit::Auto, Some(ws)) => TileConfig::split_rule_for(shape, sm_count, ws.scratch_bytes, ws.counts_len),
        (None, LastWaveSplit::Auto, None) => TileConfig::split_rule_without_workspace(shape, sm_count).map(|t| (t, 1)),
        _ => None,
    };
    let (cfg, slices) = match (auto, split) {
        (Some(pick), _) => pick,
        // (a default that cannot split, e.g. the Registers tile of the padding rule, gives way
        // to its TMA-store twin where that can: helper-45)
        (None, LastWaveSplit::Slices(n)) => (cfg.unwrap_or_else(|| TileConfig::choose_for_split(shape, sm_count)), n),
        (None, _) => (cfg.unwrap_or_else(|| TileConfig::choose_for(shape, sm_count)), 1),
    };
    let split = SplitLaunch::for_call(slices, workspace)?;
    cfg.validate_for_gemm()?;
    cfg.check_output(shape.n)?;
    let tiles = cfg.tiles(shape.m, shape.n);
    let grid = match split {
        None => cfg.grid_for(tiles, sm_count),
        Some(sp) => {
            let grid = cfg.split_grid(tiles, sp.slices, sm_count);
            sp.check(cfg, shape, grid)?;
            grid
        }
    };
    Ok(GemmPlan { tile: cfg, split, grid })
}

/// Launches C = A * B^T on `stream`. `a`, `b`, `c` are device addresses of contiguous
/// bf16 buffers of at least the lengths `shape` needs (the caller validated them with
/// [`GemmShape::validate`]). `cfg`, `split` and `workspace` as [`plan`], whose tile, split
/// and grid it launches (on the SMs of `stream`'s GPU).
/// `order`: [`LaunchOrder::Programmatic`] lets the grid's set-up overlap the end of the
/// kernel before it on `stream` (the kernel touches no global memory before that one
/// completed: ops/gemm.cuh).
/// Returns the plan it launched.
///
/// # Safety
/// The addresses must be valid device memory of `stream`'s context for the duration
/// of the launch. A `workspace` must hold `scratch_bytes` of device memory at `scratch`
/// and `counts_len` u32 at `counts`, all counts 0 (as this kernel leaves them), and no
/// launch that is not ordered with this one on `stream` may use it meanwhile.
pub unsafe fn launch(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    a: u64,
    b: u64,
    c: u64,
    shape: GemmShape,
    cfg: Option<TileConfig>,
    timeout: Duration,
    split: LastWaveSplit,
    workspace: Option<SplitWorkspace>,
    order: LaunchOrder,
) -> Result<GemmPlan> {
    let ctx = stream.context();
    let info = driver::device_info(ctx)?;
    driver::require_hopper(&info)?;
    let planned = plan(shape, cfg, split, info.sm_count, workspace)?;
    let GemmPlan { tile: cfg, split, grid } = planned;
    tracing::debug!(m = shape.m, n = shape.n, k = shape.k, %cfg, slices = planned.split_slices(), grid, "gemm");
    let (tma_a, tma_b) = operand_maps(a, b, shape, cfg)?;
    let params = GemmParams {
        tma_a,
        tma_b,
        tma_c: output_map(c, shape, cfg)?,
        c,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        ldc: shape.n,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        split_scratch: 0,
        split_counts: 0,
        split_slices: 1,
        pad0: 0,
    };
    match split {
        None => {
            let f = rt.function_named(ctx, &kernel_name(cfg), || source(cfg))?;
            // (diagnostic builds: the CTAs' spans go to the workspace's scratch)
            let params = match workspace {
                Some(ws) if probe_cta_spans() && ws.scratch_bytes >= 32 * grid as u64 => GemmParams { split_scratch: ws.scratch, ..params },
                _ => params,
            };
            driver::launch_ordered(&f, LaunchDims { grid, block: cfg.threads(), smem_bytes: cfg.smem_bytes() }, stream, &params, order)?;
        }
        Some(sp) => {
            let params = GemmParams { split_scratch: sp.workspace.scratch, split_counts: sp.workspace.counts, split_slices: sp.slices, ..params };
            let f = rt.function_named(ctx, &kernel_name_split(cfg), || source_split(cfg))?;
            // (+ the two split-skip words after the ring's barriers, ops/gemm.cuh)
            let smem_bytes = cfg.smem_bytes() + SPLIT_EXTRA_SMEM;
            driver::launch_ordered(&f, LaunchDims { grid, block: cfg.threads(), smem_bytes }, stream, &params, order)?;
        }
    }
    Ok(planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mirror of the device's `WorkUnits` constructor (cuda/gemm/sm90_gemm.cuh), u32
    /// arithmetic as on the device: (full, splits, total).
    fn device_units(tiles: u32, n: u32, k_blocks: u32, asked: u32) -> (u32, u32, u32) {
        let f = tiles / n * n;
        let rest = tiles - f;
        let fits = asked > 1 && rest != 0 && asked <= k_blocks;
        (if fits { f } else { tiles }, if fits { asked } else { 1 }, if fits { f.wrapping_add(rest.wrapping_mul(asked)) } else { tiles })
    }

    #[test]
    fn split_check_agrees_with_device_work_units() {
        let ws = SplitWorkspace { scratch: 1 << 20, scratch_bytes: 32 << 20, counts: 1 << 30, counts_len: 4096 };
        let tiles_ok: Vec<TileConfig> = TileConfig::gemm_catalog().filter(|t| t.can_split_last_wave()).collect();
        let mut accepted = 0;
        for cfg in &tiles_ok {
            // (every splittable tile's launch fits the SM with the 16 split-skip bytes)
            assert!(cfg.smem_bytes() + SPLIT_EXTRA_SMEM <= 232_448, "{cfg}");
            for (m, n) in [(1, 8), (8, 9216), (129, 8192), (300, 1000), (2049, 8192), (64, 64 * 133), (4096, 4096)] {
                for k in [8, 64, 72, 1000, 1024, 7168] {
                    for sms in [1, 2, 78, 114, 132] {
                        for slices in [1, 2, 3, 7, 8, 16, 17, 200] {
                            let shape = GemmShape { m, n, k };
                            let tiles = cfg.tiles(m, n);
                            let grid = cfg.split_grid(tiles, slices, sms);
                            let k_blocks = k.div_ceil(cfg.bk);
                            let (full, splits, total) = device_units(tiles as u32, grid, k_blocks, slices);
                            match (SplitLaunch { slices, workspace: ws }).check(*cfg, shape, grid) {
                                Ok(()) => {
                                    accepted += 1;
                                    assert_eq!(splits, slices, "{cfg} {shape:?} {slices} on {sms}: the host accepts, the device splits {splits}");
                                    let rest = tiles as u32 - full;
                                    if slices > 1 {
                                        assert!((rest as u64) <= ws.counts_len);
                                        assert!((rest as u64 * slices as u64) * cfg.split_slot_bytes() <= ws.scratch_bytes);
                                        assert_eq!(total as u64, full as u64 + rest as u64 * slices as u64);
                                    }
                                }
                                Err(e) => {
                                    let e = e.to_string();
                                    if !e.contains("exceed the workspace") {
                                        assert_eq!(splits, 1, "{cfg} {shape:?} {slices} on {sms}: host refuses ({e}) but the device would split");
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(accepted > 1000, "{accepted}");
    }

    #[test]
    fn auto_split_pick_always_passes_check() {
        let ws = SplitWorkspace { scratch: 1 << 20, scratch_bytes: 32 << 20, counts: 1 << 30, counts_len: 4096 };
        let mut picks = 0;
        for sms in [66, 78, 114, 132] {
            for m in (1..=64).chain(110..=130) {
                for n in (8..=40_000).step_by(8 * 37) {
                    for k in [7168, 8192, 9216, 14336, 65536] {
                        let s = GemmShape { m, n, k };
                        if let Some((t, sl)) = TileConfig::split_rule_for(s, sms, ws.scratch_bytes, ws.counts_len) {
                            picks += 1;
                            t.validate_for_gemm().unwrap();
                            t.check_output(n).unwrap();
                            let grid = t.split_grid(t.tiles(m, n), sl, sms);
                            (SplitLaunch { slices: sl, workspace: ws }).check(t, s, grid).unwrap_or_else(|e| panic!("{s:?} {sms}: {e}"));
                            assert_eq!(device_units(t.tiles(m, n) as u32, grid, k.div_ceil(64), sl).1, sl);
                        }
                    }
                }
            }
        }
        assert!(picks > 100, "{picks}");
    }

    /// The device counts its units in u32 (`WorkUnits::total = full + rest * splits`):
    /// `SplitLaunch::check` refuses counts that would wrap it, whatever the workspace.
    #[test]
    fn split_check_bounds_the_kernels_u32_units() {
        let ws = SplitWorkspace { scratch: 1 << 20, scratch_bytes: u64::MAX, counts: 1 << 30, counts_len: 4096 };
        let cfg = TileConfig::swapped_tma_store(8);
        let shape = GemmShape { m: 8, n: 64 * 131, k: MAX_DIM as u32 / 64 * 64 };
        let k_blocks = shape.k.div_ceil(64);
        let tiles = cfg.tiles(shape.m, shape.n);
        let grid = cfg.split_grid(tiles, k_blocks, 132);
        let sp = SplitLaunch { slices: k_blocks, workspace: ws };
        let host = sp.check(cfg, shape, grid);
        let (_, _, total) = device_units(tiles as u32, grid, k_blocks, k_blocks);
        let exact = tiles * k_blocks as u64;
        assert!(host.is_err() || total as u64 == exact, "host accepts {k_blocks} slices of {tiles} tiles ({exact} units), device counts {total}");
    }

    /// 0 slices are refused as such, with or without a workspace; 2 or more need one.
    #[test]
    fn zero_slices_are_refused_with_or_without_workspace() {
        let ws = SplitWorkspace { scratch: 1 << 20, scratch_bytes: 32 << 20, counts: 1 << 30, counts_len: 4096 };
        for w in [None, Some(ws)] {
            let msg = SplitLaunch::for_call(0, w).unwrap_err().to_string();
            assert!(msg.contains("split_last_wave") && msg.contains("at least 1"), "{msg}");
        }
        assert_eq!(SplitLaunch::for_call(1, None).unwrap(), None);
        let msg = SplitLaunch::for_call(2, None).unwrap_err().to_string();
        assert!(msg.contains("need a workspace"), "{msg}");
        assert_eq!(SplitLaunch::for_call(2, Some(ws)).unwrap(), Some(SplitLaunch { slices: 2, workspace: ws }));
    }


    #[test]
    fn validation_names_argument_and_rule() {
        let s = GemmShape { m: 4, n: 4, k: 12 };
        let e = s.validate(48, 48, 16).unwrap_err().to_string();
        assert!(e.contains("`k`") && e.contains("multiple of 8") && e.contains("K=12"), "{e}");
        let s = GemmShape { m: 4, n: 4, k: 16 };
        let e = s.validate(63, 64, 16).unwrap_err().to_string();
        assert!(e.contains("`a`") && e.contains("[M=4, K=16]") && e.contains("got 63"), "{e}");
        let e = s.validate(64, 64, 15).unwrap_err().to_string();
        assert!(e.contains("`c`"), "{e}");
        let e = GemmShape { m: 0, n: 4, k: 16 }.validate(0, 64, 0).unwrap_err().to_string();
        assert!(e.contains("M=0"), "{e}");
        let e = GemmShape { m: 1 << 31, n: 4, k: 16 }.validate(usize::MAX, 64, usize::MAX).unwrap_err().to_string();
        assert!(e.contains("2^31"), "{e}");
        let e = GemmShape { m: 4, n: 4, k: (1 << 31) - 8 }.validate(usize::MAX, usize::MAX, 16).unwrap_err().to_string();
        assert!(e.contains("2^31"), "{e}");
        let big = MAX_DIM as u32;
        let e = GemmShape { m: big, n: big, k: 16 }.validate(usize::MAX, usize::MAX, usize::MAX).unwrap_err().to_string();
        assert!(e.contains("2^32 output tiles"), "{e}");
        assert!(s.validate(64, 64, 16).is_ok());
    }

    #[test]
    fn smem_matches_device_formula_and_fits() {
        for cfg in TileConfig::gemm_catalog() {
            assert!(cfg.smem_bytes() <= 232_448, "{cfg}");
            assert_eq!(cfg.threads(), 128 + 128 * (cfg.bm / 64));
            assert_eq!(TileConfig::by_name(&cfg.name()), Some(cfg));
        }
        assert_eq!(TileConfig::WIDE_TMA_STORE.smem_bytes(), 3 * (16384 + 32768) + 65536 + 48 + 1024);
        let e = TileConfig::WIDE_TMA_STORE.check_output(1001).unwrap_err().to_string();
        assert!(e.contains("`tile`") && e.contains("N % 8"), "{e}");
        assert!(TileConfig::WIDE.check_output(1001).is_ok());
        assert_eq!(TileConfig::WIDE.smem_bytes(), 4 * (16384 + 32768) + 64 + 1024);
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.smem_bytes(), 4 * (8192 + 32768) + 32768 + 64 + 1024);
        assert_eq!(TileConfig::M64_WIDE.threads(), 256);
        // Every kernel's source asserts, when it compiles, that the device computes the same size.
        for cfg in TileConfig::gemm_catalog() {
            let src = source(cfg).unwrap().source;
            assert!(src.contains(&format!("{}::kSmemBytes == {}", cfg.cpp_type(), cfg.smem_bytes())), "{cfg}");
        }
    }

    #[test]
    fn split_last_wave_checks_name_their_rule() {
        let ws = SplitWorkspace { scratch: 1 << 20, scratch_bytes: 32 << 20, counts: 1 << 30, counts_len: 4096 };
        let sp = |slices| SplitLaunch { slices, workspace: ws };
        let t = TileConfig::swapped_wide(136, Epilogue::TmaStore);
        let s = GemmShape { m: 129, n: 8192, k: 14336 };
        // 64 tiles of 128 rows: one CTA per slice up to the SMs, then every SM.
        assert_eq!(t.tiles(s.m, s.n), 64);
        assert_eq!(t.split_grid(64, 2, 132), 128);
        assert_eq!(t.split_grid(64, 3, 132), 132);
        assert_eq!(t.split_grid(64, 1, 132), 64);
        assert_eq!(TileConfig::WIDE_TMA_STORE.split_grid(544, 8, 132), 132);
        for slices in [1, 2, 3, 7] {
            sp(slices).check(t, s, t.split_grid(64, slices, 132)).unwrap();
        }
        let err = |slices: u32, tile: TileConfig, shape: GemmShape, grid: u32| sp(slices).check(tile, shape, grid).unwrap_err().to_string();
        for (e, rule) in [
            (err(0, t, s, 128), "at least 1 slice"),
            (err(2, TileConfig::NARROW, s, 132), "without clusters"),
            (err(2, TileConfig::WIDE_TMA_STORE_C2, s, 132), "without clusters"),
            (err(2, TileConfig::NARROW_TMA_STORE, GemmShape { m: 128, n: 128 * 132, k: 1024 }, 132), "nothing to split"),
            (err(17, TileConfig::NARROW_TMA_STORE, GemmShape { m: 256, n: 1024, k: 1024 }, 132), "exceed the 16 K blocks"),
        ] {
            assert!(e.contains("split_last_wave") && e.contains(rule), "{e}");
        }
        let small = SplitLaunch { slices: 4, workspace: SplitWorkspace { scratch_bytes: 1 << 16, ..ws } };
        let e = small.check(TileConfig::NARROW_TMA_STORE, GemmShape { m: 256, n: 1024, k: 1024 }, 64).unwrap_err().to_string();
        assert!(e.contains("exceed the workspace"), "{e}");
        let few = SplitLaunch { slices: 2, workspace: SplitWorkspace { counts_len: 8, ..ws } };
        let e = few.check(TileConfig::NARROW_TMA_STORE, GemmShape { m: 256, n: 1024, k: 1024 }, 32).unwrap_err().to_string();
        assert!(e.contains("16 counts"), "{e}");
    }

    #[test]
    fn only_catalog_tiles_are_accepted() {
        for cfg in TileConfig::ALL {
            assert!(cfg.validate().is_ok(), "{cfg}");
        }
        for bad in [
            TileConfig { bm: 0, bn: 0, ..TileConfig::WIDE },
            TileConfig { bm: 64, ..TileConfig::NARROW },
            TileConfig { stages: 9, ..TileConfig::WIDE },
            TileConfig { epilogue: Epilogue::TmaStore, ..TileConfig::WIDE },
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains("`tile`") && e.contains("TileConfig::ALL"), "{e}");
            let _ = bad.tiles(129, 257); // no division by zero
        }
    }

    #[test]
    fn heuristic_prefers_wide_tiles_when_sms_are_busy() {
        assert_eq!(TileConfig::choose(8192, 8192, 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose(8192, 8191, 132), TileConfig::WIDE);
        assert_eq!(TileConfig::NARROW.with_tma_store(), TileConfig::NARROW_TMA_STORE);
        assert_eq!(TileConfig::WIDE_TMA_STORE.with_tma_store(), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose(128, 2048, 132), TileConfig::NARROW);
        // A short last row of 128-row tiles: 64-row tiles.
        for m in [1, 129, 2049, 3969, 4032] {
            assert_eq!(TileConfig::choose(m, 8192, 132), TileConfig::M64_WIDE_TMA_STORE, "M={m}");
        }
        for (m, n) in [(127, 8192), (1024, 8192), (4097 + 128, 8192), (8193, 8192), (129, 8191)] {
            assert_ne!(TileConfig::choose(m, n, 132), TileConfig::M64_WIDE_TMA_STORE, "M={m} N={n}");
        }
        assert_eq!(TileConfig::WIDE.tiles(129, 257), 2 * 2);
    }

    #[test]
    fn misaligned_k_takes_clusters() {
        let s = |m, n, k| GemmShape { m, n, k };
        assert_eq!(TileConfig::choose_for(s(4096, 4096, 1000), 132), TileConfig::WIDE_TMA_STORE_C2);
        // K % 64 == 0: the clustered twin where the row blocks pair up (M >= 1024, K >= 4096,
        // the shapes measured), else unclustered.
        assert_eq!(TileConfig::choose_for(s(4096, 4096, 4096), 132), TileConfig::WIDE_TMA_STORE_C2);
        assert_eq!(TileConfig::choose_for(s(4224, 4096, 4096), 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose_for(s(4096, 4096, 1024), 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose_for(s(4096, 4096, 512), 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::clustered_instead_of(TileConfig::WIDE, s(4096, 4096, 1024)), TileConfig::WIDE);
        assert_eq!(TileConfig::clustered_instead_of(TileConfig::NARROW_TMA_STORE, s(4096, 4096, 1024)), TileConfig::NARROW_TMA_STORE);
        assert_eq!(TileConfig::choose_for(s(129, 8192, 4104), 132), TileConfig::M64_WIDE_TMA_STORE_C2);
        // One row block would pair with a padding tile (M=1 measured slower).
        assert_eq!(TileConfig::choose_for(s(1, 8192, 4104), 132), TileConfig::M64_WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose_for(s(257, 8192, 4104), 132), TileConfig::M64_WIDE_TMA_STORE_C2);
        // No clustered Registers tiles: N % 8 != 0 and the few-tiles case keep theirs.
        assert_eq!(TileConfig::choose_for(s(8192, 8191, 1000), 132), TileConfig::WIDE);
        assert_eq!(TileConfig::choose_for(s(128, 2048, 1000), 132), TileConfig::NARROW);
    }

    #[test]
    fn clusters_pad_odd_row_blocks_and_take_even_grids() {
        let c2 = TileConfig::M64_WIDE_TMA_STORE_C2;
        // 129 rows: 3 row blocks of 64 -> 2 pairs, one padding tile per column block.
        assert_eq!(c2.tiles(129, 8192), 4 * 32);
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.tiles(129, 8192), 3 * 32);
        assert_eq!(TileConfig::NARROW_TMA_STORE_C2.tiles(1024, 8192), 8 * 64);
        assert_eq!(TileConfig::NARROW_TMA_STORE_C2.tiles(1, 1), 2);
        assert_eq!(c2.grid_for(128, 132), 128);
        assert_eq!(c2.grid_for(1000, 133), 132);
        assert_eq!(c2.grid_for(1, 132), 2);
        assert_eq!(TileConfig::WIDE.grid_for(1000, 133), 133);
        assert_eq!(TileConfig::WIDE.grid_for(3, 133), 3);
        for t in TileConfig::ALL {
            assert_eq!(t.cluster_attribute().is_empty(), t.cluster_m == 1, "{t}");
            assert_eq!(t.with_tma_store().cluster_m, t.cluster_m, "{t}");
            let src = source(t).unwrap().source;
            assert_eq!(src.contains("__cluster_dims__(2, 1, 1)"), t.cluster_m == 2, "{t}");
        }
        assert_eq!(c2.name(), "m64-wide-tma-store-c2");
        assert_eq!(TileConfig::by_name("narrow-tma-store-c2"), Some(TileConfig::NARROW_TMA_STORE_C2));
        assert!(c2.to_string().contains("2-CTA clusters"), "{c2}");
        assert_ne!(kernel_name(c2), kernel_name(TileConfig::M64_WIDE_TMA_STORE));
    }

    /// Mirror of the device's `TileScheduler` (cuda/gemm/sm90_gemm.cuh) as the plain GEMM
    /// builds it on `sm_count` SMs for K = `k` (gemm_run: equal raster groups in one-wave
    /// grids of unclustered, unswapped 128-row tiles from K = 7168), u32 arithmetic as on the
    /// device: `total` and the (row block, column block) of every scheduled tile.
    fn device_schedule(m: u32, n: u32, k: u32, t: TileConfig, sm_count: u32) -> (u32, Vec<(u32, u32)>) {
        let (cm, cn) = (t.cluster_m.max(1), t.cluster_n.max(1));
        let (num_m, num_n) = (m.div_ceil(t.bm), n.div_ceil(t.bn));
        let (num_pm, num_pn) = (num_m.div_ceil(cm), num_n.div_ceil(cn));
        let total = num_pm * cm * num_pn * cn;
        let groups = num_pm.div_ceil(8);
        let equal = cm * cn == 1 && !t.swap_ab && t.bm == 128 && k >= 7168 && total <= t.grid_for(total as u64, sm_count) && groups > 0;
        let group = if equal { num_pm.div_ceil(groups) } else { 8 };
        let coords = (0..total)
            .map(|t| {
                let (member, pair) = (t % (cm * cn), t / (cm * cn));
                let per_group = group * num_pn;
                let g = pair / per_group;
                let first_m = g * group;
                let gm = (num_pm - first_m).min(group);
                let r = pair - g * per_group;
                ((first_m + r % gm) * cm + member % cm, (r / gm) * cn + member % cn)
            })
            .collect();
        (total, coords)
    }

    /// The plain GEMM's unclustered one-wave grids take the fewest raster groups of at most 8
    /// row blocks, all of one size but the last (9 row blocks: 5 + 4), from K = 7168, every
    /// tile once; below that K, and a grid past one wave, keep groups of 8.
    #[test]
    fn one_wave_grids_take_equal_raster_groups() {
        // (groups of ceil(row blocks / groups) but the last: 19 row blocks as 7 + 7 + 5)
        for (m, n, cols, groups) in
            [(1088, 1280, 96, vec![5, 4]), (1440, 960, 88, vec![6, 6]), (2081, 704, 104, vec![6, 6, 5]), (1664, 640, 88, vec![7, 6]), (2432, 448, 80, vec![7, 7, 5])]
        {
            let t = TileConfig::cols_tma_store(cols);
            let (total, coords) = device_schedule(m, n, 8192, t, 132);
            assert!(total <= 132, "{m}x{n}: {total} tiles");
            let num_n = n.div_ceil(cols);
            // below K = 7168, groups of 8: the ninth row block's first tile follows 8 x num_n
            assert_eq!(device_schedule(m, n, 5120, t, 132).1[(8 * num_n) as usize], (8, 0), "{m}x{n}");
            let mut seen = vec![0u32; (m.div_ceil(128) * num_n) as usize];
            for &(mb, nb) in &coords {
                seen[(mb * num_n + nb) as usize] += 1;
            }
            assert!(seen.iter().all(|&c| c == 1), "{m}x{n}");
            // the row blocks of each run of group x num_n consecutive tiles
            let mut first = 0;
            for (i, &g) in groups.iter().enumerate() {
                let rows: std::collections::BTreeSet<u32> = coords[(first * num_n) as usize..((first + g) * num_n) as usize].iter().map(|c| c.0).collect();
                assert_eq!(rows, (first..first + g).collect(), "{m}x{n}: group {i}");
                first += g;
            }
        }
        // 64-row tiles keep groups of 8 (run 314): 13 row blocks of 64 x 256 at 792 x 2560
        let (_, coords) = device_schedule(792, 2560, 8192, TileConfig::M64_WIDE_TMA_STORE, 132);
        assert_eq!(coords[8 * 10].0, 8);
        // past one wave (9 row blocks of 128 x 80 at N = 2048: 144 tiles): groups of 8
        let (_, coords) = device_schedule(1088, 2048, 8192, TileConfig::cols_tma_store(80), 132);
        assert_eq!(coords[..8].iter().map(|c| c.0).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!(coords[8 * 26].0, 8);
    }

    #[test]
    fn clusters_along_n_pair_column_blocks_and_pad_odd_ones() {
        let n2 = TileConfig::cols_tma_store_n2(96);
        // 1536 / 96 = 16 column blocks: 8 pairs, no padding; 3072 / 80 = 38.4 -> 39 blocks
        // -> 20 pairs: one padding tile per row block (3 at M = 384).
        assert_eq!(n2.tiles(1024, 1536), 128);
        assert_eq!(TileConfig::cols_tma_store_n2(80).tiles(384, 3072), 3 * 40);
        assert_eq!(TileConfig::cols_tma_store(80).tiles(384, 3072), 3 * 39);
        assert_eq!(TileConfig::NARROW_TMA_STORE_N2.tiles(1, 1), 2);
        assert_eq!((n2.grid_for(128, 132), n2.grid_for(1000, 133), n2.grid_for(1, 132)), (128, 132, 2));
        assert_eq!((n2.cluster_size(), TileConfig::WIDE_TMA_STORE_C2.cluster_size(), TileConfig::WIDE.cluster_size()), (2, 2, 1));
        // The scheduler (device mirror): every output tile once, the padding tiles past N
        // only, and the two tiles of a cluster (t, t + 1 for even t: block indices i, i + 1
        // with i and the grid even) in one row block, column blocks 2q and 2q + 1.
        let shapes = [(1, 1), (384, 3072), (1000, 8200), (1024, 1536), (2049, 1240), (129, 4104), (3000, 880), (128, 9216)];
        for t in TileConfig::all_cols_n2().chain([TileConfig::NARROW_TMA_STORE_C2, TileConfig::cols_tma_store(80)]) {
            for (m, n) in shapes {
                let (total, coords) = device_schedule(m, n, 8192, t, 132);
                assert_eq!(total as u64, t.tiles(m, n), "{t} {m}x{n}");
                assert_eq!(t.grid_for(total as u64, 132) % t.cluster_size(), 0, "{t} {m}x{n}");
                let (num_m, num_n) = (m.div_ceil(t.bm), n.div_ceil(t.bn));
                let mut seen = vec![0u32; (num_m * num_n) as usize];
                for (i, &(mb, nb)) in coords.iter().enumerate() {
                    if mb < num_m && nb < num_n {
                        seen[(mb * num_n + nb) as usize] += 1;
                    } else {
                        // (a padding tile: past the last row block along M, past N along N)
                        let past = if t.cluster_n > 1 { mb < num_m && nb == num_n && num_n % 2 == 1 } else { nb < num_n && mb == num_m && num_m % 2 == 1 };
                        assert!(past, "{t} {m}x{n}: tile {i} at ({mb}, {nb})");
                    }
                    if t.cluster_n > 1 && i % 2 == 1 {
                        assert_eq!((coords[i - 1].0, coords[i - 1].1 + 1, nb % 2), (mb, nb, 1), "{t} {m}x{n}: tile {i}");
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "{t} {m}x{n}: {seen:?}");
            }
        }
        // In the plain catalog by name, opt-in, TMA store, never split, not the fused kernel's.
        let widths: Vec<u32> = TileConfig::all_cols_n2().map(|t| t.bn).collect();
        assert_eq!(widths, [48, 64, 80, 96, 112, 144, 160, 128]);
        assert_eq!(TileConfig::gemm_catalog().filter(|t| t.cluster_n > 1).count(), 8);
        assert!(TileConfig::fused_catalog().all(|t| t.cluster_n == 1));
        for t in TileConfig::all_cols_n2() {
            let name = if t.bn == 128 { "narrow-tma-store-n2".to_string() } else { format!("cols-128x{}-tma-store-n2", t.bn) };
            assert_eq!(t.name(), name);
            assert_eq!(TileConfig::by_name(&name), Some(t));
            let unclustered = TileConfig { cluster_n: 1, ..t };
            assert_eq!((t.stages, t.epilogue, t.bm), (TileConfig::rows128_tma_store(t.bn).stages, Epilogue::TmaStore, 128), "{t}");
            assert!(t.validate_for_gemm().is_ok() && unclustered.validate_for_gemm().is_ok(), "{t}");
            let e = t.validate().unwrap_err().to_string();
            assert!(e.contains("clusters along N") && e.contains("only the plain GEMM"), "{e}");
            assert_eq!(t.with_tma_store(), t);
            assert!(!t.can_split_last_wave() && source_split(t).is_err(), "{t}");
            assert!(t.to_string().contains("2-CTA clusters along N (A multicast)"), "{t}");
            assert!(t.smem_bytes() <= 232_448, "{t}");
            let src = source(t).unwrap().source;
            assert!(src.contains("__cluster_dims__(2, 1, 1)"), "{t}");
            assert!(src.contains(&format!("mk::GemmConfig<128, {}, 64, {}, mk::Epilogue::TmaStore, 1, false, 2>", t.bn, t.stages)), "{t}");
            assert_ne!(kernel_name(t), kernel_name(unclustered));
            assert!(kernel_name(t).ends_with("_te_n2"), "{}", kernel_name(t));
        }
        // Refused combinations name the rule.
        let refused = [
            (TileConfig { cluster_n: 4, ..n2 }, "clusters along N are of 2 CTAs"),
            (TileConfig { cluster_m: 2, ..n2 }, "exclude clusters along M"),
            (TileConfig { cluster_n: 2, ..TileConfig::swapped_wide(128, Epilogue::TmaStore) }, "operands not swapped"),
            (TileConfig::cols_tma_store_n2(72), "no kernel in clusters along N"),
            (TileConfig::cols_tma_store_n2(176), "no kernel in clusters along N"),
            (TileConfig { cluster_n: 2, ..TileConfig::cols(96) }, "no kernel in clusters along N"),
            (TileConfig { cluster_n: 2, ..TileConfig::WIDE_TMA_STORE }, "no kernel in clusters along N"),
        ];
        for (t, rule) in refused {
            let e = t.validate_for_gemm().unwrap_err().to_string();
            assert!(e.contains("tile") && e.contains(rule), "{t:?}: {e}");
            assert!(t.validate().is_err() && source(t).is_err(), "{t:?}");
        }
        // The split last wave stays refused, naming its rule.
        let sp = SplitLaunch { slices: 2, workspace: SplitWorkspace { scratch: 0, scratch_bytes: u64::MAX, counts: 0, counts_len: u64::MAX } };
        let e = sp.check(n2, GemmShape { m: 1000, n: 1536, k: 8192 }, 132).unwrap_err().to_string();
        assert!(e.contains("split_last_wave") && e.contains("without clusters"), "{e}");
    }
}
