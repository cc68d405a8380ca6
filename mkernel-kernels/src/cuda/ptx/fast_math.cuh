// MUFU approximations attention's online softmax uses (ops/ring_attention.cuh): 2^x, log2(x).
#pragma once
#include "common.cuh"

// 2^x and log2(x) (MUFU, ~2 ulp; ex2 of -inf is +0).
__device__ __forceinline__ float ex2_approx(float x) {
  float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float lg2_approx(float x) {
  float y; asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float neg_inf_f32() { return __uint_as_float(0xff800000u); }
