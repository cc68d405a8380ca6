// Bounded waits. Every spin on memory written by another CTA, GPU or the host goes
// through one of these; on timeout they say what they waited for.
#pragma once
#include "../ptx/common.cuh"
#include "../params.cuh"

// What a wait was for; KernelStatus.code holds one of these on timeout.
enum class WaitOp : u32 {
  None = 0,
  PeerTileReady = 1,     // a peer's partial tile (ready flag)
  PeerSliceReduced = 2,  // a peer's reduced slice of a tile
  PeerExit = 3,          // a peer finishing its reads of this rank's buffers
  PeerBarrier = 4,       // a peer reaching a device-side barrier (ops/barrier.cuh)
  PeerChunkArrived = 5,  // a peer's chunk of A rows in this rank's gathered A (ops/allgather_gemm.cuh)
  PeerCountsArrived = 6,     // a peer's tokens per expert (ops/moe_dispatch_gemm.cuh)
  PeerTokensArrived = 7,     // a peer's chunk of tokens for a local expert (ops/moe_dispatch_gemm.cuh)
  LocalRoutingStep = 8,      // another push CTA of this rank's routing (ops/moe_dispatch_gemm.cuh)
  // Not waits: bad input the kernel found and went on without (record_input_error)
  InvalidExpertId = 9,       // tile = the (token, k) entry, observed = its id
  RecvCapacityExceeded = 10, // peer = the receiving rank, expected = capacity, observed = rows needed
  RanksDisagree = 11,        // peer = the rank whose argument differs, entry = which (kMoeAgreeWords),
                             // expected = this rank's value, observed = the peer's
  PeerKvArrived = 12,        // a peer's chunk of keys and values (ops/ring_attention.cuh)
  PeerMapWritten = 13,       // a peer's map entries and arguments (ops/moe_gemm_combine.cuh)
  PeerRowsPushed = 14,       // a peer's rows of a tile for this rank's tokens (ops/moe_gemm_combine.cuh)
  LocalTileStored = 15,      // this rank's own GEMM tile (ops/moe_gemm_combine.cuh)
  // Not waits (record_input_error), the MoE combine's:
  InvalidDestRow = 16,       // tile = the (token, k) entry, expected = recv_capacity, observed = its row
  InvalidLayout = 17,        // peer = the rank whose layout does not hold together
  CombineRanksDisagree = 18, // as RanksDisagree, entry = which (kCombineAgreeWords)
  InconsistentRoutes = 19,   // peer = the source rank, entry = the row, expected = max_tokens * topk,
                             // observed = the entry its map holds
};

// Intra-CTA mbarrier wait. Only a bug (a faulted TMA, a miscounted arrival) can make
// it expire; it then traps, and the host reports the failed launch with the timeout.
// NOTE: no printf here: any call in a thread that has wgmma in flight makes ptxas
// serialise every wgmma of the kernel (warning C7510), a large slowdown.
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity, u64 timeout_ns) {
  if (mbar_try_wait(bar, parity)) return;
  const u64 start = globaltimer_ns();
  while (!mbar_try_wait(bar, parity)) {
    if (globaltimer_ns() - start > timeout_ns) trap();
  }
}

// Context for inter-GPU waits of one kernel call.
struct WaitContext {
  ControlBlock* control;
  KernelStatus* status;   // host-mapped
  u64 timeout_ns;
  u32 rank;
  u32 epoch;
};

__device__ __forceinline__ bool aborted(const WaitContext& ctx) {
  return ld_acquire_gpu(&ctx.control->abort_epoch) == ctx.epoch;
}

// Records a timed-out wait for the host (KernelStatus, host-mapped): the fields first,
// then `code` between system-scope fences, so a host that sees `code` sees the rest. One
// thread, once per failure (the caller claimed it through ControlBlock.abort_epoch).
__device__ __forceinline__ void record_wait_timeout(KernelStatus* status, WaitOp op, u32 rank, u32 peer, u32 tile,
                                                    u32 epoch, u32 expected, u32 observed, u64 waited_ns) {
  volatile KernelStatus* s = status;
  s->rank = rank; s->peer = peer; s->tile = tile; s->epoch = epoch;
  s->expected = expected; s->observed = observed; s->cta = blockIdx.x; s->waited_ns = waited_ns;
  fence_acq_rel_sys();
  s->code = (u32)op;
  fence_acq_rel_sys();
}

// Records bad input found by the kernel (an InvalidExpertId, RecvCapacityExceeded or
// RanksDisagree code) in KernelStatus's input_* fields (its own: a timeout's record is never
// mixed with it), without aborting: the call goes on without the offending entries (or,
// for the capacity and a disagreement, without its pushes and GEMM, which every rank skips
// alike), its peers are not left waiting, and the host reports it after the call
// (Communicator::synchronize). `claim`: once per call (ControlBlock.input_error_epoch; the
// expert ids, found by many threads); else one thread that writes after every claimed
// record of the call (and so overwrites it: the capacity and a disagreement skip the call).
__device__ __forceinline__ void record_input_error(const WaitContext& ctx, WaitOp op, u32 peer, u32 entry, u32 expected,
                                                   u32 observed, bool claim) {
  if (claim && atomicExch(&ctx.control->input_error_epoch, ctx.epoch) == ctx.epoch) return;
  volatile KernelStatus* s = ctx.status;
  s->input_peer = peer; s->input_entry = entry; s->input_epoch = ctx.epoch;
  s->input_expected = expected; s->input_observed = observed;
  fence_acq_rel_sys();
  s->input_code = (u32)op;
  fence_acq_rel_sys();
}

// Waits until *flag == expected (the epoch of this call). Returns false when the wait
// timed out or another CTA of this kernel already aborted; the first CTA to time out
// records the status for the host (which prints it: see the NOTE on mbar_wait). One
// thread.
// NOTE: equality, not >=: a later call's flags must never satisfy this call's wait.
// (A rank that timed out skips the exit handshake; the calls queued behind it are
// skipped and publish nothing (gemm_allreduce_kernel), so a late peer still in this
// call reads consistent data; equality keeps that true even if a later call ran.)
// backoff_ns: sleep between polls (0: spin), for waits on an SM whose other warps
// compute: a spinning warp takes issue slots from the warps of its SM sub-partition.
__device__ __forceinline__ bool wait_flag_eq(const u32* flag, u32 expected, const WaitContext& ctx,
                                           WaitOp op, u32 peer, u32 tile, u32 backoff_ns = 0) {
  u32 seen = ld_acquire_sys(flag);
  if (seen == expected) return true;
  const u64 start = globaltimer_ns();
  for (u32 spin = 1;; ++spin) {
    if (backoff_ns != 0) __nanosleep(backoff_ns);
    seen = ld_acquire_sys(flag);
    if (seen == expected) return true;
    if ((spin & 31) == 0) {
      const u64 waited = globaltimer_ns() - start;
      if (aborted(ctx)) return false;
      if (waited > ctx.timeout_ns) {
        const u32 prev = atomicExch(&ctx.control->abort_epoch, ctx.epoch);
        if (prev != ctx.epoch) record_wait_timeout(ctx.status, op, ctx.rank, peer, tile, ctx.epoch, expected, seen, waited);
        return false;
      }
    }
  }
}

// Rank `from`'s arrival flag of chunk `chunk` in the inbox `region` (u32[world][stride]):
// the all-gather's chunks of A, the ring attention's chunks of keys and values.
__device__ __forceinline__ u32* arrival_flag(u64 region, u32 stride, u32 from, u32 chunk) {
  return reinterpret_cast<u32*>(region) + (u64)from * stride + chunk;
}

// ---- a collective call's start and end (the all-gather + GEMM) -------------------------
// The same steps as gemm_allreduce_kernel's own (which keeps its inline copy: calling these
// instead changed the SASS of all 430 fused all-reduce and reduce-scatter kernels, whose
// timings on the H200 pair are for the code as it is; session 54, bench/NOTES.md 57).
// Epoch 0 is never used (after 2^32 calls it wraps to 1): 0 means "no abort" in
// abort_epoch and "never published" in the zeroed flags, so a call at epoch 0 would see
// itself aborted (aborted(): abort_epoch == epoch) and skip its exit handshake.
__device__ __forceinline__ WaitContext begin_call(ControlBlock* control, u64 status, u64 timeout_ns, u32 rank) {
  const u32 last_epoch = ld_acquire_gpu(&control->epoch);
  return WaitContext{control, reinterpret_cast<KernelStatus*>(status), timeout_ns, rank,
                     last_epoch + 1 != 0 ? last_epoch + 1 : 1u};
}

// Whether this call is queued behind one that gave up (abort_epoch holds that call's
// epoch): it then does no work and says nothing to its peers; it only advances the epoch,
// leaving `out` unwritten (the host poisons the communicator once it sees the error, so
// such a call's output is never used), while rewriting a buffer a peer reads could hand
// a late peer, still in the aborted call, data half-rewritten after it saw the flag; its
// exit flags would in turn release that peer early. Nothing writes abort_epoch during a
// skipped call, so every CTA of the call sees the same value.
__device__ __forceinline__ bool skipped_call(const WaitContext& ctx) {
  const u32 abort_seen = ld_acquire_gpu(&ctx.control->abort_epoch);
  return abort_seen != 0 && abort_seen != ctx.epoch;
}

// Exit handshake, thread 0 of each of the n_ctas CTAs that touch peers' buffers: the last
// of them tells every peer "done with your buffers" (exit_q[rank] = epoch) and waits for
// every peer's exit flag, so no rank rewrites a buffer a peer still reads in the next
// call. `exit_flags[q]`: rank q's symmetric u32[world]. skipped: see skipped_call.
template <u32 WORLD>
__device__ __forceinline__ void exit_handshake(const u64 (&exit_flags)[MKERNEL_MAX_RANKS], u32 rank, const WaitContext& ctx,
                                               u32 n_ctas, bool skipped) {
  const u32 finished = atom_add_acq_rel_gpu(&ctx.control->comm_done, 1) + 1;
  if (finished == n_ctas) {
    ctx.control->comm_done = 0;
    if (skipped) return;
    for (u32 i = 1; i < WORLD; ++i) {
      const u32 q = (rank + i) % WORLD;
      st_release_sys(reinterpret_cast<u32*>(exit_flags[q]) + rank, ctx.epoch);
    }
    if (!aborted(ctx)) {
      for (u32 i = 1; i < WORLD; ++i) {
        const u32 q = (rank + i) % WORLD;
        if (!wait_flag_eq(reinterpret_cast<const u32*>(exit_flags[rank]) + q, ctx.epoch, ctx, WaitOp::PeerExit, q, ~0u))
          break;
      }
    }
  }
}

// Epoch hand-over, thread 0 of every CTA after its last access of this call: the last CTA
// of the grid advances the epoch (so the next call needs no host-side reset).
__device__ __forceinline__ void end_call(const WaitContext& ctx) {
  const u32 finished = atom_add_acq_rel_gpu(&ctx.control->ctas_done, 1) + 1;
  if (finished == gridDim.x) {
    ctx.control->ctas_done = 0;
    ctx.control->comm_next = 0;
    ctx.control->epoch = ctx.epoch;
    fence_acq_rel_gpu();
  }
}
