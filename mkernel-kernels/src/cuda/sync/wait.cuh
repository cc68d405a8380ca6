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
