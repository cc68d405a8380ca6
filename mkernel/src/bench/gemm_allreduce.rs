//! `mkernel bench gemm-allreduce`: the fused GEMM + all-reduce against cuBLAS + NCCL
//! on the GPUs of this machine, one process driving all of them (rank i on GPU i).
//!
//! Per shape, on the same inputs and streams: (a) cuBLAS GEMM then NCCL all-reduce
//! (the unfused baseline), (a_gemm) cuBLAS alone, (b) our GEMM alone, (c) NCCL
//! all-reduce alone, (d) the fused kernel with the heuristic split, plus (d@N) any
//! static splits given with --sm-comm. Speedup = a / d; overlap efficiency =
//! max(b, c) / d (1.0 = the communication is completely hidden).

use std::sync::Arc;

use clap::Args;
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::{Cublas, Nccl};
use mkernel::{check, CommConfig, Communicator, GemmAllReduceOptions, GemmOptions, GemmShape};
use serde::Serialize;

use super::{rotation_sets, run_info, time_median_ms, BenchResult, Common};

#[derive(Args, Clone, Debug)]
pub struct ArArgs {
    #[command(flatten)]
    pub common: Common,
    /// Number of GPUs (ranks); default: all visible.
    #[arg(long)]
    pub gpus: Option<usize>,
    /// Static numbers of communication CTAs to sweep, e.g. 4,8,16,32.
    #[arg(long, value_delimiter = ',')]
    pub sm_comm: Vec<u32>,
    /// With --check: repetitions per shape, each on fresh random data.
    #[arg(long, default_value_t = 1)]
    pub check_reps: usize,
    /// Force a tile configuration (names as for `bench gemm --tile`).
    #[arg(long)]
    pub tile: Option<String>,
    /// Device-side wait bound in seconds.
    #[arg(long, default_value_t = 20.0)]
    pub timeout_s: f64,
}

/// The shape list of the GEMM + all-reduce issue (K is each rank's shard).
pub fn shapes() -> Vec<(String, GemmShape)> {
    let mut v = Vec::new();
    for m in [1024u32, 2048, 4096, 8192, 16384] {
        v.push((format!("llama70b-tp2 o M={m}"), GemmShape { m, n: 8192, k: 4096 }));
        v.push((format!("llama70b-tp2 down M={m}"), GemmShape { m, n: 8192, k: 14336 }));
        v.push((format!("deepseek-v3 M={m}"), GemmShape { m, n: 7168, k: 9216 }));
    }
    for m in [129u32, 2049] {
        v.push((format!("odd M={m}"), GemmShape { m, n: 8192, k: 4096 }));
    }
    v
}

#[derive(Serialize, Clone)]
struct Row {
    label: String,
    m: u32,
    n: u32,
    k: u32,
    world: usize,
    config: String,
    baseline_ms: f64,
    cublas_ms: f64,
    ours_gemm_ms: f64,
    nccl_ms: f64,
    fused_ms: f64,
    speedup: f64,
    overlap_efficiency: f64,
    comm_share_of_baseline: f64,
    sweep: Vec<(u32, f64)>,
    check: Option<String>,
}

struct RankData {
    a: Vec<CudaSlice<bf16>>,
    b: Vec<CudaSlice<bf16>>,
    out_fused: CudaSlice<bf16>,
    out_base: CudaSlice<bf16>,
}

fn alloc_rank(stream: &Arc<CudaStream>, s: GemmShape, sets: usize, seed: u64) -> BenchResult<RankData> {
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for i in 0..sets {
        let mut x = stream.alloc_zeros::<bf16>(m * k)?;
        let mut y = stream.alloc_zeros::<bf16>(n * k)?;
        check::fill_uniform(stream, &mut x, seed.wrapping_add(2 * i as u64))?;
        check::fill_uniform(stream, &mut y, seed.wrapping_add(2 * i as u64 + 1))?;
        a.push(x);
        b.push(y);
    }
    Ok(RankData { a, b, out_fused: stream.alloc_zeros(m * n)?, out_base: stream.alloc_zeros(m * n)? })
}

/// Fresh inputs, poisoned outputs, one fused call on every rank, and every rank's
/// output compared with the fp32 sum of all ranks' cuBLAS fp32 products.
fn check_once(
    comms: &[Communicator],
    streams: &[Arc<CudaStream>],
    blas: &mut [Cublas],
    data: &mut [RankData],
    s: GemmShape,
    seed: u64,
    opts: GemmAllReduceOptions,
    on_device: bool,
) -> BenchResult<mkernel::check::Comparison> {
    let case = check::AllReduceCase { shape: s, world: comms.len() as u32, seed };
    for (r, d) in data.iter_mut().enumerate() {
        case.fill_inputs(&streams[r], r as u32, &mut d.a[0], &mut d.b[0])?;
        check::poison(&streams[r], &mut d.out_fused)?;
    }
    for (r, d) in data.iter_mut().enumerate() {
        comms[r].gemm_allreduce(&streams[r], &d.a[0], &d.b[0], &mut d.out_fused, s, opts)?;
    }
    for (r, c) in comms.iter().enumerate() {
        c.synchronize(&streams[r])?;
    }
    let mut worst: Option<check::Comparison> = None;
    for (r, d) in data.iter().enumerate() {
        // The first repetition compares on the host; later ones on the device (the test
        // `device_and_host_verification_agree` ties the two together).
        let cmp = if on_device {
            case.verify_on_device(&streams[r], &mut blas[r], &d.out_fused)?
        } else {
            case.verify(&streams[r], &mut blas[r], &d.out_fused)?
        };
        if !cmp.passed() {
            return Err(format!("rank {r}: fused output wrong ({cmp}; seed {seed:#x})").into());
        }
        if worst.as_ref().is_none_or(|w| cmp.rel_fro_err > w.rel_fro_err) {
            worst = Some(cmp);
        }
    }
    worst.ok_or_else(|| "no ranks".into())
}

pub fn run(args: ArArgs) -> BenchResult<()> {
    let present = mkernel::device_count()?;
    let world = args.gpus.unwrap_or(present);
    if world == 0 || world > present {
        return Err(format!("--gpus {world}: {present} GPU(s) present").into());
    }
    let c = &args.common;
    let tile = super::parse_tile(args.tile.as_deref())?;
    let base_opts = GemmAllReduceOptions { tile, ..Default::default() };
    let list: Vec<(String, GemmShape)> =
        shapes().into_iter().filter(|(l, _)| c.filter.as_deref().is_none_or(|f| l.contains(f))).collect();
    let max_elems = list.iter().map(|(_, s)| s.m as u64 * s.n as u64).max().unwrap_or(1);
    let config = CommConfig {
        timeout: std::time::Duration::from_secs_f64(args.timeout_s),
        max_output_elems: max_elems,
        ..Default::default()
    };
    let devices: Vec<usize> = (0..world).collect();
    let comms = Communicator::local_group(&devices, config)?;
    let streams: Vec<Arc<CudaStream>> = comms.iter().map(|c| c.context().new_stream()).collect::<Result<_, _>>()?;
    let nccl = Nccl::local_group(&streams)?;
    let mut blas: Vec<Cublas> = streams.iter().map(Cublas::new).collect::<Result<_, _>>()?;
    let info = run_info(comms[0].context())?;
    println!(
        "# mkernel bench gemm-allreduce: {world} x {} ({} SMs), one process, {}, commit {}",
        info.device, info.sm_count, info.driver, info.commit
    );
    println!(
        "{:<26} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>5}  {}",
        "shape", "base ms", "cuBLAS", "our gemm", "NCCL", "fused ms", "speedup", "overlap", "comm", "config / check"
    );
    let bar = indicatif::ProgressBar::new(list.len() as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()));
    let mut rows = Vec::new();
    for (label, s) in list {
        bar.set_message(label.clone());
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let sets = rotation_sets(((m * k + n * k) * 2) as u64);
        let seed = check::fresh_seed();
        let mut data: Vec<RankData> = streams
            .iter()
            .enumerate()
            .map(|(r, st)| alloc_rank(st, s, sets, seed.wrapping_add(100 * r as u64)))
            .collect::<Result<_, _>>()?;
        let verdict = if c.check {
            let mut worst = 0f64;
            for rep in 0..args.check_reps {
                let cmp = check_once(&comms, &streams, &mut blas, &mut data, s, seed.wrapping_add(7919 * rep as u64), base_opts, rep > 0)
                    .map_err(|e| format!("{label}: repetition {rep}: {e}"))?;
                worst = worst.max(cmp.rel_fro_err);
            }
            Some(format!("PASS x{} (worst rel_fro_err {worst:.2e})", args.check_reps))
        } else {
            None
        };
        // (a) unfused baseline: cuBLAS then NCCL on each rank's stream.
        let baseline = time_median_ms(&streams, c.warmup, c.iters, |i| {
            for (r, d) in data.iter_mut().enumerate() {
                blas[r].gemm_bf16(&d.a[i % sets], &d.b[i % sets], &mut d.out_base, s)?;
            }
            let mut outs: Vec<&mut CudaSlice<bf16>> = data.iter_mut().map(|d| &mut d.out_base).collect();
            nccl.all_reduce_sum(&mut outs)?;
            Ok(())
        })?;
        let cublas = time_median_ms(&streams, c.warmup, c.iters, |i| {
            for (r, d) in data.iter_mut().enumerate() {
                blas[r].gemm_bf16(&d.a[i % sets], &d.b[i % sets], &mut d.out_base, s)?;
            }
            Ok(())
        })?;
        let ours_gemm = time_median_ms(&streams, c.warmup, c.iters, |i| {
            for (r, d) in data.iter_mut().enumerate() {
                mkernel::gemm(&streams[r], &d.a[i % sets], &d.b[i % sets], &mut d.out_base, s, GemmOptions::default())?;
            }
            Ok(())
        })?;
        let nccl_ms = time_median_ms(&streams, c.warmup, c.iters, |_| {
            let mut outs: Vec<&mut CudaSlice<bf16>> = data.iter_mut().map(|d| &mut d.out_base).collect();
            nccl.all_reduce_sum(&mut outs)?;
            Ok(())
        })?;
        let mut fused_with = |opts: GemmAllReduceOptions| -> BenchResult<(f64, String)> {
            let mut cfg = String::new();
            let t = time_median_ms(&streams, c.warmup, c.iters, |i| {
                for (r, d) in data.iter_mut().enumerate() {
                    let used = comms[r].gemm_allreduce(&streams[r], &d.a[i % sets], &d.b[i % sets], &mut d.out_fused, s, opts)?;
                    cfg = used.to_string();
                }
                Ok(())
            })?;
            for (r, cm) in comms.iter().enumerate() {
                cm.synchronize(&streams[r])?;
            }
            Ok((t, cfg))
        };
        let (fused, cfg) = fused_with(base_opts)?;
        let mut sweep = Vec::new();
        for &cc in &args.sm_comm {
            let (t, _) = fused_with(GemmAllReduceOptions { comm_ctas: Some(cc), ..base_opts })?;
            sweep.push((cc, t));
        }
        let row = Row {
            label: label.clone(),
            m: s.m,
            n: s.n,
            k: s.k,
            world,
            config: cfg.clone(),
            baseline_ms: baseline,
            cublas_ms: cublas,
            ours_gemm_ms: ours_gemm,
            nccl_ms,
            fused_ms: fused,
            speedup: baseline / fused,
            overlap_efficiency: ours_gemm.max(nccl_ms) / fused,
            comm_share_of_baseline: nccl_ms / (cublas + nccl_ms),
            sweep: sweep.clone(),
            check: verdict.clone(),
        };
        bar.suspend(|| {
            println!(
                "{:<26} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>7.3} {:>7.3} {:>4.0}%  {}{}",
                label,
                baseline,
                cublas,
                ours_gemm,
                nccl_ms,
                fused,
                row.speedup,
                row.overlap_efficiency,
                100.0 * row.comm_share_of_baseline,
                cfg,
                verdict.as_deref().map(|v| format!(" | {v}")).unwrap_or_default()
            );
            if !sweep.is_empty() {
                let s: Vec<String> = sweep.iter().map(|(cc, t)| format!("{cc}:{t:.4}")).collect();
                println!("{:<26} sweep comm CTAs -> ms: {}", "", s.join(" "));
            }
        });
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if !c.no_json {
        #[derive(Serialize)]
        struct Out<'a> {
            bench: &'a str,
            mode: &'a str,
            info: super::RunInfo,
            iters: usize,
            warmup: usize,
            rows: Vec<Row>,
        }
        let date = info.date.clone();
        let out = Out { bench: "gemm-allreduce", mode: "one process, all GPUs", info, iters: c.iters, warmup: c.warmup, rows };
        let p = super::write_json(&c.out_dir, &format!("gemm-allreduce-w{world}"), &date, &out)?;
        println!("# wrote {}", p.display());
    }
    Ok(())
}
