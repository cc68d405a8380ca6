// Fused MoE grouped GEMM + combine over the ranks of one node (NVLink peer stores, no
// multicast): the way back of ops/moe_dispatch_gemm.cuh.
//
// After a dispatch, rank q holds the rows its experts received in the dispatch's layout
// (local expert e's segment from layout[e], rank 0's tokens for it first, each source's in
// token order) and every source rank s knows where each of its (token, k) entries went
// (dest_rows). Here rank q's h [recv_capacity, K] holds those rows after the experts' first
// GEMM and activation; this kernel computes out = h * W_e^T per segment and brings every
// row back to its source, which sums its tokens' rows weighted:
//   y_s[t] = sum over k of topk_weights_s[t, k] * (h_q[row] * W_e^T),  row = dest_rows_s[t, k].
//
// One persistent kernel per GPU:
//   push CTA 0, first: writes this rank's routes into every expert rank's map (map_q[row] =
//     {epoch, t * topk + k, this rank, expert} for each of its entries routed to q) with its collective arguments and
//     whether its own layout holds together (agree words), then releases the map flag
//     arrived_q[rank][0] on every rank q.
//   push CTAs (the first num_comm_ctas): once every rank's map flag is in and every rank
//     agrees (combine_go), each warp walks this rank's tiles in the compute CTAs' order (push
//     warp w of W: tiles w, w + W, ...): waits until tile t is stored (a local flag), copies each of its rows that holds
//     a token (not a segment's padding) to its source's slot (slots_s[entry][tile's columns],
//     16-byte stores over NVLink), and release arrived_s[rank][1 + tile] on every rank s.
//   compute CTAs: the GEMM engine over the segments' rows (layout[El] rows), each row
//     block's B its segment's expert's (kGroupsB), every stored tile released to the push
//     CTAs (kPublishes).
//   then every push CTA's warps and every compute CTA's consumer warps (after the GEMM) sum:
//     a warp takes a group of tokens (32 / topk of them, a lane per (token, k)) and a
//     column block, waits (each lane its entry's arrival flag) and adds the entries' rows
//     in fp32, in k order, rounding once to bf16.
//
// Workspace (the partial region, on every rank): agree words at 0, the map at
// kCombineMapOffset, then the slots, then out (mkernel_kernels::moe_gemm_combine::Regions).
//
// Bad input: an expert id outside -1..E-1 (InvalidExpertId) or a destination row at or past
// recv_capacity (InvalidDestRow) is recorded and its entry left out of the sum; a layout whose
// segments do not tile its rows (InvalidLayout) or ranks whose arguments differ
// (CombineRanksDisagree) are seen by every rank alike (the agree words), and every rank then
// skips its pushes and sums (y unwritten); a row holding a token whose map entry is not this
// call's from the source and expert the layout gives it, or a padding row that holds one
// (InconsistentRoutes: layout and dest_rows from different dispatches, or an entry the source
// left out for a bad id), is recorded and not sent; a destination row past the expert rank's
// rows in use is recorded (InvalidDestRow) and left out. A destination row that is a padding
// row of its segment is not detected on the source: the expert rank records it, but the source
// sums whatever its slot holds.
#pragma once
#include "../params.cuh"
#include "../sync/wait.cuh"
#include "../gemm/sm90_gemm.cuh"
#include "moe_dispatch_gemm.cuh"

namespace mk {

// Words every rank writes into every rank's agree region with its map: recv_capacity,
// max_tokens, topk, experts, N, K and the tile (BM | BN << 16: the arrival flags are per tile,
// helper-113), which must be equal on every rank; then whether its own layout holds together
// (1) or not (0), and its rows in use (a source refuses a destination row past them, which no
// tile covers, instead of waiting for it).
constexpr u32 kCombineArgWords = 7;
constexpr u32 kCombineAgreeWords = kCombineArgWords + 2;
// Bytes before the map in the partial region (the agree words: MKERNEL_MAX_RANKS x 9 u32).
constexpr u32 kCombineMapOffset = 512;
// 16-byte vectors a push thread has in flight.
constexpr u32 kCombinePushUnroll = 8;
static_assert(MKERNEL_MAX_RANKS * kCombineAgreeWords * 4 <= kCombineMapOffset, "the agree words fit before the map");

template <class Cfg>
__device__ __forceinline__ u32 combine_arg_word(const MoeCombineParams& p, u32 i) {
  switch (i) {
    case 0: return p.recv_capacity;
    case 1: return p.max_tokens;
    case 2: return p.topk;
    case 3: return p.experts;
    case 4: return p.n;
    case 5: return p.k;
    default: return Cfg::BM | Cfg::BN << 16;
  }
}
// Rank `from`'s agree words in rank q's region; its rows in use (word kCombineArgWords + 1).
__device__ __forceinline__ u32* combine_agree_row(const MoeCombineParams& p, u32 q, u32 from) {
  return reinterpret_cast<u32*>(p.agree[q]) + from * kCombineAgreeWords;
}
// Rank `from`'s map flag in rank q's inbox.
__device__ __forceinline__ u32* combine_map_flag(const MoeCombineParams& p, u32 q, u32 from) {
  return reinterpret_cast<u32*>(p.arrived[q]) + (u64)from * p.flag_stride;
}
// Rank `from`'s arrival flag of tile (mb, nb) in rank q's inbox.
__device__ __forceinline__ u32* combine_arrival_flag(const MoeCombineParams& p, u32 q, u32 from, u32 tile) {
  return reinterpret_cast<u32*>(p.arrived[q]) + (u64)from * p.flag_stride + 1 + tile;
}
// This rank's flag of its own tile t (the compute CTAs' order) being stored.
__device__ __forceinline__ u32* combine_tile_flag(const MoeCombineParams& p, u32 t) {
  return reinterpret_cast<u32*>(p.arrived[p.rank]) + (u64)p.rank * p.flag_stride + p.tile_flags_at + t;
}

// Every lane of a warp: the end of local expert x's segment (the next one's start, the last
// one's: the rows used), ~0u past the local experts.
__device__ __forceinline__ u32 combine_segment_end(const MoeCombineParams& p, u32 x) {
  const u32* layout = reinterpret_cast<const u32*>(p.layout);
  if (x >= p.local_experts) return ~0u;
  return layout[x + 1];  // (layout[El] is the rows used: the last segment's end)
}

// Every lane of a warp: the local expert whose segment holds `row` (the segments ending at
// or before it, counted by ballots, kMoeEndsPerLane experts a lane).
__device__ __forceinline__ u32 combine_expert_of(const MoeCombineParams& p, u32 row) {
  const u32 lane = lane_id();
  u32 e = 0;
#pragma unroll
  for (u32 i = 0; i < kMoeEndsPerLane; ++i) {
    if (32 * i >= p.local_experts) break;
    e += __popc(__ballot_sync(0xffffffffu, combine_segment_end(p, 32 * i + lane) <= row));
  }
  return e;
}

// Every lane of a warp: whether this rank's layout tiles its rows as a dispatch's does:
// segment 0 starts at row 0, each at a multiple of kMoeSegmentAlign, each ending (its tokens
// padded to kMoeSegmentAlign) where the next starts, the last at the rows used, which are
// within recv_capacity.
template <u32 WORLD>
__device__ bool combine_layout_ok(const MoeCombineParams& p) {
  const u32* layout = reinterpret_cast<const u32*>(p.layout);
  const u32 El = p.local_experts, rows = layout[El];
  bool ok = rows <= p.recv_capacity && rows % kMoeSegmentAlign == 0 && layout[0] == 0;
  for (u32 e = lane_id(); e < El; e += 32) {
    u64 tot = 0;
    for (u32 s = 0; s < WORLD; ++s) tot += layout[El + 1 + e * WORLD + s];
    const u64 end = (u64)layout[e] + (tot + kMoeSegmentAlign - 1) / kMoeSegmentAlign * kMoeSegmentAlign;
    ok = ok && layout[e] % kMoeSegmentAlign == 0 && end == (u64)layout[e + 1];
  }
  return __all_sync(0xffffffffu, ok);
}

// Every lane of a warp: waits for every rank's map flag in this rank's inbox, then decides
// whether the call goes on: every rank passed the same arguments and has a layout that holds
// together (every rank decides alike from the same words). If not and `record` (push CTA
// 0's first warp, after its map's expert-id records), records why. False also if a wait gave up.
template <class Cfg, u32 WORLD>
__device__ bool combine_go(const MoeCombineParams& p, const WaitContext& ctx, bool record) {
  const u32 lane = lane_id();
  bool ok = true;
  if (lane < WORLD) ok = wait_flag_eq(combine_map_flag(p, p.rank, lane), ctx.epoch, ctx, WaitOp::PeerMapWritten, lane, ~0u, kMoeBackoffNs);
  if (!__all_sync(0xffffffffu, ok)) return false;
  __syncwarp();  // (each lane's acquire, then every lane's reads of the words)
  for (u32 q = 0; q < WORLD; ++q) {
    const u32* row = combine_agree_row(p, p.rank, q);
    for (u32 i = 0; i < kCombineArgWords; ++i) {
      const u32 theirs = __ldcg(row + i), mine = combine_arg_word<Cfg>(p, i);
      if (theirs != mine) {
        if (record && lane == 0) record_input_error(ctx, WaitOp::CombineRanksDisagree, q, i, mine, theirs, false);
        return false;
      }
    }
  }
  for (u32 q = 0; q < WORLD; ++q) {
    if (__ldcg(combine_agree_row(p, p.rank, q) + kCombineArgWords) != 1) {
      if (record && lane == 0) record_input_error(ctx, WaitOp::InvalidLayout, q, ~0u, 1, 0, false);
      return false;
    }
  }
  return true;
}

// Whether entry i (token i / topk, its k-th expert) takes part: its id names an expert and its
// row lies in the receive buffer (u32::MAX: the dispatch left it out); with `record`, a bad id
// (whatever its row) or row is recorded (once a call).
// `q` and `row`: where its row is.
__device__ __forceinline__ bool combine_entry(const MoeCombineParams& p, const WaitContext& ctx, u32 i, bool record, u32& q, u32& row) {
  const i32 g = reinterpret_cast<const i32*>(p.expert_ids)[i];
  row = reinterpret_cast<const u32*>(p.dest_rows)[i];
  if (g == -1) return false;
  if (g < -1 || (u32)g >= p.experts) {
    if (record) record_input_error(ctx, WaitOp::InvalidExpertId, ctx.rank, i, p.experts, (u32)g, true);
    return false;
  }
  if (row == ~0u) return false;  // (the dispatch left it out: a repeated id)
  q = (u32)g / p.local_experts;
  if (row >= p.recv_capacity) {
    if (record) record_input_error(ctx, WaitOp::InvalidDestRow, q, i, p.recv_capacity, row, true);
    return false;
  }
  return true;
}

// Rank q's rows in use, as its agree words in this rank's region say (after combine_go).
__device__ __forceinline__ u32 combine_rows_used(const MoeCombineParams& p, u32 q) {
  return __ldcg(combine_agree_row(p, p.rank, q) + kCombineArgWords + 1);
}

// Push CTA 0 (every thread): this rank's routes into the expert ranks' maps, its arguments
// and layout verdict into every rank's agree words, then its map flag on every rank.
template <class Cfg, u32 WORLD>
__device__ void combine_write_maps(const MoeCombineParams& p, const WaitContext& ctx, u32* smem) {
  if (threadIdx.x < 32) {
    const bool ok = combine_layout_ok<WORLD>(p);
    if (threadIdx.x == 0) {
      smem[0] = ok ? 1u : 0u;
      smem[1] = ok ? reinterpret_cast<const u32*>(p.layout)[p.local_experts] : 0u;
    }
  }
  const u32 entries = p.tokens * p.topk;
  for (u32 i = threadIdx.x; i < entries; i += blockDim.x) {
    u32 q, row;
    if (combine_entry(p, ctx, i, true, q, row)) {
      const u32 g = (u32)reinterpret_cast<const i32*>(p.expert_ids)[i];
      reinterpret_cast<uint4*>(p.map[q])[row] = make_uint4(ctx.epoch, i, p.rank, g);
    }
  }
  __syncthreads();
  for (u32 j = threadIdx.x; j < WORLD * kCombineAgreeWords; j += blockDim.x) {
    const u32 q = j / kCombineAgreeWords, i = j % kCombineAgreeWords;
    combine_agree_row(p, q, p.rank)[i] = i < kCombineArgWords ? combine_arg_word<Cfg>(p, i) : smem[i - kCombineArgWords];
  }
  // Every thread's stores, then one system-scope fence (cumulative over the barrier) and the
  // releases (as the dispatch's pushes).
  __syncthreads();
  if (threadIdx.x == 0) fence_acq_rel_sys();
  __syncthreads();
  if (threadIdx.x < WORLD) st_release_sys(combine_map_flag(p, threadIdx.x, p.rank), ctx.epoch);
}

// A push warp's tiles: push warp w of W (W = push CTAs x warps a CTA) takes tiles w, w + W,
// ... of the compute CTAs' order over the rows used, each on its own (no CTA barrier, so a
// CTA has as many tiles in flight as warps: run 442, a CTA-wide tile at a time moved ~5 GB/s a
// CTA, its fixed steps' latency ~10 us a tile). For each tile: wait until it is stored, find
// each row's destination (the source's slot of the row's entry, or none for a segment's
// padding), copy the rows' vectors, fence, and release the tile's arrival flag on every rank.
// `table`: this warp's shared u64 [BM] of row destinations. Returns false if a wait gave up.
template <class Cfg, u32 WORLD>
__device__ bool combine_push(const MoeCombineParams& p, const WaitContext& ctx, u32 w, u32 warps, u64* table) {
  const u32* layout = reinterpret_cast<const u32*>(p.layout);
  const u32 El = p.local_experts, rows_used = layout[El];
  const TileScheduler sched(rows_used, p.n, Cfg::BM, Cfg::BN, 1, 1);
  const uint4* map = reinterpret_cast<const uint4*>(p.map[p.rank]);
  const u64 entries = (u64)p.max_tokens * p.topk;
  const u16* out = reinterpret_cast<const u16*>(p.out);
  const u32 lane = lane_id();
  for (u32 t = w; t < sched.total; t += warps) {
    u32 mb, nb;
    sched.coords(t, mb, nb);
    const u32 r0 = mb * Cfg::BM, c0 = nb * Cfg::BN, cols = min(Cfg::BN, p.n - c0);
    // The tile's segment, and where each source's rows end in it (every lane).
    const u32 e = combine_expert_of(p, r0);
    u32 src_end[WORLD];
    u32 end = layout[e];
#pragma unroll
    for (u32 s = 0; s < WORLD; ++s) {
      end += layout[El + 1 + e * WORLD + s];
      src_end[s] = end;
    }
    bool ok = true;
    if (lane == 0) ok = wait_flag_eq(combine_tile_flag(p, t), ctx.epoch, ctx, WaitOp::LocalTileStored, ctx.rank, t, kMoeBackoffNs);
    if (!__shfl_sync(0xffffffffu, ok, 0)) return false;
    __syncwarp();  // (lane 0's acquire, then every lane's reads of the tile)
    for (u32 i = lane; i < Cfg::BM; i += 32) {
      const u32 r = r0 + i;
      u64 dst = 0;
      // (the map entry of this call names the source the layout gives the row and the
      // segment's expert: a row no source routed this call holds an older epoch, or another
      // kernel's words; a padding row should hold none of this call's)
      const uint4 m = __ldcg(map + r);
      if (r < src_end[WORLD - 1]) {
        u32 s = 0;
#pragma unroll
        for (u32 j = 0; j + 1 < WORLD; ++j) s += src_end[j] <= r ? 1u : 0u;
        if (m.x == ctx.epoch && m.z == s && m.w == p.rank * El + e && m.y < entries) {
          dst = p.slots[s] + ((u64)m.y * p.n + c0) * 2;
        } else {
          record_input_error(ctx, WaitOp::InconsistentRoutes, s, r, (u32)min(entries, (u64)~0u), m.x == ctx.epoch ? m.y : ~0u, true);
        }
      } else if (m.x == ctx.epoch && m.z < WORLD) {
        record_input_error(ctx, WaitOp::InconsistentRoutes, m.z, r, (u32)min(entries, (u64)~0u), m.y, true);
      }
      table[i] = dst;
    }
    __syncwarp();
    // The tile's 16-byte vectors (cols is a multiple of 8: N % 8 == 0) as one range over its
    // rows, kCombinePushUnroll a lane in flight.
    const u32 vecs = cols / 8, total = Cfg::BM * vecs;
    for (u32 base = lane; base < total; base += 32 * kCombinePushUnroll) {
      uint4 x[kCombinePushUnroll];
      u64 d[kCombinePushUnroll];
#pragma unroll
      for (u32 u = 0; u < kCombinePushUnroll; ++u) {
        const u32 idx = base + 32 * u, i = idx / vecs, v = idx % vecs;
        d[u] = idx < total ? table[i] : 0;
        if (d[u] != 0) {
          x[u] = ld_cg_v4(out + (u64)(r0 + i) * p.n + c0 + 8 * v);
          d[u] += 16 * v;
        }
      }
#pragma unroll
      for (u32 u = 0; u < kCombinePushUnroll; ++u)
        if (d[u] != 0) *reinterpret_cast<uint4*>(d[u]) = x[u];
    }
    // Every lane's stores, then one system-scope fence (cumulative over the warp barrier) and
    // the releases.
    __syncwarp();
    if (lane == 0) fence_acq_rel_sys();
    __syncwarp();
    if (lane < WORLD) st_release_sys(combine_arrival_flag(p, lane, p.rank, mb * p.n_blocks + nb), ctx.epoch);
  }
  return true;
}

// bf16 x V from global memory (V = 8: 16 bytes, 4: 8 bytes) into floats; from L2 (a peer
// wrote them: no line of an earlier call's left in L1).
template <u32 V>
__device__ __forceinline__ void combine_load(const u16* src, float (&x)[V]) {
  static_assert(V == 8 || V == 4, "a lane's columns: 8 or 4");
  if constexpr (V == 8) {
    const uint4 w = __ldcg(reinterpret_cast<const uint4*>(src));
    const u32 u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (u32 j = 0; j < 4; ++j) { x[2 * j] = bf16_lo(u[j]); x[2 * j + 1] = bf16_hi(u[j]); }
  } else {
    const uint2 w = __ldcg(reinterpret_cast<const uint2*>(src));
    const u32 u[2] = {w.x, w.y};
#pragma unroll
    for (u32 j = 0; j < 2; ++j) { x[2 * j] = bf16_lo(u[j]); x[2 * j + 1] = bf16_hi(u[j]); }
  }
}

// The weighted sum, one warp: sum warp `w` of `warps` takes units w, w + warps, ...; a unit
// is a group of G = 32 / topk tokens (a lane per entry) and a column block of BN columns
// (BN / 32 a lane). Returns false if a wait gave up.
template <class Cfg>
__device__ bool combine_sum(const MoeCombineParams& p, const WaitContext& ctx, u32 w, u32 warps) {
  constexpr u32 V = Cfg::BN / 32;
  constexpr u32 kBatch = 2;  // entries' loads in flight a lane
  const u32 lane = lane_id(), topk = p.topk, G = max(1u, 32 / topk), groups = (p.tokens + G - 1) / G;
  const u64 units = (u64)groups * p.n_blocks;
  const float* tw = reinterpret_cast<const float*>(p.topk_weights);
  const u16* slots = reinterpret_cast<const u16*>(p.slots[p.rank]);
  u16* y = reinterpret_cast<u16*>(p.y);
  for (u64 u = w; u < units; u += warps) {
    const u32 gi = (u32)(u / p.n_blocks), nb = (u32)(u % p.n_blocks);
    const u32 t0 = gi * G, nt = min(G, p.tokens - t0);
    const u32 c = nb * Cfg::BN + lane * V;
    // Lane j: entry t0 topk + j; waits for its row's tile of this column block.
    bool valid = false, ok = true;
    float wj = 0.0f;
    if (lane < nt * topk) {
      const u32 i = t0 * topk + lane;
      u32 q, row;
      valid = combine_entry(p, ctx, i, false, q, row);
      if (valid && row >= combine_rows_used(p, q)) {
        // (a row no tile of q covers: its arrival flag would never come)
        record_input_error(ctx, WaitOp::InvalidDestRow, q, i, combine_rows_used(p, q), row, true);
        valid = false;
      }
      if (valid) {
        wj = tw[i];
        const u32 tile = row / Cfg::BM * p.n_blocks + nb;
        ok = wait_flag_eq(combine_arrival_flag(p, p.rank, q, tile), ctx.epoch, ctx, WaitOp::PeerRowsPushed, q, tile, kMoeBackoffNs);
      }
    }
    if (!__all_sync(0xffffffffu, ok)) return false;
    __syncwarp();  // (each lane's acquire, then every lane's loads)
    const u32 vmask = __ballot_sync(0xffffffffu, valid);
    const bool active = c < p.n;
    for (u32 tt = 0; tt < nt; ++tt) {
      float acc[V];
#pragma unroll
      for (u32 j = 0; j < V; ++j) acc[j] = 0.0f;
      for (u32 k0 = 0; k0 < topk; k0 += kBatch) {
        float x[kBatch][V];
        float wk[kBatch];
#pragma unroll
        for (u32 kk = 0; kk < kBatch; ++kk) {
          const u32 j = tt * topk + k0 + kk;
          wk[kk] = __shfl_sync(0xffffffffu, wj, j % 32);
          const bool use = k0 + kk < topk && ((vmask >> (j % 32)) & 1u) && active;
          if (use) {
            combine_load<V>(slots + ((u64)t0 * topk + j) * p.n + c, x[kk]);
          } else {
            wk[kk] = 0.0f;
#pragma unroll
            for (u32 v = 0; v < V; ++v) x[kk][v] = 0.0f;
          }
        }
#pragma unroll
        for (u32 kk = 0; kk < kBatch; ++kk) {
#pragma unroll
          for (u32 v = 0; v < V; ++v) acc[v] = fmaf(wk[kk], x[kk][v], acc[v]);
        }
      }
      if (active) {
        u16* dst = y + (u64)(t0 + tt) * p.n + c;
        if constexpr (V == 8) {
          const uint4 o = {pack_bf16x2(acc[0], acc[1]), pack_bf16x2(acc[2], acc[3]), pack_bf16x2(acc[4], acc[5]), pack_bf16x2(acc[6], acc[7])};
          *reinterpret_cast<uint4*>(dst) = o;
        } else {
          const uint2 o = {pack_bf16x2(acc[0], acc[1]), pack_bf16x2(acc[2], acc[3])};
          *reinterpret_cast<uint2*>(dst) = o;
        }
      }
    }
  }
  return true;
}

// Hook of the compute CTAs: each unit's B is its segment's expert's (kGroupsB; the producer
// finds the expert by ballots over the layout's segment ends), A is h (local, written before
// the call: nothing to wait for), and every stored tile is released to the push CTAs.
template <class Cfg, u32 WORLD>
struct MoeCombineHook {
  static constexpr bool kPublishes = true;
  static constexpr bool kUsesStaging = false;
  static constexpr bool kEqualGroupsInOneWave = false;  // (the push CTAs walk the plain order)
  static constexpr bool kShiftsLastRowBlock = false;    // (row blocks are the segments')
  static constexpr bool kSplitsLastWave = false;
  static constexpr bool kClaimsUnits = false;
  static constexpr bool kKeepsSomeRows = false;
  static constexpr bool kGathersA = true;
  static constexpr bool kGroupsB = true;
  static constexpr bool kRankOrder = false;
  static_assert(kMoeSegmentAlign % Cfg::BM == 0, "no row block holds two segments");
  const MoeCombineParams* p;
  u32 epoch;
  u32 expert;  // the last unit's local expert (b_row_base)

  __device__ __forceinline__ void operator()(u32 t) const { st_release_sys(combine_tile_flag(*p, t), epoch); }
  __device__ __forceinline__ bool orders_by_rank(u32) const { return false; }
  __device__ __forceinline__ u32 order_first_row() const { return 0; }
  __device__ __forceinline__ u32 order_shard_rows() const { return 0; }
  __device__ __forceinline__ u32 b_row_base() const { return expert * p->n; }
  // Every lane of the producer warp, per unit.
  __device__ __forceinline__ u32 a_operand(u32 a_row, const TmaDescriptor*& map) {
    map = &p->tma_a;
    expert = combine_expert_of(*p, a_row);
    return a_row;
  }
};

template <class Cfg, u32 WORLD>
__device__ __forceinline__ void moe_gemm_combine_kernel(const MoeCombineParams& p) {
  static_assert(WORLD >= 2 && WORLD <= MKERNEL_MAX_RANKS, "an MoE combine needs 2..MKERNEL_MAX_RANKS ranks");
  static_assert(!Cfg::kSwapAB && Cfg::kClusterSize == 1, "unswapped tiles without clusters (a row block's B is its expert's)");
  static_assert(Cfg::BN % 256 == 0 || Cfg::BN == 128, "a sum lane takes 8 or 4 of a column block's columns");
  static_assert(Cfg::kThreads / 32 * Cfg::BM * 8 <= Cfg::kSmemBytes, "the push warps' row tables fit the launch's shared memory");
  const WaitContext ctx = begin_call(reinterpret_cast<ControlBlock*>(p.control), p.status, p.timeout_ns, p.rank);
  const bool skipped = skipped_call(ctx);
  extern __shared__ u8 smem_raw[];
  const u32 P = p.num_comm_ctas;
  const u32 push_warps = Cfg::kThreads / 32, sum_warps_per_compute = Cfg::kConsumerThreads / 32;
  const u32 sum_warps = P * push_warps + (gridDim.x - P) * sum_warps_per_compute;
  if (blockIdx.x < P) {
    if (!skipped) {
      u32* smem = reinterpret_cast<u32*>(smem_raw);
      if (blockIdx.x == 0) combine_write_maps<Cfg, WORLD>(p, ctx, smem);
      __syncthreads();
      // (every warp decides; push CTA 0's first warp records why not)
      const bool go = combine_go<Cfg, WORLD>(p, ctx, blockIdx.x == 0 && threadIdx.x < 32);
      if (__syncthreads_and(go)) {
        u64* table = reinterpret_cast<u64*>(smem) + (threadIdx.x / 32) * Cfg::BM;
        if (combine_push<Cfg, WORLD>(p, ctx, blockIdx.x * push_warps + threadIdx.x / 32, P * push_warps, table))
          combine_sum<Cfg>(p, ctx, blockIdx.x * push_warps + threadIdx.x / 32, sum_warps);
      }
    }
  } else {
    const GemmSmem<Cfg> sm(smem_raw);
    if (threadIdx.x == 0) sm.init();
    gemm_sync<Cfg>();
    // (every warp: its own layout, which every rank also checks through the agree words;
    // with a bad one the push CTAs skip this rank's tiles, so none is computed)
    const bool layout_ok = !skipped && combine_layout_ok<WORLD>(p);
    if (layout_ok) {
      MoeCombineHook<Cfg, WORLD> hook{&p, ctx.epoch, 0u};
      const u32 rows = reinterpret_cast<const u32*>(p.layout)[p.local_experts];
      const u64 slack_ns = 10000000ull;
      const u64 intra_timeout_ns = p.timeout_ns > (~0ull - slack_ns) / 2 ? ~0ull : 2 * p.timeout_ns + slack_ns;
      gemm_run<Cfg>(&p.tma_a, &p.tma_b, &p.tma_c, nullptr, sm, reinterpret_cast<u16*>(p.out), p.n, rows, p.n, p.k,
                    blockIdx.x - P, gridDim.x - P, intra_timeout_ns, hook);
    }
    gemm_sync<Cfg>();
    // The consumer warps sum once the CTA's tiles are done (the producer warpgroup gave its
    // registers away: it waits at the barrier below).
    if (!skipped && threadIdx.x >= 128) {
      const bool go = combine_go<Cfg, WORLD>(p, ctx, false);
      if (go) combine_sum<Cfg>(p, ctx, P * push_warps + (blockIdx.x - P) * sum_warps_per_compute + (threadIdx.x - 128) / 32, sum_warps);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    exit_handshake<WORLD>(p.exit_flags, p.rank, ctx, gridDim.x, skipped);
    end_call(ctx);
  }
}

}  // namespace mk
