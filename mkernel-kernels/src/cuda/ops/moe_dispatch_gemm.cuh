// Fused MoE dispatch + grouped GEMM over the ranks of one node (NVLink peer stores, no
// multicast).
//
// Expert parallelism: experts g = 0..E-1 live on rank g / El (El = local_experts, its local
// expert e = g % El, weights W_e [N, K]). Rank r holds tokens x_r [T_r, K] and their top-k
// experts (expert_ids [T_r, topk], -1: none). Each routed (token, k) must reach the expert's
// rank and be multiplied by W_e there. One persistent kernel per GPU does both:
//
//   push CTAs (the first num_comm_ctas):
//     1. route: CTA b counts its share of the tokens per expert (a histogram), publishes it,
//        and lists its tokens per expert after those of CTAs 0..b-1 (a stable counting
//        sort: token order within an expert); the last one sends the totals, tokens per
//        expert, to every rank's counts inbox;
//     2. push: once every rank's counts are in, each (expert, chunk of chunk_rows tokens)
//        is one item, dealt round-robin over the push CTAs, expert-major with the ranks
//        interleaved (every rank's expert 0 first): its token rows go to the expert's rank,
//        into the receive buffer at the rows every rank computes alike from the counts,
//        then arrived_q[r][1 + e * seg_chunks + c] = epoch.
//   compute CTAs (the others): the GEMM engine over the receive buffer's rows in use, each
//     row block's B the W_e of the segment it lies in (kGroupsB), its producer warp waiting
//     for the chunks the block's rows meet before loading them (MoeGatherA::a_operand). The
//     CTAs claim their tiles from a per-call counter (the engine's claimed units), and the
//     push CTAs join once their pushes are out, taking what is left.
//
// Receive buffer and out, on rank q: local expert e's rows are one segment, starting at a
// multiple of 128 (so no row block of 64 or 128 rows holds two experts), rank 0's tokens
// for it first, then rank 1's, ..., each in token order. layout (out) gives the segments'
// first rows and the tokens received per (expert, rank); dest_rows (out, on the source) the
// row each (token, k) went to. Rows between a segment's tokens and the next segment are
// padding: out holds garbage there.
//
// Bad input: an id outside -1..E-1, or one repeated within a token's top-k, is recorded in
// the status (record_input_error: InvalidExpertId) and dropped; routed tokens that would not
// fit a rank's recv_capacity (RecvCapacityExceeded), or ranks that passed different chunk
// lengths, capacities, K or expert counts (RanksDisagree: sent with the counts), are recorded
// by every rank, each of which then skips its pushes and GEMM (all ranks see the same
// counts, so none waits for another). End: the all-gather's exit handshake and epoch hand-over (sync/wait.cuh).
// See the design notes (../shared/DESIGN.md section 3: MoE Dispatch+GEMM; chunks of 512 KiB
// of token rows, at least 16 tokens, by default: mkernel_kernels::moe_dispatch_gemm::default_chunk_rows).
#pragma once
#include "../params.cuh"
#include "../sync/wait.cuh"
#include "../gemm/sm90_gemm.cuh"

namespace mk {

// Bounds the host checks too (mkernel_kernels::moe_dispatch_gemm): the routing's shared
// arrays hold one word per expert, the producer's lanes 4 segment ends each.
constexpr u32 kMoeMaxExperts = 1024;
constexpr u32 kMoeMaxLocalExperts = 128;
// Segments of the receive buffer start at multiples of this many rows.
constexpr u32 kMoeSegmentAlign = 128;
constexpr u32 kMoeBackoffNs = 64;
constexpr u32 kMoePushUnroll = 8;

constexpr u32 kMoeEndsPerLane = kMoeMaxLocalExperts / 32;

__device__ __forceinline__ u32 moe_align(u32 rows) { return (rows + kMoeSegmentAlign - 1) / kMoeSegmentAlign * kMoeSegmentAlign; }

// The local scratch (u32 data, no flags: it is the split slots' region): histograms
// [P][E], then send lists [E][max_tokens] (entry index t * topk + k, in token order). Every flag
// is an epoch in the ready inbox (`arrived`, which holds nothing but epochs: other kernels
// compare their flags there with their own epochs, so no count may sit in it, nor in the
// reduced inbox, where the epilogue path keeps split counters): row `from`'s word 0 is from's
// counts flag (at a place no argument moves, so ranks that disagree still see each other's
// counts: moe_can_go_on), words 1.. its arrival flags; in this rank's own row after those, at
// routing_flags_at, push CTA b's histogram flag (+ b) and list flag (+ P + b).
struct MoeScratch {
  u32* hist;
  u32* send_list;
  u32* hist_flag;
  u32* list_flag;
  __device__ __forceinline__ MoeScratch(const MoeDispatchParams& p) {
    hist = reinterpret_cast<u32*>(p.scratch);
    send_list = hist + (u64)p.num_comm_ctas * p.experts;
    hist_flag = reinterpret_cast<u32*>(p.arrived[p.rank]) + (u64)p.rank * p.flag_stride + p.routing_flags_at;
    list_flag = hist_flag + p.num_comm_ctas;
  }
};

// Words every rank sends before its counts, which every rank must agree on (a collective's
// arguments, which the host cannot compare across ranks): chunk_rows, max_tokens,
// recv_capacity, K, E. Rank q's counts region starts its workspace's partial region (an
// offset no argument moves: helper-104): [MKERNEL_MAX_RANKS][kMoeAgreeWords] of these (a
// rank with another E still finds them), then [world][E] counts; the receive buffer follows
// at a fixed offset too (mkernel_kernels::moe_dispatch_gemm::RECV_OFFSET).
constexpr u32 kMoeAgreeWords = 5;
__device__ __forceinline__ u32 moe_agree_word(const MoeDispatchParams& p, u32 i) {
  const u32 w[kMoeAgreeWords] = {p.chunk_rows, p.max_tokens, p.recv_capacity, p.k, p.experts};
  return w[i];
}

// Rank `from`'s tokens for expert g, as rank q's counts inbox holds them.
__device__ __forceinline__ const u32* moe_counts_row(const MoeDispatchParams& p, u32 q, u32 from) {
  return reinterpret_cast<const u32*>(p.counts[q]) + MKERNEL_MAX_RANKS * kMoeAgreeWords + (u64)from * p.experts;
}
// Rank `from`'s collective arguments as rank q's counts region holds them.
__device__ __forceinline__ u32* moe_agree_row(const MoeDispatchParams& p, u32 q, u32 from) {
  return reinterpret_cast<u32*>(p.counts[q]) + from * kMoeAgreeWords;
}
// Rank `from`'s counts flag in rank q's ready inbox (an epoch).
__device__ __forceinline__ u32* moe_counts_flag(const MoeDispatchParams& p, u32 q, u32 from) {
  return reinterpret_cast<u32*>(p.arrived[q]) + (u64)from * p.flag_stride;
}
// Rank `from`'s arrival flag of chunk c of its tokens for local expert e, in rank q's inbox.
__device__ __forceinline__ u32* moe_arrival_flag(const MoeDispatchParams& p, u32 q, u32 from, u32 e, u32 c) {
  return reinterpret_cast<u32*>(p.arrived[q]) + (u64)from * p.flag_stride + 1 + (u64)e * p.seg_chunks + c;
}

// The expert of entry i, checked: -1 (none) and bad ids give ~0u; a bad id (outside
// -1..E-1, or equal to an earlier k's of the same token) is recorded once for the host.
__device__ __forceinline__ u32 moe_expert_of(const MoeDispatchParams& p, const WaitContext& ctx, u32 i, bool record) {
  const i32* ids = reinterpret_cast<const i32*>(p.expert_ids);
  const i32 g = ids[i];
  if (g == -1) return ~0u;
  bool bad = g < -1 || (u32)g >= p.experts;
  const u32 t0 = i / p.topk * p.topk;
  for (u32 j = t0; !bad && j < i; ++j) bad = ids[j] == g;
  if (bad) {
    if (record) record_input_error(ctx, WaitOp::InvalidExpertId, ctx.rank, i, p.experts, (u32)g, true);
    return ~0u;
  }
  return (u32)g;
}

// Step 1 of a push CTA: the stable counting sort of its tokens' entries [i0, i1). Shared
// memory (u32): hist [E] (this CTA's), base [E] (the next free slot per expert), wcnt
// [warps][E] (one round's count per warp). Returns false if a wait gave up.
template <u32 WORLD>
__device__ bool moe_route(const MoeDispatchParams& p, const WaitContext& ctx, const MoeScratch& sc, u32 b, u32* smem) {
  const u32 E = p.experts, P = p.num_comm_ctas, warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = lane_id();
  u32* hist = smem;
  u32* base = hist + E;
  u32* wcnt = base + E;
  const u32 t0 = (u32)((u64)b * p.tokens / P), t1 = (u32)((u64)(b + 1) * p.tokens / P);
  const u32 i0 = t0 * p.topk, i1 = t1 * p.topk;
  for (u32 g = threadIdx.x; g < E; g += blockDim.x) hist[g] = 0;
  for (u32 j = threadIdx.x; j < warps * E; j += blockDim.x) wcnt[j] = 0;
  __syncthreads();
  for (u32 i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
    const u32 g = moe_expert_of(p, ctx, i, true);
    if (g != ~0u) atomicAdd(&hist[g], 1u);
  }
  __syncthreads();
  for (u32 g = threadIdx.x; g < E; g += blockDim.x) sc.hist[(u64)b * E + g] = hist[g];
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) st_release_sys(sc.hist_flag + b, ctx.epoch);
  // The histograms of CTAs 0..b-1: the first free slot of each expert.
  bool ok = true;
  for (u32 c = threadIdx.x; c < b; c += blockDim.x)
    ok = ok && wait_flag_eq(sc.hist_flag + c, ctx.epoch, ctx, WaitOp::LocalRoutingStep, ctx.rank, c, kMoeBackoffNs);
  if (!__syncthreads_and(ok)) return false;
  for (u32 g = threadIdx.x; g < E; g += blockDim.x) {
    u32 s = 0;
    for (u32 c = 0; c < b; ++c) s += sc.hist[(u64)c * E + g];
    base[g] = s;
  }
  __syncthreads();
  // The last CTA has every histogram before its own: the totals go to every rank.
  if (b + 1 == P) {
    for (u32 q = 0; q < WORLD; ++q) {
      u32* row = const_cast<u32*>(moe_counts_row(p, q, p.rank));
      for (u32 g = threadIdx.x; g < E; g += blockDim.x) row[g] = base[g] + hist[g];
      if (threadIdx.x < kMoeAgreeWords) moe_agree_row(p, q, p.rank)[threadIdx.x] = moe_agree_word(p, threadIdx.x);
    }
    fence_acq_rel_sys();
    __syncthreads();
    if (threadIdx.x < WORLD)
      st_release_sys(moe_counts_flag(p, threadIdx.x, p.rank), ctx.epoch);
  }
  // Rounds of blockDim entries: a thread's slot is its expert's next free one plus the
  // entries of that expert before it in the round (earlier warps, then earlier lanes).
  for (u32 r0 = i0; r0 < i1; r0 += blockDim.x) {
    const u32 i = r0 + threadIdx.x;
    const u32 g = i < i1 ? moe_expert_of(p, ctx, i, false) : ~0u;
    const u32 same = __match_any_sync(0xffffffffu, g);
    const u32 before = __popc(same & ((1u << lane) - 1));
    const bool leader = before == 0;
    if (g != ~0u && leader) wcnt[warp * E + g] = __popc(same);
    __syncthreads();
    if (g != ~0u) {
      u32 slot = base[g] + before;
      for (u32 w = 0; w < warp; ++w) slot += wcnt[w * E + g];
      sc.send_list[(u64)g * p.max_tokens + slot] = i;
    }
    __syncthreads();
    if (g != ~0u && leader) {
      atomicAdd(&base[g], __popc(same));
      wcnt[warp * E + g] = 0;
    }
    __syncthreads();
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) st_release_sys(sc.list_flag + b, ctx.epoch);
  return true;
}

// Waits (the first WORLD threads) for every rank's counts in this rank's inbox. Every thread
// of the CTA; false if a wait gave up.
template <u32 WORLD>
__device__ __forceinline__ bool moe_wait_counts(const MoeDispatchParams& p, const WaitContext& ctx) {
  bool ok = true;
  if (threadIdx.x < WORLD) {
    const u32* flag = moe_counts_flag(p, p.rank, threadIdx.x);
    ok = wait_flag_eq(flag, ctx.epoch, ctx, WaitOp::PeerCountsArrived, threadIdx.x, ~0u, kMoeBackoffNs);
  }
  return __syncthreads_and(ok);
}

// Every lane of a warp: the ends of rank q's segments, each padded to kMoeSegmentAlign rows
// (lane L, ends[i]: local expert 32 i + L's; a warp-wide inclusive scan of the padded totals,
// read from this rank's counts inbox, which holds every rank's counts). Returns the rows q
// uses (the last end), in every lane.
template <u32 WORLD>
__device__ __forceinline__ u32 moe_segment_ends(const MoeDispatchParams& p, u32 q, u32 (&ends)[kMoeEndsPerLane]) {
  const u32 lane = lane_id();
  u32 carry = 0;
#pragma unroll
  for (u32 i = 0; i < kMoeEndsPerLane; ++i) {
    const u32 e = 32 * i + lane;
    u32 tot = 0;
    if (e < p.local_experts)
      for (u32 s = 0; s < WORLD; ++s) tot += moe_counts_row(p, p.rank, s)[q * p.local_experts + e];
    u32 v = moe_align(tot);
#pragma unroll
    for (u32 d = 1; d < 32; d *= 2) {
      const u32 up = __shfl_up_sync(0xffffffffu, v, d);
      if (lane >= d) v += up;
    }
    ends[i] = carry + v;
    carry = __shfl_sync(0xffffffffu, ends[i], 31);
  }
  return carry;
}

// Whether the call can go on: every rank passed the same collective arguments (the words
// after its counts) and every rank's receive buffer holds its routed tokens. Every rank
// decides alike from the same counts (a disagreement is seen by both sides); if not and
// `record` (one thread of the rank, after every expert-id record of the call: it holds the
// rank's own counts flag, released after them), records why for the host. Every lane of a warp.
template <u32 WORLD>
__device__ bool moe_can_go_on(const MoeDispatchParams& p, const WaitContext& ctx, bool record) {
  for (u32 q = 0; q < WORLD; ++q) {
    for (u32 i = 0; i < kMoeAgreeWords; ++i) {
      const u32 theirs = moe_agree_row(p, p.rank, q)[i], mine = moe_agree_word(p, i);
      if (theirs != mine) {
        if (record) record_input_error(ctx, WaitOp::RanksDisagree, q, i, mine, theirs, false);
        return false;
      }
    }
  }
  u32 ends[kMoeEndsPerLane];
  for (u32 q = 0; q < WORLD; ++q) {
    const u32 rows = moe_segment_ends<WORLD>(p, q, ends);
    if (rows > p.recv_capacity) {
      if (record) record_input_error(ctx, WaitOp::RecvCapacityExceeded, q, ~0u, p.recv_capacity, rows, false);
      return false;
    }
  }
  return true;
}

// Exclusive prefix sum of data[0, n) in place, data[n] = the total. Every thread of the CTA;
// tmp: 33 shared words.
__device__ void moe_block_scan(u32* data, u32 n, u32* tmp) {
  const u32 warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = lane_id();
  const u32 per = (n + blockDim.x - 1) / blockDim.x;
  const u32 lo = min(n, threadIdx.x * per), hi = min(n, lo + per);
  u32 sum = 0;
  for (u32 i = lo; i < hi; ++i) sum += data[i];
  u32 v = sum;
#pragma unroll
  for (u32 d = 1; d < 32; d *= 2) {
    const u32 up = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += up;
  }
  if (lane == 31) tmp[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    u32 acc = 0;
    for (u32 w = 0; w < warps; ++w) {
      const u32 t = tmp[w];
      tmp[w] = acc;
      acc += t;
    }
    tmp[32] = acc;
  }
  __syncthreads();
  u32 run = tmp[warp] + v - sum;
  for (u32 i = lo; i < hi; ++i) {
    const u32 x = data[i];
    data[i] = run;
    run += x;
  }
  if (threadIdx.x == 0) data[n] = tmp[32];
  __syncthreads();
}

// Step 2 of a push CTA: its share of the (expert, chunk) items. Shared memory (u32):
// seg_base [E] (the first row of this rank's tokens for g on g's rank), item_start [E + 1]
// (prefix of the chunks over experts in push order: o = e * WORLD + q for g = q El + e).
template <u32 WORLD>
__device__ void moe_push(const MoeDispatchParams& p, const WaitContext& ctx, const MoeScratch& sc, u32 b, u32* smem) {
  const u32 E = p.experts, El = p.local_experts, P = p.num_comm_ctas, ch = p.chunk_rows;
  u32* seg_base = smem;
  u32* item_start = seg_base + E;
  u32* tmp = item_start + E + 1;
  const u32* mine = moe_counts_row(p, p.rank, p.rank);
  // Each destination's segments: warp q walks rank q's experts (ends as every rank computes
  // them), this rank's tokens after those of ranks before it.
  const u32 warp = threadIdx.x / 32, lane = lane_id();
  for (u32 q = warp; q < WORLD; q += blockDim.x / 32) {
    u32 ends[kMoeEndsPerLane];
    moe_segment_ends<WORLD>(p, q, ends);
#pragma unroll
    for (u32 i = 0; i < kMoeEndsPerLane; ++i) {
      const u32 e = 32 * i + lane;
      if (e >= El) continue;
      const u32 g = q * El + e;
      u32 tot = 0, before = 0;
      for (u32 s = 0; s < WORLD; ++s) {
        const u32 c = moe_counts_row(p, p.rank, s)[g];
        tot += c;
        if (s < p.rank) before += c;
      }
      seg_base[g] = ends[i] - moe_align(tot) + before;
    }
  }
  // The items: this rank's chunks per expert, in push order, then their prefix.
  for (u32 o = threadIdx.x; o < E; o += blockDim.x) item_start[o] = (u32)(((u64)mine[(o % WORLD) * El + o / WORLD] + ch - 1) / ch);
  __syncthreads();
  moe_block_scan(item_start, E, tmp);
  const u32 items = item_start[E];
  const u64 row_vecs = (u64)p.k / 8;  // 16-byte vectors per row (K % 8 == 0: the host's rule)
  u32* dest_rows = reinterpret_cast<u32*>(p.dest_rows);
  for (u32 item = b; item < items; item += P) {
    // (the last o with item_start[o] <= item: binary search over E + 1 starts)
    u32 lo = 0, hi = E;
    while (hi - lo > 1) {
      const u32 mid = (lo + hi) / 2;
      if (item_start[mid] <= item) lo = mid; else hi = mid;
    }
    const u32 o = lo, q = o % WORLD, e = o / WORLD, g = q * El + e, c = item - item_start[o];
    const u32 r0 = c * ch, rows = min(ch, mine[g] - r0);
    const u32* list = sc.send_list + (u64)g * p.max_tokens + r0;
    uint4* dst = reinterpret_cast<uint4*>(p.recv[q]) + (u64)(seg_base[g] + r0) * row_vecs;
    const uint4* src = reinterpret_cast<const uint4*>(p.x);
    // A warp a token row (no division per vector: run 426's loop divided a 64-bit index by
    // the row length for every 16 bytes), kMoePushUnroll vectors a lane in flight.
    for (u32 j = warp; j < rows; j += blockDim.x / 32) {
      const u32 entry = list[j];
      if (lane == 0) dest_rows[entry] = seg_base[g] + r0 + j;
      const uint4* s_row = src + (u64)(entry / p.topk) * row_vecs;
      uint4* d_row = dst + (u64)j * row_vecs;
      for (u64 v0 = lane; v0 < row_vecs; v0 += 32 * kMoePushUnroll) {
        uint4 v[kMoePushUnroll];
#pragma unroll
        for (u32 u = 0; u < kMoePushUnroll; ++u) {
          const u64 i = v0 + 32 * u;
          if (i < row_vecs) v[u] = __ldg(s_row + i);
        }
#pragma unroll
        for (u32 u = 0; u < kMoePushUnroll; ++u) {
          const u64 i = v0 + 32 * u;
          if (i < row_vecs) d_row[i] = v[u];
        }
      }
    }
    // Every thread's stores, then one system-scope fence and the release by thread 0: the
    // barrier puts the others' stores before its fence, which is cumulative (a fence in every
    // thread: run 426, bench/NOTES.md 59).
    __syncthreads();
    if (threadIdx.x == 0) {
      fence_acq_rel_sys();
      st_release_sys(moe_arrival_flag(p, q, p.rank, e, c), ctx.epoch);
    }
  }
}

// Push role of CTA b: route, then (once every rank's counts are in and they fit) push.
// dest_rows of dropped entries (-1, bad ids) are ~0u.
template <class Cfg, u32 WORLD>
__device__ void moe_push_role(const MoeDispatchParams& p, const WaitContext& ctx, u32 b, u32* smem) {
  const MoeScratch sc(p);
  u32* dest_rows = reinterpret_cast<u32*>(p.dest_rows);
  const u32 P = p.num_comm_ctas;
  for (u32 i = (u32)((u64)b * p.tokens / P) * p.topk + threadIdx.x; i < (u32)((u64)(b + 1) * p.tokens / P) * p.topk;
       i += blockDim.x)
    dest_rows[i] = ~0u;
  if (!moe_route<WORLD>(p, ctx, sc, b, smem)) return;
  bool ok = true;
  for (u32 c = threadIdx.x; c < P; c += blockDim.x)
    ok = ok && wait_flag_eq(sc.list_flag + c, ctx.epoch, ctx, WaitOp::LocalRoutingStep, ctx.rank, c, kMoeBackoffNs);
  if (!__syncthreads_and(ok)) return;
  if (!moe_wait_counts<WORLD>(p, ctx)) return;
  if (!moe_can_go_on<WORLD>(p, ctx, false)) return;  // (recorded by the compute CTAs)
  __syncthreads();                               // (the routing's shared arrays, reused)
  moe_push<WORLD>(p, ctx, sc, b, smem);
}

// Hook of the GEMM (every CTA's, the push CTAs' once their pushes are out): each unit's A rows come from this rank's receive buffer once
// the chunks they meet have arrived, and its B is its segment's expert's (kGroupsB).
template <class Cfg, u32 WORLD>
struct MoeGatherA {
  static constexpr bool kPublishes = false;
  static constexpr bool kUsesStaging = false;
  static constexpr bool kEqualGroupsInOneWave = false;
  static constexpr bool kShiftsLastRowBlock = false;  // (row blocks are the receive buffer's)
  static constexpr bool kSplitsLastWave = false;
  static constexpr bool kClaimsUnits = true;  // (tiles claimed from the call's counter: the push CTAs join)
  static constexpr bool kKeepsSomeRows = false;
  static constexpr bool kGathersA = true;
  static constexpr bool kGroupsB = true;
  static constexpr bool kRankOrder = false;
  static_assert(kMoeSegmentAlign % Cfg::BM == 0, "no row block holds two segments");
  const MoeDispatchParams* p;
  const WaitContext* ctx;
  bool failed;            // (warp-uniform) a wait timed out or the call aborted
  bool have_ends;         // (warp-uniform) `ends` holds the segments' ends
  u32 seen_blocks;        // lane L, bit b: row block 32 L + b has been seen whole
  u32 expert;             // the last unit's local expert (b_row_base)
  u32 ends[kMoeEndsPerLane];  // lane L, [i]: the end of local expert 32 i + L's segment (padded)

  __device__ __forceinline__ void operator()(u32) const {}
  __device__ __forceinline__ bool orders_by_rank(u32) const { return false; }
  __device__ __forceinline__ u32 order_first_row() const { return 0; }
  __device__ __forceinline__ u32 order_shard_rows() const { return 0; }

  __device__ __forceinline__ u32 b_row_base() const { return expert * p->n; }
  // The call's unit counter (zero at a call's start: end_call resets it).
  __device__ __forceinline__ u32* unit_counter() const { return &ctx->control->comm_next; }

  // Every lane of the producer warp, per unit: finds the unit's expert (the segments whose
  // end is <= a_row come before it), then waits for every chunk of every source rank its
  // rows [a_row, a_row + BM) meet (the lanes poll at once; one timeout in all), once per
  // row block per call (the first 1024).
  __device__ __forceinline__ u32 a_operand(u32 a_row, const TmaDescriptor*& map) {
    map = &p->tma_a;
    const u32 lane = lane_id();
    if (!have_ends) {
      moe_segment_ends<WORLD>(*p, p->rank, ends);
      have_ends = true;
    }
    u32 e = 0;
#pragma unroll
    for (u32 i = 0; i < kMoeEndsPerLane; ++i) e += __popc(__ballot_sync(0xffffffffu, 32 * i + lane < p->local_experts && ends[i] <= a_row));
    expert = e;
    if (failed) return a_row;
    const u32 block = a_row / Cfg::BM;
    const bool recorded = block < 32 * 32;
    const u32 word = __shfl_sync(0xffffffffu, seen_blocks, recorded ? block / 32 : 0);
    if (recorded && ((word >> (block % 32)) & 1u)) return a_row;
    // (the segment's first row: the end of the one before)
    u32 seg0 = 0;
    if (e > 0) {
      const u32 prev = e - 1;
      u32 mine = 0;
#pragma unroll
      for (u32 i = 0; i < kMoeEndsPerLane; ++i) if (i == prev / 32) mine = ends[i];
      seg0 = __shfl_sync(0xffffffffu, mine, prev % 32);
    }
    const u32 g = p->rank * p->local_experts + e, ch = p->chunk_rows;
    const u64 start = globaltimer_ns();
    WaitContext left = *ctx;
    bool ok = true;
    u32 lo = seg0;
    for (u32 s = 0; ok && s < WORLD; ++s) {
      const u32 cnt = moe_counts_row(*p, p->rank, s)[g];
      const u32 r0 = max(a_row, lo), r1 = min(a_row + Cfg::BM, lo + cnt);
      for (u32 c = (r0 - lo) / ch + lane; ok && r0 < r1 && (u64)c * ch < r1 - lo; c += 32) {
        const u64 spent = globaltimer_ns() - start;
        left.timeout_ns = spent < ctx->timeout_ns ? ctx->timeout_ns - spent : 1;
        ok = wait_flag_eq(moe_arrival_flag(*p, p->rank, s, e, c), ctx->epoch, left, WaitOp::PeerTokensArrived, s, e * p->seg_chunks + c,
                          kMoeBackoffNs);
      }
      lo += cnt;
    }
    failed = !__all_sync(0xffffffffu, ok);
    __syncwarp();                // (each lane's acquire, then the TMA lane's loads: see GatherA)
    fence_proxy_async_global();  // the rows' generic stores (acquired by the lanes) -> this warp's TMA loads
    if (!failed && recorded && lane == block / 32) seen_blocks |= 1u << (block % 32);
    return a_row;
  }
};

// The first warp of compute CTA 0 writes the layout: the segments' first rows (and the rows
// used), then the tokens received per (local expert, source rank).
template <u32 WORLD>
__device__ void moe_write_layout(const MoeDispatchParams& p) {
  u32* out = reinterpret_cast<u32*>(p.layout);
  const u32 El = p.local_experts, lane = lane_id();
  u32 ends[kMoeEndsPerLane];
  const u32 rows = moe_segment_ends<WORLD>(p, p.rank, ends);
#pragma unroll
  for (u32 i = 0; i < kMoeEndsPerLane; ++i) {
    const u32 e = 32 * i + lane;
    if (e >= El) continue;
    u32 tot = 0;
    for (u32 s = 0; s < WORLD; ++s) {
      const u32 c = moe_counts_row(p, p.rank, s)[p.rank * El + e];
      out[El + 1 + e * WORLD + s] = c;
      tot += c;
    }
    out[e] = ends[i] - moe_align(tot);
  }
  if (lane == 0) out[El] = rows;
}

template <class Cfg, u32 WORLD>
__device__ __forceinline__ void moe_dispatch_gemm_kernel(const MoeDispatchParams& p) {
  static_assert(WORLD >= 2 && WORLD <= MKERNEL_MAX_RANKS, "an MoE dispatch needs 2..MKERNEL_MAX_RANKS ranks");
  static_assert(!Cfg::kSwapAB && Cfg::kClusterSize == 1, "unswapped tiles without clusters (a row block's B is its expert's)");
  // (the routing's shared arrays: hist, base, warps x wcnt; then seg_base, item_start)
  static_assert((2 + Cfg::kThreads / 32) * kMoeMaxExperts * 4 <= Cfg::kSmemBytes &&
                (2 * kMoeMaxExperts + 1) * 4 <= Cfg::kSmemBytes, "the routing's arrays fit the launch's shared memory");
  const WaitContext ctx = begin_call(reinterpret_cast<ControlBlock*>(p.control), p.status, p.timeout_ns, p.rank);
  const bool skipped = skipped_call(ctx);
  extern __shared__ u8 smem_raw[];
  if (blockIdx.x < p.num_comm_ctas) {
    if (!skipped) moe_push_role<Cfg, WORLD>(p, ctx, blockIdx.x, reinterpret_cast<u32*>(smem_raw));
    // (the routing's shared arrays are done with: the ring reuses their memory, TMA writing it)
    fence_proxy_async_shared();
    __syncthreads();
  }
  {  // every CTA, the push CTAs once their pushes are out: the GEMM's tiles are claimed
    const GemmSmem<Cfg> sm(smem_raw);
    if (threadIdx.x == 0) sm.init();
    gemm_sync<Cfg>();
    const bool counted = !skipped && moe_wait_counts<WORLD>(p, ctx);
    // (every warp: whether every rank's tokens fit, the first compute CTA's lane 0 recording it if not)
    const bool fits = counted && moe_can_go_on<WORLD>(p, ctx, blockIdx.x == p.num_comm_ctas && threadIdx.x == 0);
    if (counted && blockIdx.x == p.num_comm_ctas && threadIdx.x < 32) moe_write_layout<WORLD>(p);
    if (fits) {
      MoeGatherA<Cfg, WORLD> hook{&p, &ctx, false, false, 0u, 0u, {}};
      // (every warp: the rows in use; the producer warp finds the segments' ends again at
      // its first unit, so that no other warp keeps them: run past the register split)
      u32 ends[kMoeEndsPerLane];
      const u32 rows = moe_segment_ends<WORLD>(p, p.rank, ends);
      // The producer's waits are bounded by timeout_ns; the consumers and storer wait behind them.
      const u64 slack_ns = 10000000ull;
      const u64 intra_timeout_ns = p.timeout_ns > (~0ull - slack_ns) / 2 ? ~0ull : 2 * p.timeout_ns + slack_ns;
      gemm_run<Cfg>(&p.tma_a, &p.tma_b, &p.tma_c, nullptr, sm, reinterpret_cast<u16*>(p.out), p.n, rows, p.n, p.k, 0u,
                    gridDim.x, intra_timeout_ns, hook);
    }
    gemm_sync<Cfg>();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    exit_handshake<WORLD>(p.exit_flags, p.rank, ctx, gridDim.x, skipped);
    end_call(ctx);
  }
}

}  // namespace mk
