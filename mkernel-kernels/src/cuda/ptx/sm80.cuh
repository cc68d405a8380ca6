// cp.async (sm_80's asynchronous 16-byte copies into shared memory) and the MUFU ex2 / lg2
// approximations: what attention's loop (ops/ring_attention.cuh) uses besides wgmma.
#pragma once
#include "common.cuh"

// 16 bytes global -> shared, cached in L2 only (.cg: data other GPUs wrote during the
// kernel is read after an acquire, never from a stale L1 line); `src_bytes` < 16 fills the
// rest with zeros (0: all zeros, nothing read; `src` must still be a valid address).
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(smem_u32(smem_dst)), "l"(gmem_src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most N of this thread's cp.async groups are pending.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

// 2^x and log2(x) (MUFU, ~2 ulp; ex2 of -inf is +0).
__device__ __forceinline__ float ex2_approx(float x) {
  float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float lg2_approx(float x) {
  float y; asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float neg_inf_f32() { return __uint_as_float(0xff800000u); }
