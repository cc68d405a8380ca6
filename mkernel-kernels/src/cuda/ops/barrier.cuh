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
// already have stored the next epoch.
//
// Failure: on timeout the wait records a KernelStatus (WaitOp::PeerBarrier) and marks the
// rank aborted (ControlBlock.abort_epoch, as a fused call's timed-out wait does), so the
// work queued behind it gives up at once instead of each waiting a full timeout: later
// barriers return at entry, later fused calls take their skipped path. The status is
// written only if none is recorded yet and the abort mark was this barrier's to set:
// with the fused kernels' waits (which also set abort_epoch first), one failure is
// reported, the first.
#pragma once
#include "../params.cuh"
#include "../sync/wait.cuh"

namespace mk {

__device__ __forceinline__ void rank_barrier(const BarrierParams& p) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  ControlBlock* control = reinterpret_cast<ControlBlock*>(p.control);
  // A failure is already recorded (a barrier or fused call of this rank gave up): the
  // ranks are no longer in step; do nothing (the host reports the failure).
  if (ld_acquire_gpu(&control->abort_epoch) != 0) return;
  for (u32 q = 0; q < p.world; ++q)
    if (q != p.rank) st_release_sys(reinterpret_cast<u32*>(p.flags[q]) + p.rank, p.epoch);
  const u64 start = globaltimer_ns();
  for (u32 q = 0; q < p.world; ++q) {
    if (q == p.rank) continue;
    const u32* flag = reinterpret_cast<const u32*>(p.flags[p.rank]) + q;
    for (u32 seen = ld_acquire_sys(flag); (i32)(seen - p.epoch) < 0; seen = ld_acquire_sys(flag)) {
      const u64 waited = globaltimer_ns() - start;
      if (waited > p.timeout_ns) {
        // Mark the rank aborted with the last completed call's epoch (never a later
        // call's: those see themselves skipped; ~0u before any call, as 0 means none).
        const u32 last = ld_acquire_gpu(&control->epoch);
        const u32 mark = last != 0 ? last : ~0u;
        if (atomicCAS(&control->abort_epoch, 0u, mark) == 0u)
          record_wait_timeout(reinterpret_cast<KernelStatus*>(p.status), WaitOp::PeerBarrier, p.rank, q, ~0u, p.epoch,
                              p.epoch, seen, waited);
        return;
      }
    }
  }
}

}  // namespace mk
