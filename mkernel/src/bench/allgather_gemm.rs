//! `mkernel bench allgather-gemm`: the fused all-gather + GEMM against NCCL's all-gather
//! then cuBLAS on the GPUs of this machine (one process driving every GPU, rank i on GPU i;
//! `--share-gpu`: several ranks on GPU 0, where NCCL cannot run, so only the fused call and
//! cuBLAS are timed).
//!
//! Per shape (M: all ranks' rows; each rank holds M / world of them and its own B [N, K]),
//! on the same inputs and streams, side by side (one iteration of each per round, in a
//! random order per round: [`super::time_rounds_ms`]): (a) NCCL all-gather then cuBLAS
//! GEMM (the unfused baseline), (a_gemm) cuBLAS alone on the gathered A, (c) NCCL's
//! all-gather alone, (d) the fused kernel. Speedup = a / d; overlap efficiency =
//! max(a_gemm, c) / d. As in gemm-allreduce, each round is held behind a host gate per GPU
//! while it is enqueued, and each step starts after an L2 flush and a device barrier of the
//! ranks (a fused step must not be charged for the skew the steps before it left: a rank
//! whose previous step ran late makes the other wait for its chunks).
//! `--check` first verifies every rank's output against cuBLAS's fp32 product of the
//! concatenated shards.

use std::sync::Arc;

use clap::Args;
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::{Cublas, Nccl};
use mkernel::{check, AllGatherGemmOptions, CommConfig, Communicator, GemmShape};
use serde::Serialize;

use super::{run_info, usage, BenchResult, Common, Part};

#[derive(Args, Clone, Debug)]
pub struct AgArgs {
    #[command(flatten)]
    pub common: Common,
    /// Time these shapes instead of the default list: MxNxK with M all ranks' rows (a
    /// multiple of the world size) and N this rank's columns, comma-separated or repeated.
    #[arg(long, value_delimiter = ',', value_parser = super::gemm::parse_shape)]
    pub shape: Vec<GemmShape>,
    /// Number of GPUs (ranks), 2 to 8; default: all visible. With --share-gpu, the number
    /// of ranks on GPU 0 (default 2).
    #[arg(long, value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(2..=8))]
    pub gpus: Option<usize>,
    /// Put every rank on GPU 0 (each kernel on its share of the SMs): checks the protocol on
    /// one GPU; no NCCL baseline (NCCL takes one rank per GPU).
    #[arg(long)]
    pub share_gpu: bool,
    /// Force the GEMM tile (a catalog name, as `bench gemm-allreduce --tile`): one of the 10
    /// unswapped tiles or a column-fitted TMA-store tile (cols-128xC-tma-store[-c2]); no
    /// swapped-operand tile.
    #[arg(long)]
    pub tile: Option<String>,
    /// Push CTAs per rank: a positive multiple of the tile's cluster size (2 for the -c2
    /// tiles) below the rank's CTAs (default: AllGatherGemmOptions's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub push_ctas: Option<u32>,
    /// Rows of a shard per arrival flag, at least 1 (more than a shard: one chunk a shard;
    /// default: AllGatherGemmOptions's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_rows: Option<u32>,
}

/// The default shapes: Llama-3-70B's column-parallel projections at TP 2 (hidden 8192;
/// QKV 10240 / 2 = 5120 columns a rank, gate + up 2 x 28672 / 2 = 28672), M = 1024-8192
/// tokens.
pub fn shapes() -> Vec<(String, GemmShape)> {
    let mut v = Vec::new();
    for m in [1024u32, 4096, 8192] {
        v.push((format!("llama70b-tp2 qkv M={m}"), GemmShape { m, n: 5120, k: 8192 }));
        v.push((format!("llama70b-tp2 gate-up M={m}"), GemmShape { m, n: 28672, k: 8192 }));
    }
    v
}

#[derive(Serialize)]
struct Row {
    label: String,
    m: u32,
    n: u32,
    k: u32,
    world: usize,
    config: String,
    baseline_ms: f64,
    cublas_ms: f64,
    nccl_ms: f64,
    fused_ms: f64,
    speedup: f64,
    overlap: f64,
    check: Option<String>,
}

/// `--shape`'s shapes all have an M that `world` ranks divide (usage error naming the first
/// that has not).
fn check_listed_shapes(shapes: &[GemmShape], world: usize) -> BenchResult<()> {
    match shapes.iter().find(|s| s.m % world as u32 != 0) {
        Some(s) => Err(usage(format!("--shape {}x{}x{}: M is all ranks' rows of A, so it must be a multiple of the {world} ranks", s.m, s.n, s.k))),
        None => Ok(()),
    }
}

pub fn run(args: AgArgs) -> BenchResult<()> {
    super::check_out_dir(&args.common)?;
    let tile = super::parse_tile(args.tile.as_deref(), false)?;
    if let Some(t) = tile.filter(|t| !mkernel_kernels::allgather_gemm::has_kernel(*t)) {
        let names: Vec<String> = mkernel_kernels::allgather_gemm::tiles().map(|x| x.name()).collect();
        return Err(usage(format!("--tile {}: the all-gather + GEMM has kernels for {} only (no swapped-operand tiles)", t.name(), names.join(", "))));
    }
    // (with --share-gpu the world size is known before any GPU is touched)
    if args.share_gpu {
        check_listed_shapes(&args.shape, args.gpus.unwrap_or(2))?;
    }
    // (--filter before the driver: a filter matching nothing is a usage error with or without a GPU)
    let mut list = if args.shape.is_empty() { shapes() } else { args.shape.iter().map(|s| (format!("shape {}x{}x{}", s.m, s.n, s.k), *s)).collect() };
    list = super::filter_shapes(list, args.common.filter.as_deref())?;
    let present = mkernel::device_count()?;
    let world = if args.share_gpu { args.gpus.unwrap_or(2) } else { args.gpus.unwrap_or(present) };
    if !args.share_gpu && (world < 2 || world > present) {
        return Err(usage(format!("--gpus: an all-gather needs 2 ranks or more, and {world} ranks need as many GPUs ({present} present); --share-gpu puts them on GPU 0")));
    }
    let devices: Vec<usize> = if args.share_gpu { vec![0; world] } else { (0..world).collect() };
    check_listed_shapes(&args.shape, world)?;
    // (the default list's shapes whose M the world size does not divide are left out)
    list.retain(|(_, s)| s.m % world as u32 == 0);
    if list.is_empty() {
        return Err(usage(format!("no shape left to time (--filter, or no listed M that {world} ranks divide)")));
    }
    let max = list.iter().map(|(_, s)| (s.m as u64 * s.n as u64).max(s.m as u64 * s.k as u64)).max().unwrap_or(1);
    let comms = Communicator::local_group(&devices, CommConfig { max_output_elems: max, ..Default::default() })?;
    let opts = AllGatherGemmOptions { tile, push_ctas: args.push_ctas, chunk_rows: args.chunk_rows };
    // Every shape planned before cuBLAS, NCCL or any kernel: a refusal is a usage error.
    let mut plans = Vec::new();
    for (label, s) in &list {
        plans.push(comms[0].plan_allgather_gemm(*s, opts).map_err(|e| usage(format!("{label}: {e}")))?);
    }
    let streams: Vec<Arc<CudaStream>> = comms.iter().map(|c| c.context().new_stream()).collect::<Result<_, _>>()?;
    let mut blas: Vec<Cublas> = streams.iter().map(Cublas::new).collect::<Result<_, _>>()?;
    let nccl = if args.share_gpu { None } else { Some(Nccl::local_group(&streams)?) };
    let info = run_info(streams[0].context())?;
    println!("# mkernel bench allgather-gemm: {world} ranks on {} ({}), commit {}", if args.share_gpu { "GPU 0".to_string() } else { format!("{world} GPUs") }, info.device, info.commit);
    println!("{:<28} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7}  config / check", "shape", "base ms", "cuBLAS", "NCCL", "fused ms", "speedup", "overlap");
    let mut rows = Vec::new();
    for ((label, s), plan) in list.into_iter().zip(plans) {
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let rows_per = m / world;
        // Per rank: its shard, its weights, the fused output, the baseline's gathered A
        // and cuBLAS's output (separate vectors: NCCL borrows the shards and the gathered
        // buffers at once).
        let (mut a, mut b, mut out, mut full, mut cout) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut full_host = Vec::with_capacity(m * k);
        let mut b_host = Vec::new();
        let seed = check::fresh_seed();
        for (r, st) in streams.iter().enumerate() {
            let ha = check::random_bf16(rows_per * k, seed.wrapping_add(2 * r as u64));
            let hb = check::random_bf16(n * k, seed.wrapping_add(2 * r as u64 + 1));
            a.push(st.clone_htod(&ha)?);
            b.push(st.clone_htod(&hb)?);
            out.push(super::alloc::<bf16>(st, m * n, &label, "out")?);
            full.push(super::alloc::<bf16>(st, m * k, &label, "gathered A (baseline)")?);
            cout.push(super::alloc::<bf16>(st, m * n, &label, "cuBLAS out")?);
            full_host.extend_from_slice(&ha);
            b_host.push(hb);
        }
        let mut checked = None;
        if args.common.check {
            for (r, o) in out.iter_mut().enumerate() {
                check::poison(&streams[r], o)?;
            }
            for (r, o) in out.iter_mut().enumerate() {
                comms[r].allgather_gemm(&streams[r], &a[r], &b[r], o, s, opts)?;
            }
            for (r, c) in comms.iter().enumerate() {
                c.synchronize(&streams[r])?;
            }
            let mut worst = 0f64;
            for (r, st) in streams.iter().enumerate() {
                let whole = st.clone_htod(&full_host)?;
                let w = st.clone_htod(&b_host[r])?;
                let mut want = st.alloc_zeros::<f32>(m * n)?;
                blas[r].gemm_f32_out(&whole, &w, &mut want, s)?;
                let cmp = check::compare(&st.clone_dtoh(&out[r])?, &st.clone_dtoh(&want)?, None, n, k);
                if !cmp.passed() {
                    return Err(format!("{label}: rank {r} FAIL: {cmp}").into());
                }
                worst = worst.max(cmp.rel_fro_err);
            }
            checked = Some(format!("PASS (worst rel_fro_err {worst:.2e})"));
        }
        let gather = |full: &mut Vec<CudaSlice<bf16>>| -> BenchResult<()> {
            if let Some(nc) = &nccl {
                let sends: Vec<&CudaSlice<bf16>> = a.iter().collect();
                let mut recvs: Vec<&mut CudaSlice<bf16>> = full.iter_mut().collect();
                nc.all_gather(&sends, &mut recvs)?;
            }
            Ok(())
        };
        // (the baseline's gathered A once, so cuBLAS alone multiplies the same A)
        gather(&mut full)?;
        let t = super::time_fused_and_baseline(&comms, &streams, &args.common, nccl.is_some(), &label, |part| -> BenchResult<()> {
            match part {
                // (no weighted sum: time_fused_and_baseline asks for none)
                Part::Sum => return Err("bench allgather-gemm has no weighted sum".into()),
                Part::Fused => {
                    for (r, o) in out.iter_mut().enumerate() {
                        comms[r].allgather_gemm(&streams[r], &a[r], &b[r], o, s, opts)?;
                    }
                }
                Part::Comm => gather(&mut full)?,
                Part::Compute => {
                    for (r, c) in cout.iter_mut().enumerate() {
                        blas[r].gemm_bf16(&full[r], &b[r], c, s)?;
                    }
                }
            }
            Ok(())
        })?;
        let (fused, cublas, baseline, nccl_ms) = (t.fused, t.compute, t.baseline, t.comm);
        let speedup = baseline / fused;
        let overlap = cublas.max(nccl_ms) / fused;
        println!(
            "{label:<28} {baseline:>9.4} {cublas:>9.4} {nccl_ms:>9.4} {fused:>9.4} {speedup:>7.3} {overlap:>7.3}  {plan}{}",
            checked.as_ref().map_or(String::new(), |c| format!(" | {c}"))
        );
        rows.push(Row {
            label,
            m: s.m,
            n: s.n,
            k: s.k,
            world,
            config: plan.to_string(),
            baseline_ms: baseline,
            cublas_ms: cublas,
            nccl_ms,
            fused_ms: fused,
            speedup,
            overlap,
            check: checked,
        });
    }
    super::save_ranks_report(&args.common, "allgather_gemm", info, args.share_gpu, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ag: AgArgs,
    }

    /// Runs the bench with `args` (after the program name) and returns the error's exit
    /// status and text; on a machine without a GPU, anything refused before the GPUs are
    /// counted (exit 2) is told apart from the missing driver (exit 1).
    fn refused(args: &[&str]) -> (u8, String) {
        let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
        let e = run(cli.ag).unwrap_err();
        (super::super::exit_status(e.as_ref()), e.to_string())
    }

    /// Bad options are usage errors (exit 2) before any GPU is touched (helper-99: they came
    /// after the communicators, cuBLAS and NCCL, exit 1): a tile without a kernel here,
    /// --shape with M not a multiple of the --share-gpu ranks; 0 push CTAs or chunk rows are
    /// refused by the parser.
    #[test]
    fn bad_options_are_usage_errors_before_any_gpu() {
        let (code, e) = refused(&["--tile", "swap-ab-64x136-tma-store", "--no-json"]);
        assert_eq!(code, 2, "{e}");
        assert!(e.contains("--tile") && e.contains("wide-tma-store") && !e.contains("swap-ab-128"), "{e}");
        let (code, e) = refused(&["--share-gpu", "--shape", "4x8x8,3x8x8", "--no-json"]);
        assert_eq!(code, 2, "{e}");
        assert!(e.contains("--shape 3x8x8") && e.contains("multiple of the 2 ranks"), "{e}");
        let (code, e) = refused(&["--share-gpu", "--gpus", "3", "--shape", "4x8x8", "--no-json"]);
        assert_eq!(code, 2, "{e}");
        for flag in ["--push-ctas", "--chunk-rows"] {
            assert!(Cli::try_parse_from(["x", flag, "0"]).is_err(), "{flag} 0");
            assert!(Cli::try_parse_from(["x", flag, "1"]).is_ok(), "{flag} 1");
        }
    }
}
