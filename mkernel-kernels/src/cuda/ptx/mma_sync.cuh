// Warp-level tensor-core MMA (mma.sync), ldmatrix and cp.async (sm_80+ instructions, also
// on sm_90a), for kernels whose operands change between MMAs in registers (attention's
// P = softmax(S) feeds P V straight from the accumulators of S = Q K^T).
// Fragment layouts: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"
// (groupID g = lane / 4, threadID_in_group t = lane % 4):
//   A (16 x 16, row):   a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//   B (16 x 8, col):    b0 (k 2t..2t+1, n g)  b1 (k 2t+8.., n g)
//   C/D (16 x 8, f32):  c0 c1 (g, 2t..2t+1)  c2 c3 (g+8, 2t..2t+1)
// ldmatrix .x4: lanes 8i..8i+7 give the row addresses of 8x8 matrix i; register i of every
// lane then holds (row lane / 4, columns 2 (lane % 4)..+1) of matrix i (.trans: of its
// transpose).
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

// Four 8x8 b16 matrices from shared memory (`addr`: this lane's row, a shared-window address).
__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

// d (16 x 8, f32) += a (16 x 16, bf16, row) * b (16 x 8, bf16, col).
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 2^x and log2(x) (MUFU, ~2 ulp; ex2 of -inf is +0).
__device__ __forceinline__ float ex2_approx(float x) {
  float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float lg2_approx(float x) {
  float y; asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float neg_inf_f32() { return __uint_as_float(0xff800000u); }
