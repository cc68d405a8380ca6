// Hopper GEMM engine: C[M,N] = A[M,K] * B[N,K]^T (both operands K-major), bf16 in,
// fp32 accumulation, bf16 out. Used by the plain GEMM kernel and by every fused kernel.
//
// Per CTA (one per SM, persistent):
//   warpgroup 0      producer: warp 0 waits for free stages and one elected lane issues
//                    the TMA loads of A/B tiles into a ring of STAGES shared-memory
//                    stages (128B swizzle), signalling `stage_full`.
//   warpgroups 1..2  consumers: each owns 64 rows of the BM=128 tile and issues
//                    m64nBNk16 wgmma from shared memory, releases `stage_empty`, then
//                    runs the epilogue.
// Epilogue (a JIT constant):
//   Registers  consumers store their fragment straight to C (any N), synchronise, and
//              one consumer thread calls the caller's tile hook.
//   TmaStore   consumers write the fragment into a 128B-swizzled staging tile in shared
//              memory and go on with the next tile; warp 1 of warpgroup 0 (the storer)
//              TMA-stores it (N % 8 == 0), waits until the writes are performed and
//              calls the tile hook. Named barriers `c_staged` / `c_free` hand the
//              staging tile back and forth.
// Tiles are visited in a grouped (L2-friendly) order; the CTA with role index i of n
// takes tiles i, i+n, i+2n, ... so callers that publish tiles see them in that order.
// Claimed units (hooks with kClaimsUnits, no cluster, no split): each CTA's producer instead
// claims the next unit of that order from a per-call counter (`hook.unit_counter()`, an
// atomic add), so a CTA that joins late (a fused kernel's push CTA once its pushes are out)
// takes what is left, and CTAs that finish early take more: the units still start in the
// order's sequence across the grid. The producer passes each claimed unit to the consumers
// in a word beside the stage of its first K block (the stage's full barrier orders it), and
// the consumers pass it to the storer beside the staging tile; a unit index past the last
// (the producer's claim after the list ran out) ends both.
// Clusters (CM = 2): the two CTAs of a cluster (consecutive block indices) compute the
// tiles of row blocks 2p and 2p + 1 in the same column block at the same time; each loads
// its own A tile and half of the shared B tile, multicast by TMA into both CTAs' shared
// memory (within the GPU: `.multicast::cluster`, not NVLink multicast), so each B tile
// crosses from L2 once per pair instead of twice. A stage is free again once the
// consumers of both CTAs released it (they arrive on both CTAs' `stage_empty`). With an
// odd number of row blocks the last pair's second tile lies past M: its CTA still loads
// and multiplies (zeros: TMA fills rows past M) so the pair stays in step, and its
// stores are clipped away (a "padding tile"; TileScheduler::total counts it).
// (CUTLASS's sm90 warp-specialized kernels with a 2x1 cluster shape do the same.)
// Clusters along N (CN = 2, operands not swapped, CM = 1): the two CTAs of a cluster
// compute the tiles of column blocks 2q and 2q + 1 in the same row block; each loads its
// own B tile and half of the shared A tile (BM / 2 = 64 rows: whole 1024-byte swizzle
// atoms), multicast into both CTAs (`.multicast::cluster` again), so each A tile crosses
// from L2 once per pair. An odd number of column blocks gets a padding tile past N per
// row block, loaded and multiplied like the padding tiles above, its stores clipped.
// (cuBLAS's one-wave kernels at M = 384-1024 are 128 x 80/96 tiles in such 2-CTA
// clusters, bench/NOTES.md 34.2; 4-CTA clusters lost where not all clusters of the grid
// were co-resident, 21.1.)
// Swapped operands (SWAP_AB): for small M the
// kernel computes C^T = B * A^T, so our N runs along the wgmma's M (BM = 64 rows of B per
// tile) and our M along the wgmma's N (BN = M rounded up to 8, up to 256): one tile
// covers every row of a skinny A instead of padding it to 64 or 128 rows. The host passes
// B's tensor map as `tma_a` and A's as `tma_b`; the epilogue stores the fragment
// transposed, straight to C (Registers) or into a staging tile of one [BN x 64] box
// (TmaStore: the plain GEMM, and the fused kernel's epilogue path). With CM = 2 the two CTAs of a cluster take neighbouring BM-row blocks of B
// and share the A tile by TMA multicast, so A crosses from L2 once per pair. (The "swap
// AB" of small-M CUTLASS kernels; cuBLAS's M=129 kernel on the H200 is a 64 x 136 tile of
// this kind in 2-CTA clusters, bench/NOTES.md 15.)
// Split last wave (hooks with kSplitsLastWave, TMA-store epilogue, no cluster): the R tiles left
// over after the full waves of n CTAs (R < n) are each cut into S slices of the K loop
// (chosen by the host). With R * S <= n the last wave keeps R * S SMs busy for 1/S of a
// tile instead of R SMs for a whole tile; with R * S > n the slices span several shorter
// waves (a CTA may take several), and only the tiles whose slices run in the last of them
// finish at the kernel's end (the rest finish earlier, so less output is left to move
// after the GEMM). Each slice writes its fp32 fragment to a slot
// of the hook's scratch and counts itself in at the tile's counter; the slice that
// arrives last adds every slot in slice order (deterministic), stages the tile and the
// storer handles it like any other; the others stage nothing (Stream-K's fixup, with
// the split confined to the last wave: Osama et al., "Stream-K", PPoPP 2023).
#pragma once
#include "../ptx/common.cuh"
#include "../ptx/wgmma.cuh"
#include "../sync/wait.cuh"

namespace mk {

// ---- named barriers (id 0 is __syncthreads) -------------------------------------------
constexpr u32 kBarrierConsumersTileStored = 1;  // all consumer threads stored their fragment
constexpr u32 kBarrierCStaged = 2;              // staging tile written (consumers -> storer)
constexpr u32 kBarrierCFree = 3;                // staging tile read by TMA (storer -> consumers)

enum class Epilogue : u32 { Registers = 0, TmaStore = 1 };

// Shared memory a kernel whose hook claims units (kClaimsUnits) adds to its launch beyond
// GemmConfig::kSmemBytes: GemmSmem::claimed's STAGES + 1 words (at most 8 stages), after the
// ring's mbarriers (mkernel_kernels::gemm::CLAIM_EXTRA_SMEM_BYTES mirrors it).
constexpr u32 kClaimExtraSmem = 48;
// Whether GemmSmem::claimed's words, after the ring wherever the alignment puts it, lie within
// a launch of kSmemBytes + kClaimExtraSmem bytes.
template <class Cfg>
constexpr bool gemm_claims_fit() {
  return 1023 + Cfg::STAGES * Cfg::kStageBytes + Cfg::kCBytes + 16 * Cfg::STAGES + 4 * (Cfg::STAGES + 1) <=
             Cfg::kSmemBytes + kClaimExtraSmem &&
         Cfg::kSmemBytes + kClaimExtraSmem <= 232448;
}

template <u32 BM_, u32 BN_, u32 BK_, u32 STAGES_, Epilogue EPI_ = Epilogue::Registers, u32 CM_ = 1, bool SWAP_AB_ = false,
          u32 CN_ = 1>
struct GemmConfig {
  static constexpr u32 BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
  // Operands swapped (see the header): tiles are [BM rows of B] x [BN rows of A].
  static constexpr bool kSwapAB = SWAP_AB_;
  // CTAs per cluster along M sharing every B tile through TMA multicast (1: no cluster).
  static constexpr u32 CM = CM_;
  // CTAs per cluster along N sharing every A tile through TMA multicast (1: none).
  static constexpr u32 CN = CN_;
  // CTAs per cluster (one of CM and CN is 1).
  static constexpr u32 kClusterSize = CM_ * CN_;
  static constexpr Epilogue EPI = EPI_;
  static constexpr bool kTmaEpilogue = EPI_ == Epilogue::TmaStore;
  // The tile in C: kCRows rows by kCCols columns (swapped operands: BN rows of C, the
  // rows of A, by BM columns), staged for the TMA-store epilogue as kCBoxes boxes of
  // [kCRows rows x kCBoxCols columns], 1024-byte aligned like the stages: 64-column boxes
  // (128 B per row, 128B swizzle) where kCCols is a multiple of 64, else (the
  // column-fitted tiles) one unswizzled box of the whole tile, rows kCCols * 2 bytes apart.
  static constexpr u32 kCRows = SWAP_AB_ ? BN : BM;
  static constexpr u32 kCCols = SWAP_AB_ ? BM : BN;
  static constexpr bool kCSwizzled = kCCols % 64 == 0;
  static constexpr u32 kCBoxCols = kCSwizzled ? 64 : kCCols;
  static constexpr u32 kCBoxes = kCCols / kCBoxCols;
  static constexpr u32 kCBoxBytes = kCRows * kCBoxCols * 2;
  static constexpr u32 kCBytes = kTmaEpilogue ? BM * BN * 2 : 0;
  // First row and column of C of the tile in row block mb, column block nb of the
  // engine's (A-operand, B-operand) grid.
  __device__ __forceinline__ static u32 c_row0(u32 mb, u32 nb) { return SWAP_AB_ ? nb * BN : mb * BM; }
  __device__ __forceinline__ static u32 c_col0(u32 mb, u32 nb) { return SWAP_AB_ ? mb * BM : nb * BN; }
  static constexpr u32 kConsumerWarpgroups = BM / 64;
  static constexpr u32 kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr u32 kThreads = 128 + kConsumerThreads;
  static constexpr u32 kABytes = BM * BK * 2;
  static constexpr u32 kBBytes = BN * BK * 2;
  static constexpr u32 kStageBytes = kABytes + kBBytes;
  // Rows and bytes of the B tile each CTA of a cluster loads and multicasts: BN / CM rounded
  // up to whole 8-row swizzle atoms. Where BN / CM is not whole atoms (BN = 16j + 8 at CM = 2:
  // 72, 88, 104, 120) the last CTA's share starts BN - kBRowsPerCta rows in and overlaps the
  // one before it by 8 rows, which land twice (the same bytes; load_operand_tile).
  static constexpr u32 kBRowsPerCta = (BN / CM + 7) / 8 * 8;
  static constexpr u32 kBBytesPerCta = kBRowsPerCta * BK * 2;
  // The bytes a stage's full barrier waits for: both operands' shares from every CTA of the
  // cluster (kStageBytes, plus the overlap where B's shares overlap).
  static constexpr u32 kStageTxBytes = kABytes + CM * kBBytesPerCta;
  // Rows and bytes of the A tile each CTA of a cluster along N loads and multicasts.
  static constexpr u32 kARowsPerCta = BM / CN;
  static constexpr u32 kABytesPerCta = kABytes / CN;
  static constexpr u32 kAccRegs = BN / 2;  // fp32 accumulators per consumer thread
  // + 1024 bytes of slack so the ring can be aligned up to the swizzle atom.
  static constexpr u32 kSmemBytes = STAGES * kStageBytes + kCBytes + 2 * STAGES * 8 + 1024;
  static constexpr u32 kProducerRegs = 40;
  static constexpr u32 kConsumerRegs = 232;

  // ---- template checks ----
  static_assert(BK * 2 == 128, "BK must be 64 bf16: one 128-byte swizzle atom per row (K-major descriptors)");
  static_assert(BM == 64 || BM == 128, "BM is one or two consumer warpgroups of 64 rows (wgmma M = 64)");
  static_assert(BN % 8 == 0 && BN >= 8 && BN <= 256,
                "BN is a multiple of 8 up to 256 (the wgmma N; the JIT adds the wrapper for widths other than 128 and 256)");
  static_assert(STAGES >= 2 && STAGES <= 8, "2..8 pipeline stages");
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "stage buffers must stay 1024-byte aligned (128B swizzle)");
  static_assert(kSmemBytes <= 232448, "sm_90 allows at most 227 KiB of shared memory per block");
  static_assert(kProducerRegs * 128 + kConsumerRegs * kConsumerThreads <= 65536, "register file is 64K per SM");
  static_assert(kAccRegs + 64 <= kConsumerRegs, "accumulators must fit the consumer register budget");
  static_assert(!kTmaEpilogue || (kCCols % kCBoxCols == 0 && kCRows <= 256 && (kCSwizzled || !SWAP_AB_)),
                "the staging tile is whole 64-column boxes of at most 256 rows (or, operands not swapped, one box of the tile)");
  static_assert(CM == 1 || CM == 2, "clusters of 1 or 2 CTAs along M");
  static_assert(kBBytesPerCta % 1024 == 0 && (BN - kBRowsPerCta) % 8 == 0 && CM * kBRowsPerCta <= BN + 8,
                "each CTA's part of B starts on a 1024-byte swizzle atom (the shares overlap by at most one atom)");
  static_assert(CN == 1 || CN == 2, "clusters of 1 or 2 CTAs along N (4-CTA clusters lost in run 174, bench/NOTES.md 21.1)");
  static_assert(CN == 1 || (CM == 1 && !SWAP_AB_), "clusters along N: operands not swapped, no cluster along M");
  static_assert(kABytesPerCta % 1024 == 0, "each CTA's part of A starts on a 1024-byte swizzle atom");
};

// Grouped tile order: GROUP m-tiles sweep all n-tiles before moving on, so concurrently
// running CTAs share A rows and B columns in L2.
// With clusters of cm CTAs along M, the order is over groups of cm row blocks ("pairs"):
// tile t is member t % cm of pair t / cm, so the CTAs i, i + 1 of a cluster (i even,
// stride even) take the two tiles of one pair. `total` then counts cm tiles per pair,
// padding tiles past the last row block included (the host's TileConfig::tiles agrees).
// With clusters of cn CTAs along N (cm = 1) likewise over groups of cn column blocks:
// tile t is column block cn * (its group) + t % cn, and `total` counts padding tiles
// past the last column block.
struct TileScheduler {
  u32 num_m, num_n, cm, cn, num_pm, num_pn, total, group_m;
  // Row-block pairs the order is rotated by (0: none): pair p of the order is pair
  // (p + rot_pm) % num_pm of C, so the first tiles are those of a chosen row block (a hook
  // with kRankOrder: order_by_shards, set by gemm_run).
  u32 rot_pm;
  // Row blocks (pairs) per raster group: 8, or fewer with use_equal_groups or a rank-ordered
  // schedule's shard of 4-7 pairs (order_by_shards).
  static constexpr u32 kMaxGroup = 8;
  __device__ TileScheduler(u32 m, u32 n, u32 bm, u32 bn, u32 cm_ = 1, u32 cn_ = 1)
      : num_m((m + bm - 1) / bm), num_n((n + bn - 1) / bn), cm(cm_), cn(cn_), num_pm((num_m + cm_ - 1) / cm_),
        num_pn((num_n + cn_ - 1) / cn_), total(num_pm * cm_ * num_pn * cn_), group_m(kMaxGroup), rot_pm(0) {}
  // The fewest raster groups of at most kMaxGroup row blocks, each ceil(row blocks / groups)
  // but the last, which takes what is left (9 row blocks: 5 + 4, not 8 + 1; 12: 6 + 6; 17:
  // 6 + 6 + 5; 19: 7 + 7 + 5; from 57 a short last group again: 8 x 7 + 1; a split into sizes
  // differing by one needs a second group size and a branch in coords, which cost every
  // kernel registers unless the scheduler becomes a template: bench/NOTES.md 39.6). In a
  // one-wave grid every tile runs at once and the groups only decide which CTA (so which
  // SM) takes which tile; with groups of 8,
  // a lone last group (the ragged row block at M = 1088) or an uneven one made some column
  // blocks' or the last row block's CTAs finish up to 40% after the rest (per-CTA spans,
  // runs 309-310, bench/NOTES.md 39.2). gemm_run takes them from kEqualGroupsMinK: runs
  // 311-312 had them 3-24% faster on 6 of 16 shapes at K >= 7168 and even on the rest, but
  // 1-2% slower on 4 of 9 at K = 2048-5120 (the K loop too short for the CTAs to drift).
  static constexpr u32 kEqualGroupsMinK = 7168;
  __device__ __forceinline__ void use_equal_groups() {
    const u32 groups = (num_pm + kMaxGroup - 1) / kMaxGroup;
    group_m = groups == 0 ? kMaxGroup : (num_pm + groups - 1) / groups;
  }
  // A rank-ordered schedule (hooks with kRankOrder: an all-gather's, a reduce-scatter's):
  // the order starts at the first pair (of pair_rows rows) wholly at or after row
  // `first_row` (none: pair 0) and wraps. The order goes down a group's row blocks column
  // by column, so with groups of 8 and a shard of 4 pairs (M = 1024 at 2 ranks) every wave
  // held every rank's rows (an all-gather's first wave waited for the peers' rows: run
  // 415). So the raster groups are a shard's pairs where they are 4 to kMaxGroup, or the
  // largest group of 4 to kMaxGroup pairs that divides a longer shard (12: 6, 10: 5;
  // helper-101): no group holds two ranks' rows. Else (shards of 1-3 pairs, or 9, 11, 13)
  // groups of kMaxGroup as the plain GEMM's: each group reads all of B once, so groups of
  // 1-3 pairs would read it 3-8 times at small M (4 or 8 ranks). (first_row <= M < 2^31,
  // pair_rows <= 512: no overflow.)
  __device__ __forceinline__ void order_by_shards(u32 first_row, u32 shard_rows, u32 pair_rows) {
    const u32 r = (first_row + pair_rows - 1) / pair_rows;
    rot_pm = r < num_pm ? r : 0;
    const u32 g = shard_rows / pair_rows;
    group_m = kMaxGroup;
    if (g >= 4 && g <= kMaxGroup) {
      group_m = g;
    } else if (g > kMaxGroup) {
      for (u32 d = kMaxGroup; d >= 4; --d) {
        if (g % d == 0) {
          group_m = d;
          break;
        }
      }
    }
  }
  // A tile's id that every rank's order agrees on (row-major over the padded grid of
  // tiles, below `total`): the flags of a rank-ordered reduce-scatter are indexed by it,
  // where the ranks' orders differ.
  __device__ __forceinline__ u32 tile_id(u32 mb, u32 nb) const { return mb * (num_pn * cn) + nb; }
  __device__ __forceinline__ void coords(u32 t, u32& mb, u32& nb) const {
    const u32 size = cm * cn;
    const u32 member = t % size, pair = t / size;
    const u32 per_group = group_m * num_pn;
    const u32 g = pair / per_group;
    const u32 first_m = g * group_m;
    const u32 gm = min(num_pm - first_m, group_m);
    const u32 r = pair - g * per_group;
    u32 pm = first_m + r % gm;
    if (rot_pm != 0) pm = pm + rot_pm < num_pm ? pm + rot_pm : pm + rot_pm - num_pm;
    mb = pm * cm + member % cm;
    nb = (r / gm) * cn + member % cn;
  }
};

// Units of work: whole tiles [0, full), then `splits` K-slices of each remaining tile.
// Unit u of a CTA with index i of n: u = i, i+n, ...; the slices come after every whole
// tile: one per CTA at most where R * splits <= n, several where it is larger.
struct WorkUnits {
  u32 full;    // tiles of the full waves (whole tiles; every tile when splits == 1)
  u32 splits;  // K-slices per remaining tile (1: none)
  u32 total;   // full + (tiles - full) * splits
  // `splits` as asked, unless nothing is left over or there are more slices than K
  // blocks: then 1. The host asks only for what fits (FusedConfig::check_split: the
  // slices' fp32 slots within the scratch).
  __device__ WorkUnits(u32 tiles, u32 n, u32 k_blocks, u32 asked) {
    const u32 f = tiles / n * n, rest = tiles - f;
    const bool fits = asked > 1 && rest != 0 && asked <= k_blocks;
    splits = fits ? asked : 1;
    full = fits ? f : tiles;
    total = fits ? f + rest * asked : tiles;
  }
  __device__ __forceinline__ bool is_slice(u32 u) const { return u >= full; }
  // Which of the split-skip words (see split_fixup) unit u of the CTA whose units are
  // first, first + stride, ... uses: they alternate, so a CTA's next slice never writes
  // the word the storer may still be reading for this one.
  __device__ __forceinline__ static u32 skip_word(u32 u, u32 first, u32 stride) { return ((u - first) / stride) & 1u; }
  __device__ __forceinline__ u32 tile_of(u32 u) const { return u < full ? u : full + (u - full) / splits; }
  // Tile, slice index and K-block range [kb0, kb1) of unit u.
  __device__ __forceinline__ void unit(u32 u, u32 k_blocks, u32& tile, u32& slice, u32& kb0, u32& kb1) const {
    if (u < full) {
      tile = u, slice = 0, kb0 = 0, kb1 = k_blocks;
      return;
    }
    const u32 v = u - full;
    tile = full + v / splits, slice = v % splits;
    kb0 = (u32)((u64)slice * k_blocks / splits);
    kb1 = (u32)((u64)(slice + 1) * k_blocks / splits);
  }
};

// Shared-memory ring and its mbarriers, carved out of dynamic shared memory.
template <class Cfg>
struct GemmSmem {
  u8* base;
  u8* c_staging;     // TMA-store epilogue only
  u64* stage_full;   // TMA bytes of a stage have landed
  u64* stage_empty;  // every consumer warpgroup finished reading a stage
  __device__ explicit GemmSmem(u8* raw) {
    base = (u8*)(((u64)raw + 1023) & ~(u64)1023);
    c_staging = base + Cfg::STAGES * Cfg::kStageBytes;
    stage_full = (u64*)(c_staging + Cfg::kCBytes);
    stage_empty = stage_full + Cfg::STAGES;
  }
  // Claimed units (hooks with kClaimsUnits; the launch adds kClaimExtraSmem bytes):
  // claimed()[s], the unit whose first K block is in stage s; claimed()[STAGES], the unit in
  // the staging tile (TMA-store epilogue).
  __device__ __forceinline__ u32* claimed() const { return reinterpret_cast<u32*>(stage_empty + Cfg::STAGES); }
  __device__ __forceinline__ u8* a(u32 s) const { return base + s * Cfg::kStageBytes; }
  __device__ __forceinline__ u8* b(u32 s) const { return base + s * Cfg::kStageBytes + Cfg::kABytes; }
  // One thread, before the CTA-wide barrier that precedes any use.
  __device__ void init() const {
    for (u32 s = 0; s < Cfg::STAGES; ++s) {
      mbar_init(&stage_full[s], 1);
      mbar_init(&stage_empty[s], Cfg::kConsumerWarpgroups * Cfg::kClusterSize);  // every CTA of the cluster
    }
    fence_mbarrier_init();
  }
};

// wgmma shared-memory descriptor for a K-major tile whose rows are 128 bytes with the
// 128B swizzle (what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B): 8-row core-matrix
// groups 1024 bytes apart (stride byte offset); leading byte offset unused.
__device__ __forceinline__ u64 make_kmajor_sw128_desc(const void* smem_ptr) {
  const u64 addr = smem_u32(smem_ptr);
  u64 desc = (addr & 0x3FFFF) >> 4;
  desc |= (u64)1 << 16;             // leading byte offset (ignored for swizzled K-major)
  desc |= (u64)(1024 >> 4) << 32;   // stride byte offset
  desc |= (u64)1 << 62;             // layout: 128B swizzle
  return desc;
}

template <u32 BN>
__device__ __forceinline__ void wgmma_tile_k16(float (&acc)[BN / 2], u64 da, u64 db, u32 scale_d);
template <>
__device__ __forceinline__ void wgmma_tile_k16<128>(float (&acc)[64], u64 da, u64 db, u32 scale_d) {
  wgmma_m64n128k16_bf16(acc, da, db, scale_d);
}
template <>
__device__ __forceinline__ void wgmma_tile_k16<256>(float (&acc)[128], u64 da, u64 db, u32 scale_d) {
  wgmma_m64n256k16_bf16(acc, da, db, scale_d);
}

// A consumer warpgroup is done with a stage: one arrival on its `stage_empty` in every
// CTA of the cluster (their producers multicast into this CTA's copy of the stage).
template <class Cfg>
__device__ __forceinline__ void release_stage(u64* bar) {
  if constexpr (Cfg::kClusterSize == 1) {
    mbar_arrive(bar);
  } else {
#pragma unroll
    for (u32 c = 0; c < Cfg::kClusterSize; ++c) mbar_arrive_cluster(bar, c);
  }
}

// Before the first and after the last use of the ring: a CTA barrier, or with a cluster
// a cluster barrier (every thread of both CTAs), so no CTA multicasts into or arrives on
// barriers of a CTA that has not initialised them yet or has already exited.
template <class Cfg>
__device__ __forceinline__ void gemm_sync() {
  if constexpr (Cfg::kClusterSize == 1) __syncthreads(); else cluster_sync();
}

// ---- the last row block of a ragged M ------------------------------------------------
// First row of A (and of the accumulator) of row block mb. With kShift (the hook's
// kShiftsLastRowBlock) on an unswapped tile, the last row block of M > BM rows with M % BM != 0
// reads rows M - BM .. M - 1 instead of mb * BM .. mb * BM + BM - 1, so its A box lies
// inside A; its first mb * BM - (M - BM) accumulator rows repeat the row block before it
// and are neither staged nor stored (stage_fragment_bf16's `skip`, store_fragment_bf16's
// `row_lo`). Why: a box mostly out of bounds made a one-wave grid of narrow tiles up to
// 27% slower (128 x 88 at 321 x 3536 x 8192, 65 of 128 rows in the last block: 0.0544 ms,
// 0.0398-0.0424 shifted; bench/NOTES.md 40.1), as its CTAs ran out of step with the CTAs
// that read the same B tiles (L2 merged fewer of their requests: 37.3).
template <class Cfg, bool kShift>
__device__ __forceinline__ u32 a_row0(u32 mb, u32 m) {
  const u32 r = mb * Cfg::BM;
  if constexpr (kShift && !Cfg::kSwapAB) {
    if (m > Cfg::BM && r < m && m - r < Cfg::BM) return m - Cfg::BM;
  }
  return r;
}

// ---- producer: one warp ---------------------------------------------------------------
// One operand's K block (columns k0.., rows row0..) into this CTA's stage buffer `dst`.
// kCtas == 1: the whole tile. kCtas > 1 (a cluster sharing the operand: A along N, B along
// M): this CTA loads its kRowsPerCta-row share, multicast to every CTA of the cluster, so
// the whole kTileRows-row tile lands in each, the others' shares sent by them. Share c starts
// c * kRowsPerCta rows in, the last at kTileRows - kRowsPerCta where the shares are rounded up
// to whole swizzle atoms (GemmConfig::kBRowsPerCta): it then rewrites the rows it overlaps
// with the same bytes, and the full barrier waits for both (GemmConfig::kStageTxBytes).
template <u32 kCtas, u32 kRowsPerCta, u32 kBytesPerCta, u32 kTileRows>
__device__ __forceinline__ void load_operand_tile(const TmaDescriptor* tma, u64* full, u8* dst, u32 k0, u32 row0) {
  if constexpr (kCtas == 1) {
    tma_load_2d(tma, full, dst, (i32)k0, (i32)row0);
  } else {
    static_assert(kCtas * kRowsPerCta >= kTileRows && kRowsPerCta <= kTileRows, "the shares cover the tile");
    const u32 me = cluster_cta_rank();
    const u32 first = me * kRowsPerCta < kTileRows - kRowsPerCta ? me * kRowsPerCta : kTileRows - kRowsPerCta;
    tma_load_2d_multicast(tma, full, dst + first * (kBytesPerCta / kRowsPerCta), (i32)k0, (i32)(row0 + first),
                          (u16)((1u << kCtas) - 1));
  }
}

// Every lane runs the loop and waits on the empty barrier; one elected lane arms the full
// barrier and issues the loads. (One thread alone issued them from per-thread registers:
// ~70 dependent instructions a K block, the bound of the narrow tiles: bench/NOTES.md 36.3.)
// A hook with kGathersA picks, per unit, where its A rows come from: `hook.a_operand(a_row,
// map)` (every lane of the producer warp; it may wait, bounded, until the rows have
// arrived) returns the row coordinate in the map it sets (an all-gather's: the caller's
// own shard, or the gathered A the peers push into). A hook with kGroupsB (a grouped GEMM:
// each row block has its own B, stacked along B's rows) gives, after a_operand, the first
// row of the unit's B in tma_b: `hook.b_row_base()` (an MoE dispatch's expert times N).
// With kClaimsUnits the units are claimed (claim_unit) instead of first_unit, + stride, ..;
// each one's index goes into claimed[stage] of its first K block's stage, and once the list
// runs out a unit index past it goes into the next stage with an arrival and no bytes.
template <class Hook>
__device__ __forceinline__ u32 claim_unit(Hook& hook) {
  u32 u = 0;
  if (lane_id() == 0) u = atomicAdd(hook.unit_counter(), 1u);
  return __shfl_sync(0xffffffffu, u, 0);
}
// The unit after u of a role's list: claimed, or u + stride.
template <bool kClaims, class Hook>
__device__ __forceinline__ u32 next_unit(Hook& hook, u32 u, u32 stride) {
  if constexpr (kClaims) {
    return claim_unit(hook);
  } else {
    return u + stride;
  }
}
// The consumers' next claimed unit: the word beside the stage that holds its first K block.
template <class Cfg>
__device__ __forceinline__ u32 consumer_unit(const GemmSmem<Cfg>& sm, u32 stage, u32 phase, u64 timeout_ns) {
  mbar_wait(&sm.stage_full[stage], phase, timeout_ns);
  return *reinterpret_cast<volatile const u32*>(sm.claimed() + stage);
}
// The storer's next claimed unit: the word beside the staging tile, once it is staged.
template <class Cfg>
__device__ __forceinline__ u32 storer_unit(const GemmSmem<Cfg>& sm) {
  named_barrier_sync(kBarrierCStaged, Cfg::kConsumerThreads + 32);
  return *reinterpret_cast<volatile const u32*>(sm.claimed() + Cfg::STAGES);
}

template <class Cfg, bool kShift, class Hook>
__device__ void gemm_producer(const TmaDescriptor* tma_a, const TmaDescriptor* tma_b, const GemmSmem<Cfg>& sm,
                              const TileScheduler& sched, const WorkUnits& units, u32 first_unit, u32 stride,
                              u32 k_blocks, u32 m, u64 timeout_ns, Hook& hook) {
  constexpr bool kClaims = Hook::kClaimsUnits;
  u32 stage = 0, phase = 0;
  for (u32 u = kClaims ? next_unit<kClaims>(hook, 0, 0) : first_unit; u < units.total;
       u = kClaims ? next_unit<kClaims>(hook, u, stride) : u + stride) {
    u32 t, slice, kb0, kb1, mb, nb;
    units.unit(u, k_blocks, t, slice, kb0, kb1);
    sched.coords(t, mb, nb);
    const TmaDescriptor* map_a = tma_a;
    u32 a_row = a_row0<Cfg, kShift>(mb, m);
    if constexpr (Hook::kGathersA) a_row = hook.a_operand(a_row, map_a);
    u32 b_row0 = 0;
    if constexpr (Hook::kGroupsB) {
      static_assert(Hook::kGathersA && Cfg::CM == 1 && !Cfg::kSwapAB, "a grouped B: no cluster sharing B along M, unswapped");
      b_row0 = hook.b_row_base();
    }
    for (u32 kb = kb0; kb < kb1; ++kb) {
      mbar_wait(&sm.stage_empty[stage], phase ^ 1, timeout_ns);
      if (elect_one_sync()) {
        // (the unit, before the arrival that releases it with the stage)
        if (kClaims && kb == kb0) sm.claimed()[stage] = u;
        // (with a cluster: the whole shared tile, B's along M or A's along N, lands here, each
        // CTA's share sent by it, the shares overlapping by 8 rows where BN / CM is not whole
        // swizzle atoms: kStageTxBytes counts both)
        mbar_arrive_expect_tx(&sm.stage_full[stage], Cfg::kStageTxBytes);
        load_operand_tile<Cfg::CN, Cfg::kARowsPerCta, Cfg::kABytesPerCta, Cfg::BM>(map_a, &sm.stage_full[stage], sm.a(stage),
                                                                                   kb * Cfg::BK, a_row);
        load_operand_tile<Cfg::CM, Cfg::kBRowsPerCta, Cfg::kBBytesPerCta, Cfg::BN>(tma_b, &sm.stage_full[stage], sm.b(stage),
                                                                                   kb * Cfg::BK, b_row0 + nb * Cfg::BN);
      }
      __syncwarp();
      if (++stage == Cfg::STAGES) { stage = 0; phase ^= 1; }
    }
  }
  if constexpr (kClaims) {
    mbar_wait(&sm.stage_empty[stage], phase ^ 1, timeout_ns);
    if (elect_one_sync()) {
      sm.claimed()[stage] = units.total;  // (the end)
      mbar_arrive(&sm.stage_full[stage]);
    }
    __syncwarp();
  }
}

// ---- epilogue: fragment -> row-major bf16 C, bounds-checked --------------------------
// Thread t of a consumer warpgroup holds rows 16*(t/32) + (t%32)/4 + {0, 8} and columns
// 8*j + 2*(t%4) + {0, 1} of its 64-row half (see ptx/wgmma.cuh).
// Rows below `row_lo` are not stored (a shifted last row block's repeats: a_row0).
template <class Cfg>
__device__ __forceinline__ void store_fragment_bf16(const float (&acc)[Cfg::kAccRegs], u16* c, u32 ldc, u32 m,
                                                    u32 n, u32 row0, u32 col0, u32 tid_in_wg, u32 row_lo) {
  const u32 warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const bool paired = (ldc % 2) == 0;
#pragma unroll
  for (u32 h = 0; h < 2; ++h) {
    const u32 row = row0 + warp * 16 + lane / 4 + 8 * h;
    if (row >= m || row < row_lo) continue;
    u16* crow = c + (u64)row * ldc;
#pragma unroll
    for (u32 j = 0; j < Cfg::BN / 8; ++j) {
      const u32 col = col0 + 8 * j + 2 * (lane % 4);
      const float x0 = acc[4 * j + 2 * h], x1 = acc[4 * j + 2 * h + 1];
      if (paired && col + 1 < n) {
        *reinterpret_cast<u32*>(crow + col) = pack_bf16x2(x0, x1);
      } else {
        if (col < n) crow[col] = f32_to_bf16(x0);
        if (col + 1 < n) crow[col + 1] = f32_to_bf16(x1);
      }
    }
  }
}

// Swapped operands: the fragment holds C^T (its rows are columns of C, its columns rows
// of C). `rows_t` = N and `cols_t` = M bound the fragment's rows and columns; element
// (r, c) of the fragment goes to C[c * ldc + r]. Lanes l and l ^ 4 hold neighbouring
// columns of C, so each lane trades one value with its neighbour quad to store bf16 pairs:
// lanes with l % 8 < 4 keep column pairs (r, r + 1) of C row c, the others of row c + 1.
template <class Cfg>
__device__ __forceinline__ void store_fragment_bf16_transposed(const float (&acc)[Cfg::kAccRegs], u16* c, u32 ldc,
                                                               u32 rows_t, u32 cols_t, u32 row0, u32 col0,
                                                               u32 tid_in_wg) {
  const u32 warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const bool upper = (lane / 4) % 2 != 0;  // holds the odd fragment row of the pair
  const bool paired = (ldc % 2) == 0 && (row0 % 2) == 0;
#pragma unroll
  for (u32 h = 0; h < 2; ++h) {
    // Fragment rows r (this lane) and r ^ 1 (lane ^ 4): an even-odd pair of C columns.
    const u32 r = row0 + warp * 16 + (lane / 4) + 8 * h;
    const u32 r_even = r & ~1u;
#pragma unroll
    for (u32 j = 0; j < Cfg::BN / 8; ++j) {
      const float x0 = acc[4 * j + 2 * h], x1 = acc[4 * j + 2 * h + 1];  // fragment columns c0, c0 + 1
      // The even-row lane sends its column c0 + 1 value and keeps c0; the odd-row lane
      // sends c0 and keeps c0 + 1. Then each has (even row, odd row) of one C row.
      const float give = upper ? x0 : x1;
      const float got = __shfl_xor_sync(0xffffffffu, give, 4);
      const float keep = upper ? x1 : x0;
      const u32 crow = col0 + 8 * j + 2 * (lane % 4) + (upper ? 1 : 0);
      const float lo = upper ? got : keep, hi = upper ? keep : got;  // C[crow][r_even], C[crow][r_even + 1]
      if (crow >= cols_t) continue;
      u16* dst = c + (u64)crow * ldc + r_even;
      if (paired && r_even + 1 < rows_t) {
        *reinterpret_cast<u32*>(dst) = pack_bf16x2(lo, hi);
      } else {
        if (r_even < rows_t) dst[0] = f32_to_bf16(lo);
        if (r_even + 1 < rows_t) dst[1] = f32_to_bf16(hi);
      }
    }
  }
}

// ---- TMA-store epilogue ---------------------------------------------------------------
// Writes the fragment into the staging tile: element (r, c) of the tile lives in box
// c / 64, row r, 16-byte chunk ((c % 64) / 8) ^ (r % 8) (the 128B swizzle TMA reads).
// A warp's 32 four-byte writes land in 32 different banks. (Without the swizzle, BN % 64
// != 0: row-major, rows BN * 2 bytes apart.) Accumulator row r goes to tile row r - skip;
// rows below `skip` are not staged (a shifted last row block's repeats: a_row0), and the
// tile's last `skip` rows, left as they were, lie past M, where the TMA store drops them.
template <class Cfg>
__device__ __forceinline__ void stage_fragment_bf16(const float (&acc)[Cfg::kAccRegs], u8* staging, u32 row0,
                                                    u32 tid_in_wg, u32 skip) {
  const u32 warp = tid_in_wg / 32, lane = tid_in_wg % 32;
#pragma unroll
  for (u32 h = 0; h < 2; ++h) {
    const u32 acc_row = row0 + warp * 16 + lane / 4 + 8 * h;
    if (acc_row < skip) continue;
    const u32 r = acc_row - skip;
#pragma unroll
    for (u32 j = 0; j < Cfg::BN / 8; ++j) {
      const u32 box = j / 8, chunk = j % 8;
      // (unswizzled: element (r, c) at r * BN * 2 + c * 2; a warp's writes meet in pairs)
      u8* dst = Cfg::kCSwizzled ? staging + box * Cfg::kCBoxBytes + r * 128 + ((chunk ^ (r % 8)) * 16) + (lane % 4) * 4
                                : staging + r * (Cfg::BN * 2) + j * 16 + (lane % 4) * 4;
      *reinterpret_cast<u32*>(dst) = pack_bf16x2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
  }
}

// Swapped operands: the fragment (rows: columns of C, columns: rows of C) into the staging
// tile, element (r, c) of the tile in C in box c / 64, row r, 16-byte chunk ((c % 64) / 8) ^ (r % 8).
// Lanes l and l ^ 4 trade a value so each writes a bf16 pair (as the transposed store).
// (With BM = 128, two consumer warpgroups, the tile's 128 columns of C are two boxes.)
template <class Cfg>
__device__ __forceinline__ void stage_fragment_bf16_transposed(const float (&acc)[Cfg::kAccRegs], u8* staging,
                                                               u32 col0, u32 tid_in_wg) {
  const u32 warp = tid_in_wg / 32, lane = tid_in_wg % 32;
  const bool upper = (lane / 4) % 2 != 0;
#pragma unroll
  for (u32 h = 0; h < 2; ++h) {
    const u32 c_even = (col0 + warp * 16 + (lane / 4) + 8 * h) & ~1u;  // column of C in the tile
#pragma unroll
    for (u32 j = 0; j < Cfg::BN / 8; ++j) {
      const float x0 = acc[4 * j + 2 * h], x1 = acc[4 * j + 2 * h + 1];
      const float got = __shfl_xor_sync(0xffffffffu, upper ? x0 : x1, 4);
      const float keep = upper ? x1 : x0;
      const u32 r = 8 * j + 2 * (lane % 4) + (upper ? 1 : 0);  // row of C in the tile
      const float lo = upper ? got : keep, hi = upper ? keep : got;
      const u32 box = c_even / Cfg::kCBoxCols, c = c_even % Cfg::kCBoxCols;
      u8* dst = staging + box * Cfg::kCBoxBytes + r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
      *reinterpret_cast<u32*>(dst) = pack_bf16x2(lo, hi);
    }
  }
}

// The storer warp (warp 1 of warpgroup 0): for every tile of this CTA, wait until the
// consumers staged it, TMA-store it, hand the staging tile back once TMA has read it,
// then wait until the writes are performed and call `on_tile_stored(t)` (lane 0).
// `tma_c_copy` (nullptr: none) is a second C of the same format the tile is also stored to.
// A hook with kUsesStaging keeps the staging tile a little longer: while the TMA store
// runs, `on_tile_stored.copy_out(t, staging, mb, nb, more, pace_div)` (every lane;
// `more`: pace the copy over 1 / pace_div of the pacing window, see the loop) may read it; once the
// writes are performed and `on_tile_stored(t)` ran, `on_tile_stored.reuse_staging(t,
// staging, mb, nb)` (lane 0) may use it as a TMA buffer, and must return only once TMA
// no longer reads it; the consumers get it back after that (they wait only if their
// next tile is done before it).
// A hook with kKeepsSomeRows (a reduce-scatter's: EpilogueAllReduce) maps rows of C to rows
// of `tma_c` (and `tma_c_copy`): `on_tile_stored.c_store_row(row0, row)` (lane 0) gives the
// row coordinate of the tile whose first row of C is row0, or false: nothing of it is stored
// by TMA; the hook stores what such a tile has of `tma_c`'s rows by hand (a row coordinate
// below 0, which TMA does not take), finishing in `on_tile_stored.store_head_rows(t,
// staging, mb, nb)` (every lane, after reuse_staging). The others store at row0 (the same
// code as before kKeepsSomeRows existed).
// A slice that did not arrive last stages nothing: the consumers say so in the hook's
// shared split-skip word of the unit before c_staged, and the storer skips the unit,
// handing the (unused) staging tile straight back if the CTA has more units.
template <class Cfg, class OnTileStored>
__device__ void gemm_storer(const TmaDescriptor* tma_c, const TmaDescriptor* tma_c_copy, const GemmSmem<Cfg>& sm,
                            const TileScheduler& sched, const WorkUnits& units, u32 first_unit, u32 stride,
                            OnTileStored& on_tile_stored) {
  constexpr u32 kThreads = Cfg::kConsumerThreads + 32;
  const bool leader = lane_id() == 0;
  if (leader) {
    tma_prefetch_descriptor(tma_c);
    if (tma_c_copy != nullptr) tma_prefetch_descriptor(tma_c_copy);
  }
  constexpr bool kClaims = OnTileStored::kClaimsUnits;
  static_assert(!kClaims || !OnTileStored::kUsesStaging, "claimed units: no copy-out pacing by the CTA's next unit");
  // The staging tile starts free (a CTA without tiles has no consumer to release; with
  // claimed units every CTA's consumers take it once more, to say the list ended).
  if (kClaims || first_unit < units.total) named_barrier_arrive(kBarrierCFree, kThreads);
  // (claimed units: the consumers' unit beside the staging tile, past the last at the end)
  for (u32 u = kClaims ? storer_unit<Cfg>(sm) : first_unit; u < units.total; u = kClaims ? storer_unit<Cfg>(sm) : u + stride) {
    const u32 order_t = units.tile_of(u);
    u32 mb, nb;
    sched.coords(order_t, mb, nb);
    // (the tile as the hook names it to peers: with kRankOrder the ranks' orders differ)
    const u32 t = OnTileStored::kRankOrder ? sched.tile_id(mb, nb) : order_t;
    if (!kClaims) named_barrier_sync(kBarrierCStaged, kThreads);
    if constexpr (OnTileStored::kSplitsLastWave) {
      if (units.is_slice(u) &&
          reinterpret_cast<volatile u32*>(on_tile_stored.split_skip)[WorkUnits::skip_word(u, first_unit, stride)] != 0) {
        if (u + stride < units.total) named_barrier_arrive(kBarrierCFree, kThreads);
        continue;
      }
    }
    // Paced while more work follows on this SM, or, with a split last wave, on any SM:
    // every whole tile (an unpaced burst of the last full wave's copies from all SMs
    // slowed the slices' loads ~5x in run 29, M=2049). A slice's tile goes at full speed.
    // A whole tile whose CTA computes a slice next is paced over the slice's time (1 /
    // splits of a tile), so the staging tile is free when the slice is summed (run 33:
    // paced over a whole tile, the slices staged ~25 us after they were summed).
    const bool more = units.splits > 1 ? !units.is_slice(u) : u + stride < units.total;
    const u32 pace_div = (units.splits > 1 && u + stride < units.total && units.is_slice(u + stride)) ? units.splits : 1;
    if (leader) {
      if constexpr (!OnTileStored::kKeepsSomeRows) {
#pragma unroll
        for (u32 b = 0; b < Cfg::kCBoxes; ++b) {
          const i32 col = (i32)(Cfg::c_col0(mb, nb) + b * Cfg::kCBoxCols), row = (i32)Cfg::c_row0(mb, nb);
          tma_store_2d(tma_c, sm.c_staging + b * Cfg::kCBoxBytes, col, row);
          if (tma_c_copy != nullptr) tma_store_2d(tma_c_copy, sm.c_staging + b * Cfg::kCBoxBytes, col, row);
        }
      } else {
        // (the hook says where the tile's first row lands in tma_c, or that nothing of it does)
        i32 row;
        if (on_tile_stored.c_store_row(Cfg::c_row0(mb, nb), row)) {
#pragma unroll
          for (u32 b = 0; b < Cfg::kCBoxes; ++b) {
            const i32 col = (i32)(Cfg::c_col0(mb, nb) + b * Cfg::kCBoxCols);
            tma_store_2d(tma_c, sm.c_staging + b * Cfg::kCBoxBytes, col, row);
            if (tma_c_copy != nullptr) tma_store_2d(tma_c_copy, sm.c_staging + b * Cfg::kCBoxBytes, col, row);
          }
        }
      }
      bulk_commit_group();
      if constexpr (!OnTileStored::kUsesStaging) bulk_wait_group_read<0>();
    }
    if constexpr (OnTileStored::kUsesStaging) {
      __syncwarp();
      on_tile_stored.copy_out(t, sm.c_staging, mb, nb, more, pace_div);
      fence_proxy_async_shared();  // the lanes' generic reads -> later TMA writes of the tile
      __syncwarp();
      if (leader) {
        bulk_wait_group<0>();
        fence_proxy_async_global();
        on_tile_stored(t);
        on_tile_stored.reuse_staging(t, sm.c_staging, mb, nb);
      }
      if constexpr (OnTileStored::kKeepsSomeRows) {
        // (every lane: the rows c_store_row gave no TMA row for, by hand)
        __syncwarp();
        on_tile_stored.store_head_rows(t, sm.c_staging, mb, nb);
      }
    }
    __syncwarp();
    // The last tile's staging buffer is not needed again: no arrival nobody waits for. (With
    // claimed units the consumers take it once more, for the end or a next unit.)
    if (kClaims || u + stride < units.total) named_barrier_arrive(kBarrierCFree, kThreads);
    if (leader && !OnTileStored::kUsesStaging) {
      bulk_wait_group<0>();
      fence_proxy_async_global();
      on_tile_stored(t);
    }
    __syncwarp();  // reconverge before the next tile's aligned barrier
  }
}

// ---- split last wave: a slice's fixup -------------------------------------------------
// Called by every consumer thread (ctid: 0..kConsumerThreads) of a CTA whose unit is
// slice `slice` of `splits` of remaining tile r (r = tile - units.full; `skip_word`: the
// unit's split-skip word, WorkUnits::skip_word): writes the fp32
// fragment to the slice's slot (slot r * splits + slice of hook.split_slot; the same
// thread of every slice holds the same elements), counts the slice in at the tile's
// counter (hook.split_arrive: one thread, release/acquire at GPU scope around the
// count; the named barrier orders the other threads' slot writes before it and its
// result before their reads), and if it arrived last, replaces `acc` with the sum of
// all slices in slice order, ((s0 + s1) + s2) + ..., the same bits whichever slice
// arrives last: its own term comes from `acc` (fp32 addition commutes exactly), the
// others' from their slots. Returns whether it arrived last (it stages the tile).
// Thread 0 reports the slice's progress through hook.split_event(0 computed / 1 counted
// / 2 counted last, tile) (event traces).
// Slot layout: float4 i of consumer thread ctid at i * kConsumerThreads + ctid, so a
// warp's accesses are 512 contiguous bytes (run 31: a thread-contiguous layout, 32 lines
// per warp access, took ~9 us to write and ~16 us to sum two 128 KiB slots per SM).
template <class Cfg, class Hook>
__device__ __forceinline__ bool split_fixup(float (&acc)[Cfg::kAccRegs], u32 tile, u32 r, u32 splits, u32 slice,
                                            u32 skip_word, u32 ctid, Hook& hook) {
  static_assert(Cfg::kConsumerThreads * Cfg::kAccRegs == Cfg::BM * Cfg::BN, "a slot is one fp32 tile");
  static_assert(Cfg::kAccRegs % 4 == 0, "float4 slot accesses");
  constexpr u32 kT = Cfg::kConsumerThreads;
  constexpr u64 kSlotF4 = (u64)Cfg::BM * Cfg::BN / 4;  // float4s per slot
  float4* const slots = reinterpret_cast<float4*>(hook.split_slot(r * splits)) + ctid;  // slice 0; the others follow
  if (ctid == 0) hook.split_event(0, tile);
  {
    float4* const mine = slots + slice * kSlotF4;
#pragma unroll
    for (u32 i = 0; i < Cfg::kAccRegs / 4; ++i)
      __stcg(mine + i * kT, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
  }
  named_barrier_sync(kBarrierConsumersTileStored, Cfg::kConsumerThreads);
  volatile u32* const flag = hook.split_skip + skip_word;
  if (ctid == 0) {
    const bool last = hook.split_arrive(r, splits);
    *flag = last ? 0u : 1u;
    hook.split_event(last ? 2 : 1, tile);
  }
  named_barrier_sync(kBarrierConsumersTileStored, Cfg::kConsumerThreads);
  if (*flag != 0) return false;
  // Groups of kGroup float4: a group's loads from one slot are all in flight at once (one
  // L2 round trip per other slice and group). Before this slice's turn the running sum
  // of the earlier slices is in `pre`; at its turn it moves into `acc` (pre + own).
  // The last group may be partial (17 float4s per thread at 64 x 136: 8 + 8 + 1; one
  // float4 per round trip cost ~6.5 us per sum there, run 138): `e < kLen` folds at
  // compile time, the loops being unrolled. Tiles of at most 32 accumulators per thread
  // (64 or 128 rows by at most 64) load kBatch slices' groups per round trip: the same sums in the same order
  // (the bits do not depend on it), up to kInFlight float4s per thread at once: 3 slices at
  // 64 x 64 (8 float4s each; 4 spills registers there; 7 slices in 3 round trips instead
  // of 6, bench/NOTES.md 23.6), 16 (kMaxBatch, the most slices the rules make) at 128 x 8
  // (run 224: 0.2-1.0 us less a call on small-N and small-M splits, 128 x 8 x 9216 in 16
  // slices 0.0103 -> 0.0093 ms); 32 in flight at 2 or 4 float4s a slice (16 or 32 columns,
  // 64 or 128 rows): 16 slices a trip at 16 columns, 8 at 32 (16 slices in two trips, three
  // before; run 230: 0.2-0.6 us less a call); 24 columns keep 24 (8 a trip; 32 spilled more
  // in the fused 64 x 24 tile); unswapped tiles of 33-64 accumulators per thread (64 x 128,
  // 128 x 128, the 128-row column tiles of 72-120 columns) two slices' groups a trip, 16
  // float4s in flight (with NVRTC 13.0 no new spill on the split GEMM kernels, 16 bytes more
  // in the fused 64 x 128 epilogue-path one; the swapped ones spilled 32-128 bytes that way,
  // so they keep one; runs 386-387: 1-6% faster on 13 of 21 split shapes, even at 64 x 128,
  // bench/NOTES.md 47.1); the others keep one slice per round trip (more spill registers).
  constexpr u32 kF4 = Cfg::kAccRegs / 4;
  constexpr u32 kGroup = 8;
  constexpr u32 kInFlight = (kF4 == 2 || kF4 == 4) ? 32 : 24;
  constexpr u32 kMaxBatch = 16;
  constexpr u32 kGroupLen = kF4 < kGroup ? kF4 : kGroup;
  constexpr u32 kFit = kInFlight / kGroupLen;
  constexpr u32 kBatch = Cfg::kAccRegs <= 32 ? (kFit < kMaxBatch ? kFit : kMaxBatch) : (Cfg::kAccRegs <= 64 && !Cfg::kSwapAB ? 2 : 1);
#pragma unroll
  for (u32 g = 0; g < kF4; g += kGroup) {
    const u32 kLen = kF4 - g < kGroup ? kF4 - g : kGroup;
    float4 pre[kGroupLen];
    // Slice j's group `x` (j != slice) into the sums; then this slice's turn.
    auto fold = [&](u32 j, const float4 (&x)[kGroupLen]) {
#pragma unroll
      for (u32 e = 0; e < kGroupLen; ++e) {
        if (e >= kLen) break;
        if (j > slice) {
          float* const a = &acc[4 * (g + e)];
          a[0] += x[e].x, a[1] += x[e].y, a[2] += x[e].z, a[3] += x[e].w;
        } else if (j == 0) {
          pre[e] = x[e];
        } else {
          pre[e].x += x[e].x, pre[e].y += x[e].y, pre[e].z += x[e].z, pre[e].w += x[e].w;
        }
      }
    };
    auto fold_own = [&]() {
      if (slice == 0) return;
#pragma unroll
      for (u32 e = 0; e < kGroupLen; ++e) {
        if (e >= kLen) break;
        float* const a = &acc[4 * (g + e)];
        a[0] = pre[e].x + a[0], a[1] = pre[e].y + a[1], a[2] = pre[e].z + a[2], a[3] = pre[e].w + a[3];
      }
    };
    auto load = [&](u32 j, float4 (&x)[kGroupLen]) {
      const float4* const src = slots + j * kSlotF4 + (u64)g * kT;
#pragma unroll
      for (u32 e = 0; e < kGroupLen; ++e) {
        if (e >= kLen) break;
        x[e] = __ldcg(src + e * kT);
      }
    };
    if constexpr (kBatch == 1) {
#pragma unroll 1
      for (u32 j = 0; j < splits; ++j) {
        if (j == slice) {
          fold_own();
          continue;
        }
        float4 x[kGroupLen];
        load(j, x);
        fold(j, x);
      }
    } else {
#pragma unroll 1
      for (u32 j0 = 0; j0 < splits; j0 += kBatch) {
        float4 x[kBatch][kGroupLen];
#pragma unroll
        for (u32 b = 0; b < kBatch; ++b)
          if (j0 + b < splits && j0 + b != slice) load(j0 + b, x[b]);
#pragma unroll
        for (u32 b = 0; b < kBatch; ++b) {
          if (j0 + b >= splits) break;
          if (j0 + b == slice) fold_own(); else fold(j0 + b, x[b]);
        }
      }
    }
  }
  return true;
}

// ---- consumers: the two math warpgroups ----------------------------------------------
// Registers epilogue: once every consumer thread stored its fragment of tile t,
// `on_tile_stored(t)` is called by one consumer thread (if the hook publishes).
template <class Cfg, class OnTileStored>
__device__ void gemm_consumer(const GemmSmem<Cfg>& sm, const TileScheduler& sched, const WorkUnits& units,
                              u32 first_unit, u32 stride, u32 k_blocks, u16* c, u32 ldc, u32 m, u32 n, u32 wg,
                              u32 tid_in_wg, u64 timeout_ns, OnTileStored& on_tile_stored) {
  constexpr bool kShift = OnTileStored::kShiftsLastRowBlock;
  float acc[Cfg::kAccRegs];
#pragma unroll
  for (u32 i = 0; i < Cfg::kAccRegs; ++i) acc[i] = 0.0f;
  u32 stage = 0, phase = 0;
  // Stage 0's descriptors; stage s adds s * kStageBytes / 16 to the address field (bits
  // 0-13, 16-byte units): the ring ends below 256 KiB, so the field never carries.
  // (`wg` is warp-uniform, read through a shuffle, so these stay in uniform registers and
  // each K block issues its wgmmas without rebuilding them.)
  const u64 da0 = make_kmajor_sw128_desc(sm.a(0) + wg * 64 * 128);
  const u64 db0 = make_kmajor_sw128_desc(sm.b(0));
  constexpr u64 kStageDescStep = Cfg::kStageBytes >> 4;
  static_assert(Cfg::kStageBytes % 16 == 0, "stages start on 16-byte boundaries");
  constexpr bool kClaims = OnTileStored::kClaimsUnits;
  // (claimed units: the producer's unit beside its first K block's stage, past the last at the
  // end; waiting again for that stage in the K loop returns at once)
  for (u32 u = kClaims ? consumer_unit<Cfg>(sm, stage, phase, timeout_ns) : first_unit; u < units.total;
       u = kClaims ? consumer_unit<Cfg>(sm, stage, phase, timeout_ns) : u + stride) {
    u32 t, slice, kb0, kb1, mb, nb;
    units.unit(u, k_blocks, t, slice, kb0, kb1);
    sched.coords(t, mb, nb);
    u32 prev_stage = 0;
    for (u32 kb = kb0; kb < kb1; ++kb) {
      mbar_wait(&sm.stage_full[stage], phase, timeout_ns);
      const u64 da = da0 + stage * kStageDescStep;
      const u64 db = db0 + stage * kStageDescStep;
      fence_accumulators(acc);
      // (every K block: without it ptxas inserts the same warpgroup.arrive itself, C7519)
      wgmma_fence();
#pragma unroll
      for (u32 kk = 0; kk < Cfg::BK / 16; ++kk) {
        // +2 per k16 step: 16 bf16 = 32 bytes, in units of 16 bytes.
        wgmma_tile_k16<Cfg::BN>(acc, da + 2 * kk, db + 2 * kk, (kb != kb0 || kk != 0) ? 1u : 0u);
      }
      wgmma_commit();
      fence_accumulators(acc);
      if (kb > kb0) {
        wgmma_wait<1>();  // the previous stage's wgmmas are complete
        fence_accumulators(acc);
        if (tid_in_wg == 0) release_stage<Cfg>(&sm.stage_empty[prev_stage]);
      }
      prev_stage = stage;
      if (++stage == Cfg::STAGES) { stage = 0; phase ^= 1; }
    }
    wgmma_wait<0>();
    fence_accumulators(acc);
    if (tid_in_wg == 0) release_stage<Cfg>(&sm.stage_empty[prev_stage]);
    if constexpr (Cfg::kTmaEpilogue) {
      bool stages = true;
      if constexpr (OnTileStored::kSplitsLastWave) {
        if (units.is_slice(u))
          // (the tile as the hook names it, for its trace: with kRankOrder, tile_id as the storer's)
          stages = split_fixup<Cfg>(acc, OnTileStored::kRankOrder ? sched.tile_id(mb, nb) : t, t - units.full, units.splits,
                                    slice, WorkUnits::skip_word(u, first_unit, stride), wg * 128 + tid_in_wg, on_tile_stored);
      }
      named_barrier_sync(kBarrierCFree, Cfg::kConsumerThreads + 32);
      if (kClaims && wg == 0 && tid_in_wg == 0) sm.claimed()[Cfg::STAGES] = u;  // (the storer's unit)
      if (stages) {
        if constexpr (Cfg::kSwapAB) {
          stage_fragment_bf16_transposed<Cfg>(acc, sm.c_staging, wg * 64, tid_in_wg);
        } else {
          stage_fragment_bf16<Cfg>(acc, sm.c_staging, wg * 64, tid_in_wg, mb * Cfg::BM - a_row0<Cfg, kShift>(mb, m));
        }
        fence_proxy_async_shared();  // generic writes -> the storer's TMA reads
      }
      named_barrier_arrive(kBarrierCStaged, Cfg::kConsumerThreads + 32);
    } else {
      if constexpr (Cfg::kSwapAB) {
        store_fragment_bf16_transposed<Cfg>(acc, c, ldc, m, n, mb * Cfg::BM + wg * 64, nb * Cfg::BN, tid_in_wg);
      } else {
        store_fragment_bf16<Cfg>(acc, c, ldc, m, n, a_row0<Cfg, kShift>(mb, m) + wg * 64, nb * Cfg::BN, tid_in_wg,
                                 kShift ? mb * Cfg::BM : 0u);
      }
      if constexpr (OnTileStored::kPublishes) {
        named_barrier_sync(kBarrierConsumersTileStored, Cfg::kConsumerThreads);
        if (threadIdx.x == 128) on_tile_stored(t);
      }
    }
  }
  if constexpr (kClaims && Cfg::kTmaEpilogue) {
    // (the end, to the storer: in the staging tile's turn, a unit past the last)
    named_barrier_sync(kBarrierCFree, Cfg::kConsumerThreads + 32);
    if (wg == 0 && tid_in_wg == 0) sm.claimed()[Cfg::STAGES] = units.total;
    named_barrier_arrive(kBarrierCStaged, Cfg::kConsumerThreads + 32);
  }
}

// Runs the producer or consumer side of the GEMM for the calling thread. All threads of
// the CTA call it after `sm.init()` and `gemm_sync<Cfg>()`, and call `gemm_sync<Cfg>()`
// again before the CTA exits or reuses the ring. Tiles first_tile, +stride, ... (with a
// cluster: first_tile is the block index and stride is even, so the CTAs of a cluster
// take the two tiles of one pair, along M or N, at every step).
// `tma_c` (box [kCRows, kCBoxCols]: 64 columns with the 128B swizzle, or a column-fitted
// tile's one unswizzled box of the whole tile) is used by the TMA-store epilogue only, as is
// `tma_c_copy` (nullptr: none), a second C in the same format every tile also goes to.
// `split_slices` > 1 splits the last wave (hooks with kSplitsLastWave and the TMA-store
// epilogue only; see WorkUnits). With a hook that claims units (kClaimsUnits) first_tile is
// unused and the CTA takes the units it claims; tile_stride is still the number of CTAs
// that run the GEMM (the one-wave rules).
template <class Cfg, class OnTileStored>
__device__ void gemm_run(const TmaDescriptor* tma_a, const TmaDescriptor* tma_b, const TmaDescriptor* tma_c,
                         const TmaDescriptor* tma_c_copy, const GemmSmem<Cfg>& sm, u16* c, u32 ldc, u32 m, u32 n,
                         u32 k, u32 first_tile, u32 tile_stride, u64 timeout_ns, OnTileStored& on_tile_stored,
                         u32 split_slices = 1) {
  TileScheduler sched(m, n, Cfg::BM, Cfg::BN, Cfg::CM, Cfg::CN);
  // (the plain GEMM's one-wave grids of unclustered, unswapped 128-row tiles from K = 7168,
  // as measured: the 64-row ones ran 1-1.5% slower with them, run 314; the fused kernel's
  // communication CTAs build their own scheduler with groups of 8, so its hooks keep them)
  if constexpr (OnTileStored::kEqualGroupsInOneWave && Cfg::kClusterSize == 1 && !Cfg::kSwapAB && Cfg::BM == 128) {
    if (sched.total <= tile_stride && k >= TileScheduler::kEqualGroupsMinK) sched.use_equal_groups();
  }
  // (an all-gather's: this rank's own row blocks first; a reduce-scatter's: last; see
  // TileScheduler::order_by_shards)
  if constexpr (OnTileStored::kRankOrder) {
    static_assert(!Cfg::kSwapAB, "a rank-ordered schedule orders row blocks of C (a swapped tile's are N's)");
    if (on_tile_stored.orders_by_rank(Cfg::BM * Cfg::CM))
      sched.order_by_shards(on_tile_stored.order_first_row(), on_tile_stored.order_shard_rows(), Cfg::BM * Cfg::CM);
  }
  static_assert(!OnTileStored::kClaimsUnits || (Cfg::kClusterSize == 1 && !OnTileStored::kSplitsLastWave),
                "claimed units: no cluster (a pair's CTAs take their units together) and no split last wave");
  static_assert(!OnTileStored::kClaimsUnits || gemm_claims_fit<Cfg>(),
                "claimed units: the words fit a launch of kSmemBytes + kClaimExtraSmem (which the host must ask for)");
  const u32 k_blocks = (k + Cfg::BK - 1) / Cfg::BK;
  const bool can_split = OnTileStored::kSplitsLastWave && Cfg::kTmaEpilogue && Cfg::kClusterSize == 1;
  const WorkUnits units(sched.total, tile_stride, k_blocks, can_split ? split_slices : 1u);
  // (a shuffle from lane 0 makes it warp-uniform to the compiler: uniform registers)
  const u32 wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
  if (wg == 0) {
    warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    if (threadIdx.x < 32) {
      if (threadIdx.x == 0) {
        tma_prefetch_descriptor(tma_a);
        tma_prefetch_descriptor(tma_b);
      }
      __syncwarp();
      gemm_producer<Cfg, OnTileStored::kShiftsLastRowBlock>(tma_a, tma_b, sm, sched, units, first_tile, tile_stride,
                                                            k_blocks, m, timeout_ns, on_tile_stored);
    } else if (Cfg::kTmaEpilogue && threadIdx.x / 32 == 1) {
      gemm_storer<Cfg>(tma_c, tma_c_copy, sm, sched, units, first_tile, tile_stride, on_tile_stored);
    }
  } else {
    warpgroup_reg_alloc<Cfg::kConsumerRegs>();
    gemm_consumer<Cfg>(sm, sched, units, first_tile, tile_stride, k_blocks, c, ldc, m, n, wg - 1, threadIdx.x % 128,
                       timeout_ns, on_tile_stored);
  }
}

}  // namespace mk
