// Structs that cross the host/device boundary. Each one is mirrored field for field by
// a #[repr(C)] struct in mkernel-kernels/src/params.rs; the layout test there compiles
// static_asserts generated from the Rust offsets against this header with NVRTC.
#pragma once
#include "ptx/common.cuh"
#include "comm/ring.cuh"

// Written by the first wait of a kernel that times out, into pinned host memory that
// is mapped into the device, so the host can name what was waited for after the
// kernel has returned (the kernel aborts cleanly instead of trapping).
struct KernelStatus {
  u32 code;        // 0 = ok, otherwise a WaitOp
  u32 rank;        // rank that waited
  u32 peer;        // rank whose flag did not arrive
  u32 tile;        // tile index (or ~0u when not about one tile)
  u32 epoch;       // epoch of the call
  u32 expected;    // flag value waited for (>=)
  u32 observed;    // last value seen
  u32 cta;         // blockIdx.x of the waiting CTA
  u64 waited_ns;   // time spent waiting before giving up
  // Bad input found on the device (record_input_error; not a wait: the call went on):
  u32 input_code;      // 0 = none, otherwise a WaitOp of the input kind
  u32 input_peer;      // the rank it concerns
  u32 input_entry;     // the entry (an expert id's index) or argument
  u32 input_epoch;     // epoch of the call
  u32 input_expected;
  u32 input_observed;
};

// Plain GEMM: C[M,N] = A[M,K] * B[N,K]^T, bf16 in/out, fp32 accumulation.
struct GemmParams {
  TmaDescriptor tma_a;   // A [M, K] row-major, box [BK, BM]
  TmaDescriptor tma_b;   // B [N, K] row-major, box [BK, BN]
  TmaDescriptor tma_c;   // C [M, N], box [64, BM], 128B swizzle (TMA-store epilogue only)
  u64 c;                 // C [M, N] row-major, bf16
  u32 m, n, k;
  u32 ldc;               // elements between rows of C
  u64 timeout_ns;        // bound on every wait inside the kernel
  u64 split_scratch;     // split last wave (kernels compiled with it): fp32 slots
  u64 split_counts;      // u32 per left-over tile, 0 between calls
  u32 split_slices;      // K-slices per left-over tile (1: none)
  u32 pad0;
};

// Fused GEMM + all-reduce over the ranks of one node (see ops/gemm_allreduce.cuh).
// Addresses of peer buffers are given per rank (index = rank); entries >= world size
// are zero. kMaxRanks bounds the array only; the world size is a JIT constant.
#define MKERNEL_MAX_RANKS 8
struct AllReduceParams {
  TmaDescriptor tma_a;                 // local A shard [M, K_local]
  TmaDescriptor tma_b;                 // local B shard [N, K_local]
  TmaDescriptor tma_c;                 // own partial [M, N] for the TMA-store epilogue
  TmaDescriptor tma_c_out;             // out [M, N] in tma_c's format (TmaReduce path: the
                                       // epilogue also stores the own partial into out)
  TmaDescriptor tma_out;               // out [M, N], box [BM / world, BN] (TMA comm path)
  TmaDescriptor tma_partial[MKERNEL_MAX_RANKS];  // every rank's partial [M, N], same box
  u64 out;                             // C [M, N] bf16, this rank's output (any device buffer);
                                       // a reduce-scatter: its [scatter_rows, N] rows
  u64 partial[MKERNEL_MAX_RANKS];      // symmetric [M, N] bf16 partial products, per rank
  u64 ready[MKERNEL_MAX_RANKS];        // per rank: inbox u32[world][flag_stride], [from][tile] = epoch
  u64 reduced[MKERNEL_MAX_RANKS];      // per rank: inbox u32[world][flag_stride], [from][tile] = epoch
  u64 exit_flags[MKERNEL_MAX_RANKS];   // symmetric u32[world]: peer finished reading me (epoch)
  u64 control;                         // local ControlBlock
  u64 status;                          // host-mapped KernelStatus
  u32 m, n, k;
  u32 rank;
  u32 num_comm_ctas;                   // the num_comm_ctas CTAs before the tail CTAs communicate,
                                       // the ones before them compute
  u32 flag_stride;                     // tiles per inbox row (>= number of tiles)
  u32 num_tail_ctas;                   // CTAs after the grid's compute and communication CTAs
                                       // that join the communication as SMs free (one-shot,
                                       // reduce and push paths; 0 otherwise)
  u32 epilogue_pace;                   // Epilogue path: 0 sleep fraction, 1 clock schedule
                                       // (EpiloguePace on the host; see copy_out)
  u64 timeout_ns;
  u64 trace;                           // optional FusedTraceHeader + events (0: no trace)
  u32 trace_capacity;                  // events the trace buffer holds
  u32 split_slices;                    // Epilogue path: K-slices per tile of the last wave
                                       // (1: none; see WorkUnits in gemm/sm90_gemm.cuh)
  u64 split_scratch;                   // Epilogue path: fp32 slots of those slices, this rank's
  u32 diag_skip;                       // Epilogue path, diagnostic (out is wrong): bit 0 = the
                                       // copies store nothing (pacing, fences, flags kept), bit 1
                                       // = no load or add of the peer's copy (its flag awaited)
  u32 scatter_rows;                    // reduce-scatter: rows of the sum each rank keeps (M / world);
                                       // rank r's `out` is rows [r * scatter_rows, +scatter_rows),
                                       // [scatter_rows, N]. 0: all-reduce (`out` [M, N])
};

// Fused all-gather + GEMM over the ranks of one node (see ops/allgather_gemm.cuh): rank r
// holds rows [r S, (r + 1) S) of A (S = shard_rows = M / world) and its own B; every rank
// computes out = A B^T over all M rows. Addresses per rank (index = rank; entries >= world
// are zero).
struct AllGatherParams {
  TmaDescriptor tma_a_local;           // this rank's shard A_r [S, K] (the caller's buffer), box [BK, BM / CN]
  TmaDescriptor tma_a_gathered;        // this rank's gathered A [M, K] (its workspace), same box
  TmaDescriptor tma_b;                 // B [N, K], as the plain GEMM's
  TmaDescriptor tma_c;                 // out [M, N] for the TMA-store epilogue
  u64 a_local;                         // A_r [S, K] bf16, row-major (rows K * 2 bytes apart)
  u64 out;                             // C [M, N] bf16, row-major
  u64 gathered[MKERNEL_MAX_RANKS];     // per rank: gathered A [M, K] bf16 (symmetric workspace)
  u64 arrived[MKERNEL_MAX_RANKS];      // per rank: inbox u32[world][flag_stride], [from][chunk] = epoch
  u64 exit_flags[MKERNEL_MAX_RANKS];   // symmetric u32[world]: peer finished reading me (epoch)
  u64 control;                         // local ControlBlock
  u64 status;                          // host-mapped KernelStatus
  u32 m, n, k;
  u32 rank;
  u32 shard_rows;                      // S = M / world
  u32 chunk_rows;                      // rows of a shard per arrival flag (the last chunk may be shorter)
  u32 num_comm_ctas;                   // the last num_comm_ctas CTAs push this rank's shard
  u32 flag_stride;                     // chunks per inbox row (>= chunks of a shard)
  u64 timeout_ns;
};

// Fused MoE dispatch + grouped GEMM over the ranks of one node (ops/moe_dispatch_gemm.cuh).
// Experts g = 0..experts-1 live on rank g / local_experts (local expert e = g % local_experts).
// Rank r routes its tokens x [tokens, K] by expert_ids [tokens, topk] (i32; -1: none) and
// pushes each routed token row into the owner's receive buffer, where local expert e's rows
// are one segment (its first row a multiple of 128), ordered by source rank, then token;
// every rank computes out[row] = recv[row] * W_e^T over its segments. Addresses per rank
// (index = rank; entries >= world are zero).
struct MoeDispatchParams {
  TmaDescriptor tma_a;                 // this rank's receive buffer [recv_capacity, K], box [BK, BM]
  TmaDescriptor tma_b;                 // this rank's experts' weights [local_experts * N, K] (W_e: rows e N..)
  TmaDescriptor tma_c;                 // out [recv_capacity, N] for the TMA-store epilogue
  u64 x;                               // tokens [tokens, K] bf16, row-major
  u64 expert_ids;                      // i32 [tokens, topk]: global expert of each (token, k), -1 none
  u64 out;                             // [recv_capacity, N] bf16, row-major
  u64 dest_rows;                       // u32 [tokens, topk] (out): the row of out on the expert's rank
                                       // that holds each (token, k); ~0u where expert_ids is -1 or invalid
  u64 layout;                          // u32 (out): [local_experts + 1] first rows of the segments (the
                                       // last: rows used), then [local_experts][world] tokens received
  u64 recv[MKERNEL_MAX_RANKS];         // per rank: receive buffer [recv_capacity, K] (symmetric workspace)
  u64 arrived[MKERNEL_MAX_RANKS];      // per rank: inbox u32[world][flag_stride] of epochs: [from][0] from's
                                       // counts written, [from][1 + e * seg_chunks + c] chunk arrived; own
                                       // row [rank][routing_flags_at + b], [.. + P + b]: push CTA b's
                                       // histogram, send list (local)
  u64 counts[MKERNEL_MAX_RANKS];       // per rank (data, the partial region's start): u32 [MKERNEL_MAX_RANKS]
                                       // [kMoeAgreeWords] each rank's collective arguments, then [world]
                                       // [experts]: [from][g] = from's tokens for g
  u64 exit_flags[MKERNEL_MAX_RANKS];   // symmetric u32[world]: peer finished reading me (epoch)
  u64 scratch;                         // local u32 data: [push_ctas][experts] histograms, then
                                       // [experts][max_tokens] send lists
  u64 control;                         // local ControlBlock
  u64 status;                          // host-mapped KernelStatus
  u32 tokens;                          // this rank's tokens (may differ between ranks; <= max_tokens)
  u32 topk;
  u32 experts;                         // all ranks' experts (world * local_experts)
  u32 local_experts;
  u32 n, k;
  u32 rank;
  u32 recv_capacity;                   // rows of each rank's receive buffer and out
  u32 chunk_rows;                      // tokens of a (source, expert) segment per arrival flag
  u32 seg_chunks;                      // arrival flags per (source, expert): ceil(max_tokens / chunk_rows)
  u32 num_comm_ctas;                   // the first num_comm_ctas CTAs route and push, the rest compute
  u32 flag_stride;                     // u32 per inbox row (>= routing_flags_at + 2 num_comm_ctas)
  u32 routing_flags_at;                // 1 + local_experts * seg_chunks
  u32 max_tokens;                      // the most tokens any rank has (the same on every rank)
  u32 pad0;
  u64 timeout_ns;
};

// Fused MoE grouped GEMM + combine over the ranks of one node (ops/moe_gemm_combine.cuh),
// the way back of MoeDispatchParams: every rank computes out[row] = h[row] * W_e^T over its
// segments (a dispatch's layout) and pushes each routed row to the rank its token came from,
// into slot (token * topk + k) there; every rank then sums its tokens' slots, weighted:
// y[t] = sum_k topk_weights[t, k] * slot[t * topk + k]. Addresses per rank (index = rank;
// entries >= world are zero).
struct MoeCombineParams {
  TmaDescriptor tma_a;                 // this rank's h [recv_capacity, K], box [BK, BM]
  TmaDescriptor tma_b;                 // this rank's experts' weights [local_experts * N, K] (W_e: rows e N..)
  TmaDescriptor tma_c;                 // out (this rank's workspace) [recv_capacity, N] for the TMA-store epilogue
  u64 expert_ids;                      // i32 [tokens, topk]: global expert of each (token, k), -1 none
  u64 dest_rows;                       // u32 [tokens, topk]: the dispatch's row of each (token, k) on its
                                       // expert's rank (~0u: dropped)
  u64 topk_weights;                    // f32 [tokens, topk]: each (token, k)'s weight in the sum
  u64 layout;                          // u32 [local_experts + 1 + local_experts * world]: the dispatch's
                                       // segment starts, rows used, tokens received per (expert, source)
  u64 y;                               // [tokens, N] bf16, row-major (out)
  u64 out;                             // this rank's products [recv_capacity, N] bf16 (workspace, local)
  u64 agree[MKERNEL_MAX_RANKS];        // per rank: u32 [MKERNEL_MAX_RANKS][kCombineAgreeWords] each rank's
                                       // collective arguments, whether its layout holds together, its rows used
  u64 map[MKERNEL_MAX_RANKS];          // per rank: uint4 [recv_capacity]: {epoch, the (token * topk + k) entry
                                       // on its source, the source, the global expert} of each row
                                       // (written by the source)
  u64 slots[MKERNEL_MAX_RANKS];        // per rank: bf16 [max_tokens * topk, N]: its entries' rows
  u64 arrived[MKERNEL_MAX_RANKS];      // per rank: inbox u32[world][flag_stride] of epochs: [from][0]
                                       // from's map entries and arguments written, [from][1 + tile]
                                       // from's rows of tile (mb * n_blocks + nb) for this rank pushed;
                                       // own row [rank][tile_flags_at + t]: this rank's tile t stored
  u64 exit_flags[MKERNEL_MAX_RANKS];   // symmetric u32[world]: peer finished reading me (epoch)
  u64 control;                         // local ControlBlock
  u64 status;                          // host-mapped KernelStatus
  u32 tokens;                          // this rank's tokens (may differ between ranks; <= max_tokens)
  u32 topk;
  u32 experts;                         // all ranks' experts (world * local_experts)
  u32 local_experts;
  u32 n, k;
  u32 rank;
  u32 recv_capacity;                   // rows of each rank's h, out and map
  u32 max_tokens;                      // the most tokens any rank has (the same on every rank)
  u32 num_comm_ctas;                   // the first num_comm_ctas CTAs write the map and push rows
  u32 flag_stride;                     // u32 per inbox row (>= tile_flags_at + tiles of recv_capacity)
  u32 n_blocks;                        // column blocks of out: ceil(N / BN)
  u32 tile_flags_at;                   // 1 + ceil(recv_capacity / BM) * n_blocks
  u32 pad0;
  u64 timeout_ns;
};

// Ring attention over the ranks of one node (ops/ring_attention.cuh): rank r holds S positions
// of each of the batch's sequences ([r S, (r + 1) S), or zigzag: chunks r and 2 world - 1 - r
// of S / 2); every rank computes its queries'
// attention over all ranks' keys and values. Addresses per rank (index = rank; entries >=
// world are zero). The unfused kernel (attention_kernel) reads k and v whole and no
// per-rank entry, control or status.
struct RingAttentionParams {
  TmaDescriptor tma_q;                 // q as 4-D [batch][seq][heads][head_dim], box [1][128][1][64], 128B swizzle
  TmaDescriptor tma_k, tma_v;          // k, v as 4-D [batch (unfused: world x batch)][seq][kv_heads][head_dim],
                                       // the same box
  TmaDescriptor tma_kv;                // fused: this rank's gathered KV as 4-D [world x 2 x batch][seq]
                                       // [kv_heads][head_dim], the same box (unfused: unused)
  u64 q;                               // [batch, seq, heads, head_dim] bf16, this rank's queries
  u64 k, v;                            // fused: this rank's [batch, seq, kv_heads, head_dim] bf16;
                                       // unfused: every rank's, [world][batch, seq, kv_heads, head_dim]
  u64 out;                             // [batch, seq, heads, head_dim] bf16
  u64 lse;                             // f32 [batch, heads, seq]: ln of each row's softmax sum of the
                                       // scaled scores; 0: not written
  u64 kv_gathered[MKERNEL_MAX_RANKS];  // per rank: gathered KV, [world][2 (k, v)][batch, seq, kv_heads,
                                       // head_dim] (symmetric workspace; slot r: rank r's)
  u64 arrived[MKERNEL_MAX_RANKS];      // per rank: inbox u32[world][flag_stride], [from][chunk] = epoch
  u64 exit_flags[MKERNEL_MAX_RANKS];   // symmetric u32[world]: peer finished reading me (epoch)
  u64 control;                         // local ControlBlock
  u64 status;                          // host-mapped KernelStatus
  u32 batch, seq;                      // sequences; positions of each on this rank (S)
  u32 heads, kv_heads;                 // query heads; key/value heads (heads % kv_heads == 0)
  u32 head_dim;                        // D (the kernel's own constant, repeated for the pushes)
  u32 rank;
  u32 chunk_rows;                      // positions of a sequence per arrival flag (the last may be shorter);
                                       // chunk c: sequence c / ceil(seq / chunk_rows)
  u32 num_comm_ctas;                   // the first num_comm_ctas CTAs push, the rest compute
  u32 flag_stride;                     // u32 per inbox row (>= batch * ceil(seq / chunk_rows))
  float scale_log2;                    // softmax scale x log2(e)
  u64 timeout_ns;
};

// Optional event trace of one fused call (bench --trace): a header, then events.
struct FusedTraceHeader {
  u32 count;    // events recorded (may exceed the capacity: the rest were dropped)
  u32 pad0;
};
struct FusedTraceEvent {
  u64 t_ns;     // %globaltimer (ns, one clock per GPU)
  u32 cta;      // blockIdx.x
  u32 tile;     // the tile, or what `kind` says
  u32 kind;     // mk::TraceKind
  u32 sm_clock; // %clock (SM cycles, low 32 bits): with t_ns, the SM clock rate between two events of a CTA
};

// Device-side barrier of the ranks of one node (ops/barrier.cuh): rank r stores `epoch`
// into slot r of every peer's flags, then waits until every peer's slot in its own flags
// has reached `epoch` (wrap-around compare), or `timeout_ns` passes.
struct BarrierParams {
  u64 flags[MKERNEL_MAX_RANKS];  // per rank: symmetric u32[MKERNEL_MAX_RANKS], [from] = last epoch
  u64 control;                   // this rank's ControlBlock (abort_epoch: see ops/barrier.cuh)
  u64 status;                    // host-mapped KernelStatus
  u64 timeout_ns;
  u32 rank, world;
  u32 epoch;                     // this barrier's number (never 0)
  u32 pad0;
};

// Host gate (ops/gate.cuh): wait until the host-mapped u32 at `flag` reaches `at`.
struct GateParams {
  u64 flag;        // host-mapped u32 the host raises
  u64 timed_out;   // host-mapped u32: set to `at` when the wait gave up
  u64 timeout_ns;
  u32 at;
  u32 pad0;
};

// Per-rank device-resident control words; zeroed once at allocation.
struct ControlBlock {
  u32 epoch;          // epoch of the last completed call; a call runs at epoch + 1 (1 after 2^32 - 1)
  u32 abort_epoch;    // epoch of the call in which some CTA gave up waiting (0: none);
                      // never cleared: every later call is skipped (gemm_allreduce_kernel)
  u32 ctas_done;      // CTAs finished in this call (the last one advances `epoch`)
  u32 comm_done;      // communication CTAs finished in this call
  u32 comm_next;      // next tile a communication CTA claims (one-shot, reduce and push paths), or
                      // the next GEMM unit a CTA claims (the MoE dispatch: the engine's claimed units)
  u32 input_error_epoch;  // epoch of the call that recorded an input error (an MoE dispatch's
                          // expert id or receive capacity: KernelStatus), so it is recorded once
};

// Random fill of a bf16 buffer (ops/fill.cuh).
struct FillParams {
  u64 out;      // bf16 [len]
  u64 len;      // elements
  u64 seed;
  float lo, hi; // values uniform in [lo, hi)
};

// The unfused MoE combine's weighted sum (ops/combine_sum.cuh).
struct CombineSumParams {
  u64 index;    // u32 [tokens, topk]: each entry's row of `land` (u32::MAX: none)
  u64 weights;  // f32 [tokens, topk]
  u64 land;     // bf16 [rows, n]: the rows the all-to-all brought back
  u64 y;        // bf16 [tokens, n] (written)
  u32 tokens, topk;
  u32 n;        // a multiple of 8
  u32 rows;     // rows of `land`: an index at or past it takes no part
};

// Reference accumulation of the device-side checks (ops/check.cuh).
struct AccumulateParams {
  u64 sum;      // f32 [len]
  u64 abs_sum;  // f32 [len]
  u64 p;        // f32 [len], one rank's product
  u64 len;
  u32 first;    // 1: overwrite instead of add
  u32 pad0;
};

// Result of compare_bf16_f32, accumulated with atomics.
struct CompareStats {
  double err2;
  double ref2;
  unsigned long long bad;
  unsigned long long first_bad;
  u32 max_abs_bits;
  u32 pad0;
};

struct CompareParams {
  u64 got;        // bf16 [len]
  u64 reference;  // f32 [len]
  u64 scale;      // f32 [len] added to |reference| in the tolerance, or 0
  u64 stats;      // CompareStats
  u64 len;
  float rel_tol;
  float abs_floor;
};

// ---- GPU-driven inter-node stream through the host proxy (ops/proxy_stream.cuh) --------
// One rank streams `bytes` to its peer in chunks of `chunk_bytes` while receiving as many
// bytes from it. Addresses are device addresses (pinned host memory mapped into the
// device, or device memory on the direct path).
struct ProxyStreamParams {
  RingView ring;          // this rank's command ring (host-mapped) and its device claim counter
  u64 src;                // device: the bytes this rank sends, [bytes]
  u64 staging;            // host-mapped staging slots [send_ctas * staging_slots][chunk_bytes]; 0 on the direct path
  u64 landing;            // where the peer's bytes land, [bytes] (host-mapped, or device memory on the direct path)
  u64 arrivals;           // host-mapped u64[credit_flag + 1]: [c] = epoch of chunk c's arrival, [credit_flag] = peer's credit
  u64 control;            // ProxyStreamControl (device memory, zeroed once)
  u64 result;             // ProxyStreamResult (device memory, zeroed before every launch)
  u64 status;             // ProxyStreamStatus (host-mapped), written by the first wait that gives up
  u64 bytes;              // bytes per direction this epoch (a multiple of 16)
  u64 seed;               // pattern seed (both ranks use the same)
  u64 timeout_ns;         // bound on every device-side wait
  u32 chunk_bytes;        // a multiple of 16
  u32 chunks;             // ceil(bytes / chunk_bytes)
  u32 credit_flag;        // index of the credit flag (= the capacity in chunks)
  u32 rank;
  u32 peer;
  u32 epoch;              // >= 1, one more per launch
  u32 send_ctas;          // CTAs [0, send_ctas) send, the next recv_ctas receive
  u32 recv_ctas;
  u32 staging_slots;      // staging slots per SEND CTA
  u32 direct;             // 1: commands name `src` itself (device memory registered with the NIC)
};

// Device-resident words of one stream, zeroed once when the stream is created.
struct ProxyStreamControl {
  u32 recv_done;          // RECV CTAs finished, all epochs (epoch e ends at e * recv_ctas)
  u32 abort_epoch;        // == epoch once some CTA of that launch gave up
  u64 pad[3];
};

// Verification result of one launch (zeroed before it, first_bad = ~0).
struct ProxyStreamResult {
  unsigned long long mismatched_bytes;  // bytes of the landing region that differ from the pattern
  unsigned long long first_bad;         // lowest mismatching byte offset, ~0 when none
  unsigned long long chunks_verified;   // chunks whose bytes were checked
  unsigned long long ahead;             // arrival flags seen beyond this epoch (protocol violation)
};

// Written by the first device-side wait of a launch that gives up (code != 0), into
// pinned host memory, so the host can name what was waited for.
struct ProxyStreamStatus {
  u32 code;               // a StreamWait code
  u32 rank;               // rank that waited
  u32 peer;               // rank whose action did not come
  u32 chunk;              // chunk index, or ~0u when not about one chunk
  u32 epoch;              // epoch of the launch
  u32 cta;                // blockIdx.x of the waiting CTA
  u64 expected;           // value waited for (>=)
  u64 observed;           // last value seen
  u64 waited_ns;
};
