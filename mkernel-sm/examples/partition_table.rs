//! Prints the partition the heuristic picks, and its predicted role times, for the
//! GEMM + all-reduce benchmark shapes: `cargo run -p mkernel-sm --example partition_table [SMs] [world]`.
use mkernel_sm::{balance, continuous_optimum, predict, PartitionModel, Workload};

fn main() {
    let args: Vec<u32> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let grid = args.first().copied().unwrap_or(132);
    let world = args.get(1).copied().unwrap_or(2);
    let model = PartitionModel::H200_NVLINK;
    println!("{:>6} {:>6} {:>6} {:>6} {:>8} {:>10} {:>10} {:>9}", "M", "N", "K", "comm", "formula", "compute ms", "comm ms", "tiles");
    for m in [129u64, 1024, 2048, 2049, 4096, 8192, 16384] {
        for (n, k) in [(8192u64, 4096u64), (8192, 14336), (7168, 9216)] {
            let bn = if m.div_ceil(128) * n.div_ceil(256) * 2 < grid as u64 { 128 } else { 256 };
            let w = Workload::gemm_allreduce(m, n, k, world, 128, bn);
            let p = balance(&w, &model, grid);
            let (tc, tm) = predict(&w, &model, grid, p.intra_comm);
            println!(
                "{m:>6} {n:>6} {k:>6} {:>6} {:>8.1} {:>10.3} {:>10.3} {:>9}",
                p.intra_comm,
                continuous_optimum(&w, &model, grid),
                tc * 1e3,
                tm * 1e3,
                w.tiles
            );
        }
    }
}
