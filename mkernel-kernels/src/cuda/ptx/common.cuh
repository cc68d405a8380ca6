// Basic types and PTX wrappers shared by every mkernel device header.
// The kernels include no CUDA toolkit header: bf16 is carried as raw 16-bit words and
// converted with PTX `cvt`, so the same source compiles with NVRTC alone (CI, CPU-only).
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;

// Opaque 128-byte TMA tensor map (CUtensorMap), built on the host by
// cuTensorMapEncodeTiled and passed inside a __grid_constant__ parameter struct.
struct alignas(64) TmaDescriptor {
  u64 opaque[16];
};

// ---- addresses ---------------------------------------------------------------------
__device__ __forceinline__ u32 smem_u32(const void* ptr) {
  u32 addr;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(addr) : "l"(ptr));
  return addr;
}

__device__ __forceinline__ u32 lane_id() { u32 l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }

// True in exactly one lane of the calling warp (PTX ISA 8.0 `elect.sync`, sm_90). All 32
// lanes must call it (full member mask): never under a lane-subset branch such as
// `threadIdx.x == 0`. Work issued under it keeps the warp's values warp-uniform, so
// ptxas can feed them to TMA from uniform registers (a branch on `threadIdx.x == 0`
// makes it loop over the active lanes to move each operand into one: ELECT, R2UR, BRA).
__device__ __forceinline__ bool elect_one_sync() {
  u32 elected;
  asm volatile(
      "{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(elected));
  return elected != 0;
}

// Nanoseconds since an arbitrary epoch, the same clock on every SM of the GPU.
__device__ __forceinline__ u64 globaltimer_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The SM's cycle counter (%clock, low 32 bits; wraps every ~2 s at 2 GHz).
__device__ __forceinline__ u32 sm_clock32() {
  u32 c;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
  return c;
}

__device__ __forceinline__ void trap() { asm volatile("trap;"); }

// ---- bf16 <-> fp32 -----------------------------------------------------------------
__device__ __forceinline__ float bf16_to_f32(u16 h) { return __uint_as_float(((u32)h) << 16); }
__device__ __forceinline__ float bf16_lo(u32 w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(u32 w) { return __uint_as_float(w & 0xFFFF0000u); }
// Round-to-nearest-even pack: low half <- lo, high half <- hi.
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ u16 f32_to_bf16(float x) { return (u16)(pack_bf16x2(x, 0.0f) & 0xFFFFu); }

// ---- named barriers (bar.sync id, count) -------------------------------------------
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// Arrives without waiting (the other side of a producer/consumer pair calls sync).
__device__ __forceinline__ void named_barrier_arrive(u32 id, u32 threads) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// ---- mbarrier ----------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u64* bar, u32 arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(bar)) : "memory");
}
// Arrive once and add `bytes` to the transaction count the phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(u64* bar, u32 parity) {
  u32 done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
  return done != 0;
}

// ---- clusters (CTAs of one GPU launched together; distributed shared memory) ---------
__device__ __forceinline__ u32 cluster_cta_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster arrives, then waits for all of them (release /
// acquire at cluster scope). Not `.aligned`: callers may reach it from diverged warps.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
// Arrives once on the mbarrier at the same shared-memory offset as `bar` in CTA `cta` of
// the cluster. The default semantics (release at CTA scope), as CUTLASS's ClusterBarrier:
// the arrival only says this CTA's wgmmas are done reading a stage (wgmma.wait_group came
// first). `.release.cluster` cost ~1 us per arrival on the H200 (a fence every k-block:
// 260 TFLOP/s on every shape, bench/NOTES.md 13.2).
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, u32 cta) {
  asm volatile(
      "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.shared::cluster.b64 _, [remote]; }"
      :: "r"(smem_u32(bar)), "r"(cta) : "memory");
}

// Reads the u32 at `local`'s shared-memory offset in CTA `cta` of the cluster (that CTA
// must be running: after a cluster_sync and before its final one).
__device__ __forceinline__ u32 ld_shared_cluster_u32(const u32* local, u32 cta) {
  u32 v;
  asm volatile(
      "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, %1, %2;\n\t"
      "ld.shared::cluster.u32 %0, [remote]; }"
      : "=r"(v) : "r"(smem_u32(local)), "r"(cta) : "memory");
  return v;
}

// ---- TMA (bulk tensor copy) --------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_descriptor(const TmaDescriptor* desc) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(desc) : "memory");
}
// Loads the box at (c0 = innermost coordinate, c1) into shared memory; completion is
// reported to `bar` as transaction bytes. Out-of-bounds elements are filled with zero.
__device__ __forceinline__ void tma_load_2d(const TmaDescriptor* desc, u64* bar, void* dst, i32 c0, i32 c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      :: "r"(smem_u32(dst)), "l"(desc), "r"(smem_u32(bar)), "r"(c0), "r"(c1) : "memory");
}

// tma_load_2d for a 4-D map: the box at (c0 = innermost, c1, c2, c3).
__device__ __forceinline__ void tma_load_4d(const TmaDescriptor* desc, u64* bar, void* dst, i32 c0, i32 c1, i32 c2, i32 c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
      :: "r"(smem_u32(dst)), "l"(desc), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}

// tma_load_2d into every CTA of the cluster named in `cta_mask` (bit i: CTA rank i): the
// box lands at `dst`'s offset in each one's shared memory and completes bytes on the
// mbarrier at `bar`'s offset there (cluster multicast within the GPU; not NVLink).
__device__ __forceinline__ void tma_load_2d_multicast(const TmaDescriptor* desc, u64* bar, void* dst, i32 c0, i32 c1,
                                                      u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;"
      :: "r"(smem_u32(dst)), "l"(desc), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(cta_mask) : "memory");
}

// Stores the box at (c0, c1) from shared memory (bulk-group completion). Out-of-bounds
// parts of the box are not written.
__device__ __forceinline__ void tma_store_2d(const TmaDescriptor* desc, const void* src, i32 c0, i32 c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
               :: "l"(desc), "r"(smem_u32(src)), "r"(c0), "r"(c1) : "memory");
}
// Adds the box in shared memory element-wise into the tensor at (c0, c1) (the tensor
// map's dtype, e.g. bf16; the add happens at L2, bulk-group completion). Out-of-bounds
// parts of the box are skipped.
__device__ __forceinline__ void tma_reduce_add_2d(const TmaDescriptor* desc, const void* src, i32 c0, i32 c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];"
               :: "l"(desc), "r"(smem_u32(src)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most N bulk groups are pending (their writes performed).
template <int N> __device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
// Waits until at most N bulk groups still read their shared-memory source.
template <int N> __device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}
// Orders this thread's generic-proxy accesses with its async-proxy (TMA) accesses.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

// ---- programmatic dependent launch (sm_90; PTX ISA "griddepcontrol") ---------------
// A grid launched with programmatic stream serialization may start while the kernel
// before it on the stream still runs; `grid_dependency_wait` returns once every
// prerequisite grid has completed and its memory operations are visible (at once when
// the launch had no such dependency), so nothing before it may touch memory another
// kernel reads or writes. (No kernel here executes griddepcontrol.launch_dependents, so
// the next such grid on the stream is scheduled once every CTA of this one has exited:
// ops/gemm.cuh.)
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// ---- register count control (sm_90a) ------------------------------------------------
template <u32 R> __device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R));
}
template <u32 R> __device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R));
}

// ---- global memory with visible memory order ----------------------------------------
// Flags written by another GPU or the host: acquire loads / release stores at system scope.
__device__ __forceinline__ u32 ld_acquire_sys(const u32* p) {
  u32 v; asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
// Relaxed (no ordering) system-scope load: polls whose observations a later fence acquires.
__device__ __forceinline__ u32 ld_relaxed_sys(const u32* p) {
  u32 v; asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ void st_release_sys(u32* p, u32 v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ u32 ld_acquire_gpu(const u32* p) {
  u32 v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ u32 atom_add_acq_rel_gpu(u32* p, u32 v) {
  u32 old; asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory"); return old;
}
__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// 16-byte loads that bypass L1 (data written by other CTAs or other GPUs during this
// kernel, after an acquire), and plain 16-byte stores.
__device__ __forceinline__ uint4 ld_cg_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ u16 ld_cg_u16(const void* p) {
  u16 v; asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory"); return v;
}
__device__ __forceinline__ void st_v4(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
// 16-byte load from shared memory (a generic pointer into it).
__device__ __forceinline__ uint4 ld_shared_v4(const void* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(smem_u32(p)) : "memory");
  return v;
}
// 16-byte bf16 reduction into global memory: 8 bf16 values (4 bf16x2 words) added to the
// 8 at p, each sum rounded to nearest even where it is performed (L2); posted (nothing
// returns). sm_90 (PTX ISA: red, vector forms).
__device__ __forceinline__ void red_add_bf16x8(void* p, uint4 v) {
  asm volatile("red.relaxed.gpu.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};"
               :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
