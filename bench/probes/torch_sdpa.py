#!/usr/bin/env python3
"""Reference rates of one-GPU attention from PyTorch's scaled_dot_product_attention, each
backend alone (flash: FlashAttention-2's kernels inside PyTorch; cudnn: cuDNN's fused
attention; efficient: memory-efficient attention), on the shapes `mkernel bench attention`
and `bench ring-attention` time, so our loop's TFLOP/s has a named yardstick.

    python3 bench/probes/torch_sdpa.py [--shape BxSxHxHKVxD[c] ...] [--iters N] [--json FILE] [--backend NAME ...]

Shapes are whole sequences (S: every position). FLOPs: 4 B H S^2 D (full), half for a causal
mask (the convention of FlashAttention's benchmarks). Times are medians of CUDA-event-timed
calls after warm-up; inputs bf16 [B, H, S, D] (SDPA's layout; GQA by enable_gqa)."""
import argparse
import json
import os
import statistics

for key in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"):
    os.environ.setdefault(key, "0" if key == "NCCL_NVLS_ENABLE" else "1")

DEFAULT = ["1x8192x64x8x128", "1x2048x64x8x128c", "1x8192x64x8x128c", "1x32768x64x8x128c", "1x16384x16x16x64"]


def parse(text):
    causal = text.endswith("c")
    b, s, h, hkv, d = (int(x) for x in text.rstrip("c").split("x"))
    return b, s, h, hkv, d, causal


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", help="BxSxHxHKVxD with a c suffix for causal")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--backend", action="append", choices=["flash", "cudnn", "efficient"],
                    help="time only these backends (default: all; e.g. one under a profiler)")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    rows = []
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    for text in args.shape or DEFAULT:
        b, s, h, hkv, d, causal = parse(text)
        g = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        for name, backend in backends.items():
            if args.backend and name not in args.backend:
                continue
            try:
                with sdpa_kernel(backend):
                    def call():
                        if hkv == h:
                            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
                    for _ in range(3):
                        call()
                    torch.cuda.synchronize()
                    times = []
                    for _ in range(args.iters):
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        call()
                        e1.record()
                        e1.synchronize()
                        times.append(e0.elapsed_time(e1))
                ms = statistics.median(times)
                row = {"shape": text, "backend": name, "ms": ms, "tflops": flops / ms / 1e9}
                print(f"{text:22} {name:10} {ms:9.3f} ms {row['tflops']:7.1f} TFLOP/s")
            except Exception as e:  # a backend that refuses the shape (GQA, head_dim) says so
                row = {"shape": text, "backend": name, "error": str(e).splitlines()[0][:200]}
                print(f"{text:22} {name:10} refused: {row['error']}")
            rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
