// Device-side barrier of the ranks of one node: the work a rank's stream has after the
// barrier starts only once every rank's stream has reached it (within the NVLink flag
// latency, ~1 us), without a host synchronisation. Benchmarks use it so that each timed
// kernel starts with the ranks aligned, instead of inheriting the skew that kernels
// timed before it left (bench/NOTES.md 11).
//
// One thread: store `epoch` into this rank's slot of every peer's flags (release, system
// scope: the stream's earlier work is complete when this kernel runs), then wait until
// every peer's slot in this rank's flags has reached `epoch`. "Reached" is a wrap-around
// compare, (i32)(seen - epoch) >= 0, not equality: a peer that passed this barrier may
// already have stored the next epoch. On timeout the wait records a KernelStatus
// (WaitOp::PeerBarrier) unless one is already recorded, and the kernel returns.
#pragma once
#include "../params.cuh"
#include "../sync/wait.cuh"

namespace mk {

__device__ __forceinline__ void rank_barrier(const BarrierParams& p) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  for (u32 q = 0; q < p.world; ++q)
    if (q != p.rank) st_release_sys(reinterpret_cast<u32*>(p.flags[q]) + p.rank, p.epoch);
  const u64 start = globaltimer_ns();
  for (u32 q = 0; q < p.world; ++q) {
    if (q == p.rank) continue;
    const u32* flag = reinterpret_cast<const u32*>(p.flags[p.rank]) + q;
    for (u32 seen = ld_acquire_sys(flag); (i32)(seen - p.epoch) < 0; seen = ld_acquire_sys(flag)) {
      const u64 waited = globaltimer_ns() - start;
      if (waited > p.timeout_ns) {
        volatile KernelStatus* s = reinterpret_cast<KernelStatus*>(p.status);
        if (s->code == 0) {  // the first failure is the one reported
          s->rank = p.rank; s->peer = q; s->tile = ~0u; s->epoch = p.epoch;
          s->expected = p.epoch; s->observed = seen; s->cta = 0; s->waited_ns = waited;
          fence_acq_rel_sys();
          s->code = (u32)WaitOp::PeerBarrier;
          fence_acq_rel_sys();
        }
        return;
      }
    }
  }
}

}  // namespace mk
