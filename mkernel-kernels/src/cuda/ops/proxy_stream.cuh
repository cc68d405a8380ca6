// GPU-driven inter-node stream through the host proxy (../shared/DESIGN.md section 2, items 3, 5, 6).
//
// Two ranks (on two nodes; on the test machine, two GPUs of one host that talk only
// through ring -> proxy -> NIC library) each stream `bytes` to the other. One persistent
// kernel per rank; CTAs [0, send_ctas) SEND, the next recv_ctas RECV.
//
//   rank r                                                 rank p (peer)
//   SEND CTA k, chunks c = k, k + send_ctas, ...
//     src[c] --copy--> staging slot (pinned host)          (direct path: no copy, the
//     ring_push(PutSignal c, epoch)  --proxy r--NIC-->      command names src itself)
//                                    landing_p[c] <- bytes; arrival_p[c] := epoch
//   RECV CTA k, chunks c = k, k + recv_ctas, ...           (completion adaptor: ordered
//     wait arrival_r[c] == epoch  <--NIC-- proxy p --        flag write, or the receiving
//     verify landing_r[c] against pattern(seed, epoch, p)    proxy turns the immediate
//   last RECV CTA of the epoch:                              into the flag)
//     ring_push(PutSignal credit, epoch) --> arrival_p[credit_flag] := epoch
//
// Credits: rank r's SEND of epoch e writes into the peer's landing region only once the
// peer has verified epoch e - 1 (arrival_r[credit_flag] >= e - 1), so a fast rank never
// overwrites bytes its peer is still reading. Epochs grow by one per launch and every
// flag holds the epoch of its last event, so nothing is reset between launches.
//
// Staging: SEND CTA k owns `staging_slots` slots; its j-th chunk uses slot j % slots and
// first waits until the proxy has completed the command that used it last (completion
// flag of chunk j - slots, indexed by chunk). Before exiting, every SEND CTA waits until
// all its commands completed, so when the kernel ends the staging slots and `src` may be
// rewritten by the next launch.
//
// Every wait is bounded by timeout_ns; the first CTA that gives up records what it waited
// for in the host-mapped ProxyStreamStatus and sets control.abort_epoch, which makes every
// other wait of the launch give up at once. The proxy's abort word ends waits the same way.
#pragma once
#include "../params.cuh"
#include "fill.cuh"

namespace mk {

enum class StreamRole : u32 { InterSend = 2, InterRecv = 3 };

// ProxyStreamStatus.code: what a wait that gave up was waiting for.
enum class StreamWait : u32 {
  None = 0,
  Arrival = 1,         // RECV: the peer's chunk (arrival flag >= epoch)
  Credit = 2,          // SEND: the peer's credit (it verified the previous epoch)
  SendComplete = 3,    // SEND: the proxy completing a command (staging slot or end of epoch)
  RingPush = 4,        // SEND: ring space (the fault is recorded in the ring's control block)
  ProxyAborted = 5,    // any: the proxy set its abort word (observed = AbortCode)
};

constexpr u32 kStreamUnroll = 4;   // 16-byte vectors in flight per thread (PCIe latency)
constexpr u32 kNoChunk = 0xFFFFFFFFu;

// ---- the pattern: byte i of rank r's stream in epoch e ---------------------------------
// A stale chunk (other epoch), a misplaced one (other offset) or one from another rank
// differs. Mirrored by `pattern_word` in mkernel/src/internode.rs.
__device__ __forceinline__ u64 stream_word(u64 seed, u32 epoch, u32 rank, u64 word) {
  const u64 key = mix64(seed ^ mix64(((u64)epoch << 32) | (u64)rank));
  return mix64(key + word * 0x9E3779B97F4A7C15ull);
}

// ---- memory access ------------------------------------------------------------------------
// Landed bytes were written by the NIC library or the proxy (host) during this kernel:
// `.cv` refetches instead of trusting any cached copy of system memory.
__device__ __forceinline__ uint4 ld_cv_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.cv.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}
// Bytes that differ between two words.
__device__ __forceinline__ u32 differing_bytes(u64 a, u64 b) {
  u64 x = a ^ b;
  x |= x >> 4;
  x |= x >> 2;
  x |= x >> 1;
  return (u32)__popcll(x & 0x0101010101010101ull);
}

// ---- bounded waits ------------------------------------------------------------------------
struct StreamCtx {
  const ProxyStreamParams* p;
  ProxyStreamControl* control;
  ProxyStreamStatus* status;
};

__device__ __forceinline__ bool stream_aborted(const StreamCtx& ctx) {
  return ld_acquire_gpu(&ctx.control->abort_epoch) == ctx.p->epoch;
}

// Records the first give-up of this launch for the host and stops every other wait.
__device__ __forceinline__ void stream_give_up(const StreamCtx& ctx, StreamWait op, u32 peer, u32 chunk,
                                               u64 expected, u64 observed, u64 waited_ns) {
  const u32 prev = atomicExch(&ctx.control->abort_epoch, ctx.p->epoch);
  if (prev == ctx.p->epoch) return;
  volatile ProxyStreamStatus* s = ctx.status;
  s->rank = ctx.p->rank; s->peer = peer; s->chunk = chunk; s->epoch = ctx.p->epoch; s->cta = blockIdx.x;
  s->expected = expected; s->observed = observed; s->waited_ns = waited_ns;
  fence_acq_rel_sys();
  s->code = (u32)op;
  fence_acq_rel_sys();
}

// The one spin helper of this kernel: waits until *word >= expected (acquire, system
// scope: the host or the NIC library writes it). Gives up, recording `op`, when the
// deadline passes; gives up silently when another CTA already did or the proxy aborted
// (the latter recorded once as ProxyAborted). One thread.
__device__ __forceinline__ bool wait_until_geq(const StreamCtx& ctx, const u64* word, u64 expected,
                                               StreamWait op, u32 peer, u32 chunk) {
  u64 seen = ld_acquire_sys_u64(word);
  if (seen >= expected) return true;
  const u64 start = globaltimer_ns();
  for (u32 spin = 1;; ++spin) {
    seen = ld_acquire_sys_u64(word);
    if (seen >= expected) return true;
    if ((spin & 31u) == 0u) {
      const u64 waited = globaltimer_ns() - start;
      if (stream_aborted(ctx)) return false;
      if (ring_aborted(ctx.p->ring)) {
        stream_give_up(ctx, StreamWait::ProxyAborted, peer, chunk, expected,
                       (u64)ld_acquire_sys(&ctx.p->ring.control->abort), waited);
        return false;
      }
      if (waited > ctx.p->timeout_ns) {
        stream_give_up(ctx, op, peer, chunk, expected, seen, waited);
        return false;
      }
    }
  }
}

// ---- SEND ------------------------------------------------------------------------------
// Copies one chunk from device memory into its pinned staging slot (16-byte vectors,
// kStreamUnroll in flight per thread), then makes the stores visible system-wide.
__device__ __forceinline__ void stage_chunk(const uint4* src, uint4* dst, u32 vectors) {
  const u32 step = blockDim.x * kStreamUnroll;
  for (u32 base = threadIdx.x; base < vectors; base += step) {
    uint4 v[kStreamUnroll];
#pragma unroll
    for (u32 u = 0; u < kStreamUnroll; ++u) {
      const u32 i = base + u * blockDim.x;
      if (i < vectors) v[u] = src[i];
    }
#pragma unroll
    for (u32 u = 0; u < kStreamUnroll; ++u) {
      const u32 i = base + u * blockDim.x;
      if (i < vectors) st_v4(dst + i, v[u]);
    }
  }
  // NOTE: every thread fences its own stores at system scope before the CTA barrier
  // that precedes the release store of the command's sequence word, so the proxy and
  // the NIC library read the staged bytes, not older ones.
  fence_acq_rel_sys();
}

__device__ __forceinline__ u32 chunk_length(const ProxyStreamParams& p, u32 c) {
  const u64 off = (u64)c * p.chunk_bytes;
  const u64 left = p.bytes - off;
  return left < (u64)p.chunk_bytes ? (u32)left : p.chunk_bytes;
}

__device__ void send_chunks(const StreamCtx& ctx, u32 k) {
  const ProxyStreamParams& p = *ctx.p;
  __shared__ u32 go;
  if (threadIdx.x == 0) {
    // Credit: the peer has verified the previous epoch, so its landing region is free.
    go = wait_until_geq(ctx, reinterpret_cast<const u64*>(p.arrivals) + p.credit_flag, (u64)p.epoch - 1ull,
                        StreamWait::Credit, p.peer, kNoChunk) ? 1u : 0u;
  }
  __syncthreads();
  if (go == 0u) return;
  u32 j = 0;
  for (u32 c = k; c < p.chunks; c += p.send_ctas, ++j) {
    const u32 len = chunk_length(p, c);
    u64 local_offset = (u64)c * p.chunk_bytes;
    if (p.direct == 0u) {
      const u32 slot = k * p.staging_slots + j % p.staging_slots;
      if (threadIdx.x == 0 && j >= p.staging_slots) {
        // The slot's previous chunk (same CTA, same epoch) must have left it.
        const u32 prev = c - p.staging_slots * p.send_ctas;
        go = wait_until_geq(ctx, p.ring.completion + prev, (u64)p.epoch, StreamWait::SendComplete, p.peer, prev)
                 ? 1u : 0u;
      }
      __syncthreads();
      if (go == 0u) return;
      local_offset = (u64)slot * p.chunk_bytes;
      stage_chunk(reinterpret_cast<const uint4*>(p.src + (u64)c * p.chunk_bytes),
                  reinterpret_cast<uint4*>(p.staging + local_offset), len / 16u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      TransferCommand cmd;
      cmd.seq = 0;
      cmd.kind = (u16)CommandKind::PutSignal;
      cmd.local_region = 0;      // staging slots, or src on the direct path
      cmd.peer = p.peer;
      cmd.remote_region = 0;     // the peer's landing region
      cmd.flags = 0;
      cmd.local_offset = local_offset;
      cmd.remote_offset = (u64)c * p.chunk_bytes;
      cmd.length = len;
      cmd.chunk = c;
      cmd.epoch = p.epoch;
      cmd.completion = c;
      if (!ring_push(p.ring, cmd)) {
        stream_give_up(ctx, ring_aborted(p.ring) ? StreamWait::ProxyAborted : StreamWait::RingPush, p.peer, c,
                       0ull, ld_acquire_sys_u64(&p.ring.control->tail), 0ull);
        go = 0u;
      }
    }
    __syncthreads();
    if (go == 0u) return;
  }
  // ---- end of epoch: every command of this CTA has completed locally -------------------
  if (threadIdx.x == 0) {
    for (u32 c = k; c < p.chunks; c += p.send_ctas) {
      if (!wait_until_geq(ctx, p.ring.completion + c, (u64)p.epoch, StreamWait::SendComplete, p.peer, c)) break;
    }
  }
}

// ---- RECV ------------------------------------------------------------------------------
// Checks every byte of one landed chunk; returns the number of differing bytes and
// lowers *first_bad (shared) to the lowest differing offset of the stream.
__device__ __forceinline__ u64 verify_chunk(const ProxyStreamParams& p, u32 c, u32 len,
                                            unsigned long long* first_bad) {
  const u64 base_byte = (u64)c * p.chunk_bytes;
  const uint4* src = reinterpret_cast<const uint4*>(p.landing + base_byte);
  const u32 vectors = len / 16u;
  const u32 step = blockDim.x * kStreamUnroll;
  u64 bad = 0;
  for (u32 base = threadIdx.x; base < vectors; base += step) {
    uint4 v[kStreamUnroll];
#pragma unroll
    for (u32 u = 0; u < kStreamUnroll; ++u) {
      const u32 i = base + u * blockDim.x;
      if (i < vectors) v[u] = ld_cv_v4(src + i);
    }
#pragma unroll
    for (u32 u = 0; u < kStreamUnroll; ++u) {
      const u32 i = base + u * blockDim.x;
      if (i >= vectors) continue;
      const u64 word = (base_byte >> 3) + 2ull * i;
      const u64 lo = ((u64)v[u].y << 32) | v[u].x;
      const u64 hi = ((u64)v[u].w << 32) | v[u].z;
      const u32 d = differing_bytes(lo, stream_word(p.seed, p.epoch, p.peer, word)) +
                    differing_bytes(hi, stream_word(p.seed, p.epoch, p.peer, word + 1));
      if (d != 0u) {
        bad += d;
        atomicMin(first_bad, (unsigned long long)(base_byte + 16ull * i));
      }
    }
  }
  return bad;
}

__device__ void recv_chunks(const StreamCtx& ctx, u32 k) {
  const ProxyStreamParams& p = *ctx.p;
  ProxyStreamResult* result = reinterpret_cast<ProxyStreamResult*>(p.result);
  const u64* arrival = reinterpret_cast<const u64*>(p.arrivals);
  __shared__ u32 go;
  __shared__ unsigned long long first_bad;
  __shared__ unsigned long long bad_total;
  if (threadIdx.x == 0) { first_bad = ~0ull; bad_total = 0ull; }
  u64 verified = 0;
  for (u32 c = k; c < p.chunks; c += p.recv_ctas) {
    if (threadIdx.x == 0) {
      go = wait_until_geq(ctx, arrival + c, (u64)p.epoch, StreamWait::Arrival, p.peer, c) ? 1u : 0u;
      if (go != 0u && ld_acquire_sys_u64(arrival + c) != (u64)p.epoch) {
        // A later epoch's flag: the peer wrote before our credit (protocol violation).
        atomicAdd(&result->ahead, 1ull);
      }
    }
    __syncthreads();
    if (go == 0u) return;
    const u64 bad = verify_chunk(p, c, chunk_length(p, c), &first_bad);
    if (bad != 0ull) atomicAdd(&bad_total, (unsigned long long)bad);
    ++verified;
    __syncthreads();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (bad_total != 0ull) {
      atomicAdd(&result->mismatched_bytes, bad_total);
      atomicMin(&result->first_bad, first_bad);
    }
    atomicAdd(&result->chunks_verified, (unsigned long long)verified);
    // The last RECV CTA of the epoch gives the peer its credit: our landing region may
    // be overwritten. Its loads above are ordered before this acq_rel add.
    const u32 done = atom_add_acq_rel_gpu(&ctx.control->recv_done, 1u) + 1u;
    if (done == p.epoch * p.recv_ctas) {
      TransferCommand cmd;
      cmd.seq = 0;
      cmd.kind = (u16)CommandKind::PutSignal;
      cmd.local_region = 1;      // 8-byte credit source
      cmd.peer = p.peer;
      cmd.remote_region = 1;     // the peer's 8-byte credit sink
      cmd.flags = 0;
      cmd.local_offset = 0;
      cmd.remote_offset = 0;
      cmd.length = 8;
      cmd.chunk = p.credit_flag;
      cmd.epoch = p.epoch;
      cmd.completion = kNoCompletion;
      if (!ring_push(p.ring, cmd)) {
        stream_give_up(ctx, ring_aborted(p.ring) ? StreamWait::ProxyAborted : StreamWait::RingPush, p.peer,
                       p.credit_flag, 0ull, ld_acquire_sys_u64(&p.ring.control->tail), 0ull);
      }
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------
template <u32 kThreads>
__device__ __forceinline__ void proxy_stream_kernel(const ProxyStreamParams& p) {
  // ---- template checks -----------------------------------------------------------------
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
  static_assert(sizeof(TransferCommand) == kCommandBytes, "48-byte ring slots");
  static_assert(sizeof(uint4) == 16, "16-byte vectors");
  const StreamCtx ctx{&p, reinterpret_cast<ProxyStreamControl*>(p.control),
                      reinterpret_cast<ProxyStreamStatus*>(p.status)};
  const StreamRole role = blockIdx.x < p.send_ctas ? StreamRole::InterSend : StreamRole::InterRecv;
  if (role == StreamRole::InterSend) {
    send_chunks(ctx, blockIdx.x);
  } else if (role == StreamRole::InterRecv) {
    recv_chunks(ctx, blockIdx.x - p.send_ctas);
  }
}

// Writes this rank's pattern for `epoch` into `src` (grid-stride, 16-byte stores).
__device__ __forceinline__ void proxy_stream_fill(const ProxyStreamParams& p) {
  uint4* out = reinterpret_cast<uint4*>(p.src);
  const u64 vectors = p.bytes / 16ull;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride) {
    const u64 lo = stream_word(p.seed, p.epoch, p.rank, 2ull * i);
    const u64 hi = stream_word(p.seed, p.epoch, p.rank, 2ull * i + 1ull);
    uint4 v;
    v.x = (u32)lo; v.y = (u32)(lo >> 32); v.z = (u32)hi; v.w = (u32)(hi >> 32);
    out[i] = v;
  }
}

}  // namespace mk
