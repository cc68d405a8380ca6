//! The plain GEMM's default tile and split rules: which [`TileConfig`] a shape runs on
//! (`TileConfig::choose_for` and the steps it takes) and where the K loop is cut into slices
//! (`TileConfig::split_rule_for` and its rules), with the constants those rules were
//! measured at. Each rule's doc states the shapes, the measurements (one H200 unless named)
//! and the bench/NOTES.md section they come from; docs/gemm-defaults.md lists them in the
//! order `choose_for` applies them, and `mkernel plan gemm` prints a shape's pick.

use super::*;

/// The most work on the busiest SM, per mille of the clustered wide tile's, at which
/// [`TileConfig::cols_c2_instead_of`] takes a clustered column-fitted tile: 995 (runs 219,
/// 222: picks at 990-995 ran 0.2-2% faster, e.g. 4096 x 9216 x 7168 on 208 columns, 993,
/// 1.4%; none measured above 995).
pub const COLS_C2_MAX_WORK_PERMILLE: u64 = 995;

/// The most modelled time (busiest SM's work over its rate), per mille of the mid-M rule's
/// swapped tile's, at which [`TileConfig::beats_swapped_fit`] takes the column
/// tile instead: 950 (runs 282-284: picks at 788-947 ran 0.4-11% faster on 26 shapes, even
/// at 1144 x 9752 x 14336 (946); 3000 x 8192 x 4096 at 990 ran 3% slower on the column
/// tile, run 121; nothing timed between 947 and 990).
pub const COLS_OVER_SWAPPED_MAX_MODEL_PERMILLE: u64 = 950;

/// The most work on the busiest SM, per mille of the mid-M rule's swapped tile's, at which
/// [`TileConfig::beats_swapped_fit`] takes the column tile: 1035 (runs 282-284:
/// picks at 903-1031 ran 0.4-11% faster on 26 shapes; at 1059-1062 3 ran 2-5% faster and 3
/// 2-7% slower, e.g. 1032 x 6104 x 8192 on 216 columns 0.1790 -> 0.1880 ms; 2432 x 896 x
/// 4096 at 1118 6% slower).
pub const COLS_OVER_SWAPPED_MAX_WORK_PERMILLE: u64 = 1035;

/// The narrowest column tile [`TileConfig::beats_swapped_fit`] takes: 160 columns
/// (run 284: 136 and 144 columns lost 0.6-19% on 7 of the 9 shapes tried, even at the same
/// work per SM, e.g. 1312 x 9680 x 2048 0.0903-0.0913 -> 0.0957 ms and 1046 x 3992 x 4096
/// 0.0592 -> 0.0651-0.0705; even at 1718 x 1184 x 8192, mixed at 2166 x 1904 x 2048; run 121
/// saw 136 columns lose 5% at 8192 x 9216 x 7168).
pub const COLS_OVER_SWAPPED_MIN_COLS: u32 = 160;

/// The shortest K-slice, in K blocks, of the small-N column tiles' few-tiles split (the
/// 8-column tile: [`SMALL_N8_MIN_SPLIT_K_BLOCKS`])
/// ([`TileConfig::few_tiles_slices`]; other tiles: `gemm_allreduce::MIN_SPLIT_K_BLOCKS`,
/// 16). Their slices stream 128 x 64 elements of A per K block and little of B, so a CTA's
/// chain of K blocks, not its bytes, bounds them (run 219).
pub const SMALL_N_MIN_SPLIT_K_BLOCKS: u64 = 8;

/// [`SMALL_N_MIN_SPLIT_K_BLOCKS`] for the 8-column tile (`cols-128x8-tma-store`, N <= 8: an
/// MoE router of 8 experts, Mixtral's at K = 4096), whose fix-up sums up to 16 slices in one
/// L2 round trip (one float4 a slice and thread): run 227, 64 x 8 x 4096 and 256 x 8 x 4096
/// in 16 slices of 4 K blocks 0.0080-0.0083 ms against 0.0084-0.0087 in 8 of 8; at 128 x 16
/// x 4096 (two float4s a slice) 16 slices were even.
pub const SMALL_N8_MIN_SPLIT_K_BLOCKS: u64 = 4;

/// The most rows of A (M rounded up to 8) of the swapped TMA-store tiles that
/// [`TileConfig::few_tiles_slices`] splits from K = 4096 as finely as the small-N column
/// tiles: up to [`SMALL_N_MAX_SPLIT_SLICES`] slices of at least [`SMALL_N_MIN_SPLIT_K_BLOCKS`]
/// K blocks, their CTAs within half the SMs. An MoE router at decode (DeepSeek-V3's, 256
/// experts by 7168) makes 4 such tiles, which the bound of 16 K blocks a slice left on 28
/// CTAs. Run 259 (one H200, back to back x20, host-gated, two passes, ms; 7 slices -> 14 and
/// 16 forced; cuBLAS): 1 x 256 x 7168 0.0078-0.0079 -> 0.0064 and 0.0063 (0.0063), 16 x 256 x
/// 7168 0.0080 -> 0.0067 and 0.0066-0.0067 (0.0065); 28 slices slower than 16. At 64 rows of A
/// (64 x 256 x 7168) 14 slices were even with 7 and 16 slower, hence 16 rows.
pub const SHORT_SWAPPED_MAX_ROWS: u32 = 16;

/// The K-slices of [`TileConfig::split_two_rounds_for`]: two rounds of slices where the
/// tiles fill at most two thirds of the SMs.
pub const TWO_ROUNDS_SLICES: u64 = 3;

/// The shortest K [`TileConfig::split_two_rounds_for`] splits (run 259: 3-12% faster at K
/// = 13824-27648, 5% slower at 8192).
pub const TWO_ROUNDS_MIN_K: u32 = 13824;

/// The largest M [`TileConfig::one_wave_cols_instead_of`] was measured on (run 269: M =
/// 384..=2048, 3 to 16 row blocks of 128; run 305: 2081..=4033, where 128 x 128 tiles or
/// their -n2 twins fill 48-96% of one wave: 4-26% faster on 15 of 16 shapes, e.g. 4033 x 320
/// x 4096 0.0275-0.0277 -> 0.0208-0.0226 ms on 80 columns, 2816 x 512 x 8192 0.0451-0.0452 ->
/// 0.0378-0.0385 on 88, 3937 x 192 x 4096 0.0274 -> 0.0203 on 48 in place of 128 x 128 in 2
/// slices; even on 2688 x 704 x 7168, 5% slower on 2081 x 704 x 8192, 104 columns in place of
/// -n2 with 33 rows in the last row block; bench/NOTES.md 38.4).
pub const ONE_WAVE_COLS_MAX_M: u32 = 4096;

/// The K range [`TileConfig::one_wave_cols_instead_of`] was measured on (run 264:
/// 3456..=8192; run 266: 2048..=3072 and 9216..=14336; at M > 256 runs 269-270:
/// 2048..=14336): its bounds.
pub const ONE_WAVE_COLS_MIN_K: u32 = 2048;
/// See [`ONE_WAVE_COLS_MIN_K`].
pub const ONE_WAVE_COLS_MAX_K: u32 = 14336;
/// At two row blocks (193 <= M <= 256) the one-wave-cols rule past [`ONE_WAVE_COLS_MAX_K`] up
/// to this K, in place of the 128 x 128 TMA-store tile (and of the 128 x 256 one: 176-224
/// columns on 132 SMs where its tiles number 90-116: run 391, 5-19% faster on 9 shapes, 0.62-0.85
/// of cuBLAS -> 0.77-0.97, bench/NOTES.md 50.2) where its tiles fill more than two thirds of the SMs (below, the two-rounds split rule's ground,
/// [`TileConfig::split_two_rounds_for`]) and the width cuts at least an eighth of the busiest
/// SM's elements (at most 112 columns; on 132 SMs where the 128 x 128 tiles number 90-116:
/// run 382 measured 94-104; at 118-124 tiles the width would be 120 and
/// [`TileConfig::two_row_blocks_c2_instead_of`] clusters them instead), unsplit (the split of
/// twice the width, [`TileConfig::split_one_wave_cols_for`], stays at K <=
/// [`ONE_WAVE_COLS_MAX_K`]). Run 382 (one H200, back to back
/// x20 behind the host gate, two passes, `--check` PASS, us, 128 x 128 default -> the one-wave
/// width; cuBLAS): 211 x 6088 x 16384 98.4 -> 86.3-87.2 (96 columns; 77.5), 256 x 6144 x 16384
/// 101.2-103.7 -> 88.8-89.4 (96; 78.4-79.3), 214 x 5696 x 16384 94.7-94.9 -> 80.8-80.9 (88;
/// 73.7-73.9), 255 x 6520 x 20480 130.3-130.7 -> 116.8-117.5 (104; 107.4-107.7), 255 x 6808 x
/// 20480 130.9-132.3 -> 119.0 (104; 107.7-108.6): 10-15% faster on all 5.
pub const ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K: u32 = 20480;
/// Below [`ONE_WAVE_COLS_MIN_K`], at two row blocks (193 <= M <= 256) in place of the 128 x
/// 128 TMA-store tile where its tiles fill a third to two thirds of the SMs (not in place of
/// the 128 x 256 one there: not measured), the one-wave-cols rule from this K (run 360, one H200, back to back x20 behind the host gate, two passes,
/// `--check` PASS, ms; the 128 x 128 tile unsplit on 68-82 tiles -> 72 or 80 columns on
/// 124-130; cuBLAS): 237 x 4904 x 576 0.0064 -> 0.0052 (0.0065), 254 x 4256 x 704 0.0067 ->
/// 0.0055 (0.0058), 253 x 4864 x 1024 0.0090 -> 0.0070 (0.0081), 256 x 5120 x 1280
/// (Qwen2.5-32B's o-projection on 4 GPUs at 256 tokens) 0.0105 -> 0.0083 (0.0091), 217 x 4784
/// x 1920 0.0136 -> 0.0105 (0.0118), 255 x 5136 x 1984 0.0139 -> 0.0111 (0.0132): 17-25%
/// faster on all 11 random shapes of run 359-360 (K 576-1984), each then ahead of cuBLAS.
/// Run 361 (main against the rule, 9 fresh shapes it moves to 72, 80 and 88 columns at M =
/// 197-236 and 256 x 5120 x 1280, two passes in both orders): all 10 faster by 13-24%
/// (197 x 4576 x 1536 0.0116 -> 0.0088, 229 x 5384 x 640 0.0068 -> 0.0059), 1.07-1.32 of
/// cuBLAS (bench/NOTES.md 44.6).
pub const ONE_WAVE_COLS_SHORT_MIN_K: u32 = 576;
/// From this K, [`TileConfig::split_one_wave_cols_for`] splits tiles twice as wide as the
/// one-wave-cols rule's (or, where those overfill one wave, up to
/// [`ONE_WAVE_COLS_SPLIT_STEP_MAX_WIDTH`]) in 2 (runs 264, 266-267: faster from K = 6912, 2%
/// slower at 5120).
pub const ONE_WAVE_COLS_SPLIT_MIN_K: u32 = 6912;
/// The widest one-wave width [`TileConfig::split_one_wave_cols_for`] splits (2W <= 160
/// columns in 2). Above M = 256 from K = 8192 it split 88 and 96 too (176 and 192 in 2; run
/// 275: 3-10% faster than 96 unsplit at K = 8192-14336) until runs 296-297 (the producer
/// warp) and 318 (the last row block inside A) had those unsplit ahead
/// (`one_wave_cols_unsplit_wins`).
pub const ONE_WAVE_COLS_SPLIT_MAX_WIDTH: u32 = 80;
/// Above M = 256, where the one-wave width W's 2W-column tiles in 2 slices overfill one wave,
/// [`TileConfig::split_one_wave_cols_for`] splits the narrowest wider width up to this many
/// columns whose slices fit (W = 48-64, that is; K >= [`ONE_WAVE_COLS_SPLIT_MIN_K`]). Run 324
/// (W unsplit -> that width in 2, ms, two passes, `--check` PASS; bench/NOTES.md 41.1): 104-144
/// columns 0.80-0.98 of W's time on 9 of 10 shapes at K = 6912-14336 (2259 x 400 x 6912 0.039 ->
/// 0.031 on 136, 2049 x 296 x 8192 0.035 -> 0.029 on 104, 2994 x 224 x 8192 0.036 -> 0.031 on
/// 112, 1454 x 496 x 14336 0.055 -> 0.046 on 104), even on 1265 x 608 x 8192 (104); 120 at 3043 x
/// 240 x 14336 0.92; but 152-160 columns, 92 CTAs, 1.01-1.05 (2861 x 296 x 7168, 2917 x 320 x
/// 8192) or 0.98 (2889 x 312 x 14336): hence 144. Run 325 (main against the rule, 18 shapes it
/// moves, none of run 324's, two passes in both orders): 13 faster by 6-22% (3089 x 208 x 13312
/// 0.060 -> 0.047, 2207 x 304 x 8704 0.039 -> 0.031; every W = 48 one by 6-22%), 3 even, 1475 x
/// 688 x 6912 (144) 3% and 2141 x 392 x 10752 (136) 5% slower; the 144-column picks at K <= 8704
/// even (0.97-1.03), 3062 x 280 x 12800 13% faster.
pub const ONE_WAVE_COLS_SPLIT_STEP_MAX_WIDTH: u32 = 144;
/// The widest tile [`TileConfig::few_tiles_narrower_instead_of`] takes in place of the split
/// 128 x 128 tile: an eighth fewer columns per CTA at least.
pub const FEW_TILES_NARROWER_MAX_WIDTH: u32 = 112;
/// What one K-slice beyond the first costs [`TileConfig::few_tiles_half_height_fewer_slices_instead_of`]'s
/// model, in K blocks (64 deep) of a 128 x 128 tile: the fix-up (each slice's fp32 partial tile written
/// to its slot, the last slice's wait and its read of the others), the slot's flag, the longer set-up.
/// Fitted to runs 332-333 (bench/NOTES.md 42.2): 128 x 128 in 3 slices against the 64 x 128 tile
/// unsplit (2/3 the CTAs, 1.5x the K blocks each) was 10-12% slower at K = 4096-5120 and 2-17% faster
/// at K = 7168-14336, which bounds it to 6.5-9 blocks.
pub const FEW_TILES_SLICE_COST_KBLOCKS: u64 = 8;
/// The longest K at which [`TileConfig::few_tiles_half_height_fewer_slices_instead_of`] takes the
/// place of split 128 x 128 tiles (runs 334-335: the 64 x 128 tile unsplit was 10-24% slower
/// on 2601 x 352 at every K measured from 6144 and on 994 x 944 from 8192 (even at 6144),
/// though faster on 10 other shapes at 5632-14336; at K <= 5120 faster on 13 of 14). The 64
/// x 256 tile's splits give way up to K = 14336, and at two row blocks (M <= 256) so do the
/// 128 x 128 tile's (run 340: 12 of 13 faster by 1-16% at M = 203-256, K = 5632-14336, one
/// mixed; M = 256 4-10% faster on 4 more, runs 332-333 and 338; run 342: 11-20% faster on 4
/// of 4 at M = 199-245, K = 4096-5120).
pub const FEW_TILES_HALF_HEIGHT_128_MAX_K: u32 = 5120;
/// [`TileConfig::few_tiles_narrower_swapped_instead_of`]'s model of a K-slice of a 64 x R
/// swapped TMA-store tile (64 rows of B by R of A) in a one-wave split, in picoseconds: each
/// CTA's chain of K blocks at [`SWAPPED_SPLIT_PS_PER_KBLOCK`] + R x
/// [`SWAPPED_SPLIT_PS_PER_KBLOCK_ROW`] a block, [`SWAPPED_SPLIT_PS_PER_ROUND_TRIP`] per L2 round
/// trip of the last slice's fix-up ([`TileConfig::split_fixup_round_trips`], the kernel's
/// batches: ceil(slices / 16) at R = 16, / 8 at 24-32, / 4 at 40-48, / 3 at 56-64), and every
/// byte the CTAs read from L2 over [`SWAPPED_SPLIT_L2_BYTES_PER_PS`]. Fitted by least squares to
/// runs 343-344 (one H200, back to back x20 behind the host gate; bench/NOTES.md 43.1, 43.4): 298
/// one-wave timings of M = 24-64, N = 256-4096, K = 3584-14336 on 64 x 16, 64 x 32 and 64 x M
/// tiles in 1-16 slices, one offset per shape (the rule compares picks for one shape); mean
/// error 2.8%, at most 10%.
pub const SWAPPED_SPLIT_PS_PER_KBLOCK: u64 = 86_900;
/// See [`SWAPPED_SPLIT_PS_PER_KBLOCK`]: the part of a K block's time that grows with R, per row.
pub const SWAPPED_SPLIT_PS_PER_KBLOCK_ROW: u64 = 516;
/// See [`SWAPPED_SPLIT_PS_PER_KBLOCK`]: one L2 round trip of the fix-up.
pub const SWAPPED_SPLIT_PS_PER_ROUND_TRIP: u64 = 780_000;
/// See [`SWAPPED_SPLIT_PS_PER_KBLOCK`]: bytes read from L2 per picosecond of the model
/// (23 ns per MB).
pub const SWAPPED_SPLIT_L2_BYTES_PER_PS: u64 = 43;
/// The least modelled gain ([`SWAPPED_SPLIT_PS_PER_KBLOCK`]) for which
/// [`TileConfig::few_tiles_narrower_swapped_instead_of`] moves a split: 0.2 us, about the
/// model's mean error on these 6-12 us calls (2.8%).
pub const SWAPPED_SPLIT_MIN_GAIN_PS: u64 = 200_000;
/// The most operand bytes ((M + N) x K x 2) at which
/// [`TileConfig::few_tiles_narrower_swapped_instead_of`] applies, as timed: above it B streams
/// from DRAM and the narrower tiles' extra L2 reads are not free as the model has them (run
/// 344: 64 x 32 in 8 3-11% slower at 40-48 x 512 x 14336, 16 MB; 64 x 16 in 2-4 13-67% slower
/// at N = 1024, K = 7168-14336).
pub const FEW_TILES_NARROWER_SWAPPED_MAX_OPERAND_BYTES: u64 = 12 << 20;
/// From this K and above M = 256, [`TileConfig::split_one_wave_cols_for`] leaves the
/// one-wave width unsplit where it is at least [`ONE_WAVE_COLS_UNSPLIT_MIN_WIDTH`] (runs
/// 296-297; `one_wave_cols_unsplit_wins`; until run 318 only where M was padded by at most
/// a tenth). Below it the only shape measured since the producer warp (1024 x 1152 x 6912)
/// still ran as fast split.
pub const ONE_WAVE_COLS_UNSPLIT_MIN_K: u32 = 8192;
/// The narrowest one-wave width [`TileConfig::split_one_wave_cols_for`] leaves unsplit above
/// M = 256 (`one_wave_cols_unsplit_wins`; run 297: 48 columns unsplit 20% slower at 373 x
/// 2048 x 14336 and up to 10% at 1024 x 768 x 8192, 4% faster at 730 x 1024 x 8192; 72-96
/// faster wherever M's padding was at most a tenth, and since the last row block reads A
/// inside its bounds wherever measured: run 318, 321 x 3536 x 8192 and 325 x 3712 x 8192 5%
/// faster unsplit, 329 x 3392 x 14336 and 321 x 3264 x 14336 even).
pub const ONE_WAVE_COLS_UNSPLIT_MIN_WIDTH: u32 = 72;

/// The smallest M [`TileConfig::cluster_n_instead_of`] takes clusters along N at (run 299
/// measured M = 1024, 1600, 2048 and 8192; below M = 1024 not timed).
pub const CLUSTER_N_MIN_M: u32 = 1024;
/// The shortest K [`TileConfig::cluster_n_instead_of`] takes clusters along N at (run 299:
/// 1.5-9% faster at K = 7168-9216 on 4 shapes, 2% slower at K = 4096, as run 298 found).
pub const CLUSTER_N_MIN_K: u32 = 7168;

/// The smallest M the clustered last steps of [`TileConfig::choose_for`] at two row blocks
/// take (`two_row_blocks_c2_instead_of`, `half_width_c2_instead_of`,
/// `one_wave_cols_c2_instead_of`; runs 375-389 measured M = 193-256; below, the rules before
/// them pick swapped tiles on most shapes).
pub const TWO_ROW_BLOCKS_C2_MIN_M: u32 = 193;
/// The shortest K [`TileConfig::two_row_blocks_c2_instead_of`] takes the clustered tile at
/// (run 380: 0.2-1.5% faster at K = 7168, 1-4.4% at K = 8192-28672; runs 375, 379: even at K
/// = 4096, 3% slower at 2048).
pub const TWO_ROW_BLOCKS_C2_MIN_K: u32 = 7168;

/// The shortest K [`TileConfig::one_wave_cols_c2_instead_of`] clusters the one-wave-cols
/// tiles' two row blocks at (run 387: 1-5% faster at K = 6144-7168 on 4 shapes, even at 4096;
/// runs 375, 379: even at 4096-5120).
pub const ONE_WAVE_COLS_C2_MIN_K: u32 = 6144;

/// The shortest K [`TileConfig::half_width_c2_instead_of`] takes the 112-column clustered tile
/// at (runs 378-379 measured K = 4096 and 8192).
pub const HALF_WIDTH_C2_MIN_K: u32 = 4096;
/// The longest K [`TileConfig::half_width_c2_instead_of`] takes it at (measured to 8192; on
/// 132 SMs the one-wave-cols rule's 224 columns end at 14336, and the two-wave range is bounded
/// there too until measured above).
pub const HALF_WIDTH_C2_MAX_K: u32 = 14336;

/// The most K-slices of the few-tiles split of the small-N column tiles
/// ([`TileConfig::few_tiles_slices`]; other tiles: `gemm_allreduce::MAX_SPLIT_SLICES`, 8):
/// run 221, 64 x 8 x 14336 15% faster in 16 than in 8; at 24 and 32 columns since the
/// fix-up sums 16 slices in two L2 round trips there (runs 231-232: 16 slices 3-15% faster
/// than 8 at K = 8192-14336, 10-14 even to 7% faster; at K = 4096 16 slices of 4 K blocks
/// were slower, and slices of 8 K blocks keep 8 there).
pub const SMALL_N_MAX_SPLIT_SLICES: u64 = 16;

/// The shortest K for which the few-tiles split splits the small-N column tiles
/// ([`TileConfig::few_tiles_slices`]; other tiles from K = 1536, 3072 or 4096). Below K = 4096 one tile's K
/// chain is what bounds these calls (~0.22 us a K block on an H200, run 234: 128 x 32 x 2048
/// unsplit 0.0117 ms, 128 x 32 x 64 0.0048), so they split there too, into at most
/// `gemm_allreduce::MAX_SPLIT_SLICES` (8) slices of at least
/// [`SMALL_N_SHORT_K_MIN_SPLIT_K_BLOCKS`] K blocks. Run 235 (one H200, host-gated, unsplit
/// -> 8 slices forced, ms): 128 x 32 x 2048 0.0118 -> 0.0084, 512 x 16 x 2048 0.0113 ->
/// 0.0081, 128 x 8 x 2048 0.0111 -> 0.0076, 1024 x 8 x 2048 0.0111 -> 0.0079, 512 x 32 x
/// 3072 0.0154 -> 0.0092, 64 x 16 x 3584 0.0170 -> 0.0087, 256 x 8 x 1024 0.0078 -> 0.0072,
/// 256 x 32 x 2048 0.0118 -> 0.0086, 128 x 32 x 1024 0.0080-0.0081 -> 0.0079-0.0081 (two passes); 2 and 4 slices slower than
/// or even with 8 on all nine, 16 slower on six and even on three.
pub const SMALL_N_SHORT_K_MIN: u32 = 1024;

/// The fewest slices of the few-tiles split of the small-N column tiles below K = 4096
/// ([`SMALL_N_SHORT_K_MIN`]): fewer are not taken. Run 236 (the rule against unsplit,
/// two passes, ms): 16 tiles in 4 slices 21-26% faster (2048 x 16 x 2048 0.0113-0.0120 ->
/// 0.0089-0.0091, 2048 x 32 x 3072 0.0164-0.0173 -> 0.0121-0.0128); 24-64 tiles in 2
/// slices even or 8-18% slower (4096 x 32 x 1024 0.0082-0.0084 -> 0.0091-0.0097, 8192 x 8
/// x 2048 0.0142-0.0147 -> 0.0163-0.0168, 3000 x 16 x 1536 and 4096 x 8 x 2048 even).
pub const SHORT_K_MIN_SLICES: u64 = 4;

/// The shortest K for which the few-tiles split splits, below K = 4096, the swapped TMA-store tiles of 64 rows of B
/// and at most 64 of A (`TileConfig::short_k_slices`): into as many slices of at least [`SMALL_N_MIN_SPLIT_K_BLOCKS`]
/// K blocks as fit one wave, S = min(SMs / tiles, K blocks / 8, 8), at least 3 below K = [`SHORT_K_TWO_SLICES_MIN`]
/// (so 3 from K = 1536 to 2047). Until run 250 2048: at K = 1536 3 slices were 7-12% faster (1 x 2048 x 1536 6.6 ->
/// 6.1 us a call back to back, 32 x 2048 x 1536 7.0 -> 6.6, 1 x 1024 x 1536 6.7 -> 5.9, 64 x 1024 x 1536 7.7 -> 7.1),
/// 2 slower; at K = 1024 2 slices of 8 K blocks 15-19% slower, 3 slower still (8 x 4096 x 1024 5.2 -> 6.2 and 9.3).
///
/// The 64 x 64 swapped tile (`TileConfig::few_tiles_unsplit_smaller_instead_of`'s). Run 238 (one H200, host-gated,
/// two passes, ms, unsplit -> 4 slices forced): 256 x 256 x 2048 (16 tiles) 0.0118-0.0124 -> 0.0106-0.0110, 128 x 512
/// x 3072 (16) 0.0159-0.0160 -> 0.0110-0.0116; 36-64 tiles in 2 slices even to 15% faster at K >= 2048, 17% slower at
/// K = 1024. Run 239 (the rule of 4-8 slices within SMs / 2 CTAs against unsplit, 7 other picks): 15-34% faster. Run
/// 244 (one H200, 20 calls back to back, host-gated, two passes within 0.1 us, us a call, forced counts 1-8 on 12-64
/// tiles at K = 2048-3584): the fastest count is the most that fits one wave, and counts past it lose 40-170% (a
/// second wave): 24 tiles in 4 (unsplit before) 9.3 -> 7.9 at K = 2048, 12.8 -> 8.9 at 3072, 14.5 -> 9.4 at 3584; 32
/// in 4 9.4 -> 8.2 and 12.9 -> 9.2; 40 in 3 9.4 -> 8.3 and 12.9 -> 9.6; 48 in 2 9.4 -> 9.1, 12.8 -> 11.0, 14.6 -> 12.0
/// at 3584; 64 in 2 9.4 -> 9.4 at 2048, 12.8 -> 11.2 at 3072; 16 tiles at 3072 in 6 (4 before) 8.6 -> 8.4, 12 in 6 (5
/// before) even. (cuBLAS: 5.8-8.5.)
///
/// The small-M swapped tiles (M <= 64: 64 x 8 .. 64 x 48, the TMA-store twins of the Registers defaults) and the 128
/// x 128 tile, run 245 (forced one-wave counts against unsplit, back to back, two passes, us a call): 1 x 1024 x 3072
/// (16 tiles) in 6 11.1 -> 6.2, 8 x 512 x 3072 (8) in 6 11.0 -> 6.1, 48 x 768 x 3072 (12) in 6 12.1 -> 7.5, 1 x 2048
/// x 2048 (32) in 4 8.2 -> 6.3, 8 and 16 x 2048 x 3072 in 4 11.5 -> 8.1-8.3 (cuBLAS 8.4-8.5), 32 x 1024 x 2048 in 4
/// 8.5 -> 6.5, 48 x 3072 x 3072 (48) in 2 12.8 -> 11.0, but 8 x 4096 x 2048 (64) in 2 8.7 -> 9.1 (hence 2 slices only
/// from [`SHORT_K_TWO_SLICES_MIN`]); 128 x 128: 256 x 2048 x 3072 (32) in 4 18.9 -> 15.8, 384 x 1536 x 3072 (36) in 3
/// 19.8 -> 15.3, 768 x 768 x 2048 in 3 14.3 -> 13.1, 512 x 1024 x 2048 in 4 14.2 -> 13.7, 1024 x 1024 x 2048 and 256
/// x 4096 x 3072 (64) in 2 2-3% faster (superseded by the 64 x 128 tile, run 247). Not taken: the swapped tiles of 96-192 rows of A (M = 65-192; slots 1.5-3x
/// the 64 x 64 one's): 192 x 2048 x 2048 in 4 12.5 -> 14.2, 192 x 4096 x 2048 in 2 13.3 -> 14.3, 96 x 2048 x 2048
/// even, 160 x 2048 x 3072 9% faster.
pub const SHORT_K_ONE_WAVE_MIN: u32 = 1536;

/// The shortest K at which the one-wave short-K split of the small swapped tiles ([`SHORT_K_ONE_WAVE_MIN`]) takes 2
/// slices (slices of at least 24 K blocks): run 245, 8 x 4096 x 2048 (64 tiles of 64 x 8) 8.7 -> 9.1 us in 2 slices
/// of 16 K blocks, 48 x 3072 x 3072 (48 tiles) 12.8 -> 11.0 in 2 of 24; the 64 x 64 tile's 2 slices at K = 2048 were
/// within 3% either way (run 244).
pub const SHORT_K_TWO_SLICES_MIN: u32 = 3072;

/// The shortest K for which `TileConfig::few_tiles_short_k_m64_instead_of` takes the 64 x 128 TMA-store tile (run
/// 250: 16-29% faster at K = 1024-1536; run 252, K = 512-960, us a call back to back, default -> this tile, cuBLAS:
/// 640 x 1024 x 768 8.0 -> 5.7 (5.1), 384 x 2048 x 512 6.8 -> 4.8 (4.7), 256 x 2048 x 768 7.1 -> 5.6 (4.9), 512 x 1536
/// x 768 8.2 -> 5.7 (5.2), 192 x 2048 x 960 8.2 -> 6.2 (5.1), 768 x 768 x 512 6.9 -> 4.7 (4.8); below 512 not measured).
pub const M64_SHORT_K_MIN: u32 = 512;

/// The shortest slice, in K blocks, of the 64 x 128 TMA-store tile's short-K split
/// (`TileConfig::short_k_slices`, from K = [`SHORT_K_TWO_SLICES_MIN`]). Run 248 (one H200, forced counts, 20 calls back
/// to back, two passes, us a call): 128 x 2048 x 3072 (32 tiles) unsplit 14.4 -> 12.2 in 3 (slices of 16 K blocks),
/// 13.4 in 4 (12); 256 x 1024 x 3072 14.2 -> 11.8 in 3, 12.2 in 4; 128 x 2560 x 3584 (40) 16.4 -> 14.0 in 3; in 2 at
/// K = 3072-3584 (45-64 tiles) 4-12% faster (192 x 2048 x 3584 16.4 -> 14.4); at K = 2048 2 slices lost 4-7% (512 x
/// 1024 x 2048 10.2 -> 10.9) and 3 were even or 5% slower.
pub const M64_SHORT_K_MIN_SPLIT_K_BLOCKS: u64 = 16;

/// The shortest slice, in K blocks, of the small-N column tiles' split below K = 4096
/// ([`SMALL_N_SHORT_K_MIN`]): 8 slices of 2 K blocks at K = 1024 (run 235).
pub const SMALL_N_SHORT_K_MIN_SPLIT_K_BLOCKS: u64 = 2;

impl TileConfig {
    /// [`Self::choose`] for a whole shape: its TMA-store tile in 2-CTA clusters sharing
    /// B ([`Self::WIDE_TMA_STORE_C2`], [`Self::M64_WIDE_TMA_STORE_C2`]) when K % 64 != 0
    /// and there are at least two row blocks (one would pair with a padding tile).
    ///
    /// Why: rows of A and B that are not a multiple of 128 bytes apart (K % 64 != 0) make
    /// every 128-byte row of a TMA box straddle two L2 lines; the unclustered kernel then
    /// runs at 440-530 TFLOP/s, and fetching each B tile once per pair (TMA multicast)
    /// takes it back to 550-680 (H200, bench gemm, 2026-11-30 ~20:48Z, runs 89-90: 4096^2 x 1000
    /// 0.0757 -> 0.0600 ms, x 1032 0.0782 -> 0.0628, 4096^2 x 4104 0.2720 -> 0.2084,
    /// 8192^2 x 4104 1.0351 -> 0.8060, 2048 x 8192 x 1000 0.0745 -> 0.0609; 64 x 256
    /// tiles: 4096^2 x 1000 0.1163 -> 0.0720, 129 x 8192 x 4104 0.0555 -> 0.0462, 2049 x
    /// 8192 x 1000 0.1177 -> 0.0796, but M=1 0.0372 -> 0.0389). With K % 64 == 0
    /// clusters were within +-2% on 27 shapes and 5-15% slower for M <= 129 (bench/NOTES.md
    /// 13); at sustained clocks the wide one is 1.5-3% ahead for M >= 1024 with K >= 4096,
    /// which the last step ([`Self::clustered_instead_of`]) takes. Where a clustered
    /// column-fitted tile of 176-208 columns fits the waves better than that clustered wide
    /// tile, it takes its place ([`Self::cols_c2_instead_of`]; runs 219, 221-222: 0.2-2.8% faster).
    ///
    /// Where few tiles leave most SMs idle and K < 4096, the 64 x 64 swapped tile
    /// ([`Self::few_tiles_unsplit_smaller_instead_of`]; run 209: 8-29% faster, 256 x 256 x
    /// 2048 0.0153 -> 0.0116 ms), else from K = 512 the 64 x 128 TMA-store tile in place of
    /// the 128 x 128 one or wide swapped ones ([`Self::few_tiles_short_k_m64_instead_of`]; runs
    /// 247, 250, 252: 2-32% faster), before the small-N rule. (With a workspace, `split_few_tiles_for`
    /// splits the first from K = 1536, the second from K = 3072.)
    ///
    /// For N <= 160 (MoE routers), the small-N rule's tiles (N columns wide for N <= 32,
    /// else swapped) replace what the rules below pick, as the last step but the cluster-N
    /// one ([`Self::small_n_for`]; runs 195, 197: 0.55-0.77 of cuBLAS -> 0.63-1.03 at M >= 2048
    /// and N <= 64, 5-39% faster at N = 96-160; run 203: N <= 32 a further 0-37%).
    ///
    /// Otherwise, for M <= 256 with K % 64 == 0, the swapped-operand tile holding all of M
    /// ([`Self::swapped_for`]) when its tiles fit one wave and [`Self::load_cost`] says it
    /// loads less per SM: on the
    /// H200 (bench gemm, 2026-11-30 ~23:14Z, run 103; N=8192, K=4096 unless given) it took
    /// M=1..64 from 0.033 to 0.022-0.023 ms (0.64-0.71 of cuBLAS to 0.95-0.98), M=129 from
    /// 0.0332 to 0.0257 (0.77 to 1.00), M=192 from 0.0342 to 0.0299, 64 x 8192 x 14336 from
    /// 0.0964 to 0.0633 and 128 x 5120 x 8192 from 0.0480 to 0.0381, and the model keeps
    /// the two shapes it lost: M=256 (0.0371 against 0.0355) and 32 x 28672 x 8192 (0.1321
    /// against 0.1159). Its 2-CTA variant was slower on every one of those shapes. Two waves
    /// of swapped tiles lose to one of 64 x 256 tiles: 64 x 9216 x 7168 (144 swapped tiles
    /// on 132 SMs) ran at 0.0600 ms against cuBLAS's 0.0370 (run 104), hence the one-wave
    /// rule.
    ///
    /// Where that tile would take two waves, for 129 <= M <= 192, the 128-row swapped
    /// TMA-store tile holding all of M in one wave ([`Self::swapped_wide_instead_of`]:
    /// 129 x 14336 x 8192 0.56 -> 0.94-0.96 of cuBLAS, run 154); for M <= 64 where the
    /// 64-row swapped tiles make 1.5-2 waves, those tiles with the TMA-store epilogue
    /// unsplit ([`Self::swapped_two_waves_instead_of`]: 1 x 14336 x 4096 0.81 -> 0.94 of
    /// cuBLAS, runs 257-258).
    ///
    /// Else, for 257 <= M <= 8192 with K % 64 == 0, the 128-row swapped tile fitted to M
    /// where [`Self::fitted_instead_of`] says it wins (M=2049 x 8192 x 4096: 0.2216 ->
    /// 0.1978 ms, 0.81 -> 0.91 of cuBLAS; M=300: 0.0556 -> 0.0356; run 113), with the
    /// TMA-store epilogue where N % 8 == 0 (M=2049: 0.90 -> 0.95, run 131); but where the
    /// column rule below would also replace the wide tile with a tile of at least 160
    /// columns that the model puts at least 5% ahead with at most 3.5% more work on the
    /// busiest SM, that column tile
    /// ([`Self::beats_swapped_fit`]; runs 282-284: 1024 x 5120 x 5120 on 128 x 160
    /// in place of 176-row swapped tiles 0.0908 -> 0.0828-0.0843 ms, 0.4-11% faster on 26
    /// shapes, even on one). Else, in place
    /// of the 128 x 256 tile with K % 64 == 0, the 128-row tile whose width fits N where
    /// [`Self::cols_instead_of`] says it wins (2048 x 7168 x 9216: 128 x 176, 0.835 -> 0.896
    /// of cuBLAS, runs 118-119).
    ///
    /// Where the rules above still land on the 128 x 128 Registers tile (the swapped one did
    /// not win: M = 193..256 on N = 8192; or one wave of them above M = 256), its TMA-store
    /// twin when N % 8 == 0 and K % 64 == 0: faster on every one of 12 shapes in two passes
    /// (run 143, one H200, ms, M = 208, 224, 240, 256 on 8192 x 4096, 8192 x 14336, 7168 x
    /// 9216): by 0.1-4.1%, e.g. 224 x 8192 x 4096 0.0338-0.0340 -> 0.0325-0.0326, 256 x 8192
    /// x 4096 0.0349-0.0350 -> 0.0337-0.0341 (bench/NOTES.md 18.7); above M = 256 since the
    /// producer warp (run 296, two passes, ms): 1024 x 2048 x 8192 0.0545-0.0547 ->
    /// 0.0532-0.0533, 2048 x 1024 x 8192 0.0541-0.0544 -> 0.0531-0.0533, 1024 x 2048 x 4096
    /// 0.0293 -> 0.0274-0.0277, 2048 x 1024 x 4096 0.0288-0.0293 -> 0.0273-0.0279, 1024 x
    /// 2048 x 14336 0.937 / 0.919 of cuBLAS -> 0.957 / 0.948 (bench/NOTES.md 37.2). For 112 <= M <= 128 where those tiles leave SMs idle, the
    /// narrowest 128-row column-fitted TMA-store tile whose tiles fill one wave
    /// ([`Self::narrow_cols_instead_of`]: 128 x 9216 x 7168 on 72 columns, 0.77 -> 0.85 of
    /// cuBLAS, runs 166-167); for 65 <= M <= 111, the 128-row swapped tile holding M rows
    /// of A without the padding rows ([`Self::swapped_short_instead_of`]: 80 x 9216 x 7168
    /// 0.93 -> 1.12 of cuBLAS, runs 170-171).
    ///
    /// Last, where all that leaves one wave (more than half full) of 128 x 128 TMA-store tiles
    /// at M >= 1024 and K >= 7168, those in 2-CTA clusters along N sharing A
    /// ([`Self::cluster_n_instead_of`]: 1024 x 2048 x 8192 2-3% faster, runs 299-300; 1088 x
    /// 1792 x 8192 0.0623-0.0672 -> 0.0543-0.0571 ms, where the column rule fitted 136
    /// columns before [`Self::cols_fit`] took 128). That tile does not
    /// split: the split rules start from the pick before it ([`Self::choose_before_cluster_n`]).
    ///
    /// And at two row blocks (M = 193-256) where that leaves 128 x 128 TMA-store tiles filling
    /// more than two thirds of one wave with K >= 7168, those in 2-CTA clusters along M sharing
    /// B ([`Self::two_row_blocks_c2_instead_of`]: runs 375-381, 1-4.4% faster at K >= 8192 and
    /// 0.2-1.5% at 7168); and where it leaves the 224-column tile there (N = 14336 and 28672 on
    /// 132 SMs), the 112-column one in 2-CTA clusters ([`Self::half_width_c2_instead_of`]:
    /// 2-5% faster on 5 shapes, runs 378-379); and where it leaves one wave of the one-wave-cols
    /// rule's 80-120 columns there with K >= 6144, those in 2-CTA clusters
    /// ([`Self::one_wave_cols_c2_instead_of`]: 1-7% faster on 21 of 21 shapes, runs 384, 387, 389).
    pub fn choose_for(shape: GemmShape, sm_count: u32) -> Self {
        let t = Self::choose_before_cluster_n(shape, sm_count);
        Self::cluster_n_instead_of(t, shape, sm_count)
            .or_else(|| Self::two_row_blocks_c2_instead_of(t, shape, sm_count))
            .or_else(|| Self::half_width_c2_instead_of(t, shape, sm_count))
            .or_else(|| Self::one_wave_cols_c2_instead_of(t, shape, sm_count))
            .unwrap_or(t)
    }

    /// [`Self::choose_for`] without its last step ([`Self::cluster_n_instead_of`],
    /// [`Self::two_row_blocks_c2_instead_of`], [`Self::half_width_c2_instead_of`] or
    /// [`Self::one_wave_cols_c2_instead_of`]): a tile that can split where its TMA-store
    /// twin can, which the split rules ([`Self::split_rule_for`], [`Self::choose_for_split`])
    /// start from.
    pub fn choose_before_cluster_n(shape: GemmShape, sm_count: u32) -> Self {
        let t = Self::choose_for_before_one_wave_cols(shape, sm_count);
        let t = Self::one_wave_cols_instead_of(t, shape, sm_count).unwrap_or(t);
        // (above N = 64 only where the other rules' tile pads N as much: 128 x 136 tiles
        // stay on N = 136, where they were measured)
        match Self::small_n_for(shape, sm_count) {
            Some(s) if shape.n <= 64 || s.n_padding(shape.n) <= t.n_padding(shape.n) => s,
            _ => t,
        }
    }

    /// [`Self::choose_for`] up to (not including) its last two steps, the one-wave-cols and
    /// small-N rules.
    pub(super) fn choose_for_before_one_wave_cols(shape: GemmShape, sm_count: u32) -> Self {
        let t = Self::choose(shape.m, shape.n, sm_count);
        let t = if shape.k.is_multiple_of(64) || shape.m <= t.bm {
            t
        } else if t == Self::WIDE_TMA_STORE || t == Self::M64_WIDE_TMA_STORE {
            Self { cluster_m: 2, ..t }
        } else {
            t
        };
        // (in this order: where the mid-M rule's swapped tile wins, it stays, even where a
        // column-fitted one would win by more: run 121's 3000 x 8192 x 4096 lost 3% that way;
        // except where the column tile beats it clearly, `beats_swapped_fit`: runs 282-284)
        let t = Self::swapped_instead_of(t, shape, sm_count)
            .or_else(|| Self::swapped_wide_instead_of(t, shape, sm_count))
            .or_else(|| Self::swapped_two_waves_instead_of(t, shape, sm_count))
            .or_else(|| Self::fitted_or_cols_instead_of(t, shape, sm_count))
            .unwrap_or(t);
        let t = if t == Self::NARROW && shape.n.is_multiple_of(8) && shape.k.is_multiple_of(64) { Self::NARROW_TMA_STORE } else { t };
        let t = Self::narrow_cols_instead_of(t, shape, sm_count).or_else(|| Self::swapped_short_instead_of(t, shape, sm_count)).unwrap_or(t);
        let t = Self::clustered_instead_of(t, shape);
        let t = Self::cols_c2_instead_of(t, shape, sm_count).unwrap_or(t);
        let t = Self::few_tiles_unsplit_smaller_instead_of(t, shape, sm_count).unwrap_or(t);
        Self::few_tiles_short_k_m64_instead_of(t, shape, sm_count).unwrap_or(t)
    }

    /// The last step of [`Self::choose_for`] (plain GEMM only; the tile does not split): in
    /// place of the 128 x 128 TMA-store tile ([`Self::NARROW_TMA_STORE`]; also where the
    /// column rule fits 128 columns, [`Self::cols_fit`]), its twin in 2-CTA clusters along N
    /// ([`Self::NARROW_TMA_STORE_N2`]), where M >= [`CLUSTER_N_MIN_M`], K >=
    /// [`CLUSTER_N_MIN_K`] with K % 64 == 0, N % 8 == 0, the column blocks pair up (ceil(N /
    /// 128) even: no padding tiles), and the tiles fill more than half of one wave on
    /// `sm_count` SMs (as measured: 76-132 tiles on 132). `None` elsewhere, and where
    /// `current` is another tile (the one-wave-cols rule's 72..=120 columns make more tiles,
    /// and ran 1-20% faster than this one: run 300).
    ///
    /// Why: the two CTAs of a cluster compute neighbouring tiles of one row block, and each
    /// A tile crosses from L2 once per pair (TMA multicast within the GPU), so a K block
    /// moves 3/4 of the bytes per tile it did unclustered; the pair's barrier costs a fixed
    /// amount per tile, which long K amortises.
    ///
    /// Measured on one H200 (run 299, each kernel in its own process, three passes, gated,
    /// ms, 128 x 128 -> its -n2 twin): 1024 x 2048 x 8192 0.0555-0.0576 -> 0.0545-0.0558,
    /// 2048 x 1024 x 8192 0.0556-0.0573 -> 0.0546-0.0564, 8192 x 256 x 7168 0.0533-0.0562 ->
    /// 0.0534-0.0545, 1600 x 1280 x 9216 0.0656-0.0668 -> 0.0599-0.0613; at K = 4096 it lost
    /// (1024 x 2048 x 4096 0.0308-0.0310 -> 0.0313-0.0322; run 298 alike), hence the bound.
    /// Run 300 (the same way): this rule's pick against the unclustered 128 x 128 tile forced,
    /// ours / cuBLAS 0.93-0.95 -> 0.96-0.98 on all 7 shapes in all three passes, e.g. 4096 x
    /// 512 x 8192 0.0599-0.0612 -> 0.0579-0.0588 ms, 1024 x 2048 x 14336 0.0971-0.0981 ->
    /// 0.0940-0.0976, 2000 x 1016 x 7168 0.0499-0.0506 -> 0.0493-0.0494; in place of 128 x 136
    /// (the column rule's fit before it took 128 columns there, [`Self::cols_fit`]):
    /// 1088 x 1792 x 8192 0.0623-0.0672 -> 0.0543-0.0571, 1440 x 1280 x 8192 0.0579 ->
    /// 0.0521-0.0530, 1824 x 1024 x 8192 0.0575-0.0597 -> 0.0496-0.0540, 2336 x 512 x 8192
    /// 0.0513-0.0532 -> 0.0493-0.0502, 2752 x 768 x 7168 0.0536-0.0554 -> 0.0498-0.0505, 1600 x
    /// 1280 x 9216 0.0671-0.0674 -> 0.0631-0.0634: 4-17% faster on all 6 (bench/NOTES.md 38.1).
    pub fn cluster_n_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let n2 = Self::NARROW_TMA_STORE_N2;
        let tiles = n2.tiles(shape.m, shape.n);
        let applies = current == Self::NARROW_TMA_STORE
            && shape.m >= CLUSTER_N_MIN_M
            && shape.k >= CLUSTER_N_MIN_K
            && shape.k.is_multiple_of(64)
            && shape.n.is_multiple_of(8)
            && shape.n.div_ceil(n2.bn) % 2 == 0
            && tiles <= sm_count as u64
            && tiles * 2 > sm_count as u64;
        applies.then_some(n2)
    }

    /// The other last step of [`Self::choose_for`] (plain GEMM only; the tile does not split:
    /// the split rules start from the pick before it, [`Self::choose_before_cluster_n`]): in
    /// place of the 128 x 128 TMA-store tile ([`Self::NARROW_TMA_STORE`]) at two row blocks
    /// ([`TWO_ROW_BLOCKS_C2_MIN_M`] <= M <= 256), its twin in 2-CTA clusters along M
    /// ([`Self::NARROW_TMA_STORE_C2`]): the two CTAs of a cluster compute the two row blocks
    /// of one column block, and each B tile crosses from L2 once for both (TMA multicast
    /// within the GPU). Where K >= [`TWO_ROW_BLOCKS_C2_MIN_K`] with K % 64 == 0, N % 8 == 0
    /// and the tiles fill more than two thirds of one wave on `sm_count` SMs (as measured:
    /// 94-128 tiles on 132, of which 112-128 still take it since the one-wave-cols rule's
    /// extension above K = 14336, run 382). `None` elsewhere and where `current` is another tile.
    ///
    /// Measured on one H200 (bench gemm, 20 calls back to back behind the host gate, two
    /// passes, `--check` PASS; us, 128 x 128 -> its twin, both passes): run 380, 193 x 8104 x
    /// 14336 102.0 / 102.6 -> 99.4 / 100.2, 197 x 7872 x 16384 115.9 / 113.5 -> 111.1 / 111.2,
    /// 200 x 7104 x 28672 189.9 / 189.9 -> 184.1 / 181.5, 204 x 8176 x 10240 74.2 / 73.4 ->
    /// 72.5 / 72.4, 206 x 8184 x 12288 89.0 / 88.3 -> 86.1 / 86.8, 211 x 8136 x 8192 61.0 /
    /// 60.2 -> 58.6 / 58.4, 216 x 7944 x 12288 87.8 / 89.2 -> 85.0 / 85.6, 230 x 6000 x 16384
    /// 103.4 / 104.4 -> 100.5 / 100.2, 256 x 6144 x 16384 105.6 / 109.0 -> 104.5 / 105.0
    /// (1-4.4% faster), 209 x 8184 x 7168 52.7 / 52.7 -> 52.6 / 52.0 and 256 x 8192 x 7168
    /// 53.4 / 52.7 -> 53.1 / 51.9 (0.2-1.5%); runs 375 and 379, 256 x 8192 x 8192 58.0-60.1 ->
    /// 56.4-58.4 and 256 x 8192 x 14336 98.0-99.3 -> 96.5; at K = 4096 even (30.0 -> 29.9-31.4)
    /// and at K = 2048 3% slower (16.0 -> 16.4-16.5), hence the bound (bench/NOTES.md 46.3).
    pub fn two_row_blocks_c2_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let c2 = Self::NARROW_TMA_STORE_C2;
        let applies = current == Self::NARROW_TMA_STORE
            && Self::two_row_blocks_c2_shape(shape, TWO_ROW_BLOCKS_C2_MIN_K..=u32::MAX)
            && Self::fills_two_thirds_of_one_wave(c2.tiles(shape.m, shape.n), sm_count);
        applies.then_some(c2)
    }

    /// The shapes the clustered last steps of [`Self::choose_for`] at two row blocks were
    /// measured on: [`TWO_ROW_BLOCKS_C2_MIN_M`] <= M <= 256, K in `ks` with K % 64 == 0, and
    /// N % 8 == 0 (the TMA store).
    fn two_row_blocks_c2_shape(shape: GemmShape, ks: std::ops::RangeInclusive<u32>) -> bool {
        (TWO_ROW_BLOCKS_C2_MIN_M..=256).contains(&shape.m) && ks.contains(&shape.k) && shape.k.is_multiple_of(64) && shape.n.is_multiple_of(8)
    }

    /// Whether `tiles` fit one wave on `sm_count` SMs and fill more than two thirds of it.
    fn fills_two_thirds_of_one_wave(tiles: u64, sm_count: u32) -> bool {
        tiles <= sm_count as u64 && tiles * 3 > sm_count as u64 * 2
    }

    /// Another last step of [`Self::choose_for`] (plain GEMM only; clusters never split: the
    /// split rules start from the pick before it): at two row blocks (193 <= M <= 256), in
    /// place of the 224-column TMA-store tile or its 2-CTA twin ([`Self::cols_tma_store`],
    /// [`Self::cols_tma_store_c2`]; N = 14336 and 28672, Llama-3's MLP widths, on 132 SMs), the
    /// 112-column twin: twice the tiles, in 2-CTA clusters along M sharing B, so most CTAs run
    /// about two tiles (four in the two-wave range) one after the other (the next tile's loads
    /// overlap the last one's store) on 6 pipeline stages instead of 3, and each B tile crosses
    /// from L2 once for both row blocks. [`HALF_WIDTH_C2_MIN_K`] <= K <=
    /// [`HALF_WIDTH_C2_MAX_K`], K % 64 == 0, N % 8 == 0, and the 224-column tiles at most two
    /// waves on `sm_count` SMs (as measured). `None` elsewhere.
    ///
    /// cuBLAS runs 256 x 14336 x 4096 as 128 x 112 tiles in 2 x 1 clusters with 7 stages, 132
    /// persistent CTAs (`nvjet_sm90_tst_112x128_64x7_2x1`, run 377: 89% of the tensor peak
    /// while active, against 70% for our one-wave 128 x 224). Measured on one H200 (runs 378-379,
    /// forced, back to back x20 behind the host gate, two passes, `--check` PASS, us, default ->
    /// this tile; cuBLAS): 256 x 14336 x 4096 54.0 / 54.3 -> 51.9 / 51.4 (47.1-47.5), 256 x
    /// 14336 x 8192 101.1 / 100.8 -> 97.8 (92.5-92.7), 240 x 14336 x 4096 52.7 -> 50.3 (48.3),
    /// 200 x 14336 x 4096 53.6 / 53.7 -> 52.5 / 52.2 (43.0-43.2), and in place of the clustered
    /// 224 columns (two waves) 256 x 28672 x 4096 101.6 / 101.2 -> 97.9 / 98.1 (102.0-103.0):
    /// 2-5% faster on all 5. Half the width elsewhere lost (run 379: 64 columns in place of
    /// 128 x 128 15% slower, 48 for 96 30%, 80 for 160 6%, 96 for 192 3%), and 112 in place of
    /// 216 columns was 1% faster (256 x 27648 x 5120), not taken.
    pub fn half_width_c2_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let is_224 = current == Self::cols_tma_store(224) || current == Self::cols_tma_store_c2(224);
        let applies = is_224
            && current.tiles(shape.m, shape.n) <= 2 * sm_count as u64
            && Self::two_row_blocks_c2_shape(shape, HALF_WIDTH_C2_MIN_K..=HALF_WIDTH_C2_MAX_K);
        applies.then(|| Self::cols_tma_store_c2(112))
    }

    /// The last of [`Self::choose_for`]'s last steps (plain GEMM only; clusters never split:
    /// the split rules start from the pick before it): at two row blocks (193 <= M <= 256), in
    /// place of the one-wave-cols rule's tile ([`Self::one_wave_cols_instead_of`]) where it is
    /// 80-120 columns wide, or 176-224 above [`ONE_WAVE_COLS_MAX_K`] (where that rule takes
    /// them in place of 128 x 256 tiles), its twin in 2-CTA clusters along M
    /// ([`Self::cols_tma_store_c2`]): the same tiles, the two row blocks of a column block on
    /// the two CTAs of a cluster, each B tile crossing from L2 once for both (TMA multicast
    /// within the GPU). [`ONE_WAVE_COLS_C2_MIN_K`] <= K <= [`ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K`],
    /// K % 64 == 0, N % 8 == 0 (176-224 columns: K > [`ONE_WAVE_COLS_MAX_K`]), and the tiles
    /// fill more than two thirds of one wave on `sm_count` SMs (as measured: 122-132 tiles on
    /// 132). `None` elsewhere. A cluster's CTAs
    /// each load half of B's rows in whole 1024-byte swizzle atoms
    /// ([`Self::shared_rows_per_cta`]: at 88, 104 and 120 columns the halves overlap by 8
    /// rows); there the next multiple of 16 in clusters ran even or slower (run 387), the
    /// overlapping halves at the rule's own width faster (run 389, below). At 72 columns (K
    /// 6144-6911 at most: from 6912 a workspace splits 144 columns in 2) they ran even on the
    /// one shape timed, and it stays unclustered. With a workspace (the bench's), 80 columns from
    /// K = 6912 still split 160 columns in 2 instead ([`Self::split_rule_for`]), as before.
    ///
    /// Measured on one H200 (bench gemm, 20 calls back to back behind the host gate, two
    /// passes, `--check` PASS; us, the one-wave width -> its twin forced, both passes): run 384,
    /// 245 x 6048 x 14400 77.7 / 77.8 -> 74.0 / 74.2 (96 columns), 217 x 6200 x 20480 109.3 /
    /// 108.2 -> 102.4 / 103.2 (96), 235 x 6064 x 16384 85.2 / 86.7 -> 81.9 / 82.9 (96), 222 x
    /// 7352 x 20480 125.5 / 125.5 -> 117.9 / 119.5 (112), 219 x 7336 x 16384 100.8 / 100.1 ->
    /// 97.4 / 96.9 (112), 197 x 7192 x 8192 51.0 / 50.7 -> 48.3 / 49.7 (112), 202 x 7200 x
    /// 12288 74.5 -> 71.4 / 72.9 (112), 212 x 6992 x 10240 61.7 / 61.8 -> 59.3 / 59.2 (112), 215
    /// x 6272 x 10240 56.4 / 55.6 -> 54.4 / 54.0 (96), 248 x 6232 x 12288 67.7 -> 64.9 (96):
    /// 2-6% faster on all 10; run 387 below K = 8192, 216 x 5848 x 7168 40.6 / 40.4 -> 39.4 /
    /// 38.2 (96), 231 x 6288 x 6144 35.5 / 35.4 -> 35.2 / 34.0 (96), 225 x 7176 x 6144 40.1 /
    /// 39.8 -> 39.2 / 39.6 (112), 247 x 5192 x 6144 30.8 -> 29.9 / 30.0 (80): faster on all 4;
    /// at K = 4096 even (228 x 6312: 23.5 / 23.2 -> 23.3; 244 x 7056: 27.2 / 26.5 -> 27.0 /
    /// 26.8; 241 x 5272: 20.5 / 20.6 -> 20.7), as runs 375 and 379 found at 4096-5120, hence
    /// the bound (bench/NOTES.md 47.1-47.2). Run 389 (main -> this rule at the widths whose halves
    /// overlap; the same way, old default -> new): 254 x 5304 x 9216 45.3 / 46.0 -> 44.0 / 43.8
    /// (88 columns), 222 x 5520 x 14336 72.2 / 71.7 -> 67.4 / 68.0 (88), 225 x 6480 x 8192 45.9
    /// / 49.4 -> 45.4 / 47.1 (104), 245 x 6664 x 9216 53.9 / 54.7 -> 53.1 / 53.2 (104), 237 x
    /// 6680 x 19072 107.8 / 111.9 -> 102.7 / 107.4 (104), 228 x 7560 x 10240 67.0 / 73.5 -> 64.6
    /// / 73.0 (120), 197 x 7896 x 10240 67.5 / 69.0 -> 66.1 / 67.2 (120): 1-7% faster on all 7;
    /// 213 x 4744 x 6656 (72) 29.5 / 29.4 -> 29.3 / 29.8 (bench/NOTES.md 47.3). Run 390 (the
    /// wide widths above K = 14336, each forced, ms): 256 x 12288 x 16384 0.1642 / 0.1642 ->
    /// 0.1610 / 0.1618 (192 columns), 224 x 13312 x 20480 0.2132 / 0.2148 -> 0.2088 / 0.2096
    /// (208), 247 x 14280 x 20288 0.2332 / 0.2335 -> 0.2308 / 0.2296 (224): 1-2% faster on all
    /// 3. Run 395 (default against main's, the plain column tiles, two passes, ms): 236 x 11400
    /// x 15360 (176) 0.1457 / 0.1453 -> 0.1414 / 0.1412, 222 x 11600 x 19456 (176) 0.1821 /
    /// 0.1864 -> 0.1783 / 0.1827, 213 x 12352 x 20480 (192) 0.2093 / 0.2129 -> 0.2051 /
    /// 0.2088, 205 x 12800 x 18432 (200) 0.1878 / 0.1880 -> 0.1864 / 0.1867, 248 x 13104 x
    /// 16384 (200) 0.1742 / 0.1805 -> 0.1707 / 0.1782, 230 x 14600 x 17408 (224) 0.2111 /
    /// 0.2117 -> 0.2078 / 0.2099: 0.7-3% faster; 256 x 13824 x 15360 (216) even, 250 x 12000
    /// x 16384 (184) mixed (-1.9% / +5.1%, cuBLAS 3% apart between the two processes of pass
    /// 2): bench/NOTES.md 52.2.
    pub fn one_wave_cols_c2_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let width = current.bn;
        let ks = if (80..=120).contains(&width) {
            ONE_WAVE_COLS_C2_MIN_K..=ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K
        } else if (176..=224).contains(&width) {
            // (the widths the long-K rule takes in place of 128 x 256 tiles: run 390)
            ONE_WAVE_COLS_MAX_K + 1..=ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K
        } else {
            return None;
        };
        let applies = current == Self::cols_tma_store(width)
            && width.is_multiple_of(8)
            && Self::two_row_blocks_c2_shape(shape, ks)
            && Self::fills_two_thirds_of_one_wave(current.tiles(shape.m, shape.n), sm_count);
        applies.then(|| Self::cols_tma_store_c2(width))
    }

    /// The few-tiles rule's smaller tile at short K ([`Self::choose_for`], K < 4096; with a
    /// workspace `short_k_slices` splits it from K = 1536): in place of `current`, the 64 x 64 swapped TMA-store
    /// tile ([`Self::swapped_tma_store`]`(64)`) where it makes at most SMs / 2 tiles and
    /// computes no more elements than `current`'s tiles (tiles x rows x columns), M >= 65,
    /// N % 8 == 0, K % 64 == 0 and 1024 <= K < 4096 (as measured); `None` elsewhere, and
    /// where `current` is that tile. The same reasoning as
    /// [`Self::few_tiles_smaller_instead_of`]: 4x the CTAs, fewer rows per K block.
    ///
    /// Measured on one H200 (run 209, two passes, gated, ms, default (tiles) -> this tile
    /// (tiles); cuBLAS): 256 x 256 x 2048 (4 of 128 x 128 -> 16) 0.0153 -> 0.0115-0.0116
    /// (0.0073-0.0074), 512 x 512 x 2048 (16 -> 64) 0.0164 -> 0.0116-0.0118 (0.0084), 384 x
    /// 384 x 3072 (9 -> 36) 0.0213-0.0214 -> 0.0151 (0.0090-0.0091), 256 x 1024 x 1024
    /// 0.0103-0.0104 -> 0.0081, 1024 x 256 x 2048 0.0164-0.0165 -> 0.0116-0.0118, 128 x 512 x
    /// 3072 (8 of `swap-ab-64x128` -> 16) 0.0164 -> 0.0150-0.0151, 192 x 768 x 2048 (12 of
    /// `swap-ab-64x192` -> 36) 0.0147 -> 0.0115-0.0116, 640 x 384 x 1024 (15 -> 60) 0.0114 ->
    /// 0.0081-0.0082: 8-29% faster on all 8 (0.43-0.65 of cuBLAS -> 0.55-0.80).
    pub fn few_tiles_unsplit_smaller_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let small = Self::swapped_tma_store(64);
        if current == small || shape.m < 65 || !shape.k.is_multiple_of(64) || !(1024..4096).contains(&shape.k) || small.check_output(shape.n).is_err() {
            return None;
        }
        let tiles = small.tiles(shape.m, shape.n);
        (tiles >= 1 && tiles <= (sm_count / 2) as u64 && small.computed_elements(shape) <= current.computed_elements(shape)).then_some(small)
    }

    /// Few tiles at short K, after [`Self::few_tiles_unsplit_smaller_instead_of`]: in place of
    /// `current` where it is the 128 x 128 tile ([`Self::NARROW`] or its TMA-store twin) or
    /// a swapped tile of 64 rows of B and more than 64 rows of A (the small-M rule's for M =
    /// 65-256), the 64 x 128 TMA-store tile ([`Self::M64_NARROW_TMA_STORE`]) where it makes at
    /// most one wave of tiles (at most `sm_count`), N % 8 == 0, K % 64 == 0 and
    /// [`M64_SHORT_K_MIN`] <= K < 4096 (as measured); `None` elsewhere. Half the rows per
    /// K block on up to twice the CTAs: the K chain, which bounds these calls, is half as
    /// long a block. `Self::short_k_slices` splits it from K = [`SHORT_K_TWO_SLICES_MIN`].
    ///
    /// Measured on one H200 (run 247, 20 calls back to back, host-gated, two passes within
    /// 0.2 us, us a call, default -> this tile unsplit; cuBLAS): 128 x 128 in one-wave slices
    /// (29.3): 640 x 1024 x 2048 13.4 -> 10.4 (7.5), 384 x 2048 x 2048 14.1 -> 10.7 (8.7),
    /// 1024 x 1024 x 2048 14.6 -> 10.8 (9.4), 768 x 768 x 2048 13.0 -> 10.3 (9.2), 512 x
    /// 1536 x 3072 16.8 -> 14.5 (11.2), 256 x 2048 x 3072 15.8 -> 14.5 (9.5), 384 x 1536 x
    /// 3072 15.3 -> 14.4 (10.4); swapped 64 x 96..192 unsplit: 192 x 2048 x 2048 12.7 ->
    /// 10.5 (7.6), 192 x 4096 x 2048 13.3 -> 10.9 (10.1), 160 x 2048 x 3072 16.2 -> 14.4
    /// (9.9), 128 x 3072 x 3072 15.2 -> 14.5 (9.9), 96 x 2048 x 2048 10.6 -> 10.4 (7.1). The
    /// swapped 64 x 128 tile ran within 0.3 us of this one; the swapped 128 x 128 slower.
    /// Run 250 (the same, K = 1024-1536): 640 x 1024 x 1024 9.3 -> 6.7 (5.5), 384 x 2048 x
    /// 1024 9.3 -> 6.7 (5.8), 160 x 3072 x 1024 7.9 -> 6.6 (5.4), 512 x 2048 x 1536 12.3 ->
    /// 8.7 (8.6), 768 x 768 x 1536 11.8 -> 8.5 (7.7), 192 x 2048 x 1536 10.5 -> 8.3 (6.2).
    pub fn few_tiles_short_k_m64_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let m64 = Self::M64_NARROW_TMA_STORE;
        let replaces = current == Self::NARROW || current == Self::NARROW_TMA_STORE || (current.swap_ab && current.bm == 64 && current.bn > 64 && current.cluster_m == 1);
        if !replaces || !shape.k.is_multiple_of(64) || !(M64_SHORT_K_MIN..4096).contains(&shape.k) || m64.check_output(shape.n).is_err() {
            return None;
        }
        let tiles = m64.tiles(shape.m, shape.n);
        (tiles >= 1 && tiles <= sm_count as u64).then_some(m64)
    }

    /// One wave of narrower tiles, after the few-tiles rules: for 193 <= M <=
    /// [`ONE_WAVE_COLS_MAX_M`] where the default's tiles leave SMs idle, the narrowest 128-row
    /// TMA-store tile (48, 56, ..., 248 columns, a multiple of 8, or the 128 x 128 one) whose
    /// tiles fill one wave (at most `sm_count`, more than `sm_count` / 2), where its busiest
    /// SM computes fewer elements of C per K block (128 x its width) than `current`'s does:
    /// the tile's rows x columns times the waves of `current`'s tiles, over the slices
    /// [`Self::few_tiles_slices`] cuts them into (from K = 4096, 128 x 128 tiles filling a
    /// third to a half of the SMs run split in 2). `current`'s tiles must fill more than a
    /// third of the SMs. It replaces the 128 x 128 and 128 x 256 TMA-store tiles; above M =
    /// 256 also the 128 x 128 tile with the register epilogue ([`Self::NARROW`]; `choose_for`
    /// gives its TMA-store twin on the shapes this rule takes since run 296), where they fit one wave, and where they are split only if the busiest SM
    /// computes at most 3/4 of their elements; above M = 256 also the 64 x 256 TMA-store tile
    /// ([`Self::M64_WIDE_TMA_STORE`], often the default where M % 128 is 1..=64) where its
    /// tiles fit one wave unsplit and the width cuts at least an eighth of their elements (W
    /// <= 112). N > 160, K % 64 == 0, N % 8 == 0 and [`ONE_WAVE_COLS_MIN_K`] <= K <=
    /// [`ONE_WAVE_COLS_MAX_K`], at M <= 256 from [`ONE_WAVE_COLS_SHORT_MIN_K`] in place of the
    /// 128 x 128 TMA-store tile where its tiles fill at most two thirds of the SMs, and up to
    /// [`ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K`] in place of that tile or the 128 x 256 one where its tiles fill more
    /// than two thirds and the width cuts at least an eighth (as measured). `None` elsewhere.
    ///
    /// At ragged M the rule stayed off two families until the last row block read A inside
    /// its bounds (`a_row0` in sm90_gemm.cuh, run 317): M % 128 in 1..=32 (run 303), and the
    /// 64 x 256 tile (run 270: the rule's tiles slower on 5 of 6 shapes). Run 318 (two passes,
    /// ms, main -> this rule's width; `--check` PASS): in place of 128 x 128 (or its -n2 twin,
    /// or split in 2) at M % 128 in 1..=32, 3845 x 288 x 4096 0.0345 -> 0.0219, 3995 x 288 x
    /// 7168 0.0604 -> 0.0368-0.0395, 2957 x 320 x 14336 0.077 -> 0.061, 3602 x 192 x 8192
    /// 0.0459 -> 0.034-0.035, 1056 x 1024 x 8192 0.047 -> 0.037-0.038, 1440 x 960 x 8192 0.049-0.050
    /// -> 0.042-0.043 (0.78 -> 0.98 of cuBLAS), 1174 x 1152 x 8192 0.051 -> 0.045, 2591 x 512 x
    /// 7168 0.045 -> 0.039-0.042: 4-37% faster on 18 of 22, 3% on one and even on one (2700
    /// x 640 x 2048; 2566 x 704 x 7168 -3%); slower on 1807 x 384 x 4096 (+4%) and 2959 x 224 x 14336 (+21%), both
    /// 48 columns in place of 128 x 128 in 2 slices, as 2944 x 224 x 14336 already took. In
    /// place of the 64 x 256 tile (forced): 562 x 2240 x 8192 0.050-0.051 -> 0.042, 651 x 1664
    /// x 4096 0.028 -> 0.021, 297 x 3968 x 8192 0.052 -> 0.045, 658 x 2240 x 8192 0.052 ->
    /// 0.048, 800 x 1984 x 8192 0.052-0.053 -> 0.049-0.050; 408 x 3776 x 14336 (120 columns)
    /// 0.088-0.089 -> 0.091-0.092, hence the eighth.
    ///
    /// Why: at M = 256 (two row blocks) the 128 x 128 tiles of N = 4225..8064 make 68..126
    /// tiles on 132 SMs, the 128 x 256 ones of N = 8449..16896 (below, the small-M rule's
    /// swapped tile) 68..132; at M = 1024 the 128 x 128 tiles of N = 1280 make 80; each SM
    /// that has one runs its whole K loop while the others idle (the calls are bound by the
    /// busiest SM's work, not by L2: run 263's tiles that read less from L2 were all slower).
    ///
    /// Measured on one H200 (run 264, back to back x20, host-gated, two passes, ms, default
    /// -> this rule's tile; cuBLAS): 128 x 256 defaults: 256 x 10240 x 8192 0.0975-0.0989 ->
    /// 0.0726-0.0741 (160 columns; 0.0639), 256 x 10240 x 4096 0.0511-0.0513 -> 0.0386-0.0395
    /// (0.0340), 256 x 14336 x 4096 0.0589 / 0.0542 -> 0.0576 / 0.0576 (224; slower in one
    /// pass), 256 x 14336 x 8192 0.1126-0.1128 -> 0.1081-0.1087 (0.0931); 128 x 128 defaults:
    /// 256 x 5120 x 8192 0.0512-0.0514 -> 0.0494-0.0500 (80), 256 x 5120 x 5120 0.0330-0.0336
    /// -> 0.0311, 256 x 5120 x 6912 0.0442-0.0449 -> 0.0415-0.0423, 256 x 5120 x 3456
    /// 0.0230-0.0258 -> 0.0217-0.0226, 256 x 6144 x 4096 0.0288-0.0291 -> 0.0276-0.0278 (96),
    /// 256 x 6144 x 8192 0.0557-0.0575 -> 0.0542-0.0553, 256 x 7168 x 4096 0.0308-0.0310 ->
    /// 0.0294-0.0297 (112), 256 x 7168 x 8192 0.0592-0.0595 -> 0.0583-0.0584, 256 x 7168 x
    /// 5120 0.0384-0.0389 -> 0.0371-0.0377, 256 x 6912 x 5120 0.0369-0.0373 -> 0.0363-0.0370
    /// (112); split in 2 by the few-tiles rule: 256 x 3584 x 4096 0.0211 -> 0.0201-0.0204
    /// (56), 256 x 3584 x 5120 0.0252-0.0253 -> 0.0240, 256 x 3072 x 4096 0.0198-0.0199 ->
    /// 0.0186-0.0189 (48): faster in both passes on 16 of 17. Where the width does not cut
    /// the busiest SM's columns (64 against 128 x 128 split in 2) it was 4% faster at 256 x
    /// 4096 x 4096 and 13% slower at 256 x 4096 x 7168 (0.0342-0.0343 -> 0.0388-0.0395),
    /// hence the rule's comparison. Two slices of twice the width beat this rule's tile only
    /// at N = 5120 with K >= 6912 (160 columns: 4-10%) and at 6144 x 8192 (1%), and lost by
    /// 11-35% at N = 7168 (224 columns) and 23% at 6912 (216). Run 265 (the same, the old
    /// default forced, shapes not timed before): 256 x 8704 x 4096 0.0476 -> 0.0321 (136
    /// columns), 256 x 9216 x 8192 0.0925 -> 0.0643 (144), 256 x 12288 x 4096 0.0536 -> 0.0437
    /// (192), 224 x 10240 x 8192 0.1092 -> 0.0910, 193 x 9216 x 3456 0.0419 -> 0.0338, 240 x
    /// 3584 x 4096 0.0209-0.0212 -> 0.0198-0.0199, 200 x 5120 x 8192 0.0581-0.0586 ->
    /// 0.0558-0.0560; the model map's 16 rows on the rule at M = 256 all faster (Llama-3-70B's
    /// qkv on one GPU, 256 x 10240 x 8192, 0.66 -> 1.01 of cuBLAS). Run 266 (the same, outside
    /// run 264's K = 3456..8192): 256 x 10240 x 2048 0.0279 -> 0.0201-0.0203 (160; cuBLAS
    /// 0.0193), 256 x 10240 x 3072 0.0389-0.0390 -> 0.0281-0.0283, 256 x 5120 x 2048 0.0146-0.0147 -> 0.0127-0.0128
    /// (80), 256 x 5120 x 2560 0.0172-0.0174 -> 0.0151-0.0152, 256 x 6144 x 3072 0.0215-0.0217
    /// -> 0.0201-0.0202 (96), 256 x 7168 x 2048 0.0158-0.0159 -> 0.0152-0.0153 (112), 256 x
    /// 5120 x 9216 0.0551-0.0554 -> 0.0519-0.0525, 256 x 7168 x 9216 0.0635-0.0653 ->
    /// 0.0623-0.0628, 256 x 7168 x 14336 0.0993-0.0996 -> 0.0960-0.0961, 256 x 6144 x 14336
    /// 0.0911-0.0930 -> 0.0886-0.0902, and where the two-rounds rule split the default in 3
    /// ([`Self::split_two_rounds_for`], which this rule now comes before up to K = 14336): 256 x
    /// 5120 x 13824 0.0799-0.0800 -> 0.0776-0.0778, 256 x 10240 x 14336 0.1504-0.1508 ->
    /// 0.1219-0.1220: faster on all 12, hence K = 2048..=14336.
    /// Run 269 (the same, M = 384-2048, 128 x 128 default with the register epilogue, one wave,
    /// unsplit -> this rule's tile): 1024 x 1280 x 8192 0.0494-0.0495 -> 0.0456-0.0460 (80;
    /// cuBLAS 0.0308), 512 x 2560 x 8192 0.0501-0.0502 -> 0.0465-0.0468, 640 x 2048 x 8192
    /// 0.0499-0.0506 -> 0.0462-0.0464, 1280 x 1024 x 8192 0.0496-0.0501 -> 0.0455-0.0459, 512
    /// x 2560 x 4096 0.0271-0.0273 -> 0.0234-0.0239, 1024 x 1536 x 4096 0.0285 -> 0.0250 (96),
    /// 512 x 3072 x 8192 0.0526-0.0532 -> 0.0504-0.0505, 768 x 2048 x 8192 0.0526-0.0527 ->
    /// 0.0498-0.0502, 2048 x 768 x 8192 0.0537-0.0548 -> 0.0502-0.0503, 384 x 4096 x 8192
    /// 0.0546-0.0550 -> 0.0518-0.0524, 384 x 3072 x 8192 0.0488-0.0494 -> 0.0445-0.0449 (72),
    /// 768 x 1536 x 4096 0.0263-0.0267 -> 0.0229-0.0231, 1536 x 768 x 8192 0.0482-0.0483 ->
    /// 0.0446-0.0450, 1024 x 1792 x 5120 0.0362-0.0366 -> 0.0333-0.0334 (112), 512 x 3584 x
    /// 8192 0.0568-0.0575 -> 0.0540-0.0547, 2048 x 896 x 8192 0.0562-0.0563 -> 0.0533: 4-14%
    /// faster in both passes on 18 of 20 (all rows: bench/NOTES.md 33.1); 1536 x 1024 x
    /// 8192 (0.0525-0.0528 -> 0.0496 / 0.0546, 96) and 640 x 1792 x 8192 (0.0482-0.0484 ->
    /// 0.0435 / 0.0495, 72) faster in one pass, 2-4% slower in the other (where cuBLAS moved
    /// as much). The 128 x 256 tile in 2-3 K-slices was slower than this rule's tile in both
    /// passes on 18 of 20 (in one on 640 x 1792 and 768 x 1536 x 8192). Run 270 (the old default against this
    /// rule's, two passes in both orders, ms): at K outside 4096..8192 1024 x 1280 x 2048
    /// 0.0165 -> 0.0124 (80), 640 x 2048 x 2048 0.0163-0.0165 -> 0.0124, 1024 x 1280 x 3072
    /// 0.0215 -> 0.0176-0.0177, 512 x 3072 x 3072 0.0223-0.0227 -> 0.0198-0.0200 (96), 768 x
    /// 2048 x 14336 0.0914-0.0915 -> 0.0887-0.0888, 1024 x 1536 x 14336 0.0893-0.0905 ->
    /// 0.0873-0.0882; 1500 x 1280 x 8192 even (0.0565 -> 0.0557-0.0564, 120); the 128 x 256 tile's
    /// place at M = 321-512: 512 x 6144 x 8192 0.0984 -> 0.0809-0.0829 (192), 321 x 8456 x
    /// 2048 0.0281 -> 0.0240-0.0241 (200), 512 x 7168 x 4096 0.0538-0.0539 -> 0.0516-0.0517
    /// (224), 512 x 7936 x 4096 0.0552-0.0554 -> 0.0547 (248); 128 x 128 tiles split in 2:
    /// 1024 x 768 x 4096 0.0197 -> 0.0186-0.0187 (48), 512 x 1536 x 4096 0.0195-0.0196 ->
    /// 0.0184-0.0185, 512 x 1536 x 8192 0.0319-0.0324 -> 0.0307-0.0310 (96 in 2), 1024 x 768 x
    /// 8192 0.0317-0.0324 -> 0.0317-0.0321, but 1024 x 896 x 5120 0.0231-0.0234 ->
    /// 0.0243-0.0246 (56), hence the quarter. The model map at M = 1024: Llama-3-70B's qkv on
    /// 8 GPUs 0.63 -> 0.80 of cuBLAS, Llama-3-8B's on 4 0.71 -> 0.83.
    /// Runs 264-272 timed the replaced tiles' partial grids under the programmatic launch's
    /// early trigger, which slowed them at ragged M (run 276). Run 280, with the trigger at
    /// exit (this rule's pick against the 128 x 128 and 128 x 256 TMA-store tiles split as
    /// the few-tiles rule would, ms): 321 x 8456 x 2048 0.0226-0.0228 / 0.0276-0.0284 /
    /// 0.0273-0.0274, 200 x 5120 x 8192 0.0425 / 0.0479-0.0487 / 0.0489-0.0491, 193 x 9216 x
    /// 3456 0.0279-0.0282 / 0.0437 / 0.0413, 1000 x 1272 x 4096 0.0233 / 0.0245-0.0249 /
    /// 0.0283-0.0287, 510 x 7160 x 4096 0.0512-0.0519 / 0.0550-0.0580 / 0.0524-0.0529, 1000 x
    /// 760 x 4096 0.0186-0.0187 / 0.0194-0.0195 / 0.0257-0.0259, 256 x 10240 x 8192
    /// 0.0715-0.0726 / 0.1041-0.1049 / 0.0953-0.0956: ahead on 11 of 14, even on 1500 x 1280
    /// x 8192, 1001 x 1784 x 2048 and 250 x 3576 x 4096 (bench/NOTES.md 34.3).
    pub fn one_wave_cols_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let above_256 = shape.m > 256;
        let m64 = current == Self::M64_WIDE_TMA_STORE;
        let replaces = current == Self::NARROW_TMA_STORE || current == Self::WIDE_TMA_STORE || (above_256 && (current == Self::NARROW || m64));
        if !Self::one_wave_cols_shape(shape) || !replaces || sm_count < 3 {
            return None;
        }
        let sms = sm_count as u64;
        let tiles = current.tiles(shape.m, shape.n);
        // (above M = 256 measured only where `current`'s tiles fit one wave)
        if tiles * 3 <= sms || (above_256 && tiles > sms) {
            return None;
        }
        // (below ONE_WAVE_COLS_MIN_K measured only in place of 128 x 128 tiles filling at most two thirds)
        if shape.k < ONE_WAVE_COLS_MIN_K && (current != Self::NARROW_TMA_STORE || tiles * 3 > sms * 2) {
            return None;
        }
        // (above ONE_WAVE_COLS_MAX_K, at two row blocks, only in place of 128 x 128 or 128 x 256
        // tiles filling more than two thirds, and below where the width cuts at least an eighth)
        let long_k = shape.k > ONE_WAVE_COLS_MAX_K;
        if long_k && ((current != Self::NARROW_TMA_STORE && current != Self::WIDE_TMA_STORE) || tiles * 3 <= sms * 2) {
            return None;
        }
        // The elements the busiest SM computes per K block: waves of tiles times the tile's
        // rows x columns, over the slices the few-tiles rule cuts each tile into (x2 to stay
        // whole; as the split rules do, the register-epilogue tile counts as its TMA-store twin).
        let slices = Self::twin_that_splits(current, shape).few_tiles_slices(shape, sm_count).unwrap_or(1) as u64;
        if m64 && slices > 1 {
            return None;
        }
        let current_elems2 = tiles.div_ceil(sms) * current.bm as u64 * current.bn as u64 * 2 / slices;
        let (t, t_tiles) = Self::narrowest_fitting(shape, 48, 256, 1, sms)?;
        let fills = t_tiles * 2 > sms;
        let elems2 = t.bm as u64 * t.bn as u64 * 2;
        // (above M = 256, in place of split tiles only where it cuts a quarter: run 270's 56
        // columns against 64 a K block were 5% slower at 1024 x 896 x 5120, 48 faster)
        // (in place of the 64 x 256 tile where it cuts an eighth: run 318's 120 columns, 6% fewer,
        // were 3% slower at 408 x 3776 x 14336; 80-112 columns 5-24% faster)
        let cuts = if m64 || long_k {
            elems2 * 8 <= current_elems2 * 7
        } else if above_256 && slices > 1 {
            elems2 * 4 <= current_elems2 * 3
        } else {
            elems2 < current_elems2
        };
        (t != current && fills && cuts).then_some(t)
    }

    /// The narrowest 128-row TMA-store tile `from..=to` columns wide (multiples of 8 from
    /// `from`) whose tiles for `shape`, each in `slices` K-slices, fit one wave of `sms` SMs
    /// (tiles x slices <= SMs), with its tile count; `None` if none does. The one-wave width
    /// (48..=256, unsplit) and the split rules' widths ([`Self::split_one_wave_cols_for`],
    /// [`Self::few_tiles_narrower_instead_of`]).
    fn narrowest_fitting(shape: GemmShape, from: u32, to: u32, slices: u64, sms: u64) -> Option<(Self, u64)> {
        (from..=to)
            .step_by(8)
            .map(Self::rows128_tma_store)
            .map(|t| (t, t.tiles(shape.m, shape.n)))
            .find(|&(_, tiles)| tiles.saturating_mul(slices) <= sms)
    }

    /// The shapes [`Self::one_wave_cols_instead_of`] was measured on: 193 <= M <=
    /// [`ONE_WAVE_COLS_MAX_M`], N > 160 (N <= 160 is the small-N rule's, which comes last in `choose_for`), N % 8 ==
    /// 0, K % 64 == 0, [`ONE_WAVE_COLS_MIN_K`] <= K <= [`ONE_WAVE_COLS_MAX_K`]; at M <= 256
    /// from K = [`ONE_WAVE_COLS_SHORT_MIN_K`] to [`ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K`].
    fn one_wave_cols_shape(shape: GemmShape) -> bool {
        let (min_k, max_k) =
            if shape.m <= 256 { (ONE_WAVE_COLS_SHORT_MIN_K, ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K) } else { (ONE_WAVE_COLS_MIN_K, ONE_WAVE_COLS_MAX_K) };
        (193..=ONE_WAVE_COLS_MAX_M).contains(&shape.m)
            && shape.n > 160
            && shape.n.is_multiple_of(8)
            && shape.k.is_multiple_of(64)
            && (min_k..=max_k).contains(&shape.k)
    }

    /// Where [`Self::split_one_wave_cols_for`] leaves the one-wave-cols rule's W columns
    /// unsplit since the producer warp (NOTES 36.3): above M = 256 with K >=
    /// [`ONE_WAVE_COLS_UNSPLIT_MIN_K`] and W >= [`ONE_WAVE_COLS_UNSPLIT_MIN_WIDTH`] (until
    /// run 318 also only where the last row block's padding rows were at most a tenth of M
    /// rounded up to 128: below, as it was then measured, and 40.2 in bench/NOTES.md). There 2W in
    /// 2 slices had won while the producer thread bounded the narrow tiles; now W unsplit is ahead (run 296, two passes, ms, 2W in 2 -> W): 512 x
    /// 2560 x 8192 0.0393 -> 0.0379-0.0381, 640 x 2048 x 8192 0.0395-0.0400 -> 0.0383-0.0390,
    /// 1024 x 1536 x 14336 0.0748 / 0.0855 -> 0.0724 / 0.0786, 2000 x 760 x 14336 0.0750-0.0751
    /// -> 0.0732-0.0737, 2048 x 768 x 8192 0.0463-0.0471 -> 0.0427-0.0428, 384 x 4096 x 14336
    /// 0.0787 / 0.0847 -> 0.0756 / 0.0806, 1000 x 1400 x 8192 0.0428-0.0437 -> 0.0388-0.0395,
    /// 479 x 2648 x 8192 0.0431 / 0.0462 -> 0.0390 / 0.0422, 1024 x 1408 x 14336 0.0658 /
    /// 0.0678 -> 0.0653 / 0.0662, 768 x 1536 x 8192 and 512 x 3072 x 14336 even; run 294:
    /// 1024 x 1280 x 8192 0.0401-0.0402 -> 0.0383-0.0388, 1024 x 1536 x 8192 0.0462-0.0465 ->
    /// 0.0425-0.0428, 768 x 2048 x 8192 0.0466-0.0469 -> 0.0433-0.0439, 384 x 3072 x 8192
    /// 0.0375-0.0376 -> 0.0370-0.0373; run 297 (ragged M, 2W in 2 -> W): 352 x 3536 x 8192
    /// (32 padding rows of 384) 0.0422 / 0.0446 -> 0.0368 / 0.0380, 368 x 3536 x 8192
    /// 0.0427 / 0.0443 -> 0.0380 / 0.0392, 968 x 1400 x 8192 (56 of 1024) 0.0423-0.0427 ->
    /// 0.0381 / 0.0394, 976 and 992 x 1400 x 8192 the same. Still split then: M padded by more
    /// than a tenth (run 297, 3 row blocks, 2W in 2 against W: 321 x 3536 x 8192 0.0420-0.0422
    /// against 0.0507-0.0512, 328 x 3536 x 8192 0.0421-0.0424 against 0.0500-0.0503, 336 x
    /// 3536 x 8192 0.0424-0.0427 against 0.0435-0.0448; not understood: the same 123 tiles of
    /// 128 x 88 take 0.0368 at M = 352; the last row block's A box out of bounds, run 317: W
    /// unsplit 0.042-0.043 with it inside A, run 318), W = 48 (373 x 2048 x 14336 0.0413 / 0.0452 against
    /// 0.0504 / 0.0563; 1024 x 768 x 8192 0.0290 / 0.0313 against 0.0320 / 0.0314; 730 x 1024 x
    /// 8192 0.0327-0.0332 against 0.0315-0.0318), 1024 x 1152 x 6912 (0.0305 / 0.0319 against
    /// 0.0309 / 0.0343), and at M <= 256, where 2W in 2 still won on 5 of 10
    /// shapes (256 x 3072 x 14336 0.0428-0.0429 against 0.0507-0.0516, 200 x 5120 x 6912
    /// 0.0358-0.0366 against 0.0431-0.0433; W ahead on 256 x 4352 x 6912 and 256 x 5120 x
    /// 14336 by 3-5%, even on 3) (bench/NOTES.md 37.3).
    fn one_wave_cols_unsplit_wins(shape: GemmShape, width: u32) -> bool {
        shape.m > 256 && shape.k >= ONE_WAVE_COLS_UNSPLIT_MIN_K && width >= ONE_WAVE_COLS_UNSPLIT_MIN_WIDTH
    }

    /// The plain GEMM's fifth split rule, with the one-wave-cols rule's default
    /// ([`Self::one_wave_cols_instead_of`]: W columns, one wave of tiles, in place of the 128 x
    /// 128, 128 x 256 or, above M = 256, 64 x 256 tiles) where 48 <= W <=
    /// [`ONE_WAVE_COLS_SPLIT_MAX_WIDTH`] and not where W unsplit wins (`one_wave_cols_unsplit_wins`:
    /// above M = 256 from K = 8192 only W < 72): tiles twice as wide, 2W <= 160
    /// columns (`cols-128x96/112/144/160-tma-store`; at W = 64 the 128 x 128 tiles are
    /// either at most half the SMs' and split by the few-tiles rule, or more, as 500 x 2056's
    /// 68, and 2 slices of them overfill one wave), every tile in 2 K-slices, where those
    /// make at most one wave of slices; above M = 256, where 2W's slices overfill one wave
    /// (W = 48-64), the narrowest wider width up to [`ONE_WAVE_COLS_SPLIT_STEP_MAX_WIDTH`]
    /// whose slices fit (104-144 columns; run 324); [`ONE_WAVE_COLS_SPLIT_MIN_K`] <= K <=
    /// [`ONE_WAVE_COLS_MAX_K`] (as measured; above, the one-wave width stays unsplit at two row
    /// blocks, [`ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K`]), within the workspace's `scratch_bytes`
    /// and `counts_len`. `None` elsewhere. At 2W the same
    /// columns for the busiest SM over half the K loop (at the wider widths up to 1.5 times
    /// as many: 144 for W = 48), on tiles whose wgmma is twice as wide or more
    /// (5 stages at 160 columns; 176-192, 4 stages, were split too until run 318; the
    /// 224-column tile's 3 lost, 32.4).
    ///
    /// Run 277 (after the programmatic launch's early trigger was dropped, which had cost
    /// partial grids such as the 64 x 256 default's 3-14 us; ms, two passes; the 64 x 256
    /// default / 128 x 128 / W unsplit / 2W in 2): 520 x 1808 x 8192 0.0508-0.0533 /
    /// 0.0449-0.0452 / 0.0574-0.0583 / 0.0460-0.0476 (W = 72), 654 x 1544 x 8192 0.0479-0.0480
    /// / 0.0448-0.0451 / 0.0454-0.0457 / 0.0435-0.0436, 899 x 1040 x 8192 0.0495-0.0553 /
    /// 0.0448-0.0454 / 0.0521-0.0537 / 0.0429-0.0430, at K = 4096 (not taken) even or 9%;
    /// W = 96 in place of the 64 x 256 default mixed (520 x 2312 x 8192 -10%, 913 x 1424 x
    /// 8192 -7%, 780 x 1592 x 8192 +1%, 654 x 1952 x 8192 +11%), hence W <= 80 there. Run
    /// 275 (W = 96 unsplit -> 192 in 2 slices): 1024 x 1536 x 8192 0.0502-0.0503 -> 0.0478,
    /// 1024 x 1536 x 14336 0.0855-0.0876 -> 0.0780-0.0790, 512 x 3072 x 8192 0.0504-0.0519 ->
    /// 0.0487-0.0498, 512 x 3072 x 14336 0.0895 -> 0.0799-0.0813, 768 x 2048 x 8192
    /// 0.0506-0.0624 -> 0.0485-0.0540, 384 x 4096 x 8192 even; at K = 6912 even or 2% slower.
    /// Run 278 (the defaults before these two extensions against after, two passes in both
    /// orders, `--check` PASS on all rows; ms): in place of the 64 x 256 tile 313 x 3392 x
    /// 8192 0.0486 -> 0.0393-0.0397 (160), 414 x 2528 x 8192 0.0483 -> 0.0384-0.0386, 433 x
    /// 2480 x 6912 0.0411 -> 0.0334, 563 x 2000 x 6912 0.0408 -> 0.0353, 822 x 1352 x 8192
    /// 0.0467 -> 0.0417-0.0420, 899 x 1040 x 14336 0.081-0.096 -> 0.065 (144), 520 x 1808 x
    /// 8192 0.0475-0.0480 -> 0.0461-0.0462, 257 x 3344 x 8192 even (0.0485 -> 0.0479 / 0.0519);
    /// 176 columns: 321 x 3536 x 8192 0.0499-0.0507 -> 0.0428-0.0431, 479 x 2648 x 8192
    /// 0.0455-0.0464 -> 0.0426-0.0429, 598 x 2120 x 8192 0.0442-0.0446 -> 0.0421-0.0424, 1000 x
    /// 1400 x 8192 0.0462-0.0466 -> 0.0427-0.0431, 1396 x 1040 x 8192 0.0463-0.0473 ->
    /// 0.0429-0.0430, 1024 x 1408 x 14336 0.0780-0.0785 -> 0.0672; 192 columns: 1024 x 1536 x
    /// 8192 0.0482 -> 0.0456, 2000 x 760 x 14336 0.0826-0.0833 -> 0.0744-0.0753, 384 x 4096 x
    /// 14336 0.0864-0.0879 -> 0.0778, 2048 x 768 x 8192 0.0485-0.0487 -> 0.0461.
    ///
    /// Measured on one H200 (run 267, back to back x20, host-gated, two passes, ms, W unsplit
    /// -> 2W in 2 slices; cuBLAS): 256 x 3072 x 8192 0.0378 -> 0.0314-0.0315 (0.0266), 256 x
    /// 3072 x 14336 0.0648-0.0655 -> 0.0515 (0.0406), 256 x 3584 x 8192 0.0394-0.0398 -> 0.0342,
    /// 256 x 3584 x 14336 0.0684-0.0694 -> 0.0561-0.0570, 256 x 4352 x 8192 0.0450 -> 0.0396, 256
    /// x 4352 x 6912 0.0382 -> 0.0345, 256 x 4608 x 8192 0.0462-0.0463 -> 0.0403-0.0411, 256 x
    /// 4608 x 14336 0.0789-0.0796 -> 0.0641-0.0642, 256 x 4608 x 6912 0.0388-0.0395 ->
    /// 0.0356-0.0359, 224 x 5120 x 8192 0.0476-0.0478 -> 0.0454-0.0456, 256 x 5120 x 14336
    /// 0.0859-0.0877 -> 0.0722-0.0733, 200 x 5120 x 6912 0.0478-0.0479 -> 0.0414: 4-21% faster
    /// on all 12; runs 264 and 266 at N = 5120: 4-13% from K = 6912 (0.0419 -> 0.0400 there),
    /// 2% slower at 5120, 14-41% at K <= 3456; even at 256 x 3072 x 4096, 5-6% slower at 256 x
    /// 3584 x 5120. Run 268 (the old default, 128 x 128 tiles split in 2 where at most half the
    /// SMs', against this rule's pick, one pass): 256 x 3072 x 8192 0.0336 -> 0.0291, 250 x
    /// 3072 x 14336 0.0541 -> 0.0515, 256 x 5120 x 8192 (80 tiles unsplit) 0.0508 -> 0.0452.
    /// Run 269 (M = 384-1024, K = 8192, W unsplit -> 2W in 2 slices): 1024 x 1280 x 8192
    /// 0.0456-0.0460 -> 0.0408-0.0412 (cuBLAS 0.0308), 512 x 2560 x 8192 0.0465-0.0468 ->
    /// 0.0421-0.0425, 640 x 2048 x 8192 0.0462-0.0464 -> 0.0416-0.0420, 448 x 2560 x 8192
    /// 0.0468-0.0478 -> 0.0454-0.0458, 384 x 3072 x 8192 0.0445-0.0449 -> 0.0388-0.0389, 768 x
    /// 1536 x 8192 0.0439-0.0449 -> 0.0374-0.0377, 640 x 1792 x 8192 0.0435 / 0.0495 ->
    /// 0.0377-0.0379: 2-23% faster pass by pass on all 7 (448 x 2560's default is the 64 x 256
    /// tile since run 270, which run 278's extension replaced by 160 columns in 2 again, and
    /// run 319's rule by 80 columns unsplit); where the slices make more than one wave (1280 x
    /// 1024 x 8192: 140 on 132 SMs) 0.0673-0.0678, hence the bound. At W = 96 (192 columns in
    /// 2) 2-5% faster than W unsplit on four shapes at K = 8192, 10% slower at 4096; 224 columns
    /// 7-10% slower at 8192: W <= 80 stayed then (run 275 took 176 and 192 columns from K =
    /// 8192 above M = 256, below).
    /// Run 272 (K = 6912, 2W = 144 in 2 against W unsplit and the old 128 x 128 default): 1024
    /// x 1152 x 6912 0.0321-0.0324 / 0.0368-0.0375 / 0.0398-0.0403, 768 x 1536 x 6912
    /// 0.0330-0.0344 / 0.0374-0.0376 / 0.0409-0.0433, 384 x 3072 x 6912 0.0340-0.0348 /
    /// 0.0383-0.0385 / 0.0416-0.0427.
    pub fn split_one_wave_cols_for(shape: GemmShape, sm_count: u32, scratch_bytes: u64, counts_len: u64) -> Option<(Self, u32)> {
        // (the shape checks first: the default's tile is not computed for other shapes)
        if shape.k < ONE_WAVE_COLS_SPLIT_MIN_K || shape.k > ONE_WAVE_COLS_MAX_K || !Self::one_wave_cols_shape(shape) {
            return None;
        }
        let current = Self::choose_for_before_one_wave_cols(shape, sm_count);
        let w = Self::one_wave_cols_instead_of(current, shape, sm_count)?;
        if Self::one_wave_cols_unsplit_wins(shape, w.bn) || w.bn > ONE_WAVE_COLS_SPLIT_MAX_WIDTH {
            return None;
        }
        // 2W, or above M = 256 where 2W's slices overfill one wave, the narrowest wider width up to
        // ONE_WAVE_COLS_SPLIT_STEP_MAX_WIDTH whose slices fit one wave (run 324)
        let widest = if shape.m > 256 { (w.bn * 2).max(ONE_WAVE_COLS_SPLIT_STEP_MAX_WIDTH) } else { w.bn * 2 };
        let (t, tiles) = Self::narrowest_fitting(shape, w.bn * 2, widest, 2, sm_count as u64)?;
        t.split_fits(tiles, 2, scratch_bytes, counts_len).then_some((t, 2))
    }

    /// Elements of C this tile's grid computes for `shape`, padding included: tiles x rows x
    /// columns (for a swapped tile, its B rows x A rows).
    fn computed_elements(&self, shape: GemmShape) -> u64 {
        self.tiles(shape.m, shape.n).saturating_mul(self.bm as u64 * self.bn as u64)
    }

    /// Rows of B (columns of C) this tile computes past N in its last block of N: N rounded
    /// up to the tile's extent along N (BN, or BM for a swapped-operand tile), less N.
    fn n_padding(&self, n: u32) -> u32 {
        let w = if self.swap_ab { self.bm } else { self.bn }.max(1);
        n.div_ceil(w).saturating_mul(w) - n
    }

    /// The small-N rule of [`Self::choose_for`], its last step but the cluster-N one
    /// ([`Self::cluster_n_instead_of`], which acts where this rule keeps the 128 x 128 tile): for N <= 160 (an MoE router:
    /// N experts, K hidden, M tokens) with N % 8 == 0 and K % 64 == 0: for N <= 32 and M >=
    /// 64 the 128-row TMA-store tile exactly N columns wide ([`Self::cols_tma_store`], its
    /// wgmma's n holding N: no padding), which [`Self::split_few_tiles_for`] splits along K
    /// where its tiles are few; above, for M >= 65, the 64-row
    /// swapped TMA-store tile ([`Self::swapped_tma_store`]: 64 of B's N rows, `rows` rows
    /// of A per tile) with 64 rows of A where that makes at most SMs / 2 tiles (which
    /// [`Self::split_few_tiles_for`] splits along K from K = 1536), else 128 where that
    /// makes at most one wave, else (N <= 64 only) 256. `None` elsewhere. `choose_for` takes
    /// it in place of whatever the other rules chose, above N = 64 only where their tile
    /// pads N at least as much (so not the 128 x 136 tile at N = 136).
    ///
    /// Why: the 128-row tiles the other rules take are 128-136 columns wide, 2-17x the
    /// columns N needs. These shapes stream A from DRAM once and run at the rate the bytes
    /// of A in flight allow: 8 stages of 128 rows hold 128 KiB per SM, of 64 rows 64 KiB,
    /// so 128 rows win once 64-row tiles are too many to split (8192 x 16 x 7168: 128
    /// tiles of 64 rows 0.050 ms, 64 of 128 rows in 2 slices 0.039).
    ///
    /// Measured on one H200 (run 195, two passes, ms, the tiles the default took before
    /// (128 x 128 split as the few-tiles rule splits it; 128 x 136 at M >= 12288) -> this
    /// rule's; ours / cuBLAS after): 2048 x 8 x 7168 0.0264-0.0267 -> 0.0197-0.0212 (64 rows,
    /// 4 slices), 4096 x 64 x 7168 0.0294-0.0298 -> 0.0239-0.0242 (2 slices; 0.87), 6144 x 8
    /// x 4096 0.0361-0.0363 -> 0.0251-0.0257 (128 rows, 2 slices), 8192 x 16 x 7168
    /// 0.0575-0.0583 -> 0.0392-0.0397 (2 slices; 0.86), 8192 x 64 x 7168 0.0497-0.0498 ->
    /// 0.0389-0.0390 (0.92-0.93), 12288 x 32 x 7168 0.0830-0.0834 -> 0.0515-0.0531 (0.95-0.99),
    /// 16384 x 8 x 4096 0.0598-0.0602 -> 0.0409-0.0411 (0.89-0.91), 32768 x 8 x 7168
    /// 0.204-0.205 -> 0.117 (256 rows; 1.00-1.01), 32768 x 64 x 4096 0.094-0.100 -> 0.073
    /// (1.02-1.03), 65536 x 8 x 4096 0.230 -> 0.139-0.140 (0.98-1.00), 8192 x 64 x 2048
    /// 0.0192 -> 0.0144-0.0150 (128 rows unsplit at K < 4096); 10-80% less time on all 14
    /// shapes with M >= 2048 (0.55-0.77 of cuBLAS -> 0.69-1.03). At M = 256-1024 (0.008-0.02
    /// ms, 20-50% apart between passes) 0.0132-0.0213 against 0.0154-0.0269. Run 194: 128
    /// rows at M = 16384 (64 rows: 0.060 ms), 256 at 32768 (128: 0.125 and 0.071, within 2%
    /// at N = 64).
    ///
    /// For 64 < N <= 160 (two or three 64-row blocks of B) where the 64- or 128-row tiles fit
    /// one wave (run 197, three passes, ms, the default's 128 x 128 tile split as it splits
    /// -> this rule's; cuBLAS): 4096 x 160 x 5120 0.0354-0.0357 -> 0.0255-0.0258 (128 rows,
    /// unsplit; 0.022-0.024), 8192 x 128 x 4096 0.0293-0.0294 -> 0.0245-0.0249 (0.023-0.025),
    /// 4096 x 128 x 7168 0.0285-0.0293 -> 0.0263-0.0264 (2 slices), 2048 x 128 x 7168
    /// 0.0240-0.0244 -> 0.0227-0.0229, 2048 x 120 x 4096 0.0191-0.0218 -> 0.0164-0.0168 (64
    /// rows), 4096 x 96 x 4096 0.0221-0.0223 -> 0.0194-0.0198 (0.020), 6144 x 96 x 7168
    /// 0.0357-0.0359 -> 0.0338-0.0342, 1024 x 160 x 5120 0.0196-0.0201 -> 0.0182-0.0183:
    /// 5-39% faster in every pass on those 8; 512 x 128 x 4096 and 200 x 128 x 7168 (0.017-0.026
    /// ms) faster in one pass, 2-10% slower in the others. Not
    /// where they take more (16384 x 128 x 4096: 0.043 on 128 x 128 tiles, 0.044 on
    /// swapped ones, run 194), nor for N = 256 (four column blocks read A four times:
    /// 8192 x 256 x 7168 0.059 -> 0.075).
    ///
    /// N <= 32 on the column tile (run 203, one H200, two passes, ms, the swapped tiles
    /// above -> `cols-128xN-tma-store`, each split as the few-tiles rule splits it; ours /
    /// cuBLAS after): the swapped tiles compute 64 rows of B for N of them, chaining
    /// m64n64k16 wgmmas where m64n8k16 ones would do. 64 x 8 x 4096 (forced: M <= 64 is the
    /// small-M rules') 0.0113 -> 0.0102, 512 x 8 x 7168 0.0127-0.0128 -> 0.0110-0.0111
    /// (0.73-0.74), 1024 x 8 x 4096 0.0120-0.0122 -> 0.0106-0.0107, 2048 x 8 x 7168
    /// 0.0197-0.0202 -> 0.0153-0.0160 (0.89-0.93), 4096 x 8 x 4096 0.0232-0.0237 -> 0.0165
    /// (0.92-0.99), 16384 x 8 x 4096 0.0414-0.0415 -> 0.0380-0.0382 (0.96-0.97), 32768 x 8 x
    /// 7168 0.1168 -> 0.1149-0.1151 (0.97), 4096 x 16 x 7168 0.0318-0.0319 -> 0.0232-0.0234
    /// (0.96), 8192 x 16 x 7168 0.0396-0.0398 -> 0.0361-0.0362 (0.90-0.92), 16384 x 32 x 7168
    /// 0.0613-0.0616 -> 0.0609-0.0611. Not the 64-column one for N = 64 (4096 x 64 x 7168
    /// 0.0242-0.0246 -> 0.0258-0.0259, 8192 x 64 x 2048 0.0151 -> 0.0154-0.0161), nor a
    /// wider one than N (N = 16 on 32 or 64 columns: 1-11% behind 16).
    ///
    /// Run 204 (two passes, ms, the swapped tiles the rule took before -> the column tile,
    /// both split alike): 16 of 17 shapes faster in both passes, 256 x 8 x 4096 0.0115-0.0116
    /// -> 0.0103-0.0104, 300 x 16 x 7168 0.0128-0.0129 -> 0.0114-0.0115, 1024 x 24 x 4096
    /// 0.0120-0.0121 -> 0.0115-0.0118, 2048 x 24 x 7168 0.0179-0.0184 -> 0.0167-0.0173, 3000
    /// x 32 x 7168 0.0238-0.0243 -> 0.0206-0.0208, 4096 x 32 x 4096 0.0207-0.0208 ->
    /// 0.0171-0.0172, 6144 x 8 x 4096 0.0255-0.0256 -> 0.0205-0.0206 (0.91-0.92 of cuBLAS),
    /// 8192 x 32 x 7168 0.0388 -> 0.0370, 12288 x 24 x 7168 0.0521-0.0522 -> 0.0494-0.0497
    /// (1.02-1.03), 16384 x 16 x 4096 0.0402-0.0404 -> 0.0383-0.0384, 65536 x 8 x 4096
    /// 0.1395-0.1402 -> 0.1325-0.1344, 32768 x 32 x 4096 0.0719 -> 0.0707-0.0709; 24576 x 16 x
    /// 7168 0.0925 -> 0.0911 / 0.0940. At M = 64, where the small-M rules' swapped tile
    /// holds 64 rows of A and pads N to 64: 64 x 8 x 7168 0.0122 -> 0.0106-0.0107, 64 x 32 x
    /// 7168 0.0122-0.0123 -> 0.0117-0.0118 (and 64 x 8 x 4096 0.0113 -> 0.0102, run 203); not
    /// below (1 x 8 x 4096 0.0096 -> 0.0101-0.0102, 16 x 32 x 4096 0.0100 -> 0.0111-0.0112).
    /// Not for N = 40-56 either: within +-5% either way of the swapped tiles on 9 shapes
    /// (2048 x 56 x 7168 0.0181-0.0184 -> 0.0187-0.0199).
    pub fn small_n_for(shape: GemmShape, sm_count: u32) -> Option<Self> {
        // (M = 64 too for N <= 32, where the small-M rules' swapped tile pads as much: run 204)
        let min_m = if shape.n <= 32 { 64 } else { 65 };
        if shape.n == 0 || shape.n > 160 || !shape.n.is_multiple_of(8) || !shape.k.is_multiple_of(64) || shape.m < min_m {
            return None;
        }
        if shape.n <= 32 {
            return Some(Self::cols_tma_store(shape.n));
        }
        let sms = sm_count as u64;
        let tiles = |rows| Self::swapped_tma_store(rows).tiles(shape.m, shape.n);
        let rows = if tiles(64) * 2 <= sms {
            64
        } else if tiles(128) <= sms {
            128
        } else if shape.n <= 64 {
            256
        } else {
            return None;
        };
        Some(Self::swapped_tma_store(rows))
    }

    /// The last step of [`Self::choose_for`]: where the plain GEMM keeps the unclustered
    /// 128 x 256 TMA-store tile with K % 64 == 0, its 2-CTA twin sharing each B tile by TMA
    /// multicast ([`Self::WIDE_TMA_STORE_C2`]) when the row blocks pair up evenly (an odd
    /// count would add a padding tile per column block), for M >= 1024 and K >= 4096 (the
    /// shapes measured; 13.2 saw it 2-4% slower at 4096^2 x 512 and 1024 x 8192 x 1792,
    /// though without the sustained-clock warm-up). Measured on one H200 at sustained
    /// clocks (bench gemm --warmup-ms 800, two passes each, run 128, bench/NOTES.md 17.4),
    /// ours / cuBLAS unclustered -> clustered: 4096^3 0.955-0.957 -> 0.971-0.974, 2048 x
    /// 8192 x 4096 0.955-0.957 -> 0.972-0.973, 2048 x 8192 x 14336 0.953-0.954 -> 0.978-0.984,
    /// 8192 x 5120 x 8192 0.965 -> 0.993-0.995, 8192 x 8192 x 4096 0.960-0.981 -> 1.004-1.007,
    /// 8192 x 28672 x 8192 0.964-0.969 -> 0.986-0.997, 8192 x 9216 x 7168 0.956-0.960 ->
    /// 0.983 (and with the tile forced, 4096 x 2880 x 4096 0.954-0.955 -> 0.971-0.975, where
    /// the default takes a column-fitted tile); within the passes' spread on 2048 x 28672 x
    /// 8192 (0.950 -> 0.940 / 0.976), 8192^3 and 8192 x 7168 x 9216. (13.2 had measured +-2%
    /// without the sustained-clock warm-up.) Run 127: 1024 x 8192 x 4096 0.945-0.954 -> 0.956.
    ///
    /// Likewise the mid-M rule's 128-row swapped tile ([`Self::fitted_instead_of`]) becomes
    /// its 2-CTA twin sharing the A tile ([`Self::swapped_wide_c2`]) where its height is a
    /// multiple of 16, K >= 4096 and the 128-row blocks of B (N) pair up: run 130 (one H200, two passes
    /// each, `--warmup-ms 600`), ours / cuBLAS: 2049 x 8192 x 4096 (208 rows) 0.900 ->
    /// 0.913-0.914, 2048 x 5120 x 8192 (160) 0.911-0.914 -> 0.939-0.940, 2048 x 9216 x 7168
    /// (192) 0.924 -> 0.931, 640 x 8192 x 4096 (160) 0.902-0.908 -> 0.913-0.915. With the
    /// TMA-store epilogue, which `choose_for` takes for the mid-M rule's tile where N % 8 ==
    /// 0 ([`Self::swapped_wide_c2`]; run 131, two passes): 2049 x 8192 x 4096
    /// 0.950-0.956 unclustered -> 0.975, 2049 x 8192 x 14336 0.958-0.961 -> 0.992-0.996 (the
    /// Registers tile: 0.900 in run 130).
    ///
    /// Likewise the column-fitted TMA-store tile ([`Self::cols_instead_of`]) of 136..=248
    /// columns (each CTA multicasts half of B's rows; at 136, 152, ..., 248 rounded up to whole
    /// swizzle atoms, the halves overlapping by 8 rows, which run 389 found faster at 88-120
    /// columns; at 136-248 run 392: 0.1-2.4% faster on 8 shapes, NOTES 50.3) becomes its 2-CTA
    /// twin ([`Self::cols_tma_store_c2`]) on the wide tile's conditions (M >= 1024, the row
    /// blocks pair up, K >= 4096), and also at 193 <= M <= 256 (two row blocks, where the
    /// column rule takes it beyond one wave; run 295, bench/NOTES.md 37.1). Run 212 (one H200, two passes, `--warmup-ms 800`), ours /
    /// cuBLAS unclustered -> clustered: 2048 x 7168 x 9216 (176 columns) 0.928-0.930 ->
    /// 0.960, 2048 x 7168 x 18432 0.916-0.933 -> 0.968-0.972, 4096 x 2880 x 4096 (240)
    /// 0.986-0.991 -> 0.992-0.993, 4096 x 3584 x 7168 (224) 0.983-0.985 -> 0.977-0.979. Run
    /// 213 (the same way, the unclustered tile forced; K = 8192): 1024 x 10240 (160)
    /// 0.937-0.940 -> 0.969-0.971, 1024 x 14336 (176) 0.928-0.931 -> 0.964, 2048 x 7168 (176)
    /// 0.927-0.928 -> 0.951-0.965, 1024 x 6144 (192) 0.967 -> 0.982-0.988, 1024 x 18432 (192)
    /// 0.977 -> 0.994-0.996, 2048 x 22016 (224) 0.940-0.941 -> 0.952-0.955, 3072 x 12288 (224)
    /// 0.949-0.950 -> 0.955-0.985, 6144 x 12288 (224) 0.953-0.963 -> 0.956-0.985, 3072 x
    /// 18432 (240) 0.974-0.981 -> 0.988-0.996, 6144 x 14336 (240) 0.962-0.984 -> 1.001-1.014,
    /// 16384 x 2880 (240) 0.948-0.957 -> 0.961-0.965; even on 1024 x 3584 (224, 128 tiles in
    /// one wave): ahead on 13 of 16 shapes, even on 3 (bench/NOTES.md 25.2).
    ///
    /// The fused kernel's epilogue path applies the same rule where its own conditions
    /// hold ([`crate::gemm_allreduce::FusedConfig::clustered_epilogue_tile`]).
    pub fn clustered_instead_of(t: Self, shape: GemmShape) -> Self {
        // The blocks the pairs are made of: row blocks of A (M) for the wide tile, of B (N)
        // for a swapped one.
        let blocks_pair_up = if t == Self::WIDE_TMA_STORE {
            shape.m >= 1024 && shape.m.div_ceil(t.bm).is_multiple_of(2)
        } else if t == Self::cols_tma_store(t.bn) && Self::cols_clusters(t.bn) {
            // (also at two row blocks, where the column rule takes these tiles beyond one
            // wave: run 295; the fused kernel's epilogue path never has them)
            (shape.m >= 1024 || (193..=256).contains(&shape.m)) && shape.m.div_ceil(t.bm).is_multiple_of(2)
        } else if t.bn.is_multiple_of(16) && t.bn >= 128 && t == Self::swapped_wide(t.bn, t.epilogue) {
            shape.n.div_ceil(t.bm).is_multiple_of(2)
        } else {
            false
        };
        // (the twin: WIDE_TMA_STORE_C2, cols_tma_store_c2, or swapped_wide_c2 with the same epilogue)
        if blocks_pair_up && shape.k.is_multiple_of(64) && shape.k >= 4096 { Self { cluster_m: 2, ..t } } else { t }
    }

    /// The clustered column rule of [`Self::choose_for`], after [`Self::clustered_instead_of`]
    /// (plain GEMM only): in place of the clustered wide tile ([`Self::WIDE_TMA_STORE_C2`];
    /// with K % 64 == 0 and K >= 4096, which this checks, `choose_for` has it only where M
    /// >= 1024 with an even number of row blocks; M is not checked here), the clustered column-fitted tile ([`Self::cols_tma_store_c2`]) of 176,
    /// 192 or 208 columns with the least work on its busiest SM ([`Self::busiest_sm_work`]:
    /// waves x columns; ties to the wider), where that is at most [`COLS_C2_MAX_WORK_PERMILLE`]
    /// of the wide tile's; N % 8 == 0, K % 64 == 0 and K >= 4096 (as measured; with K % 64
    /// != 0 [`Self::choose_for`] clusters the wide tile for other reasons). `None` elsewhere.
    ///
    /// Why these widths: a 128 x 256 tile holds 3 pipeline stages beside its staging tile,
    /// 176-208 columns hold 4, and at the same work they ran at least as fast as the wide
    /// tile; 224 and 240 columns (3 stages) lost 1-5% where they fitted the waves better, 144
    /// (5 stages) tied or lost 0.5%.
    ///
    /// Measured on one H200 (runs 219 and 221, forced, two passes, ours / cuBLAS in one
    /// process, wide-tma-store-c2 -> this tile (its work)): 4096 x 7168 x 9216 0.979 ->
    /// 0.993-0.994 (176: 0.982), 8192 x 7168 x 9216 0.977-0.980 -> 0.992 (176), 16384 x 7168 x
    /// 9216 0.982-0.988 -> 0.998 (176), 4096 x 28672 x 8192 0.972-0.980 -> 0.987-0.992 (176),
    /// 4096 x 9216 x 7168 0.977-0.981 -> 0.993-0.994 (208: 0.993), 8192 x 8192 x 4096
    /// 0.997-1.000 -> 1.019-1.020 (192: 0.984), 16384 x 8192 x 4096 0.992-0.997 -> 1.017
    /// (192). Not taken where no width of the three fits better (4096 x 8192 x 14336,
    /// 2048 x 8192 x 4096: 144 columns tied or lost there). The rule's picks on 11 more
    /// shapes (run 222, the rule's default against the clustered wide tile forced, two
    /// passes): ahead on all 11 in both, by 0.2-2.8%, e.g. 12288 x 9216 x 8192 (192: 0.972)
    /// 0.978-0.980 -> 1.005-1.008, 16384 x 14336 x 8192 (208: 0.990) 0.982-0.983 ->
    /// 1.000-1.006, 16384 x 12288 x 8192 (176: 0.995) 0.984 -> 0.986-0.991.
    pub fn cols_c2_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        if current != Self::WIDE_TMA_STORE_C2 || !shape.n.is_multiple_of(8) || !shape.k.is_multiple_of(64) || shape.k < 4096 || sm_count == 0 {
            return None;
        }
        let wide = current.busiest_sm_work(shape, sm_count) as u128;
        let (work, best) = [176u32, 192, 208]
            .into_iter()
            .map(|c| {
                let t = Self::cols_tma_store_c2(c);
                (t.busiest_sm_work(shape, sm_count), t)
            })
            .min_by_key(|&(work, t)| (work, u32::MAX - t.bn))?;
        (work as u128 * 1000 <= wide * COLS_C2_MAX_WORK_PERMILLE as u128).then_some(best)
    }

    /// The column rule of [`Self::choose_for`]: the 128-row tile whose width fits N
    /// ([`Self::cols_fit`]) with the TMA-store epilogue ([`Self::cols_tma_store`]) where it
    /// beats `current`, an unclustered 128 x 256 or 64 x 256 tile (either epilogue): M >=
    /// 1024 or two row blocks (below; the shapes measured), K % 64 == 0, N % 8 == 0, and its busiest SM's work over its rate ([`Self::busiest_sm_work`],
    /// [`Self::relative_rate`]) below `current`'s. `None` where `current` stays. (Also the
    /// fused kernel's epilogue path, where the tile pays for its last wave's copy:
    /// `FusedConfig::epilogue_tile`.)
    ///
    /// Measured on one H200 (runs 120-121, ours / cuBLAS, default -> fitted TMA-store
    /// tile): 2048 x 7168 x 9216 0.893 (the Registers twin; 0.835 with 128 x 256 tiles in
    /// run 118) -> 0.941-0.942 (176 columns: 656 tiles in 5 waves against 448 wide ones in
    /// 4, the fourth 39% full) and 4096 x 2880 x 4096 0.944 -> 0.964-1.003, which the rule
    /// takes; 16384 x 7168 x 9216 0.965 -> 0.978-1.003, 2048 x 8192 x 4096 0.955 -> 0.965,
    /// within +-0.7% on 4 more, which it leaves (the fit saves 2-3% of the work there), as
    /// 8192 x 9216 x 7168 (136 columns: 0.954 -> 0.907). The mid-M rule's swapped tiles come
    /// first ([`Self::choose_for`]): 2048 x 5120 x 8192 and 2048 x 9216 x 7168 went 4-5%
    /// faster on the column-fitted tiles, but 3000 x 8192 x 4096 3% slower; except where
    /// this rule's tile beats theirs clearly ([`Self::beats_swapped_fit`]).
    ///
    /// Also for 193 <= M <= 256 (two row blocks) where `current`'s tiles make more than one
    /// wave; [`Self::clustered_instead_of`] then takes its 2-CTA twin
    /// ([`Self::cols_tma_store_c2`]) where the width has one and K >= 4096. Run 295 (one H200,
    /// two passes, 20 calls back to back, ms; the 128 x 256 TMA-store default -> this rule's
    /// pick; others forced): 256 x 57344 x 8192 (448 wide tiles, 3.4 waves) 0.4334-0.4342 ->
    /// 0.3850-0.3866 (176, clustered; 224 0.4015-0.4033, its twin 0.3970-0.3977, the wide
    /// tile's twin 0.4249-0.4287), 256 x 27648 x 5120 0.1342-0.1401 -> 0.1268-0.1274 (216;
    /// 224 0.1293-0.1295, its twin 0.1273-0.1296, 176 clustered 0.1392-0.1401): 8-12% faster,
    /// the best of the tiles run on each; 256 x 55296 x 5120 (this rule: 168 columns,
    /// unclustered) 0.2626-0.2643 -> 0.2342-0.2373 (run 297, against main in the same call;
    /// forced in run 295: 176 clustered 0.2429 / 0.2831 with cuBLAS at 0.2247 / 0.2685 in the
    /// same processes, 224 0.2533-0.2563). Run 297 on its other picks (default against
    /// default, two passes, ms): 256 x 18432 x 4096 (144 clustered) 0.0965-0.0969 ->
    /// 0.0629-0.0643, 256 x 36864 x 4096 (192 clustered) 0.152-0.153 -> 0.124, 224 x 18432 x
    /// 2048 (144) 0.0496 -> 0.0333, 256 x 28672 x 8192 (224 clustered) 0.203-0.204 -> 0.190-0.191,
    /// 205 x 57344 x 7168 0.351-0.353 -> 0.313-0.314, 219 x 28672 x 13824 0.332-0.335 ->
    /// 0.313-0.314, 256 x 55296 x 9216 (168) 0.467-0.471 -> 0.413, 240 x 28672 x 1024 (224)
    /// even (0.031): K = 1024-13824 timed (bench/NOTES.md 37.1, 37.5).
    pub fn cols_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let two_row_blocks = (193..=256).contains(&shape.m) && current.tiles(shape.m, shape.n) > sm_count as u64;
        if !(shape.m >= 1024 || two_row_blocks) || !shape.k.is_multiple_of(64) || !shape.n.is_multiple_of(8) || current.swap_ab || current.cluster_m > 1 || current.bn != 256 {
            return None;
        }
        let f = Self::cols_fit(shape.m, shape.n, sm_count)?.with_tma_store();
        f.beats(current, shape, sm_count).then_some(f)
    }

    /// The column rule ahead of the mid-M rule in [`Self::choose_for`] (plain GEMM;
    /// [`Self::fitted_or_cols_instead_of`] asks it where both [`Self::fitted_instead_of`], a
    /// 128-row swapped tile `fitted` to M, and [`Self::cols_instead_of`], this 128-row
    /// TMA-store tile fitted to N with M >= 1024, K % 64 == 0, N % 8 == 0, would replace the
    /// default): whether this column tile is clearly ahead: at least
    /// [`COLS_OVER_SWAPPED_MIN_COLS`] columns, its busiest SM's work over its rate
    /// ([`Self::busiest_sm_work`], [`Self::relative_rate`]) at most
    /// [`COLS_OVER_SWAPPED_MAX_MODEL_PERMILLE`] of `fitted`'s, and its busiest SM's work
    /// alone at most [`COLS_OVER_SWAPPED_MAX_WORK_PERMILLE`] of it. Where not, the mid-M
    /// rule's tile stays, as before.
    ///
    /// Why: the mid-M rule runs first, so the column rule never saw the shapes where both
    /// fit; at M = 1024 the swapped tile of 176 rows pads M to 1056 and makes 1.82 waves
    /// (240 tiles), where 128 x 160 tiles fit 1024 x 5120 exactly in 256 (1.94 waves). The
    /// model's rate of 75 for swapped tiles under 144 rows puts the column tile well ahead
    /// where it does more work per SM, and there it lost as often as it won; narrow column
    /// tiles (136, 144) lost even at the same work.
    ///
    /// Measured on one H200 (runs 282-284, 20 calls back to back, host-gated, two passes,
    /// ms, swapped default -> this tile (model, work)): 1024 x 5120 x K (swap-ab-128x176 ->
    /// 128 x 160; 0.928, 0.909) K = 1280 0.0249/0.0247 -> 0.0237/0.0236, 2560 0.0471/0.0467
    /// -> 0.0443/0.0440, 5120 0.0908/0.0907 -> 0.0828/0.0843 (clustered), 8192 0.1422 ->
    /// 0.1318, 13824 0.2391/0.2391 -> 0.2197/0.2230; 1024 x 2560 x 8192 0.0697/0.0698 ->
    /// 0.0668; 1024 x 9344 x 4096 (152 -> 192, 0.947, 0.947) 0.1352/0.1317 -> 0.1204/0.1203;
    /// 1344 x 4992 x 4096 (136 -> 208, 0.788, 1.020) 0.0886/0.0883 -> 0.0856/0.0851, x 8192
    /// 0.1764/0.1755 -> 0.1690/0.1713; 1856 x 7168 x 4096 0.1781/0.1784 -> 0.1699, x 8192
    /// 0.3519/0.3498 -> 0.3379/0.3364; 3456 x 2432 x 4096 (128 -> 176, 0.814, 1.031)
    /// 0.1113/0.1117 -> 0.1052/0.1059; 1664 x 3456 x 4096 (192 -> 176, 0.926, 0.917)
    /// 0.0785/0.0787 -> 0.0747/0.0743; 1536 x 6528 x 4096 (160 -> 200, 0.938) 0.1330/0.1344
    /// -> 0.1254/0.1247; 1024 x 6912 x 5120 (152 -> 216, 0.938, 0.947) 0.1218/0.1217 ->
    /// 0.1173/0.1167; 1472 x 2432 x 4096 (248 -> 224, 0.885, 0.903) 0.0492/0.0484 ->
    /// 0.0484/0.0482; 2048 x 5376 x 4096 (232 -> 224, 0.946, 0.966) 0.1445/0.1455 ->
    /// 0.1429/0.1435; on shapes drawn from the scan (run 284): 1116 x 7496 x 4096 (192 ->
    /// 176) 0.1151/0.1157 -> 0.1120/0.1117, 1487 x 3800 x 2048 0.0416/0.0414 ->
    /// 0.0396/0.0394, 1088 x 6032 x 8192 (136 -> 208, 1.020) 0.1767/0.1774 -> 0.1716/0.1709,
    /// 1319 x 4952 x 1024 0.0258/0.0262 -> 0.0244/0.0245, 1487 x 6008 x 14336 (136 -> 184,
    /// 1.015) 0.4057/0.4083 -> 0.3995/0.3956, 1067 x 8072 x 1024 0.0346/0.0347 ->
    /// 0.0337/0.0334, 1536 x 6464 x 2048 (160 -> 200) 0.0711/0.0714 -> 0.0660/0.0663, 1256 x
    /// 7784 x 14336 0.4531/0.4530 -> 0.4274/0.4311, 1389 x 2672 x 2048 (232 -> 224)
    /// 0.0259/0.0260 -> 0.0254/0.0248: faster on all 26 in both passes (0.4-11%), even at
    /// 1144 x 9752 x 14336 (232 -> 224, 0.946, 0.966; 0.2-0.8% slower). Left to the swapped
    /// tile by the work bound: 1032 x 6104 x 8192 (136 -> 216,
    /// 1.059) 0.1790 against 0.1880, 1214 x 5552 x 2048 0.0459-0.0473 against 0.0491, 1081 x
    /// 8192 x 8192 (136 -> 192, 1.059) 0.2295-0.2334 against 0.2375, 2432 x 896 x 4096 (136 ->
    /// 152, 1.118; below the width bound too) 0.0290-0.0294 against 0.0308-0.0310 (and three
    /// wins of 2-5% at 1.059-1.062: 1216 x 7424 x 4096, 1333 x 6656 x 1024, 1408 x 1536 x
    /// 4096); by the width bound: 136 and 144 columns, 0.6-19% slower on 7 of 9 shapes (1312
    /// x 9680 x 2048 0.0903-0.0913 against 0.0957, 1046 x 3992 x 4096 (work 1.059 too)
    /// 0.0591-0.0593 against 0.0651-0.0705), even at 1718 x 1184 x 8192, mixed at 2166 x 1904
    /// x 2048.
    pub fn beats_swapped_fit(&self, fitted: Self, shape: GemmShape, sm_count: u32) -> bool {
        if self.bn < COLS_OVER_SWAPPED_MIN_COLS {
            return false;
        }
        let (work_f, work_c) = (fitted.busiest_sm_work(shape, sm_count) as u128, self.busiest_sm_work(shape, sm_count) as u128);
        // work_c / rate_c <= permille / 1000 * work_f / rate_f
        let model = work_c * fitted.relative_rate() as u128 * 1000 <= work_f * self.relative_rate() as u128 * COLS_OVER_SWAPPED_MAX_MODEL_PERMILLE as u128;
        let work = work_c * 1000 <= work_f * COLS_OVER_SWAPPED_MAX_WORK_PERMILLE as u128;
        model && work
    }

    /// The mid-M and column rules of [`Self::choose_for`], each evaluated once: the
    /// mid-M rule's swapped tile ([`Self::fitted_instead_of`], with the TMA-store epilogue
    /// where N % 8 == 0: run 131, the rule compares Registers tiles and the TMA-store twin
    /// runs faster) unless the column rule's tile ([`Self::cols_instead_of`]) beats it
    /// clearly ([`Self::beats_swapped_fit`]); where only the column rule applies, its tile.
    /// `None` where neither replaces `current`.
    pub fn fitted_or_cols_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let cols = Self::cols_instead_of(current, shape, sm_count);
        match Self::fitted_instead_of(current, shape, sm_count) {
            Some(f) if cols.is_some_and(|c| c.beats_swapped_fit(f, shape, sm_count)) => cols,
            Some(f) => Some(if shape.n.is_multiple_of(8) { f.with_tma_store() } else { f }),
            None => cols,
        }
    }

    /// The mid-M rule of [`Self::choose_for`] (and of the fused kernel's
    /// `FusedConfig::epilogue_tile`): the 128-row swapped tile fitted to M
    /// ([`Self::swapped_fit`], Registers epilogue) where it beats `current`, an unclustered
    /// 128 x 256 or 64 x 256 tile (the tiles it was measured against; either epilogue):
    /// 257 <= M <= 8192, K % 64 == 0, and its busiest SM's tensor-core work at its rate
    /// ([`Self::busiest_sm_work`] / [`Self::relative_rate`]) below `current`'s. `None`
    /// where `current` stays.
    ///
    /// Measured on the H200 (run 113, N=8192 and K=4096 unless given; ms, default ->
    /// fitted): the rule takes the fitted tile on all 12 shapes where it won, M=257
    /// 0.0551 -> 0.0317, 300 0.0556 -> 0.0356, 384 0.0515 -> 0.0415, 520 0.0937 -> 0.0574,
    /// 640 0.0947 -> 0.0648, 777 0.1066 -> 0.0795, 2049 0.2216 -> 0.1978, 3000 0.3050 ->
    /// 0.2865, 5000 0.4940 -> 0.4737, 2049 x 7168 x 9216 0.4520 -> 0.4085 (and 3000 x 7168
    /// x 9216, 2049 x 8192 x 14336), and leaves the 4 where it lost: M=1000 (0.0951
    /// against 0.0989), 1500, 4097 (a 128-row fit: 0.3717 against 0.5113) and 8192. With
    /// K % 64 != 0 it lost everywhere tried (1000 x 8192 x 4104: 0.108 against 0.179, run
    /// 112; rows of A and B straddle L2 lines, see [`Self::choose_for`]).
    pub fn fitted_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        if !shape.k.is_multiple_of(64) || current.swap_ab || current.cluster_m > 1 || current.bn != 256 {
            return None;
        }
        let f = Self::swapped_fit(shape.m, shape.n, sm_count)?;
        f.beats(current, shape, sm_count).then_some(f)
    }

    /// The model of the mid-M and column rules: whether this tile's busiest SM finishes
    /// before `other`'s, work_self / rate_self < work_other / rate_other
    /// ([`Self::busiest_sm_work`], [`Self::relative_rate`]).
    fn beats(&self, other: Self, shape: GemmShape, sm_count: u32) -> bool {
        (self.busiest_sm_work(shape, sm_count) as u128) * (other.relative_rate() as u128)
            < (other.busiest_sm_work(shape, sm_count) as u128) * (self.relative_rate() as u128)
    }

    /// Tensor-core work of the busiest SM, in output elements per k step: waves of tiles
    /// on `sm_count` SMs times the tile's BM x BN. Comparable between configurations of
    /// one shape only (the mid-M and column rules, [`Self::fitted_instead_of`],
    /// [`Self::cols_instead_of`]).
    pub fn busiest_sm_work(&self, shape: GemmShape, sm_count: u32) -> u64 {
        let tiles = self.tiles(shape.m, shape.n);
        let grid = self.grid_for(tiles, sm_count.max(1)) as u64;
        tiles.div_ceil(grid).saturating_mul(self.bm as u64 * self.bn as u64)
    }

    /// How fast a tile turns its work into output, percent of the 128 x 256 tile's rate
    /// (the model of the mid-M and column rules, [`Self::fitted_instead_of`],
    /// [`Self::cols_instead_of`]). Measured on the H200 (bench
    /// gemm, bench/NOTES.md 16.2): 128 x 128 tiles 93 (6.5-9% slower than 128 x 256 on the
    /// same shapes, run 58); 64-row tiles 82 (M=2049 x 8192 x 4096, run 113: 8 waves of
    /// 64 x 256 tiles in 0.2216 ms against 5 waves of 128 x 208 swapped ones in 0.1978:
    /// 0.88 of the swapped tiles' rate, 84 at their 96; 80-84 make the same decisions); 128-row swapped tiles 96 from 144 rows of A up
    /// (M=1000, 1500, 5000 and 8192 against 128 x 256 tiles: 0.94-0.99), 75 below (M=4097's
    /// 128 rows: 0.73; M=257's 136 rows against 64 x 256 tiles: 0.75); 64-row swapped
    /// tiles 82 (not compared by the rule); the column-fitted tiles of [`Self::cols`] with
    /// the TMA-store epilogue from 93 at 128 columns (the narrow tile's) to 100 at 256,
    /// linearly (runs 120-121: 0.96-1.01 of the 128 x 256 TMA-store tile's rate at
    /// 176-240 columns; 136 columns at 8192 x 9216 x 7168 lost 5% with 2.6% less work),
    /// with the Registers one 92 from 176 columns up, 84 below (run 115: 0.91-0.95 at
    /// 176-240 columns on 7 shapes, 0.84 at 160). Clusters as their tile.
    pub fn relative_rate(&self) -> u64 {
        match (self.swap_ab, self.bm, self.bn) {
            (false, 128, 256) => 100,
            (false, 128, 128) => 93,
            // (93 at 128 columns to 100 at 256, linearly)
            (false, 128, cols) if self.epilogue == Epilogue::TmaStore => (93 * 128 + 7 * cols.saturating_sub(128) as u64) / 128,
            (false, 128, cols) if cols >= 176 => 92,
            (false, 128, _) => 84,
            (false, _, _) => 82,
            (true, 128, rows) if rows >= 144 => 96,
            (true, 128, _) => 75,
            (true, _, _) => 82,
        }
    }

    /// The small-M rule of [`Self::choose_for`] (and of the fused kernel's
    /// `FusedConfig::epilogue_tile`): the swapped-operand tile holding all of M
    /// ([`Self::swapped_for`], Registers epilogue) where it beats `current` (M <= 256,
    /// K % 64 == 0, its tiles fit one wave of `sm_count` SMs and it loads fewer rows per
    /// SM, [`Self::load_cost`]); `None` where `current` stays.
    pub fn swapped_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        let s = Self::swapped_for(shape.m, 1)?;
        let wins = shape.k.is_multiple_of(64)
            && sm_count != 0
            && s.tiles(shape.m, shape.n) <= sm_count as u64
            && s.load_cost(shape, sm_count) < current.load_cost(shape, sm_count);
        wins.then_some(s)
    }

    /// The second small-M rule of [`Self::choose_for`] (plain GEMM): where the 64-row
    /// swapped tile holding all of M would take more than one wave (so
    /// [`Self::swapped_instead_of`] left `current`), the 128-row swapped TMA-store tile
    /// holding all of M ([`Self::swapped_wide`], M rounded up to 8) when its tiles fit
    /// one wave of `sm_count` SMs and it loads fewer rows per SM ([`Self::load_cost`]):
    /// 129 <= M <= 192 (the heights measured), K % 64 == 0, N % 8 == 0. `None` where
    /// `current` stays.
    ///
    /// Measured on one H200 (run 154, two passes, ms, default -> this tile; ours / cuBLAS):
    /// 129 x 14336 x 8192 (the decode up-projection of Llama-3-70B on two GPUs) 0.1121 ->
    /// 0.0658-0.0684 (0.56 -> 0.94-0.96), 160 x 14336 x 8192 0.1132 -> 0.0677-0.0753 (0.58
    /// -> 0.94-0.96), 192 x 14336 x 8192 0.1163-0.1167 -> 0.0753-0.0865 (0.66 -> 0.93),
    /// 129 x 14336 x 4096 0.0588-0.0598 -> 0.0387-0.0388 (0.60 -> 0.93-0.94), 129 x 9216 x
    /// 7168 0.0545-0.0551 -> 0.0497-0.0499 (0.79 -> 0.86); the default there was the 64 x
    /// 256 tile in two waves. At M = 256 it lost (256 x 14336 x 8192: 0.1159 -> 0.1402).
    pub fn swapped_wide_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        if !(129..=192).contains(&shape.m) || !shape.k.is_multiple_of(64) || !shape.n.is_multiple_of(8) || sm_count == 0 || current.swap_ab {
            return None;
        }
        let narrow = Self::swapped_for(shape.m, 1)?;
        let wide = Self::swapped_wide(shape.m.div_ceil(8) * 8, Epilogue::TmaStore);
        let wins = narrow.tiles(shape.m, shape.n) > sm_count as u64
            && wide.tiles(shape.m, shape.n) <= sm_count as u64
            && wide.load_cost(shape, sm_count) < current.load_cost(shape, sm_count);
        wins.then_some(wide)
    }

    /// The two-wave small-M rule of [`Self::choose_for`] (plain GEMM): for M <= 64 where
    /// the 64-row swapped TMA-store tile holding all of M ([`Self::swapped_tma_store`], M
    /// rounded up to 8) makes more than 1.5 waves of tiles and at most two (1.5 x SMs <
    /// ceil(N / 64) <= 2 x SMs; [`Self::swapped_instead_of`] left `current`), that tile, unsplit,
    /// in place of the 64 x 256 TMA-store default ([`Self::M64_WIDE_TMA_STORE`], whose 3/8 to
    /// 1/2 of the SMs' worth of tiles [`Self::split_few_tiles_for`] would split in 2 slices);
    /// K % 64 == 0, 4096 <= K <= 8192, N % 8 == 0 (as measured). `None` elsewhere: up to 1.5
    /// waves the 64 x 256 tiles stay (split in 2-3 slices with a workspace, or
    /// [`Self::split_spill_for`]'s split of the swapped tiles where they spill at most a
    /// quarter of the SMs; without one they beat two waves of swapped Registers tiles at 64
    /// x 9216 x 7168, run 104).
    ///
    /// Why: these calls are bound by each CTA's chain of K blocks. Two rounds of swapped tiles
    /// take the same time from 168 to 264 tiles (run 258: 1 x N x 4096 0.0329-0.0355 ms for N
    /// = 10752-16896), where the 64 x 256 tiles' split grows with N (0.0335 -> 0.0435): 2
    /// slices of 54-66 tiles leave no SM idle but for the last 0-24, each slice a chain of
    /// K / 2 over 256 rows of B, plus the fix-up.
    ///
    /// Measured on one H200 (runs 257-258, back to back x20, host-gated, two passes, ms, the
    /// 64 x 256 tiles as the few-tiles rule splits them -> this tile; cuBLAS). 208-264 tiles:
    /// faster on all 27 shapes at M = 1, 16 and 64, K = 4096-8192: 1 x 14336 x 4096
    /// 0.0386-0.0387 -> 0.0331-0.0332 (0.0315), 1 x 16384 x 4096 0.0429 -> 0.0343 (0.0339),
    /// 1 x 13824 x 5120 0.0454-0.0456 -> 0.0406-0.0424, 1 x 14336 x 8192 0.0678-0.0679 ->
    /// 0.0623, 16 x 16384 x 8192 0.0752-0.0753 -> 0.0687, 64 x 13312 x 4096 0.0379-0.0383 ->
    /// 0.0367, 64 x 14336 x 8192 0.0691-0.0694 -> 0.0685: 1-20%. 168-192 tiles (N =
    /// 10752-12288): 0-6% faster at K = 4096 for M <= 16, but 2-11% slower at M = 64 and at K
    /// = 8192 (1 x 11264 x 8192 0.0556 -> 0.0616, where the 64 x 256 tiles make one full wave
    /// of 3 slices), hence 1.5 waves (199-207 tiles on 132 SMs, N = 12680-13248, not timed). More than two waves (N = 28672-57344, the 64 x 256
    /// tiles unsplit): 1-15% slower (run 257). K = 14336 (forced): 1 x 14336 x 14336 2%
    /// faster, 64 x 14336 x 14336 5% slower.
    pub fn swapped_two_waves_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        if current != Self::M64_WIDE_TMA_STORE || !(1..=64).contains(&shape.m) || !shape.k.is_multiple_of(64) || !(4096..=8192).contains(&shape.k) || !shape.n.is_multiple_of(8) || sm_count == 0 {
            return None;
        }
        let s = Self::swapped_tma_store(shape.m.div_ceil(8) * 8);
        let (tiles, sms) = (s.tiles(shape.m, shape.n), sm_count as u64);
        // (at most 1.5 waves the 64 x 256 split stays: run 258, and without a workspace the
        // 64 x 256 tiles, which beat two waves of swapped Registers tiles there, run 104)
        (tiles * 2 > sms * 3 && tiles <= 2 * sms).then_some(s)
    }

    /// [`Self::choose_for`] for a forced split last wave (`LastWaveSplit::Slices`, no tile
    /// forced): its tile, or where that cannot split ([`Self::can_split_last_wave`]) its
    /// TMA-store twin where that can and N allows (M = 65-111: the padding rule's Registers
    /// tile gives way to `swap-ab-128xR-tma-store`, ~1% slower unsplit, run 170), or where
    /// that is a 2-CTA tile (clusters never split) the unclustered tile it was chosen as
    /// (`wide-tma-store-c2` -> `wide-tma-store`, `cols-128xC-tma-store-c2` ->
    /// `cols-128xC-tma-store`, `swap-ab-128xR-tma-store-c2` -> `swap-ab-128xR-tma-store`),
    /// so that a count asked for is honoured on every shape where N allows a TMA store
    /// (helper-55: most large defaults are clustered); where the two-wave rule's swapped tile
    /// is the default ([`Self::swapped_two_waves_instead_of`]), the 64 x 256 tile it replaced,
    /// whose 3/8 to 1/2 of the SMs' worth of tiles all split (helper-60: the swapped tiles fill two whole
    /// waves at N = 64 x 2 x SMs, where a count would be refused, and their second wave's
    /// split was not measured).
    pub fn choose_for_split(shape: GemmShape, sm_count: u32) -> Self {
        let t = Self::choose_before_cluster_n(shape, sm_count);
        let t = if Self::swapped_two_waves_instead_of(Self::M64_WIDE_TMA_STORE, shape, sm_count) == Some(t) { Self::M64_WIDE_TMA_STORE } else { t };
        let t = Self::twin_that_splits(t, shape);
        if t.cluster_m <= 1 {
            return t;
        }
        let flat = Self::twin_that_splits(Self { cluster_m: 1, ..t }, shape);
        if flat.can_split_last_wave() && flat.validate_for_gemm().is_ok() { flat } else { t }
    }

    /// `t`, or where it cannot split ([`Self::can_split_last_wave`]) its TMA-store twin
    /// where that can and N allows it (N % 8 == 0).
    pub(super) fn twin_that_splits(t: Self, shape: GemmShape) -> Self {
        let twin = t.with_tma_store();
        if !t.can_split_last_wave() && twin.can_split_last_wave() && twin.check_output(shape.n).is_ok() {
            twin
        } else {
            t
        }
    }

    /// The one-row-block rule of [`Self::choose_for`]: for 112 <= M <= 128 where the
    /// default is the 128 x 128 TMA-store tile and its tiles leave SMs idle (ceil(N / 128) <
    /// SMs), the narrowest 128-row column-fitted TMA-store tile ([`Self::cols_tma_store`],
    /// 72..=120 columns, a multiple of 8) whose tiles fit one wave: more SMs share the one
    /// row block of A. K % 64 == 0, K >= 4096, N % 8 == 0 (as measured). `None` elsewhere.
    ///
    /// cuBLAS runs 128 x 9216 x 7168 with the same shape of tile (CUPTI, run 165:
    /// `nvjet_sm90_tst_80x128_64x8_4x1`, 80 columns by 128 rows of C in 4-CTA clusters).
    /// Measured on one H200 (runs 166-167, two passes, ms, default -> this tile): 128 x
    /// 9216 x 7168 0.0495-0.0514 -> 0.0452-0.0484 (72 columns), 128 x 9216 x 14336
    /// 0.0965-0.0972 -> 0.0901-0.0964, 112 x 9216 x 7168 0.0504-0.0520 -> 0.0472-0.0480,
    /// 128 x 8704 x 4096 0.0304-0.0305 -> 0.0268-0.0291, 128 x 10240 x 4096 0.0328-0.0330 ->
    /// 0.0289-0.0294 (80 columns), 128 x 12288 x 7168 0.0559 -> 0.0529-0.0532 (96), 128 x
    /// 14336 x 7168 0.0606-0.0613 -> 0.0586-0.0591 (112): 2-11% faster on all 13 shapes
    /// with M = 112-128 (0.77-0.96 -> 0.85-0.99 of cuBLAS). At M = 80 and 96 the same tiles
    /// were 1-15% slower (their rows are mostly padding), so the rule starts at 112 rows.
    pub fn narrow_cols_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        if !(112..=128).contains(&shape.m) || !Self::small_m_narrow_default(current, shape) || current.tiles(shape.m, shape.n) >= sm_count as u64 {
            return None;
        }
        Self::narrow_cols_widths()
            .filter(|&w| w >= 72)
            .map(Self::cols_tma_store)
            .find(|t| t.tiles(shape.m, shape.n) <= sm_count as u64)
    }

    /// What both small-M rules replace, where they were measured: the 128 x 128 TMA-store
    /// default with K % 64 == 0, K >= 4096 and N % 8 == 0.
    fn small_m_narrow_default(current: Self, shape: GemmShape) -> bool {
        current == Self::NARROW_TMA_STORE && shape.k.is_multiple_of(64) && shape.k >= 4096 && shape.n.is_multiple_of(8)
    }

    /// The padding rule of [`Self::choose_for`]: for 65 <= M <= 111 where the default is
    /// the 128 x 128 TMA-store tile with at most one wave of tiles, the 128-row swapped tile
    /// holding M rows of A rounded up to 8 ([`Self::swapped_wide`], Registers epilogue):
    /// as many tiles, without the 128 x 128 tile's padding rows (17-63 of its 128; at most 7
    /// remain, M rounded up to 8). K % 64
    /// == 0, K >= 4096, N % 8 == 0 (as measured). `None` elsewhere.
    ///
    /// Measured on one H200 (run 170, two passes, ms, default -> this tile; ours / cuBLAS):
    /// 80 x 9216 x 7168 0.0488-0.0489 -> 0.0407-0.0408 (0.93 -> 1.12), 80 x 12288 x 7168
    /// 0.0595-0.0598 -> 0.0508-0.0510, 96 x 9216 x 7168 0.0487-0.0491 -> 0.0426-0.0430 (0.92
    /// -> 1.07), 96 x 9216 x 4096 0.0307-0.0309 -> 0.0274-0.0276, 104 x 9216 x 7168
    /// 0.0489-0.0492 -> 0.0454: 5-17% faster on all 15 shapes with M = 80, 96, 104 and N =
    /// 8704-12288 (the TMA-store twin 1% behind on average). From 112 rows the narrow
    /// column-fitted tiles take over ([`Self::narrow_cols_instead_of`]).
    pub fn swapped_short_instead_of(current: Self, shape: GemmShape, sm_count: u32) -> Option<Self> {
        if !(65..=111).contains(&shape.m) || !Self::small_m_narrow_default(current, shape) || current.tiles(shape.m, shape.n) > sm_count as u64 {
            return None;
        }
        Some(Self::swapped_wide(shape.m.div_ceil(8) * 8, Epilogue::Registers))
    }

    /// The plain GEMM's split rule (`LastWaveSplit::Auto`, no tile forced, with a
    /// workspace): for M <= 64 where the 64-row swapped TMA-store tile holding all of M
    /// ([`Self::swapped_tma_store`]) spills a few tiles past one wave (R left over, at most
    /// a quarter of the SMs), that tile with the R left-over tiles in S = min(SMs / R, K
    /// blocks / 16, 8) >= 4 K-slices (the fused kernel's bounds,
    /// [`crate::gemm_allreduce::MIN_SPLIT_K_BLOCKS`], [`crate::gemm_allreduce::MAX_SPLIT_SLICES`]),
    /// for K >= 4096 (as measured), K % 64 == 0, N % 8 == 0,
    /// within the workspace's `scratch_bytes` and `counts_len`. `None` elsewhere (the
    /// tile heuristic, unsplit).
    ///
    /// Measured on one H200 (run 158, two passes, the rule's 7 slices at K = 7168 against
    /// no split, same process: 12-27% faster on 9 shapes with N = 8704-10240, M = 1-64, K =
    /// 7168-14336, e.g. 8 x 9216 x 7168 0.0501-0.0508 -> 0.0410-0.0416 ms, 0.79 -> 0.95-0.96
    /// of cuBLAS; bench/NOTES.md 19.4). Run 157 (forced 8 slices; ms, default -> this
    /// tile; ours / cuBLAS): 8 x 9216 x 7168 0.0558-0.0562 -> 0.0409-0.0411 (0.72 -> 0.98-0.99),
    /// 32 x 9216 x 7168 0.0556-0.0558 -> 0.0429-0.0435 (0.75 -> 0.96-0.98), 64 x 9216 x
    /// 7168 0.0540-0.0541 -> 0.0445-0.0451 (0.67 -> 0.80-0.82): 144 tiles on 132 SMs, the 12
    /// left over as 96 slices instead of a second wave of whole tiles (4 slices: 5-8% less
    /// gain). Not for M = 128-129 (128 x 9216 x 4096 and 129 x 9216 x 7168 were slower
    /// split than on their defaults). At K = 4096 (4 slices; run 189, two passes, against
    /// the default, which [`Self::split_few_tiles_for`] then split on 64 x 256 tiles in 3
    /// slices): 8 x 9216 x 4096 0.0319-0.0321 -> 0.0288-0.0289 (0.88 -> 0.91-0.93 of
    /// cuBLAS), 64 x 9216 x 4096 0.0328-0.0331 -> 0.0312, 32 x 10240 x 4096 0.0343 ->
    /// 0.0303-0.0304.
    pub fn split_spill_for(shape: GemmShape, sm_count: u32, scratch_bytes: u64, counts_len: u64) -> Option<(Self, u32)> {
        if !(1..=64).contains(&shape.m) || !shape.k.is_multiple_of(64) || shape.k < 4096 || !shape.n.is_multiple_of(8) || sm_count == 0 {
            return None;
        }
        let t = Self::swapped_tma_store(shape.m.div_ceil(8) * 8);
        let (tiles, sms) = (t.tiles(shape.m, shape.n), sm_count as u64);
        let rest = tiles % sms;
        if tiles <= sms || tiles >= 2 * sms || rest == 0 || rest * 4 > sms {
            return None;
        }
        let s = t.split_slices_bound(shape.k, rest, sms);
        (s >= 4 && t.split_fits(rest, s, scratch_bytes, counts_len)).then_some((t, s as u32))
    }

    /// The plain GEMM's split rules (`LastWaveSplit::Auto`, no tile forced; with a workspace
    /// of `scratch_bytes` and `counts_len`, or without one [`Self::split_rule_without_workspace`]):
    /// [`Self::split_spill_for`], else [`Self::split_row_block_for`], else
    /// [`Self::split_few_tiles_for`], else [`Self::split_two_rounds_for`], else
    /// [`Self::split_one_wave_cols_for`]; `None`: the tile heuristic, unsplit. A rule whose
    /// pick does not fit the workspace gives way to the next (a pick of 1 slice, a tile
    /// unsplit, fits any). `shape` is
    /// taken as valid ([`GemmShape::validate_dims`], which `mkernel::gemm` checks first): for
    /// a shape it refuses (K % 8 != 0, say) the pick means nothing.
    pub fn split_rule_for(shape: GemmShape, sm_count: u32, scratch_bytes: u64, counts_len: u64) -> Option<(Self, u32)> {
        Self::split_spill_for(shape, sm_count, scratch_bytes, counts_len)
            .or_else(|| Self::split_row_block_for(shape, sm_count, scratch_bytes, counts_len))
            .or_else(|| Self::split_few_tiles_for(shape, sm_count, scratch_bytes, counts_len))
            .or_else(|| Self::split_two_rounds_for(shape, sm_count, scratch_bytes, counts_len))
            .or_else(|| Self::split_one_wave_cols_for(shape, sm_count, scratch_bytes, counts_len))
    }

    /// The split rules' pick where there is no workspace (`gemm::launch` without one:
    /// `mkernel::gemm` in a graph capture, on the per-thread default stream, where the
    /// allocation failed, or where the pick needs none): their pick with an unbounded
    /// workspace where that is 1 slice (a tile unsplit: [`Self::few_tiles_half_height_fewer_slices_instead_of`]'s),
    /// else `None` (the tile heuristic, unsplit). Not [`Self::split_rule_for`] on a zero
    /// workspace, which would fall through a pick that needs slots to a later rule's.
    pub fn split_rule_without_workspace(shape: GemmShape, sm_count: u32) -> Option<Self> {
        Self::split_rule_for(shape, sm_count, u64::MAX, u64::MAX).filter(|&(_, s)| s == 1).map(|(t, _)| t)
    }

    /// The plain GEMM's fourth split rule, for a long K where the default's tiles fill more
    /// than half the SMs and at most two thirds (SMs / 2 < tiles <= 2 x SMs / 3, so the
    /// few-tiles rule leaves them unsplit, on a one-wave chain of all of K): every tile in
    /// [`TWO_ROUNDS_SLICES`] (3) K-slices, two rounds of slices of K / 3 each, 2/3 of the
    /// unsplit chain. The default tile, or its TMA-store twin where it has the Registers
    /// epilogue (a clustered default stays unsplit), where that is one of the tiles measured:
    /// the 64-row swapped TMA-store tile of M <= 64 ([`Self::swapped_tma_store`] of at most
    /// 64 rows of A), [`Self::NARROW_TMA_STORE`] or [`Self::WIDE_TMA_STORE`] for M <= 256; K
    /// >= [`TWO_ROUNDS_MIN_K`], K % 64 == 0, within the workspace's `scratch_bytes` and
    /// `counts_len` (80 tiles of 128 x 256: 240 slots, 30 MiB). `None` elsewhere.
    ///
    /// Measured on one H200 (run 259, back to back x20, host-gated, two passes, ms, unsplit
    /// -> 3 slices; cuBLAS), 80 tiles (N = 5120 on the 64-row swapped tiles and on 128 x 128
    /// at M = 256; 256 x 10240 on 128 x 256): 1 x 5120 x 27648 0.0856-0.0857 -> 0.0766-0.0767
    /// (0.0710), 64 x 5120 x 27648 0.0983 -> 0.0861 (0.0759), 256 x 5120 x 27648
    /// 0.1662-0.1667 -> 0.1505-0.1514 (0.1162), 1 x 5120 x 13824 0.0451-0.0452 -> 0.0437, 16
    /// x 5120 x 13824 0.0459-0.0461 -> 0.0439-0.0445, 256 x 5120 x 13824 0.0865-0.0869 ->
    /// 0.0825-0.0846, 256 x 10240 x 13824 0.1587-0.1625 -> 0.1512-0.1513: 3-12% faster on all
    /// 7; at K = 8192 5% slower (1 x 5120 x 8192 0.0283 -> 0.0296; run 255: even at 6912),
    /// hence the bound on K. 4 and 6 slices were slower than unsplit on most of them (3 and 4
    /// rounds), as 3 slices of 96 and 112 tiles (3 rounds; 1 x 6144 x 13824 0.0467-0.0477 ->
    /// 0.0621-0.0622), hence two thirds of the SMs. For 193 <= M <= 256 up to K = 14336 the
    /// default is now narrower tiles filling one wave ([`Self::one_wave_cols_instead_of`],
    /// run 266: faster than these 3 slices), which this rule leaves unsplit.
    pub fn split_two_rounds_for(shape: GemmShape, sm_count: u32, scratch_bytes: u64, counts_len: u64) -> Option<(Self, u32)> {
        if shape.k < TWO_ROUNDS_MIN_K || !shape.k.is_multiple_of(64) || sm_count < 2 {
            return None;
        }
        let t = Self::twin_that_splits(Self::choose_before_cluster_n(shape, sm_count), shape);
        let measured = (t.bn <= 64 && t == Self::swapped_tma_store(t.bn)) || t == Self::NARROW_TMA_STORE || t == Self::WIDE_TMA_STORE;
        if shape.m > 256 || !measured {
            return None;
        }
        let (tiles, sms, s) = (t.tiles(shape.m, shape.n), sm_count as u64, TWO_ROUNDS_SLICES);
        // (the kernel counts its work units in u32: SplitLaunch::check)
        if !t.can_split_last_wave() || t.check_output(shape.n).is_err() || tiles * 2 <= sms || tiles * s > sms * 2 || tiles * s > u32::MAX as u64 {
            return None;
        }
        t.split_fits(tiles, s, scratch_bytes, counts_len).then_some((t, s as u32))
    }

    /// The workspace the split rules' pick needs on `sm_count` SMs ([`Self::split_rule_for`]
    /// with no bound on the workspace): (scratch bytes, counts) = (left-over tiles x slices x
    /// [`Self::split_slot_bytes`], left-over tiles); `None` where no rule applies or its pick
    /// is 1 slice (a tile unsplit, which [`Self::split_rule_for`] picks with no workspace as
    /// well). A workspace of at least that makes [`Self::split_rule_for`] pick the same.
    pub fn split_rule_workspace(shape: GemmShape, sm_count: u32) -> Option<(u64, u64)> {
        let (t, s) = Self::split_rule_for(shape, sm_count, u64::MAX, u64::MAX).filter(|&(_, s)| s >= 2)?;
        let tiles = t.tiles(shape.m, shape.n);
        let rest = tiles % t.split_grid(tiles, s, sm_count).max(1) as u64;
        Some((rest.saturating_mul(s as u64).saturating_mul(t.split_slot_bytes()), rest))
    }

    /// The plain GEMM's third split rule, split-K where the tiles leave most SMs idle: the
    /// default tile (its TMA-store twin where it has the Registers epilogue, as
    /// [`Self::choose_for_split`]; a clustered default does not split here) when it makes at most SMs / 2 tiles (all of them left over, the
    /// "last wave"), each in the S >= 2 K-slices of [`Self::few_tiles_slices`] (S = min(SMs
    /// / tiles, K blocks / 16, 8), the fused kernel's bounds,
    /// [`crate::gemm_allreduce::MIN_SPLIT_K_BLOCKS`], [`crate::gemm_allreduce::MAX_SPLIT_SLICES`];
    /// the small-N column tiles and the swapped tiles of 64 x 8..16 ([`SHORT_SWAPPED_MAX_ROWS`]) up to 16 slices of at least 8 K blocks, 4 at 8 columns), for K >= 4096 (as measured; the
    /// small-N column tiles from K = 1024, 4-8 slices of at least 2 K blocks below 4096; the swapped tiles of 64 x 8..64
    /// from K = 1536 and the 64 x 128 tiles from K = 3072 in one wave of slices: `short_k_slices`), within
    /// the workspace's `scratch_bytes` and `counts_len` (on 132 SMs at most 132 slots of
    /// the 128 x 256 tile, 16.5 MiB). `None` elsewhere (a default that cannot split: a
    /// Registers tile whose twin N refuses, 2-CTA clusters).
    ///
    /// Measured on one H200 (two passes each, ms, unsplit -> split; ours / cuBLAS), on
    /// every tile the default takes there on 132 SMs:
    /// - 128 x 128 ([`Self::NARROW_TMA_STORE`], run 181): 256 x 4096 x 57344 (64 tiles)
    ///   0.3315-0.3415 -> 0.2213-0.2219 in 2 slices (0.51 -> 0.89), 256 x 4096 x 14336
    ///   0.0873-0.0883 -> 0.0632-0.0639 (0.58 -> 0.90-0.91), 1024 x 1024 x 65536
    ///   0.3618-0.3626 -> 0.2429-0.2528, 256 x 2048 x 32768 (32 tiles) 0.1694-0.1712 ->
    ///   0.0737 in 4 slices (0.31 -> 0.86). At K = 4096-8192 (runs 184-185): 256 x 2048 x
    ///   4096 0.0269-0.0271 -> 0.0203-0.0204 (4 slices), 512 x 1024 x 4096 0.0272-0.0276
    ///   -> 0.0197-0.0199 (4), 256 x 4096 x 4096 0.0281-0.0284 -> 0.0249-0.0251, 1024 x
    ///   1024 x 8192 0.0500-0.0505 -> 0.0379-0.0404.
    /// - 64 x 256 ([`Self::M64_WIDE_TMA_STORE`], runs 184-185): 300 x 2048 x 16384 0.0941-0.0952
    ///   -> 0.0504-0.0559 in 3 slices (0.47 -> 0.81-0.87), 300 x 2048 x 4096 0.0280-0.0287
    ///   -> 0.0230-0.0235, 1 x 14336 x 14336 0.1102-0.1165 -> 0.1064-0.1081; 64 x 16384 x
    ///   13312 (64 tiles) within +-1%.
    /// - 128 x 256 ([`Self::WIDE_TMA_STORE`], runs 184-186): 128 x 16896 x 9216
    ///   0.1156-0.1206 -> 0.0959-0.1003 (0.69 -> 0.89), 128 x 16896 x 4096 0.0563 ->
    ///   0.0502-0.0505.
    /// - 64-row swapped ([`Self::swapped_tma_store`], runs 181-186): 64 x 4096 x 14336
    ///   0.054 -> 0.038-0.039 (0.70 -> 0.98), 100 x 4096 x 14336 (104 rows of A)
    ///   0.0590-0.0598 -> 0.0423-0.0425, 160 x 4096 x 14336 0.0652-0.0696 -> 0.0472-0.0535,
    ///   64 x 4096 x 4096 0.0199-0.0204 -> 0.0174-0.0176, 160 x 4096 x 4096 0.0232-0.0235
    ///   -> 0.0208-0.0210 (0.96 -> 1.08-1.10 of cuBLAS), 183 x 4096 x 8192 (184 rows)
    ///   0.0407-0.0410 -> 0.0322-0.0324, 190 x 2048 x 14336 0.0659-0.0662 -> 0.0325-0.0329
    ///   in 4 slices.
    /// - 128 x 136 ([`Self::cols_tma_store`], runs 185-186): 1028 x 136 x 9216 (9 tiles)
    ///   0.0541 -> 0.0258-0.0264 in 8 slices, 2052 x 136 x 9216 0.0542-0.0545 ->
    ///   0.0282-0.0288 in 7, 1030 x 136 x 4096 0.0275-0.0277 -> 0.0180-0.0188; 1030 x 8 x
    ///   4096 even.
    ///
    /// (cuBLAS runs its own split-K kernels there.) bench/NOTES.md 22.
    ///
    /// For K = 4096..=28672, the 64 x 64 swapped tile in its own slices takes the default's
    /// place where [`Self::few_tiles_smaller_instead_of`] says so (runs 205-207, 211), and in
    /// place of its 2 slices a 128 x 64 tile in 4 where [`Self::few_tiles_two_warpgroups_instead_of`]
    /// says so (runs 348-350, 352-356); else, at 17 <= M <= 64, narrower swapped tiles (64 x 16, 64 x 32)
    /// or the same one in other slices where [`Self::few_tiles_narrower_swapped_instead_of`]'s
    /// model says so (runs 343-351); else,
    /// at two row blocks, the 64 x 128 tile in 2 where [`Self::few_tiles_half_height_instead_of`]
    /// says so (run 298); else, above M = 256, the narrower 128-row tile in as many slices
    /// where [`Self::few_tiles_narrower_instead_of`] says so (run 329); else, on 193..=4096 rows,
    /// the 64 x 128 tile in fewer slices, down to none, where
    /// [`Self::few_tiles_half_height_fewer_slices_instead_of`] says so (runs 332-333); else the
    /// default's split, where it is the 64 x 64 swapped tile in 2 slices again through
    /// [`Self::few_tiles_two_warpgroups_instead_of`]. A pick of 1 slice runs unsplit and needs
    /// no workspace.
    pub fn split_few_tiles_for(shape: GemmShape, sm_count: u32, scratch_bytes: u64, counts_len: u64) -> Option<(Self, u32)> {
        // (a clustered default stays clustered here, so unsplit, unlike choose_for_split's)
        let t = Self::twin_that_splits(Self::choose_before_cluster_n(shape, sm_count), shape);
        let s = t.few_tiles_slices(shape, sm_count)?;
        let fits = |(t, s): (Self, u32)| t.split_fits(t.tiles(shape.m, shape.n), s as u64, scratch_bytes, counts_len).then_some((t, s));
        // (the two-warpgroup tile where it fits, else the pick it replaces where that fits: its
        // half as many tiles need half the counts)
        let two_warpgroups_or = |(p, ps): (Self, u32)| Self::few_tiles_two_warpgroups_instead_of(p, ps, shape, sm_count).and_then(fits).or_else(|| fits((p, ps)));
        // (the half-height tile's third slice only where the workspace holds it, else its two)
        let or_two_slices = |(h, hs): (Self, u32)| fits((h, hs)).or_else(|| if hs > 2 { fits((h, 2)) } else { None });
        Self::few_tiles_smaller_instead_of(t, s, shape, sm_count)
            .and_then(two_warpgroups_or)
            .or_else(|| Self::few_tiles_narrower_swapped_instead_of(t, s, shape, sm_count).and_then(fits))
            .or_else(|| Self::few_tiles_half_height_instead_of(t, s, shape, sm_count).and_then(or_two_slices))
            .or_else(|| Self::few_tiles_narrower_instead_of(t, s, shape, sm_count).and_then(fits))
            .or_else(|| Self::few_tiles_half_height_fewer_slices_instead_of(t, s, shape, sm_count).and_then(fits))
            .or_else(|| two_warpgroups_or((t, s)))
    }

    /// The few-tiles rule's narrower swapped tiles at small M ([`Self::split_few_tiles_for`]):
    /// in place of the 64 x R swapped TMA-store tile holding all of M (R = M rounded up to 8,
    /// 17 <= M <= 64) split in `current_slices`, the 64 x R' swapped TMA-store tile, R' one of
    /// R, 32 and 16 (at most R; ceil(M / R') row blocks of at most R + 8 rows in all), in S' =
    /// 2..=16 K-slices of at least 8 K blocks whose tiles x S' fit one wave of `sm_count` (tiles
    /// x S' <= SMs), taking the pick of least modelled time ([`SWAPPED_SPLIT_PS_PER_KBLOCK`]: the
    /// CTA's K blocks, the fix-up's L2 round trips, the bytes read from L2; the first of equal
    /// costs in the order R, 32, 16 and fewest slices) where that is at least
    /// [`SWAPPED_SPLIT_MIN_GAIN_PS`] (0.2 us) below `current`'s; K % 64 == 0, 4096 <= K <= 14336,
    /// (M + N) x K x 2 <= [`FEW_TILES_NARROWER_SWAPPED_MAX_OPERAND_BYTES`] (as measured). `None`
    /// elsewhere. (M <= 16 has the short swapped tiles' own slices, [`Self::few_tiles_slices`].)
    ///
    /// Why: the few-tiles split gives these tiles at most 8 slices of at least 16 K blocks, so
    /// at N <= 512 it fills at most half of 132 SMs (64 x 256 x 7168: 4 tiles in 7, 28 CTAs); the
    /// 64 x 16 and 64 x 32 tiles make 2-4 times the tiles, each K block costs them less, and
    /// their fix-up reads 8-16 slots a round trip where 64 x 64 reads 3. The bound on padding:
    /// two row blocks of 32 for M = 33-48 were 2-9% slower on 7 of 17 shapes (run 346; the 64 x
    /// 16 tiles' 48 rows there were not).
    ///
    /// Measured on one H200 (back to back x20 behind the host gate, two passes, ms, the split
    /// as merged -> the pick; cuBLAS; bench/NOTES.md 43): run 344's grid (M = 24-64, N =
    /// 256-1024, K = 4096-14336) 64 x 256 x 4096 (64 x 64 in 4 -> 64 x 32 in 8) 0.0083 ->
    /// 0.0062 (0.0065), 64 x 512 x 7168 (64 x 64 in 7 -> 64 x 32 in 8) 0.0093 -> 0.0076
    /// (0.0071), 48 x 256 x 7168 (64 x 48 in 7 -> 64 x 16 in 11) 0.0080 -> 0.0064 (0.0067), 24 x
    /// 256 x 14336 (64 x 24 in 8 -> 64 x 16 in 16) 0.0092 -> 0.0074 (0.0073); run 343's 64 x 768
    /// x 4096 (64 x 64 in 4 -> 64 x 32 in 5) 0.0084 -> 0.0069 (0.0069). Of its 77 moves timed in
    /// runs 343-351, 67 faster by 3-34% and 10 even (within 2%); none slower. Run 351 (main
    /// against the rule as it is, 20 shapes, 7 of them fresh): 16 faster by 3-31% (64 x 256 x
    /// 7168 0.0093 -> 0.0071, 62 x 384 x 12480 0.0114 -> 0.0095, 23 x 688 x 4736 0.0073 ->
    /// 0.0062), 4 even.
    pub fn few_tiles_narrower_swapped_instead_of(current: Self, current_slices: u32, shape: GemmShape, sm_count: u32) -> Option<(Self, u32)> {
        let rows = shape.m.div_ceil(8) * 8;
        if !(17..=64).contains(&shape.m)
            || current != Self::swapped_tma_store(rows)
            || current_slices < 2
            || !shape.k.is_multiple_of(64)
            || !(4096..=14336).contains(&shape.k)
            || (shape.m as u64 + shape.n as u64).saturating_mul(shape.k as u64 * 2) > FEW_TILES_NARROWER_SWAPPED_MAX_OPERAND_BYTES
        {
            return None;
        }
        let k_blocks = (shape.k / 64) as u64;
        let cost = |t: Self, s: u64| {
            let tiles = t.tiles(shape.m, shape.n);
            let chain = k_blocks.div_ceil(s).saturating_mul(SWAPPED_SPLIT_PS_PER_KBLOCK + t.bn as u64 * SWAPPED_SPLIT_PS_PER_KBLOCK_ROW);
            let l2 = tiles.saturating_mul((t.bm + t.bn) as u64 * 128).saturating_mul(k_blocks) / SWAPPED_SPLIT_L2_BYTES_PER_PS;
            chain.saturating_add(t.split_fixup_round_trips(s).saturating_mul(SWAPPED_SPLIT_PS_PER_ROUND_TRIP)).saturating_add(l2)
        };
        let current_cost = cost(current, current_slices as u64);
        [rows, 32, 16]
            .into_iter()
            // (no more than 8 rows of A computed past the current tile's: run 346)
            .filter(|&r| r <= rows && shape.m.div_ceil(r) * r <= rows + 8)
            .map(Self::swapped_tma_store)
            .filter(|t| t.check_output(shape.n).is_ok())
            .flat_map(|t| {
                let tiles = t.tiles(shape.m, shape.n).max(1);
                let most = (sm_count as u64 / tiles).min(k_blocks / 8).min(16);
                (2..=most).map(move |s| (t, s))
            })
            .map(|(t, s)| (cost(t, s), t, s))
            // (min_by_key keeps the first of equal costs)
            .min_by_key(|&(c, _, _)| c)
            .filter(|&(c, _, _)| c.saturating_add(SWAPPED_SPLIT_MIN_GAIN_PS) <= current_cost)
            .map(|(_, t, s)| (t, s as u32))
    }

    /// In place of the 64 x 64 swapped TMA-store tile in 2 K-slices (the smaller-tile rule's
    /// pick or the default's split, [`Self::split_few_tiles_for`]), a 128 x 64 TMA-store tile
    /// of two consumer warpgroups in 4, where its tiles x 4 fit one wave of `sm_count`, K % 64
    /// == 0 and 4096 <= K <= 14336, and (as measured) either
    /// - 193 <= M <= 384 and N >= 3M / 2: the unswapped one (128 rows of A by 64 columns,
    ///   [`Self::cols_tma_store`]`(64)`), or
    /// - 385 <= M <= 2048 and N = 128 or 256 (whole 128-row blocks of B): the swapped one (128
    ///   rows of B by 64 of A, [`Self::swapped_wide`]`(64, TmaStore)`; on 132 SMs the 64 x 64
    ///   tile comes in 2 slices from M = 705 at N = 256 and from M = 1409 at N = 128; M 385-704
    ///   was not timed in 2 slices, nor M above 2048).
    ///
    /// `None` elsewhere.
    ///
    /// Why: as many CTAs (half the tiles, twice the slices), each over the same multiply-adds
    /// in half the K blocks (two warpgroups a block) reading 3/4 of the bytes from L2; the
    /// fix-up reads three 32 KiB slots in up to 2 round trips instead of one 16 KiB slot in
    /// one, which longer chains pay for. At tall M and narrow N the swapped tile keeps A's
    /// 64-row blocks (the unswapped one in 4 was 8-16% slower than it there, run 352).
    ///
    /// Measured on one H200 (runs 348-349, back to back x20 behind the host gate, two passes,
    /// `--check` PASS, ms, the 64 x 64 split -> this; cuBLAS; bench/NOTES.md 43.3): 197 x 792 x
    /// 12096 0.0244 -> 0.0177 (0.0135), 236 x 808 x 9024 0.0181 -> 0.0151, 302 x 568 x 7360
    /// 0.0156 -> 0.0136, 331 x 696 x 6144 0.0162 -> 0.0132, 256 x 896 x 4096 / 7168 / 14336
    /// 0.0112 / 0.0155 / 0.0256 -> 0.0106 / 0.0136 / 0.0202 (0.0101 / 0.0124 / 0.0174): 6-38%
    /// faster on all 7. Run 350 (main against the rule, 14 fresh shapes it moves and two of the
    /// model map's): 15 faster by 4-49% (198 x 1008 x 5696 0.0185 -> 0.0124, 199 x 880 x 11136
    /// 0.0239 -> 0.0170, 256 x 896 x 5120 0.0127 -> 0.0118), 256 x 904 x 4416 even. Not at N <
    /// 3M / 2 (434 x 408 x 6976 even, 448 x 488 x 7232 4% slower, 512 x 512 x 4096-14336
    /// -8..+3%; faster at 489 x 384 x 11840 and 332 x 384 x 14336 in 6),
    /// nor in place of 3 slices (218 x 560 x 6336 in 6 even, 368 x 408 x 6720 15% slower).
    ///
    /// Measured on one H200 (runs 352 and 355, main's split -> this tile forced in 4, back to
    /// back x20 behind the host gate, two passes, `--check` PASS, ms; cuBLAS; bench/NOTES.md
    /// 44): 1024 x 256 x 7168 (DeepSeek-V3's router at 1024 tokens) 0.0157 -> 0.0134 (0.0129),
    /// 735 x 256 x 12480 0.0227 -> 0.0173, 812 x 256 x 11264 0.0213 -> 0.0166, 884 x 256 x
    /// 9216 0.0184 -> 0.0151, 1024 x 256 x 4096 0.0112 -> 0.0105, 1500 x 128 x 5120 0.0127 ->
    /// 0.0117, 2000 x 128 x 7168 0.0160 -> 0.0155: faster on all 12 shapes with N = 128 or 256,
    /// by 1-24% (900 x 256 x 6144 the least, 1-5%). Not at N = 384 (589 x 384 x 5568 3% slower,
    /// 692 x 384 x 4288 even, 460 x 384 x 8960 6% faster), nor where N pads the 128-row blocks
    /// (N = 264-448: 2-30% slower), nor in place of 3-6 slices (in 6-12: 5-29% slower), nor in
    /// as many slices as the 64 x 64 tile (2-11% slower on 12 of 13). Run 356 (main against
    /// the rule, 14 fresh shapes and the router): all 15 faster by 3-21%.
    pub fn few_tiles_two_warpgroups_instead_of(current: Self, current_slices: u32, shape: GemmShape, sm_count: u32) -> Option<(Self, u32)> {
        let (m, n) = (shape.m as u64, shape.n as u64);
        let t = if (193..=384).contains(&m) && n * 2 >= m * 3 {
            Self::cols_tma_store(64)
        } else if (385..=2048).contains(&m) && (n == 128 || n == 256) {
            Self::swapped_wide(64, Epilogue::TmaStore)
        } else {
            return None;
        };
        if current != Self::swapped_tma_store(64)
            || current_slices != 2
            || !shape.k.is_multiple_of(64)
            || !(4096..=14336).contains(&shape.k)
            || t.check_output(shape.n).is_err()
            || t.tiles(shape.m, shape.n).saturating_mul(4) > sm_count as u64
        {
            return None;
        }
        Some((t, 4))
    }

    /// L2 round trips of the kernel's fix-up (`split_fixup` in cuda/gemm/sm90_gemm.cuh) for the
    /// slice that arrives last when its tile is split in `slices`, at most (0 for 1 slice): the
    /// accumulators (BN / 2 a thread, kAccRegs) go in groups of 8 float4s; a tile of at most 32
    /// accumulators (one group of min(BN / 8, 8) float4s) walks all slices in batches of kBatch
    /// (as many of those groups as fit 32 float4s in flight at 2 or 4 float4s a slice, else 24,
    /// at most 16: 16 at 8-16 columns, 8 at 24-32, 4 at 40-48, 3 at 56-64), one round trip a
    /// batch, ceil(slices / kBatch) (one fewer when the arriving slice alone is its batch); a
    /// wider one takes one round trip per other slice and group, (slices - 1) x ceil(BN / 64).
    pub fn split_fixup_round_trips(&self, slices: u64) -> u64 {
        if slices <= 1 {
            return 0;
        }
        let acc = self.bn as u64 / 2;
        let f4 = acc / 4;
        if acc <= 32 && f4 > 0 {
            let in_flight = if f4 == 2 || f4 == 4 { 32 } else { 24 };
            let batch = (in_flight / f4.min(8)).min(16);
            slices.div_ceil(batch)
        } else {
            (slices - 1).saturating_mul(f4.div_ceil(8).max(1))
        }
    }

    /// The few-tiles rule's narrower tile above two row blocks ([`Self::split_few_tiles_for`],
    /// after [`Self::few_tiles_half_height_instead_of`]): in place of the 128 x 128 TMA-store
    /// tile ([`Self::NARROW_TMA_STORE`]) split in `current_slices`, the narrowest 128-row
    /// TMA-store tile 48..=[`FEW_TILES_NARROWER_MAX_WIDTH`] columns wide whose tiles in as many
    /// slices fit one wave of `sm_count` (tiles x slices <= SMs), if its tiles compute fewer
    /// elements than the 128 x 128 ones (tiles x 128 x columns: less padding of N; where that
    /// narrowest one computes as many or more, `None`: no wider one is tried); 257 <= M <=
    /// 4096, K % 64 == 0, 4096 <= K <= 14336 (as measured). `None` elsewhere. (The picks are
    /// 72-112 columns wide on every SM count scanned, helper-74.)
    ///
    /// Why: each CTA computes W' of the 128 columns over the same K range, and the padding
    /// columns of N's last block shrink: at 1586 x 280 x 4096 the 39 tiles of 128 x 128 in 3
    /// compute 384 columns, 39 of 96 compute 288.
    ///
    /// Measured on one H200 (run 329, main against the rule, two passes in both orders,
    /// `--check` PASS; ms; bench/NOTES.md 41.4), shapes sampled from the scan: where the
    /// narrower tiles compute fewer elements, 16 of 17 faster by 4-27% over both passes (3-28%
    /// pass by pass; 1586 x 280 x 4096
    /// 0.0263 -> 0.0190-0.0195 on 96 columns in 3, 1550 x 552 x 4096 0.027-0.029 -> 0.021 on
    /// 112 in 2, 971 x 392 x 7168 0.027-0.029 -> 0.022-0.023 on 104 in 4, 2801 x 216 x 14336
    /// 0.0506 -> 0.0450 on 112 in 3, 620 x 1304 x 14336 0.0496 -> 0.0451 on 104 in 2), 332 x
    /// 2016 x 9216 even; where they compute as many or more (more column blocks of 112
    /// columns in 2 slices, 126-132 CTAs) 10-18% slower at K = 7168-8192 (962 x 840, 1064 x
    /// 744 x 7168, 1403 x 632 x 8192), even at 1190 x 632 and 1406 x 256 x 4096, 4-7% faster
    /// at 383 x 1008 x 4096, 740 x 368 x 4096 and 1024 x 896 x 5120: hence fewer elements.
    pub fn few_tiles_narrower_instead_of(current: Self, current_slices: u32, shape: GemmShape, sm_count: u32) -> Option<(Self, u32)> {
        if current != Self::NARROW_TMA_STORE || current_slices < 2 || !(257..=4096).contains(&shape.m) || !shape.k.is_multiple_of(64) || !(4096..=14336).contains(&shape.k) {
            return None;
        }
        Self::narrowest_fitting(shape, 48, FEW_TILES_NARROWER_MAX_WIDTH, current_slices as u64, sm_count as u64)
            .filter(|&(t, _)| t.check_output(shape.n).is_ok() && t.computed_elements(shape) < current.computed_elements(shape))
            .map(|(t, _)| (t, current_slices))
    }

    /// The few-tiles rule's half-height tile in fewer slices ([`Self::split_few_tiles_for`], after
    /// [`Self::few_tiles_narrower_instead_of`]): in place of the 128 x 128 TMA-store tile
    /// ([`Self::NARROW_TMA_STORE`]) or the 64 x 256 one ([`Self::M64_WIDE_TMA_STORE`]) split in
    /// `current_slices` = 2..=4, the 64 x 128 TMA-store tile ([`Self::M64_NARROW_TMA_STORE`]) in the
    /// S' = 1..=`current_slices` slices (1: unsplit) whose tiles x S' fit one wave of `sm_count`,
    /// taking the S' of least cost if that is less than `current`'s, where a tile in S slices costs
    /// its CTA's multiply-adds per output column of K (rows x columns x ceil(K blocks / S)) plus
    /// [`FEW_TILES_SLICE_COST_KBLOCKS`] K blocks of a 128 x 128 tile per slice beyond the first
    /// (fewest slices on a tie); 193 <= M <= 4096, K % 64 == 0, 4096 <= K <= 14336, for the 128
    /// x 128 tile above M = 256 K <= [`FEW_TILES_HALF_HEIGHT_128_MAX_K`] (5120) (as measured).
    /// `None` elsewhere. (At 193 <= M <= 256 and K <= 8192 [`Self::few_tiles_half_height_instead_of`]
    /// comes first.)
    ///
    /// Why: at 2 slices of the 128 x 128 (or 64 x 256) tile, the 64 x 128 tile unsplit makes as
    /// many CTAs (or fewer: less padding of M), each over the same multiply-adds, with no
    /// fix-up, at 1.5x the operand bytes per CTA; at 4 slices, 2 of the 64 x 128 tile do the
    /// same with one slot to fix up instead of three. At 3 slices the 64 x 128 tile unsplit
    /// makes 2/3 the CTAs over 1.5x the K blocks each, which pays at K <= 5120 only: the model.
    ///
    /// Measured on one H200 (runs 332-333, `--check` PASS, two passes, ms, the rule's pick ->
    /// 64 x 128 in S'; bench/NOTES.md 42.2): 128 x 128 in 2 -> unsplit faster on all 12
    /// sampled (896 x 1024 x 4096 0.0220 -> 0.0183, 1024 x 1024 x 4096 0.0235-0.0240 ->
    /// 0.0192-0.0196, 2048 x 512 x 4096 0.0239-0.0249 -> 0.0197-0.0199, 896 x 1024 x 14336
    /// 0.0525 -> 0.0509-0.0522, 256 x 4224 x 14336 0.0601-0.0617 -> 0.0571-0.0589; 2-19%), 64 x
    /// 256 in 2 -> unsplit on all 6 (300 x 2304 x 4096 0.0243 -> 0.0177-0.0183, 700 x 1280 x
    /// 7168 0.0334-0.0344 -> 0.0283-0.0309, 300 x 3072 x 8192 0.0382-0.0393 -> 0.0316-0.0333);
    /// 128 x 128 in 4 -> 2 on 5 of 6 (1280 x 256 x 4096 0.0182-0.0185 -> 0.0153-0.0155, 256 x
    /// 2048 x 4096 0.0203 -> 0.0163-0.0168, 1000 x 512 x 8192 0.0252 -> 0.0242-0.0246), 896 x 512
    /// x 8192 3% slower (0.0244 -> 0.0251); 64 x 256 in 3-4 -> 2 where its slices fit (300 x 1664
    /// x 8192 0.0296 -> 0.0244-0.0246, 300 x 1536 x 7168 0.0272 -> 0.0210-0.0212, 700 x 640 x
    /// 4096 0.0245-0.0254 -> 0.0159, 300 x 1408 x 8192 0.0287 -> 0.0222-0.0225); 3 slices ->
    /// unsplit 10-23% faster at K <= 5120 (512 x 1152 x 4096 0.0192 -> 0.0168-0.0170, 1536 x
    /// 384 x 5120 0.0215 -> 0.0193-0.0195, 300 x 1792 x 4096 0.0220 -> 0.0170), even to 20%
    /// slower from K = 7168 (384 x 1536 x 7168 0.0244-0.0248 -> 0.0250-0.0255, 768 x 896 x 14336
    /// 0.0402 -> 0.0474-0.0483), which the model keeps split. Against the narrower tiles'
    /// picks, which come first, 64 x 128 unsplit was 2-8% faster on 4 of 8, and 13-34% slower
    /// at 640 x 1152 x 14336 (96 in 2), 1586 x 280 x 4096 and 2801 x 216 x 14336 (96 and 112
    /// in 3).
    ///
    /// Run 334 (main against the rule on 20 fresh shapes it moved at K = 4096-14336, two
    /// passes in both orders, `--check` PASS): 15 faster by 8-42% (932 x 376 x 4096 0.0268-0.0277
    /// -> 0.0153-0.0159, 821 x 1112 x 8704 0.046-0.047 -> 0.034, 680 x 552 x 10752 0.049 ->
    /// 0.036), 2 even, 3 slower: 2601 x 352 x 11776 (0.048 -> 0.060) and 994 x 944 x 12288
    /// (0.050 -> 0.060-0.063), 128 x 128 in 2 -> unsplit, and 436 x 920 x 11264, 64 x 256 in 4
    /// -> 2 (0.033 -> 0.038). Run 335 swept those in K: slower unsplit at 2601 x 352 from K =
    /// 6144 and at 994 x 944 from 8192 (10-24%; even at 6144), 436 x 920 from 9216 (6-17%; 2%
    /// faster at 7168). Hence the
    /// 128 x 128 tile's bound on K; the 64 x 256 tile's splits gave way faster on 22 of 24.
    /// Run 340 (forced, two passes, `--check` PASS) at two row blocks, where the bound does not
    /// hold: 128 x 128 in 2 -> unsplit 1-16% faster on 7 of 7 (252 x 4136 x 6144 0.0320 ->
    /// 0.0279-0.0282, 256 x 3936 x 10752 0.0485-0.0494 -> 0.0452-0.0458, 206 x 3752 x 14336
    /// 0.0584-0.0633 -> 0.0580-0.0616), in 4 -> 64 x 128 in 2 2-12% faster on 5 of 6 (237 x 1864
    /// x 6656 0.0231-0.0234 -> 0.0206-0.0208), 214 x 1960 x 11264 5% faster and 6% slower.
    pub fn few_tiles_half_height_fewer_slices_instead_of(current: Self, current_slices: u32, shape: GemmShape, sm_count: u32) -> Option<(Self, u32)> {
        let half = Self::M64_NARROW_TMA_STORE;
        if !(current == Self::NARROW_TMA_STORE || current == Self::M64_WIDE_TMA_STORE)
            || !(2..=4).contains(&current_slices)
            || !(193..=4096).contains(&shape.m)
            || !shape.k.is_multiple_of(64)
            || !(4096..=14336).contains(&shape.k)
            || (current == Self::NARROW_TMA_STORE && shape.m > 256 && shape.k > FEW_TILES_HALF_HEIGHT_128_MAX_K)
            || half.check_output(shape.n).is_err()
        {
            return None;
        }
        let k_blocks = shape.k.div_ceil(64) as u64;
        let cost = |t: Self, s: u64| (t.bm as u64 * t.bn as u64).saturating_mul(k_blocks.div_ceil(s)).saturating_add((s - 1) * FEW_TILES_SLICE_COST_KBLOCKS * 128 * 128);
        let tiles = half.tiles(shape.m, shape.n);
        let most = (current_slices as u64).min(sm_count as u64 / tiles.max(1));
        let current_cost = cost(current, current_slices as u64);
        // (min_by_key keeps the first of equal costs: the fewest slices)
        (1..=most)
            .map(|s| (cost(half, s), s))
            .min_by_key(|&(c, _)| c)
            .filter(|&(c, _)| c < current_cost)
            .map(|(_, s)| (half, s as u32))
    }

    /// The few-tiles rule's half-height tile at two row blocks ([`Self::split_few_tiles_for`],
    /// after [`Self::few_tiles_smaller_instead_of`]): in place of the 128 x 128 TMA-store tile
    /// ([`Self::NARROW_TMA_STORE`]) split in `current_slices` = 4..=6, the 64 x 128 TMA-store
    /// tile ([`Self::M64_NARROW_TMA_STORE`]) in 2 slices, where those make at most 7/8 of
    /// `sm_count` CTAs, and in 3 where its tiles x 3 fit one wave (at most `sm_count` CTAs; on
    /// 132 SMs at most 44 tiles: N <= 1408); 193 <= M <= 256, 4096 <= K <= 8192, K % 64 == 0
    /// (as measured). `None` elsewhere.
    ///
    /// Why: about as many CTAs, each over half the K range of the 128-row tile's quarters,
    /// and a fix-up of one 32 KiB slot instead of 3 to 5 of 64 KiB. cuBLAS runs 256 x
    /// 1536 x 4096 as 96 CTAs of 64 x 64 tiles over all of K (run 295).
    ///
    /// Measured on one H200 (run 298, two passes, ms, 128 x 128 in S -> 64 x 128 in 2;
    /// cuBLAS): 256 x 1536 x 4096 (24 tiles in 4 -> 48 in 2) 0.0151 -> 0.0125-0.0126
    /// (0.0109), 256 x 1280 x 8192 (20 in 6 -> 40 in 2) 0.0201-0.0202 -> 0.0184 (0.0157),
    /// 256 x 1792 x 5120 (28 in 4 -> 56 in 2) 0.0170 -> 0.0142-0.0143 (0.0125): 9-17% faster.
    /// The 64 x 64 swapped tile unsplit (96-112 tiles) was within 3% of it at N = 1536 and
    /// 1792 and 16% slower at 1280; at N = 768-1024, where the 64 x 64 swapped tile split is
    /// the default, 64 x 128 in 2 was 7-9% slower (bench/NOTES.md 37.6).
    ///
    /// The third slice: a 64-row tile's CTA is bound by the bytes into its SM (~53 B a cycle
    /// at 256 x 1536 x 4096; Nsight Compute, run 369), so a third of the K range per CTA
    /// pays for one more fix-up round trip where the slices fit one wave. Run 372 (back to
    /// back x20 behind the host gate, two passes, `--check` PASS, ms, 64 x 128 in 2 -> in 3;
    /// cuBLAS): 256 x 1280 x 8192 (40 tiles) 0.0184-0.0185 -> 0.0165-0.0167 (0.0157), 256 x
    /// 1152 x 4096 (36) 0.0124-0.0125 -> 0.0119 (0.0109-0.0110), 256 x 1408 x 6144 (44) 0.0155 ->
    /// 0.0146-0.0148 (0.0140): 4-10% faster on all 3; past one wave (48-56 tiles) 54-68% slower
    /// (bench/NOTES.md 45.9).
    pub fn few_tiles_half_height_instead_of(current: Self, current_slices: u32, shape: GemmShape, sm_count: u32) -> Option<(Self, u32)> {
        let half = Self::M64_NARROW_TMA_STORE;
        if current != Self::NARROW_TMA_STORE || !(4..=6).contains(&current_slices) || !(193..=256).contains(&shape.m) || !shape.k.is_multiple_of(64) || !(4096..=8192).contains(&shape.k) {
            return None;
        }
        let tiles = half.tiles(shape.m, shape.n);
        if half.check_output(shape.n).is_err() || tiles.saturating_mul(2).saturating_mul(8) > sm_count as u64 * 7 {
            return None;
        }
        // (K >= 4096: 3 slices of at least 21 K blocks)
        Some((half, if tiles.saturating_mul(3) <= sm_count as u64 { 3 } else { 2 }))
    }

    /// The few-tiles rule's smaller tile ([`Self::split_few_tiles_for`]): in place of its
    /// default tile `current`, which it splits in `current_slices` ([`Self::few_tiles_slices`]),
    /// the 64 x 64 swapped TMA-store tile ([`Self::swapped_tma_store`]`(64)`: 64 rows of B by
    /// 64 of A) in the slices [`Self::few_tiles_slices`] gives it, where `current`'s split
    /// leaves at least an eighth of the SMs idle (tiles x slices <= 7/8 of `sm_count`), the smaller tile too makes at
    /// most SMs / 2 tiles and computes no more elements than `current`'s tiles (tiles x rows x
    /// columns: no more padding), M >= 65 (below, the small-M rules' tiles already hold M in
    /// 64 rows), K % 64 == 0, 4096 <= K <= 28672 and A and B together at most 32 MiB ((M + N)
    /// x K x 2 bytes; as measured); `None` elsewhere, and where `current` is that tile.
    ///
    /// Why: these shapes stream a few MB, and their time is each CTA's chain of K blocks
    /// plus the fix-up of its tile's slices: the last slice reads the others' fp32 slots,
    /// 64 KiB each for 128 x 128 tiles (one L2 round trip per slice), 16 KiB for 64 x 64 ones
    /// (three slices per round trip). The smaller tile gives up to four times the CTAs (1.14-4x where measured),
    /// fewer bytes per K block, and a cheaper fix-up. Not for larger operands: four column
    /// blocks of 64 x 64 tiles read each row block of A four times where 128 x 128 tiles
    /// read it twice, from DRAM once A and B outgrow the L2 (50 MB on an H200; run 207 below).
    ///
    /// Measured on one H200 (run 205, two passes, gated, ms, the default split -> this tile
    /// in its slices; cuBLAS): 128 x 256 x 7168 (4 tiles of `swap-ab-64x128-tma-store` in 7
    /// slices, 28 CTAs -> 8 in 7) 0.0173-0.0179 -> 0.0127 (0.0083-0.0091), 256 x 256 x 7168
    /// (4 of 128 x 128 in 7 -> 16 in 7; 8 timed) 0.0194 -> 0.0131 (0.0102-0.0106), 512 x 256 x
    /// 7168 (8 in 7 -> 32 in 4) 0.0207 -> 0.0158-0.0165, 256 x 512 x 7168 0.0205-0.0219 ->
    /// 0.0157-0.0162, 512 x 512 x 4096 (16 in 4 -> 64 in 2) 0.0177-0.0180 -> 0.0157-0.0163,
    /// 128 x 1024 x 4096 (16 of 64 x 128 in 4 -> 32 in 4) 0.0148-0.0150 -> 0.0127-0.0129, 1024 x
    /// 256 x 7168 (16 in 7, 112 CTAs -> 64 in 2) 0.0236-0.0247 -> 0.0226: 4-33% faster on all 7
    /// (0.49-0.67 of cuBLAS -> 0.65-0.79). Finer slices than the bound were not faster (128 x
    /// 256 x 7168 in 14 or 16: 0.0131-0.0142). Run 206 (the same way, the tile split before
    /// forced): 300 x 520 x 4096 (15 of 64 x 256 in 4 -> 45 in 2) 0.0208-0.0213 ->
    /// 0.0155-0.0161, 192 x 768 x 7168 (12 of `swap-ab-64x192` in 7 -> 36 in 3) 0.0229-0.0230
    /// -> 0.0177-0.0182, 128 x 512 x 7168 0.0176 -> 0.0135-0.0136, 384 x 384 x 7168 (9 of 128 x
    /// 128 in 7) 0.0206-0.0211 -> 0.0177-0.0186, 640 x 384 x 4096 0.0184-0.0185 ->
    /// 0.0161-0.0162, 256 x 1024 x 4096 0.0180-0.0187 -> 0.0164-0.0175, 1000 x 200 x 5120
    /// 0.0195-0.0201 -> 0.0189-0.0194; but 128 x 2048 x 4096, whose default split already ran
    /// 128 CTAs (32 tiles of `swap-ab-64x128` in 4), 0.0164-0.0169 -> 0.0170-0.0177: hence
    /// the idle SMs (1024 x 256 x 7168 had 112 CTAs on 132 SMs and won). Run 207 (the
    /// default against this tile forced, split alike) at K > 7168, A + B in MB: 256 x 256 x
    /// 14336 (14.7; 4 of 128 x 128 in 8 -> 16 in 8) 0.0262-0.0269 -> 0.0175, 128 x 512 x 14336
    /// (18.4) 0.0228-0.0230 -> 0.0175-0.0184, 384 x 384 x 9216 (14.2) 0.0232 -> 0.0209, 192 x 768
    /// x 14336 (27.5) 0.0290-0.0292 -> 0.0278-0.0279; slower at 256 x 512 x 28672 (44.0; 8 in 8
    /// -> 32 in 4) 0.0366-0.0369 -> 0.0374-0.0378 and 512 x 256 x 57344 (88.1) 0.0558-0.0560
    /// -> 0.0665-0.0667. Run 211 (the same way) at K = 16384-28672 with A + B <= 32 MiB: 128
    /// x 256 x 28672 (22.0) 0.0304-0.0313 -> 0.0241-0.0253, 256 x 256 x 28672 (29.4)
    /// 0.0354-0.0359 -> 0.0249-0.0252, 128 x 512 x 16384 (21.0) 0.0244 -> 0.0191-0.0198, 192 x
    /// 384 x 24576 (28.3) 0.0326 -> 0.0242-0.0247: 19-30% faster on all 4 (0.45-0.60 of
    /// cuBLAS -> 0.55-0.73). Above K = 28672 unmeasured.
    pub fn few_tiles_smaller_instead_of(current: Self, current_slices: u32, shape: GemmShape, sm_count: u32) -> Option<(Self, u32)> {
        let small = Self::swapped_tma_store(64);
        if current == small || shape.m < 65 || !shape.k.is_multiple_of(64) || !(4096..=28672).contains(&shape.k) {
            return None;
        }
        // A and B within 32 MiB: four column blocks of 64 x 64 tiles re-read A where two of
        // 128 x 128 would, from DRAM once the operands outgrow L2 (run 207).
        if (shape.m as u64 + shape.n as u64).saturating_mul(shape.k as u64 * 2) > 32 << 20 {
            return None;
        }
        let ctas = current.tiles(shape.m, shape.n).saturating_mul(current_slices as u64);
        if small.computed_elements(shape) > current.computed_elements(shape) || ctas == 0 || ctas.saturating_mul(8) > sm_count as u64 * 7 {
            return None;
        }
        small.few_tiles_slices(shape, sm_count).map(|s| (small, s))
    }

    /// The K-slices [`Self::split_few_tiles_for`] gives this tile's tiles on `sm_count` SMs,
    /// whatever the workspace: S = [`Self::split_slices_bound`] where the tile can split
    /// ([`Self::can_split_last_wave`], N allowing its epilogue), makes 1..=SMs / 2 tiles,
    /// K >= 4096 and S >= 2; `None` elsewhere. The small-N column tiles (128 x N, N <= 32:
    /// [`Self::small_n_for`]'s) split from K = [`SMALL_N_SHORT_K_MIN`] (1024), the swapped
    /// TMA-store tiles of 64 x 8 .. 64 x 64 from K = [`SHORT_K_ONE_WAVE_MIN`] (1536) and the
    /// 64 x 128 TMA-store tile from K = [`SHORT_K_TWO_SLICES_MIN`] (3072): below K = 4096 as
    /// `short_k_slices` says; from K = 4096 the small-N column tiles and the swapped
    /// TMA-store tiles of 64 x 8 and 64 x 16 ([`SHORT_SWAPPED_MAX_ROWS`], run 259) take slices of at
    /// least [`SMALL_N_MIN_SPLIT_K_BLOCKS`] K blocks instead ([`SMALL_N8_MIN_SPLIT_K_BLOCKS`]
    /// at 8 columns of the column tile), as long as their CTAs stay within half the SMs: S = max(that bound,
    /// min(SMs / 2 / tiles, K blocks / L, C)), L = 8 K blocks (4 at 8 columns), C =
    /// [`SMALL_N_MAX_SPLIT_SLICES`] (16).
    /// (`bench gemm --split-like-rule` applies it to a forced tile.)
    ///
    /// Measured on one H200 (run 219, host-gated, two passes, ms; S slices): at K = 4096
    /// the 4 slices of 16 K blocks -> 8 of 8 were 7-16% faster on all six shapes with at
    /// most 8 tiles (64 x 8 x 4096 0.0101-0.0103 -> 0.0086-0.0087, 1024 x 8 x 4096
    /// 0.0105-0.0106 -> 0.0092-0.0094, 512 x 16 x 4096 0.0106-0.0108 -> 0.0094-0.0095,
    /// 256 x 32 x 4096 0.0110-0.0111 -> 0.0102-0.0103; 0.72-0.76 of cuBLAS -> 0.77-0.87);
    /// 256 x 8 x 7168 (2 tiles) 7 -> 8 0.0107-0.0109 -> 0.0102-0.0105; with 8 tiles at K =
    /// 7168 (7 -> 8) even; 2048 x 8 x 4096 (16 tiles: 4 -> 8 would make 128 CTAs)
    /// 0.0115-0.0117 -> 0.0119-0.0121, which the SMs / 2 bound leaves at 4. 16 slices were
    /// slower than 8 everywhere but 256 x 8 x 7168, 32 slower still, with that run's fix-up
    /// (3 slices a round trip; since run 224 16 at 8 columns, which took 64 x 8 x 4096 to 16
    /// slices of 4 K blocks, runs 227-228: [`SMALL_N8_MIN_SPLIT_K_BLOCKS`]). Run 221 (K >= 7168, 1-2
    /// tiles, 8 -> 16 slices): N <= 16 even or faster (64 x 8 x 14336 0.0136-0.0138 ->
    /// 0.0116-0.0117, 128 x 8 x 9216 0.0110-0.0114 -> 0.0105-0.0107, 256 x 8 x 7168
    /// 0.0103-0.0104 -> 0.0099-0.0100, 256 x 16 x 7168 0.0107-0.0110 -> 0.0105-0.0106, 64 x 8
    /// and 128 x 16 x 7168 even), 256 x 32 x 7168 1-4% slower. Run 225 (with run 224's
    /// fix-up, 8 slices forced -> this rule): 3-4 tiles in 16 slices 12-19% faster (512 x 8
    /// x 8192 0.0106 -> 0.0093, 384 x 16 x 14336 0.0143 -> 0.0116-0.0121, 512 x 16 x 16384
    /// 0.0157-0.0158 -> 0.0136-0.0137), 10-14 slices at K = 5120-7168 even to 11% faster
    /// (256 x 8 x 7168 in 14: 0.0100 -> 0.0089-0.0091, 64 x 8 x 5120 in 10: 0.0088 ->
    /// 0.0086-0.0088). At 24 and 32 columns up to 16 slices too since the fix-up sums 8 of
    /// them a round trip (run 232, 8 slices forced -> this rule, K = 5120-14336): 16 slices
    /// 3-15% faster (384 x 32 x 14336 0.0154-0.0157 -> 0.0133-0.0134, 512 x 32 x 8192
    /// 0.0122-0.0124 -> 0.0113-0.0115, 256 x 24 x 9216 0.0117-0.0119 -> 0.0110-0.0112),
    /// 10-14 slices even to 7% faster (300 x 24 x 7168 in 14: 0.0109-0.0113 -> 0.0105).
    pub fn few_tiles_slices(&self, shape: GemmShape, sm_count: u32) -> Option<u32> {
        if shape.k < 4096 {
            return self.short_k_slices(shape, sm_count);
        }
        if sm_count < 2 {
            return None;
        }
        let tiles = self.tiles(shape.m, shape.n);
        if !self.can_split_last_wave() || self.check_output(shape.n).is_err() || tiles == 0 || tiles > (sm_count / 2) as u64 {
            return None;
        }
        let s = self.split_slices_bound(shape.k, tiles, sm_count as u64);
        // (the small-N column tiles' 8-column one from slices of 4 K blocks; the 64 x 8 swapped
        // one, whose 8 are rows of A, from 8 as measured)
        let shortest = if self.is_small_n_cols() {
            Some(if self.bn <= 8 { SMALL_N8_MIN_SPLIT_K_BLOCKS } else { SMALL_N_MIN_SPLIT_K_BLOCKS })
        } else {
            self.is_short_swapped().then_some(SMALL_N_MIN_SPLIT_K_BLOCKS)
        };
        let s = match shortest {
            Some(shortest) => {
                let k_blocks = (shape.k as u64).div_ceil(self.bk.max(1) as u64);
                s.max(((sm_count / 2) as u64 / tiles).min(k_blocks / shortest).min(SMALL_N_MAX_SPLIT_SLICES))
            }
            None => s,
        };
        (s >= 2).then_some(s as u32)
    }

    /// [`Self::few_tiles_slices`] below K = 4096, where one tile's K chain bounds a call
    /// (~0.22 us a K block on an H200, run 234): only these tiles split, into S = min(CTAs /
    /// tiles, K blocks / shortest, 8) slices where S >= the fewest; `None` elsewhere:
    /// - the small-N column tiles from K = [`SMALL_N_SHORT_K_MIN`]: CTAs SMs / 2, slices of
    ///   at least [`SMALL_N_SHORT_K_MIN_SPLIT_K_BLOCKS`] K blocks, S >= [`SHORT_K_MIN_SLICES`];
    /// - from K = [`SHORT_K_ONE_WAVE_MIN`] (1536), with CTAs up to the SMs (one wave) and slices of
    ///   at least [`SMALL_N_MIN_SPLIT_K_BLOCKS`] K blocks: the swapped TMA-store tiles of 64
    ///   rows of B and at most 64 of A (the 64 x 64 one of
    ///   [`Self::few_tiles_unsplit_smaller_instead_of`], and the TMA-store twins of the
    ///   small-M rule's for M <= 64), S >= 3, or 2 from K = [`SHORT_K_TWO_SLICES_MIN`];
    /// - the 64 x 128 TMA-store tile ([`Self::few_tiles_short_k_m64_instead_of`]'s) from K =
    ///   [`SHORT_K_TWO_SLICES_MIN`], with CTAs up to the SMs and slices of at least
    ///   [`M64_SHORT_K_MIN_SPLIT_K_BLOCKS`] K blocks, S >= 2.
    ///
    /// (The 128 x 128 tile's one-wave split, 2-23% faster in run 245, gave way to the 64 x 128
    /// tile, faster still (run 247); where that tile is not taken, K % 64 != 0 or more than one
    /// wave of it, the 128 x 128 split below K = 4096 was not measured, so it does not split.)
    pub(super) fn short_k_slices(&self, shape: GemmShape, sm_count: u32) -> Option<u32> {
        let (min_k, shortest, ctas, fewest) = if self.is_small_n_cols() {
            (SMALL_N_SHORT_K_MIN, SMALL_N_SHORT_K_MIN_SPLIT_K_BLOCKS, sm_count / 2, SHORT_K_MIN_SLICES)
        } else if self.bn <= 64 && *self == Self::swapped_tma_store(self.bn) {
            (SHORT_K_ONE_WAVE_MIN, SMALL_N_MIN_SPLIT_K_BLOCKS, sm_count, if shape.k >= SHORT_K_TWO_SLICES_MIN { 2 } else { 3 })
        } else if *self == Self::M64_NARROW_TMA_STORE {
            (SHORT_K_TWO_SLICES_MIN, M64_SHORT_K_MIN_SPLIT_K_BLOCKS, sm_count, 2)
        } else {
            return None;
        };
        let tiles = self.tiles(shape.m, shape.n);
        if shape.k < min_k || sm_count < 2 || tiles == 0 || !self.can_split_last_wave() || self.check_output(shape.n).is_err() {
            return None;
        }
        let k_blocks = (shape.k as u64).div_ceil(self.bk.max(1) as u64);
        let s = (ctas as u64 / tiles).min(k_blocks / shortest).min(crate::gemm_allreduce::MAX_SPLIT_SLICES);
        (s >= fewest).then_some(s as u32)
    }

    /// Whether this is one of the small-N column tiles (128 rows by N <= 32 columns,
    /// unswapped, unclustered, the TMA-store epilogue: [`Self::small_n_for`]'s for N <= 32),
    /// which [`Self::few_tiles_slices`] splits finer.
    pub(super) fn is_small_n_cols(&self) -> bool {
        self.bn <= 32 && *self == Self::cols_tma_store(self.bn)
    }

    /// Whether this is a swapped TMA-store tile of 64 rows of B by at most
    /// [`SHORT_SWAPPED_MAX_ROWS`] rows of A (M <= 16), which [`Self::few_tiles_slices`] splits
    /// as finely as the small-N column tiles from K = 4096.
    fn is_short_swapped(&self) -> bool {
        self.bn <= SHORT_SWAPPED_MAX_ROWS && *self == Self::swapped_tma_store(self.bn)
    }

    /// Whether `rest` left-over tiles in `slices` K-slices fit a workspace of
    /// `scratch_bytes` of slots ([`Self::split_slot_bytes`] each) and `counts_len` counts
    /// (the split rules' bound; [`SplitLaunch::check`] applies the same to a launch); 1 slice
    /// (unsplit) needs neither.
    fn split_fits(&self, rest: u64, slices: u64, scratch_bytes: u64, counts_len: u64) -> bool {
        // (1 slice: unsplit, no slots or counts)
        slices <= 1 || (rest.saturating_mul(slices).saturating_mul(self.split_slot_bytes()) <= scratch_bytes && rest <= counts_len)
    }

    /// The plain GEMM's second split rule: for one row block of A (112 <= M <= 128) with a
    /// long K, where the default spreads it over narrow tiles (N = 6865..=9504 on 132 SMs:
    /// the 64-row swapped tiles holding M, or 72-column ones, [`Self::narrow_cols_instead_of`]),
    /// the narrowest 128-row TMA-store tile (a multiple of 8 columns) that makes at most
    /// SMs / 2 tiles, where that is 112..=144 columns wide (`cols-128x112/120-tma-store`,
    /// `narrow-tma-store`, `cols-128x136/144-tma-store`), every tile in 2 K-slices: K >= 9216 (as
    /// measured), K % 64 == 0, N % 8 == 0, within the workspace's `scratch_bytes` and
    /// `counts_len`. `None` elsewhere.
    ///
    /// Why: these shapes stream B from DRAM once (M <= 128) and run at its rate. On 128 x
    /// 9216 x 14336 (Nsight Compute, run 175) the 72-column tiles read the same 268 MB as
    /// cuBLAS at 73% of the DRAM bandwidth where cuBLAS's kernel (144-column tiles split 2
    /// along K, 128 CTAs) reaches 83%. Each stage of a 72-column tile brings 9 KiB from
    /// DRAM next to 16 KiB of A from L2, a 144-column one 18 KiB; that is not the whole
    /// story (the 64-row swapped tiles at M <= 64 match cuBLAS with 8 KiB, run 179).
    /// Sharing A between the CTAs of 2- or 4-CTA clusters along N (A multicast, run 174)
    /// left the time unchanged.
    /// Measured on one H200 (runs 176-177, two passes, ms, default (72-column tiles at N >=
    /// 8704, 64-row swapped ones below) -> this tile split 2):
    /// 128 x 9216 x 14336 0.0874-0.0882 -> 0.0801-0.0802 (0.89 -> 1.01 of cuBLAS), 128 x
    /// 9216 x 28672 0.1725-0.1764 -> 0.1449-0.1461, 112 x 9216 x 14336 0.0856-0.0917 ->
    /// 0.0788-0.0792, 128 x 9216 x 10240 0.0645-0.0650 -> 0.0606-0.0608, 128 x 8192 x
    /// 14336 (Llama-3-70B's MLP down-projection on two GPUs, a decode batch of 128) 0.0784-0.0796
    /// -> 0.0714-0.0728, 128 x 8192 x 28672 0.1502-0.1581 -> 0.1324-0.1405, 128 x 8192 x
    /// 10240 0.0575-0.0578 -> 0.0557-0.0561, 128 x 7168 x 18432 0.0923-0.0928 -> 0.0806-0.0808
    /// (112 columns; 136 columns, fewer tiles, 3% behind it), 128 x 7168 x 9216
    /// 0.0479-0.0526 -> 0.0456-0.0457; within +-1% at 112 x 8192 x 14336. Not taken: K <=
    /// 7168 (128 x 8192 x 7168 0.0411 -> 0.0424, 128 x 9216 x 4096 0.028 -> 0.032) and
    /// wider tiles (N >= 10240: 160-224 columns, even or 5-18% slower).
    pub fn split_row_block_for(shape: GemmShape, sm_count: u32, scratch_bytes: u64, counts_len: u64) -> Option<(Self, u32)> {
        if !(112..=128).contains(&shape.m) || !shape.k.is_multiple_of(64) || shape.k < 9216 || !shape.n.is_multiple_of(8) || sm_count < 2 {
            return None;
        }
        // (the narrowest width, a multiple of 8, making at most SMs / 2 tiles; as measured,
        // 112..=144 columns)
        let half = sm_count / 2;
        let width = shape.n.div_ceil(half).div_ceil(8).saturating_mul(8);
        if !(112..=144).contains(&width) {
            return None;
        }
        let t = Self::rows128_tma_store(width);
        t.split_fits(t.tiles(shape.m, shape.n), 2, scratch_bytes, counts_len).then_some((t, 2))
    }

    /// The tile heuristic's cost model for small M, where the GEMM waits on loads rather
    /// than on the tensor cores: waves of tiles on `sm_count` SMs times the rows of A and B
    /// each tile loads per k-block (`bm + bn`). Comparable between configurations of one
    /// shape only. (It ranks the 12 small-M shapes of run 103 as measured.)
    pub fn load_cost(&self, shape: GemmShape, sm_count: u32) -> u64 {
        let tiles = self.tiles(shape.m, shape.n);
        let grid = self.grid_for(tiles, sm_count.max(1)) as u64;
        tiles.div_ceil(grid).saturating_mul(self.bm as u64 + self.bn as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_n_rule_takes_column_or_swapped_tiles_and_splits_the_few() {
        // N <= 32: the 128-row tile N columns wide, whatever M.
        for (m, n) in [(64, 8), (65, 8), (4096, 16), (1 << 20, 24), (132 * 128 + 1, 32)] {
            assert_eq!(TileConfig::small_n_for(GemmShape { m, n, k: 4096 }, 132), Some(TileConfig::cols_tma_store(n)), "{m}x{n}");
        }
        let sn = |m, n, k| TileConfig::small_n_for(GemmShape { m, n, k }, 132).map(|t| (t.swap_ab, t.bn));
        let sn = |m, n, k| sn(m, n, k).map(|(swap, rows)| if swap { rows } else { 0 });
        // Above: 64 rows of A up to 66 tiles on 132 SMs, 128 up to 132 tiles, then 256.
        assert_eq!(sn(65, 40, 4096), Some(64));
        assert_eq!(sn(66 * 64, 64, 4096), Some(64));
        assert_eq!(sn(66 * 64 + 1, 64, 4096), Some(128));
        assert_eq!(sn(132 * 128, 40, 4096), Some(128));
        assert_eq!(sn(132 * 128 + 1, 48, 4096), Some(256));
        assert_eq!(sn(1 << 20, 56, 7168), Some(256));
        // 64 < N <= 160: two or three column blocks, 64 or 128 rows of A, no 256.
        assert_eq!(sn(512, 128, 4096), Some(64));
        assert_eq!(sn(4096, 96, 4096), Some(128));
        assert_eq!(sn(4096, 160, 5120), Some(128));
        assert_eq!(sn(44 * 128, 160, 5120), Some(128));
        assert_eq!(sn(44 * 128 + 1, 160, 5120), None);
        assert_eq!(sn(16384, 128, 4096), None);
        // Above N = 64 only where the other rules' tile pads N as much: N = 160 on 128 x 128
        // tiles (96 padding columns; 32 rows here), not N = 136 on the 128 x 136 tile.
        assert!(TileConfig::choose_for(GemmShape { m: 4096, n: 160, k: 5120 }, 132).swap_ab);
        assert_eq!(TileConfig::choose_for(GemmShape { m: 1028, n: 136, k: 9216 }, 132), TileConfig::cols_tma_store(136));
        // Not: M < 64 (M = 64 above N = 32: the small-M rules), N > 160, N % 8 != 0, K % 64 != 0.
        for (m, n, k) in [(63, 8, 4096), (64, 40, 4096), (4096, 168, 4096), (4096, 256, 4096), (4096, 12, 4096), (4096, 8, 4104)] {
            assert_eq!(sn(m, n, k), None, "{m}x{n}x{k}");
        }
        // The default takes it, and the few-tiles split splits it where its tiles are few.
        // (run 203's splits: 8 tiles in 4 slices at K = 4096, 16 in 7 at K = 7168, ...)
        // (run 219: the column tiles' slices of 8 K blocks where their CTAs stay within SMs / 2;
        // up to 16 slices at 24 and 32 columns too since run 232)
        for (m, n, k, slices) in [
            (64, 8, 7168, Some(16)),
            (64, 8, 14336, Some(16)),
            (256, 8, 4096, Some(16)),
            (128, 16, 4096, Some(8)),
            (256, 16, 9216, Some(16)),
            (256, 32, 7168, Some(14)),
            (512, 32, 8192, Some(16)),
            (300, 24, 7168, Some(14)),
            (1024, 8, 7168, Some(8)),
            (1024, 8, 4096, Some(8)),
            (256, 32, 4096, Some(8)),
            // (below K = 4096 from K = 1024: up to 8 slices of >= 2 K blocks, run 235)
            (128, 32, 2048, Some(8)),
            (256, 8, 1024, Some(8)),
            (64, 16, 3584, Some(8)),
            (1024, 8, 2048, Some(8)),
            (2048, 8, 2048, Some(4)),
            (2048, 32, 3072, Some(4)),
            (4096, 8, 2048, None),
            (4096, 32, 1024, None),
            (3000, 16, 1536, None),
            (128, 32, 960, None),
            (2048, 8, 4096, Some(4)),
            (2048, 8, 7168, Some(7)),
            (4096, 8, 4096, Some(4)),
            (4096, 64, 7168, Some(2)),
            (8192, 16, 7168, Some(2)),
            (16384, 8, 4096, None),
            (1024, 64, 2048, Some(4)),
        ] {
            let s = GemmShape { m, n, k };
            let t = TileConfig::choose_for(s, 132);
            assert_eq!(Some(t), TileConfig::small_n_for(s, 132), "{s:?}");
            assert!(t.epilogue == Epilogue::TmaStore && t.cluster_m == 1 && t.swap_ab == (n > 32), "{s:?}: {t}");
            assert_eq!(TileConfig::split_rule_for(s, 132, u64::MAX, u64::MAX), slices.map(|sl| (t, sl)), "{s:?}");
        }
    }

    #[test]
    fn short_k_splits_small_swapped_and_64x128_tiles_in_one_wave() {
        let sw = TileConfig::swapped_tma_store;
        // Runs 245 and 250's picks on 132 SMs: S = min(SMs / tiles, K blocks / 8, 8), 2 only from
        // K = 3072.
        for (m, n, k, want) in [
            (1, 1024, 3072, Some((sw(8), 6))),
            (8, 512, 3072, Some((sw(8), 6))),
            (48, 768, 3072, Some((sw(48), 6))),
            (1, 2048, 2048, Some((sw(8), 4))),
            (32, 1024, 2048, Some((sw(32), 4))),
            (16, 2048, 3072, Some((sw(16), 4))),
            (48, 3072, 3072, Some((sw(48), 2))),
            // (the 128 x 128 default gives way to 64 x 128 tiles at K % 64 == 0, run 247; those
            // split from K = 3072 in slices of >= 16 K blocks, run 248; 128 x 128 tiles do not
            // split below K = 4096)
            (256, 4096, 4088, None),
            (256, 2048, 3072, Some((TileConfig::M64_NARROW_TMA_STORE, 2))),
            (128, 2560, 3584, Some((TileConfig::M64_NARROW_TMA_STORE, 3))),
            (384, 1536, 3072, None),
            (1024, 1024, 2048, None),
            (8, 4096, 2048, None),   // 2 slices of 16 K blocks: slower (run 245)
            (192, 2048, 2048, None), // 192 rows of A: not taken
            (1, 2048, 1536, Some((sw(8), 3))),
            (8, 2048, 1984, Some((sw(8), 3))),
            (8, 2048, 1472, None),   // below K = 1536
        ] {
            let s = GemmShape { m, n, k };
            assert_eq!(TileConfig::split_rule_for(s, 132, u64::MAX, u64::MAX), want, "{m}x{n}x{k}");
        }
        // On any SM count the picks keep tiles x slices within one wave and slices of >= 8 K blocks.
        for sms in [2, 16, 66, 78, 114, 132] {
            for m in [1, 8, 33, 64, 200, 512, 1000] {
                for n in [256, 1000, 2048, 4096] {
                    for k in [1024, 1536, 2048, 2560, 3072, 4032] {
                        let s = GemmShape { m, n, k };
                        let t = TileConfig::twin_that_splits(TileConfig::choose_for(s, sms), s);
                        if let Some(sl) = t.short_k_slices(s, sms) {
                            let tiles = t.tiles(m, n);
                            let shortest = if t == TileConfig::M64_NARROW_TMA_STORE { 16 } else { 8 };
                            assert!(tiles * sl as u64 <= sms as u64 && (k as u64).div_ceil(64) / sl as u64 >= shortest, "{m}x{n}x{k} on {sms}: {t} in {sl}");
                            assert!(sl >= 2 && (sl >= 3 || k >= SHORT_K_TWO_SLICES_MIN || t.is_small_n_cols()), "{m}x{n}x{k} on {sms}: {t} in {sl}");
                            assert!(t.swap_ab || t == TileConfig::M64_NARROW_TMA_STORE || t.is_small_n_cols(), "{m}x{n}x{k} on {sms}: {t}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn few_tiles_at_short_k_take_64x128_tiles_for_128x128_and_wide_swapped_ones() {
        let s = |m, n, k| GemmShape { m, n, k };
        let m64 = TileConfig::M64_NARROW_TMA_STORE;
        // Run 247's shapes (128 x 128 defaults; swapped 64 x 96..192 ones), ragged M and N.
        for (m, n, k) in [(640, 1024, 2048), (384, 2048, 2048), (1024, 1024, 2048), (768, 768, 2048), (512, 1536, 3072), (192, 2048, 2048), (192, 4096, 2048), (160, 2048, 3072), (96, 2048, 2048), (130, 1536, 2560), (600, 1000, 3968), (640, 1024, 1024), (512, 2048, 1536), (640, 1024, 960), (768, 768, 512)] {
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), m64, "{m}x{n}x{k}");
        }
        // Not: K below 512, from 4096, K % 64 != 0, N % 8 != 0, more tiles than SMs, the 64 x 64
        // swapped tile's ground (at most SMs / 2 of those), M <= 64, few SMs.
        for (m, n, k, sms) in [(640, 1024, 448, 132), (640, 1024, 4096, 132), (640, 1024, 2056, 132), (640, 1020, 2048, 132), (1024, 2048, 2048, 132), (256, 512, 2048, 132), (64, 4096, 2048, 132), (640, 1024, 2048, 66)] {
            assert_ne!(TileConfig::choose_for(s(m, n, k), sms), m64, "{m}x{n}x{k} on {sms}");
        }
        for t in [TileConfig::WIDE_TMA_STORE, TileConfig::swapped(64), TileConfig::cols_tma_store(136)] {
            assert_eq!(TileConfig::few_tiles_short_k_m64_instead_of(t, s(640, 1024, 2048), 132), None, "{t}");
        }
    }

    #[test]
    fn few_tiles_take_64x64_swapped_tiles_unsplit_below_k_4096() {
        let s = |m, n, k| GemmShape { m, n, k };
        let small = TileConfig::swapped_tma_store(64);
        // Run 209's shapes, and ragged M and N (no more padding than 128 x 128 tiles).
        // Split from K = 2048 into as many slices of >= 8 K blocks as fit one wave, up to 8,
        // 2 of them from K = 3072 (runs 244-245), else unsplit.
        for (m, n, k, slices) in [
            (256, 256, 2048, Some(4)),
            (512, 512, 2048, None),
            (512, 512, 3072, Some(2)),
            (384, 384, 3072, Some(3)),
            (256, 1024, 1024, None),
            (1024, 256, 2048, None),
            (128, 512, 3072, Some(6)),
            (192, 768, 2048, Some(3)),
            (640, 384, 1024, None),
            (300, 520, 1024, None),
            (256, 128, 3072, Some(6)),
            (200, 136, 2048, Some(4)),
            (128, 256, 1984, Some(3)),
        ] {
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), small, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), slices.map(|sl| (small, sl)), "{m}x{n}x{k}");
        }
        // Not: more than SMs / 2 of them, K >= 4096 (the split rules' ground) or < 1024, K % 64
        // != 0, N % 8 != 0, M <= 64, more padding (N = 136 on 128 x 136 tiles), few SMs.
        for (m, n, k, sms) in [(1024, 1024, 2048, 132), (256, 256, 4096, 132), (256, 256, 960, 132), (256, 256, 2056, 132), (256, 252, 2048, 132), (64, 1024, 2048, 132), (512, 512, 2048, 100), (256, 256, 2048, 1), (256, 256, 2048, 0)] {
            assert_eq!(TileConfig::few_tiles_unsplit_smaller_instead_of(TileConfig::NARROW, s(m, n, k), sms), None, "{m}x{n}x{k} on {sms}");
        }
        assert_eq!(TileConfig::few_tiles_unsplit_smaller_instead_of(TileConfig::cols_tma_store(136), s(1028, 136, 2048), 132), None);
        assert_eq!(TileConfig::few_tiles_unsplit_smaller_instead_of(small, s(256, 256, 2048), 132), None);
    }

    #[test]
    fn swapped_operand_tiles_fit_m_and_stay_out_of_the_fused_kernel() {
        assert_eq!(TileConfig::all_swapped().count(), 148);
        assert_eq!(TileConfig::swapped_for(129, 1), Some(TileConfig::swapped(136)));
        assert_eq!(TileConfig::swapped_for(129, 2), Some(TileConfig::swapped_c2(144)));
        assert_eq!(TileConfig::swapped_for(1, 1), Some(TileConfig::swapped(8)));
        assert_eq!(TileConfig::swapped_for(256, 1), Some(TileConfig::swapped(256)));
        assert_eq!(TileConfig::swapped_for(257, 1), None);
        assert_eq!(TileConfig::swapped_for(0, 2), None);
        assert_eq!(TileConfig::swapped_for(64, 3), None);
        let c2 = TileConfig::swapped_c2(144);
        assert_eq!(c2.name(), "swap-ab-64x144-c2");
        assert_eq!(TileConfig::by_name("swap-ab-64x144-c2"), Some(c2));
        assert!(c2.validate_for_gemm().is_ok() && c2.validate().is_err());
        // The TMA-store variant: the fused kernel takes it; one box of [136 rows x 64].
        let ts = TileConfig::swapped_tma_store(136);
        assert_eq!(ts.name(), "swap-ab-64x136-tma-store");
        assert_eq!(TileConfig::by_name("swap-ab-64x136-tma-store"), Some(ts));
        assert!(ts.validate().is_ok() && ts.validate_for_gemm().is_ok());
        assert_eq!(ts.smem_bytes(), ts.stages * (8192 + 136 * 128) + 136 * 128 + 16 * ts.stages + 1024);
        assert!(TileConfig::swapped_tma_store(256).smem_bytes() + 16 <= 232_448);
        assert_eq!(TileConfig::swapped(136).with_tma_store(), ts);
        // (and the 128-row ones of 128..=256 rows, unclustered by 8s and in clusters by 16s;
        // then the column-fitted TMA-store tiles of 136..=248 columns by 8s, in clusters by 16s)
        assert_eq!(TileConfig::fused_catalog().count(), TileConfig::ALL.len() + 32 + 17 + 9 + 15 + 7);
        for c in (136..=248).step_by(8) {
            let (t, c2) = (TileConfig::cols_tma_store(c), TileConfig::cols_tma_store_c2(c));
            assert!(t.validate().is_ok() && t.fused_epilogue_only() && TileConfig::cols(c).validate().is_err(), "{c}");
            assert_eq!(c2.validate().is_ok(), c % 16 == 0, "{c}");
            assert!(t.is_fused_column_fitted() && c2.is_fused_column_fitted() == (c % 16 == 0), "{c}");
            // (the epilogue path's shared memory: the tile's and one mbarrier)
            assert!(t.smem_bytes() + 16 <= 232_448 && c2.smem_bytes() + 16 <= 232_448, "{c}");
        }
        assert!(TileConfig::ALL.iter().all(|t| t.fused_epilogue_only() == (t.cluster_m > 1)));
        // Pairs of B row blocks: 1000 / 64 = 16 blocks (even), 8200 / 64 = 129 (one padding block).
        assert_eq!(c2.tiles(129, 1000), 16);
        assert_eq!(c2.tiles(129, 8200), 130);
        assert_eq!(c2.grid_for(c2.tiles(129, 8200), 131), 130);
        let t = TileConfig::swapped(136);
        assert_eq!((t.bm, t.bn, t.stages, t.threads()), (64, 136, 8, 256));
        assert_eq!(TileConfig::swapped(256).stages, 5);
        assert_eq!(t.name(), "swap-ab-64x136");
        // Tiles: 64 rows of B (columns of C) by `bn` rows of A.
        assert_eq!(t.tiles(129, 8192), 128);
        assert_eq!(TileConfig::swapped(64).tiles(200, 1000), 16 * 4);
        assert_eq!(t.grid_for(t.tiles(129, 8192), 132), 128);
        // The plain GEMM takes them, the fused kernel refuses them by name.
        assert!(t.validate_for_gemm().is_ok());
        let e = t.validate().unwrap_err().to_string();
        assert!(e.contains("`tile`") && e.contains("swap-ab-64x136") && e.contains("plain GEMM") && e.contains("-tma-store"), "{e}");
        // (swapped_c2(136): 68-row halves of A are not whole 8-row swizzle atoms)
        for bad in [TileConfig::swapped(12), TileConfig::swapped(264), TileConfig { stages: 2, ..t }, TileConfig::swapped_c2(136)] {
            let e = bad.validate_for_gemm().unwrap_err().to_string();
            assert!(e.contains("`tile`") && e.contains("multiple of 8"), "{e}");
        }
        assert!(t.check_output(4099).is_ok(), "a Registers epilogue writes any N");
        // Every width but the two hand-kept ones gets a generated wgmma wrapper with N / 2
        // accumulators, and the instantiation swaps the operands.
        let src = source(t).unwrap().source;
        assert!(src.contains("wgmma.mma_async.sync.aligned.m64n136k16.f32.bf16.bf16"), "generated wrapper");
        let start = src.find("wgmma_tile_k16<136>").expect("generated wrapper");
        let wrapper = &src[start..start + src[start..].find("// namespace mk").expect("wrapper end")];
        assert!(wrapper.contains("float (&d)[68]") && wrapper.contains("\"+f\"(d[67])") && !wrapper.contains("(d[68])"));
        assert!(wrapper.contains("%68, %69, p, 1, 1, 0, 0") && wrapper.contains("setp.ne.b32 p, %70, 0"));
        assert!(src.contains("mk::GemmConfig<64, 136, 64, 8, mk::Epilogue::Registers, 1, true>"));
        assert!(!source(TileConfig::swapped(256)).unwrap().source.contains("namespace mk {\ntemplate <>\n__device__ __forceinline__ void wgmma_tile_k16<256>"));
    }

    #[test]
    fn small_m_takes_swapped_tiles_where_they_load_less() {
        let s = |m, n, k| GemmShape { m, n, k };
        // Run 103's wins (N=8192, K=4096 and the decode shapes) ...
        for m in [1, 16, 32, 64, 100, 127] {
            assert_eq!(TileConfig::choose_for(s(m, 8192, 4096), 132), TileConfig::swapped(m.div_ceil(8) * 8), "M={m}");
        }
        assert_eq!(TileConfig::choose_for(s(129, 8192, 4096), 132), TileConfig::swapped(136));
        assert_eq!(TileConfig::choose_for(s(192, 8192, 4096), 132), TileConfig::swapped(192));
        assert_eq!(TileConfig::choose_for(s(64, 8192, 14336), 132), TileConfig::swapped(64));
        assert_eq!(TileConfig::choose_for(s(128, 5120, 8192), 132), TileConfig::swapped(128));
        // ... and its two losses keep the square-ish tiles (128 x 128 with the TMA store
        // where N % 8 == 0 and K % 64 == 0: run 143; the Registers one otherwise).
        assert_eq!(TileConfig::choose_for(s(256, 8192, 4096), 132), TileConfig::NARROW_TMA_STORE);
        // (since run 266 the one-wave-cols rule narrows those to 112 columns, filling the SMs)
        for m in [200, 208, 224, 240] {
            assert_eq!(TileConfig::one_wave_cols_instead_of(TileConfig::NARROW_TMA_STORE, s(m, 7168, 9216), 132), Some(TileConfig::cols_tma_store(112)), "M={m}");
            // (in 2-CTA clusters since run 387: `one_wave_cols_c2_instead_of`)
            assert_eq!(TileConfig::choose_for(s(m, 7168, 9216), 132), TileConfig::cols_tma_store_c2(112), "M={m}");
        }
        assert_eq!(TileConfig::choose_for(s(256, 8190, 4096), 132), TileConfig::NARROW);
        assert_eq!(TileConfig::choose_for(s(256, 8192, 4104), 132), TileConfig::NARROW);
        assert_eq!(TileConfig::choose_for(s(32, 28672, 8192), 132), TileConfig::M64_WIDE_TMA_STORE);
        // Two waves of swapped tiles (run 104: 64 x 9216 x 7168, 0.62 of cuBLAS) are not taken.
        assert_eq!(TileConfig::choose_for(s(64, 9216, 7168), 132), TileConfig::M64_WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose_for(s(8, 7168, 9216), 132), TileConfig::swapped(8));
        assert_eq!(TileConfig::choose_for(s(8, 8192, 4096), 127), TileConfig::M64_WIDE_TMA_STORE);
        // Not above 256 rows (there the mid-M rule's 128-row tiles), not with K % 64 != 0.
        assert_eq!(TileConfig::choose_for(s(257, 8192, 4096), 132), TileConfig::swapped_wide(136, Epilogue::TmaStore));
        assert_eq!(TileConfig::choose_for(s(129, 8192, 4104), 132), TileConfig::M64_WIDE_TMA_STORE_C2);
        // The model: waves x rows loaded per k-block.
        assert_eq!(TileConfig::swapped(136).load_cost(s(129, 8192, 4096), 132), 200);
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.load_cost(s(129, 8192, 4096), 132), 320);
        assert_eq!(TileConfig::swapped(32).load_cost(s(32, 28672, 8192), 132), 4 * 96);
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.load_cost(s(32, 28672, 8192), 0), 112 * 320);
    }

    #[test]
    fn wide_swapped_tiles_fit_m_above_256() {
        let w = TileConfig::swapped_wide(176, Epilogue::Registers);
        assert_eq!((w.bm, w.bn, w.threads(), w.name()), (128, 176, 384, "swap-ab-128x176".to_string()));
        assert!(w.validate_for_gemm().is_ok() && w.validate().is_err());
        let wt = w.with_tma_store();
        assert_eq!((wt.epilogue, wt.name()), (Epilogue::TmaStore, "swap-ab-128x176-tma-store".to_string()));
        assert!(wt.validate().is_ok(), "the fused kernel takes it");
        assert!(wt.smem_bytes() + 16 <= 232_448 && wt.stages >= 3, "{wt}: {} stages", wt.stages);
        assert!(TileConfig::swapped_wide(256, Epilogue::TmaStore).smem_bytes() + 16 <= 232_448);
        assert!(TileConfig::swapped_wide(56, Epilogue::Registers).validate_for_gemm().is_err(), "below 64 rows: the 64-row tiles");
        // 64..=120 rows: plain GEMM only, outside the fused catalog and the mid-M fit.
        let short = TileConfig::swapped_wide(96, Epilogue::TmaStore);
        assert!(short.validate_for_gemm().is_ok() && short.validate().is_err() && short.name() == "swap-ab-128x96-tma-store");
        assert_eq!(TileConfig::by_name("swap-ab-128x96"), Some(TileConfig::swapped_wide(96, Epilogue::Registers)));
        // M=2049 x 8192 on 132 SMs: 208 rows, 10 row blocks of A by 64 of B = 640 tiles,
        // 5 waves x 208 = 1040 against 6 x 176 = 1056 and 128 x 256 tiles' 5 x 256.
        let f = TileConfig::swapped_fit(2049, 8192, 132).unwrap();
        assert_eq!((f.bn, f.tiles(2049, 8192)), (208, 640));
        assert_eq!(TileConfig::swapped_fit(256, 8192, 132), None);
        assert_eq!(TileConfig::swapped_fit(8193, 8192, 132), None);
        for m in [257, 300, 1000, 2049, 4097, 8192] {
            for n in [64, 1000, 8192] {
                let t = TileConfig::swapped_fit(m, n, 132).unwrap();
                assert!(t.validate_for_gemm().is_ok() && t.tiles(m, n) > 0, "M={m} N={n}: {t}");
            }
        }
        assert_eq!(TileConfig::by_name("swap-ab-128x176-tma-store"), Some(wt));
        // The generated wrapper for 176 and the two-warpgroup instantiation.
        let src = source(wt).unwrap().source;
        assert!(src.contains("m64n176k16") && src.contains("mk::GemmConfig<128, 176, 64,"), "generated wrapper");
    }

    #[test]
    fn mid_m_rule_takes_fitted_tiles_where_run_113_measured_them_faster() {
        let s = |m, n, k| GemmShape { m, n, k };
        let fit = |rows| TileConfig::swapped_wide(rows, Epilogue::Registers);
        // (shape, fitted rows) where the fitted tile won on the H200 (run 113).
        for ((m, n, k), rows) in [
            ((257, 8192, 4096), 136),
            ((300, 8192, 4096), 152),
            ((384, 8192, 4096), 192),
            ((520, 8192, 4096), 136),
            ((640, 8192, 4096), 160),
            ((777, 8192, 4096), 200),
            ((2049, 8192, 4096), 208),
            ((3000, 8192, 4096), 216),
            ((5000, 8192, 4096), 152),
            ((2049, 7168, 9216), 152),
            ((3000, 7168, 9216), 216),
            ((2049, 8192, 14336), 208),
        ] {
            // (then its 2-CTA twin where the height is a multiple of 16 and N / 128 even)
            let want = if rows % 16 == 0 && (n as u32).div_ceil(128).is_multiple_of(2) {
                TileConfig::swapped_wide_c2(rows, Epilogue::TmaStore)
            } else {
                TileConfig::swapped_wide(rows, Epilogue::TmaStore)
            };
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), want, "{m}x{n}x{k}");
            assert_eq!(TileConfig::fitted_instead_of(TileConfig::choose(m, n, 132), s(m, n, k), 132), Some(fit(rows)), "{m}x{n}x{k}");
        }
        // An odd number of 128-row blocks of B (N = 8320: 65) keeps the unclustered tile.
        assert_eq!(TileConfig::clustered_instead_of(fit(208), s(2049, 8320, 4096)), fit(208));
        assert_eq!(TileConfig::clustered_instead_of(fit(216), s(3000, 8192, 4096)), fit(216));
        assert_eq!(TileConfig::clustered_instead_of(fit(208), s(2049, 8192, 4096)), TileConfig::swapped_wide_c2(208, Epilogue::Registers));
        let ts = TileConfig::swapped_wide(208, Epilogue::TmaStore);
        assert_eq!(TileConfig::clustered_instead_of(ts, s(2049, 8192, 4096)), TileConfig::swapped_wide_c2(208, Epilogue::TmaStore));
        // N % 8 != 0: the Registers tile (no TMA store), clustered where N's blocks pair up.
        assert_eq!(TileConfig::choose_for(s(2049, 8191, 4096), 132), TileConfig::swapped_wide_c2(208, Epilogue::Registers));
        // Where it lost: the default stays.
        for m in [1000, 1500, 4097, 8192] {
            let t = TileConfig::choose_for(s(m, 8192, 4096), 132);
            assert!(!t.swap_ab, "M={m}: {t}");
            let clustered = TileConfig::clustered_instead_of(TileConfig::choose(m, 8192, 132), s(m, 8192, 4096));
            assert_eq!(t, TileConfig::cols_c2_instead_of(clustered, s(m, 8192, 4096), 132).unwrap_or(clustered), "M={m}");
        }
        // K % 64 != 0 (run 112: 1000 x 8192 x 4104 0.179 ms fitted against 0.108) keeps the
        // clustered tile; M <= 256 keeps the small-M rule's tiles; a clustered or swapped
        // current tile is never replaced.
        assert!(!TileConfig::choose_for(s(2049, 8192, 4104), 132).swap_ab);
        assert_eq!(TileConfig::choose_for(s(129, 8192, 4096), 132), TileConfig::swapped(136));
        assert_eq!(TileConfig::fitted_instead_of(TileConfig::WIDE_TMA_STORE_C2, s(2049, 8192, 4096), 132), None);
        assert_eq!(TileConfig::fitted_instead_of(fit(200), s(2049, 8192, 4096), 132), None);
        assert_eq!(TileConfig::fitted_instead_of(TileConfig::NARROW_TMA_STORE, s(1024, 8192, 4096), 132), None);
        assert!(TileConfig::fitted_instead_of(TileConfig::WIDE_TMA_STORE, s(2049, 8192, 4096), 132).is_some());
        // The model's terms: busiest-SM work and the rates.
        assert_eq!(TileConfig::M64_WIDE.busiest_sm_work(s(2049, 8192, 4096), 132), 8 * 64 * 256);
        assert_eq!(fit(208).busiest_sm_work(s(2049, 8192, 4096), 132), 5 * 128 * 208);
        assert_eq!(TileConfig::WIDE.busiest_sm_work(s(2049, 8192, 4096), 0), 544 * 128 * 256);
        assert_eq!((TileConfig::WIDE.relative_rate(), TileConfig::NARROW_TMA_STORE.relative_rate()), (100, 93));
        assert_eq!((TileConfig::M64_WIDE.relative_rate(), fit(144).relative_rate(), fit(136).relative_rate()), (82, 96, 75));
        assert_eq!((TileConfig::cols(176).relative_rate(), TileConfig::cols(168).relative_rate()), (92, 84));
    }

    #[test]
    fn column_tile_replaces_the_swapped_fit_where_runs_282_283_measured_it_faster() {
        let s = |m, n, k| GemmShape { m, n, k };
        let cols = TileConfig::cols_tma_store;
        let cols_c2 = TileConfig::cols_tma_store_c2;
        // (shape, the default's tile) where the column tile won (runs 282-283), clustered
        // where clustered_instead_of clusters it (K >= 4096, an even number of row blocks,
        // a width that is a multiple of 16).
        for ((m, n, k), want) in [
            ((1024, 5120, 1280), cols(160)),
            ((1024, 5120, 2560), cols(160)),
            ((1024, 5120, 5120), cols_c2(160)),
            ((1024, 5120, 8192), cols_c2(160)),
            ((1024, 5120, 13824), cols_c2(160)),
            ((1024, 2560, 8192), cols_c2(160)),
            ((1024, 9344, 4096), cols_c2(192)),
            ((1344, 4992, 4096), cols(208)),
            ((1856, 7168, 8192), cols(208)),
            ((3456, 2432, 4096), cols(176)),
            ((1664, 3456, 4096), cols(176)),
            // (even row blocks from K = 4096: clustered since the halves of B may overlap, NOTES 47.6)
            ((1536, 6528, 4096), cols_c2(200)),
            ((1024, 6912, 5120), cols_c2(216)),
            ((1088, 6032, 8192), cols(208)),
            ((1487, 3800, 2048), cols(176)),
            ((1067, 8072, 1024), cols(184)),
            ((1256, 7784, 14336), cols_c2(200)),
            ((1472, 2432, 4096), cols_c2(224)),
            ((2048, 5376, 4096), cols_c2(224)),
        ] {
            let shape = s(m, n, k);
            assert_eq!(TileConfig::choose_for(shape, 132), want, "{m}x{n}x{k}");
            let current = TileConfig::choose(m, n, 132);
            let c = TileConfig::fitted_or_cols_instead_of(current, shape, 132);
            assert_eq!(c.map(|c| TileConfig::clustered_instead_of(c, shape)), Some(want), "{m}x{n}x{k}");
            // Both rules would replace the default, the column tile beats the swapped one,
            // and the model's two bounds hold.
            let f = TileConfig::fitted_instead_of(current, shape, 132).unwrap();
            let c = c.unwrap();
            assert_eq!(TileConfig::cols_instead_of(current, shape, 132), Some(c), "{m}x{n}x{k}");
            assert!(c.beats_swapped_fit(f, shape, 132), "{m}x{n}x{k}");
            let (wf, wc) = (f.busiest_sm_work(shape, 132) as f64, c.busiest_sm_work(shape, 132) as f64);
            assert!(wc / c.relative_rate() as f64 <= 0.95 * wf / f.relative_rate() as f64, "{m}x{n}x{k}");
            assert!(wc <= 1.035 * wf && c.bn >= 160, "{m}x{n}x{k}");
        }
        // Where the swapped tile stays: more work on the column tile's busiest SM (2432 x 896:
        // 12% more, ran 6% slower, run 283; 1032 x 6104 x 8192 and 1081 x 8192 x 8192: 5.9%
        // more, 2-5% slower, run 284), a column tile narrower than 160 (1312 x 9680 x 2048 and
        // 1592 x 1328 x 1024 on 136, 1046 x 3992 x 4096 on 144: 1-19% slower), the model within
        // 5% (3000 x 8192 x 4096, 2048 x 5120 x 8192, 2048 x 9216 x 7168; 1024 x 7168 x 4096 at
        // 0.962, 1.04 of cuBLAS on the swapped tile in run 284's model map), M < 1024 (the column
        // rule's bound), and a current tile neither rule replaces.
        assert_eq!(TileConfig::choose_for(s(2432, 896, 4096), 132), TileConfig::swapped_wide(136, Epilogue::TmaStore));
        for (m, n, k) in [
            (2432, 896, 4096),
            (1032, 6104, 8192),
            (1081, 8192, 8192),
            (1312, 9680, 2048),
            (1592, 1328, 1024),
            (1046, 3992, 4096),
            (3000, 8192, 4096),
            (2048, 5120, 8192),
            (2048, 9216, 7168),
            (1024, 7168, 4096),
            (640, 8192, 4096),
            (1000, 5120, 4096),
        ] {
            let shape = s(m, n, k);
            let current = TileConfig::choose(m, n, 132);
            if let (Some(f), Some(c)) = (TileConfig::fitted_instead_of(current, shape, 132), TileConfig::cols_instead_of(current, shape, 132)) {
                assert!(!c.beats_swapped_fit(f, shape, 132), "{m}x{n}x{k}");
            }
            assert!(TileConfig::fitted_or_cols_instead_of(current, shape, 132).is_some_and(|t| t.swap_ab), "{m}x{n}x{k}");
            assert!(TileConfig::choose_for(shape, 132).swap_ab, "{m}x{n}x{k}");
        }
        assert_eq!(TileConfig::fitted_or_cols_instead_of(TileConfig::WIDE_TMA_STORE_C2, s(1024, 5120, 5120), 132), None);
        assert_eq!(TileConfig::fitted_or_cols_instead_of(TileConfig::WIDE_TMA_STORE, s(1024, 5120, 5120), 0), None);
        // K % 64 != 0: neither rule applies; N % 8 != 0: no column tile, the swapped
        // Registers tile.
        assert_eq!(TileConfig::fitted_or_cols_instead_of(TileConfig::WIDE_TMA_STORE, s(1024, 5120, 5100), 132), None);
        let t = TileConfig::fitted_or_cols_instead_of(TileConfig::WIDE, s(1024, 5116, 5120), 132);
        assert!(t.is_some_and(|t| t.swap_ab && t.epilogue == Epilogue::Registers), "{t:?}");
        // Only the column rule (M >= 1024, no swapped fit above M = 8192): its tile.
        let only_cols = s(16384, 2880, 4096);
        assert_eq!(TileConfig::fitted_instead_of(TileConfig::choose(16384, 2880, 132), only_cols, 132), None);
        assert!(TileConfig::cols_instead_of(TileConfig::choose(16384, 2880, 132), only_cols, 132).is_some());
        assert_eq!(
            TileConfig::fitted_or_cols_instead_of(TileConfig::choose(16384, 2880, 132), only_cols, 132),
            TileConfig::cols_instead_of(TileConfig::choose(16384, 2880, 132), only_cols, 132)
        );
    }

    #[test]
    fn column_fitted_tiles_fit_n() {
        let t = TileConfig::cols(224);
        assert_eq!((t.bm, t.bn, t.swap_ab, t.epilogue, t.name()), (128, 224, false, Epilogue::Registers, "cols-128x224".to_string()));
        assert!(t.validate_for_gemm().is_ok() && t.stages >= 4 && t.smem_bytes() <= 232_448, "{t}: {} stages", t.stages);
        let e = t.validate().unwrap_err().to_string();
        assert!(e.contains("cols-128x224") && e.contains("only the plain GEMM"), "{e}");
        // (each refusal names the fused tile of its clustering nearest in width: helper-89)
        assert!(e.contains("the nearest the fused kernel takes: cols-128x224-tma-store);"), "{e}");
        for (c2, want) in [(136, "cols-128x144-tma-store-c2"), (248, "cols-128x240-tma-store-c2"), (96, "cols-128x144-tma-store-c2"), (184, "cols-128x176-tma-store-c2")] {
            let e = TileConfig::cols_tma_store_c2(c2).validate().unwrap_err().to_string();
            assert!(e.contains(&format!("the nearest the fused kernel takes: {want});")), "{c2}: {e}");
        }
        let e = TileConfig::cols_tma_store(96).validate().unwrap_err().to_string();
        assert!(e.contains("the nearest the fused kernel takes: cols-128x136-tma-store);"), "{e}");
        let e = TileConfig::swapped(64).validate().unwrap_err().to_string();
        assert!(e.contains("swapped-operand") && !e.contains("nearest"), "{e}");
        assert_eq!(TileConfig::by_name("cols-128x224"), Some(t));
        let tt = TileConfig::cols_tma_store(176);
        assert_eq!((tt.name(), t.with_tma_store()), ("cols-128x176-tma-store".to_string(), TileConfig::cols_tma_store(224)));
        // (the TMA-store ones of 136-248 columns have a fused kernel too: its epilogue path's)
        assert!(tt.validate_for_gemm().is_ok() && tt.validate().is_ok() && tt.stages >= 3 && tt.smem_bytes() <= 232_448, "{tt}");
        assert!(TileConfig::cols_tma_store(120).validate_for_gemm().is_ok() && TileConfig::cols_tma_store(120).validate().is_err());
        assert_eq!(TileConfig::by_name("cols-128x176-tma-store"), Some(tt));
        assert!(source(tt).unwrap().source.contains("mk::GemmConfig<128, 176, 64,"));
        assert!(TileConfig::cols(132).validate_for_gemm().is_err() && TileConfig::cols(256).validate_for_gemm().is_ok(), "256 is the wide tile");
        // N=7168 at M=2048 on 132 SMs: 448 wide tiles in 4 waves (x 256 = 1024) against 656
        // tiles of 176 columns in 5 (x 176 = 880; 224 columns: 512 tiles, 4 x 224 = 896).
        assert_eq!(TileConfig::cols_fit(2048, 7168, 132), Some(TileConfig::cols(176)));
        assert_eq!(TileConfig::cols_fit(4096, 4096, 132), None, "512 wide tiles: 3.9 waves");
        assert_eq!(TileConfig::cols_fit(0, 8192, 132), None);
        // 136 columns making as many tiles as 128 in one wave: the 128 x 128 tile (126 tiles
        // either way at 1088 x 1792); where 136 makes fewer (N = 136: one block), 136 stays.
        assert_eq!(TileConfig::cols_fit(1088, 1792, 132), Some(TileConfig::NARROW));
        assert_eq!(TileConfig::cols_fit(1088, 136, 132), Some(TileConfig::cols(136)));
        // The one-wave width also where the last row block holds at most 32 rows (since that
        // block reads A inside its bounds, run 317).
        let s = |m| GemmShape { m, n: 896, k: 4096 };
        for m in [1440, 1472] {
            assert!(TileConfig::one_wave_cols_instead_of(TileConfig::NARROW_TMA_STORE, s(m), 132).is_some_and(|t| t.bn < 128), "{m}");
        }
        let src = source(t).unwrap().source;
        assert!(src.contains("m64n224k16") && src.contains("mk::GemmConfig<128, 224, 64,"), "generated wrapper");
        // The column rule (runs 120-121, TMA-store tiles): taken where the fit saves 6-14%
        // of the wide tile's work, left where it saves 2-3% or none, and after the mid-M rule.
        let s = |m, n, k| GemmShape { m, n, k };
        // (in 2-CTA clusters where the row blocks pair up and K >= 4096, run 212)
        for ((m, n, k), cols) in [((2048, 7168, 9216), 176), ((4096, 2880, 4096), 240)] {
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), TileConfig::cols_tma_store_c2(cols), "{m}x{n}x{k}");
        }
        assert_eq!(TileConfig::choose_for(s(2048, 7168, 2048), 132), TileConfig::cols_tma_store(176), "K < 4096");
        assert_eq!(TileConfig::choose_for(s(1408, 14336, 8192), 132), TileConfig::cols_tma_store(240), "11 row blocks");
        // (216 columns too since each CTA's half of B may overlap the other's: NOTES 47.6)
        assert_eq!(TileConfig::choose_for(s(2048, 13824, 8192), 132), TileConfig::cols_tma_store_c2(216), "216");
        let c2 = TileConfig::cols_tma_store_c2(176);
        assert_eq!((c2.name(), c2.with_tma_store(), c2.tiles(2049, 7168), c2.can_split_last_wave()), ("cols-128x176-tma-store-c2".to_string(), c2, 18 * 41, false));
        assert!(c2.validate_for_gemm().is_ok() && c2.validate().is_ok() && TileConfig::by_name("cols-128x176-tma-store-c2") == Some(c2));
        assert!(source(c2).unwrap().source.contains("__cluster_dims__(2, 1, 1)"));
        // (168 rows of B halve into overlapping 88-row shares: NOTES 47.6; clusters need the TMA store)
        assert!(TileConfig::cols_tma_store_c2(168).validate_for_gemm().is_ok());
        assert_eq!(TileConfig::cols_tma_store_c2(168).shared_rows_per_cta(), 88);
        assert!(TileConfig { cluster_m: 2, ..TileConfig::cols(168) }.validate_for_gemm().is_err(), "the Registers epilogue in clusters");
        for (m, n, k) in [(2048, 8192, 4096), (4096, 8192, 14336), (4096, 8192, 4096), (2048, 8192, 14336), (1024, 8192, 4096)] {
            // (the clustered twin: every one of these has an even number of row blocks)
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), TileConfig::WIDE_TMA_STORE_C2, "{m}x{n}x{k}");
        }
        // ... and in its place the clustered column-fitted tile of 176-208 columns where that
        // fits the waves better by at least 0.5% (runs 219, 221-222).
        for ((m, n, k), cols) in [
            ((8192, 7168, 9216), 176),
            ((16384, 7168, 9216), 176),
            ((4096, 7168, 9216), 176),
            ((2048, 28672, 8192), 176),
            ((4096, 28672, 8192), 176),
            ((8192, 8192, 4096), 192),
            ((16384, 8192, 4096), 192),
            ((4096, 9216, 7168), 208),
            ((8192, 9216, 7168), 208),
        ] {
            let wide = TileConfig::WIDE_TMA_STORE_C2.busiest_sm_work(s(m, n, k), 132);
            let t = TileConfig::choose_for(s(m, n, k), 132);
            assert_eq!(t, TileConfig::cols_tma_store_c2(cols), "{m}x{n}x{k}");
            assert!(t.busiest_sm_work(s(m, n, k), 132) * 1000 <= wide * COLS_C2_MAX_WORK_PERMILLE, "{m}x{n}x{k}");
            assert_eq!((t.stages, TileConfig::WIDE_TMA_STORE_C2.stages), (4, 3), "{m}x{n}x{k}");
        }
        // Only in place of the clustered wide tile, with N % 8 == 0, on some SMs.
        let deepseek = s(4096, 7168, 9216);
        assert_eq!(TileConfig::cols_c2_instead_of(TileConfig::WIDE_TMA_STORE, deepseek, 132), None);
        assert_eq!(TileConfig::cols_c2_instead_of(TileConfig::WIDE_TMA_STORE_C2, deepseek, 0), None);
        assert_eq!(TileConfig::cols_c2_instead_of(TileConfig::WIDE_TMA_STORE_C2, s(4096, 7164, 9216), 132), None);
        assert_eq!(TileConfig::choose_for(s(4096, 7168, 9216 + 8), 132), TileConfig::WIDE_TMA_STORE_C2, "K % 64 != 0: clustered, not fitted");
        for (m, n, k) in [(2048, 5120, 8192), (2048, 9216, 7168), (3000, 8192, 4096), (1024, 7168, 9216)] {
            assert!(TileConfig::choose_for(s(m, n, k), 132).swap_ab, "{m}x{n}x{k}");
        }
        assert_eq!((TileConfig::cols_tma_store(128).relative_rate(), TileConfig::cols_tma_store(176).relative_rate()), (93, 95));
        // Not with K % 64 != 0 or N % 8 != 0, below M = 1024, or against another tile.
        assert!(!TileConfig::choose_for(s(2048, 7168, 9224), 132).name().starts_with("cols"));
        assert!(!TileConfig::choose_for(s(2048, 7167, 9216), 132).name().starts_with("cols"));
        assert_eq!(TileConfig::cols_instead_of(TileConfig::WIDE_TMA_STORE, s(1023, 7168, 9216), 132), None);
        assert_eq!(TileConfig::cols_instead_of(TileConfig::NARROW, s(2048, 7168, 9216), 132), None);
    }

    #[test]
    fn wide_swapped_tiles_take_small_m_where_narrow_ones_need_two_waves() {
        let pick = |m, n, k| TileConfig::choose_for(GemmShape { m, n, k }, 132);
        let unclustered = |t: TileConfig| TileConfig { cluster_m: 1, ..t };
        // 64-row swapped tiles: 224 tiles (two waves); 128-row ones: 112 (one).
        assert_eq!(pick(129, 14336, 8192), TileConfig::swapped_wide(136, Epilogue::TmaStore));
        assert_eq!(pick(129, 14336, 4096), TileConfig::swapped_wide(136, Epilogue::TmaStore));
        assert_eq!(pick(129, 9216, 7168), TileConfig::swapped_wide(136, Epilogue::TmaStore));
        assert_eq!(unclustered(pick(160, 14336, 8192)), TileConfig::swapped_wide(160, Epilogue::TmaStore));
        assert_eq!(unclustered(pick(192, 14336, 8192)), TileConfig::swapped_wide(192, Epilogue::TmaStore));
        // Not where the 64-row tile fits one wave, above M = 192, for K % 64 != 0 or N % 8 != 0,
        // or where the 128-row tiles need two waves too.
        assert_eq!(pick(129, 8192, 14336), TileConfig::swapped_for(129, 1).unwrap());
        for (m, n, k) in [(256, 14336, 8192), (129, 14336, 8200), (129, 14340, 8192), (129, 28672, 8192), (128, 14336, 8192)] {
            let t = pick(m, n, k);
            assert!(!(t.swap_ab && t.bm == 128), "{m}x{n}x{k}: {t}");
        }
    }

    #[test]
    fn one_row_block_spreads_over_narrow_column_tiles() {
        let pick = |m, n, k| TileConfig::choose_for(GemmShape { m, n, k }, 132);
        // The narrowest width whose tiles fit one wave of 132 SMs (72 x 128 = 9216 > 8704).
        for (n, w) in [(8704, 72), (9216, 72), (10240, 80), (12288, 96), (14336, 112)] {
            for m in [112, 120, 128] {
                for k in [4096, 7168, 14336] {
                    let t = pick(m, n, k);
                    assert_eq!(t, TileConfig::cols_tma_store(w), "{m}x{n}x{k}");
                    assert!(t.tiles(m, n) <= 132 && t.validate_for_gemm().is_ok() && t.name() == format!("cols-128x{w}-tma-store"));
                }
            }
        }
        // Not at M = 80-111 (slower there: padding rows), above 128, where the 128 x 128
        // tiles fill the SMs (N = 17408: 136 tiles) or are not the default, K < 4096,
        // K % 64 != 0, N % 8 != 0.
        for (m, n, k) in [(96, 9216, 7168), (111, 9216, 7168), (129, 9216, 7168), (128, 17408, 4096), (128, 8192, 4096), (128, 9216, 2048), (128, 9216, 7200), (128, 9212, 7168)] {
            let t = pick(m, n, k);
            assert!(!(t.bm == 128 && t.bn < 128 && !t.swap_ab), "{m}x{n}x{k}: {t}");
        }
        // With fewer SMs the width grows; none below 72, none where no width fits one wave.
        assert_eq!(TileConfig::narrow_cols_instead_of(TileConfig::NARROW_TMA_STORE, GemmShape { m: 128, n: 9216, k: 4096 }, 114), Some(TileConfig::cols_tma_store(88)));
        assert_eq!(TileConfig::narrow_cols_instead_of(TileConfig::NARROW_TMA_STORE, GemmShape { m: 128, n: 2048, k: 4096 }, 132), Some(TileConfig::cols_tma_store(72)));
        assert_eq!(TileConfig::narrow_cols_instead_of(TileConfig::NARROW_TMA_STORE, GemmShape { m: 128, n: 9216, k: 4096 }, 76), None);
        assert_eq!(TileConfig::narrow_cols_instead_of(TileConfig::NARROW_TMA_STORE, GemmShape { m: 128, n: 9216, k: 4096 }, 0), None);
    }

    #[test]
    fn padded_rows_go_to_short_swapped_tiles() {
        let pick = |m, n, k| TileConfig::choose_for(GemmShape { m, n, k }, 132);
        for n in [8704, 9216, 10240, 12288, 14336] {
            for m in [65, 80, 96, 104, 111] {
                for k in [4096, 7168] {
                    let t = pick(m, n, k);
                    assert_eq!(t, TileConfig::swapped_wide(m.div_ceil(8) * 8, Epilogue::Registers), "{m}x{n}x{k}");
                    assert!(t.validate_for_gemm().is_ok() && t.tiles(m, n) <= 132 && t.cluster_m == 1);
                }
            }
        }
        // Not where the 64-row swapped tiles fit one wave (N = 8192), above one wave of 128 x
        // 128 tiles (N = 17024), from 112 rows (the narrow column tiles), for K < 4096,
        // K % 64 != 0 or N % 8 != 0.
        for (m, n, k) in [(96, 8192, 4096), (96, 17024, 4096), (112, 9216, 4096), (64, 9216, 7168), (96, 9216, 2048), (96, 9216, 7200), (96, 9220, 7168)] {
            let t = pick(m, n, k);
            assert!(!(t.swap_ab && t.bm == 128 && t.bn < 128), "{m}x{n}x{k}: {t}");
        }
        // A forced split (no tile forced) takes the TMA-store twin, which can split.
        let s = GemmShape { m: 96, n: 9216, k: 7168 };
        assert_eq!(TileConfig::choose_for_split(s, 132), TileConfig::swapped_wide(96, Epilogue::TmaStore));
        assert!(TileConfig::choose_for_split(s, 132).can_split_last_wave());
        // A clustered default gives way to the unclustered tile it was chosen as (helper-55:
        // `--split-last-wave N` stopped at the first clustered default); with N % 8 != 0 (no
        // TMA store, so no split) it stays, and the launch refuses the count naming it.
        let sh = |m, n, k| GemmShape { m, n, k };
        for (s, c2, flat) in [
            (sh(4096, 4096, 4096), TileConfig::WIDE_TMA_STORE_C2, TileConfig::WIDE_TMA_STORE),
            (sh(4096, 4096, 1000), TileConfig::WIDE_TMA_STORE_C2, TileConfig::WIDE_TMA_STORE),
            (sh(4096, 7168, 9216), TileConfig::cols_tma_store_c2(176), TileConfig::cols_tma_store(176)),
            (sh(2049, 8192, 4096), TileConfig::swapped_wide_c2(208, Epilogue::TmaStore), TileConfig::swapped_wide(208, Epilogue::TmaStore)),
        ] {
            assert_eq!(TileConfig::choose_for(s, 132), c2, "{s:?}");
            assert_eq!(TileConfig::choose_for_split(s, 132), flat, "{s:?}");
            assert!(flat.can_split_last_wave() && flat.validate_for_gemm().is_ok(), "{s:?}");
        }
        assert_eq!(TileConfig::choose_for_split(sh(2049, 8191, 4096), 132), TileConfig::swapped_wide_c2(208, Epilogue::Registers));
        // Elsewhere the same as choose_for (a splittable default, or no splittable twin).
        for s in [GemmShape { m: 128, n: 9216, k: 7168 }, GemmShape { m: 256, n: 8190, k: 4096 }] {
            assert_eq!(TileConfig::choose_for_split(s, 132), TileConfig::choose_for(s, 132), "{s:?}");
        }
    }

    #[test]
    fn split_rule_takes_small_m_tiles_that_spill_past_one_wave() {
        let big = 32 << 20;
        let pick = |m, n, k| TileConfig::split_spill_for(GemmShape { m, n, k }, 132, big, 4096);
        // 144 tiles of 64 rows on 132 SMs: 12 left over, in up to 8 slices each.
        // (112 K blocks: 7 slices of 16)
        assert_eq!(pick(8, 9216, 7168), Some((TileConfig::swapped_tma_store(8), 7)));
        assert_eq!(pick(64, 9216, 7168), Some((TileConfig::swapped_tma_store(64), 7)));
        assert_eq!(pick(33, 9216, 14336), Some((TileConfig::swapped_tma_store(40), 8)));
        // 28 left over: 4 slices (132 / 28).
        assert_eq!(pick(16, 10240, 8192), Some((TileConfig::swapped_tma_store(16), 4)));
        // K = 4096: 64 K blocks, 4 slices.
        assert_eq!(pick(64, 9216, 4096), Some((TileConfig::swapped_tma_store(64), 4)));
        for (m, n, k) in [
            (65, 9216, 7168),  // above M = 64
            (64, 9216, 4032),  // K below what was measured
            (64, 9216, 7200),  // K % 64 != 0
            (64, 9220, 7168),  // N % 8 != 0
            (64, 8192, 7168),  // one wave exactly
            (64, 12288, 7168), // 192 tiles: 60 left over, fewer than 4 slices
            (64, 20480, 7168), // two waves or more
        ] {
            assert_eq!(pick(m, n, k), None, "{m}x{n}x{k}");
        }
        // Only within the workspace.
        assert_eq!(TileConfig::split_spill_for(GemmShape { m: 64, n: 9216, k: 7168 }, 132, 1 << 16, 4096), None);
        assert_eq!(TileConfig::split_spill_for(GemmShape { m: 64, n: 9216, k: 7168 }, 132, big, 8), None);
    }

    #[test]
    fn small_m_takes_swapped_tiles_unsplit_over_two_waves() {
        let s = |m, n, k| GemmShape { m, n, k };
        // Runs 257-258's shapes (208-264 tiles of 64 rows of B on 132 SMs, 1.6-2 waves): the
        // swapped TMA-store tile of M's height, and no split with any workspace.
        for (m, n, k) in [(1u32, 14336, 4096), (1, 13824, 5120), (16, 14336, 4096), (16, 13824, 5120), (64, 14336, 4096), (64, 13824, 5120), (1, 14336, 8192), (33, 13312, 7168), (64, 16896, 8192)] {
            let want = TileConfig::swapped_tma_store(m.div_ceil(8) * 8);
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), want, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_workspace(s(m, n, k), 132), None, "{m}x{n}x{k}");
        }
        // The bounds: more than 1.5 waves (198 tiles) and at most two (264).
        let two_waves = |m, n, k, sms| TileConfig::swapped_two_waves_instead_of(TileConfig::M64_WIDE_TMA_STORE, s(m, n, k), sms);
        assert_eq!(two_waves(1, 199 * 64, 4096, 132), Some(TileConfig::swapped_tma_store(8)));
        assert_eq!(two_waves(1, 264 * 64, 4096, 132), Some(TileConfig::swapped_tma_store(8)));
        assert_eq!(two_waves(1, 198 * 64, 4096, 132), None);
        assert_eq!(two_waves(1, 264 * 64 + 8, 4096, 132), None);
        // The SM count is the device's: 224 tiles are past two waves of 100 SMs.
        assert_eq!(two_waves(1, 14336, 4096, 100), None);
        assert_eq!(two_waves(1, 14336, 4096, 120), Some(TileConfig::swapped_tma_store(8)));
        for (m, n, k) in [
            (65, 14336, 4096), // above M = 64
            (1, 14336, 4032),  // K below what was measured
            (1, 14336, 8256),  // K above it
            (1, 14336, 4100),  // K % 64 != 0
            (1, 14332, 4096),  // N % 8 != 0
            (1, 0, 4096),
        ] {
            assert_eq!(two_waves(m, n, k, 132), None, "{m}x{n}x{k}");
        }
        assert_eq!(two_waves(1, 14336, 4096, 0), None);
        // Only in place of the 64 x 256 TMA-store tile.
        assert_eq!(TileConfig::swapped_two_waves_instead_of(TileConfig::M64_WIDE_TMA_STORE_C2, s(1, 14336, 4096), 132), None);
        assert_eq!(TileConfig::swapped_two_waves_instead_of(TileConfig::WIDE_TMA_STORE, s(1, 14336, 4096), 132), None);
        // Up to 1.5 waves the 64 x 256 tiles stay, split as the few-tiles rule does (run 258),
        // or where the swapped tiles spill at most a quarter the spill rule's split, or
        // without a workspace the 64 x 256 tiles (run 104); more than two waves keep the 64 x
        // 256 tiles (run 257).
        assert_eq!(TileConfig::split_rule_for(s(1, 11264, 8192), 132, u64::MAX, u64::MAX), Some((TileConfig::M64_WIDE_TMA_STORE, 3)));
        assert_eq!(TileConfig::split_rule_for(s(64, 12288, 4096), 132, u64::MAX, u64::MAX), Some((TileConfig::M64_WIDE_TMA_STORE, 2)));
        assert_eq!(TileConfig::choose_for(s(64, 9216, 7168), 132), TileConfig::M64_WIDE_TMA_STORE);
        assert_eq!(TileConfig::split_rule_for(s(64, 9216, 7168), 132, u64::MAX, u64::MAX), Some((TileConfig::swapped_tma_store(64), 7)));
        assert_eq!(TileConfig::choose_for(s(1, 28672, 4096), 132), TileConfig::M64_WIDE_TMA_STORE);
        // A count asked for splits the 64 x 256 tiles the rule replaced (helper-60: at two
        // whole waves of swapped tiles it would be refused).
        for n in [14336, 16896] {
            assert_eq!(TileConfig::choose_for_split(s(1, n, 4096), 132), TileConfig::M64_WIDE_TMA_STORE, "{n}");
        }
        assert_eq!(TileConfig::choose_for_split(s(1, 28672, 4096), 132), TileConfig::M64_WIDE_TMA_STORE);
        // K = 14336 is unmeasured: the few-tiles rule's 64 x 256 tiles in 2 slices stay.
        assert_eq!(TileConfig::split_rule_for(s(1, 14336, 14336), 132, u64::MAX, u64::MAX), Some((TileConfig::M64_WIDE_TMA_STORE, 2)));
    }

    #[test]
    fn one_wave_cols_take_the_narrowest_tile_filling_one_wave() {
        let s = |m, n, k| GemmShape { m, n, k };
        let cols = TileConfig::rows128_tma_store;
        // Run 264's shapes (M = 256) and the widths timed there, unsplit with any workspace.
        for (n, k, w) in [
            (10240, 8192, 160), (10240, 4096, 160), (14336, 4096, 224), (14336, 8192, 224), (5120, 8192, 80), (5120, 5120, 80),
            (5120, 6912, 80), (5120, 3456, 80), (6144, 4096, 96), (6144, 8192, 96), (7168, 4096, 112), (7168, 8192, 112),
            (7168, 5120, 112), (6912, 5120, 112), (3584, 4096, 56), (3584, 5120, 56), (3072, 4096, 48),
        ] {
            // (choose_before_cluster_n: at 224 columns choose_for then takes 112 in clusters,
            // `half_width_c2_instead_of`)
            let t = TileConfig::choose_before_cluster_n(s(256, n, k), 132);
            assert_eq!(t, cols(w), "256x{n}x{k}: {}", t.name());
            assert!(t.tiles(256, n) <= 132 && t.tiles(256, n) > 66, "256x{n}x{k}");
            // Unsplit, but from K = 6912 tiles of 2W <= 160 columns in 2 slices (run 267).
            let split = (k >= 6912 && w <= 80).then(|| (cols(2 * w), 2));
            assert_eq!(TileConfig::split_rule_for(s(256, n, k), 132, u64::MAX, u64::MAX), split, "256x{n}x{k}");
            // Where it picks, it replaced the tile the other rules chose.
            let before = if n > 8192 { TileConfig::WIDE_TMA_STORE } else { TileConfig::NARROW_TMA_STORE };
            assert_eq!(TileConfig::one_wave_cols_instead_of(before, s(256, n, k), 132), Some(cols(w)), "256x{n}x{k}");
            // From 193 rows (two row blocks) on.
            assert_eq!(TileConfig::one_wave_cols_instead_of(before, s(193, n, k), 132), Some(cols(w)), "193x{n}x{k}");
        }
        // Run 269's shapes (M = 384-2048, 3-16 row blocks; the 128 x 128 default, one wave,
        // unsplit; with the TMA-store epilogue since run 296).
        for (m, n, k, w) in [
            (1024, 1280, 8192, 80), (512, 2560, 8192, 80), (640, 2048, 8192, 80), (1280, 1024, 8192, 80), (512, 2560, 4096, 80),
            (1024, 1536, 4096, 96), (512, 3072, 8192, 96), (768, 2048, 8192, 96), (1536, 1024, 8192, 96), (2048, 768, 8192, 96),
            (384, 4096, 8192, 96), (384, 3072, 8192, 72), (768, 1536, 4096, 72), (1536, 768, 8192, 72), (640, 1792, 8192, 72),
            (1024, 1792, 5120, 112), (512, 3584, 8192, 112), (2048, 896, 8192, 112),
        ] {
            assert_eq!(TileConfig::choose_for_before_one_wave_cols(s(m, n, k), 132), TileConfig::NARROW_TMA_STORE, "{m}x{n}x{k}");
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            // Runs 267 and 275 split them into 2W in 2 slices where W <= 80 and K >= 6912, or W
            // <= 96 and K >= 8192, and the slices fit one wave (not 1280 x 1024, 1536 x 768 nor
            // 1536 x 1024: 70, 72 and 72 tiles of 2W columns); since the producer warp W
            // unsplit is ahead where K >= 8192 and the last row block is more than half full
            // (run 296: all of these), and K < 6912 was never split.
            let fits = cols(2 * w).tiles(m, n) * 2 <= 132;
            let overfill = [(1280, 1024), (1536, 768), (1536, 1024)].contains(&(m, n));
            assert_eq!(overfill, (k >= 6912 && w <= 96) && !fits, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
        }
        // Above M = 256 the widths 72-80 still split below K = 8192 (1024 x 1152 x 6912), and
        // 88-96 never do (1024 x 1536 x 6912); from K = 8192 W >= 72 stays unsplit however M
        // is padded (run 318: 321 x 3536 x 8192, 63 padding rows of 384, 88 columns unsplit
        // 0.042-0.043 ms against 176 in 2 slices 0.046).
        assert_eq!(TileConfig::split_rule_for(s(1024, 1536, 6912), 132, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::split_rule_for(s(1024, 1152, 6912), 132, u64::MAX, u64::MAX), Some((cols(144), 2)));
        assert_eq!(TileConfig::split_rule_for(s(1024, 1536, 8192), 132, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::split_rule_for(s(1024, 1408, 14336), 132, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::choose_for(s(321, 3536, 8192), 132), cols(88));
        assert_eq!(TileConfig::split_rule_for(s(321, 3536, 8192), 132, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::split_rule_for(s(1000, 1400, 8192), 132, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::split_rule_for(s(2000, 760, 14336), 132, u64::MAX, u64::MAX), None);
        // (96 columns, which choose_for's last step clusters: `one_wave_cols_c2_instead_of`)
        assert_eq!(TileConfig::choose_before_cluster_n(s(256, 6144, 8192), 132), cols(96));
        assert_eq!(TileConfig::choose_for(s(256, 6144, 8192), 132), TileConfig::cols_tma_store_c2(96));
        assert_eq!(TileConfig::split_rule_for(s(256, 6144, 8192), 132, u64::MAX, u64::MAX), None);
        // In place of the unsplit one-wave 64 x 256 default above M = 256 (run 318): the
        // one-wave width, unsplit from K = 8192 (W >= 72), 2W in 2 slices at K = 6912 (W <= 80).
        for (m, n, k, w) in [(520, 1808, 8192, 72), (654, 1544, 8192, 72), (899, 1040, 8192, 72), (448, 2560, 8192, 80), (520, 2312, 8192, 96), (320, 3584, 8192, 88), (654, 1544, 4096, 72)] {
            assert_eq!(TileConfig::choose_for_before_one_wave_cols(s(m, n, k), 132), TileConfig::M64_WIDE_TMA_STORE, "{m}x{n}x{k}");
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
        }
        assert_eq!(TileConfig::split_rule_for(s(900, 1152, 6912), 132, u64::MAX, u64::MAX), Some((cols(144), 2)));
        // Not where the width cuts less than an eighth of the 64 x 256 tile's elements (120
        // columns: 408 x 3776 x 14336 3% slower, run 318; 777 x 2040 x 2048), nor where the
        // few-tiles rule splits the default.
        for (m, n, k) in [(408, 3776, 14336), (777, 2040, 2048)] {
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), TileConfig::M64_WIDE_TMA_STORE, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
        }
        // (the few-tiles rule: 64 x 256 in 2, whose place the 64 x 128 tile unsplit takes)
        for (m, n, k) in [(770, 1272, 8192), (257, 2072, 4096)] {
            assert_eq!(TileConfig::M64_WIDE_TMA_STORE.few_tiles_slices(s(m, n, k), 132), Some(2), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), Some((TileConfig::M64_NARROW_TMA_STORE, 1)), "{m}x{n}x{k}");
        }
        let rule = |t, m, n, k, sms| TileConfig::one_wave_cols_instead_of(t, s(m, n, k), sms);
        let narrow = TileConfig::NARROW_TMA_STORE;
        // Above M = 256 the register-epilogue 128 x 128 tile counts as its TMA-store twin's
        // split: 48 of them in 2 slices (64 columns a K block) against 48 columns unsplit.
        assert_eq!(rule(TileConfig::NARROW, 1024, 768, 4096, 132), Some(cols(48)));
        assert_eq!(rule(TileConfig::NARROW, 1024, 1024, 4096, 132), None); // 64 tiles in 2: 64 columns
        // ... and only where it cuts a quarter (run 270: 56 columns 5% slower at 1024 x 896 x
        // 5120), unlike at M = 256 (56 against 64 faster: run 264).
        assert_eq!(rule(TileConfig::NARROW, 1024, 896, 5120, 132), None);
        // (its 128 x 128 split in 2 gives way to the 64 x 128 tile unsplit: run 331, 0.0251 -> 0.0215 ms)
        assert_eq!(TileConfig::split_rule_for(s(1024, 896, 5120), 132, u64::MAX, u64::MAX), Some((TileConfig::M64_NARROW_TMA_STORE, 1)));
        assert_eq!(rule(narrow, 256, 3584, 5120, 132), Some(cols(56)));
        // Not where the 128 x 128 tiles take more than one wave above M = 256 (unmeasured).
        assert_eq!(rule(TileConfig::NARROW, 1280, 1792, 4096, 132), None);
        assert_eq!(rule(TileConfig::WIDE_TMA_STORE, 512, 7168, 4096, 132), Some(cols(224)));
        // No fewer columns for the busiest SM: 128 x 128 tiles split in 2 against 64 columns
        // (run 264: slower at K = 7168), one whole wave of them, more than one wave of 128 x
        // 256 tiles (no width fits one wave), and tiles filling at most a third of the SMs.
        assert_eq!(rule(narrow, 256, 4096, 7168, 132), None);
        // (the few-tiles rule's 2 slices, in whose place the 64 x 128 tile runs unsplit at two
        // row blocks: run 338, 8-10% faster)
        assert_eq!(TileConfig::split_rule_for(s(256, 4096, 7168), 132, u64::MAX, u64::MAX), Some((TileConfig::M64_NARROW_TMA_STORE, 1)));
        assert_eq!(rule(narrow, 256, 8192, 4096, 132), None);
        assert_eq!(rule(TileConfig::WIDE_TMA_STORE, 256, 16896, 4096, 132), None);
        assert_eq!(rule(TileConfig::WIDE_TMA_STORE, 256, 27648, 5120, 132), None);
        // (there the column rule fits the width to the waves instead, run 295)
        assert_eq!(TileConfig::choose_for(s(256, 27648, 5120), 132), TileConfig::cols_tma_store_c2(216));
        assert_eq!(TileConfig::choose_for(s(256, 57344, 8192), 132), TileConfig::cols_tma_store_c2(176));
        assert_eq!(rule(narrow, 256, 2816, 8192, 132), None); // 44 tiles: a third of 132
        assert_eq!(rule(narrow, 256, 2944, 8192, 132), Some(cols(48)));
        // Up to M = 4096 (run 305): 2176 x 768 x 4096's 102 tiles of 128 x 128 -> 112 columns.
        assert_eq!(rule(narrow, 2176, 768, 4096, 132), Some(cols(112)));
        // At two row blocks from K = 576 (run 360): 72 or 80 columns in place of 68-82 tiles of 128 x 128.
        for (m, n, k, w) in [
            (237, 4904, 576, 80),
            (231, 4776, 1344, 80),
            (254, 4256, 704, 72),
            (218, 4776, 1216, 80),
            (217, 4784, 1920, 80),
            (255, 4936, 1408, 80),
            (255, 5136, 1984, 80),
            (253, 4864, 1024, 80),
            (238, 4472, 960, 72),
            (219, 4400, 1216, 72),
            (256, 5120, 1280, 80),
        ] {
            assert_eq!(rule(narrow, m, n, k, 132), Some(cols(w)), "{m}x{n}x{k}");
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
        }
        // ... only where the 128 x 128 tiles fill at most two thirds of the SMs (88 of 132): N = 5632
        // makes 88, 5640 89 (K >= 2048: any third to a whole wave).
        assert_eq!(rule(narrow, 256, 5632, 1984, 132), Some(cols(88)));
        assert_eq!(rule(narrow, 256, 5640, 1984, 132), None);
        assert_eq!(rule(narrow, 256, 5640, 2048, 132), Some(cols(88)));
        assert_eq!(rule(narrow, 256, 7168, 1984, 132), None);
        assert_eq!(rule(narrow, 256, 7168, 2048, 132), Some(cols(112)));
        assert_eq!(rule(narrow, 256, 5120, 576, 132), Some(cols(80)));
        // ... and not in place of the 128 x 256 tile below K = 2048 (helper-80: 256 x 10240 x 1024, not measured).
        let wide = TileConfig::WIDE_TMA_STORE;
        assert_eq!(rule(wide, 256, 10240, 1024, 132), None);
        assert_eq!(rule(wide, 256, 10240, 2048, 132), Some(cols(160)));
        assert_eq!(TileConfig::choose_for(s(256, 10240, 1024), 132), wide);
        // Outside what was measured, or not the two defaults it replaces.
        for (m, n, k) in [
            (192, 7168, 4096), // the small-M rules' range (M <= 192)
            (256, 160, 4096),  // the small-N rule's range (N <= 160)
            (4097, 384, 4096), // above ONE_WAVE_COLS_MAX_M
            (4224, 384, 4096),  // ... with 99 tiles of 128 x 128 (96 columns would fill one wave)
            (256, 5120, 512),   // K below ONE_WAVE_COLS_SHORT_MIN_K (80 tiles of 128 x 128: within two thirds)
            (384, 3072, 1984),  // above M = 256, K below 2048
            (384, 3072, 14400), // above M = 256, K above 14336
            (256, 7168, 20544), // K above ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K
            (256, 5120, 16384), // K above 14336, 80 tiles of 128 x 128: within two thirds (the two-rounds split's)
            (197, 7872, 16384), // K above 14336, 120 columns: a cut of less than an eighth
            (256, 7168, 4100), // K % 64 != 0
            (256, 7164, 4096), // N % 8 != 0
        ] {
            assert_eq!(rule(narrow, m, n, k, 132), None, "{m}x{n}x{k}");
        }
        // Above K = 14336 at two row blocks, in place of 128 x 128 tiles filling more than two
        // thirds where the width cuts at least an eighth (run 382), and of 128 x 256 ones alike
        // (below).
        for (m, n, k, w) in [(211, 6088, 16384, 96), (256, 6144, 16384, 96), (214, 5696, 16384, 88), (255, 6520, 20480, 104), (256, 7168, 14400, 112)] {
            assert_eq!(rule(narrow, m, n, k, 132), Some(cols(w)), "{m}x{n}x{k}");
            // (80, 96 and 112 columns in clusters since run 387: `one_wave_cols_c2_instead_of`)
            assert_eq!(TileConfig::choose_before_cluster_n(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
        }
        // 128 x 256 tiles above K = 14336 filling more than two thirds (run 390's shapes: 94-112
        // tiles), unsplit with any workspace; not where the width cuts less than an eighth (204 x
        // 15736: 240 columns for 124 tiles of 256), nor at two thirds or less (the two-rounds
        // split's: 256 x 10752 makes 84).
        for (m, n, k, w) in [(233, 11888, 16256, 184), (256, 12288, 16384, 192), (224, 13312, 20480, 208), (242, 14000, 18432, 216), (256, 14336, 16384, 224)] {
            assert_eq!(TileConfig::choose_for_before_one_wave_cols(s(m, n, k), 132), wide, "{m}x{n}x{k}");
            assert_eq!(rule(wide, m, n, k, 132), Some(cols(w)), "{m}x{n}x{k}");
            // (then in 2-CTA clusters: `one_wave_cols_c2_instead_of`, run 390)
            assert_eq!(TileConfig::choose_before_cluster_n(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), TileConfig::cols_tma_store_c2(w), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
        }
        assert_eq!(rule(wide, 204, 15736, 14912, 132), None);
        assert_eq!(rule(wide, 256, 10752, 16384, 132), None);
        assert_eq!(rule(wide, 256, 12288, 20544, 132), None); // above ONE_WAVE_COLS_TWO_ROW_BLOCKS_MAX_K
        // (helper-61: on 7 SMs the rule's tile padded N = 136 less than the small-N rule's)
        assert_eq!(rule(narrow, 193, 136, 4096, 7), None);
        assert_eq!(TileConfig::choose_for(s(193, 136, 4096), 7), TileConfig::small_n_for(s(193, 136, 4096), 7).unwrap());
        for other in [TileConfig::NARROW, TileConfig::WIDE, TileConfig::WIDE_TMA_STORE_C2, TileConfig::M64_NARROW_TMA_STORE, TileConfig::M64_WIDE_TMA_STORE, TileConfig::cols_tma_store(112)] {
            assert_eq!(rule(other, 256, 7168, 4096, 132), None, "{}", other.name());
        }
        for other in [TileConfig::WIDE, TileConfig::WIDE_TMA_STORE_C2, TileConfig::swapped_c2(192), TileConfig::cols_tma_store(112)] {
            assert_eq!(rule(other, 512, 3072, 8192, 132), None, "{}", other.name());
        }
        // (the 64 x 256 tile above M = 256 since run 318: 96 tiles -> 128 of 96 columns)
        assert_eq!(rule(TileConfig::M64_WIDE_TMA_STORE, 512, 3072, 8192, 132), Some(cols(96)));
        // The SM count is the device's: on 100 SMs the 112 tiles of 256 x 7168 x 4096 take two
        // waves, 144 columns one (100 tiles); on 2 SMs nothing.
        assert_eq!(rule(narrow, 256, 7168, 4096, 100), Some(cols(144)));
        assert_eq!(rule(TileConfig::WIDE_TMA_STORE, 256, 7168 + 1024, 4096, 100), Some(cols(168)));
        assert_eq!(rule(narrow, 256, 7168, 4096, 2), None);
        assert_eq!(rule(narrow, 256, 7168, 4096, 0), None);
    }

    #[test]
    fn two_row_blocks_cluster_the_narrow_tile_from_k_7168() {
        let s = |m, n, k| GemmShape { m, n, k };
        let (narrow, c2) = (TileConfig::NARROW_TMA_STORE, TileConfig::NARROW_TMA_STORE_C2);
        // The shapes measured (runs 375-380; 230 x 6000 x 16384 and 256 x 6144 x 16384 take
        // the one-wave width since run 382): the default was the unclustered tile unsplit,
        // the split rules leave them (so `gemm::launch` takes `choose_for`), and now its twin.
        for (m, n, k) in [
            (193, 8104, 14336), (197, 7872, 16384), (200, 7104, 28672), (204, 8176, 10240), (206, 8184, 12288),
            (211, 8136, 8192), (216, 7944, 12288), (209, 8184, 7168),
            (256, 8192, 7168), (256, 8192, 8192), (256, 8192, 14336),
        ] {
            assert_eq!(TileConfig::choose_before_cluster_n(s(m, n, k), 132), narrow, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), c2, "{m}x{n}x{k}");
            // (clusters never split: a count asked for gets the unclustered tile)
            assert_eq!(TileConfig::choose_for_split(s(m, n, k), 132), narrow, "{m}x{n}x{k}");
        }
        let rule = |m, n, k, sms| TileConfig::two_row_blocks_c2_instead_of(narrow, s(m, n, k), sms);
        assert_eq!(rule(256, 8192, 7168, 132), Some(c2));
        // Not below K = 7168 (even at 4096, 3% slower at 2048), nor at K % 64 != 0, N % 8 != 0,
        // one row block or three, tiles past one wave or filling at most two thirds of it, nor in
        // place of another tile.
        assert_eq!(rule(256, 8192, 7104, 132), None);
        assert_eq!(rule(256, 8192, 4096, 132), None);
        assert_eq!(rule(256, 8192, 8200, 132), None);
        assert_eq!(rule(256, 8188, 8192, 132), None);
        assert_eq!(rule(192, 8192, 8192, 132), None);
        assert_eq!(rule(257, 8192, 8192, 132), None);
        assert_eq!(rule(256, 8576, 8192, 132), None);
        assert_eq!(rule(256, 8448, 8192, 132), Some(c2)); // 132 tiles: one full wave
        assert_eq!(rule(256, 8192, 8192, 114), None);
        assert_eq!(rule(256, 4224, 8192, 132), None);
        assert_eq!(rule(256, 5632, 8192, 132), None); // 88 tiles: two thirds
        assert_eq!(rule(256, 5760, 8192, 132), Some(c2)); // 90 tiles
        assert_eq!(TileConfig::two_row_blocks_c2_instead_of(TileConfig::cols_tma_store(112), s(256, 7168, 8192), 132), None);
        assert_eq!(TileConfig::two_row_blocks_c2_instead_of(TileConfig::NARROW, s(256, 8192, 8192), 132), None);
    }

    #[test]
    fn two_row_blocks_take_112_columns_in_clusters_for_224() {
        let s = |m, n, k| GemmShape { m, n, k };
        let (c224, c224_c2, c112_c2) = (TileConfig::cols_tma_store(224), TileConfig::cols_tma_store_c2(224), TileConfig::cols_tma_store_c2(112));
        // The shapes measured (runs 378-379): the pick before it, no split, and now 112 columns
        // in clusters.
        for (m, n, k, before) in [(256, 14336, 4096, c224), (256, 14336, 8192, c224), (240, 14336, 4096, c224), (200, 14336, 4096, c224), (256, 28672, 4096, c224_c2)] {
            assert_eq!(TileConfig::choose_before_cluster_n(s(m, n, k), 132), before, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), c112_c2, "{m}x{n}x{k}");
            // (a count asked for gets the unclustered tile it was chosen as)
            assert!(TileConfig::choose_for_split(s(m, n, k), 132).cluster_m == 1, "{m}x{n}x{k}");
        }
        let rule = |t, m, n, k| TileConfig::half_width_c2_instead_of(t, s(m, n, k), 132);
        assert_eq!(rule(c224, 193, 14336, 4096), Some(c112_c2));
        // Not below K = 4096, at K % 64 != 0 or N % 8 != 0, outside two row blocks, nor in place
        // of other widths (216: 1% in run 378; 160, 192: half the width lost in run 379).
        assert_eq!(rule(c224, 256, 14336, 4032), None);
        assert_eq!(rule(c224, 256, 14336, 4100), None);
        assert_eq!(rule(c224_c2, 256, 28672, 14336), Some(c112_c2));
        assert_eq!(rule(c224_c2, 256, 28672, 14400), None); // above HALF_WIDTH_C2_MAX_K
        assert_eq!(rule(c224, 256, 14332, 4096), None);
        assert_eq!(rule(c224, 192, 14336, 4096), None);
        assert_eq!(rule(c224, 257, 14336, 4096), None);
        // (past two waves of 224 columns: 43008 makes 3 on 132 SMs, 2 on 192)
        assert_eq!(rule(c224_c2, 256, 43008, 4096), None);
        assert_eq!(TileConfig::half_width_c2_instead_of(c224_c2, s(256, 43008, 4096), 192), Some(c112_c2));
        for other in [TileConfig::cols_tma_store(216), TileConfig::cols_tma_store(192), TileConfig::cols_tma_store_c2(160), TileConfig::NARROW_TMA_STORE, TileConfig::WIDE_TMA_STORE_C2] {
            assert_eq!(rule(other, 256, 14336, 4096), None, "{}", other.name());
        }
    }

    #[test]
    fn two_row_blocks_cluster_one_wave_cols_of_80_to_112_columns_from_k_6144() {
        let s = |m, n, k| GemmShape { m, n, k };
        let (cols, c2) = (TileConfig::cols_tma_store, TileConfig::cols_tma_store_c2);
        // The shapes measured (runs 384, 387): the one-wave width before it, unsplit without a
        // workspace, and now its twin in clusters.
        for (m, n, k, w) in [
            (245, 6048, 14400, 96), (217, 6200, 20480, 96), (235, 6064, 16384, 96), (222, 7352, 20480, 112), (219, 7336, 16384, 112),
            (197, 7192, 8192, 112), (202, 7200, 12288, 112), (212, 6992, 10240, 112), (215, 6272, 10240, 96), (248, 6232, 12288, 96),
            (216, 5848, 7168, 96), (231, 6288, 6144, 96), (225, 7176, 6144, 112), (247, 5192, 6144, 80),
        ] {
            assert_eq!(TileConfig::choose_before_cluster_n(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), c2(w), "{m}x{n}x{k}");
            assert!(c2(w).validate_for_gemm().is_ok(), "{m}x{n}x{k}");
            // (a count asked for gets the unclustered tile it was chosen as)
            assert_eq!(TileConfig::choose_for_split(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
        }
        let rule = |t, m, n, k| TileConfig::one_wave_cols_c2_instead_of(t, s(m, n, k), 132);
        assert_eq!(rule(cols(96), 193, 6144, 8192), Some(c2(96)));
        assert_eq!(rule(cols(80), 256, 5120, 20480), Some(c2(80)));
        // Not below K = 6144 (even at 4096: run 387) nor above 20480, at K % 64 != 0 or N % 8 !=
        // 0, outside two row blocks, past one wave or at most two thirds of it, nor in place
        // of widths not measured or not faster (48, 64, 72: even in run 389, 136, 224; 128 is
        // `two_row_blocks_c2_instead_of`'s). (N = 64 column blocks: 128 tiles)
        for w in [88, 104, 120] {
            assert_eq!(rule(cols(w), 228, w * 64, 8192), Some(c2(w)), "{w}");
        }
        assert_eq!(rule(cols(96), 228, 6312, 4096), None);
        assert_eq!(rule(cols(96), 228, 6312, 6080), None);
        assert_eq!(rule(cols(96), 228, 6312, 20544), None);
        assert_eq!(rule(cols(96), 228, 6312, 8200), None);
        assert_eq!(rule(cols(96), 228, 6308, 8192), None);
        assert_eq!(rule(cols(96), 192, 6144, 8192), None);
        assert_eq!(rule(cols(96), 257, 6144, 8192), None);
        assert_eq!(rule(cols(96), 256, 6432, 8192), None); // 67 column blocks: 134 tiles
        assert_eq!(rule(cols(96), 256, 6336, 8192), Some(c2(96))); // 66: one full wave
        assert_eq!(rule(cols(96), 256, 4224, 8192), None); // 88 tiles: two thirds
        assert_eq!(rule(cols(96), 256, 4320, 8192), Some(c2(96))); // 90 tiles
        for w in [136, 48, 64, 72, 224] {
            assert_eq!(rule(cols(w), 228, w * 64, 8192), None, "{w}");
        }
        // 176-224 columns only above K = 14336 (the long-K rule's widths in place of 128 x 256;
        // run 390), to 20480; not 168 nor 232 there. (N = 64 column blocks: 128 tiles)
        for w in [176, 184, 192, 200, 208, 216, 224] {
            assert_eq!(rule(cols(w), 228, w * 64, 14400), Some(c2(w)), "{w}");
            assert_eq!(rule(cols(w), 228, w * 64, 20480), Some(c2(w)), "{w}");
            assert_eq!(rule(cols(w), 228, w * 64, 14336), None, "{w}");
            assert_eq!(rule(cols(w), 228, w * 64, 20544), None, "{w}");
            assert_eq!(rule(cols(w), 192, w * 64, 16384), None, "{w}");
            assert_eq!(rule(cols(w), 228, w * 44, 16384), None, "{w}: 88 tiles, two thirds");
        }
        for w in [168, 232] {
            assert_eq!(rule(cols(w), 228, w * 64, 16384), None, "{w}");
        }
        // (each with 128 tiles at its N: only the tile excludes it)
        for (other, n) in [(TileConfig::NARROW_TMA_STORE, 8192), (TileConfig::cols_tma_store_c2(96), 6144), (TileConfig::cols(96), 6144)] {
            assert_eq!(other.tiles(228, n), 128, "{}", other.name());
            assert_eq!(rule(other, 228, n, 8192), None, "{}", other.name());
        }
        // (on another SM count the same bounds: 96 columns of N = 9216 make 192 tiles on 192 SMs)
        assert_eq!(TileConfig::one_wave_cols_c2_instead_of(cols(96), s(256, 9216, 8192), 192), Some(c2(96)));
    }

    #[test]
    fn one_wave_cols_split_tiles_twice_as_wide_from_k_6912() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k, sms| TileConfig::split_rule_for(s(m, n, k), sms, u64::MAX, u64::MAX);
        let cols = TileConfig::cols_tma_store;
        // Run 267's shapes: the default's W columns unsplit, 2W in 2 slices with a workspace.
        for (m, n, k, w) in [
            (256, 3072, 8192, 48), (256, 3072, 14336, 48), (256, 3584, 8192, 56), (256, 3584, 14336, 56), (256, 4352, 8192, 72),
            (256, 4352, 6912, 72), (256, 4608, 8192, 72), (256, 4608, 14336, 72), (256, 4608, 6912, 72), (224, 5120, 8192, 80),
            (256, 5120, 14336, 80), (200, 5120, 6912, 80),
        ] {
            // (choose_for's last step clusters 80 columns from K = 6144: `one_wave_cols_c2_instead_of`)
            assert_eq!(TileConfig::choose_before_cluster_n(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k, 132), Some((cols(2 * w), 2)), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_one_wave_cols_for(s(m, n, k), 132, u64::MAX, u64::MAX), Some((cols(2 * w), 2)), "{m}x{n}x{k}");
            // Its workspace: 2W-column fp32 slots, 2 per tile, one count per tile.
            let tiles = cols(2 * w).tiles(m, n);
            let bytes = tiles * 2 * 128 * 2 * w as u64 * 4;
            assert_eq!(TileConfig::split_rule_workspace(s(m, n, k), 132), Some((bytes, tiles)), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, bytes - 1, tiles), None, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, bytes, tiles - 1), None, "{m}x{n}x{k}");
        }
        // (W = 64 would take 128 x 128 tiles, 2W; where W = 64 fills one wave the default's
        // 128 x 128 tiles fill at most half and take the few-tiles rule: 256 x 4160 x 8192, the
        // 64 x 128 tile unsplit in place of their 2 slices.)
        assert_eq!(TileConfig::choose_for(s(256, 4160, 8192), 132), TileConfig::NARROW_TMA_STORE);
        assert_eq!(TileConfig::NARROW_TMA_STORE.few_tiles_slices(s(256, 4160, 8192), 132), Some(2));
        assert_eq!(pick(256, 4160, 8192, 132), Some((TileConfig::M64_NARROW_TMA_STORE, 1)));
        // Not below K = 6912 (runs 264, 266: 2% slower at 5120, 14-41% at K <= 3456), nor for
        // W > 80 (224 columns lost 11-35%, 32.4), nor where the rule does not apply.
        assert_eq!(pick(256, 5120, 6848, 132), None);
        assert_eq!(pick(256, 5120, 5120, 132), None);
        assert_eq!(pick(256, 6144, 8192, 132), None);
        assert_eq!(pick(256, 7168, 14336, 132), None);
        assert_eq!(pick(256, 5120, 14400, 132), Some((TileConfig::NARROW_TMA_STORE, 3))); // two rounds of thirds
        assert_eq!(pick(192, 5120, 8192, 132), None);
        assert_eq!(TileConfig::split_one_wave_cols_for(s(192, 5120, 8192), 132, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::split_one_wave_cols_for(s(256, 5120, 8200), 132, u64::MAX, u64::MAX), None);
        // Any SM count: on 100 SMs 256 x 3072 x 8192 keeps the 128 x 128 tiles (48 of them: 64
        // columns would not cut the busiest SM's work), taken by the few-tiles rule (2 slices,
        // whose place the 64 x 128 tile takes unsplit), not this one (helper-62); never on
        // fewer than 3 SMs.
        assert_eq!(TileConfig::split_one_wave_cols_for(s(256, 3072, 8192), 100, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::NARROW_TMA_STORE.few_tiles_slices(s(256, 3072, 8192), 100), Some(2));
        assert_eq!(pick(256, 3072, 8192, 100), Some((TileConfig::M64_NARROW_TMA_STORE, 1)));
        for sms in [0, 1, 2] {
            assert_eq!(TileConfig::split_one_wave_cols_for(s(256, 3072, 8192), sms, u64::MAX, u64::MAX), None);
        }
    }

    #[test]
    fn one_wave_cols_split_steps_wider_where_twice_the_width_overfills_one_wave() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k, sms| TileConfig::split_rule_for(s(m, n, k), sms, u64::MAX, u64::MAX);
        let cols = TileConfig::cols_tma_store;
        // Run 324's shapes: W unsplit by default, 2W's slices more than one wave, so the
        // narrowest wider width whose 2 slices per tile fit one wave of 132 SMs.
        for (m, n, k, w, wider) in [
            (2994, 224, 8192, 48, 112), (2049, 296, 8192, 48, 104), (1454, 496, 8192, 48, 104), (1265, 608, 8192, 48, 104),
            (1720, 560, 8192, 64, 144), (2126, 400, 8192, 64, 136), (1510, 512, 7168, 48, 104), (2259, 400, 6912, 64, 136),
            (3043, 240, 14336, 48, 120), (1454, 496, 14336, 48, 104), (1202, 584, 14336, 48, 104),
        ] {
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), cols(w), "{m}x{n}x{k}");
            assert!(cols(2 * w).tiles(m, n) * 2 > 132, "{m}x{n}x{k}: 2W fits");
            let tiles = cols(wider).tiles(m, n);
            assert!(tiles * 2 <= 132 && cols(wider - 8).tiles(m, n) * 2 > 132, "{m}x{n}x{k}: not the narrowest");
            assert_eq!(pick(m, n, k, 132), Some((cols(wider), 2)), "{m}x{n}x{k}");
            // Its workspace, as the 2W split's: `wider`-column fp32 slots, 2 per tile.
            let bytes = tiles * 2 * 128 * wider as u64 * 4;
            assert_eq!(TileConfig::split_rule_workspace(s(m, n, k), 132), Some((bytes, tiles)), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(s(m, n, k), 132, bytes - 1, tiles), None, "{m}x{n}x{k}");
        }
        // Not past 144 columns (152-160, 92 CTAs: 1-5% slower or even in run 324): W unsplit.
        for (m, n, k) in [(2917, 320, 8192), (2861, 296, 7168), (2889, 312, 14336)] {
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), cols(64), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k, 132), None, "{m}x{n}x{k}");
        }
        // Nor below K = 6912, as the 2W split.
        assert_eq!(TileConfig::choose_for(s(2994, 224, 6848), 132), cols(48));
        assert_eq!(pick(2994, 224, 6848, 132), None);
        // The SM count is the device's: on 114 SMs 2049 x 296's 48 columns (7 blocks, 119 tiles)
        // no longer fit one wave, so the rule does not apply.
        assert_ne!(TileConfig::choose_for(s(2049, 296, 8192), 114), cols(48));
        // Not at M <= 256 (unmeasured): on 114 SMs 256 x 2736 x 11776's 2W overfills one wave
        // and 104 columns would fit, yet it stays unsplit (helper-73).
        assert_eq!(pick(256, 2736, 11776, 114), None);
    }

    #[test]
    fn few_tiles_narrower_tiles_replace_split_128x128_ones_that_pad_n_more() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX);
        let narrow = TileConfig::NARROW_TMA_STORE;
        let cols = TileConfig::rows128_tma_store;
        // Run 329's picks: the narrowest width whose tiles in the 128 x 128 split's slices
        // fit one wave of 132 SMs, computing fewer elements.
        for (m, n, k, w, slices) in [
            (1586, 280, 4096, 96, 3), (1550, 552, 4096, 112, 2), (1166, 448, 4096, 112, 3), (1226, 408, 4096, 104, 3),
            (449, 688, 4096, 88, 4), (608, 392, 4096, 72, 4), (584, 824, 4096, 104, 3), (971, 392, 7168, 104, 4),
            (1139, 184, 7168, 96, 7), (2198, 216, 8192, 112, 3), (332, 2016, 9216, 96, 2), (2801, 216, 14336, 112, 3),
            (620, 1304, 14336, 104, 2),
        ] {
            let shape = s(m, n, k);
            assert_eq!(narrow.few_tiles_slices(shape, 132), Some(slices), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k), Some((cols(w), slices)), "{m}x{n}x{k}");
            assert!(cols(w).tiles(m, n) * slices as u64 <= 132, "{m}x{n}x{k}");
            assert!(cols(w - 8).tiles(m, n) * slices as u64 > 132 || w == 48, "{m}x{n}x{k}: not the narrowest");
            assert!(cols(w).tiles(m, n) * (w as u64) < narrow.tiles(m, n) * 128, "{m}x{n}x{k}: no less padding");
        }
        // Where the narrowest that fits computes as many elements or more (10-18% slower at
        // 962 x 840 x 7168, 1064 x 744 x 7168, 1403 x 632 x 8192), the 128 x 128 split stays.
        // (At K <= 5120 the 64 x 128 tile unsplit takes those 2-slice splits' place since run
        // 333: few_tiles_half_height_fewer_slices_instead_of.)
        for (m, n, k, slices) in [(962, 840, 7168, 2), (1064, 744, 7168, 2), (1403, 632, 8192, 2), (1190, 632, 4096, 2), (1024, 896, 5120, 2)] {
            assert_eq!(narrow.few_tiles_slices(s(m, n, k), 132), Some(slices), "{m}x{n}x{k}");
            assert_eq!(TileConfig::few_tiles_narrower_instead_of(narrow, slices, s(m, n, k), 132), None, "{m}x{n}x{k}");
            let want = if k <= 5120 { (TileConfig::M64_NARROW_TMA_STORE, 1) } else { (narrow, slices) };
            assert_eq!(pick(m, n, k), Some(want), "{m}x{n}x{k}");
        }
        // Bounds: M 257..=4096, K 4096..=14336 and K % 64 == 0, a 128 x 128 TMA-store split
        // of at least 2 slices; and the workspace bounds the pick as any split's.
        let rule = |t, sl, m, n, k| TileConfig::few_tiles_narrower_instead_of(t, sl, s(m, n, k), 132);
        assert_eq!(rule(narrow, 3, 1586, 280, 4096), Some((cols(96), 3)));
        assert_eq!(rule(narrow, 3, 1586, 280, 14336), Some((cols(96), 3)));
        assert_eq!(rule(narrow, 3, 1586, 280, 14400), None);
        assert_eq!(rule(narrow, 3, 1586, 280, 4032), None);
        assert_eq!(rule(narrow, 3, 1586, 280, 4100), None);
        assert_eq!(rule(narrow, 1, 1586, 280, 4096), None);
        assert_eq!(rule(TileConfig::NARROW, 3, 1586, 280, 4096), None);
        assert_eq!(rule(TileConfig::WIDE_TMA_STORE, 3, 1586, 280, 4096), None);
        assert_eq!(rule(narrow, 3, 256, 280, 4096), None);
        assert_eq!(rule(narrow, 2, 4097, 200, 4096), None);
        // At most 112 columns: 323 x 568 x 8192's 128 x 128 tiles in 8 would take 120 (helper-74).
        assert_eq!(pick(323, 568, 8192), Some((narrow, 8)));
        // The narrowest that fits or nothing: at 322 x 728 x 4096 in 4 slices 72 columns fit
        // but pad more (11 x 72 = 792 columns against 6 x 128 = 768), and 104, which pads
        // none, is not tried.
        assert_eq!(rule(narrow, 4, 322, 728, 4096), None);
        assert_eq!(TileConfig::few_tiles_narrower_instead_of(narrow, 3, s(1586, 280, 4096), 0), None);
        let tiles = cols(96).tiles(1586, 280);
        let bytes = tiles * 3 * 128 * 96 * 4;
        assert_eq!(TileConfig::split_rule_workspace(s(1586, 280, 4096), 132), Some((bytes, tiles)));
        assert_ne!(TileConfig::split_rule_for(s(1586, 280, 4096), 132, bytes - 1, tiles), Some((cols(96), 3)));
    }

    #[test]
    fn split_rule_takes_two_rounds_of_thirds_where_tiles_fill_half_to_two_thirds_of_the_sms() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX);
        // Run 259's shapes: 80 tiles on 132 SMs, K >= 13824, in 3 slices (240 CTAs, 2 rounds).
        assert_eq!(pick(1, 5120, 27648), Some((TileConfig::swapped_tma_store(8), 3)));
        assert_eq!(pick(16, 5120, 13824), Some((TileConfig::swapped_tma_store(16), 3)));
        assert_eq!(pick(64, 5120, 27648), Some((TileConfig::swapped_tma_store(64), 3)));
        assert_eq!(pick(256, 5120, 27648), Some((TileConfig::NARROW_TMA_STORE, 3)));
        assert_eq!(pick(256, 10240, 27648), Some((TileConfig::WIDE_TMA_STORE, 3)));
        // Up to K = 14336 the one-wave-cols rule's one wave of narrower tiles comes first
        // (run 266: 256 x 5120 x 13824 on 80 columns 0.0777 ms against 0.0800 in 3 slices,
        // 256 x 10240 x 14336 on 160 columns 0.1220 against 0.1506).
        assert_eq!(pick(256, 5120, 13824), Some((TileConfig::cols_tma_store(160), 2)));
        assert_eq!(TileConfig::choose_before_cluster_n(s(256, 5120, 13824), 132), TileConfig::cols_tma_store(80));
        assert_eq!(pick(256, 10240, 13824), None);
        assert_eq!(TileConfig::choose_for(s(256, 10240, 14336), 132), TileConfig::cols_tma_store(160));
        // The bounds on 132 SMs: 67..=88 tiles.
        assert_eq!(pick(1, 67 * 64, 13824), Some((TileConfig::swapped_tma_store(8), 3)));
        assert_eq!(pick(1, 88 * 64, 13824), Some((TileConfig::swapped_tma_store(8), 3)));
        for (m, n, k) in [
            (1, 89 * 64, 13824),  // 3 slices would take 3 rounds (run 259: 96 and 112 tiles slower)
            (1, 6144, 13824),
            (1, 66 * 64, 13824),  // the few-tiles rule's
            (1, 5120, 13760),     // K below what was measured
            (1, 5120, 8192),      // (run 259: 5% slower)
            (256, 5120, 13832),   // K % 64 != 0
        ] {
            assert_eq!(TileConfig::split_two_rounds_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}");
        }
        assert_eq!(pick(1, 66 * 64, 13824).map(|(_, sl)| sl), Some(2));
        // Any SM count: 3/5 of its worth of swapped tiles (what gpu_gemm runs), but never more
        // work units than the kernel counts (u32).
        for sms in [78u32, 108, 114, 132, 144, 170] {
            let n = 64 * (sms * 3 / 5);
            assert_eq!(TileConfig::split_rule_for(s(3, n, 13824), sms, u64::MAX, u64::MAX), Some((TileConfig::swapped_tma_store(8), 3)), "{n} on {sms}");
        }
        assert_eq!(TileConfig::split_two_rounds_for(s(16385, 2147483392, 13824), u32::MAX, u64::MAX, u64::MAX), None);
        // Only the tiles measured (helper-60): not above M = 256, not on the column-fitted,
        // 64 x 256 or 128-row swapped tiles, nor the 64-row swapped ones of more than 64 rows.
        for (m, n, k) in [(3648, 320, 13824), (5629, 192, 13824), (300, 4096, 13824), (100, 10240, 13824), (65, 5120, 13824), (160, 5120, 13824)] {
            let d = TileConfig::twin_that_splits(TileConfig::choose_for(s(m, n, k), 132), s(m, n, k));
            let tiles = d.tiles(m, n);
            assert_eq!(TileConfig::split_two_rounds_for(s(m, n, k), 132, u64::MAX, u64::MAX), None, "{m}x{n}x{k}: {d}, {tiles} tiles");
        }
        // The SM count is the device's: 80 tiles fill more than two thirds of 114 SMs.
        assert_eq!(TileConfig::split_two_rounds_for(s(1, 5120, 27648), 114, u64::MAX, u64::MAX), None);
        assert_eq!(TileConfig::split_two_rounds_for(s(1, 5120, 27648), 150, u64::MAX, u64::MAX), Some((TileConfig::swapped_tma_store(8), 3)));
        // Only within the workspace: 240 slots of 128 x 256 fp32 (30 MiB), 80 counts.
        let wide = s(256, 10240, 27648);
        assert_eq!(TileConfig::split_rule_workspace(wide, 132), Some((240 * 128 * 256 * 4, 80)));
        assert_eq!(TileConfig::split_rule_for(wide, 132, 240 * 128 * 256 * 4, 80), Some((TileConfig::WIDE_TMA_STORE, 3)));
        assert_eq!(TileConfig::split_rule_for(wide, 132, 240 * 128 * 256 * 4 - 1, 80), None);
        assert_eq!(TileConfig::split_rule_for(wide, 132, u64::MAX, 79), None);
    }

    #[test]
    fn few_tiles_split_short_swapped_tiles_as_finely_as_small_n_columns() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX);
        // DeepSeek-V3's router at decode: 4 tiles of 64 x 8 or 64 x 16, 112 K blocks: 14
        // slices of 8 (run 259), where other tiles take 7 of 16.
        assert_eq!(pick(1, 256, 7168), Some((TileConfig::swapped_tma_store(8), 14)));
        assert_eq!(pick(16, 256, 7168), Some((TileConfig::swapped_tma_store(16), 14)));
        // Up to 16 slices, their CTAs within half the SMs.
        assert_eq!(pick(1, 256, 14336), Some((TileConfig::swapped_tma_store(8), 16)));
        assert_eq!(pick(1, 512, 4096), Some((TileConfig::swapped_tma_store(8), 8)));
        assert_eq!(pick(16, 768, 4096), Some((TileConfig::swapped_tma_store(16), 5)));
        // Never fewer than the general bound gives.
        assert_eq!(pick(8, 1024, 7168), Some((TileConfig::swapped_tma_store(8), 7)));
        // Not the 64 x M tile itself from 17 rows of A (run 259: 64 x 256 x 7168 no faster in 14,
        // slower in 16; run 344 the same): there narrower swapped tiles take more slices
        // (few_tiles_narrower_swapped_instead_of), 64 x 16 in 14 and 64 x 32 in 8.
        assert_eq!(TileConfig::swapped_tma_store(24).few_tiles_slices(s(17, 256, 7168), 132), Some(7));
        assert_eq!(TileConfig::swapped_tma_store(64).few_tiles_slices(s(64, 256, 7168), 132), Some(7));
        assert_eq!(pick(17, 256, 7168), Some((TileConfig::swapped_tma_store(16), 14)));
        assert_eq!(pick(64, 256, 7168), Some((TileConfig::swapped_tma_store(32), 8)));
    }

    #[test]
    fn split_rule_spreads_one_row_block_with_a_long_k_over_wider_tiles() {
        let big = 32 << 20;
        let pick = |m, n, k| TileConfig::split_rule_for(GemmShape { m, n, k }, 132, big, 4096);
        // The narrowest of 112..=144 columns making <= 66 tiles, in 2 slices.
        assert_eq!(pick(128, 9216, 14336), Some((TileConfig::cols_tma_store(144), 2)));
        assert_eq!(pick(112, 9216, 9216), Some((TileConfig::cols_tma_store(144), 2)));
        assert_eq!(pick(128, 8192, 14336), Some((TileConfig::NARROW_TMA_STORE, 2)));
        assert_eq!(pick(120, 8192, 28672), Some((TileConfig::NARROW_TMA_STORE, 2)));
        assert_eq!(pick(128, 7168, 18432), Some((TileConfig::cols_tma_store(112), 2)));
        assert_eq!(pick(128, 7680, 14336), Some((TileConfig::cols_tma_store(120), 2)));
        assert_eq!(pick(128, 8704, 10240), Some((TileConfig::cols_tma_store(136), 2)));
        for (m, n, k) in [
            (111, 9216, 14336),  // below one full row block: the padding rule's swapped tiles
            (129, 9216, 14336),  // two row blocks
            (128, 9216, 7168),   // K below what was measured
            (128, 9216, 14344),  // K % 64 != 0
            (128, 9220, 14336),  // N % 8 != 0
            (128, 10240, 14336), // would need 160 columns
            (128, 6144, 14336),  // 96 columns would do: narrower than measured
            (128, 4096, 14336),
        ] {
            assert_eq!(TileConfig::split_row_block_for(GemmShape { m, n, k }, 132, big, 4096), None, "{m}x{n}x{k}");
        }
        // Every pick: the default is one of the narrow tiles it was measured against, the
        // split tile makes at most half the SMs' tiles and is 112..=144 columns wide.
        for sms in [78, 114, 132] {
            for n in (6000..=12000).step_by(8) {
                let s = GemmShape { m: 128, n, k: 14336 };
                if let Some((t, sl)) = TileConfig::split_row_block_for(s, sms, big, 4096) {
                    let d = TileConfig::choose_for(s, sms);
                    assert!(d == TileConfig::cols_tma_store(72) || d == TileConfig::swapped(128), "{s:?} {sms}: {d}");
                    assert!(sl == 2 && (112..=144).contains(&t.bn) && t.tiles(128, n) <= (sms / 2) as u64, "{s:?} {sms}: {t}");
                    assert!(t.can_split_last_wave(), "{t}");
                }
            }
        }
        // Only within the workspace (64 tiles x 2 slots of 128 x 144 fp32 = 9 MiB).
        assert!(TileConfig::split_rule_for(GemmShape { m: 128, n: 9216, k: 14336 }, 132, 9 << 20, 4096).is_some());
        assert_eq!(TileConfig::split_rule_for(GemmShape { m: 128, n: 9216, k: 14336 }, 132, (9 << 20) - 1, 4096), None);
        assert_eq!(TileConfig::split_rule_for(GemmShape { m: 128, n: 9216, k: 14336 }, 132, big, 63), None);
    }

    #[test]
    fn few_tiles_take_two_warpgroup_128x64_tiles_for_wide_n_at_two_or_three_row_blocks() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX);
        let (small, cols) = (TileConfig::swapped_tma_store(64), TileConfig::cols_tma_store(64));
        // Runs 348-349's wins: the 64 x 64 split in 2 (the smaller-tile rule's) -> 128 x 64 in 4.
        for (m, n, k) in [(197, 792, 12096), (236, 808, 9024), (302, 568, 7360), (331, 696, 6144), (256, 896, 4096), (256, 896, 7168), (256, 896, 14336)] {
            let shape = s(m, n, k);
            let t = TileConfig::twin_that_splits(TileConfig::choose_before_cluster_n(shape, 132), shape);
            let sl = t.few_tiles_slices(shape, 132).expect("few tiles");
            assert_eq!(TileConfig::few_tiles_smaller_instead_of(t, sl, shape, 132), Some((small, 2)), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k), Some((cols, 4)), "{m}x{n}x{k}");
        }
        // Where it stays: N < 3M / 2 (434 x 408, 448 x 488, 512 x 512), 3 slices (218 x 560 x 6336); M
        // above 384 at N = 256 is the tall rule's (few_tiles_take_swapped_128x64_tiles_at_tall_m_and_n_128_or_256).
        for (m, n, k, slices) in [(434, 408, 6976, 2), (448, 488, 7232, 2), (512, 512, 7168, 2), (218, 560, 6336, 3)] {
            assert_eq!(pick(m, n, k), Some((small, slices)), "{m}x{n}x{k}");
        }
        // Bounds: M 193..=384, N >= 3M / 2 (304 x 456 in, 304 x 448 out), K % 64 == 0, K 4096..=14336,
        // the 64 x 64 tile in exactly 2, tiles x 4 within the SMs.
        let rule = |m, n, k, sl, sms| TileConfig::few_tiles_two_warpgroups_instead_of(small, sl, s(m, n, k), sms);
        assert_eq!(rule(304, 456, 8192, 2, 132), Some((cols, 4)));
        assert_eq!(rule(304, 448, 8192, 2, 132), None);
        assert_eq!(rule(192, 800, 8192, 2, 132), None);
        assert_eq!(rule(193, 800, 8192, 2, 132), Some((cols, 4)));
        assert_eq!(rule(384, 640, 8192, 2, 132), Some((cols, 4)));
        assert_eq!(rule(384, 640, 8192, 2, 200), Some((cols, 4)));
        assert_eq!(rule(385, 640, 8192, 2, 200), None);
        assert_eq!(rule(256, 896, 4032, 2, 132), None);
        assert_eq!(rule(256, 896, 14400, 2, 132), None);
        assert_eq!(rule(256, 896, 8200, 2, 132), None);
        assert_eq!(rule(256, 896, 8192, 3, 132), None);
        assert_eq!(rule(256, 900, 8192, 2, 132), None);
        assert_eq!(rule(256, 896, 8192, 2, 111), None);
        assert_eq!(rule(256, 896, 8192, 2, 112), Some((cols, 4)));
        assert_eq!(TileConfig::few_tiles_two_warpgroups_instead_of(TileConfig::swapped_tma_store(32), 2, s(256, 896, 8192), 132), None);
    }

    #[test]
    fn few_tiles_take_swapped_128x64_tiles_at_tall_m_and_n_128_or_256() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX);
        let (small, tall) = (TileConfig::swapped_tma_store(64), TileConfig::swapped_wide(64, Epilogue::TmaStore));
        // Runs 352 and 355's wins: the few-tiles split's 64 x 64 tile in 2 -> the 128 x 64 swapped tile in 4.
        for (m, n, k) in [
            (1024, 256, 7168),
            (735, 256, 12480),
            (743, 256, 9216),
            (884, 256, 9216),
            (765, 256, 11136),
            (914, 256, 5056),
            (1024, 256, 4096),
            (900, 256, 6144),
            (812, 256, 11264),
            (1000, 256, 5120),
            (1500, 128, 5120),
            (2000, 128, 7168),
        ] {
            let shape = s(m, n, k);
            let t = TileConfig::twin_that_splits(TileConfig::choose_before_cluster_n(shape, 132), shape);
            let sl = t.few_tiles_slices(shape, 132).expect("few tiles");
            let before = TileConfig::few_tiles_smaller_instead_of(t, sl, shape, 132).unwrap_or((t, sl));
            assert_eq!(before, (small, 2), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k), Some((tall, 4)), "{m}x{n}x{k}");
            // on the workspace split_rule_workspace asks for (half the counts the 64 x 64 pick needs)
            let (bytes, counts) = TileConfig::split_rule_workspace(shape, 132).expect("a split");
            assert_eq!(counts, tall.tiles(m, n), "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(shape, 132, bytes, counts), Some((tall, 4)), "{m}x{n}x{k}");
            // a workspace too small for it: the 64 x 64 pick where that fits
            let small_bytes = small.tiles(m, n) * 2 * small.split_slot_bytes();
            assert!(small_bytes < bytes, "{m}x{n}x{k}");
            assert_eq!(TileConfig::split_rule_for(shape, 132, small_bytes, 2 * counts), Some((small, 2)), "{m}x{n}x{k}");
        }
        // Where it stays: the 64 x 64 tile in 3-6 slices (450 x 256, 520 x 256, 640 x 256, 800 x 128, 1024 x 128),
        // N = 384 and N that pads the 128-row blocks (run 352).
        for (m, n, k, slices) in [(450, 256, 8192, 4), (520, 256, 10240, 3), (640, 256, 4096, 3), (800, 128, 7168, 5), (1024, 128, 9216, 4)] {
            assert_eq!(pick(m, n, k), Some((small, slices)), "{m}x{n}x{k}");
        }
        for (m, n, k) in [(589, 384, 5568), (692, 384, 4288), (447, 448, 12736), (607, 264, 5120), (703, 264, 5632), (402, 392, 7104)] {
            assert!(pick(m, n, k).is_none_or(|(t, _)| t != tall), "{m}x{n}x{k}: {:?}", pick(m, n, k));
        }
        // Bounds: the 64 x 64 tile in exactly 2, M >= 385, N 128 or 256, K % 64 == 0, K 4096..=14336,
        // tiles x 4 within the SMs.
        let rule = |m, n, k, sl, sms| TileConfig::few_tiles_two_warpgroups_instead_of(small, sl, s(m, n, k), sms);
        assert_eq!(rule(1024, 256, 7168, 2, 132), Some((tall, 4)));
        assert_eq!(rule(385, 256, 7168, 2, 132), Some((tall, 4)));
        assert_eq!(rule(384, 256, 7168, 2, 132), None);
        assert_eq!(rule(1024, 128, 7168, 2, 132), Some((tall, 4)));
        assert_eq!(rule(2048, 128, 7168, 2, 132), Some((tall, 4)));
        assert_eq!(rule(2049, 128, 7168, 2, 144), None);
        for n in [64, 192, 255, 257, 384, 512] {
            assert_eq!(rule(1024, n, 7168, 2, 132), None, "N={n}");
        }
        assert_eq!(rule(1024, 256, 4032, 2, 132), None);
        assert_eq!(rule(1024, 256, 4096, 2, 132), Some((tall, 4)));
        assert_eq!(rule(1024, 256, 14336, 2, 132), Some((tall, 4)));
        assert_eq!(rule(1024, 256, 14400, 2, 132), None);
        assert_eq!(rule(1024, 256, 8200, 2, 132), None);
        assert_eq!(rule(1024, 256, 7168, 3, 132), None);
        assert_eq!(rule(1024, 256, 7168, 1, 132), None);
        // 1024 x 256: 2 x 16 tiles, x 4 = 128 CTAs; 1056 x 256: 2 x 17 x 4 = 136 > 132.
        assert_eq!(rule(1024, 256, 7168, 2, 127), None);
        assert_eq!(rule(1024, 256, 7168, 2, 128), Some((tall, 4)));
        assert_eq!(rule(1056, 256, 7168, 2, 132), None);
        assert_eq!(TileConfig::few_tiles_two_warpgroups_instead_of(TileConfig::swapped_tma_store(32), 2, s(1024, 256, 7168), 132), None);
    }

    #[test]
    fn few_tiles_take_narrower_swapped_tiles_at_small_m_where_the_model_says() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX);
        let sw = TileConfig::swapped_tma_store;
        // Run 344's moves (and run 343's 64 x 768 x 4096): (the few-tiles split of the 64 x M
        // tile, the pick).
        for (m, n, k, was_slices, rows, slices) in [
            (64, 256, 4096, 4, 32, 8), (64, 256, 7168, 7, 32, 8), (64, 256, 14336, 8, 32, 16), (64, 512, 4096, 4, 32, 8),
            (64, 512, 7168, 7, 32, 8), (64, 768, 4096, 4, 32, 5), (64, 1024, 4096, 4, 32, 4), (48, 256, 4096, 4, 16, 8), (48, 512, 4096, 4, 16, 5),
            (48, 256, 7168, 7, 16, 11), (40, 256, 14336, 8, 16, 11), (24, 256, 7168, 7, 16, 14), (41, 184, 12032, 8, 16, 14),
            (24, 256, 14336, 8, 16, 16), (24, 512, 4096, 4, 24, 8), (24, 1024, 4096, 4, 24, 8),
        ] {
            let shape = s(m, n, k);
            let was = sw(m.div_ceil(8) * 8);
            assert_eq!(TileConfig::twin_that_splits(TileConfig::choose_before_cluster_n(shape, 132), shape), was, "{m}x{n}x{k}");
            assert_eq!(was.few_tiles_slices(shape, 132), Some(was_slices), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k), Some((sw(rows), slices)), "{m}x{n}x{k}");
        }
        // Where the split stays, the alternatives measured even or slower (runs 344-346: 64 x 1024 x
        // 7168 even on 64 x 32 in 4; 44 x 584 x 8576 on 64 x 48 in 9; 64 x 32 in 6-8 at 40 x 488 x 8384,
        // 41 x 576 x 8192 5-8% slower, 40-48 x 512 x 14336 3-11%; 24 x 1024 x 7168 2%).
        for (m, n, k, slices) in [
            (64, 1024, 7168, 7), (44, 584, 8576, 8), (40, 488, 8384, 8), (41, 576, 8192, 8),
            (40, 512, 14336, 8), (48, 512, 14336, 8), (24, 1024, 7168, 7), (64, 1024, 14336, 8),
        ] {
            assert_eq!(pick(m, n, k), Some((sw(m.div_ceil(8) * 8), slices)), "{m}x{n}x{k}");
        }
        let rule = |m: u32, n, k, sl, sms| TileConfig::few_tiles_narrower_swapped_instead_of(sw(m.div_ceil(8) * 8), sl, s(m, n, k), sms);
        // Bounds: 17 <= M <= 64 (M <= 16 has the short swapped tiles' own slices), K % 64 == 0,
        // K 4096..=14336, 2 or more slices, the operands within 12 MiB ((64 + 704) x 8192 x 2
        // bytes is 12,582,912), the tile the one holding M.
        assert_eq!(rule(17, 256, 4096, 4, 132), Some((sw(24), 8)));
        assert_eq!(rule(16, 256, 4096, 4, 132), None);
        assert_eq!(rule(65, 256, 4096, 4, 132), None);
        assert_eq!(rule(64, 256, 4032, 4, 132), None);
        assert_eq!(rule(64, 256, 4160, 4, 132), Some((sw(32), 8)));
        assert_eq!(rule(64, 256, 4100, 4, 132), None);
        assert_eq!(rule(64, 256, 14400, 8, 132), None);
        assert_eq!(rule(64, 256, 4096, 1, 132), None);
        assert_eq!(TileConfig::few_tiles_narrower_swapped_instead_of(sw(32), 4, s(64, 256, 4096), 132), None);
        assert_eq!(rule(64, 704, 8192, 8, 132), Some((sw(32), 6)));
        assert_eq!(rule(64, 712, 8192, 8, 132), None);
        // One wave on any SM count: the pick's CTAs fit, or there is none.
        for sms in [8, 16, 66, 78, 114, 132, 144] {
            for (m, n, k) in [(64, 256, 4096), (24, 512, 7168), (40, 1024, 4096), (57, 392, 9216)] {
                if let Some((t, sl)) = rule(m, n, k, 4, sms) {
                    assert!(t.tiles(m, n) * sl as u64 <= sms as u64 && (2..=16).contains(&sl) && (k / 64) / sl >= 8, "{m}x{n}x{k} on {sms}: {t} in {sl}");
                }
            }
        }
        // The fix-up's L2 round trips as split_fixup in sm90_gemm.cuh makes them for the slice that
        // arrives last (at most): batches of 16 slots at 64 x 16, 8 at 64 x 24 and 64 x 32, 4 at 64 x
        // 40 and 64 x 48, 3 at 64 x 56 and 64 x 64 (its comment: "7 slices in 3 round trips"); one
        // per other slice and group of 8 float4s above 32 accumulators a thread (64 x 128 in 3: 2 x
        // 2; 128 x 128 in 4: 3 x 2).
        for (rows, slices, trips) in [(16, 16, 1), (16, 2, 1), (24, 8, 1), (24, 9, 2), (32, 10, 2), (40, 4, 1), (40, 5, 2), (48, 9, 3), (56, 3, 1), (56, 4, 2), (64, 7, 3), (64, 8, 3), (128, 3, 4)] {
            assert_eq!(sw(rows).split_fixup_round_trips(slices), trips, "64 x {rows} in {slices}");
        }
        assert_eq!(sw(64).split_fixup_round_trips(1), 0);
        assert_eq!(TileConfig::NARROW_TMA_STORE.split_fixup_round_trips(4), 6);
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.split_fixup_round_trips(2), 4);
    }

    #[test]
    fn few_tiles_take_half_height_tiles_in_fewer_slices_where_the_model_says() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, u64::MAX, u64::MAX);
        let (narrow, wide, half) = (TileConfig::NARROW_TMA_STORE, TileConfig::M64_WIDE_TMA_STORE, TileConfig::M64_NARROW_TMA_STORE);
        // Runs 332-333's shapes that the 64 x 128 tile ran faster: (the few-tiles split, the
        // 64 x 128 tile's slices); 1 = unsplit.
        for (m, n, k, was, was_slices, slices) in [
            (896, 1024, 4096, narrow, 2, 1), (1024, 1024, 4096, narrow, 2, 1), (2048, 512, 4096, narrow, 2, 1),
            (1024, 1024, 5120, narrow, 2, 1), (896, 1152, 5120, narrow, 2, 1), (4096, 256, 5120, narrow, 2, 1),
            (300, 2304, 4096, wide, 2, 1), (700, 1280, 7168, wide, 2, 1), (300, 3072, 8192, wide, 2, 1),
            (428, 2104, 13824, wide, 2, 1), (821, 1112, 8704, wide, 2, 1), (913, 768, 12288, wide, 2, 1),
            (512, 1152, 4096, narrow, 3, 1), (1536, 384, 5120, narrow, 3, 1), (300, 1792, 4096, wide, 3, 1),
            (1280, 256, 4096, narrow, 4, 2), (256, 2048, 4096, narrow, 4, 2), (1560, 232, 4096, narrow, 4, 2),
            (300, 1664, 8192, wide, 3, 2), (300, 1536, 7168, wide, 4, 2), (700, 640, 4096, wide, 4, 2), (300, 1408, 8192, wide, 4, 2),
            (680, 552, 10752, wide, 4, 2),
            // (two row blocks, run 340: the 128 x 128 tile's splits give way above K = 5120 too)
            (252, 4136, 6144, narrow, 2, 1), (256, 3936, 10752, narrow, 2, 1), (203, 3952, 6144, narrow, 2, 1),
            (237, 1864, 6656, narrow, 4, 2), (218, 1936, 5632, narrow, 4, 2), (239, 1960, 9216, narrow, 4, 2),
        ] {
            let shape = s(m, n, k);
            assert_eq!(TileConfig::twin_that_splits(TileConfig::choose_before_cluster_n(shape, 132), shape), was, "{m}x{n}x{k}");
            assert_eq!(was.few_tiles_slices(shape, 132), Some(was_slices), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k), Some((half, slices)), "{m}x{n}x{k}");
            assert!(half.tiles(m, n) * slices as u64 <= 132, "{m}x{n}x{k}: more than one wave");
        }
        // Where it ran slower or even: 3 slices from K = 7168 (2/3 the CTAs over 1.5x the K
        // blocks each), the narrower tiles' picks, which come first, and 128 x 128 splits above
        // K = 5120 (FEW_TILES_HALF_HEIGHT_128_MAX_K: 2601 x 352 and 994 x 944 slower unsplit at
        // every K from 6144, runs 334-335; 896 x 1024 x 14336 and 1000 x 512 x 8192 were 2-3%
        // faster, 961 x 992 x 6144 8%).
        for (m, n, k, t, slices) in [
            (2601, 352, 11776, narrow, 2), (2601, 352, 6144, narrow, 2), (994, 944, 12288, narrow, 2), (994, 944, 8192, narrow, 2),
            (896, 1024, 14336, narrow, 2), (1000, 512, 8192, narrow, 4), (961, 992, 6144, narrow, 2),
            (768, 896, 14336, narrow, 3), (384, 1536, 7168, narrow, 3), (1024, 640, 14336, narrow, 3), (896, 768, 8192, narrow, 3),
            (1000, 640, 7168, narrow, 3), (896, 640, 8192, narrow, 3), (700, 1024, 8192, wide, 3),
            (640, 1152, 14336, TileConfig::cols_tma_store(96), 2), (1586, 280, 4096, TileConfig::cols_tma_store(96), 3),
        ] {
            assert_eq!(pick(m, n, k), Some((t, slices)), "{m}x{n}x{k}");
        }
        // The model: 64 x 256 in 3 at K = 6144 costs 64 x 256 x 32 + 2 x 8 x 128 x 128 =
        // 786,432 multiply-adds per column, as the 64 x 128 tile unsplit (64 x 128 x 96): a tie
        // keeps the split; at K = 5120, 704,512 against 655,360. (helper-76)
        let rule = |t, sl, m, n, k| TileConfig::few_tiles_half_height_fewer_slices_instead_of(t, sl, s(m, n, k), 132);
        assert_eq!(rule(wide, 3, 384, 1536, 6144), None);
        assert_eq!(rule(wide, 3, 384, 1536, 5120), Some((half, 1)));
        // The least cost: 1280 x 256 x 4096's 40 tiles in 2 (262,144 + 131,072) rather than 3
        // (180,224 + 262,144) or unsplit (524,288); of equal costs, the fewest slices: 300 x
        // 1024 x 6144 in 2 or 3 (524,288 each), 300 x 512 x 12288 in 3 or 4 (786,432 each).
        assert_eq!(rule(narrow, 4, 1280, 256, 4096), Some((half, 2)));
        assert_eq!(rule(wide, 3, 300, 1024, 6144), Some((half, 2)));
        assert_eq!(rule(wide, 4, 300, 512, 12288), Some((half, 3)));
        // Bounds: M 193..=4096, K % 64 == 0, K 4096..=14336 but for the 128 x 128 tile above M =
        // 256 up to 5120, 2..=4 slices of either TMA-store tile; none on an SM count its tiles
        // overfill.
        assert_eq!(rule(narrow, 2, 1024, 1024, 4096), Some((half, 1)));
        assert_eq!(rule(narrow, 2, 1024, 1024, 5120), Some((half, 1)));
        assert_eq!(rule(narrow, 2, 1024, 1024, 5184), None);
        assert_eq!(rule(wide, 2, 1024, 1024, 14336), Some((half, 1)));
        assert_eq!(rule(wide, 2, 1024, 1024, 14400), None);
        assert_eq!(rule(narrow, 2, 192, 4096, 4096), None);
        assert_eq!(rule(narrow, 2, 193, 4096, 4096), Some((half, 1)));
        assert_eq!(rule(narrow, 2, 256, 4096, 14336), Some((half, 1)));
        assert_eq!(rule(narrow, 2, 257, 4096, 14336), None);
        assert_eq!(rule(narrow, 2, 4097, 256, 4096), None);
        assert_eq!(rule(narrow, 2, 1024, 1024, 4032), None);
        assert_eq!(rule(narrow, 2, 1024, 1024, 4100), None);
        assert_eq!(rule(narrow, 1, 1024, 1024, 4096), None);
        assert_eq!(rule(narrow, 5, 1024, 1024, 4096), None);
        assert_eq!(rule(TileConfig::NARROW, 2, 1024, 1024, 4096), None);
        assert_eq!(rule(TileConfig::WIDE_TMA_STORE, 2, 1024, 1024, 4096), None);
        assert_eq!(rule(half, 2, 1024, 1024, 4096), None);
        assert_eq!(TileConfig::few_tiles_half_height_fewer_slices_instead_of(narrow, 2, s(1024, 1024, 4096), 127), None);
        assert_eq!(TileConfig::few_tiles_half_height_fewer_slices_instead_of(narrow, 2, s(1024, 1024, 4096), 0), None);
        // A pick of 1 slice needs no workspace: `split_rule_workspace` has none to give, and
        // the rules pick it with none (as `gemm::launch` asks them without a workspace).
        assert_eq!(TileConfig::split_rule_workspace(s(1024, 1024, 4096), 132), None);
        assert_eq!(TileConfig::split_rule_for(s(1024, 1024, 4096), 132, 0, 0), Some((half, 1)));
        assert_eq!(TileConfig::split_rule_without_workspace(s(1024, 1024, 4096), 132), Some(half));
        // Without a workspace, a pick that needs slots is not replaced by a later rule's: at
        // 1586 x 280 x 4096 (128 x 96 in 3) a zero workspace falls through to the 64 x 128
        // tile unsplit (25% slower there, run 333), which gemm::launch does not take.
        assert_eq!(pick(1586, 280, 4096), Some((TileConfig::cols_tma_store(96), 3)));
        assert_eq!(TileConfig::split_rule_for(s(1586, 280, 4096), 132, 0, 0), Some((half, 1)));
        assert_eq!(TileConfig::split_rule_without_workspace(s(1586, 280, 4096), 132), None);
        // A 2-slice pick needs its slots, as any split; without them no rule picks (the
        // default tile unsplit).
        let tiles = half.tiles(256, 2048);
        assert_eq!(TileConfig::split_rule_workspace(s(256, 2048, 4096), 132), Some((tiles * 2 * 64 * 128 * 4, tiles)));
        assert_eq!(TileConfig::split_rule_for(s(256, 2048, 4096), 132, 0, 0), None);
    }

    #[test]
    fn few_tiles_take_half_height_tiles_at_two_row_blocks() {
        let s = |m, n, k| GemmShape { m, n, k };
        let pick = |m, n, k| TileConfig::split_rule_for(s(m, n, k), 132, 32 << 20, 4096);
        let (narrow, half) = (TileConfig::NARROW_TMA_STORE, TileConfig::M64_NARROW_TMA_STORE);
        // Run 298's shapes: 64 x 128 in 2 slices in place of 128 x 128 in 4, 6 and 4; in 3
        // where they fit one wave (run 372: 40 tiles at N = 1280; 36 and 44 at N = 1152, 1408).
        // (236 x 1272 x 6144: gpu_gemm's split-test case of the third slice, M and N ragged)
        for (m, n, k, was, slices) in [(256, 1536, 4096, 4, 2), (256, 1280, 8192, 6, 3), (256, 1792, 5120, 4, 2), (256, 1152, 4096, 4, 3), (256, 1408, 6144, 6, 3), (200, 1400, 4096, 4, 3), (256, 1416, 6144, 5, 2), (236, 1272, 6144, 6, 3)] {
            assert_eq!(TileConfig::choose_for(s(m, n, k), 132), narrow, "{m}x{n}x{k}");
            assert_eq!(narrow.few_tiles_slices(s(m, n, k), 132), Some(was), "{m}x{n}x{k}");
            assert_eq!(pick(m, n, k), Some((half, slices)), "{m}x{n}x{k}");
        }
        // The third slice needs tiles x 3 <= SMs; a workspace without room for it keeps two.
        assert_eq!(TileConfig::few_tiles_half_height_instead_of(narrow, 6, s(256, 1280, 8192), 119), Some((half, 2)));
        assert_eq!(TileConfig::few_tiles_half_height_instead_of(narrow, 6, s(256, 1280, 8192), 120), Some((half, 3)));
        let two_only = 40 * 2 * half.split_slot_bytes();
        assert_eq!(TileConfig::split_rule_for(s(256, 1280, 8192), 132, two_only, 4096), Some((half, 2)));
        // Not where the 64 x 64 swapped tile comes first (N <= 1024 here; at 256 x 1024 its 2
        // slices give way to the 128 x 64 tile in 4, few_tiles_two_warpgroups_instead_of), where 2 slices
        // would make more than 7/8 of the SMs' CTAs (256 x 2048: 128; there the fewer-slices
        // rule after it takes them, all 132 SMs' worth), nor outside K = 4096..=8192, M =
        // 193..=256 and 4..=6 slices of the 128 x 128 tile.
        assert_eq!(pick(256, 1024, 4096), Some((TileConfig::cols_tma_store(64), 4)));
        assert_eq!(TileConfig::few_tiles_half_height_instead_of(narrow, 4, s(256, 2048, 4096), 132), None);
        assert_eq!(pick(256, 2048, 4096), Some((half, 2)));
        assert_eq!(pick(256, 1536, 9216), Some((narrow, 5)));
        for (m, n, k, slices) in [(384, 1536, 4096, 4), (192, 1536, 4096, 4), (256, 1536, 2048, 4), (256, 1024, 8192, 8), (256, 1536, 4096, 3)] {
            assert_eq!(TileConfig::few_tiles_half_height_instead_of(narrow, slices, s(m, n, k), 132), None, "{m}x{n}x{k} in {slices}");
        }
        assert_eq!(TileConfig::few_tiles_half_height_instead_of(TileConfig::WIDE_TMA_STORE, 4, s(256, 1536, 4096), 132), None);
    }

    #[test]
    fn split_rule_takes_split_k_where_the_tiles_leave_most_sms_idle() {
        let big = 32 << 20;
        let pick = |m, n, k| TileConfig::split_rule_for(GemmShape { m, n, k }, 132, big, 4096);
        // 64 tiles of 128 x 128: 2 slices; 32: 4; 16: 8, the most (K >= 9216 has at least
        // 144 K blocks, 9 slices of 16).
        assert_eq!(pick(256, 4096, 57344), Some((TileConfig::NARROW_TMA_STORE, 2)));
        assert_eq!(pick(1024, 1024, 65536), Some((TileConfig::NARROW_TMA_STORE, 2)));
        assert_eq!(pick(256, 2048, 32768), Some((TileConfig::NARROW_TMA_STORE, 4)));
        assert_eq!(pick(256, 1024, 65536).map(|p| p.1), Some(8));
        assert_eq!(pick(256, 1024, 9216).map(|p| p.1), Some(8));
        // The 128 x 128 default has the TMA-store epilogue where N % 8 == 0 (run 296) and
        // splits; with N % 8 != 0 it keeps the Registers one and does not split.
        assert_eq!(TileConfig::choose_for(GemmShape { m: 1000, n: 1000, k: 16384 }, 132), TileConfig::NARROW_TMA_STORE);
        assert_eq!(pick(1000, 1000, 16384), Some((TileConfig::NARROW_TMA_STORE, 2)));
        assert_eq!(TileConfig::choose_for(GemmShape { m: 1000, n: 1001, k: 16384 }, 132), TileConfig::NARROW);
        assert_eq!(pick(1000, 1001, 16384), None);
        // The default's other tiles: 64-row swapped, 64 x 256, 128 x 256, column-fitted.
        assert_eq!(pick(64, 4096, 14336), Some((TileConfig::swapped_tma_store(64), 2)));
        assert_eq!(pick(128, 4096, 14336), Some((TileConfig::swapped_tma_store(128), 2)));
        assert_eq!(pick(160, 4096, 14336), Some((TileConfig::swapped_tma_store(160), 2)));
        assert_eq!(pick(300, 2048, 16384), Some((TileConfig::M64_WIDE_TMA_STORE, 3)));
        assert_eq!(pick(1, 14336, 14336), Some((TileConfig::M64_WIDE_TMA_STORE, 2)));
        assert_eq!(pick(128, 16896, 9216), Some((TileConfig::WIDE_TMA_STORE, 2)));
        assert_eq!(pick(1028, 136, 9216), Some((TileConfig::cols_tma_store(136), 8)));
        // K % 64 != 0 on the 64 x 256 and 128 x 256 tiles (gpu_gemm runs these).
        assert_eq!(pick(8, 4096, 4104), Some((TileConfig::M64_WIDE_TMA_STORE, 4)));
        assert_eq!(pick(128, 16896, 4104), Some((TileConfig::WIDE_TMA_STORE, 2)));
        // K = 4096: at most 64 K blocks, 4 slices (of 128 x 128 tiles, whose place the 64 x 128
        // tile takes in half as many there).
        assert_eq!(TileConfig::NARROW_TMA_STORE.few_tiles_slices(GemmShape { m: 256, n: 4096, k: 4096 }, 132), Some(2));
        assert_eq!(TileConfig::NARROW_TMA_STORE.few_tiles_slices(GemmShape { m: 256, n: 2048, k: 4096 }, 132), Some(4));
        assert_eq!(pick(256, 4096, 4096), Some((TileConfig::M64_NARROW_TMA_STORE, 1)));
        assert_eq!(pick(256, 2048, 4096), Some((TileConfig::M64_NARROW_TMA_STORE, 2)));
        // Where 64 x 64 swapped tiles are few too (K <= 28672, A + B <= 32 MiB): those, in
        // their own slices (runs 205-207, 211); not where the default's split keeps 7/8 of the SMs
        // busy, nor where they would compute more (128 x 136 tiles on N = 136); in 2 slices at N >=
        // 3M / 2 the two-warpgroup 128 x 64 tile in 4 takes their place (runs 348-349), and from M =
        // 385 at N = 128 or 256 the swapped 128 x 64 tile in 4 (runs 352, 355).
        assert_eq!(TileConfig::few_tiles_smaller_instead_of(TileConfig::NARROW_TMA_STORE, 4, GemmShape { m: 256, n: 1024, k: 4096 }, 132), Some((TileConfig::swapped_tma_store(64), 2)));
        assert_eq!(pick(256, 1024, 4096), Some((TileConfig::cols_tma_store(64), 4)));
        assert_eq!(pick(256, 256, 7168), Some((TileConfig::swapped_tma_store(64), 7)));
        assert_eq!(pick(128, 256, 7168), Some((TileConfig::swapped_tma_store(64), 7)));
        assert_eq!(pick(512, 256, 7168), Some((TileConfig::swapped_tma_store(64), 4)));
        assert_eq!(pick(1024, 256, 7168), Some((TileConfig::swapped_wide(64, Epilogue::TmaStore), 4)));
        assert_eq!(pick(128, 1024, 4096), Some((TileConfig::swapped_tma_store(64), 4)));
        // Not where the default's split already keeps 7/8 of the SMs busy (32 tiles in 4).
        assert_eq!(pick(128, 2048, 4096), Some((TileConfig::swapped_tma_store(128), 4)));
        assert_eq!(pick(128, 2048, 4096), TileConfig::split_few_tiles_for(GemmShape { m: 128, n: 2048, k: 4096 }, 132, big, 4096));
        assert_eq!(pick(128, 2048, 4096).map(|p| p.0), Some(TileConfig::choose_for_split(GemmShape { m: 128, n: 2048, k: 4096 }, 132)));
        assert_eq!(pick(256, 1024, 9216), Some((TileConfig::NARROW_TMA_STORE, 8)));
        assert_eq!(pick(256, 256, 14336), Some((TileConfig::swapped_tma_store(64), 8)));
        assert_eq!(pick(384, 384, 9216), Some((TileConfig::swapped_tma_store(64), 3)));
        assert_eq!(pick(256, 512, 28672), Some((TileConfig::NARROW_TMA_STORE, 8)));
        // Run 211: K = 16384-28672 within 32 MiB; above K = 28672 unmeasured, the default's.
        for (m, n, k) in [(128, 256, 28672), (256, 256, 28672), (128, 512, 16384), (192, 384, 24576)] {
            assert_eq!(pick(m, n, k).map(|p| p.0), Some(TileConfig::swapped_tma_store(64)), "{m}x{n}x{k}");
        }
        let over_k = GemmShape { m: 128, n: 256, k: 28736 };
        assert_eq!(pick(128, 256, 28736).map(|p| p.0), Some(TileConfig::choose_for_split(over_k, 132)));
        assert_ne!(TileConfig::choose_for_split(over_k, 132), TileConfig::swapped_tma_store(64));
        assert_eq!(pick(512, 256, 57344), Some((TileConfig::NARROW_TMA_STORE, 8)));
        // (1024 + 1024) x 8192 x 2 bytes = 32 MiB: in; one more row of A: out.
        let (at, over) = (GemmShape { m: 1024, n: 1024, k: 8192 }, GemmShape { m: 1025, n: 1024, k: 8192 });
        let wide_slices = |s| TileConfig::M64_WIDE_TMA_STORE.few_tiles_slices(s, 1000).unwrap();
        assert!(TileConfig::few_tiles_smaller_instead_of(TileConfig::M64_WIDE_TMA_STORE, wide_slices(at), at, 1000).is_some());
        assert_eq!(TileConfig::few_tiles_smaller_instead_of(TileConfig::M64_WIDE_TMA_STORE, wide_slices(over), over, 1000), None);
        assert_eq!(pick(1030, 136, 4096), Some((TileConfig::cols_tma_store(136), 4)));
        // (1025 x 256: 68 tiles of 64 x 64, more than half the SMs: the default's tile)
        assert_eq!(pick(1025, 256, 7168).map(|p| p.0), Some(TileConfig::choose_for_split(GemmShape { m: 1025, n: 256, k: 7168 }, 132)));
        assert!(!TileConfig::choose_for_split(GemmShape { m: 1025, n: 256, k: 7168 }, 132).swap_ab);
        for (m, n, k) in [
            (256, 4096, 4088),   // K below 4096 on 128 x 128 tiles: not measured
            (1024, 2048, 65536), // 128 tiles: more than half the SMs
            (4096, 4096, 65536), // many waves
            (1024, 8192, 4096),  // 2-CTA clusters: cannot split
            (1000, 1001, 16384), // a Registers default whose twin N refuses
        ] {
            assert_eq!(TileConfig::split_few_tiles_for(GemmShape { m, n, k }, 132, big, 4096), None, "{m}x{n}x{k}");
        }
        // Every pick passes the launch's check, on any SM count.
        let ws = SplitWorkspace { scratch: 1 << 20, scratch_bytes: big, counts: 1 << 30, counts_len: 4096 };
        for sms in [2, 66, 78, 132] {
            for m in [1, 64, 129, 256, 1000, 3000] {
                for n in [8, 1000, 2048, 4096, 8192] {
                    let s = GemmShape { m, n, k: 16384 };
                    if let Some((t, sl)) = TileConfig::split_few_tiles_for(s, sms, big, 4096) {
                        assert!(t == TileConfig::choose_for_split(s, sms) || t == TileConfig::swapped_tma_store(64), "{s:?} {sms}: {t}");
                        let grid = t.split_grid(t.tiles(m, n), sl, sms);
                        (SplitLaunch { slices: sl, workspace: ws }).check(t, s, grid).unwrap_or_else(|e| panic!("{s:?} {sms}: {e}"));
                        assert!(t.tiles(m, n) * sl as u64 <= sms as u64, "{s:?} {sms}: {t} x {sl}");
                    }
                }
            }
        }
    }

    #[test]
    fn split_rule_workspace_is_what_the_pick_needs() {
        let mut picks = 0;
        for sms in [2, 66, 78, 114, 132] {
            for m in [1, 8, 33, 64, 112, 128, 200, 256, 1000] {
                for n in (8..=20_000).step_by(8 * 61) {
                    for k in [4096, 7168, 9216, 14336, 65536] {
                        let s = GemmShape { m, n, k };
                        let unbounded = TileConfig::split_rule_for(s, sms, u64::MAX, u64::MAX);
                        let need = TileConfig::split_rule_workspace(s, sms);
                        // (a pick of 1 slice, a tile unsplit, needs no workspace and is picked without one)
                        assert_eq!(unbounded.is_some_and(|(_, sl)| sl >= 2), need.is_some(), "{s:?} {sms}");
                        if let Some((t, 1)) = unbounded {
                            assert_eq!(TileConfig::split_rule_for(s, sms, 0, 0), Some((t, 1)), "{s:?} {sms}");
                        }
                        if let (Some(pick), Some((bytes, counts))) = (unbounded, need) {
                            picks += 1;
                            assert_eq!(TileConfig::split_rule_for(s, sms, bytes, counts), Some(pick), "{s:?} {sms}: {bytes} bytes, {counts} counts");
                            assert!(bytes > 0 && counts > 0 && counts <= sms as u64, "{s:?} {sms}");
                        }
                    }
                }
            }
        }
        assert!(picks > 500, "{picks}");
    }

    /// The shapes `gpu_gemm`'s `split_rule_default_matches_reference` builds from the SM
    /// count reach their rule on any SM count (that test asserts they split).
    #[test]
    fn the_gpu_tests_split_shapes_reach_their_rule_on_any_sm_count() {
        let (big, counts) = (32 << 20, 4096);
        for sms in [66, 78, 100, 114, 132, 144] {
            let (half, n, row_block_n) = (sms / 2, 64 * (sms + 12), 64 * (sms - sms % 2));
            let shape = |m, n, k| GemmShape { m, n, k };
            for s in [shape(64, n, 7168), shape(8, n, 7168), shape(33, n, 8192), shape(16, n, 4096)] {
                assert!(TileConfig::split_spill_for(s, sms, big, counts).is_some(), "{s:?} on {sms}");
            }
            for s in [shape(128, row_block_n, 9216), shape(117, row_block_n, 14336), shape(120, 144 * half, 9216), shape(128, 112 * half, 9216)] {
                assert!(TileConfig::split_rule_for(s, sms, big, counts) == TileConfig::split_row_block_for(s, sms, big, counts), "{s:?} on {sms}");
                assert!(TileConfig::split_row_block_for(s, sms, big, counts).is_some(), "{s:?} on {sms}");
            }
            for s in [shape(384, 128 * (sms / 6), 14336), shape(256, 128 * (sms / 4), 4096)] {
                assert_eq!(TileConfig::split_rule_for(s, sms, big, counts), TileConfig::split_few_tiles_for(s, sms, big, counts), "{s:?} on {sms}");
                assert!(TileConfig::split_few_tiles_for(s, sms, big, counts).is_some(), "{s:?} on {sms}");
            }
            // (128 x 128 in 2 at three row blocks, K = 14336; at two row blocks the 64 x 128 tile
            // unsplit in their place)
            assert_eq!(TileConfig::split_rule_for(shape(384, 128 * (sms / 6), 14336), sms, big, counts), Some((TileConfig::NARROW_TMA_STORE, 2)), "on {sms}");
            assert_eq!(TileConfig::split_rule_for(shape(256, 128 * (sms / 4), 4096), sms, big, counts), Some((TileConfig::M64_NARROW_TMA_STORE, 1)), "on {sms}");
            // (gemm_kept_workspaces_hold_past_eviction_and_across_threads: 128 x 128 in 2 at M = 384)
            let s = shape(384, 128 * (sms / 6), 8192);
            assert_eq!(TileConfig::split_rule_for(s, sms, big, counts), Some((TileConfig::NARROW_TMA_STORE, 2)), "{s:?} on {sms}");
        }
    }
}
