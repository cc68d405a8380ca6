#!/usr/bin/env python3
"""Probe: how fast can SMs write into a peer GPU's memory over NVLink?

The epilogue path copies each finished tile to the peer with 16-byte stores from one
warp per SM (mkernel-kernels/src/cuda/ops/gemm_allreduce.cuh, copy_out). This probe
measures that rate against the number of CTAs, warps per CTA, stores in flight per
lane, the address pattern (contiguous, copy_out's box order, tile-row order) and one
or both directions at once, to say whether the limit is the warp's, the SM's or the
link's (bench/NOTES.md 8.1: the link's, ~350 GB/s per direction on 2x H200; one warp
moves ~20 GB/s). `--ops` adds what an all-reduce could use instead of plain stores:
bf16 reductions at the destination (16 bytes per lane), bulk copies and bulk bf16
reductions from shared memory (bench/NOTES.md 9.5).

Needs two GPUs with peer access, libcuda and libnvrtc (CUDA 12/13); nothing else.
Each configuration: 64 KiB per CTA, timed with the CTAs' own %globaltimer (median CTA
duration; span from the first start to the last end), 20 repetitions, medians.
Usage: python3 bench/probes/p2p_store_rate.py [--reps 20] [--json out.json]
No NVLink multicast is used (plain stores to a peer's cuMemAlloc memory).
"""
import argparse
import ctypes
import datetime
import subprocess
import ctypes.util
import json
import statistics
import sys

SRC = r"""
// Where chunk i (16 bytes) of CTA `cta` goes (compile-time patterns: the address math is
// a few shifts, as in copy_out). MODE 0: contiguous per CTA. MODES 1-2: the CTA's 64 KiB
// are a 128 x 256 bf16 tile of a row-major C with 8192 columns (16 KiB rows), tiles side
// by side:
//   MODE 1, copy_out's order: 64-column boxes one after another, in each box 128 bytes
//           per row (a warp store covers 4 rows);
//   MODE 2, row order: a warp store covers one tile row's 512 contiguous bytes.
constexpr unsigned long long kBytes = 65536, kPitch = 16384, kRows = 128;
template <int MODE>
__device__ __forceinline__ unsigned long long at(unsigned i, unsigned cta) {
  if (MODE == 0) return (unsigned long long)cta * kBytes + i * 16ull;
  const unsigned long long base = (cta % 32) * 512ull + (cta / 32) * kRows * kPitch;
  if (MODE == 1) {
    const unsigned b = i / (kRows * 8), r = (i / 8) % kRows, j = i % 8;
    return base + r * kPitch + b * 128 + j * 16;
  }
  return base + (i / 32) * kPitch + (i % 32) * 16;
}
__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// The CTA's writes visible system-wide, then its start and end times into `times`.
__device__ __forceinline__ void finish(unsigned long long t0, unsigned long long* times) {
  asm volatile("fence.acq_rel.sys;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    times[2 * blockIdx.x] = t0;
    times[2 * blockIdx.x + 1] = now_ns();
  }
}
// 16 bytes per lane into the peer's memory in the pattern of MODE: RED 0 stores
// (st.global.v4, what copy_out does), RED 1 adds bf16 at the destination
// (red.global.add.noftz.v4.bf16x2, four pairs of bf16 ones).
template <int RED, int MODE, int UNROLL>
__device__ void lanes(unsigned char* dst, unsigned long long* times) {
  const unsigned long long t0 = now_ns();
  const unsigned nthreads = blockDim.x;
  const unsigned chunks = kBytes / 16;
  const uint4 v = RED ? make_uint4(0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u)
                      : make_uint4(threadIdx.x, blockIdx.x, 1, 2);
  for (unsigned i = threadIdx.x; i < chunks; i += UNROLL * nthreads) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      unsigned char* const a = dst + at<MODE>(i + u * nthreads, blockIdx.x);  // chunks % (UNROLL * 32) == 0: no bound check
      if (RED)
        asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1,%2,%3,%4};" :: "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
      else
        asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    }
  }
  finish(t0, times);
}
// Bulk copies from shared memory (what a TMA-store epilogue would issue), CHUNK bytes per
// instruction from lane 0 of each warp, contiguous per CTA: REDUCE 1 adds (bf16) at the
// destination (cp.reduce.async.bulk ... .add.noftz.bf16), 0 stores (cp.async.bulk).
template <int REDUCE, int CHUNK>
__device__ void bulk(unsigned char* dst, unsigned long long* times) {
  __shared__ alignas(128) unsigned char src[16384];
  for (unsigned i = threadIdx.x; i < 16384 / 4; i += blockDim.x) reinterpret_cast<unsigned*>(src)[i] = 0x3f803f80u;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const unsigned long long t0 = now_ns();
  const unsigned warps = blockDim.x / 32, warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    for (unsigned off = warp * CHUNK; off < kBytes; off += warps * CHUNK) {
      const unsigned s = (unsigned)__cvta_generic_to_shared(src + off % 16384);
      unsigned char* g = dst + (unsigned long long)blockIdx.x * kBytes + off;
      if (REDUCE)
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%0], [%1], %2;" :: "l"(g), "r"(s), "r"(CHUNK) : "memory");
      else
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(g), "r"(s), "r"(CHUNK) : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
  finish(t0, times);
}
extern "C" __global__ void red_0_8(unsigned char* d, unsigned long long* t) { lanes<1, 0, 8>(d, t); }
extern "C" __global__ void red_1_8(unsigned char* d, unsigned long long* t) { lanes<1, 1, 8>(d, t); }
extern "C" __global__ void bulk_0_512(unsigned char* d, unsigned long long* t) { bulk<0, 512>(d, t); }
extern "C" __global__ void bulk_0_16384(unsigned char* d, unsigned long long* t) { bulk<0, 16384>(d, t); }
extern "C" __global__ void bulk_1_512(unsigned char* d, unsigned long long* t) { bulk<1, 512>(d, t); }
extern "C" __global__ void bulk_1_16384(unsigned char* d, unsigned long long* t) { bulk<1, 16384>(d, t); }
extern "C" __global__ void copy_0_2(unsigned char* d, unsigned long long* t) { lanes<0, 0, 2>(d, t); }
extern "C" __global__ void copy_0_8(unsigned char* d, unsigned long long* t) { lanes<0, 0, 8>(d, t); }
extern "C" __global__ void copy_1_2(unsigned char* d, unsigned long long* t) { lanes<0, 1, 2>(d, t); }
extern "C" __global__ void copy_1_8(unsigned char* d, unsigned long long* t) { lanes<0, 1, 8>(d, t); }
extern "C" __global__ void copy_2_2(unsigned char* d, unsigned long long* t) { lanes<0, 2, 2>(d, t); }
extern "C" __global__ void copy_2_8(unsigned char* d, unsigned long long* t) { lanes<0, 2, 8>(d, t); }
"""


class ProbeError(Exception):
    """What stops the probe; the entry point prints it and exits with status 1."""


def load(names, what):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    raise ProbeError(f"{what} not found (tried {', '.join(names)}); this probe needs two GPUs with peer access")


# Loaded by main(), after the arguments are parsed (so --help works anywhere).
cuda = None
nvrtc = None


def ck(rc, what):
    if rc != 0:
        s = ctypes.c_char_p()
        cuda.cuGetErrorString(rc, ctypes.byref(s))
        raise ProbeError(f"{what} failed: {rc} {s.value}")


def compile_ptx(arch):
    prog = ctypes.c_void_p()
    rc = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), SRC.encode(), b"p2p.cu", 0, None, None)
    if rc != 0:
        raise ProbeError(f"nvrtcCreateProgram failed: {rc}")
    opts = [f"--gpu-architecture={arch}".encode()]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    if rc != 0:
        n = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise ProbeError(f"NVRTC: {log.value.decode()}")
    n = ctypes.c_size_t()
    nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(n))
    ptx = ctypes.create_string_buffer(n.value)
    nvrtc.nvrtcGetPTX(prog, ptx)
    return ptx.raw


OPS = ("store", "red", "bulk-store", "bulk-red")


def ops_list(v):
    ops = [o for o in v.split(",") if o]
    bad = [o for o in ops if o not in OPS]
    if bad or not ops:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(OPS)}, got {v!r}")
    return ops


def positive(v):
    n = int(v)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {v}")
    return n


def main():
    global cuda, nvrtc
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=positive, default=20, help="timed repetitions per configuration (after 2 warm-up runs)")
    ap.add_argument("--json", help="also write the rows, with device, commit and date, to this file")
    ap.add_argument("--ops", type=ops_list, default=list(OPS),
                    help="comma-separated: store (16-byte stores, the configurations of NOTES 8.1), red (16-byte bf16 "
                         "reductions at the destination), bulk-store, bulk-red (bulk copies / bf16 bulk reductions from "
                         "shared memory, 512 B or 16 KiB per instruction); default: all")
    a = ap.parse_args()
    cuda = load(["libcuda.so.1", "libcuda.so"], "the CUDA driver (libcuda)")
    nvrtc = load(["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"], "NVRTC (libnvrtc)")
    ck(cuda.cuInit(0), "cuInit")
    n = ctypes.c_int()
    ck(cuda.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    if n.value < 2:
        raise ProbeError("needs two GPUs")
    dev = [ctypes.c_int() for _ in range(2)]
    ctx = [ctypes.c_void_p() for _ in range(2)]
    for i in range(2):
        ck(cuda.cuDeviceGet(ctypes.byref(dev[i]), i), "cuDeviceGet")
        ck(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx[i]), dev[i]), "cuDevicePrimaryCtxRetain")
    sms = ctypes.c_int()
    ck(cuda.cuDeviceGetAttribute(ctypes.byref(sms), 16, dev[0]), "SM count")  # MULTIPROCESSOR_COUNT
    bpc, pitch = 65536, 16384  # kBytes, kPitch: a C of 8192 bf16 columns (the o-proj shapes)
    size = max(bpc * sms.value, (sms.value // 32 + 1) * 128 * pitch)
    ptx = compile_ptx("sm_90")
    # GPU g writes into a buffer on GPU 1 - g (peer access), times into its own.
    dst, times, fn = [], [], []
    for g in range(2):
        ck(cuda.cuCtxSetCurrent(ctx[1 - g]), "ctx")
        d = ctypes.c_uint64()
        ck(cuda.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(size)), "cuMemAlloc peer")
        dst.append(d)
    for g in range(2):
        ck(cuda.cuCtxSetCurrent(ctx[g]), "ctx")
        rc = cuda.cuCtxEnablePeerAccess(ctx[1 - g], 0)
        if rc not in (0, 704):  # 704: already enabled
            ck(rc, "cuCtxEnablePeerAccess")
        t = ctypes.c_uint64()
        ck(cuda.cuMemAlloc_v2(ctypes.byref(t), ctypes.c_size_t(16 * sms.value)), "cuMemAlloc times")
        times.append(t)
        mod = ctypes.c_void_p()
        ck(cuda.cuModuleLoadData(ctypes.byref(mod), ptx), "cuModuleLoadData")
        fs = {}
        names = [f"copy_{m}_{u}" for m in range(3) for u in (2, 8)] + ["red_0_8", "red_1_8"]
        names += [f"bulk_{r}_{c}" for r in (0, 1) for c in (512, 16384)]
        for name in names:
            f = ctypes.c_void_p()
            ck(cuda.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()), f"cuModuleGetFunction {name}")
            fs[name] = f
        fn.append(fs)
    host = (ctypes.c_uint64 * (2 * sms.value))()
    rows = []
    print(f"{'op':>10} {'dirs':>4} {'mode':>4} {'CTAs':>5} {'warps':>5} {'unroll':>6} {'KiB/CTA':>7} {'CTA us':>8} {'span us':>8} {'GB/s/SM':>8} {'GB/s':>7}")
    # (op, kernel, dirs, mode, CTAs, warps, unroll or bytes per bulk instruction)
    configs = []
    if "store" in a.ops:
        configs += [("store", f"copy_{m}_{u}", 1, m, c, w, u) for m in [0, 1, 2] for c in [1, 32, 64, sms.value] for w in [1, 4] for u in [2, 8]]
        configs += [("store", f"copy_{m}_8", 2, m, sms.value, w, 8) for m in [0, 1, 2] for w in [1, 4]]
    if "red" in a.ops:
        configs += [("red", f"red_{m}_8", d, m, c, w, 8) for d in [1, 2] for m in [0, 1] for c in [32, sms.value] for w in [1, 4]]
    for op, r in [("bulk-store", 0), ("bulk-red", 1)]:
        if op in a.ops:
            configs += [(op, f"bulk_{r}_{b}", d, 0, c, w, b) for d in [1, 2] for b in [512, 16384] for c in [32, sms.value] for w in [1, 4]]
    for op, kernel, dirs, mode, ctas, warps, unroll in configs:
        durs, spans = [], []
        for _ in range(a.reps + 2):
            keep = []
            for g in range(dirs):
                ck(cuda.cuCtxSetCurrent(ctx[g]), "ctx")
                vals = [ctypes.c_uint64(dst[g].value), ctypes.c_uint64(times[g].value)]
                keep.append(vals)
                args = (ctypes.c_void_p * 2)(*[ctypes.addressof(v) for v in vals])
                ck(cuda.cuLaunchKernel(fn[g][kernel], ctas, 1, 1, 32 * warps, 1, 1, 0, None, args, None), f"launch {kernel}")
            for g in range(dirs):
                ck(cuda.cuCtxSetCurrent(ctx[g]), "ctx")
                ck(cuda.cuCtxSynchronize(), "sync")
            ck(cuda.cuCtxSetCurrent(ctx[0]), "ctx")
            ck(cuda.cuMemcpyDtoH_v2(host, times[0], ctypes.c_size_t(16 * ctas)), "DtoH")
            t0 = [host[2 * i] for i in range(ctas)]
            t1 = [host[2 * i + 1] for i in range(ctas)]
            durs.append(statistics.median([(y - x) / 1e3 for x, y in zip(t0, t1)]))
            spans.append((max(t1) - min(t0)) / 1e3)
        d, s = statistics.median(durs[2:]), statistics.median(spans[2:])
        per_sm = bpc / (d * 1e3)
        total = bpc * ctas / (s * 1e3)
        rows.append(dict(op=op, directions=dirs, mode=mode, ctas=ctas, warps=warps, unroll=unroll, bytes_per_cta=bpc,
                         cta_us=d, span_us=s, gbs_per_sm=per_sm, gbs_total=total))
        print(f"{op:>10} {dirs:4d} {mode:4d} {ctas:5d} {warps:5d} {unroll:6d} {bpc // 1024:7d} {d:8.2f} {s:8.2f} {per_sm:8.2f} {total:7.1f}")
    if a.json:
        name = ctypes.create_string_buffer(256)
        ck(cuda.cuDeviceGetName(name, 256, dev[0]), "cuDeviceGetName")
        try:
            commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown (no git here)"
        info = dict(device=name.value.decode(), gpus=n.value, sms=sms.value, commit=commit,
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
        with open(a.json, "w") as f:
            json.dump(dict(probe="p2p_store_rate", info=info, pitch=pitch, rows=rows), f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except ProbeError as e:
        sys.exit(f"p2p_store_rate: {e}")
