// Fused GEMM + all-reduce over the ranks of one node (NVLink peer access, no multicast).
//
// Every rank r computes a partial P_r = A_r * B_r^T (A_r: its K shard) into its
// symmetric `partial` buffer and must end with out = sum_q P_q. One persistent kernel
// per GPU; the num_comm_ctas CTAs before the tail CTAs (see below) communicate, the ones
// before them run the GEMM engine and, for every finished tile t, push ready[t] = epoch
// into every rank's inbox (remote stores, so consumers poll local memory only). On the
// one-shot and reduce paths (and push, which runs reduce's code), num_tail_ctas CTAs
// launched after them join the communication as compute CTAs free their SMs.
//
// Epilogue path (world 2, no communication CTAs): every CTA computes, and its storer warp
// all-reduces the CTA's own tiles while the next one is computed:
//
//   rank 0:  tile t -> out_0[t] (TMA)  -> copy to workspace_1[t] -> ready_1[t] = epoch
//            wait ready_0[t] -> TMA-load workspace_0[t] -> TMA reduce-add into out_0[t]
//   rank 1:  the same with 0 and 1 swapped
//
// One-shot path (world <= 2): each rank pulls the whole tile from every rank.
//
//   rank 0:  compute tiles ---> partial_0 --+--> comm CTA r0: out_0[t] = P_0[t] + P_1[t]
//   rank 1:  compute tiles ---> partial_1 --+--> comm CTA r1: out_1[t] = P_0[t] + P_1[t]
//            (each comm CTA: wait ready[0][t], ready[1][t] in its inbox; TMA-load both
//             quarter tiles into a ring of shared-memory stages; sum; TMA-store out)
//
// Two-phase paths (world > 2): each BM x BN tile is cut into WORLD row slices; rank r
// owns slice r of every tile:
//
//            tile t of P_0        tile t of P_1              out (every rank)
//          +-------------+      +-------------+           +-------------+
//  slice 0 | r0 reduces  |  +   | read by r0  |  -> r0 ->  | sum, slice 0| <- r1 pulls
//          +-------------+      +-------------+           +-------------+
//  slice 1 | read by r1  |  +   | r1 reduces  |  -> r1 ->  | sum, slice 1| <- r0 pulls
//          +-------------+      +-------------+           +-------------+
//
//    1. reduce:  wait ready[q][t] for all q; slice r <- sum_q partial_q[slice r];
//                write it to out_r and back into partial_r[slice r]; push reduced[r][t]
//    2. gather (one tile later): wait reduced[q][t] for q != r; out_r[slice q] <- partial_q
//
// End: the last comm CTA tells every peer "done reading you" (exit_q[r] = epoch) and
// waits for every peer's exit flag, so no rank reuses `partial` while a peer still reads
// it. All remote data traffic is loads (but on the host's Push path, where the epilogue
// TMA-stores each partial tile into the peer's workspace); `out` can be any device buffer.
//
// Reduce-scatter (kScatter, its own kernels; p.scatter_rows = S; host: Collective::ReduceScatter): rank r keeps rows
// [r S, (r + 1) S) of the sum, and `out` is just those rows. On the epilogue path a tile goes
// to the peer only where it meets the peer's rows and is added only where it meets this
// rank's (EpilogueAllReduce); on the two-phase load/store paths each rank sums its rows of
// every tile straight into `out` and nothing is gathered (reduce_own_slice). Other paths
// are refused by the host. On the epilogue path, where a rank's rows are whole pairs of
// row blocks, each rank computes the next rank's rows first and its own last
// (EpilogueAllReduce::kRankOrder): the copies cross the link while the own rows are still
// to come, and the last wave has nothing to send (run 419: 2-6% faster with both ranks on
// one H100 at M = 2048-4096). Strictly so where a rank's rows are 4-8 pairs or a multiple
// of 4-8 (TileScheduler::order_by_shards: every LLM M from 1024 to 16384); with 1-3 or 9,
// 11, 13 pairs a raster group holds both ranks' rows, and some own tiles come earlier.
//
// Epochs: ControlBlock.epoch holds the last completed call; this call runs at epoch+1
// and the last CTA to finish advances it, so calls need no host-side reset and the
// kernel can be captured in a CUDA graph. Every inter-GPU wait is bounded; after a
// timeout, the calls already queued behind it do nothing (see gemm_allreduce_kernel).
#pragma once
#include "../params.cuh"
#include "../sync/wait.cuh"
#include "../gemm/sm90_gemm.cuh"

namespace mk {

enum class Role : u32 { Compute = 0, IntraComm = 1, InterSend = 2, InterRecv = 3 };

// How communication CTAs move data (a JIT constant chosen on the host):
//   TmaOneShot: N % 8 == 0, world <= 2. Quarter-tile TMA boxes through a ring of stages.
//   TmaReduce:  N % 8 == 0, world == 2, TMA-store epilogue. The epilogue stores the own
//               partial tile into `out` too; communication CTAs only pull the peer's
//               quarter tiles and add them into `out` with TMA reduce-add stores (the
//               add happens at L2), so no thread sums anything.
//               The host's Push path runs this code with other tensor maps: the
//               epilogue's first store (tma_c) writes the peer's workspace over NVLink
//               and tma_partial[peer] maps this rank's own workspace, so the NVLink
//               traffic is TMA stores issued as tiles finish and communication CTAs read
//               local memory only.
//   Epilogue:   N % 8 == 0, world == 2, TMA-store epilogue, no communication CTAs: every
//               SM computes. The storer warp of each compute CTA does its own tiles'
//               all-reduce (EpilogueAllReduce): it TMA-stores the tile into `out`, copies
//               it into the peer's workspace (16-byte stores over NVLink), publishes it,
//               then waits for the peer's copy of the same tile in its own workspace,
//               TMA-loads it into the staging tile and TMA-reduce-adds it into `out`.
//               The next tile's mainloop runs meanwhile; nothing is carved out of the
//               GEMM's SMs.
//   Tma:        N % 8 == 0, BM % world == 0. Two-phase with TMA slice boxes.
//   Vec16:      N % 8 == 0. Two-phase, 16-byte loads/stores by every thread.
//   Scalar:     any N. Two-phase, 2-byte loads/stores.
enum class CommPath : u32 { Tma = 0, Vec16 = 1, Scalar = 2, TmaOneShot = 3, TmaReduce = 4, Epilogue = 6 };

constexpr u32 kCommUnroll = 4;  // 16-byte vectors in flight per thread and source (Vec16)

// ---- flag inboxes ----------------------------------------------------------------------
// Rank x's inbox row `from` holds what rank `from` published about each tile.
__device__ __forceinline__ u32* inbox(u64 region, u32 stride, u32 from, u32 tile) {
  return reinterpret_cast<u32*>(region) + (u64)from * stride + tile;
}

// Pushes `epoch` for (this rank, tile) into every rank's inbox. One thread; the data
// it publishes must be visible to it (stores of its own, or of a CTA barrier's peers).
template <u32 WORLD>
__device__ __forceinline__ void publish_to_all(const u64 (&regions)[MKERNEL_MAX_RANKS], u32 stride, u32 rank,
                                               u32 tile, u32 epoch) {
#pragma unroll
  for (u32 q = 0; q < WORLD; ++q) st_release_sys(inbox(regions[q], stride, rank, tile), epoch);
}

// ---- optional event trace (p.trace != 0, e.g. `bench gemm-allreduce --trace`) -----------
// One thread per event; events past the capacity are counted, not stored. Off (one
// branch on a kernel parameter) unless the host passes a buffer.
enum class TraceKind : u32 {
  CtaStart = 1,    // tile: 0 compute CTA, 1 communication CTA, 2 tail CTA
  TileStored = 2,  // compute: tile published
  Claim = 3,       // communication producer: first tile of a claim taken
  ClaimReady = 4,  // ... its flags all seen and fenced
  CommDone = 5,    // communication CTA finished its role; tile: items it moved
  CtaEnd = 6,      // before the epoch hand-over
  PeerAdded = 7,   // compute, Epilogue path: the peer's copy of `tile` added into out
  TileStaged = 8,  // compute, Epilogue path: the consumers staged `tile`; its copy starts
  SliceComputed = 9,  // split last wave: a slice of `tile` finished its K blocks (before its slot write)
  SliceCounted = 10,  // ... counted itself in at the tile's counter, not last
  SliceLast = 11,     // ... counted itself in last: it sums the slots and stages the tile
  CopyIssued = 12,    // Epilogue path: the storer warp issued every store of `tile`'s copy to the peer
  CopyFenced = 13,    // ... and every lane's system-scope fence after them returned
};
__device__ __forceinline__ void trace_event(const AllReduceParams& p, TraceKind kind, u32 tile) {
  if (p.trace == 0) return;
  // The time first: the slot's atomic (contended by every CTA) is not part of the event.
  const u64 t_ns = globaltimer_ns();
  const u32 clock = sm_clock32();
  FusedTraceHeader* h = reinterpret_cast<FusedTraceHeader*>(p.trace);
  const u32 i = atomicAdd(&h->count, 1u);
  if (i >= p.trace_capacity) return;
  FusedTraceEvent* e = reinterpret_cast<FusedTraceEvent*>(p.trace + sizeof(FusedTraceHeader)) + i;
  e->t_ns = t_ns;
  e->sm_clock = clock;
  e->cta = blockIdx.x;
  e->tile = tile;
  e->kind = (u32)kind;
}

// Tile-stored hook of compute CTAs, called by one thread once the whole tile is in the
// partial buffer (see the GEMM engine's epilogues): publish it to all ranks.
template <u32 WORLD>
struct PublishTileReady {
  static constexpr bool kPublishes = true;
  static constexpr bool kUsesStaging = false;
  static constexpr bool kEqualGroupsInOneWave = false;  // TileScheduler::use_equal_groups
  // a_row0 (not measured in the fused call: its last row block reads A as the others do)
  static constexpr bool kShiftsLastRowBlock = false;
  static constexpr bool kSplitsLastWave = false;
  static constexpr bool kClaimsUnits = false;
  static constexpr bool kGathersA = false;  // (gemm_producer: A from tma_a only)
  static constexpr bool kGroupsB = false;  // (gemm_producer: one B for every row block)
  static constexpr bool kRankOrder = false;  // (gemm_run: the plain order; the communication CTAs walk it too)
  static constexpr bool kKeepsSomeRows = false;  // (the epilogue stores the whole partial tile)
  const AllReduceParams* p;
  u32 epoch;
  __device__ __forceinline__ void operator()(u32 tile) const {
    publish_to_all<WORLD>(p->ready, p->flag_stride, p->rank, tile, epoch);
    trace_event(*p, TraceKind::TileStored, tile);
  }
};

// Tile-stored hook of the Epilogue path (world 2, TMA-store tiles; see CommPath). The
// storer warp has issued the TMA store of tile t into `out`; then
//   copy_out(t, ..):   every lane copies the staging tile into the peer's workspace with
//                      16-byte stores over NVLink (undoing the staging tile's 128B
//                      swizzle; a column-fitted tile's one unswizzled box is read row
//                      by row) and fences them. Paced while the CTA has another tile:
//                      spread over ~3/5 of the CTA's last tile time, since every CTA
//                      finishes its tile at the same moment and a burst of remote
//                      writes from all SMs backs up behind the link and slows the TMA
//                      loads of the next tile (bench/NOTES.md 6); a CTA's last tile goes
//                      at full speed (nothing left to slow down), unless the last wave
//                      is split: then every whole tile is paced (NOTES 7.5), a tile
//                      before a slice over the slice's time (pace_div = slices). A
//                      reduce-scatter's head tile: this rank's rows go to `out` here too;
//   operator()(t):     (lane 0, once the store into `out` is performed) publish ready[t]
//                      in the peer's inbox: the tile is in its workspace;
//   reuse_staging(t):  (lane 0) wait for the peer's ready[t] (its copy of tile t is in
//                      this rank's workspace), TMA-load that copy into the staging tile
//                      and TMA-reduce-add it into `out` (the add happens at L2: the bf16
//                      sum of two terms, the same on both ranks); returns once TMA has
//                      read the staging tile (a reduce-scatter's head tile: once the copy
//                      is in the staging tile, unadded; store_head_rows adds it). After a
//                      timeout (or a peer's) it adds nothing: the host reports the failure,
//                      `out` is not a result.
// Reduce-scatter (kScatter; p->scatter_rows = S): rank r keeps rows [r S, (r + 1) S) of the sum,
// and `out` (tma_c_out: [S, N]) holds just those, so a tile's rows land at row0 - r S
// (TMA clips rows past S; the tiles that start above row r S while meeting it, the head
// row block's, would land at a negative row, which TMA faults on: their rows are stored by
// hand: copy_out stores this rank's partial of them, reuse_staging loads the peer's copy,
// store_head_rows adds it). A tile goes to the peer only where it meets the peer's
// rows (copy_out copies those rows alone, and publishes), and is added here only where it
// meets this rank's (reuse_staging waits for the peer's copy of it); a tile within the
// peer's rows is not stored into `out` at all (c_store_row). So each rank's partial crosses
// the link once, half of it each way (an all-reduce: all of it both ways).
// `w_full` is an mbarrier of its own (one arrival + the tile's bytes per use).
// Split last wave (WorkUnits): a slice's fp32 fragment goes to slot v of p->split_scratch
// (BM * BN floats each, v < p->split_slices * remaining tiles); the count of a remaining
// tile r is the u64 r of this rank's own `reduced` inbox (unused on this path), holding
// epoch << 32 | slices counted, so no call needs to reset it (a stale or aborted call's
// value has another epoch); `split_skip` is two shared words (used alternately by a CTA's
// units, WorkUnits::skip_word) the consumers set when their slice did not arrive last.
// Shared memory the Epilogue path adds to the GEMM's: that mbarrier and those words, after
// the ring's (the host launches with Cfg::kSmemBytes + kEpilogueExtraSmem bytes).
constexpr u32 kEpilogueExtraSmem = 16;
// Sleep between polls of the peer's ready flag (a tile takes tens of microseconds).
constexpr u32 kEpilogueBackoffNs = 256;
// Paced copy to the peer (see copy_out): longest sleep between two rounds (sleep pace);
// the part of a tile time the window leaves free, its cap, and how soon after getting the
// staging tile back a staging counts as the consumers having waited for it (clock pace).
constexpr u32 kEpilogueMaxSleepNs = 100000;
constexpr u64 kEpiloguePaceSlackNs = 20000;
constexpr u64 kEpilogueMaxWindowNs = 1000000;
constexpr u32 kEpilogueFreedSlackNs = 3000;
template <class Cfg>
__device__ __forceinline__ u64* epilogue_mbarrier(const GemmSmem<Cfg>& sm) {
  static_assert(Cfg::kSmemBytes + kEpilogueExtraSmem <= 232448, "the epilogue path's mbarrier must fit shared memory");
  // Worst case: GemmSmem aligns its base up by 1023 bytes; the ring's barriers, then this one.
  static_assert(1023 + Cfg::STAGES * Cfg::kStageBytes + Cfg::kCBytes + 16 * Cfg::STAGES + 16 <= Cfg::kSmemBytes + kEpilogueExtraSmem,
                "the epilogue mbarrier and the two split-skip words lie inside the launch's shared memory");
  return sm.stage_empty + Cfg::STAGES;
}

template <class Cfg, bool kScatter>
struct EpilogueAllReduce {
  static constexpr bool kPublishes = true;
  // A reduce-scatter's `out` holds this rank's rows alone (gemm_storer asks c_store_row).
  static constexpr bool kKeepsSomeRows = kScatter;
  static constexpr bool kUsesStaging = true;
  static constexpr bool kEqualGroupsInOneWave = false;  // TileScheduler::use_equal_groups
  // a_row0 (not measured in the fused call: its last row block reads A as the others do)
  static constexpr bool kShiftsLastRowBlock = false;
  static constexpr bool kSplitsLastWave = true;
  static constexpr bool kClaimsUnits = false;
  static constexpr bool kGathersA = false;  // (gemm_producer: A from tma_a only)
  static constexpr bool kGroupsB = false;  // (gemm_producer: one B for every row block)
  // A reduce-scatter's order (gemm_run, TileScheduler::order_by_shards): the next rank's
  // rows first, this rank's own last, so the tiles whose copies cross the link are computed
  // first and the last wave's tiles (this rank's rows) have nothing to send, their peer
  // copies long arrived. Its flags and `tile` arguments are then TileScheduler::tile_id's
  // (the ranks' orders differ). Not with swapped tiles (their row blocks are N's).
  static constexpr bool kRankOrder = kScatter && !Cfg::kSwapAB;
  // 16-byte chunks of the staging tile: kCBoxes boxes of kCRows rows of kBoxRowChunks
  // chunks (8 in a 64-column swizzled box; BN / 8 in a column-fitted tile's one box).
  static constexpr u32 kBoxRowChunks = Cfg::kCBoxCols / 8;
  static_assert(Cfg::kCBoxCols % 8 == 0 && (!Cfg::kCSwizzled || kBoxRowChunks == 8),
                "staging rows are whole 16-byte chunks (8 per swizzled 64-column box row)");
  static constexpr u32 kChunks = Cfg::kCBoxes * Cfg::kCRows * kBoxRowChunks;
  static constexpr u32 kUnroll = 2;
  static_assert(kChunks % (32 * kUnroll) == 0, "whole rounds of the storer warp");
  static constexpr u32 kRounds = kChunks / (32 * kUnroll);
  const AllReduceParams* p;
  const WaitContext* ctx;
  u64* w_full;
  u32* split_skip;
  u32 phase;
  u64 last_staged_ns;  // when the previous tile was staged (at first: the kernel's start)
  // Clock pace only, lane 0's: low clock bits when the staging tile went back to the
  // consumers, and the tile time the window derives from (~0u: none yet).
  u32 freed_lo;
  u32 basis_ns;
  // kScatter: whether the last tile copy_out saw went to the peer (lane 0's copy:
  // operator() publishes it only then). Unused (and optimised away) on an all-reduce.
  bool sent;
  // kScatter, lane 0's: reuse_staging found the peer's copy of the head tile's rows
  // (store_head_rows adds it). Unused on an all-reduce.
  bool head_peer_ready;
  // kRankOrder: whether to order by rank at all: only where a rank's rows are whole pairs
  // of row blocks. A ragged M has a block that holds both ranks' rows, which each rank adds
  // the other's copy of; the orders would put it first on one rank and in the middle on the
  // other (a rotation cannot put it at the same place on both), so one rank's storer would
  // wait there for most of the other's call. Such shapes keep the common order, where both
  // ranks compute it at once. Then where the order starts (the next rank's first row; past
  // M: row 0) and how long a rank's rows are.
  __device__ __forceinline__ bool orders_by_rank(u32 pair_rows) const { return p->scatter_rows % pair_rows == 0; }
  __device__ __forceinline__ u32 order_first_row() const { return (p->rank + 1) * p->scatter_rows; }
  __device__ __forceinline__ u32 order_shard_rows() const { return p->scatter_rows; }
  // kScatter: whether a tile whose first row of C is row0 has rows that rank q keeps.
  // (row0 < M <= 2^31 - 256 and kCRows <= 256: no overflow.)
  __device__ __forceinline__ bool meets_rows_of(u32 row0, u32 q) const {
    const u32 s = p->scatter_rows;
    return row0 < (q + 1) * s && row0 + Cfg::kCRows > q * s;
  }
  // Chunk i (i < kChunks) of the staging tile whose first row and column of C are row0 and
  // col0: chunk j of row r of box b, as stored (a swizzled box row holds columns
  // ((j ^ (r % 8)) * 8 ..) of its box). Its row and column of C, and its byte offset.
  struct StagingChunk {
    u32 row, col, offset;
  };
  __device__ __forceinline__ static StagingChunk staging_chunk(u32 i, u32 row0, u32 col0) {
    const u32 b = i / (Cfg::kCRows * kBoxRowChunks), r = (i / kBoxRowChunks) % Cfg::kCRows, j = i % kBoxRowChunks;
    return {row0 + r, col0 + b * Cfg::kCBoxCols + (Cfg::kCSwizzled ? (j ^ (r % 8)) : j) * 8,
            b * Cfg::kCBoxBytes + r * (Cfg::kCBoxCols * 2) + j * 16};
  }
  // kScatter: whether a tile whose first row of C is row0 starts above this rank's rows and
  // meets them (a head tile: every tile of the row block holding row r S where S is not a
  // multiple of the tile's rows; its rows would land at a negative row of `out`, which TMA
  // refuses with an illegal-instruction fault: runs 399 and 401). Its rows are stored by hand
  // (copy_out, store_head_rows) instead of by TMA.
  __device__ __forceinline__ bool head_tile(u32 row0) const {
    return row0 < p->rank * p->scatter_rows && meets_rows_of(row0, p->rank);
  }
  __device__ __forceinline__ bool c_store_row(u32 row0, i32& row) const {
    if constexpr (!kScatter) {
      row = (i32)row0;
      return true;
    } else {
      row = (i32)row0 - (i32)(p->rank * p->scatter_rows);
      return row >= 0 && meets_rows_of(row0, p->rank);
    }
  }
  __device__ __forceinline__ void copy_out(u32 tile, const u8* staging, u32 mb, u32 nb, bool more, u32 pace_div) {
    u8* dst = reinterpret_cast<u8*>(p->partial[1 - p->rank]);
    const u32 row0 = Cfg::c_row0(mb, nb), col0 = Cfg::c_col0(mb, nb);
    const u32 lane = lane_id();
    // Pace (one clock for the whole warp, from lane 0):
    //  sleep (EpiloguePace::Sleep): a sleep of 3/5 of the last tile time over the
    //    rounds between rounds. NOTE: __nanosleep may sleep up to twice as long, so the
    //    copy can outlast a tile; with more than two tiles per CTA that holds up the next
    //    tile (bench/NOTES.md 6.2, 7.2).
    //  clock (EpiloguePace::Clock, the default): round k starts no earlier than k /
    //    kRounds of a window after the first, so the copy never outlasts the window
    //    whatever __nanosleep does; the window is the tile time less
    //    kEpiloguePaceSlackNs, at least half of it. The tile time is the interval between
    //    two stagings, unless the consumers staged right after getting the staging tile
    //    back (they waited for this storer): then it only shrinks, by 1/8 per such tile,
    //    so a late peer flag cannot keep the later windows long (reviews of 1edc06f and
    //    f3d4bcd).
    if (lane == 0) trace_event(*p, TraceKind::TileStaged, tile);
    u64 now = globaltimer_ns();
    u64 round_ns = 0;
    u32 sleep_ns = 0;
    if (lane == 0 && more) {
      const u64 tile_ns = now - last_staged_ns;
      if (p->epilogue_pace == 1) {
        const u32 t32 = (u32)min(tile_ns, (u64)0xFFFFFFFFu);
        const bool consumers_waited = (u32)now - freed_lo < kEpilogueFreedSlackNs;
        // While they keep waiting, shrink the basis by 1/8 per tile (the interval only
        // bounds their tile time from above); a tile they did not wait for resets it.
        basis_ns = consumers_waited ? min(basis_ns, t32) - min(basis_ns, t32) / 8 : t32;
        const u64 b = basis_ns;
        // Before a slice (pace_div > 1): over the slice's share of a tile time instead.
        const u64 window_ns = min(pace_div > 1 ? b / pace_div : max(b / 2, b > kEpiloguePaceSlackNs ? b - kEpiloguePaceSlackNs : 0),
                                  (u64)kEpilogueMaxWindowNs);
        round_ns = window_ns / kRounds;
      } else {
        sleep_ns = (u32)min(tile_ns * 3 / 5 / kRounds / pace_div, (u64)kEpilogueMaxSleepNs);
      }
    }
    now = __shfl_sync(0xffffffffu, now, 0);
    round_ns = __shfl_sync(0xffffffffu, round_ns, 0);
    sleep_ns = __shfl_sync(0xffffffffu, sleep_ns, 0);
    last_staged_ns = now;
    // The peer's rows: all M, or on a reduce-scatter its S from peer * S, counted from
    // the first so that one unsigned compare per chunk bounds them (a tile that starts
    // above them wraps); a tile with none of them goes nowhere.
    // A head tile (reduce-scatter) also meets this rank's rows, which TMA could not store:
    // they go to `out` (own_out) here, at row - r S, and store_head_rows adds the peer's
    // copy to them.
    u32 rel_row0 = row0;
    bool head = false;
    u8* own_out = nullptr;
    if constexpr (kScatter) {
      const u32 peer = 1 - p->rank;
      sent = meets_rows_of(row0, peer);
      if (!sent) return;  // (warp-uniform; nothing stored, nothing to fence)
      dst += (u64)peer * p->scatter_rows * p->n * 2;
      rel_row0 = row0 - peer * p->scatter_rows;
      head = head_tile(row0);
      own_out = reinterpret_cast<u8*>(p->out);
    }
    u32 round = 0;
    for (u32 base = 0; base < kChunks; base += 32 * kUnroll, ++round) {
      if (sleep_ns != 0 && base != 0) __nanosleep(sleep_ns);
      while (round_ns != 0 && globaltimer_ns() < now + round * round_ns) __nanosleep(100);
      uint4 v[kUnroll];
#pragma unroll
      for (u32 u = 0; u < kUnroll; ++u) {
        const u32 i = base + u * 32 + lane;  // chunk j of row r of box b, as stored
        const u32 b = i / (Cfg::kCRows * kBoxRowChunks), r = (i / kBoxRowChunks) % Cfg::kCRows, j = i % kBoxRowChunks;
        v[u] = *reinterpret_cast<const uint4*>(staging + b * Cfg::kCBoxBytes + r * (Cfg::kCBoxCols * 2) + j * 16);
      }
#pragma unroll
      for (u32 u = 0; u < kUnroll; ++u) {
        const u32 i = base + u * 32 + lane;
        const u32 b = i / (Cfg::kCRows * kBoxRowChunks), r = (i / kBoxRowChunks) % Cfg::kCRows, j = i % kBoxRowChunks;
        // (swizzled: chunk j of row r holds columns ((j ^ (r % 8)) * 8 ..) of its box)
        const u32 row = rel_row0 + r, col = col0 + b * Cfg::kCBoxCols + (Cfg::kCSwizzled ? (j ^ (r % 8)) : j) * 8;
        // Rows past M and columns past N (N % 8 == 0: whole chunks) are padding; on a
        // reduce-scatter the peer needs its own rows alone.
        if (row < (kScatter ? p->scatter_rows : p->m) && col < p->n && (p->diag_skip & 1u) == 0)
          st_v4(dst + ((u64)row * p->n + col) * 2, v[u]);
        if constexpr (kScatter) {
          // (this rank's rows of a head tile: row0 + r - r S < S, and not the peer's)
          const u32 own = row0 + r - p->rank * p->scatter_rows;
          if (head && own < p->scatter_rows && col < p->n) st_v4(own_out + ((u64)own * p->n + col) * 2, v[u]);
        }
      }
    }
    if (p->trace != 0) {  // (uniform across the warp)
      __syncwarp();
      if (lane == 0) trace_event(*p, TraceKind::CopyIssued, tile);
    }
    fence_acq_rel_sys();  // this lane's remote stores, before lane 0 publishes (after __syncwarp)
    if (p->trace != 0) {
      __syncwarp();
      if (lane == 0) trace_event(*p, TraceKind::CopyFenced, tile);
    }
  }
  __device__ __forceinline__ float* split_slot(u32 v) const {
    return reinterpret_cast<float*>(p->split_scratch) + (u64)v * Cfg::BM * Cfg::BN;
  }
  // One consumer thread, after the named barrier that follows every consumer's slot
  // write: counts this slice of remaining tile r in; true if it is the last of `splits`.
  // (A CAS retries only when another slice counted in: at most `splits` rounds.)
  __device__ __forceinline__ bool split_arrive(u32 r, u32 splits) const {
    unsigned long long* const c = reinterpret_cast<unsigned long long*>(p->reduced[p->rank]) + r;
    const unsigned long long tag = (unsigned long long)ctx->epoch << 32;
    fence_acq_rel_gpu();  // the slot writes (the barrier's threads') before the count
    unsigned long long cur = *reinterpret_cast<volatile unsigned long long*>(c);
    for (u32 round = 0; round <= splits; ++round) {
      const unsigned long long next = (cur & ~0xFFFFFFFFull) == tag ? cur + 1 : tag | 1ull;
      const unsigned long long seen = atomicCAS(c, cur, next);
      if (seen == cur) {
        fence_acq_rel_gpu();  // the other slices' slots, before this CTA reads them
        return (u32)next == splits;
      }
      cur = seen;
    }
    return false;  // unreachable: each failed CAS is another slice's success
  }
  // One consumer thread: a slice's progress (0 computed, 1 counted, 2 counted last) in
  // the event trace, if the call is traced.
  __device__ __forceinline__ void split_event(u32 what, u32 tile) const {
    trace_event(*p, what == 0 ? TraceKind::SliceComputed : what == 1 ? TraceKind::SliceCounted : TraceKind::SliceLast, tile);
  }
  __device__ __forceinline__ void operator()(u32 tile) const {
    if (!kScatter || sent) st_release_sys(inbox(p->ready[1 - p->rank], p->flag_stride, p->rank, tile), ctx->epoch);
    trace_event(*p, TraceKind::TileStored, tile);
  }
  __device__ __forceinline__ void reuse_staging(u32 tile, u8* staging, u32 mb, u32 nb) {
    const u32 peer = 1 - p->rank;
    // Reduce-scatter: a tile within the peer's rows has nothing to add here (the peer
    // sends, and publishes, only tiles that meet this rank's rows).
    if constexpr (kScatter) {
      head_peer_ready = false;
      if (!meets_rows_of(Cfg::c_row0(mb, nb), p->rank)) {
        freed_lo = (u32)globaltimer_ns();
        return;
      }
    }
    // Polled with sleeps: the CTA's consumer warps are computing the next tile.
    if (!wait_flag_eq(inbox(p->ready[p->rank], p->flag_stride, peer, tile), ctx->epoch, *ctx, WaitOp::PeerTileReady,
                      peer, tile, kEpilogueBackoffNs)) {
      freed_lo = (u32)globaltimer_ns();
      return;
    }
    fence_acq_rel_sys();         // acquire the peer's pushed tile
    fence_proxy_async_global();  // flag acquire -> TMA reads
    if ((p->diag_skip & 2u) != 0) {  // diagnostic: no load, no add (out is wrong)
      trace_event(*p, TraceKind::PeerAdded, tile);
      freed_lo = (u32)globaltimer_ns();
      return;
    }
    // (the workspace is [M, N]; `out` holds this rank's rows alone on a reduce-scatter,
    // and rows of the tile outside them, which the peer did not copy, are clipped)
    const i32 row = (i32)Cfg::c_row0(mb, nb);
    i32 out_row = row;
    if constexpr (kScatter) c_store_row(Cfg::c_row0(mb, nb), out_row);
    const u32 col0 = Cfg::c_col0(mb, nb);
    mbar_arrive_expect_tx(w_full, Cfg::kCBytes);
#pragma unroll
    for (u32 b = 0; b < Cfg::kCBoxes; ++b)
      tma_load_2d(&p->tma_partial[p->rank], w_full, staging + b * Cfg::kCBoxBytes, (i32)(col0 + b * Cfg::kCBoxCols), row);
    mbar_wait(w_full, phase, p->timeout_ns);
    phase ^= 1;
    if constexpr (kScatter) {
      if (head_tile(Cfg::c_row0(mb, nb))) {
        // (no row of `out` for TMA: store_head_rows adds the peer's copy, now in the staging
        // tile, to this rank's rows, which copy_out stored, the whole warp, once this returns)
        head_peer_ready = true;
        return;
      }
    }
#pragma unroll
    for (u32 b = 0; b < Cfg::kCBoxes; ++b)
      tma_reduce_add_2d(&p->tma_c_out, staging + b * Cfg::kCBoxBytes, (i32)(col0 + b * Cfg::kCBoxCols), out_row);
    bulk_commit_group();
    bulk_wait_group_read<0>();
    trace_event(*p, TraceKind::PeerAdded, tile);
    freed_lo = (u32)globaltimer_ns();  // the storer hands the staging tile back next
  }
  // kScatter, every lane, after reuse_staging (gemm_storer): a head tile's rows of this rank
  // (c_store_row gave them no TMA row; copy_out stored this rank's partial of them into
  // `out`, at row - r S) get the peer's copy added, which reuse_staging TMA-loaded into the
  // staging tile (from this rank's partial region, where it landed before the flag): each
  // lane adds its chunks to `out` with a bf16 reduction (red_add_bf16x8: rounded to nearest
  // even at L2, the bits of TMA's reduce-add of the same two terms on the other tiles). A
  // chunk's store (copy_out) and its add are the same lane's, to one address: ordered.
  // Without the peer's copy (a timeout, or the no-add diagnostic) this rank's partial alone
  // stays, as on the TMA path. (Loading the peer's copy into the storer warp's registers
  // instead, two chunks a lane in flight, made a call 54 us longer than the all-reduce's at
  // M = 1040 on one H200 shared by both ranks, this way 21 us: runs 403, 405, bench/NOTES.md 56.)
  __device__ __forceinline__ void store_head_rows(u32 tile, const u8* staging, u32 mb, u32 nb) {
    if constexpr (kScatter) {
      const u32 row0 = Cfg::c_row0(mb, nb), col0 = Cfg::c_col0(mb, nb);
      if (!head_tile(row0)) return;  // (warp-uniform)
      if (__shfl_sync(0xffffffffu, head_peer_ready, 0)) {
        // (every lane sees the TMA load complete: the phase lane 0 waited for, now past)
        mbar_wait(w_full, __shfl_sync(0xffffffffu, phase, 0) ^ 1u, p->timeout_ns);
        const u32 lo = p->rank * p->scatter_rows, hi = lo + p->scatter_rows;
        u8* out = reinterpret_cast<u8*>(p->out);
        // (kUnroll chunks a lane: their shared-memory loads in flight together)
        for (u32 base = 0; base < kChunks; base += 32 * kUnroll) {
          uint4 v[kUnroll];
#pragma unroll
          for (u32 u = 0; u < kUnroll; ++u) v[u] = ld_shared_v4(staging + staging_chunk(base + u * 32 + lane_id(), row0, col0).offset);
#pragma unroll
          for (u32 u = 0; u < kUnroll; ++u) {
            const StagingChunk c = staging_chunk(base + u * 32 + lane_id(), row0, col0);
            if (c.row >= lo && c.row < hi && c.col < p->n) red_add_bf16x8(out + ((u64)(c.row - lo) * p->n + c.col) * 2, v[u]);
          }
        }
        if (lane_id() == 0) trace_event(*p, TraceKind::PeerAdded, tile);
      }
      if (lane_id() == 0) freed_lo = (u32)globaltimer_ns();  // (the clock pace's: the storer hands the staging tile back next)
    }
  }
};

// Region of a tile: rows [row_begin, row_end) x cols [col_begin, col_end) of the
// [M, N] matrix, already clipped to the matrix.
struct Region {
  u32 row_begin, row_end, col_begin, col_end;
  __device__ __forceinline__ bool empty() const { return row_begin >= row_end || col_begin >= col_end; }
};

template <class Cfg, u32 WORLD>
__device__ __forceinline__ Region slice_region(const TileScheduler& sched, u32 tile, u32 slice, u32 m, u32 n) {
  u32 mb, nb;
  sched.coords(tile, mb, nb);
  const u32 r0 = mb * Cfg::BM + slice * Cfg::BM / WORLD;
  const u32 r1 = mb * Cfg::BM + (slice + 1) * Cfg::BM / WORLD;
  const u32 c0 = nb * Cfg::BN;
  return Region{min(r0, m), min(r1, m), min(c0, n), min(c0 + Cfg::BN, n)};
}

// Thread 0 waits until every rank q (but `skip`) published `tile` in this rank's inbox
// `region`; returns false when the kernel is aborting.
template <u32 WORLD>
__device__ __forceinline__ bool wait_inbox(u64 region, u32 stride, u32 skip, u32 tile, const WaitContext& ctx,
                                           WaitOp op) {
  for (u32 j = 0; j < WORLD; ++j) {
    const u32 q = (ctx.rank + j) % WORLD;
    if (q == skip) continue;
    if (!wait_flag_eq(inbox(region, stride, q, tile), ctx.epoch, ctx, op, q, tile)) return false;
  }
  return true;
}

// dst0 (and dst1 when given) <- sum over NSRC sources, over one region; all threads of
// the CTA. kVec: N % 8 == 0, so every row segment is whole 16-byte vectors.
template <u32 NSRC, bool kVec>
__device__ __forceinline__ void sum_region(const u16* const (&src)[NSRC], u16* dst0, u16* dst1, Region g, u32 n) {
  if (g.empty()) return;
  const u32 tid = threadIdx.x, nthreads = blockDim.x;
  const u32 width = g.col_end - g.col_begin;
  if constexpr (kVec) {
    const u32 vpr = width / 8;
    const u32 total = (g.row_end - g.row_begin) * vpr;
    for (u32 v0 = tid; v0 < total; v0 += kCommUnroll * nthreads) {
      uint4 in[kCommUnroll][NSRC];
      u64 off[kCommUnroll];
#pragma unroll
      for (u32 u = 0; u < kCommUnroll; ++u) {
        const u32 v = v0 + u * nthreads;
        off[u] = 0;
        if (v < total) {
          off[u] = (u64)(g.row_begin + v / vpr) * n + g.col_begin + (v % vpr) * 8;
#pragma unroll
          for (u32 s = 0; s < NSRC; ++s) in[u][s] = ld_cg_v4(src[s] + off[u]);
        }
      }
#pragma unroll
      for (u32 u = 0; u < kCommUnroll; ++u) {
        if (v0 + u * nthreads >= total) continue;
        uint4 r;
        if constexpr (NSRC == 1) {
          r = in[u][0];
        } else {
          float lo[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};
#pragma unroll
          for (u32 s = 0; s < NSRC; ++s) {
            const u32 x[4] = {in[u][s].x, in[u][s].y, in[u][s].z, in[u][s].w};
#pragma unroll
            for (u32 e = 0; e < 4; ++e) { lo[e] += bf16_lo(x[e]); hi[e] += bf16_hi(x[e]); }
          }
          r = make_uint4(pack_bf16x2(lo[0], hi[0]), pack_bf16x2(lo[1], hi[1]), pack_bf16x2(lo[2], hi[2]),
                         pack_bf16x2(lo[3], hi[3]));
        }
        st_v4(dst0 + off[u], r);
        if (dst1 != nullptr) st_v4(dst1 + off[u], r);
      }
    }
  } else {
    const u32 total = (g.row_end - g.row_begin) * width;
    for (u32 e = tid; e < total; e += nthreads) {
      const u64 off = (u64)(g.row_begin + e / width) * n + g.col_begin + e % width;
      float acc = 0.0f;
#pragma unroll
      for (u32 s = 0; s < NSRC; ++s) acc += bf16_to_f32(ld_cg_u16(src[s] + off));
      const u16 r = f32_to_bf16(acc);
      dst0[off] = r;
      if (dst1 != nullptr) dst1[off] = r;
    }
  }
}

// Sums NSRC bf16 boxes of `bytes` in shared memory into box `dst` (which may be one of
// the sources), in fp32 in source order, rounding once; threads `t` of `nthreads`.
template <u32 NSRC>
__device__ __forceinline__ void sum_boxes_part(u8* const (&src)[NSRC], u8* dst, u32 bytes, u32 t, u32 nthreads) {
  for (u32 v = t; v < bytes / 16; v += nthreads) {
    float lo[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};
#pragma unroll
    for (u32 q = 0; q < NSRC; ++q) {
      const uint4 x = reinterpret_cast<const uint4*>(src[q])[v];
      const u32 w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (u32 e = 0; e < 4; ++e) { lo[e] += bf16_lo(w[e]); hi[e] += bf16_hi(w[e]); }
    }
    reinterpret_cast<uint4*>(dst)[v] = make_uint4(pack_bf16x2(lo[0], hi[0]), pack_bf16x2(lo[1], hi[1]),
                                                  pack_bf16x2(lo[2], hi[2]), pack_bf16x2(lo[3], hi[3]));
  }
}

// The same with all threads of the CTA.
template <u32 NSRC>
__device__ __forceinline__ void sum_boxes(u8* const (&src)[NSRC], u8* dst, u32 bytes) {
  sum_boxes_part<NSRC>(src, dst, bytes, threadIdx.x, blockDim.x);
}

// =========================================================================================
// One-shot TMA path (world <= 2)
// =========================================================================================
// Work item = one of the kItemsPerTile row blocks of a tile: WORLD boxes of [kRows, BN],
// one per rank's partial. Tiles are claimed kClaimTiles at a time from the rank's
// ControlBlock::comm_next counter by every CTA that runs this role: the dedicated
// communication CTAs from the start, and the tail CTAs (launched after the grid, so the
// hardware dispatches them only as compute CTAs finish and free their SMs) at the end,
// so the last waves' tiles are pulled by many SMs instead of the few dedicated ones.
// Claims follow tile order, which is the order compute CTAs finish tiles in.
// Warp-specialised ring of kStages:
//   producer (thread 0): claims tiles, waits for their ready flags, then for the stage
//     to be free (`empty`), writes the item's coordinates next to the stage and TMA-loads
//     the WORLD boxes into it (`full` counts the bytes);
//   consumers (warps 1..): wait `full`, sum the boxes in fp32 into box 0, and one thread
//     TMA-stores box 0 to `out`; a stage is released once its store has read it.
// A tile that is not ready yet stalls only the producer: items already loaded are still
// summed and stored, so up to kStages - 1 items' loads overlap the consumers' work.
// kReduce (TmaReduce path): a stage holds only the peer's box.
template <class Cfg, u32 WORLD, bool kReduce = false>
struct OneShotSmem {
  static constexpr u32 kItemsPerTile = 4;
  static constexpr u32 kRows = Cfg::BM / kItemsPerTile;
  static constexpr u32 kBoxBytes = kRows * Cfg::BN * 2;
  static constexpr u32 kBoxesPerStage = kReduce ? WORLD - 1 : WORLD;
  static constexpr u32 kStageBytes = kBoxesPerStage * kBoxBytes;
  static constexpr u32 kMaxStages = 12;
  static constexpr u32 kBarrierBytes = 2 * 8 * kMaxStages;  // full[], empty[]
  static constexpr u32 kFit = (Cfg::kSmemBytes - 1024 - kBarrierBytes) / kStageBytes;
  static constexpr u32 kStages = kFit < kMaxStages ? kFit : kMaxStages;
  static_assert(Cfg::BM % kItemsPerTile == 0, "tile rows split into whole items");
  static_assert(Cfg::BN <= 256 && kRows <= 256, "TMA boxes are at most 256 per dimension");
  static_assert(kStages >= 2, "one-shot ring needs two stages of shared memory");
  u8* base;
  u64* full;   // [kStages]
  u64* empty;  // [kStages]
  __device__ explicit OneShotSmem(u8* raw) {
    base = (u8*)(((u64)raw + 1023) & ~(u64)1023);
    full = (u64*)(base + kStages * kStageBytes);
    empty = full + kMaxStages;
  }
  __device__ __forceinline__ u8* box(u32 stage, u32 q) const { return base + stage * kStageBytes + q * kBoxBytes; }
};

// Consecutive tiles one claim takes: one acquire fence and one proxy fence cover them
// (a fence per tile capped a CTA at one tile per fence latency), while the last wave's
// tiles still spread over many CTAs.
constexpr u32 kClaimTiles = 2;

// kReduce: the TmaReduce path (see CommPath): stages hold the peer's box only, which one
// consumer thread adds into `out` (already holding the own partial) with a TMA reduce.
template <class Cfg, u32 WORLD, bool kReduce>
__device__ void comm_role_oneshot(const AllReduceParams& p, const WaitContext& ctx) {
  static_assert(!kReduce || WORLD == 2, "the reduce-add path adds one peer's tiles into out");
  using Smem = OneShotSmem<Cfg, WORLD, kReduce>;
  constexpr u32 kS = Smem::kStages;
  constexpr u32 kConsumers = Cfg::kThreads - 32;
  constexpr u32 kBarConsumers = 1;  // named barrier id (0 is __syncthreads)
  __shared__ volatile u32 s_stop_at;  // item the producer stopped at (~0u: still running)
  __shared__ i32 s_col[Smem::kMaxStages], s_row[Smem::kMaxStages];  // item k's box at stage k % kS
  extern __shared__ u8 smem_raw[];
  const Smem sm(smem_raw);
  const u32 tid = threadIdx.x;
  const TileScheduler sched(p.m, p.n, Cfg::BM, Cfg::BN);
  if (tid == 0) {
    for (u32 s = 0; s < kS; ++s) {
      mbar_init(&sm.full[s], 1);
      mbar_init(&sm.empty[s], 1);
    }
    s_stop_at = ~0u;
    fence_mbarrier_init();
    tma_prefetch_descriptor(&p.tma_out);
  }
  __syncthreads();
  // Consumers may wait as long as the producer legitimately waits between two items: for
  // every tile of a claim, up to the inter-GPU timeout per rank's flag (after a timeout it
  // wakes them via s_stop_at). Bound theirs above that, so only a bug traps.
  const u64 consumer_bound_ns = (kClaimTiles * WORLD + 1) * ctx.timeout_ns + 1000000000ull;
  if (tid < 32) {
    // ---- producer ----
    if (tid == 0) {
      u32 k = 0;
      bool ok = true;
      while (ok) {
        const u32 first = atomicAdd(&ctx.control->comm_next, kClaimTiles);
        if (first >= sched.total) break;
        trace_event(p, TraceKind::Claim, first);
        const u32 last = min(first + kClaimTiles, sched.total);
        for (u32 t = first; t < last && ok; ++t)
          ok = wait_inbox<WORLD>(p.ready[p.rank], p.flag_stride, ~0u, t, ctx, WaitOp::PeerTileReady);
        if (!ok) break;
        fence_acq_rel_sys();         // acquire the claimed tiles' flag observations
        fence_proxy_async_global();  // flag acquires -> TMA reads
        trace_event(p, TraceKind::ClaimReady, first);
        for (u32 t = first; t < last; ++t) {
          u32 mb, nb;
          sched.coords(t, mb, nb);
          // Row blocks holding at least one row of C (the last row of tiles may be short).
          const u32 rows = min(Cfg::BM, p.m - mb * Cfg::BM);
          const u32 n_items = (rows + Smem::kRows - 1) / Smem::kRows;
          for (u32 i = 0; i < n_items; ++i, ++k) {
            const u32 s = k % kS;
            if (k >= kS) mbar_wait(&sm.empty[s], ((k / kS) - 1) & 1, consumer_bound_ns);
            const i32 col = (i32)(nb * Cfg::BN), row = (i32)(mb * Cfg::BM + i * Smem::kRows);
            s_col[s] = col;
            s_row[s] = row;
            mbar_arrive_expect_tx(&sm.full[s], Smem::kStageBytes);  // releases s_col/s_row
            if constexpr (kReduce) {
              tma_load_2d(&p.tma_partial[1 - p.rank], &sm.full[s], sm.box(s, 0), col, row);
            } else {
              for (u32 q = 0; q < WORLD; ++q) tma_load_2d(&p.tma_partial[q], &sm.full[s], sm.box(s, q), col, row);
            }
          }
        }
      }
      // Done (every tile claimed) or aborting: wake the consumers at item k (stage
      // k % kS, once free); they finish the items already loading (no TMA may still
      // write this CTA's shared memory when it exits) and stop there.
      s_stop_at = k;
      if (k >= kS) mbar_wait(&sm.empty[k % kS], ((k / kS) - 1) & 1, consumer_bound_ns);
      mbar_arrive(&sm.full[k % kS]);
      trace_event(p, TraceKind::CommDone, k);
    }
  } else {
    // ---- consumers ----
    // Items in the producer's order: body(k, stage, col, row) once stage k % kS is full;
    // stops at the item the producer stopped at.
    auto consume = [&](auto&& body) {
      for (u32 k = 0;; ++k) {
        const u32 s = k % kS;
        mbar_wait(&sm.full[s], (k / kS) & 1, consumer_bound_ns);
        if (k == s_stop_at) return;
        body(k, s, s_col[s], s_row[s]);
      }
    };
    // After item k's store (or reduce) was issued from stage k % kS: once item k-1's has
    // read its stage, hand that stage back to the producer. One thread.
    auto commit_and_release_previous = [&](u32 k) {
      bulk_commit_group();
      bulk_wait_group_read<1>();
      if (k >= 1) mbar_arrive(&sm.empty[(k - 1) % kS]);
    };
    const u32 c = tid - 32;
    if constexpr (kReduce) {
      // One thread: out += the peer's box, added at L2.
      if (c == 0) {
        consume([&](u32 k, u32 s, i32 col, i32 row) {
          tma_reduce_add_2d(&p.tma_out, sm.box(s, 0), col, row);
          commit_and_release_previous(k);
        });
      }
    } else {
      consume([&](u32 k, u32 s, i32 col, i32 row) {
        if constexpr (WORLD == 2) {  // (world 1: box 0 already is the result)
          u8* const both[2] = {sm.box(s, 0), sm.box(s, 1)};
          sum_boxes_part<2>(both, sm.box(s, 0), Smem::kBoxBytes, c, kConsumers);
        }
        fence_proxy_async_shared();  // generic writes of box 0 -> TMA store reads
        named_barrier_sync(kBarConsumers, kConsumers);
        if (c == 0) {
          tma_store_2d(&p.tma_out, sm.box(s, 0), col, row);
          commit_and_release_previous(k);
        }
      });
    }
    if (c == 0) bulk_wait_group<0>();
  }
  __syncthreads();
}

// =========================================================================================
// Two-phase TMA path (BM % world == 0)
// =========================================================================================
// Shared memory: WORLD slice boxes for the reduction and WORLD for the gather (the own
// one unused), then two mbarriers.
template <class Cfg, u32 WORLD>
struct CommSmem {
  static constexpr u32 kSliceRows = Cfg::BM / WORLD;
  static constexpr u32 kBoxBytes = kSliceRows * Cfg::BN * 2;
  static_assert(Cfg::BM % WORLD == 0, "TMA path: every slice is BM / WORLD rows");
  static_assert(kSliceRows <= 256 && Cfg::BN <= 256, "TMA boxes are at most 256 per dimension");
  static_assert(kBoxBytes % 128 == 0, "slice boxes stay 128-byte aligned in shared memory");
  static_assert(2 * WORLD * kBoxBytes + 16 + 1024 <= Cfg::kSmemBytes, "comm buffers must fit the kernel's shared memory");
  u8* base;
  u64* slices_landed;    // reduction sources arrived
  u64* gathered_landed;  // peers' reduced slices arrived
  __device__ explicit CommSmem(u8* raw) {
    base = (u8*)(((u64)raw + 1023) & ~(u64)1023);
    slices_landed = (u64*)(base + 2 * WORLD * kBoxBytes);
    gathered_landed = slices_landed + 1;
  }
  __device__ __forceinline__ u8* reduce_box(u32 q) const { return base + q * kBoxBytes; }
  __device__ __forceinline__ u8* gather_box(u32 q) const { return base + (WORLD + q) * kBoxBytes; }
};

// Iteration i reduces tile t_i = comm_idx + i * n_comm and gathers tile t_{i-1}; thread 0
// waits for flags and moves every box, all threads sum in shared memory.
template <class Cfg, u32 WORLD>
__device__ void comm_role_tma(const AllReduceParams& p, const WaitContext& ctx, u32 comm_idx, u32 n_comm) {
  __shared__ u32 s_verdict;
  using Smem = CommSmem<Cfg, WORLD>;
  extern __shared__ u8 smem_raw[];
  const Smem sm(smem_raw);
  const u32 tid = threadIdx.x, rank = p.rank;
  const TileScheduler sched(p.m, p.n, Cfg::BM, Cfg::BN);
  if (tid == 0) {
    mbar_init(sm.slices_landed, 1);
    mbar_init(sm.gathered_landed, 1);
    fence_mbarrier_init();
    tma_prefetch_descriptor(&p.tma_out);
  }
  __syncthreads();
  u32 phase_reduce = 0, phase_gather = 0;
  for (u32 i = 0;; ++i) {
    const u32 t = comm_idx + i * n_comm;
    const bool have_reduce = t < sched.total;
    // The gather runs one tile behind: tile t_{i-1}, if it exists.
    const bool have_gather = WORLD > 1 && i > 0 && t - n_comm < sched.total;
    if (!have_reduce && !have_gather) break;
    u32 mb = 0, nb = 0, mbg = 0, nbg = 0;
    if (have_reduce) sched.coords(t, mb, nb);
    if (have_gather) sched.coords(t - n_comm, mbg, nbg);
    if (tid == 0) {
      bool ok = !have_reduce || wait_inbox<WORLD>(p.ready[rank], p.flag_stride, ~0u, t, ctx, WaitOp::PeerTileReady);
      ok = ok && (!have_gather ||
                  wait_inbox<WORLD>(p.reduced[rank], p.flag_stride, rank, t - n_comm, ctx, WaitOp::PeerSliceReduced));
      bulk_wait_group_read<0>();   // the previous iteration's stores no longer read the boxes
      fence_proxy_async_global();  // flag acquires above -> TMA reads below
      if (ok && have_reduce) {
        mbar_arrive_expect_tx(sm.slices_landed, WORLD * Smem::kBoxBytes);
        for (u32 q = 0; q < WORLD; ++q)
          tma_load_2d(&p.tma_partial[q], sm.slices_landed, sm.reduce_box(q), (i32)(nb * Cfg::BN),
                      (i32)(mb * Cfg::BM + rank * Smem::kSliceRows));
      }
      if (ok && have_gather) {
        mbar_arrive_expect_tx(sm.gathered_landed, (WORLD - 1) * Smem::kBoxBytes);
        for (u32 j = 1; j < WORLD; ++j) {
          const u32 q = (rank + j) % WORLD;
          tma_load_2d(&p.tma_partial[q], sm.gathered_landed, sm.gather_box(q), (i32)(nbg * Cfg::BN),
                      (i32)(mbg * Cfg::BM + q * Smem::kSliceRows));
        }
      }
      s_verdict = ok ? 1u : 0u;
    }
    __syncthreads();
    if (s_verdict == 0) break;
    if (have_reduce) {
      mbar_wait(sm.slices_landed, phase_reduce, ctx.timeout_ns);
      phase_reduce ^= 1;
      u8* srcs[WORLD];
#pragma unroll
      for (u32 q = 0; q < WORLD; ++q) srcs[q] = sm.reduce_box(q);
      sum_boxes<WORLD>(srcs, sm.reduce_box(0), Smem::kBoxBytes);
      fence_proxy_async_shared();  // generic writes of box 0 -> TMA store reads
      __syncthreads();
      if (tid == 0) {
        const i32 c0 = (i32)(nb * Cfg::BN), r0 = (i32)(mb * Cfg::BM + rank * Smem::kSliceRows);
        tma_store_2d(&p.tma_out, sm.reduce_box(0), c0, r0);
        tma_store_2d(&p.tma_partial[rank], sm.reduce_box(0), c0, r0);
        bulk_commit_group();
      }
    }
    if (have_gather && tid == 0) {
      mbar_wait(sm.gathered_landed, phase_gather, ctx.timeout_ns);
      phase_gather ^= 1;
      for (u32 j = 1; j < WORLD; ++j) {
        const u32 q = (rank + j) % WORLD;
        tma_store_2d(&p.tma_out, sm.gather_box(q), (i32)(nbg * Cfg::BN), (i32)(mbg * Cfg::BM + q * Smem::kSliceRows));
      }
      bulk_commit_group();
    }
    if (have_reduce && tid == 0) {
      // Publish the reduced slice once its TMA stores are performed.
      if (have_gather) bulk_wait_group<1>(); else bulk_wait_group<0>();
      fence_proxy_async_global();
      publish_to_all<WORLD>(p.reduced, p.flag_stride, rank, t, ctx.epoch);
    }
    __syncthreads();  // s_verdict is rewritten next iteration
  }
  if (tid == 0) bulk_wait_group<0>();
  __syncthreads();
}

// =========================================================================================
// Two-phase load/store paths (any N)
// =========================================================================================
// Reduce-scatter (kScatter; p.scatter_rows = S): rank r sums the rows of `tile` in [r S, (r + 1) S)
// from every rank's partial straight into `out` (its [S, N] rows, so at row - r S), and a
// tile that has none of them is skipped; nothing is written back or gathered (the phase-2
// flags stay unused). An all-reduce: slice r of the tile, also written back into partial_r
// for the peers' gather, then published.
template <class Cfg, u32 WORLD, bool kVec, bool kScatter>
__device__ bool reduce_own_slice(const AllReduceParams& p, const WaitContext& ctx, const TileScheduler& sched, u32 tile,
                                 u32* s_verdict) {
  // (kScatter: this rank's rows of the tile, and `out` shifted so that rows of [M, N] index it)
  Region g{0, 0, 0, 0};
  u16* out = nullptr;
  if constexpr (kScatter) {
    g = slice_region<Cfg, WORLD>(sched, tile, p.rank, p.m, p.n);
    u32 mb, nb;
    sched.coords(tile, mb, nb);
    const u32 lo = p.rank * p.scatter_rows, hi = lo + p.scatter_rows;
    g.row_begin = max(mb * Cfg::BM, lo);
    g.row_end = min(min(mb * Cfg::BM + Cfg::BM, hi), p.m);
    if (g.empty()) return true;  // (the same in every thread: no barrier skipped unevenly)
    // `out` is rows [lo, hi) alone: sum_region's offsets count from row 0 of [M, N].
    out = reinterpret_cast<u16*>(p.out - (u64)lo * p.n * 2);
  }
  if (threadIdx.x == 0)
    *s_verdict = wait_inbox<WORLD>(p.ready[p.rank], p.flag_stride, ~0u, tile, ctx, WaitOp::PeerTileReady) ? 1u : 0u;
  __syncthreads();
  const bool ok = *s_verdict != 0;
  __syncthreads();
  if (!ok) return false;
  const u16* src[WORLD];
#pragma unroll
  for (u32 q = 0; q < WORLD; ++q) src[q] = reinterpret_cast<const u16*>(p.partial[(p.rank + q) % WORLD]);
  if constexpr (kScatter) {
    sum_region<WORLD, kVec>(src, out, nullptr, g, p.n);
    __syncthreads();  // (this CTA's reads of the sources done before its next wait's verdict)
    return true;
  }
  const Region slice = slice_region<Cfg, WORLD>(sched, tile, p.rank, p.m, p.n);
  sum_region<WORLD, kVec>(src, reinterpret_cast<u16*>(p.out), reinterpret_cast<u16*>(p.partial[p.rank]), slice, p.n);
  __syncthreads();
  if (threadIdx.x == 0) publish_to_all<WORLD>(p.reduced, p.flag_stride, p.rank, tile, ctx.epoch);
  return true;
}

template <class Cfg, u32 WORLD, bool kVec>
__device__ bool gather_peer_slices(const AllReduceParams& p, const WaitContext& ctx, const TileScheduler& sched,
                                   u32 tile, u32* s_verdict) {
  if (threadIdx.x == 0)
    *s_verdict =
        wait_inbox<WORLD>(p.reduced[p.rank], p.flag_stride, p.rank, tile, ctx, WaitOp::PeerSliceReduced) ? 1u : 0u;
  __syncthreads();
  const bool ok = *s_verdict != 0;
  __syncthreads();
  if (!ok) return false;
  for (u32 i = 1; i < WORLD; ++i) {
    const u32 q = (p.rank + i) % WORLD;
    const u16* src[1] = {reinterpret_cast<const u16*>(p.partial[q])};
    const Region g = slice_region<Cfg, WORLD>(sched, tile, q, p.m, p.n);
    sum_region<1, kVec>(src, reinterpret_cast<u16*>(p.out), nullptr, g, p.n);
  }
  return true;
}

template <class Cfg, u32 WORLD, bool kVec, bool kScatter>
__device__ void comm_role_lsu(const AllReduceParams& p, const WaitContext& ctx, u32 comm_idx, u32 n_comm) {
  __shared__ u32 s_verdict;
  const TileScheduler sched(p.m, p.n, Cfg::BM, Cfg::BN);
  for (u32 i = 0;; ++i) {
    const u32 t = comm_idx + i * n_comm;
    if (t < sched.total && !reduce_own_slice<Cfg, WORLD, kVec, kScatter>(p, ctx, sched, t, &s_verdict)) break;
    if (WORLD > 1 && !kScatter && i > 0 && t - n_comm < sched.total &&
        !gather_peer_slices<Cfg, WORLD, kVec>(p, ctx, sched, t - n_comm, &s_verdict))
      break;
    if (t >= sched.total) break;
  }
  __syncthreads();
}

// After a communication CTA's last tile: the last one of this rank tells every peer
// it no longer reads their buffers, and waits until every peer says the same. n_comm:
// the CTAs that run a communication role (dedicated and tail). skipped: a call queued
// behind an aborted one (see gemm_allreduce_kernel), which says nothing to its peers.
template <u32 WORLD>
__device__ void comm_finish(const AllReduceParams& p, const WaitContext& ctx, u32 n_comm, bool skipped) {
  if (threadIdx.x == 0) {
    const u32 finished = atom_add_acq_rel_gpu(&ctx.control->comm_done, 1) + 1;
    if (finished == n_comm) {
      // Last communication CTA of this rank: no CTA of this rank reads peers any more.
      ctx.control->comm_done = 0;
      if (skipped) return;
      for (u32 i = 1; i < WORLD; ++i) {
        const u32 q = (p.rank + i) % WORLD;
        st_release_sys(reinterpret_cast<u32*>(p.exit_flags[q]) + p.rank, ctx.epoch);
      }
      if (!aborted(ctx)) {
        for (u32 i = 1; i < WORLD; ++i) {
          const u32 q = (p.rank + i) % WORLD;
          if (!wait_flag_eq(reinterpret_cast<const u32*>(p.exit_flags[p.rank]) + q, ctx.epoch, ctx, WaitOp::PeerExit,
                             q, ~0u))
            break;
        }
      }
    }
  }
}

// kScatter: a reduce-scatter (p.scatter_rows rows per rank; epilogue, vec16 and scalar paths).
template <class Cfg, u32 WORLD, CommPath PATH, bool kScatter = false>
__device__ __forceinline__ void gemm_allreduce_kernel(const AllReduceParams& p) {
  static_assert(!kScatter || PATH == CommPath::Epilogue || PATH == CommPath::Vec16 || PATH == CommPath::Scalar,
                "a reduce-scatter runs on the epilogue, vec16 and scalar paths");
  static_assert(!Cfg::kSwapAB || PATH == CommPath::Epilogue, "swapped-operand tiles take the epilogue path only");
  static_assert(WORLD >= 1 && WORLD <= MKERNEL_MAX_RANKS, "world size must be 1..MKERNEL_MAX_RANKS");
  static_assert(Cfg::BM >= WORLD, "every rank owns at least one row of each tile");
  static_assert(PATH != CommPath::TmaOneShot || WORLD <= 2, "the one-shot path pulls whole tiles: world <= 2");
  static_assert(PATH != CommPath::TmaReduce || (WORLD == 2 && Cfg::kTmaEpilogue),
                "the reduce-add path needs two ranks and the TMA-store epilogue");
  static_assert(PATH != CommPath::Epilogue || (WORLD == 2 && Cfg::kTmaEpilogue),
                "the epilogue path needs two ranks and the TMA-store epilogue");
  static_assert(Cfg::CM == 1 || PATH == CommPath::Epilogue,
                "clusters only on the epilogue path (every CTA computes; no communication CTAs in a cluster)");
  static_assert(Cfg::CN == 1, "clusters along N are the plain GEMM's only (TileConfig::validate refuses them here)");
  ControlBlock* control = reinterpret_cast<ControlBlock*>(p.control);
  // Epoch 0 is never used (after 2^32 calls it wraps to 1): 0 means "no abort" in
  // abort_epoch and "never published" in the zeroed flags, so a call at epoch 0 would
  // see itself aborted (aborted(): abort_epoch == epoch) and skip its exit handshake.
  const u32 last_epoch = ld_acquire_gpu(&control->epoch);
  const WaitContext ctx{control, reinterpret_cast<KernelStatus*>(p.status), p.timeout_ns, p.rank,
                        last_epoch + 1 != 0 ? last_epoch + 1 : 1u};
  // A call queued behind one that gave up (abort_epoch holds that call's epoch) does no
  // work and says nothing to its peers; it only advances the epoch, leaving `out`
  // unwritten. The host poisons the communicator once it sees the error (synchronize, or
  // the next call's check), so such a call's output must not be used (graph replays
  // after a failure leave the previous replay's `out` in place), while
  // rewriting `partial` could hand a late peer, still in the aborted call, a tile
  // half-rewritten after it saw the tile's flag; its exit flags would in turn release
  // that peer early. Nothing writes abort_epoch during a skipped call, so every CTA of
  // the call sees the same value.
  const u32 abort_seen = ld_acquire_gpu(&control->abort_epoch);
  const bool skipped = abort_seen != 0 && abort_seen != ctx.epoch;
  // NOTE (Epilogue path): there every CTA computes and also waits for the peer's tiles,
  // holding its SM, so both ranks' kernels must be resident at once: the default takes
  // the path only on a GPU the rank has to itself (CommPath::choose_fused).
  // NOTE: compute CTAs take the low block indices, which the hardware dispatches first:
  // if fewer SMs than the grid are free (another kernel still running), the compute
  // CTAs, which wait for nothing, run first and the communication CTAs follow, instead
  // of communication CTAs spinning on flags of compute CTAs that cannot start. The
  // num_tail_ctas CTAs after them (one-shot and reduce paths only) find no free SM
  // until compute CTAs finish: they join the communication for the last waves.
  const u32 main_grid = gridDim.x - p.num_tail_ctas;
  const u32 first_comm = main_grid - p.num_comm_ctas;
  const Role role = blockIdx.x >= first_comm ? Role::IntraComm : Role::Compute;
  if (threadIdx.x == 0) trace_event(p, TraceKind::CtaStart, role == Role::Compute ? 0 : blockIdx.x < main_grid ? 1 : 2);
  if constexpr (PATH == CommPath::Epilogue) {
    // Every CTA computes and all-reduces its own tiles (no communication CTAs); the last
    // one of this rank to finish runs the exit handshake, as communication CTAs do.
    extern __shared__ u8 smem_raw[];
    const GemmSmem<Cfg> sm(smem_raw);
    u64* w_full = epilogue_mbarrier<Cfg>(sm);
    // With a cluster, both CTAs must agree on skipping (a CTA that computes alone would
    // wait forever on its partner's stage releases, and the cluster barriers must pair
    // up): they take cluster rank 0's reading. `skipped` is the same in every CTA while
    // nothing writes abort_epoch during a skipped call; this keeps a cluster in step even
    // if that ever changes (review helper-31). The ring is initialised either way.
    __shared__ u32 s_skipped;
    if (threadIdx.x == 0) {
      if constexpr (Cfg::CM > 1) s_skipped = skipped ? 1u : 0u;
      mbar_init(w_full, 1);
      sm.init();  // (fences the mbarrier inits)
    }
    gemm_sync<Cfg>();
    bool skip = skipped;
    if constexpr (Cfg::CM > 1) skip = ld_shared_cluster_u32(&s_skipped, 0) != 0;
    if (!skip) {
      const u64 start_ns = globaltimer_ns();
      // (freed_lo long before the first staging: the first interval counts as it is)
      EpilogueAllReduce<Cfg, kScatter> hook{&p, &ctx, w_full, reinterpret_cast<u32*>(w_full + 1), 0, start_ns,
                                  (u32)start_ns - 2 * kEpilogueFreedSlackNs, ~0u, false, false};
      // The producer's and consumers' mbarrier waits trap on expiry ("only a bug"), but
      // here they wait behind the storer: the consumers block on kBarrierCFree while the
      // storer waits up to timeout_ns for the peer's flag (and notices its expiry a few
      // tens of us late), and the producer then waits on stage_empty for about as long.
      // Their bound is two inter-GPU timeouts plus the longest paced copy (sleep pace:
      // kRounds sleeps of up to twice kEpilogueMaxSleepNs; clock pace: one window of at
      // most kEpilogueMaxWindowNs) and a margin, so a missing peer is reported as
      // PeerTimeout instead of trapping (review finding, 1edc06f).
      const u64 slack_ns = 2ull * EpilogueAllReduce<Cfg, kScatter>::kRounds * kEpilogueMaxSleepNs + kEpilogueMaxWindowNs + 10000000ull;
      const u64 intra_timeout_ns = p.timeout_ns > (~0ull - slack_ns) / 2 ? ~0ull : 2 * p.timeout_ns + slack_ns;
      // The epilogue's TMA store goes to `out` only; the hook copies each tile to the peer.
      // Every CTA computes: tile stride and exit count are the launch's CTAs (the host
      // gives this path no communication or tail CTAs).
      // (swapped operands: the engine's rows are N, its columns M; see ops/gemm.cuh)
      gemm_run<Cfg>(&p.tma_a, &p.tma_b, &p.tma_c_out, nullptr, sm, reinterpret_cast<u16*>(p.out), p.n,
                    Cfg::kSwapAB ? p.n : p.m, Cfg::kSwapAB ? p.m : p.n, p.k, blockIdx.x, gridDim.x, intra_timeout_ns, hook,
                    p.split_slices);
    }
    // Every tile of this CTA added (its storer's TMA reads of the workspace done); with a
    // cluster, also the other CTA's last arrivals on this one's ring and reads of
    // s_skipped (both CTAs reach this barrier, computing or not).
    gemm_sync<Cfg>();
    comm_finish<WORLD>(p, ctx, gridDim.x, skip);
  } else if (role == Role::IntraComm) {
    const u32 comm_idx = blockIdx.x - first_comm;
    if (!skipped) {
      if constexpr (PATH == CommPath::TmaOneShot || PATH == CommPath::TmaReduce) {
        comm_role_oneshot<Cfg, WORLD, PATH == CommPath::TmaReduce>(p, ctx);
      } else if (comm_idx < p.num_comm_ctas) {  // (the host gives these paths no tail CTAs)
        if constexpr (PATH == CommPath::Tma) {
          comm_role_tma<Cfg, WORLD>(p, ctx, comm_idx, p.num_comm_ctas);
        } else {
          comm_role_lsu<Cfg, WORLD, PATH == CommPath::Vec16, kScatter>(p, ctx, comm_idx, p.num_comm_ctas);
        }
      }
    }
    comm_finish<WORLD>(p, ctx, gridDim.x - first_comm, skipped);
  } else if (role == Role::Compute && !skipped) {
    extern __shared__ u8 smem_raw[];
    const GemmSmem<Cfg> sm(smem_raw);
    if (threadIdx.x == 0) sm.init();
    __syncthreads();
    PublishTileReady<WORLD> hook{&p, ctx.epoch};
    gemm_run<Cfg>(&p.tma_a, &p.tma_b, &p.tma_c, PATH == CommPath::TmaReduce ? &p.tma_c_out : nullptr, sm, reinterpret_cast<u16*>(p.partial[p.rank]), p.n, p.m, p.n, p.k,
                  blockIdx.x, first_comm, p.timeout_ns, hook);
  }
  // ---- epoch hand-over: the last CTA of this call advances the epoch ----
  __syncthreads();
  if (threadIdx.x == 0) {
    trace_event(p, TraceKind::CtaEnd, 0);
    const u32 finished = atom_add_acq_rel_gpu(&control->ctas_done, 1) + 1;
    if (finished == gridDim.x) {
      control->ctas_done = 0;
      control->comm_next = 0;
      control->epoch = ctx.epoch;
      fence_acq_rel_gpu();
    }
  }
}

}  // namespace mk
