// Fused ring attention (sequence parallelism) over the ranks of one node (NVLink peer
// stores, no multicast).
//
// Rank r holds S positions of every sequence of the batch (positions [r S, (r + 1) S), or,
// zigzag (kMaskZigzag), chunks r and 2 world - 1 - r of S / 2): its queries q_r [B, S, H, D],
// keys k_r and values v_r [B, S, Hkv, D]; out_r = softmax(q_r K^T * scale) V over every
// rank's keys (causal: key position <= query position), each query head h
// reading key/value head h / (H / Hkv) (grouped-query attention). One persistent kernel per
// GPU computes it while the keys and values travel:
//
//   push CTAs (the first num_comm_ctas):  k_r and v_r, chunk by chunk (chunk_rows positions
//       of one sequence, every key/value head), into slot r of each peer's gathered KV
//       (16-byte stores over NVLink), then arrived_q[r][chunk] = epoch (a release store into
//       q's inbox); chunk-major, so every peer gets chunk 0 before anyone gets chunk 1.
//       Causal over contiguous shards: only to the ranks after r (a rank never reads the keys
//       of later ranks).
//       Then they compute too (below), dealt units as the others.
//   compute CTAs (the others):  a unit is BM query rows of one (sequence, head) (zigzag: of
//       one segment); its key blocks (128 positions) come first from the rank's own k_r / v_r
//       (no wait), then from ranks r - 1, r - 2, .. (the ring's order) in the gathered KV.
//       FlashAttention-3's structure (Shah et al., 2024): a producer warp issues TMA loads of Q, K and V into
//       rings of stages (full / empty mbarriers), a peer's block once it has seen the arrival
//       flags of the chunks the block meets (bounded waits, the lanes in parallel; a per-CTA
//       watermark per source, so a chunk is waited for once per CTA); two consumer
//       warpgroups (three at D = 64: BM = 128 or 192, AttnCfg) of 64 query rows each run
//       FlashAttention-2's loop on wgmma: S = Q K^T from
//       shared memory, O += P V with P from registers (bf16 in, fp32 accumulators), online
//       softmax in registers (log2 domain), one block's softmax while the previous block's
//       P V runs (the intra-warpgroup overlap). The warpgroups meet no CTA barrier and take
//       turns issuing their MMAs (ping-pong), so one's softmax falls under the others' MMAs.
//
// The unfused kernel (FUSED = false: the baseline after an all-gather of K and V, and plain
// attention on one GPU) runs the same loop over keys and values already whole ([world][B,
// S, Hkv, D] each), with no flag, epoch or peer.
//
// End: every CTA counts itself out; the last tells every peer "done reading my gathered KV"
// and waits for theirs (exit_handshake), so no rank pushes into a peer still reading the
// previous call's keys. Epochs, skipped calls after a timeout and the epoch hand-over are
// the all-gather's (sync/wait.cuh). Design: ../shared/DESIGN.md section 3 (Ring Attention:
// KV to local peers, 128-row KV tiles).
#pragma once
#include "../params.cuh"
#include "../sync/wait.cuh"
#include "../ptx/fast_math.cuh"
#include "../ptx/wgmma.cuh"

namespace mk {

constexpr u32 kAttnBN = 128;                  // key/value positions of a block
constexpr u32 kAttnConsumersD64 = 3;          // consumer warpgroups at D = 64 (kAttnCfg)

// A CTA's shape at head dimension D: consumer warpgroups of 64 query rows each, then the
// producer warpgroup; a unit is their rows (kBM). Two consumers at D = 128; at D = 64, where a
// warpgroup's softmax (64 ex2 a thread, ~512 cycles of its SM sub-partition's MUFU) is as long
// as its MMAs, kAttnConsumersD64: with three, each softmax has two other warpgroups' MMAs to
// hide under (FlashAttention-3's 192-row tiles at D = 64). setmaxnreg moves the producer's
// registers to the consumers.
template <u32 D>
struct AttnCfg {
  static constexpr u32 kConsumers = D == 64 ? kAttnConsumersD64 : 2;
  static constexpr u32 kBM = 64 * kConsumers;
  static constexpr u32 kThreads = 128 * (kConsumers + 1);
  static constexpr u32 kProducerRegs = kConsumers == 3 ? 32 : 40;
  static constexpr u32 kConsumerRegs = kConsumers == 3 ? 160 : 232;
  static_assert(kConsumers == 2 || kConsumers == 3, "two or three consumer warpgroups");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "register file is 64K per SM");
};
// Stages of the K ring and of the V ring (each). At D = 128 a third would not fit beside two Q
// stages (197 776 of the 232 448 bytes a CTA may have), and trading a Q stage for it was slower
// (bench/NOTES.md 63.4); at D = 64 three or four changed nothing (63.2).
constexpr u32 kAttnStages = 2;
constexpr u32 kAttnQStages = 2;               // Q tiles: the next unit's loads while this one computes
constexpr bool kAttnPingPong = true;          // the consumer warpgroups take turns at the tensor cores (false: NOTES 62.2's ablation)
constexpr u32 kAttnBarEpilogue = 1;           // named barriers 1, 2(, 3): a consumer warpgroup's epilogue
constexpr u32 kAttnBackoffNs = 64;            // sleep between polls of an arrival flag
constexpr u32 kKvPushUnroll = 4;              // 16-byte vectors in flight per thread in a push
constexpr u64 kAttnUnfusedWaitNs = 10000000000ull;  // unfused: an mbarrier wait's bound (only a bug expires it)

// Masks (the kernels' MASK): none; causal over contiguous shards (rank r holds positions
// [r S, (r + 1) S)); causal over zigzag shards (the load-balanced layout of context
// parallelism: the sequence of world x S positions cut into 2 x world chunks of S / 2, rank r
// holding chunks r and 2 world - 1 - r, its "segments" 0 and 1, in that order; S even).
constexpr u32 kMaskFull = 0, kMaskCausal = 1, kMaskZigzag = 2;

// Shared memory of a CTA (base aligned up to 1024 bytes, the 128B swizzle's period): the Q
// stages Q_0 Q_1 ([BM][D] each), then the stages K_0 V_0 K_1 V_1 .. ([BN][D] each), bf16, each
// tile as D / 64 slabs of its rows x 128 bytes (64 columns), 16-byte chunk c of row r at chunk
// (c % 8) ^ (r % 8) of its slab: what TMA writes with the 128B swizzle and what wgmma's
// descriptors read (Q and K K-major, V MN-major). Then the mbarriers and the producer warp's
// watermarks.
template <u32 D>
struct AttnSmem {
  static_assert(D == 64 || D == 128, "head_dim: 64 or 128");
  static constexpr u32 kConsumers = AttnCfg<D>::kConsumers;
  static constexpr u32 kSlabBytes = kAttnBN * 128;             // a K or V slab
  static constexpr u32 kTileBytes = (D / 64) * kSlabBytes;     // K or V
  static constexpr u32 kQSlabBytes = AttnCfg<D>::kBM * 128;    // a Q slab
  static constexpr u32 kQTileBytes = (D / 64) * kQSlabBytes;
  static_assert(kQSlabBytes % 1024 == 0 && kSlabBytes % 1024 == 0, "tiles aligned to the swizzle's period");
  static constexpr u32 kStages = kAttnStages;
  static constexpr u32 kKvAt = kAttnQStages * kQTileBytes;
  static constexpr u32 kBarsAt = kKvAt + 2 * kStages * kTileBytes;
  static constexpr u32 kBars = 2 * kAttnQStages + 4 * kStages + kConsumers;  // q, k, v full/empty per stage; turns
  static constexpr u32 kWordsAt = kBarsAt + 8 * kBars;
  static constexpr u32 kBytes = kWordsAt + 4 * MKERNEL_MAX_RANKS + 1024;  // (+ the alignment's slack)
  u8* base;
  __device__ __forceinline__ explicit AttnSmem(u8* raw) : base((u8*)(((u64)raw + 1023) & ~(u64)1023)) {}
  __device__ __forceinline__ u8* q(u32 stage) const { return base + stage * kQTileBytes; }
  __device__ __forceinline__ u8* k(u32 stage) const { return base + kKvAt + 2 * stage * kTileBytes; }
  __device__ __forceinline__ u8* v(u32 stage) const { return base + kKvAt + (2 * stage + 1) * kTileBytes; }
  __device__ __forceinline__ u64* bar(u32 i) const { return reinterpret_cast<u64*>(base + kBarsAt) + i; }
  __device__ __forceinline__ u64* q_full(u32 s) const { return bar(s); }
  __device__ __forceinline__ u64* q_empty(u32 s) const { return bar(kAttnQStages + s); }  // (an arrival a consumer warpgroup)
  __device__ __forceinline__ u64* k_full(u32 s) const { return bar(2 * kAttnQStages + s); }
  __device__ __forceinline__ u64* k_empty(u32 s) const { return bar(2 * kAttnQStages + kStages + s); }
  __device__ __forceinline__ u64* v_full(u32 s) const { return bar(2 * kAttnQStages + 2 * kStages + s); }
  __device__ __forceinline__ u64* v_empty(u32 s) const { return bar(2 * kAttnQStages + 3 * kStages + s); }
  // Consumer warpgroup wg's turn to issue wgmma (4 arrivals: the warps of the warpgroup before it).
  __device__ __forceinline__ u64* turn(u32 wg) const { return bar(2 * kAttnQStages + 4 * kStages + wg); }
  // seen()[src]: chunks 0..seen-1 of source src have arrived (the producer warp waited for them).
  __device__ __forceinline__ u32* seen() const { return reinterpret_cast<u32*>(base + kWordsAt); }
  // Byte offset of 16-byte chunk c (columns 8c..8c+7) of row r in a Q tile.
  static __device__ __forceinline__ u32 q_at(u32 r, u32 c) {
    return (c >> 3) * kQSlabBytes + r * 128 + (((c & 7) ^ (r & 7)) << 4);
  }
  // Thread 0, before any other use: one arrival (the producer's, with the bytes) fills a
  // tile; the consumer warpgroups (one arrival each) empty one.
  __device__ __forceinline__ void init() const {
    for (u32 s = 0; s < kAttnQStages; ++s) mbar_init(q_full(s), 1), mbar_init(q_empty(s), kConsumers);
    for (u32 s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1), mbar_init(k_empty(s), kConsumers);
      mbar_init(v_full(s), 1), mbar_init(v_empty(s), kConsumers);
    }
    for (u32 wg = 0; wg < kConsumers; ++wg) mbar_init(turn(wg), 4);
    fence_mbarrier_init();
  }
};

// A ring's position: stage and the parity of its current phase.
template <u32 STAGES>
struct AttnRing {
  u32 stage = 0, phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) stage = 0, phase ^= 1;
  }
};

// Ping-pong (FlashAttention-3's inter-warpgroup overlap): the consumer warpgroups issue their
// wgmma batches in turn, warpgroup 0 first, then 1 (, then 2), round and round, so one's
// softmax runs while the others' GEMMs hold the tensor cores. Mbarrier turn(wg) opens
// warpgroup wg's turn: it waits there before a batch, and after it each of its warps arrives
// on the next warpgroup's. A phase completes only once all four warps of the warpgroup before
// have passed their own wait, so no phase runs ahead of its waiter (each warpgroup's k-th
// batch needs every other's (k-1)-th). (FlashAttention-3 uses named barriers; here a bar.sync
// in the loop makes ptxas serialise the wgmma and spill P's fragments.) Every warpgroup issues
// the same number of batches (a unit's blocks are theirs alike); the last one's arrival at
// the start opens the first turn.
struct AttnTurn {
  u32 phase = 0;
  __device__ __forceinline__ void begin(const u64* own, u64 wait_ns) {
    if (kAttnPingPong) mbar_wait(const_cast<u64*>(own), phase, wait_ns), phase ^= 1;
  }
  __device__ __forceinline__ void end(u64* other) const {
    if (kAttnPingPong && lane_id() == 0) mbar_arrive(other);
  }
};

// Positions of a segment of a rank's shard: the whole shard, or half of it (zigzag).
template <u32 MASK>
__device__ __forceinline__ u32 attn_segment_len(const RingAttentionParams& p) {
  return MASK == kMaskZigzag ? p.seq / 2 : p.seq;
}

// Units of a call: BM query rows of one segment of one (sequence, head).
template <u32 BM, u32 MASK>
__device__ __forceinline__ u64 attn_units(const RingAttentionParams& p) {
  const u32 per_seg = (attn_segment_len<MASK>(p) + BM - 1) / BM;
  return (u64)(MASK == kMaskZigzag ? 2 * per_seg : per_seg) * p.batch * p.heads;
}

// The unit u of a CTA's list (units dealt round-robin over the CTAs, the query blocks with
// the most key blocks first: causal, the last ones; zigzag, segment 1's, then segment 0's):
// its sequence, head, segment, first query row in the shard and valid rows (to the segment's
// end; the rows after it are loaded and computed, not stored).
struct AttnUnit {
  u32 b, h, seg, q0, q_valid;
  template <u32 BM, u32 MASK>
  __device__ __forceinline__ static AttnUnit at(const RingAttentionParams& p, u64 u) {
    const u32 len = attn_segment_len<MASK>(p), per_seg = (len + BM - 1) / BM;
    const u64 heads = (u64)p.batch * p.heads;  // (sequence, head) pairs
    const u64 bh = u % heads;
    u32 k = (u32)(u / heads), seg = 0;
    if (MASK == kMaskZigzag) seg = k < per_seg ? 1 : 0, k = k < per_seg ? k : k - per_seg;
    const u32 in_seg = (per_seg - 1 - k) * BM;
    return AttnUnit{(u32)(bh / p.heads), (u32)(bh % p.heads), seg, seg * len + in_seg, min(BM, len - in_seg)};
  }
};

// The key blocks of a unit, in order: the own rank's first, then ranks r - 1, r - 2, ..
// (mod world). Causal: only ranks <= r, and the own rank's blocks up to the unit's last row.
// Zigzag (positions compared as chunk x S / 2 + offset): a segment-0 unit sees segment 0 of
// ranks <= r (its own up to its last row); a segment-1 unit sees segment 0 of every rank,
// segment 1 of ranks > r and its own segment 1 up to its last row. Blocks never straddle a
// segment: a segment's last block is ragged, its keys past the segment masked.
template <u32 WORLD, u32 MASK>
struct UnitBlocks {
  u32 len, per_seg, own, total;
  __device__ __forceinline__ UnitBlocks(const RingAttentionParams& p, const AttnUnit& unit) {
    len = attn_segment_len<MASK>(p);
    per_seg = (len + kAttnBN - 1) / kAttnBN;
    const u32 diag = (unit.q0 - unit.seg * len + unit.q_valid + kAttnBN - 1) / kAttnBN;  // (own blocks of its segment)
    if (MASK == kMaskFull) {
      own = per_seg, total = WORLD * per_seg;
    } else if (MASK == kMaskCausal || unit.seg == 0) {
      own = diag, total = own + p.rank * per_seg;
    } else {
      own = per_seg + diag, total = own + p.rank * per_seg + (WORLD - 1 - p.rank) * 2 * per_seg;
    }
  }
  // Block j: its source rank, its first position in that rank's shard and the end of its
  // segment there.
  __device__ __forceinline__ void at(u32 j, u32 rank, u32& src, u32& n0, u32& end) const {
    u32 seg = 0, i;
    if (j < own) {
      src = rank, i = j;
      if (MASK == kMaskZigzag && j >= per_seg) seg = 1, i = j - per_seg;
    } else if (MASK != kMaskZigzag || j - own < rank * per_seg) {
      src = (rank + WORLD - 1 - (j - own) / per_seg) % WORLD, i = (j - own) % per_seg;
    } else {  // (zigzag, segment 1's unit: the ranks after r, both segments each)
      const u32 k = j - own - rank * per_seg;
      src = WORLD - 1 - k / (2 * per_seg), i = k % (2 * per_seg);
      if (i >= per_seg) seg = 1, i -= per_seg;
    }
    n0 = seg * len + i * kAttnBN, end = (seg + 1) * len;
  }
};

// Fused, the producer warp: before block (src, n0) of sequence b is loaded, the chunks it
// meets must have arrived: every row to n0 + 128 or the shard's end (zigzag: TMA reads a
// segment's rows only, the maps being per segment, so this may wait for a few chunks more
// than the block needs; all are pushed). The lanes wait in parallel for every chunk of `src` from the CTA's
// watermark up to the last one the block reads (one timeout in all), then the watermark
// rises. Returns false when a wait gave up (the call then fails; the loads go on, of data
// that may be stale, so no consumer is left waiting). Every lane of the warp calls it alike.
__device__ __forceinline__ bool await_block(const RingAttentionParams& p, const WaitContext& ctx, u32* seen, u32 b,
                                           u32 src, u32 n0) {
  const u32 ch = p.chunk_rows, per_seq = (p.seq + ch - 1) / ch;
  const u32 last = b * per_seq + (min(n0 + kAttnBN, p.seq) - 1) / ch;
  const u32 from = seen[src];
  if (last < from) return true;
  const u64 start = globaltimer_ns();
  WaitContext left = ctx;
  bool ok = true;
  for (u32 c = from + lane_id(); ok && c <= last; c += 32) {
    const u64 spent = globaltimer_ns() - start;
    left.timeout_ns = spent < ctx.timeout_ns ? ctx.timeout_ns - spent : 1;
    ok = wait_flag_eq(arrival_flag(p.arrived[p.rank], p.flag_stride, src, c), ctx.epoch, left, WaitOp::PeerKvArrived, src,
                      c, kAttnBackoffNs);
  }
  ok = __all_sync(0xffffffffu, ok);
  __syncwarp();                // (the lanes' acquires, then the TMA lane's loads)
  fence_proxy_async_global();  // the peers' generic stores (acquired) -> this warp's TMA reads
  if (lane_id() == 0) seen[src] = last + 1;  // (also after a failure: the call has failed, the rest need not wait)
  __syncwarp();
  return ok;
}

// The TMA map and outer coordinate of keys (which = 0) or values (1) of source `src`,
// sequence b: the caller's own k / v for this rank (fused), slot src of the gathered KV
// ([world][2][B] sequences, fused), or source src of the whole tensors ([world][B], unfused).
template <bool FUSED>
__device__ __forceinline__ const TmaDescriptor* kv_map(const RingAttentionParams& p, u32 which, u32 src, u32 b, i32& outer) {
  if (!FUSED) {
    outer = (i32)(src * p.batch + b);
    return which ? &p.tma_v : &p.tma_k;
  }
  if (src == p.rank) {
    outer = (i32)b;
    return which ? &p.tma_v : &p.tma_k;
  }
  outer = (i32)((src * 2 + which) * p.batch + b);
  return &p.tma_kv;
}

// One tile (D / 64 boxes of ROWS rows x 64 columns: the map's box) into `dst`, completing its
// bytes on `full`.
template <u32 D, u32 ROWS>
__device__ __forceinline__ void load_tile(const TmaDescriptor* map, u64* full, u8* dst, u32 head, u32 row0, i32 outer) {
  mbar_arrive_expect_tx(full, (D / 64) * ROWS * 128);
#pragma unroll
  for (u32 slab = 0; slab < D / 64; ++slab)
    tma_load_4d(map, full, dst + slab * ROWS * 128, (i32)(slab * 64), (i32)head, (i32)row0, outer);
}

// The loop's three steps for this warpgroup's 64 query rows (this thread: rows q_row0 + g and
// q_row0 + g + 8 of its warp's 16). Accumulator fragment of thread (warp w of the warpgroup,
// lane l): x[4j + 2h + e] is row 16w + l/4 + 8h, column 8j + 2(l%4) + e (ptx/wgmma.cuh), the
// m16n8k16 C layout per 8 columns.
//
// S = Q K^T on wgmma, Q and K from shared memory (K-major); issued and committed, not waited.
template <u32 D>
__device__ __forceinline__ void issue_scores(float (&s)[kAttnBN / 2], u32 q_tile, u32 k_tile) {
  wgmma_fence();
#pragma unroll
  for (u32 kk = 0; kk < D / 16; ++kk) {
    const u32 col = (kk % 4) * 32;  // 16 columns: 32 bytes into a 128-byte row of slab kk / 4
    wgmma_m64n128k16_bf16(s, make_sw128_desc(q_tile + (kk / 4) * AttnSmem<D>::kQSlabBytes + col, 16, 1024),
                          make_sw128_desc(k_tile + (kk / 4) * AttnSmem<D>::kSlabBytes + col, 16, 1024), kk > 0);
  }
  wgmma_commit();
}

// O += P V on wgmma: P from registers (the A fragments of the 8 k16 steps), V from shared
// memory MN-major (16 positions a step; the D / 64 slabs along N kSlab apart). Issued and
// committed, not waited.
template <u32 D>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const u32 (&pa)[kAttnBN / 16][4], u32 v_tile) {
  constexpr u32 kSlab = AttnSmem<D>::kSlabBytes;
  wgmma_fence();
#pragma unroll
  for (u32 kk = 0; kk < kAttnBN / 16; ++kk) {
    const u64 desc = make_sw128_desc(v_tile + kk * 16 * 128, kSlab, 1024);
    if constexpr (D == 128) wgmma_m64n128k16_bf16_rs_tb(o, pa[kk], desc, 1);
    else wgmma_m64n64k16_bf16_rs_tb(o, pa[kk], desc, 1);
  }
  wgmma_commit();
}

// The online softmax of one block's scores (complete in s, unscaled): masked (positions past
// the block's segment; causal: later positions on the diagonal), the running sum l updated, s
// replaced by P = 2^(s scale_log2 - m) in fp32, one FFMA and one ex2 a score
// (FlashAttention-3's softmax). The block's max is taken of the raw scores, in four chains (the
// row's 32 scores of this thread are independent), then scaled: right for a positive scale only
// (check_scale's rule).
// m is the row's base, not always its running max: it moves up to the block's max only where
// that exceeds it by more than kAttnRescaleLog2 (FlashAttention-4's conditional rescaling), so P
// is at most 2^kAttnRescaleLog2 and most blocks leave O alone; the result is the same softmax
// (l and O share the base; lse = base + log2 l). Returns in corr the factor by which O must be
// rescaled (1 where the base stayed), and whether any of this thread's rows moved. The cost
// (helper-118): O and l may be 2^8 larger than with P <= 1, so O stays finite for |v| up to
// ~2^89 at 2^31 keys (2^97 before), and a scaled max that overflows fp32 gives a zero row where
// the running max gave NaN (check_scale bounds the scale).
constexpr float kAttnRescaleLog2 = 8.0f;
template <bool CAUSAL>
__device__ __forceinline__ bool online_softmax(float (&s)[kAttnBN / 2], float (&m)[2], float (&l)[2], float (&corr)[2],
                                               float scale_log2, u32 kv_valid, bool diagonal, u32 q_row0, u32 n0) {
  const u32 lane = lane_id(), g = lane / 4, t = lane % 4;
  const bool masked = kv_valid < kAttnBN || (CAUSAL && diagonal);
  bool moved = false;
#pragma unroll
  for (u32 h = 0; h < 2; ++h) {
    const u32 qi = q_row0 + g + 8 * h;  // (the query's position in the shard)
    if (masked) {
#pragma unroll
      for (u32 j = 0; j < kAttnBN / 8; ++j) {
#pragma unroll
        for (u32 e = 0; e < 2; ++e) {
          const u32 col = j * 8 + 2 * t + e;
          if (col >= kv_valid || (CAUSAL && diagonal && n0 + col > qi)) s[4 * j + 2 * h + e] = neg_inf_f32();
        }
      }
    }
    float part[4];  // (four chains over the row's 32 scores of this thread, i = 2 j + e)
#pragma unroll
    for (u32 i = 0; i < kAttnBN / 4; ++i) {
      const float x = s[4 * (i / 2) + 2 * h + i % 2];
      part[i % 4] = i < 4 ? x : fmaxf(part[i % 4], x);
    }
    float mx = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3])) * scale_log2;
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // (the base moves only for a block max past it by the threshold: -inf + threshold is
    // -inf, so a row's first unmasked block moves it, its correction 0; a row with every
    // score masked so far keeps -inf, its p 0)
    const bool grow = mx > m[h] + kAttnRescaleLog2;
    corr[h] = grow ? ex2_approx(m[h] - mx) : 1.0f;
    if (grow) m[h] = mx;
    moved |= grow;
    const float base = m[h] == neg_inf_f32() ? 0.f : m[h];
    float sum[2] = {0.f, 0.f};
#pragma unroll
    for (u32 j = 0; j < kAttnBN / 8; ++j) {
#pragma unroll
      for (u32 e = 0; e < 2; ++e) {
        const float pv = ex2_approx(fmaf(s[4 * j + 2 * h + e], scale_log2, -base));
        s[4 * j + 2 * h + e] = pv;
        sum[e] += pv;
      }
    }
    l[h] = l[h] * corr[h] + (sum[0] + sum[1]);  // (this lane's columns; the quad's sum at the end)
  }
  return moved;
}

// The producer warp (one elected lane issues): for each unit of the CTA's list, each key
// block's K and V into the next stages of their rings (a peer's block once its chunks have
// arrived, fused), and the unit's Q into the next of two Q stages once the consumers have
// released that stage's last unit (after K_0 and V_0; the Q of unit i + 1 loads while unit i
// computes). After a failed arrival wait
// the loads go on (of data that may be stale) and the call reports the timeout: its out and
// lse are then undefined.
template <u32 D, u32 WORLD, u32 MASK, bool FUSED>
__device__ __forceinline__ void attn_producer(const RingAttentionParams& p, const WaitContext* ctx, const AttnSmem<D>& sm,
                                              u64 first, u64 stride, u64 wait_ns) {
  if (lane_id() == 0) {
    tma_prefetch_descriptor(&p.tma_q), tma_prefetch_descriptor(&p.tma_k), tma_prefetch_descriptor(&p.tma_v);
    if (FUSED) tma_prefetch_descriptor(&p.tma_kv);
  }
  if (FUSED && lane_id() < MKERNEL_MAX_RANKS) sm.seen()[lane_id()] = 0;
  __syncwarp();
  AttnRing<AttnSmem<D>::kStages> kr, vr;
  AttnRing<kAttnQStages> qr;
  const u64 units = attn_units<AttnCfg<D>::kBM, MASK>(p);
  for (u64 u = first; u < units; u += stride) {
    const AttnUnit unit = AttnUnit::at<AttnCfg<D>::kBM, MASK>(p, u);
    const u32 b = unit.b, kv_head = unit.h / (p.heads / p.kv_heads);
    const UnitBlocks<WORLD, MASK> blocks(p, unit);
    for (u32 j = 0; j < blocks.total; ++j) {
      u32 src, n0, end;  // (end: the softmax's; the waits cover every row the load reads)
      blocks.at(j, p.rank, src, n0, end);
      if (FUSED && src != p.rank) await_block(p, *ctx, sm.seen(), b, src, n0);
      // (zigzag: the maps' rows are a segment's, their sequences [B][2] segments)
      const u32 seg = end > blocks.len ? 1 : 0, row = n0 - seg * blocks.len;
      i32 outer;
      const TmaDescriptor* map = kv_map<FUSED>(p, 0, src, b, outer);
      if (MASK == kMaskZigzag) outer = outer * 2 + (i32)seg;
      // (issued under elect_one_sync, not a lane test: warp-uniform TMA operands)
      mbar_wait(sm.k_empty(kr.stage), kr.phase ^ 1, wait_ns);
      if (elect_one_sync()) load_tile<D, kAttnBN>(map, sm.k_full(kr.stage), sm.k(kr.stage), kv_head, row, outer);
      __syncwarp();
      kr.advance();
      map = kv_map<FUSED>(p, 1, src, b, outer);
      if (MASK == kMaskZigzag) outer = outer * 2 + (i32)seg;
      mbar_wait(sm.v_empty(vr.stage), vr.phase ^ 1, wait_ns);
      if (elect_one_sync()) load_tile<D, kAttnBN>(map, sm.v_full(vr.stage), sm.v(vr.stage), kv_head, row, outer);
      __syncwarp();
      vr.advance();
      if (j == 0) {
        mbar_wait(sm.q_empty(qr.stage), qr.phase ^ 1, wait_ns);
        const i32 q_outer = MASK == kMaskZigzag ? (i32)(b * 2 + unit.seg) : (i32)b;
        if (elect_one_sync())
          load_tile<D, AttnCfg<D>::kBM>(&p.tma_q, sm.q_full(qr.stage), sm.q(qr.stage), unit.h, unit.q0 - unit.seg * blocks.len,
                                        q_outer);
        __syncwarp();
        qr.advance();
      }
    }
  }
}

// A consumer warpgroup (wg 0 .. C - 1: query rows 64 wg.. of each unit): per unit, every key
// block of the producer's order. Iteration j issues S_j = Q K_j^T and O += P_{j-1} V_{j-1}
// together; block j's softmax runs while the second is on the tensor cores (FlashAttention-3's
// intra-warpgroup overlap); then O is rescaled where a row of the warp moved its base (online_softmax)
// and P_j packed. Block 0 has no
// P V before it and the last block's comes after the loop: the wgmma steps themselves are
// unconditional (ptxas keeps such a pipeline asynchronous, not a divergent one). A stage is
// released (one arrival a warpgroup) once the wgmma reading it has completed. Epilogue: the
// normalised rows staged in this warpgroup's rows of Q's tile, 16-byte rows out, lse.
template <u32 D, u32 WORLD, u32 MASK, bool FUSED>
__device__ __forceinline__ void attn_consumer(const RingAttentionParams& p, const AttnSmem<D>& sm, u64 first, u64 stride,
                                              u32 wg, u64 wait_ns) {
  const u32 tid = threadIdx.x % 128, lane = lane_id(), g = lane / 4, t = lane % 4;
  const u32 row0 = wg * 64 + (tid / 32) * 16;                 // (this warp's first row in the unit)
  const u64 q_stride = (u64)p.heads * D;
  const float scale_log2 = p.scale_log2;
  AttnRing<AttnSmem<D>::kStages> kr, vr;
  AttnRing<kAttnQStages> qr;
  AttnTurn turn;
  u64* const turn_own = sm.turn(wg);
  constexpr u32 kConsumers = AttnCfg<D>::kConsumers;
  u64* const turn_other = sm.turn(wg + 1 == kConsumers ? 0 : wg + 1);  // (the next warpgroup's turn)
  if (wg + 1 == kConsumers) turn.end(turn_other);  // (warpgroup 0 issues first)
  float o[D / 2], s[kAttnBN / 2], m[2], l[2];
  u32 pa[kAttnBN / 16][4];
  const u64 units = attn_units<AttnCfg<D>::kBM, MASK>(p);
  for (u64 u = first; u < units; u += stride) {
    const AttnUnit unit = AttnUnit::at<AttnCfg<D>::kBM, MASK>(p, u);
    const u32 b = unit.b, h = unit.h, q0 = unit.q0, q_valid = unit.q_valid;
    const UnitBlocks<WORLD, MASK> blocks(p, unit);
    // Block j's place for its softmax, found before the block's waits (its divisions off the
    // path from S's completion to the softmax): n0, the positions it holds, and whether it
    // is a diagonal block (the own rank's, of the unit's segment, reaching past its first row;
    // positions of one segment compare as shard positions).
    struct BlockAt {
      u32 n0, kv_valid;
      bool diagonal;
    };
    auto block_at = [&](u32 j) {
      u32 src, n0, end;
      blocks.at(j, p.rank, src, n0, end);
      return BlockAt{n0, min(kAttnBN, end - n0), MASK != kMaskFull && src == p.rank && n0 + kAttnBN > q0};
    };
    auto softmax_block = [&](const BlockAt& at, float (&corr)[2]) {
      return online_softmax<MASK != kMaskFull>(s, m, l, corr, scale_log2, at.kv_valid, at.diagonal, q0 + row0, at.n0);
    };
    auto pack_p = [&]() {  // P's accumulators of two 8-column blocks: the A fragment of one k16 step
#pragma unroll
      for (u32 kk = 0; kk < kAttnBN / 16; ++kk) {
        pa[kk][0] = pack_bf16x2(s[8 * kk], s[8 * kk + 1]);
        pa[kk][1] = pack_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
        pa[kk][2] = pack_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
        pa[kk][3] = pack_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
      }
    };
#pragma unroll
    for (u32 d = 0; d < D / 2; ++d) o[d] = 0.f;
    m[0] = m[1] = neg_inf_f32(), l[0] = l[1] = 0.f;
    u8* const q_smem = sm.q(qr.stage);
    const u32 q_tile = smem_u32(q_smem) + wg * 64 * 128;  // (this warpgroup's 64 rows of each slab)
    mbar_wait(sm.q_full(qr.stage), qr.phase, wait_ns);
    {  // block 0
      float corr[2];
      const BlockAt at = block_at(0);
      mbar_wait(sm.k_full(kr.stage), kr.phase, wait_ns);
      turn.begin(turn_own, wait_ns);
      issue_scores<D>(s, q_tile, smem_u32(sm.k(kr.stage)));
      turn.end(turn_other);
      wgmma_wait<0>();
      fence_accumulators(s);
      if (tid == 0) mbar_arrive(sm.k_empty(kr.stage));
      kr.advance();
      softmax_block(at, corr);  // (o is zero: no rescale)
      pack_p();
    }
    for (u32 j = 1; j < blocks.total; ++j) {
      float corr[2];
      const BlockAt at = block_at(j);
      mbar_wait(sm.k_full(kr.stage), kr.phase, wait_ns);
      mbar_wait(sm.v_full(vr.stage), vr.phase, wait_ns);
      turn.begin(turn_own, wait_ns);
      issue_scores<D>(s, q_tile, smem_u32(sm.k(kr.stage)));
      issue_pv<D>(o, pa, smem_u32(sm.v(vr.stage)));
      turn.end(turn_other);
      wgmma_wait<1>();  // (S_j; P V still running)
      fence_accumulators(s);
      if (tid == 0) mbar_arrive(sm.k_empty(kr.stage));
      kr.advance();
      const bool moved = softmax_block(at, corr);
      wgmma_wait<0>();
      fence_accumulators(o);
      if (tid == 0) mbar_arrive(sm.v_empty(vr.stage));
      vr.advance();
      // (O rescaled only where a row of the warp moved its base: a warp-uniform branch, rare
      // after a row's first blocks)
      if (__any_sync(0xffffffffu, moved)) {
#pragma unroll
        for (u32 d = 0; d < D / 8; ++d) {
          o[4 * d] *= corr[0], o[4 * d + 1] *= corr[0];
          o[4 * d + 2] *= corr[1], o[4 * d + 3] *= corr[1];
        }
      }
      pack_p();
    }
    mbar_wait(sm.v_full(vr.stage), vr.phase, wait_ns);  // the last block's P V
    turn.begin(turn_own, wait_ns);
    issue_pv<D>(o, pa, smem_u32(sm.v(vr.stage)));
    turn.end(turn_other);
    wgmma_wait<0>();
    fence_accumulators(o);
    if (tid == 0) mbar_arrive(sm.v_empty(vr.stage));
    vr.advance();

    // Normalise; stage the bf16 rows in this warpgroup's rows of the unit's Q tile (its wgmmas
    // reading them have completed), then 16-byte rows out; lse from the quad's first lane.
#pragma unroll
    for (u32 hh = 0; hh < 2; ++hh) {
      float sum = l[hh];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const u32 row = row0 + g + 8 * hh;
#pragma unroll
      for (u32 d = 0; d < D / 8; ++d) {
        *reinterpret_cast<u32*>(q_smem + AttnSmem<D>::q_at(row, d) + 4 * t) =
            pack_bf16x2(o[4 * d + 2 * hh] * inv, o[4 * d + 2 * hh + 1] * inv);
      }
      if (p.lse != 0 && t == 0 && row < q_valid) {
        const float lse = sum > 0.f ? (m[hh] + lg2_approx(sum)) * 0.69314718055994531f : neg_inf_f32();
        reinterpret_cast<float*>(p.lse)[((u64)b * p.heads + h) * p.seq + q0 + row] = lse;
      }
    }
    named_barrier_sync(kAttnBarEpilogue + wg, 128);
    u16* out = reinterpret_cast<u16*>(p.out) + ((u64)b * p.seq + q0) * q_stride + (u64)h * D;
    constexpr u32 kChunks = D / 8;
    for (u32 i = tid; i < 64 * kChunks; i += 128) {
      const u32 r = wg * 64 + i / kChunks, c = i % kChunks;
      if (r < q_valid) st_v4(out + r * q_stride + c * 8, ld_shared_v4(q_smem + AttnSmem<D>::q_at(r, c)));
    }
    fence_proxy_async_shared();  // (these generic accesses of Q's tile, before TMA writes a later Q)
    named_barrier_sync(kAttnBarEpilogue + wg, 128);
    if (tid == 0) mbar_arrive(sm.q_empty(qr.stage));
    qr.advance();
  }
}

// The compute roles of a CTA over units first, first + stride, ..: warpgroups 0 .. C - 1
// consume (C = AttnCfg<D>::kConsumers), the first warp of warpgroup C produces; warpgroup C
// gives its registers to the consumers (setmaxnreg: a launch of 384 threads alone allows 168 a
// thread, of 512 threads 128).
template <u32 D, u32 WORLD, u32 MASK, bool FUSED>
__device__ __forceinline__ void attend_units(const RingAttentionParams& p, const WaitContext* ctx, const AttnSmem<D>& sm,
                                             u64 first, u64 stride, u64 wait_ns) {
  using Cfg = AttnCfg<D>;
  const u32 wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);  // (warp-uniform to the compiler)
  if (wg == Cfg::kConsumers) {
    warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    if (threadIdx.x < Cfg::kConsumers * 128 + 32) attn_producer<D, WORLD, MASK, FUSED>(p, ctx, sm, first, stride, wait_ns);
  } else {
    warpgroup_reg_alloc<Cfg::kConsumerRegs>();
    attn_consumer<D, WORLD, MASK, FUSED>(p, sm, first, stride, wg, wait_ns);
  }
}

// One chunk (positions s0.. of sequence b, every key/value head) of k_r and v_r into slot
// `rank` of rank q's gathered KV, then its arrival flag in q's inbox. Every thread of the CTA.
template <u32 THREADS>
__device__ __forceinline__ void push_kv_chunk(const RingAttentionParams& p, const WaitContext& ctx, u32 c, u32 q) {
  const u32 ch = p.chunk_rows, per_seq = (p.seq + ch - 1) / ch;
  const u32 b = c / per_seq, s0 = c % per_seq * ch, rows = min(ch, p.seq - s0);
  const u64 row_vecs = (u64)p.kv_heads * p.head_dim / 8;  // 16-byte vectors per position
  const u64 elems_vecs = (u64)p.batch * p.seq * row_vecs;
  const u64 first = ((u64)b * p.seq + s0) * row_vecs, n = (u64)rows * row_vecs;
  uint4* dst = reinterpret_cast<uint4*>(p.kv_gathered[q]) + (u64)p.rank * 2 * elems_vecs + first;
  const uint4* k = reinterpret_cast<const uint4*>(p.k) + first;
  const uint4* v = reinterpret_cast<const uint4*>(p.v) + first;
  for (u64 j = threadIdx.x; j < 2 * n; j += (u64)THREADS * kKvPushUnroll) {
    uint4 x[kKvPushUnroll];
#pragma unroll
    for (u32 e = 0; e < kKvPushUnroll; ++e) {
      const u64 i = j + (u64)e * THREADS;
      if (i < 2 * n) x[e] = __ldg(i < n ? k + i : v + (i - n));
    }
#pragma unroll
    for (u32 e = 0; e < kKvPushUnroll; ++e) {
      const u64 i = j + (u64)e * THREADS;
      if (i < 2 * n) dst[i < n ? i : elems_vecs + (i - n)] = x[e];
    }
  }
  fence_acq_rel_sys();  // this thread's stores, before the barrier and thread 0's release
  __syncthreads();
  if (threadIdx.x == 0) st_release_sys(arrival_flag(p.arrived[q], p.flag_stride, p.rank, c), ctx.epoch);
}

// Push role: (chunk, peer) items chunk-major, dealt round-robin over the push CTAs; the
// peers in ring order from r + 1 (causal over contiguous shards: only ranks after r; zigzag:
// every peer, every chunk: a peer's watermark waits for all chunks below the ones it needs,
// segment 1 of earlier sequences too).
template <u32 THREADS, u32 WORLD, u32 MASK>
__device__ __forceinline__ void push_kv(const RingAttentionParams& p, const WaitContext& ctx, u32 idx, u32 n_push) {
  constexpr bool kToLater = MASK == kMaskCausal;
  const u32 peers = kToLater ? WORLD - 1 - p.rank : WORLD - 1;
  if (peers == 0) return;
  const u32 chunks = p.batch * ((p.seq + p.chunk_rows - 1) / p.chunk_rows);
  const u64 items = (u64)chunks * peers;
  for (u64 item = idx; item < items; item += n_push) {
    const u32 q = p.rank + 1 + (u32)(item % peers);  // (causal: < WORLD)
    push_kv_chunk<THREADS>(p, ctx, (u32)(item / peers), kToLater ? q : q % WORLD);
  }
}

template <u32 D, u32 WORLD, u32 MASK>
__device__ __forceinline__ void ring_attention_kernel(const RingAttentionParams& p) {
  static_assert(WORLD >= 2 && WORLD <= MKERNEL_MAX_RANKS, "ring attention needs 2..MKERNEL_MAX_RANKS ranks");
  static_assert(MASK <= kMaskZigzag, "a mask of kMask*");
  extern __shared__ u8 attn_smem[];
  const AttnSmem<D> sm(attn_smem);
  const WaitContext ctx = begin_call(reinterpret_cast<ControlBlock*>(p.control), p.status, p.timeout_ns, p.rank);
  const bool skipped = skipped_call(ctx);
  if (threadIdx.x == 0) sm.init();
  __syncthreads();
  if (!skipped) {
    const u32 n_push = p.num_comm_ctas, n_compute = gridDim.x - n_push;
    if (blockIdx.x < n_push) push_kv<AttnCfg<D>::kThreads, WORLD, MASK>(p, ctx, blockIdx.x, n_push);
    // Every CTA computes: the push CTAs join once their pushes are out (a few percent of the
    // SMs, idle otherwise for most of a long sequence), dealt the last indices of the first
    // round (so the heaviest units, dealt first, go to CTAs that start at once).
    const u32 idx = blockIdx.x < n_push ? n_compute + blockIdx.x : blockIdx.x - n_push;
    // The consumers' mbarrier waits trap on expiry ("only a bug"), but here they wait behind
    // the producer's arrival waits: their bound is two inter-GPU timeouts and a margin, so a
    // missing peer is reported as PeerKvArrived instead (as the all-gather's).
    const u64 slack_ns = 10000000ull;
    const u64 wait_ns = p.timeout_ns > (~0ull - slack_ns) / 2 ? ~0ull : 2 * p.timeout_ns + slack_ns;
    attend_units<D, WORLD, MASK, true>(p, &ctx, sm, idx, gridDim.x, wait_ns);
  }
  // Every CTA: its pushes are released, its reads of the gathered KV are done.
  __syncthreads();
  if (threadIdx.x == 0) {
    exit_handshake<WORLD>(p.exit_flags, p.rank, ctx, gridDim.x, skipped);
    end_call(ctx);
  }
}

// Unfused attention over keys and values already whole (every rank's, [world][B, S, Hkv, D]);
// WORLD = 1: plain attention of one GPU. No flag, epoch or peer.
template <u32 D, u32 WORLD, u32 MASK>
__device__ __forceinline__ void attention_kernel(const RingAttentionParams& p) {
  static_assert(WORLD >= 1 && WORLD <= MKERNEL_MAX_RANKS, "1..MKERNEL_MAX_RANKS sources");
  static_assert(MASK <= kMaskZigzag, "a mask of kMask*");
  extern __shared__ u8 attn_smem[];
  const AttnSmem<D> sm(attn_smem);
  if (threadIdx.x == 0) sm.init();
  __syncthreads();
  attend_units<D, WORLD, MASK, false>(p, nullptr, sm, blockIdx.x, gridDim.x, kAttnUnfusedWaitNs);
}

}  // namespace mk
