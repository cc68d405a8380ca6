// Plain persistent GEMM kernel: C = A * B^T on one GPU (see gemm/sm90_gemm.cuh).
// The JIT instantiates `gemm_kernel<Cfg>` inside an extern "C" entry point.
#pragma once
#include "../params.cuh"
#include "../gemm/sm90_gemm.cuh"

namespace mk {

struct NoTileHook {
  static constexpr bool kPublishes = false;
  static constexpr bool kUsesStaging = false;
  static constexpr bool kEqualGroupsInOneWave = true;  // TileScheduler::use_equal_groups
  // a_row0: the last row block of a ragged M reads A inside its bounds
  static constexpr bool kShiftsLastRowBlock = true;
  static constexpr bool kSplitsLastWave = false;
  static constexpr bool kClaimsUnits = false;
  static constexpr bool kGathersA = false;  // (gemm_producer: A from tma_a only)
  static constexpr bool kGroupsB = false;  // (gemm_producer: one B for every row block)
  static constexpr bool kRankOrder = false;  // (gemm_run: the plain order)
  static constexpr bool kKeepsSomeRows = false;  // (gemm_storer: every row of C is stored)
  __device__ __forceinline__ void operator()(u32) const {}
};

// Split last wave of the plain GEMM (the engine's WorkUnits; kernels compiled with
// kSplit, TMA-store tiles without clusters): slice v's fp32 fragment goes to slot v of
// p.split_scratch (BM * BN floats each); left-over tile r counts its slices in
// p.split_counts[r], which the slice that arrives last sets back to 0, so the next call on
// the stream finds every count at 0 (the workspace starts zeroed; a call that traps leaves
// the context unusable anyway). `split_skip`: two shared words after the ring's barriers
// (the host launches with Cfg::kSmemBytes + kSplitExtraSmem bytes).
constexpr u32 kSplitExtraSmem = 16;
template <class Cfg>
struct SplitLastWave {
  static constexpr bool kPublishes = false;
  static constexpr bool kUsesStaging = false;
  static constexpr bool kEqualGroupsInOneWave = false;  // (split calls: not measured with them)
  // a_row0: the last row block of a ragged M reads A inside its bounds
  static constexpr bool kShiftsLastRowBlock = true;
  static constexpr bool kSplitsLastWave = true;
  static constexpr bool kClaimsUnits = false;
  static constexpr bool kGathersA = false;  // (gemm_producer: A from tma_a only)
  static constexpr bool kGroupsB = false;  // (gemm_producer: one B for every row block)
  static constexpr bool kRankOrder = false;  // (gemm_run: the plain order)
  static constexpr bool kKeepsSomeRows = false;  // (gemm_storer: every row of C is stored)
  static_assert(Cfg::kTmaEpilogue && Cfg::kClusterSize == 1, "the split last wave needs the TMA-store epilogue, no cluster");
  static_assert(1023 + Cfg::STAGES * Cfg::kStageBytes + Cfg::kCBytes + 16 * Cfg::STAGES + 8 <= Cfg::kSmemBytes + kSplitExtraSmem,
                "the two split-skip words lie inside the launch's shared memory");
  static_assert(Cfg::kSmemBytes + kSplitExtraSmem <= 232448, "the launch's shared memory fits an H100/H200 SM");
  float* scratch;
  u32* counts;
  u32* split_skip;
  __device__ __forceinline__ float* split_slot(u32 v) const { return scratch + (u64)v * Cfg::BM * Cfg::BN; }
  // One consumer thread, after the named barrier that follows every consumer's slot
  // write: counts this slice of left-over tile r in; true if it is the last of `splits`.
  __device__ __forceinline__ bool split_arrive(u32 r, u32 splits) const {
    fence_acq_rel_gpu();  // the slot writes (the barrier's threads') before the count
    const u32 before = atomicAdd(counts + r, 1u);
    const bool last = before + 1 == splits;
    if (last) {
      atomicExch(counts + r, 0u);  // every slice has counted: ready for the next call
      fence_acq_rel_gpu();         // the other slices' slots, before this CTA reads them
    }
    return last;
  }
  __device__ __forceinline__ void split_event(u32, u32) const {}
  __device__ __forceinline__ void operator()(u32) const {}
};

template <class Cfg, bool kSplit = false>
__device__ __forceinline__ void gemm_kernel(const GemmParams& p) {
  extern __shared__ u8 smem_raw[];
  const GemmSmem<Cfg> sm(smem_raw);
  if (threadIdx.x == 0) sm.init();
  gemm_sync<Cfg>();
  // Launched as a programmatic dependent launch (the host's LaunchOrder::Programmatic):
  // the set-up above overlapped the previous kernel's end; A, B, C and the split
  // workspace are touched only after it completed. Nothing here triggers the next such
  // launch early (no griddepcontrol.launch_dependents): it is scheduled once every CTA of
  // this grid has exited, and its own wait still waits for this grid's completion and
  // memory visibility. Triggered right after this wait (until run 276), the next
  // grid's CTAs took the SMs a partial grid left idle and ran 3-14 us slower (654 x 1544
  // x 8192 on 77 tiles: 0.0645 ms against 0.054 with the trigger at exit, 0.0503
  // serialized); at exit PDL saves 1.3-2.1 us a call on every shape measured, partial or
  // full grid, more than the early trigger did on full ones (bench/NOTES.md 34.1).
  grid_dependency_wait();
#ifdef MKERNEL_PROBE_CTA_SPANS
  // Diagnostic build only (`mkernel_kernels::gemm::probe_cta_spans`): unsplit calls given
  // a scratch write each CTA's SM, start and end (after its last tile) as 4 u64 at
  // p.split_scratch + 32 * blockIdx.x (no printf: a call makes ptxas serialise wgmma).
  const u64 probe_t0 = globaltimer_ns();
#endif
  // Swapped operands: the engine's rows are N (B, in tma_a) and its columns M (A, in
  // tma_b); its epilogue stores the fragment transposed into C[M, N].
  const u32 rows = Cfg::kSwapAB ? p.n : p.m, cols = Cfg::kSwapAB ? p.m : p.n;
  if constexpr (kSplit) {
    SplitLastWave<Cfg> hook{reinterpret_cast<float*>(p.split_scratch), reinterpret_cast<u32*>(p.split_counts),
                            reinterpret_cast<u32*>(sm.stage_empty + Cfg::STAGES)};
    gemm_run<Cfg>(&p.tma_a, &p.tma_b, &p.tma_c, nullptr, sm, reinterpret_cast<u16*>(p.c), p.ldc, rows, cols, p.k,
                  blockIdx.x, gridDim.x, p.timeout_ns, hook, p.split_slices);
  } else {
    NoTileHook hook;
    gemm_run<Cfg>(&p.tma_a, &p.tma_b, &p.tma_c, nullptr, sm, reinterpret_cast<u16*>(p.c), p.ldc, rows, cols, p.k,
                  blockIdx.x, gridDim.x, p.timeout_ns, hook);
  }
  if constexpr (Cfg::kClusterSize > 1) cluster_sync();  // the other CTA may still arrive on this one's barriers
#ifdef MKERNEL_PROBE_CTA_SPANS
  if constexpr (!kSplit) {
    if constexpr (Cfg::kClusterSize == 1) __syncthreads();
    if (threadIdx.x == 0 && p.split_scratch != 0) {
      u32 smid;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
      u64* span = reinterpret_cast<u64*>(p.split_scratch) + 4 * blockIdx.x;
      span[0] = smid;
      span[1] = probe_t0;
      span[2] = globaltimer_ns();
      span[3] = 1;
    }
  }
#endif
}

}  // namespace mk
