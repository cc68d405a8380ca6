// The unfused MoE combine's last step (bench moe-gemm-combine's baseline): after an
// all-to-all has brought every (token, k) entry's expert output row back to the token's
// rank, y[t] = sum over k of w[t, k] x land[index[t, k]], in fp32 in k order, rounded once
// to bf16 (as the fused combine sums). An entry whose index is u32::MAX (no expert) or at
// or past `rows` (the landing buffer's) takes no part; a token without entries gets zeros.
#pragma once
#include "../params.cuh"

namespace mk {

// One thread per 8 columns of a token (16-byte loads of the landing rows and a 16-byte
// store of y: N a multiple of 8, the buffers 16-byte aligned, which the host checks).
// Launch with 256-thread blocks, any grid (grid-stride).
__device__ __forceinline__ void combine_sum_bf16(const CombineSumParams& p) {
  const u32* index = reinterpret_cast<const u32*>(p.index);
  const float* weights = reinterpret_cast<const float*>(p.weights);
  const uint4* land = reinterpret_cast<const uint4*>(p.land);
  uint4* y = reinterpret_cast<uint4*>(p.y);
  const u64 vecs = p.n / 8;  // 16-byte vectors a row
  const u64 total = (u64)p.tokens * vecs;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const u64 t = i / vecs, v = i % vecs;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (u32 k = 0; k < p.topk; ++k) {
      const u32 row = index[t * p.topk + k];
      if (row >= p.rows) continue;  // u32::MAX (no expert) included
      const float w = weights[t * p.topk + k];
      const uint4 x = land[(u64)row * vecs + v];
      const u32 words[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        acc[2 * j] = fmaf(w, bf16_lo(words[j]), acc[2 * j]);
        acc[2 * j + 1] = fmaf(w, bf16_hi(words[j]), acc[2 * j + 1]);
      }
    }
    y[t * vecs + v] = make_uint4(pack_bf16x2(acc[0], acc[1]), pack_bf16x2(acc[2], acc[3]), pack_bf16x2(acc[4], acc[5]),
                                 pack_bf16x2(acc[6], acc[7]));
  }
}

}  // namespace mk
