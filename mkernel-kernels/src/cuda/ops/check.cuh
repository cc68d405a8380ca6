// Verification kernels for tests and `--check`: accumulate an fp32 reference of an
// all-reduce on the device, and compare a bf16 result with it, so a check moves a few
// bytes to the host instead of whole matrices (100 checks per shape fit a device run).
#pragma once
#include "../params.cuh"

namespace mk {

// sum[i] = (first ? 0 : sum[i]) + p[i];  abs_sum[i] = (first ? 0 : abs_sum[i]) + |p[i]|.
__device__ __forceinline__ void accumulate_reference(const AccumulateParams& a) {
  float* sum = reinterpret_cast<float*>(a.sum);
  float* abs_sum = reinterpret_cast<float*>(a.abs_sum);
  const float* p = reinterpret_cast<const float*>(a.p);
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < a.len; i += stride) {
    const float x = p[i];
    sum[i] = a.first ? x : sum[i] + x;
    abs_sum[i] = a.first ? fabsf(x) : abs_sum[i] + fabsf(x);
  }
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ u64 warp_sum_u64(u64 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

// Compares bf16 `got` with fp32 `reference`: an element is bad when
// |got - ref| > rel_tol * (|ref| + extra) + abs_floor, or NaN, where `extra` is
// scale[i] (e.g. the sum of the ranks' |partial| for an all-reduce) or 0 without `scale`.
// Accumulates err^2, ref^2, max |err|, the bad count and the first bad index into
// `stats` (zeroed by the host, first_bad = ~0). Launch with 256-thread blocks.
__device__ __forceinline__ void compare_bf16_f32(const CompareParams& c) {
  const u16* got = reinterpret_cast<const u16*>(c.got);
  const float* ref = reinterpret_cast<const float*>(c.reference);
  const float* scale = reinterpret_cast<const float*>(c.scale);
  CompareStats* stats = reinterpret_cast<CompareStats*>(c.stats);
  double err2 = 0.0, ref2 = 0.0;
  float max_abs = 0.0f;
  u64 bad = 0, first = ~0ull;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < c.len; i += stride) {
    const float g = bf16_to_f32(got[i]);
    const float w = ref[i];
    const float sc = fabsf(w) + (scale != nullptr ? scale[i] : 0.0f);
    const float d = fabsf(g - w);
    err2 += (double)d * d;
    ref2 += (double)w * w;
    max_abs = fmaxf(max_abs, d);  // fmaxf drops NaN; NaN is counted as bad below
    if (!(d <= c.rel_tol * sc + c.abs_floor)) {
      ++bad;
      if (i < first) first = i;
    }
  }
  err2 = warp_sum(err2);
  ref2 = warp_sum(ref2);
  bad = warp_sum_u64(bad);
  max_abs = warp_max(max_abs);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const u64 other = __shfl_down_sync(0xffffffffu, first, o);
    first = other < first ? other : first;
  }
  if (lane_id() == 0) {
    atomicAdd(&stats->err2, err2);
    atomicAdd(&stats->ref2, ref2);
    if (bad != 0) {
      atomicAdd(&stats->bad, bad);
      atomicMin(&stats->first_bad, first);
    }
    atomicMax(&stats->max_abs_bits, __float_as_uint(max_abs));  // non-negative floats order as uints
  }
}

}  // namespace mk
