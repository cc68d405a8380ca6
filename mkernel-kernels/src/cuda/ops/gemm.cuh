// Plain persistent GEMM kernel: C = A * B^T on one GPU (see gemm/sm90_gemm.cuh).
// The JIT instantiates `gemm_kernel<Cfg>` inside an extern "C" entry point.
#pragma once
#include "../params.cuh"
#include "../gemm/sm90_gemm.cuh"

namespace mk {

struct NoTileHook {
  static constexpr bool kPublishes = false;
  static constexpr bool kUsesStaging = false;
  static constexpr bool kSplitsLastWave = false;
  __device__ __forceinline__ void operator()(u32) const {}
};

template <class Cfg>
__device__ __forceinline__ void gemm_kernel(const GemmParams& p) {
  extern __shared__ u8 smem_raw[];
  const GemmSmem<Cfg> sm(smem_raw);
  if (threadIdx.x == 0) sm.init();
  gemm_sync<Cfg>();
  NoTileHook hook;
  // Swapped operands: the engine's rows are N (B, in tma_a) and its columns M (A, in
  // tma_b); its epilogue stores the fragment transposed into C[M, N].
  const u32 rows = Cfg::kSwapAB ? p.n : p.m, cols = Cfg::kSwapAB ? p.m : p.n;
  gemm_run<Cfg>(&p.tma_a, &p.tma_b, &p.tma_c, nullptr, sm, reinterpret_cast<u16*>(p.c), p.ldc, rows, cols, p.k,
                blockIdx.x, gridDim.x, p.timeout_ns, hook);
  if constexpr (Cfg::CM > 1) cluster_sync();  // the other CTA may still arrive on this one's barriers
}

}  // namespace mk
