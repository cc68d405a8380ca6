// The GPU -> host command ring: the producer side (SEND CTAs).
//
// Mirrored field for field by mkernel-proxy/src/command.rs (the host side owns the
// protocol); the layout test there compiles static_asserts generated from the Rust
// offsets against this header with NVRTC. No CUDA toolkit header is used.
//
// Protocol (the host side is mkernel-proxy/src/ring.rs, implemented there for CPU
// producers too):
//
//   producer (one thread of a SEND CTA)            proxy (one host thread per ring)
//   t = atom.add(head, 1)                          c = tail (its own copy)
//   wait until t < ld.acquire.sys(tail) + slots    s = slots[c & mask]
//   slot = slots[t & mask]                         if ld.acquire(s.seq) == (u32)(c + 1):
//   slot.<body> = ...            (plain stores)        copy s out            (never torn)
//   st.release.sys(slot.seq, (u32)(t + 1))             c += 1
//                                                  st.release(tail, c)  (after the copy)
//
// The release store of `seq` orders the body before it; the proxy's acquire load of
// `seq` orders its reads after it. The proxy publishes `tail` only after copying the
// commands out, so a producer of the next lap never overwrites a slot being read. Stale
// slots hold (u32)(t + 1 - slots), never the expected value. Head and tail only grow:
// nothing is reset between kernel launches.
#pragma once
#include "../ptx/common.cuh"

// ---- shared constants -----------------------------------------------------------------
static constexpr u32 kCommandBytes = 48;
static constexpr u32 kNoCompletion = 0xFFFFFFFFu;   // TransferCommand.completion: none

enum class CommandKind : u16 {
  Put = 1,        // one-sided write, no arrival signal
  PutSignal = 2,  // write + arrival flag[chunk] := epoch at the peer (completion adaptor)
};

// RingControl.abort: why the proxy stopped (0 = running).
enum class AbortCode : u32 {
  None = 0,
  Transport = 1,
  BadCommand = 2,
  ProducerFault = 3,
  Host = 4,
  Shutdown = 5,
};

// RingControl.fault: why a producer gave up (0 = none).
enum class RingFault : u32 {
  None = 0,
  RingFull = 1,   // the proxy did not advance its tail before the deadline
  Aborted = 2,    // the proxy set the abort word while the producer waited for space
};

// ---- shared structs -------------------------------------------------------------------
// One ring slot. Regions are indices into the proxy's tables (local regions; regions
// imported from `peer`). Offsets and length in bytes; epoch >= 1.
struct alignas(8) TransferCommand {
  u32 seq;            // publication word: (u32)(ticket + 1), stored last with release
  u16 kind;           // CommandKind
  u16 local_region;   // index into the proxy's local region table
  u32 peer;           // destination rank
  u16 remote_region;  // index into the proxy's table of `peer`'s regions
  u16 flags;          // reserved, 0
  u64 local_offset;
  u64 remote_offset;
  u32 length;
  u32 chunk;          // chunk index in the peer's arrival flags (PutSignal)
  u32 epoch;          // arrival and completion flags take this value
  u32 completion;     // completion flag index, or kNoCompletion
};

// Control words at byte 0 of the ring memory; three 64-byte lines.
struct alignas(64) RingControl {
  u64 head;              // claim counter of host producers
  u64 pad0[7];
  u64 tail;              // proxy: commands consumed (release); GPU reads with acquire
  u64 completed;         // proxy: commands whose writes completed
  u32 abort;             // proxy: AbortCode, nonzero once it stopped
  u32 slots;             // number of slots (power of two)
  u64 pad1[5];
  u32 fault;             // producer: RingFault, stored last by the first that gives up
  u32 fault_rank;
  u64 fault_ticket;
  u64 fault_tail;
  u64 fault_waited_ns;
  u64 pad2[4];
};

// Kernel parameter: where one ring lives. All pointers are device addresses;
// `slots`, `control` and `completion` point into host-mapped memory.
struct RingView {
  TransferCommand* slots;   // mask + 1 slots
  RingControl* control;
  u64* head;                // claim counter: device memory (fast) or &control->head
  u64* completion;          // completion flags, epoch per index
  u32 mask;
  u32 completions;
  u64 timeout_ns;           // bound on the wait for ring space
  u32 rank;                 // this GPU's rank, recorded with a fault
  u32 pad;
};

// ---- memory-order helpers (64-bit; the 32-bit ones are in ptx/common.cuh) -------------
// Tail and completion flags are written by the host: acquire at system scope.
__device__ __forceinline__ u64 ld_acquire_sys_u64(const u64* p) {
  u64 v; asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v;
}
// Claim: only uniqueness matters, the body is ordered by the release store of `seq`.
// NOTE: `.gpu` scope assumes `head` is device memory shared by the CTAs of one GPU;
// a head in host memory shared with host producers would need `.sys`.
__device__ __forceinline__ u64 atom_add_relaxed_gpu_u64(u64* p, u64 v) {
  u64 old; asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory"); return old;
}
__device__ __forceinline__ void st_relaxed_sys_u64(u64* p, u64 v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u32 atom_cas_relaxed_sys_u32(u32* p, u32 expected, u32 desired) {
  u32 old; asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(p), "r"(expected), "r"(desired) : "memory"); return old;
}

// ---- producer -------------------------------------------------------------------------
// Records the first producer fault of this ring for the proxy (which reports it and
// sets the abort word). Later faults keep the first record.
__device__ __forceinline__ void ring_report_fault(const RingView& ring, RingFault why, u64 ticket, u64 tail,
                                                  u64 waited_ns) {
  RingControl* c = ring.control;
  // NOTE: claim the record with a CAS to a transient value (~0u) so two producers
  // never interleave their fields; the code itself is stored last, with release.
  if (atom_cas_relaxed_sys_u32(&c->fault, 0u, 0xFFFFFFFFu) != 0u) return;
  st_relaxed_sys_u64(&c->fault_ticket, ticket);
  st_relaxed_sys_u64(&c->fault_tail, tail);
  st_relaxed_sys_u64(&c->fault_waited_ns, waited_ns);
  *(volatile u32*)&c->fault_rank = ring.rank;
  st_release_sys(&c->fault, (u32)why);
}

// True once the proxy has stopped (its abort word is nonzero).
__device__ __forceinline__ bool ring_aborted(const RingView& ring) {
  return ld_acquire_sys(&ring.control->abort) != 0u;
}

// Publishes `cmd` (its `seq` is ignored) into the ring. One thread. Returns false when
// the ring stayed full for `ring.timeout_ns` or the proxy aborted meanwhile; the fault is
// then recorded for the proxy and the caller must end its role (no hang, no trap).
// NOTE: no printf here, as in sync/wait.cuh: the host prints the recorded fault.
__device__ __forceinline__ bool ring_push(const RingView& ring, const TransferCommand& cmd) {
  const u64 ticket = atom_add_relaxed_gpu_u64(ring.head, 1ull);
  const u64 slots = (u64)ring.mask + 1ull;
  // ---- back-pressure: wait until the proxy has consumed ticket - slots -----------------
  u64 tail = ld_acquire_sys_u64(&ring.control->tail);
  if (ticket - tail >= slots) {
    const u64 start = globaltimer_ns();
    for (u32 spin = 1;; ++spin) {
      tail = ld_acquire_sys_u64(&ring.control->tail);
      if (ticket - tail < slots) break;
      if ((spin & 31u) == 0u) {
        const u64 waited = globaltimer_ns() - start;
        if (ring_aborted(ring)) {
          ring_report_fault(ring, RingFault::Aborted, ticket, tail, waited);
          return false;
        }
        if (waited > ring.timeout_ns) {
          ring_report_fault(ring, RingFault::RingFull, ticket, tail, waited);
          return false;
        }
      }
    }
  }
  // ---- body, then the release store of the sequence word -------------------------------
  volatile TransferCommand* slot = ring.slots + (ticket & (u64)ring.mask);
  slot->kind = cmd.kind;
  slot->local_region = cmd.local_region;
  slot->peer = cmd.peer;
  slot->remote_region = cmd.remote_region;
  slot->flags = cmd.flags;
  slot->local_offset = cmd.local_offset;
  slot->remote_offset = cmd.remote_offset;
  slot->length = cmd.length;
  slot->chunk = cmd.chunk;
  slot->epoch = cmd.epoch;
  slot->completion = cmd.completion;
  st_release_sys((u32*)&slot->seq, (u32)(ticket + 1ull));
  return true;
}

// True once completion flag `index` has reached `epoch` (the command's source bytes may
// be reused). Host-written: acquire at system scope.
__device__ __forceinline__ bool ring_completed(const RingView& ring, u32 index, u32 epoch) {
  return ld_acquire_sys_u64(ring.completion + index) >= (u64)epoch;
}

// Waits (bounded by ring.timeout_ns) for completion flag `index` to reach `epoch`.
// Returns false on timeout or when the proxy aborted.
__device__ __forceinline__ bool ring_wait_completed(const RingView& ring, u32 index, u32 epoch) {
  if (ring_completed(ring, index, epoch)) return true;
  const u64 start = globaltimer_ns();
  for (u32 spin = 1;; ++spin) {
    if (ring_completed(ring, index, epoch)) return true;
    if ((spin & 31u) == 0u) {
      if (ring_aborted(ring)) return false;
      if (globaltimer_ns() - start > ring.timeout_ns) return false;
    }
  }
}
