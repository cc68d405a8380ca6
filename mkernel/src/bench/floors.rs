//! The two numbers written down before a GPU run (the developers' guide): a shape's time
//! at the measured matrix rate, and its bytes over the measured bandwidth, HBM for the
//! plain GEMM, NVLink for the all-reduce. Ceilings measured on the lent machines
//! (../shared/DESIGN.md section 6); a floor, not a prediction: the gap to a measured time
//! is what bench/NOTES.md explains.

use mkernel::GemmShape;

/// bf16 matrix rate of one H200 through cuBLAS, TFLOP/s (8192^3 measured at ~790-800).
pub const MATRIX_TFLOPS: f64 = 790.0;
/// HBM bandwidth of one H200 reached by copies, TB/s.
pub const HBM_TBPS: f64 = 4.0;
/// One GPU's NVLink rate to its peer on the 2x H200 machine, GB/s (GPU0 -> GPU1 copy, ~394;
/// taken as each direction's rate with both directions busy).
pub const LINK_GBPS: f64 = 394.0;

/// 2 M N K flops at [`MATRIX_TFLOPS`], microseconds.
pub fn compute_us(s: GemmShape) -> f64 {
    s.flops() / (MATRIX_TFLOPS * 1e12) * 1e6
}

/// A, B and C (bf16) read or written once at [`HBM_TBPS`], microseconds.
pub fn hbm_us(s: GemmShape) -> f64 {
    let (m, n, k) = (s.m as f64, s.n as f64, s.k as f64);
    (m * k + n * k + m * n) * 2.0 / (HBM_TBPS * 1e12) * 1e6
}

/// The bytes one rank sends in an all-reduce of the bf16 M x N output over `world` ranks,
/// 2 (world - 1) / world of the output (a ring's reduce-scatter and all-gather; two ranks
/// exchanging whole partials send the same), at [`LINK_GBPS`], microseconds; 0 for one rank.
pub fn allreduce_link_us(s: GemmShape, world: u32) -> f64 {
    if world < 2 {
        return 0.0;
    }
    let bytes = s.m as f64 * s.n as f64 * 2.0 * 2.0 * (world - 1) as f64 / world as f64;
    bytes / (LINK_GBPS * 1e9) * 1e6
}

/// The bytes one rank sends in a reduce-scatter of the bf16 M x N output over `world`
/// ranks, (world - 1) / world of it (every rank's partial of each other rank's rows), at
/// [`LINK_GBPS`], microseconds: half of [`allreduce_link_us`]; 0 for one rank.
pub fn reduce_scatter_link_us(s: GemmShape, world: u32) -> f64 {
    allreduce_link_us(s, world) / 2.0
}

/// The bytes one rank sends in an all-gather of the bf16 M x K operand A over `world` ranks,
/// its M / world rows to each of the world - 1 others, at [`LINK_GBPS`], microseconds; 0 for
/// one rank.
pub fn allgather_link_us(s: GemmShape, world: u32) -> f64 {
    if world < 2 {
        return 0.0;
    }
    let bytes = s.m as f64 / world as f64 * s.k as f64 * 2.0 * (world - 1) as f64;
    bytes / (LINK_GBPS * 1e9) * 1e6
}

/// The bytes one rank sends in an MoE dispatch of `tokens` tokens of K (bf16) to `topk`
/// experts each, spread evenly over `world` ranks' experts: the (world - 1) / world of its
/// routed rows that go to other ranks, at [`LINK_GBPS`], microseconds; 0 for one rank.
pub fn moe_dispatch_link_us(tokens: u32, topk: u32, k: u32, world: u32) -> f64 {
    if world < 2 {
        return 0.0;
    }
    let bytes = tokens as f64 * topk as f64 * k as f64 * 2.0 * (world - 1) as f64 / world as f64;
    bytes / (LINK_GBPS * 1e9) * 1e6
}

/// The bytes one rank sends in an MoE combine of `tokens` tokens' `topk` rows of N (bf16), the
/// experts' outputs, spread evenly over `world` ranks' experts: the (world - 1) / world of the
/// rows its experts computed that go back to other ranks' tokens (as many as a dispatch of the
/// same routing sends, of N columns instead of K), at [`LINK_GBPS`], microseconds; 0 for one
/// rank.
pub fn moe_combine_link_us(tokens: u32, topk: u32, n: u32, world: u32) -> f64 {
    if world < 2 {
        return 0.0;
    }
    let bytes = tokens as f64 * topk as f64 * n as f64 * 2.0 * (world - 1) as f64 / world as f64;
    bytes / (LINK_GBPS * 1e9) * 1e6
}

/// One rank's attention FLOPs (`AttentionShape::flops`) at [`MATRIX_TFLOPS`], microseconds.
pub fn attention_compute_us(flops: f64) -> f64 {
    flops / (MATRIX_TFLOPS * 1e12) * 1e6
}

/// The bytes a rank pushes in ring attention: its keys and values (2 x B x S x Hkv x D, bf16)
/// to each peer that reads them (world - 1; causal over contiguous shards, rank 0's to all
/// of them, the most), at [`LINK_GBPS`], microseconds; 0 for one rank.
pub fn ring_attention_link_us(s: mkernel::AttentionShape, world: u32) -> f64 {
    if world < 2 {
        return 0.0;
    }
    let bytes = 2.0 * s.kv_elems() as f64 * 2.0 * (world - 1) as f64;
    bytes / (LINK_GBPS * 1e9) * 1e6
}

/// The link floor of a fused call ending with `collective`.
pub fn link_us(s: GemmShape, world: u32, collective: mkernel::Collective) -> f64 {
    match collective {
        mkernel::Collective::AllReduce => allreduce_link_us(s, world),
        mkernel::Collective::ReduceScatter => reduce_scatter_link_us(s, world),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allgather_bytes_are_the_other_ranks_rows() {
        // Llama-70B TP-2 gate + up at M = 8192: 4096 x 8192 x 2 bytes = 64 MiB to the peer.
        let s = GemmShape { m: 8192, n: 28672, k: 8192 };
        assert!((allgather_link_us(s, 2) - 67_108_864.0 / 394e9 * 1e6).abs() < 1e-6);
        assert!((allgather_link_us(s, 4) - 3.0 * 2048.0 * 8192.0 * 2.0 / 394e9 * 1e6).abs() < 1e-6);
        assert_eq!(allgather_link_us(s, 1), 0.0);
    }

    #[test]
    fn moe_combine_bytes_are_the_rows_going_back() {
        // Mixtral-like at 4096 tokens, top-2, N = 4096 on two ranks: half of 8192 rows of 8 KiB.
        assert!((moe_combine_link_us(4096, 2, 4096, 2) - 4096.0 * 2.0 * 4096.0 * 2.0 / 2.0 / 394e9 * 1e6).abs() < 1e-9);
        // (the dispatch's bytes with N for K; 7/8 of the rows at 8 ranks)
        assert_eq!(moe_combine_link_us(4096, 8, 7168, 4), moe_dispatch_link_us(4096, 8, 7168, 4));
        assert!((moe_combine_link_us(4096, 8, 7168, 8) / moe_combine_link_us(4096, 8, 7168, 2) - 1.75).abs() < 1e-12);
        assert_eq!(moe_combine_link_us(4096, 2, 4096, 1), 0.0);
    }

    #[test]
    fn floors_of_the_issue_shapes() {
        // o-proj M=1024 on two ranks: 68.7 GFLOP at 790 TFLOP/s, 16 MiB over 394 GB/s.
        let s = GemmShape { m: 1024, n: 8192, k: 4096 };
        assert!((compute_us(s) - 2.0 * 1024.0 * 8192.0 * 4096.0 / 790e12 * 1e6).abs() < 1e-9);
        assert!((allreduce_link_us(s, 2) - 16_777_216.0 / 394e9 * 1e6).abs() < 1e-9, "{}", allreduce_link_us(s, 2));
        assert!((allreduce_link_us(s, 8) / allreduce_link_us(s, 2) - 1.75).abs() < 1e-12);
        assert_eq!(allreduce_link_us(s, 1), 0.0);
        // A reduce-scatter sends each rank's partial of the other's rows once: 8 MiB.
        assert!((reduce_scatter_link_us(s, 2) - 8_388_608.0 / 394e9 * 1e6).abs() < 1e-9);
        assert_eq!(link_us(s, 4, mkernel::Collective::ReduceScatter), reduce_scatter_link_us(s, 4));
        assert_eq!(reduce_scatter_link_us(s, 1), 0.0);
        assert!((hbm_us(s) - (1024.0 * 4096.0 + 8192.0 * 4096.0 + 1024.0 * 8192.0) * 2.0 / 4e12 * 1e6).abs() < 1e-9);
    }
}
