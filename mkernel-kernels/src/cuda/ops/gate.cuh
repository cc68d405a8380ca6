// Host gate: holds a stream until the host has enqueued the work behind it, so that work
// runs back to back on the GPU however slowly the host enqueues it (the "blocking
// kernel" of nvbench). Benchmarks hold each round this way: a step then never waits for
// the host's launch of the next one, which would count as the next step's time.
//
// One thread polls a host-mapped u32 until it reaches `at` (wrap-around compare), with
// sleeps; after `timeout_ns` it stores `at` into the host-mapped `timed_out` word and
// returns (the benchmark then reports its timings as invalid instead of hanging).
#pragma once
#include "../params.cuh"
#include "../ptx/common.cuh"

namespace mk {

__device__ __forceinline__ void host_gate(const GateParams& p) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  const u32* flag = reinterpret_cast<const u32*>(p.flag);
  if ((i32)(ld_acquire_sys(flag) - p.at) >= 0) return;
  const u64 start = globaltimer_ns();
  while ((i32)(ld_acquire_sys(flag) - p.at) < 0) {
    if (globaltimer_ns() - start > p.timeout_ns) {
      st_release_sys(reinterpret_cast<u32*>(p.timed_out), p.at);
      return;
    }
    __nanosleep(500);
  }
}

}  // namespace mk
