// Test-data kernel: fills a bf16 buffer with uniform values in [lo, hi) from a
// counter-based hash of (seed, index), so fresh random inputs cost one pass over HBM.
#pragma once
#include "../params.cuh"

namespace mk {

// splitmix64 finaliser (Steele, Lea, Flood: "Fast splittable pseudorandom number
// generators", OOPSLA 2014).
__device__ __forceinline__ u64 mix64(u64 z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ void fill_uniform_bf16(const FillParams& p) {
  u16* out = reinterpret_cast<u16*>(p.out);
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < p.len; i += stride) {
    const u64 h = mix64(p.seed * 0x9E3779B97F4A7C15ull + i);
    const float u = (float)(h >> 40) * (1.0f / 16777216.0f);  // 24 random bits in [0, 1)
    out[i] = f32_to_bf16(p.lo + (p.hi - p.lo) * u);
  }
}

}  // namespace mk
