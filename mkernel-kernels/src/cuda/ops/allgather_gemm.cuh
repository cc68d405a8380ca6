// Fused all-gather + GEMM over the ranks of one node (NVLink peer stores, no multicast).
//
// Tensor-parallel column-parallel layers with sequence-parallel activations: rank r holds
// rows [r S, (r + 1) S) of A (S = M / world, its shard A_r [S, K]) and its own weights B
// [N, K]; every rank needs out = A B^T over all M rows, so A must be gathered first. One
// persistent kernel per GPU does both at once:
//
//   push CTAs (the first num_comm_ctas):  A_r, chunk by chunk (chunk_rows rows), into
//       rank q's gathered A [M, K] at rows r S + .. (16-byte stores over NVLink), then
//       arrived_q[r][chunk] = epoch (a release store into q's inbox); the peers first, a
//       chunk at a time for all of them, so every peer gets chunk 0 before anyone gets 1;
//       a chunk is one CTA's item, so chunks are short (the host's default: ~256 KiB) and a
//       row block's chunks travel in parallel.
//   compute CTAs (the others):  the GEMM engine over all M rows, this rank's own row
//       blocks first (TileScheduler::order_by_shards, in a raster group of their own
//       where a shard is 4-8 row blocks), where the caller's A_r is read directly
//       (no wait, no copy); a row block that meets other ranks' rows is read from the
//       gathered A once its producer warp has seen every chunk it needs arrive (the lanes
//       poll the chunks at once, one timeout in all: GatherA::a_operand).
//
//   rank 0:  [push A_0 -> gathered_1, own head rows -> gathered_0]   [GEMM: own rows | rank 1's rows]
//   rank 1:  [push A_1 -> gathered_0, own head rows -> gathered_1]   [GEMM: own rows | rank 0's rows]
//
// Push CTAs take the low block indices, which the hardware dispatches first: the compute
// CTAs wait for them (the reverse of the all-reduce's order). A rank's own rows reach its
// own gathered A only where a row block meets another rank's rows too (a "head" block
// where S is not a multiple of BM, or a ragged last block): only those are read from there.
//
// End: every CTA counts itself out; the last tells every peer "done reading my gathered
// A" and waits for theirs (exit_handshake), so no rank pushes into a peer still reading
// the previous call's rows. Epochs, skipped calls after a timeout and the epoch hand-over
// are the all-reduce's (sync/wait.cuh). See also the design notes (../shared/DESIGN.md section 3: AllGather+GEMM; its
// 128-row chunks are ~256 KiB here by default: mkernel_kernels::allgather_gemm::default_chunk_rows).
#pragma once
#include "../params.cuh"
#include "../sync/wait.cuh"
#include "../gemm/sm90_gemm.cuh"

namespace mk {

// Sleep between polls of an arrival flag (the producer warp; its CTA's consumers wait for it).
constexpr u32 kGatherBackoffNs = 64;
// 16-byte vectors in flight per thread in a push.
constexpr u32 kPushUnroll = 4;

// Rows [lo, hi) of rank `rank`'s shard that the gathered A must hold on its own rank too:
// those in row blocks (of `bm` rows, within M) that are not wholly this rank's. Two ranges:
// the shard's head block and its tail block (either may be empty).
struct OwnGatheredRows {
  u32 head_lo, head_hi, tail_lo, tail_hi;
  __device__ __forceinline__ OwnGatheredRows(u32 lo, u32 hi, u32 bm) {
    const u32 first_full = (lo + bm - 1) / bm * bm;  // first row of a block wholly inside [lo, ..)
    const u32 last_full = hi / bm * bm;               // end of the blocks wholly inside [.., hi)
    if (first_full >= last_full) {                    // no block wholly inside: every row
      head_lo = lo, head_hi = hi, tail_lo = hi, tail_hi = hi;
    } else {
      head_lo = lo, head_hi = first_full, tail_lo = last_full, tail_hi = hi;
    }
  }
  __device__ __forceinline__ bool meets(u32 r0, u32 r1) const {
    return (r0 < head_hi && r1 > head_lo) || (r0 < tail_hi && r1 > tail_lo);
  }
};

// One chunk (rows r0.. of this rank's shard, `rows` of them) into rank q's gathered A, then
// its arrival flag in q's inbox. Every thread of the CTA.
template <u32 WORLD>
__device__ __forceinline__ void push_chunk(const AllGatherParams& p, const WaitContext& ctx, u32 c, u32 q) {
  const u32 s = p.shard_rows, r0 = c * p.chunk_rows, rows = min(p.chunk_rows, s - r0);
  const u64 row_vecs = (u64)p.k / 8;  // 16-byte vectors per row (K % 8 == 0: the host's rule)
  const uint4* src = reinterpret_cast<const uint4*>(p.a_local) + (u64)r0 * row_vecs;
  uint4* dst = reinterpret_cast<uint4*>(p.gathered[q]) + ((u64)p.rank * s + r0) * row_vecs;
  const u64 n = (u64)rows * row_vecs;
  for (u64 j = threadIdx.x; j < n; j += (u64)blockDim.x * kPushUnroll) {
    uint4 v[kPushUnroll];
#pragma unroll
    for (u32 e = 0; e < kPushUnroll; ++e) {
      const u64 i = j + (u64)e * blockDim.x;
      if (i < n) v[e] = __ldg(src + i);
    }
#pragma unroll
    for (u32 e = 0; e < kPushUnroll; ++e) {
      const u64 i = j + (u64)e * blockDim.x;
      if (i < n) dst[i] = v[e];
    }
  }
  fence_acq_rel_sys();  // this thread's stores, before the barrier and thread 0's release
  __syncthreads();
  if (threadIdx.x == 0) st_release_sys(arrival_flag(p.arrived[q], p.flag_stride, p.rank, c), ctx.epoch);
}

// Push role: this CTA's share of the items, dealt round-robin over the push CTAs: first every
// (chunk, peer), chunk-major (every peer gets chunk 0 before anyone gets chunk 1), then the
// chunks this rank's own gathered A needs (OwnGatheredRows), continuing the deal where the
// peers' items ended (so no CTA is dealt only items it skips: run 410).
template <class Cfg, u32 WORLD>
__device__ void push_shard(const AllGatherParams& p, const WaitContext& ctx, u32 idx, u32 n_push) {
  const u32 s = p.shard_rows, ch = p.chunk_rows;
  const u32 chunks = (s - 1) / ch + 1;  // (s >= 1; no overflow for any ch >= 1)
  const u32 peer_items = chunks * (WORLD - 1);
  for (u32 item = idx; item < peer_items; item += n_push) {
    push_chunk<WORLD>(p, ctx, item / (WORLD - 1), (p.rank + 1 + item % (WORLD - 1)) % WORLD);
  }
  const u32 lo = p.rank * s;
  const OwnGatheredRows own(lo, lo + s, Cfg::BM);
  u32 dealt = peer_items;  // items dealt so far: the next goes to CTA dealt % n_push
  for (u32 c = 0; c < chunks; ++c) {
    const u32 r0 = c * ch, rows = min(ch, s - r0);
    if (!own.meets(lo + r0, lo + r0 + rows)) continue;
    if (dealt++ % n_push == idx) push_chunk<WORLD>(p, ctx, c, p.rank);
  }
}

// Hook of the compute CTAs (the engine's OnTileStored): no per-tile work after a store;
// the producer asks a_operand where each unit's A rows come from.
template <class Cfg, u32 WORLD>
struct GatherA {
  static constexpr bool kPublishes = false;
  static constexpr bool kUsesStaging = false;
  static constexpr bool kEqualGroupsInOneWave = false;  // (the rotated order: TileScheduler::rot_pm)
  static constexpr bool kShiftsLastRowBlock = false;    // (row blocks are the gathered A's)
  static constexpr bool kSplitsLastWave = false;
  // (tiles dealt, not claimed: with claimed tiles the push CTAs joined the GEMM, 8 + 58 CTAs
  // computing a rank on a shared H100 instead of 58, and the fused calls were 6-8% slower at
  // M = 1024, where the waves stayed as many, and within 2% elsewhere: run 451, bench/NOTES.md 66)
  static constexpr bool kClaimsUnits = false;
  static constexpr bool kKeepsSomeRows = false;
  static constexpr bool kGathersA = true;
  static constexpr bool kGroupsB = false;  // (gemm_producer: one B for every row block)
  static constexpr bool kRankOrder = true;  // (this rank's own rows first: order_first_row)
  const AllGatherParams* p;
  const WaitContext* ctx;
  bool failed;       // (warp-uniform) a wait timed out or the call aborted
  u32 seen_blocks;   // lane L, bit b: row block 32 L + b of the gathered A has been seen whole

  __device__ __forceinline__ void operator()(u32) const {}

  // The order (gemm_run, TileScheduler::order_by_shards) starts at this rank's own rows, in
  // raster groups of a shard's pairs (run 416: at M = 1024 on 2 ranks, groups of 8 held the
  // peer's rows in every wave, the first one waiting for them from the start).
  __device__ __forceinline__ bool orders_by_rank(u32) const { return true; }
  __device__ __forceinline__ u32 order_first_row() const { return p->rank * p->shard_rows; }
  __device__ __forceinline__ u32 order_shard_rows() const { return p->shard_rows; }

  // Every lane of the producer warp, per unit: the row coordinate of the unit's A rows
  // (a_row.. of the gathered order) in the map it sets. A row block wholly within this rank's
  // shard is read from the caller's A_r; any other from the gathered A, once the warp has
  // seen the arrival flag of every chunk of every rank the rows meet (after a timeout, or
  // another CTA's, it stops waiting: the host reports the error, `out` is not a result).
  // The lanes poll the chunks in parallel (a row block of 16-row chunks: one round trip,
  // not 8 in a row: run 412), and a row block seen whole is not waited for again in this
  // call (the first 1024 row blocks; a CTA meets a row block once per column tile it takes
  // there, each wait an exposed stall of the pipeline). Each lane's waits together take at
  // most one timeout, so the consumers' mbarrier waits (two timeouts and a margin) never
  // trap first.
  __device__ __forceinline__ u32 a_operand(u32 a_row, const TmaDescriptor*& map) {
    const u32 s = p->shard_rows, lo = p->rank * s;
    if (a_row >= lo && a_row + Cfg::BM <= lo + s) {
      map = &p->tma_a_local;
      return a_row - lo;
    }
    map = &p->tma_a_gathered;
    if (failed) return a_row;
    static_assert(!kShiftsLastRowBlock, "seen_blocks keys a unit by a_row / BM: row blocks must not be shifted");
    const u32 block = a_row / Cfg::BM, lane = lane_id();
    const bool recorded = block < 32 * 32;
    const u32 word = __shfl_sync(0xffffffffu, seen_blocks, recorded ? block / 32 : 0);
    if (recorded && ((word >> (block % 32)) & 1u)) return a_row;  // (fenced at its first visit)
    const u32 end = min(a_row + Cfg::BM, p->m), ch = p->chunk_rows;
    const u64 start = globaltimer_ns();
    WaitContext left = *ctx;
    bool ok = true;
    for (u32 q = a_row / s; ok && q < WORLD && q * s < end; ++q) {
      const u32 r0 = max(a_row, q * s) - q * s, r1 = min(end, (q + 1) * s) - q * s;
      for (u32 c = r0 / ch + lane; ok && (u64)c * ch < r1; c += 32) {
        const u64 spent = globaltimer_ns() - start;
        left.timeout_ns = spent < ctx->timeout_ns ? ctx->timeout_ns - spent : 1;
        ok = wait_flag_eq(arrival_flag(p->arrived[p->rank], p->flag_stride, q, c), ctx->epoch, left,
                          WaitOp::PeerChunkArrived, q, c, kGatherBackoffNs);
      }
    }
    failed = !__all_sync(0xffffffffu, ok);
    __syncwarp();                // (the memory-ordering barrier: each lane's acquire, then the TMA lane's loads;
                                 // vote.sync promises no ordering: helper-100)
    fence_proxy_async_global();  // the rows' generic stores (acquired by the lanes) -> this warp's TMA loads
    if (!failed && recorded && lane == block / 32) seen_blocks |= 1u << (block % 32);
    return a_row;
  }
};

template <class Cfg, u32 WORLD>
__device__ __forceinline__ void allgather_gemm_kernel(const AllGatherParams& p) {
  static_assert(WORLD >= 2 && WORLD <= MKERNEL_MAX_RANKS, "an all-gather needs 2..MKERNEL_MAX_RANKS ranks");
  static_assert(!Cfg::kSwapAB, "swapped-operand tiles: A's rows are the engine's columns (not gathered by row block)");
  const WaitContext ctx = begin_call(reinterpret_cast<ControlBlock*>(p.control), p.status, p.timeout_ns, p.rank);
  const bool skipped = skipped_call(ctx);
  if (blockIdx.x < p.num_comm_ctas) {
    if (!skipped) push_shard<Cfg, WORLD>(p, ctx, blockIdx.x, p.num_comm_ctas);
  } else {
    extern __shared__ u8 smem_raw[];
    const GemmSmem<Cfg> sm(smem_raw);
    if (threadIdx.x == 0) sm.init();
    gemm_sync<Cfg>();
    if (!skipped) {
      GatherA<Cfg, WORLD> hook{&p, &ctx, false, 0u};
      // The consumers' and the storer's mbarrier waits trap on expiry ("only a bug"), but
      // here they wait behind the producer's arrival waits (up to timeout_ns, then noticed a
      // few tens of us late): their bound is two inter-GPU timeouts and a margin, so a
      // missing peer is reported as PeerChunkArrived instead of trapping.
      const u64 slack_ns = 10000000ull;
      const u64 intra_timeout_ns = p.timeout_ns > (~0ull - slack_ns) / 2 ? ~0ull : 2 * p.timeout_ns + slack_ns;
      // (the compute CTAs' role index and stride skip the push CTAs: with clusters the host
      // gives a whole number of clusters to each role, so pairs stay aligned)
      gemm_run<Cfg>(&p.tma_a_gathered, &p.tma_b, &p.tma_c, nullptr, sm, reinterpret_cast<u16*>(p.out), p.n, p.m, p.n, p.k,
                    blockIdx.x - p.num_comm_ctas, gridDim.x - p.num_comm_ctas, intra_timeout_ns, hook);
    }
    gemm_sync<Cfg>();  // (with a cluster: the other CTA's last arrivals on this one's ring)
  }
  // Every CTA: its pushes are released, its reads of the gathered A are done.
  __syncthreads();
  if (threadIdx.x == 0) {
    exit_handshake<WORLD>(p.exit_flags, p.rank, ctx, gridDim.x, skipped);
    end_call(ctx);
  }
}

}  // namespace mk
