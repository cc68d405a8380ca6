//! mkernel-sm: how a persistent kernel's CTAs (one per SM) are split between roles.
//!
//! Owns the role enum (mirrored by `mk::Role` in the device code), the static
//! partition a fused call runs with, and the heuristic that picks it from a cost model
//! of the two roles. It knows nothing about CUDA, buffers or transports; the facade
//! calls [`balance`] (or takes the caller's override) and hands the result to the
//! kernel catalog.
//!
//! The balancing idea is the one of mKernel's adaptive controller (paper section on
//! adaptive SM partitioning): give the secondary role
//! `n_s* = B * (R_s * C_s) / (R_p * C_p + R_s * C_s)` of the `B` blocks, where `R` is
//! the remaining work and `C` the cost per unit of work of each role, so that both
//! roles finish together. Applied once before launch, that continuous optimum ignores
//! two things that dominate on real shapes: compute tiles come in whole waves over the
//! compute CTAs (one CTA fewer can add a wave), and the link caps communication. So
//! [`balance`] evaluates the predicted makespan of every split with both effects and
//! takes the best; [`continuous_optimum`] is the paper's formula, kept for reference
//! and tests.

#![warn(missing_docs)]

use serde::Serialize;

/// What a CTA of a fused kernel does.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Role {
    /// Computes output tiles (GEMM / attention).
    Compute = 0,
    /// Moves data between the GPUs of a node over NVLink (reduce, broadcast, copy).
    IntraComm = 1,
    /// Publishes network commands for the host proxy.
    InterSend = 2,
    /// Consumes data arrived over the network.
    InterRecv = 3,
}

/// CTAs per role of one launch (their sum is the grid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Partition {
    /// CTAs computing tiles.
    pub compute: u32,
    /// CTAs moving data over NVLink inside the node.
    pub intra_comm: u32,
    /// CTAs publishing network commands for the host proxy.
    pub inter_send: u32,
    /// CTAs consuming data arrived over the network.
    pub inter_recv: u32,
}

impl Partition {
    /// Grid size.
    pub fn total(&self) -> u32 {
        self.compute + self.intra_comm + self.inter_send + self.inter_recv
    }

    /// An intra-node split of `grid` CTAs with `comm` communicating ones.
    pub fn intra(grid: u32, comm: u32) -> Self {
        Self { compute: grid.saturating_sub(comm), intra_comm: comm.min(grid), ..Default::default() }
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} compute + {} intra-comm", self.compute, self.intra_comm)?;
        if self.inter_send + self.inter_recv > 0 {
            write!(f, " + {} send + {} recv", self.inter_send, self.inter_recv)?;
        }
        write!(f, " CTAs")
    }
}

/// Costs the heuristic balances. Rates are per CTA (one CTA per SM) and for the link.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PartitionModel {
    /// bf16 matrix rate one compute SM sustains in mkernel's GEMM engine, FLOP/s.
    pub flops_per_sm: f64,
    /// Bytes/s one communication CTA pulls from peers over NVLink.
    pub comm_bytes_per_cta: f64,
    /// Least time one communication CTA spends per output tile, however small the tile's
    /// data (flag waits and the load/sum/store round trips), seconds.
    pub comm_tile_s: f64,
    /// Bytes/s of the NVLink path per GPU per direction (the cap).
    pub link_bytes: f64,
}

impl PartitionModel {
    /// Calibrated on the 2x H200 machine (NV18), 2026-11-30: the GEMM engine (TMA-store
    /// epilogue) sustains 700-790 TFLOP/s over 132 SMs on LLM shapes (taken as ~740);
    /// `mkernel bench gemm-allreduce --sm-comm` sweeps with 2 and 4 communication CTAs
    /// (comm-bound) put one one-shot communication CTA at ~22-24 GB/s of peer loads, and
    /// at ~2.8 us per tile whatever the tile's size (128x128 tiles of M=129 took as long
    /// per tile as 128x256 ones); a GPU0->GPU1 copy ran at ~394 GB/s (link cap taken a
    /// little below).
    pub const H200_NVLINK: Self =
        Self { flops_per_sm: 5.6e12, comm_bytes_per_cta: 22e9, comm_tile_s: 2.5e-6, link_bytes: 350e9 };

    /// [`Self::H200_NVLINK`] for the reduce-add path (peer loads only, the add at L2):
    /// a sweep with 2 communication CTAs moved o-proj M=8192's 128 MiB in 2.02 ms, ~33
    /// GB/s and ~2.0 us per 128x256 tile per CTA (run 9, 2026-11-30).
    pub const H200_NVLINK_REDUCE: Self = Self { comm_bytes_per_cta: 33e9, comm_tile_s: 1.9e-6, ..Self::H200_NVLINK };
}

/// Work of one fused GEMM + all-reduce call on one rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Workload {
    /// Output tiles of the GEMM.
    pub tiles: u64,
    /// Floating-point operations of one tile.
    pub tile_flops: f64,
    /// Bytes this rank loads from peers over NVLink.
    pub remote_bytes: f64,
}

impl Workload {
    /// GEMM + all-reduce of an M x N bf16 output with local K over `world` ranks, in
    /// `bm` x `bn` tiles. Remote bytes: with 1-2 ranks each rank pulls the peers' whole
    /// tiles ((world-1) x the output); beyond, the two-phase scheme pulls
    /// (world-1)/world of the output twice (reduce, then gather).
    /// Sizes are in elements; the products are taken in floating point (tiles
    /// saturate), so no input overflows.
    pub fn gemm_allreduce(m: u64, n: u64, k_local: u64, world: u32, bm: u64, bn: u64) -> Self {
        let out_bytes = m as f64 * n as f64 * 2.0;
        let w = world.max(1) as f64;
        let remote_bytes = if world <= 2 { out_bytes * (w - 1.0) } else { 2.0 * out_bytes * (w - 1.0) / w };
        Self {
            tiles: m.div_ceil(bm.max(1)).saturating_mul(n.div_ceil(bn.max(1))),
            tile_flops: 2.0 * bm as f64 * bn as f64 * k_local as f64,
            remote_bytes,
        }
    }
}

/// Predicted time (s) of the compute and communication roles with `comm` of `grid`
/// CTAs: compute in whole waves of tiles; communication at the per-CTA rate up to the
/// link cap, and at least `comm_tile_s` per tile of the busiest communication CTA.
pub fn predict(work: &Workload, model: &PartitionModel, grid: u32, comm: u32) -> (f64, f64) {
    let compute_ctas = grid.saturating_sub(comm).max(1) as u64;
    let waves = work.tiles.div_ceil(compute_ctas) as f64;
    let t_compute = waves * work.tile_flops / model.flops_per_sm;
    let bw = (model.comm_bytes_per_cta * comm.max(1) as f64).min(model.link_bytes);
    let per_tile = work.tiles.div_ceil(comm.max(1) as u64) as f64 * model.comm_tile_s;
    (t_compute, (work.remote_bytes / bw).max(per_tile))
}

/// The paper's continuous balance point (see the crate doc), in CTAs.
pub fn continuous_optimum(work: &Workload, model: &PartitionModel, grid: u32) -> f64 {
    let compute_work = work.tiles as f64 * work.tile_flops / model.flops_per_sm;
    let comm_work = work.remote_bytes / model.comm_bytes_per_cta;
    if compute_work + comm_work <= 0.0 {
        return 0.0;
    }
    grid as f64 * comm_work / (compute_work + comm_work)
}

/// Static partition of `grid` CTAs for `work`: the split with the smallest predicted
/// makespan `max(compute, comm)` plus the communication of the last wave (which runs
/// after the compute ends), among 1..=grid/2 communication CTAs.
pub fn balance(work: &Workload, model: &PartitionModel, grid: u32) -> Partition {
    if grid < 2 {
        return Partition::intra(grid, 0);
    }
    let mut best = (f64::INFINITY, 1);
    for comm in 1..=grid / 2 {
        let (tc, tm) = predict(work, model, grid, comm);
        let waves = work.tiles.div_ceil((grid - comm) as u64).max(1) as f64;
        let cost = tc.max(tm) + tm / waves;
        if cost < best.0 * (1.0 - 1e-9) {
            best = (cost, comm);
        }
    }
    Partition::intra(grid, best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: PartitionModel = PartitionModel::H200_NVLINK;

    fn cost(w: &Workload, grid: u32, c: u32) -> f64 {
        let (a, b) = predict(w, &M, grid, c);
        a.max(b)
    }

    #[test]
    fn balance_is_never_worse_than_the_continuous_optimum() {
        for (m, n, k) in [(1024, 8192, 4096), (8192, 8192, 4096), (8192, 8192, 14336), (129, 8192, 4096)] {
            let w = Workload::gemm_allreduce(m, n, k, 2, 128, 256);
            let p = balance(&w, &M, 132);
            assert_eq!(p.total(), 132);
            let c = (continuous_optimum(&w, &M, 132).round() as u32).clamp(1, 66);
            assert!(cost(&w, 132, p.intra_comm) <= cost(&w, 132, c) * 1.0001, "{m}x{n}x{k}: chose {p}, formula {c}");
        }
    }

    #[test]
    fn whole_waves_are_respected() {
        // 256 tiles: 2 waves need >= 128 compute CTAs; the heuristic must not leave a
        // third wave for a handful of extra communication CTAs unless comm needs them.
        let w = Workload::gemm_allreduce(1024, 8192, 14336, 2, 128, 256);
        let p = balance(&w, &M, 132);
        assert!(p.compute >= 128, "{p}");
    }

    #[test]
    fn more_compute_per_byte_means_fewer_comm_ctas() {
        let short_k = balance(&Workload::gemm_allreduce(8192, 8192, 4096, 2, 128, 256), &M, 132);
        let long_k = balance(&Workload::gemm_allreduce(8192, 8192, 14336, 2, 128, 256), &M, 132);
        assert!(long_k.intra_comm < short_k.intra_comm, "{long_k} vs {short_k}");
    }

    #[test]
    fn bounds_hold_for_extreme_workloads() {
        for w in [
            Workload { tiles: 1, tile_flops: 0.0, remote_bytes: 1e12 },
            Workload { tiles: 100_000, tile_flops: 1e9, remote_bytes: 0.0 },
        ] {
            let p = balance(&w, &M, 132);
            assert!((1..=66).contains(&p.intra_comm), "{p}");
        }
        assert_eq!(balance(&Workload::gemm_allreduce(1, 1, 8, 1, 128, 256), &M, 1).intra_comm, 0);
        assert_eq!(Workload::gemm_allreduce(10, 10, 8, 1, 128, 256).remote_bytes, 0.0);
        assert_eq!(Workload::gemm_allreduce(128, 256, 8, 2, 128, 256).remote_bytes, 128.0 * 256.0 * 2.0);
        // Huge sizes neither overflow nor break the search; tiny grids stay in range.
        let huge = Workload::gemm_allreduce(u64::MAX, u64::MAX, u64::MAX, 8, u64::MAX, 1);
        assert_eq!(huge.tiles, u64::MAX);
        for grid in [2, 3, 1000] {
            let p = balance(&huge, &M, grid);
            assert_eq!(p.total(), grid);
            assert!((1..=grid / 2).contains(&p.intra_comm), "{grid}: {p}");
        }
    }

    #[test]
    fn display_is_readable() {
        assert_eq!(Partition::intra(132, 12).to_string(), "120 compute + 12 intra-comm CTAs");
    }
}
