//! `mkernel bench ring-attention`: the fused ring attention against NCCL's all-gather of the
//! keys and values then the unfused attention, on the GPUs of this machine (one process
//! driving every GPU, rank i on GPU i; `--share-gpu`: several ranks on GPU 0, where NCCL
//! cannot run, so only the fused call and the attention alone are timed).
//!
//! Per shape (each rank holds S positions of every sequence), on the same inputs and
//! streams, side by side ([`super::time_fused_and_baseline`]: one iteration of each per round,
//! in a random order, each step behind a host gate, an L2 flush and a device barrier of the
//! ranks): (a) NCCL all-gather of K and of V, then the unfused
//! attention over them (the baseline), (a_attn) the unfused attention alone on the gathered
//! keys, (c) NCCL's two all-gathers alone, (d) the fused kernel. Speedup = a / d; overlap
//! efficiency = max(a_attn, c) / d. The unfused attention is this crate's own loop (the same
//! as the fused kernel's compute CTAs, on wgmma), not cuDNN's or FlashAttention-3's: the
//! speedup isolates the overlap, not the attention's rate (TFLOP/s are printed;
//! `bench/probes/torch_sdpa.py` times PyTorch's backends on the same FLOPs).
//! `--check` first verifies every rank's fused output bit for bit against the unfused
//! attention over NCCL's gathered keys (the same loop in the same order) and rows of it
//! against an fp64 reference (`check::attention_reference`).

use std::sync::Arc;

use clap::Args;
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel::baseline::Nccl;
use mkernel::{attention, check, AttentionOptions, AttentionShape, CommConfig, Communicator, KvSources, RingAttentionOptions, SeqLayout};
use serde::Serialize;

use super::{run_info, usage, BenchResult, Common, Part};

#[derive(Args, Clone, Debug)]
pub struct RaArgs {
    #[command(flatten)]
    pub common: Common,
    /// Time these shapes instead of the default list: BxSxHxHKVxD (S: positions a rank),
    /// with a `c` suffix for a causal mask over contiguous shards (e.g. 1x4096x64x8x128c) or
    /// `cz` for a causal mask over zigzag shards (S even), comma-separated or repeated.
    #[arg(long, value_delimiter = ',', value_parser = parse_shape)]
    pub shape: Vec<AttentionShape>,
    /// Number of GPUs (ranks), 2 to 8; default: all visible. With --share-gpu, the number
    /// of ranks on GPU 0 (default 2).
    #[arg(long, value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(2..=8))]
    pub gpus: Option<usize>,
    /// Put every rank on GPU 0: checks the protocol on one GPU; no NCCL baseline.
    #[arg(long)]
    pub share_gpu: bool,
    /// Push CTAs per rank, at least 1 (default: RingAttentionOptions's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub push_ctas: Option<u32>,
    /// Positions of a sequence per arrival flag, at least 1 (default: RingAttentionOptions's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_rows: Option<u32>,
}

/// `BxSxHxHKVxD` with an optional `c` (causal) or `cz` (causal, zigzag layout) suffix,
/// checked against the fused call's shape rules at the bench's smallest world (2), in the
/// largest workspace.
pub fn parse_shape(text: &str) -> Result<AttentionShape, String> {
    let s = parse_shape_syntax(text)?;
    // (the bench's smallest world; run checks the KV of the world it gets)
    mkernel_kernels::ring_attention::check_fused_shape(s, 2, mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS).map_err(|e| format!("{text:?}: {e}"))?;
    Ok(s)
}

/// `BxSxHxHKVxD[c|cz]` read, not checked against the shape rules (`plan ring-attention`
/// refuses a bad shape in its own row, at the world it plans for).
pub fn parse_shape_syntax(text: &str) -> Result<AttentionShape, String> {
    let (dims, causal, layout) = if let Some(d) = text.strip_suffix("cz") {
        (d, true, SeqLayout::Zigzag)
    } else if let Some(d) = text.strip_suffix('c') {
        (d, true, SeqLayout::Contiguous)
    } else {
        (text, false, SeqLayout::Contiguous)
    };
    let v: Vec<u32> = dims
        .split('x')
        .map(|p| p.parse::<u32>().map_err(|_| format!("{text:?}: expected BxSxHxHKVxD[c|cz] with integers below 2^32 (e.g. 1x4096x64x8x128c)")))
        .collect::<Result<_, _>>()?;
    let [batch, seq, heads, kv_heads, head_dim] = v[..] else {
        return Err(format!("{text:?}: expected five dimensions BxSxHxHKVxD[c|cz], got {}", v.len()));
    };
    Ok(AttentionShape { batch, seq, heads, kv_heads, head_dim, causal, layout })
}

/// A shape as `--shape` takes it (`BxSxHxHKVxD`, `c` or `cz`).
pub fn tag(s: &AttentionShape) -> String {
    let mask = match (s.causal, s.layout) {
        (false, _) => "",
        (true, SeqLayout::Contiguous) => "c",
        (true, SeqLayout::Zigzag) => "cz",
    };
    format!("{}x{}x{}x{}x{}{mask}", s.batch, s.seq, s.heads, s.kv_heads, s.head_dim)
}

/// The default shapes: Llama-3-70B's attention (64 query heads, 8 key/value heads, D = 128)
/// under sequence parallelism, causal, S = 1024-16384 positions a rank over contiguous
/// shards and 4096, 16384 over zigzag ones (the load-balanced layout); one full-mask shape;
/// and a D = 64 model (16 heads, no grouping).
pub fn shapes() -> Vec<(String, AttentionShape)> {
    let l70 = |seq, causal, layout| AttentionShape { batch: 1, seq, heads: 64, kv_heads: 8, head_dim: 128, causal, layout };
    let mut v: Vec<(String, AttentionShape)> =
        [1024u32, 4096, 16384].iter().map(|&s| (format!("llama70b causal S={s}"), l70(s, true, SeqLayout::Contiguous))).collect();
    v.extend([4096u32, 16384].iter().map(|&s| (format!("llama70b causal zigzag S={s}"), l70(s, true, SeqLayout::Zigzag))));
    v.push(("llama70b full S=4096".into(), l70(4096, false, SeqLayout::Contiguous)));
    v.push(("d64 full S=8192".into(), AttentionShape { batch: 1, seq: 8192, heads: 16, kv_heads: 16, head_dim: 64, causal: false, layout: SeqLayout::Contiguous }));
    v
}

/// The workspace (elements, `CommConfig::max_output_elems`) the bench creates its
/// communicators with for `shapes` on `world` ranks, and `plan ring-attention` plans with
/// unless given --max-output-elems: the largest gathered keys and values (world x 2 x B x S x
/// Hkv x D) of the shapes a communicator can run (the fused call's shape rules, in the
/// largest workspace; the others the bench refuses before any GPU, the plan in their rows).
pub(crate) fn workspace_elems(shapes: &[(String, AttentionShape)], world: u32) -> u64 {
    let runs = |s: &AttentionShape| mkernel_kernels::ring_attention::check_fused_shape(*s, world, mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS).is_ok();
    super::largest_workspace(shapes.iter().filter(|(_, s)| runs(s)).map(|(_, s)| s.gathered_elems(world)))
}

#[derive(Serialize)]
struct Row {
    label: String,
    shape: String,
    world: usize,
    config: String,
    baseline_ms: f64,
    attention_ms: f64,
    nccl_ms: f64,
    fused_ms: f64,
    speedup: f64,
    overlap: f64,
    /// The last rank's rate in the fused call (causal: the rank with the most keys), TFLOP/s.
    fused_tflops: f64,
    check: Option<String>,
}

pub fn run(args: RaArgs) -> BenchResult<()> {
    super::check_out_dir(&args.common)?;
    if let Some(s) = super::first_repeat(&args.shape) {
        return Err(usage(format!("--shape {} is listed twice (each shape is run once)", tag(s))));
    }
    // (--filter before the driver: a filter matching nothing is a usage error with or without a GPU)
    let list = if args.shape.is_empty() { shapes() } else { args.shape.iter().map(|s| (format!("shape {}", tag(s)), *s)).collect() };
    let list = super::filter_shapes_by(list, args.common.filter.as_deref(), tag)?;
    let present = mkernel::device_count()?;
    let world = if args.share_gpu { args.gpus.unwrap_or(2) } else { args.gpus.unwrap_or(present) };
    if !args.share_gpu && (world < 2 || world > present) {
        return Err(usage(format!("--gpus: ring attention needs 2 ranks or more, and {world} ranks need as many GPUs ({present} present); --share-gpu puts them on GPU 0")));
    }
    let devices: Vec<usize> = if args.share_gpu { vec![0; world] } else { (0..world).collect() };
    for (label, s) in &list {
        // (before the communicators: their workspace is sized by the largest shape's KV)
        mkernel_kernels::ring_attention::check_gathered_fits(*s, world as u32, mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS)
            .map_err(|e| usage(format!("{label}: {e}")))?;
    }
    let max = workspace_elems(&list, world as u32);
    let comms = Communicator::local_group(&devices, CommConfig { max_output_elems: max, ..Default::default() })?;
    let opts = RingAttentionOptions { push_ctas: args.push_ctas, chunk_rows: args.chunk_rows, softmax_scale: None };
    let mut plans = Vec::new();
    for (label, s) in &list {
        plans.push(comms[0].plan_ring_attention(*s, opts).map_err(|e| usage(format!("{label}: {e}")))?);
    }
    let streams: Vec<Arc<CudaStream>> = comms.iter().map(|c| c.context().new_stream()).collect::<Result<_, _>>()?;
    let nccl = if args.share_gpu { None } else { Some(Nccl::local_group(&streams)?) };
    let info = run_info(streams[0].context())?;
    println!("# mkernel bench ring-attention: {world} ranks on {} ({}), commit {}", if args.share_gpu { "GPU 0".to_string() } else { format!("{world} GPUs") }, info.device, info.commit);
    println!("{:<36} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>7}  config / check", "shape", "base ms", "attn", "NCCL", "fused ms", "speedup", "overlap", "TFLOP/s");
    let mut rows = Vec::new();
    for ((label, s), plan) in list.into_iter().zip(plans) {
        let (qn, kn) = (s.q_elems() as usize, s.kv_elems() as usize);
        let seed = check::fresh_seed();
        let (mut q, mut k, mut v, mut out, mut k_all, mut v_all, mut uout) = (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut host = Vec::new();
        for (r, st) in streams.iter().enumerate() {
            let (hq, hk, hv) = (
                check::random_bf16(qn, seed.wrapping_add(3 * r as u64)),
                check::random_bf16(kn, seed.wrapping_add(3 * r as u64 + 1)),
                check::random_bf16(kn, seed.wrapping_add(3 * r as u64 + 2)),
            );
            q.push(st.clone_htod(&hq)?);
            k.push(st.clone_htod(&hk)?);
            v.push(st.clone_htod(&hv)?);
            out.push(super::alloc::<bf16>(st, qn, &label, "out")?);
            k_all.push(super::alloc::<bf16>(st, world * kn, &label, "gathered K (baseline)")?);
            v_all.push(super::alloc::<bf16>(st, world * kn, &label, "gathered V (baseline)")?);
            uout.push(super::alloc::<bf16>(st, qn, &label, "unfused out")?);
            host.push((hq, hk, hv));
        }
        // The baseline's gathered K and V: NCCL's all-gathers (or, sharing a GPU, copies of
        // every rank's host data).
        let gather = |k_all: &mut Vec<CudaSlice<bf16>>, v_all: &mut Vec<CudaSlice<bf16>>| -> BenchResult<()> {
            match &nccl {
                Some(nc) => {
                    let (ks, vs): (Vec<&CudaSlice<bf16>>, Vec<&CudaSlice<bf16>>) = (k.iter().collect(), v.iter().collect());
                    nc.all_gather(&ks, &mut k_all.iter_mut().collect::<Vec<_>>())?;
                    nc.all_gather(&vs, &mut v_all.iter_mut().collect::<Vec<_>>())?;
                }
                None => {
                    let (hk, hv): (Vec<bf16>, Vec<bf16>) = (host.iter().flat_map(|h| h.1.clone()).collect(), host.iter().flat_map(|h| h.2.clone()).collect());
                    for (r, st) in streams.iter().enumerate() {
                        st.memcpy_htod(&hk, &mut k_all[r])?;
                        st.memcpy_htod(&hv, &mut v_all[r])?;
                    }
                }
            }
            Ok(())
        };
        gather(&mut k_all, &mut v_all)?;
        let unfused = |r: usize, o: &mut CudaSlice<bf16>, k_all: &[CudaSlice<bf16>], v_all: &[CudaSlice<bf16>]| -> BenchResult<()> {
            let sources = KvSources { world: world as u32, rank: r as u32 };
            attention(&streams[r], &q[r], &k_all[r], &v_all[r], o, None, s, AttentionOptions { softmax_scale: Some(plan.softmax_scale), sources, ctas: None })?;
            Ok(())
        };
        let mut checked = None;
        if args.common.check {
            for (r, o) in out.iter_mut().enumerate() {
                check::poison(&streams[r], o)?;
                check::poison(&streams[r], &mut uout[r])?;
            }
            for (r, o) in out.iter_mut().enumerate() {
                comms[r].ring_attention(&streams[r], &q[r], &k[r], &v[r], o, None, s, opts)?;
            }
            for r in 0..world {
                comms[r].synchronize(&streams[r])?;
                unfused(r, &mut uout[r], &k_all, &v_all)?;
                streams[r].synchronize()?;
            }
            let hk: Vec<&[bf16]> = host.iter().map(|h| h.1.as_slice()).collect();
            let hv: Vec<&[bf16]> = host.iter().map(|h| h.2.as_slice()).collect();
            let mut worst = 0f64;
            for (r, st) in streams.iter().enumerate() {
                let (got, base) = (st.clone_dtoh(&out[r])?, st.clone_dtoh(&uout[r])?);
                if let Some(i) = (0..qn).find(|&i| got[i].to_bits() != base[i].to_bits()) {
                    return Err(format!("{label}: rank {r} FAIL: fused and unfused outputs differ first at element {i} ({} vs {})", got[i], base[i]).into());
                }
                // fp64 rows: the first and last position of each sequence, and 62 spread ones, of heads 0 and H - 1.
                let (b_n, seq, h_n, d) = (s.batch as usize, s.seq as usize, s.heads as usize, s.head_dim as usize);
                let mut sample = Vec::new();
                for b in 0..b_n {
                    for h in [0, h_n - 1] {
                        for i in (0..64).map(|j| j * (seq - 1) / 63) {
                            sample.push((b, h, i));
                        }
                    }
                }
                sample.dedup();
                let refs = check::attention_reference(&host[r].0, &hk, &hv, s, r, plan.softmax_scale, &sample)?;
                let pick: Vec<bf16> = sample.iter().flat_map(|&(b, h, i)| got[((b * seq + i) * h_n + h) * d..][..d].to_vec()).collect();
                let want: Vec<f32> = refs.iter().flat_map(|x| x.out.iter().map(|&o| o as f32)).collect();
                let scale: Vec<f32> = refs.iter().flat_map(|x| x.scale.iter().map(|&o| o as f32)).collect();
                let cmp = check::compare(&pick, &want, Some(&scale), d, 0);
                if !cmp.passed() {
                    return Err(format!("{label}: rank {r} FAIL against the fp64 reference: {cmp}").into());
                }
                worst = worst.max(cmp.rel_fro_err);
            }
            checked = Some(format!("PASS (fused == unfused bit for bit; sampled rows' worst rel_fro_err {worst:.2e})"));
        }
        let t = super::time_fused_and_baseline(&comms, &streams, &args.common, nccl.is_some(), &label, |part| -> BenchResult<()> {
            match part {
                // (no weighted sum: time_fused_and_baseline asks for none)
                Part::Sum => return Err("bench ring-attention has no weighted sum".into()),
                Part::Fused => {
                    for (r, o) in out.iter_mut().enumerate() {
                        comms[r].ring_attention(&streams[r], &q[r], &k[r], &v[r], o, None, s, opts)?;
                    }
                }
                Part::Comm => gather(&mut k_all, &mut v_all)?,
                Part::Compute => {
                    for (r, o) in uout.iter_mut().enumerate() {
                        unfused(r, o, &k_all, &v_all)?;
                    }
                }
            }
            Ok(())
        })?;
        let (fused, attn, baseline, nccl_ms) = (t.fused, t.compute, t.baseline, t.comm);
        let speedup = baseline / fused;
        let overlap = attn.max(nccl_ms) / fused;
        let tflops = s.flops(world as u32, world as u32 - 1) / (fused * 1e-3) / 1e12;
        println!(
            "{label:<36} {baseline:>9.4} {attn:>9.4} {nccl_ms:>9.4} {fused:>9.4} {speedup:>7.3} {overlap:>7.3} {tflops:>7.1}  {plan}{}",
            checked.as_ref().map_or(String::new(), |c| format!(" | {c}"))
        );
        rows.push(Row {
            label,
            shape: tag(&s),
            world,
            config: plan.to_string(),
            baseline_ms: baseline,
            attention_ms: attn,
            nccl_ms,
            fused_ms: fused,
            speedup,
            overlap,
            fused_tflops: tflops,
            check: checked,
        });
    }
    super::save_ranks_report(&args.common, "ring_attention", info, args.share_gpu, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ra: RaArgs,
    }

    /// A repeated --shape is a usage error (exit 2) before any GPU is touched; a bad shape,
    /// 0 push CTAs or chunk rows are refused by the parser.
    #[test]
    fn bad_options_are_refused_before_any_gpu() {
        let cli = Cli::try_parse_from(["x", "--shape", "1x64x2x2x64,1x64x2x2x64", "--no-json"]).unwrap();
        let e = run(cli.ra).unwrap_err();
        assert_eq!(super::super::exit_status(e.as_ref()), 2, "{e}");
        assert!(e.to_string().contains("listed twice"), "{e}");
        for bad in [["--shape", "1x64x2x2x96"], ["--push-ctas", "0"], ["--chunk-rows", "0"]] {
            assert!(Cli::try_parse_from(["x", bad[0], bad[1]]).is_err(), "{bad:?}");
        }
        assert!(Cli::try_parse_from(["x", "--chunk-rows", "1", "--push-ctas", "1"]).is_ok());
    }

    #[test]
    fn shapes_parse_and_bad_ones_are_named() {
        let s = parse_shape("2x4096x64x8x128c").unwrap();
        assert_eq!((s.batch, s.seq, s.heads, s.kv_heads, s.head_dim, s.causal), (2, 4096, 64, 8, 128, true));
        assert!(!parse_shape("1x10x2x2x64").unwrap().causal);
        assert_eq!(tag(&s), "2x4096x64x8x128c");
        let z = parse_shape("1x4096x64x8x128cz").unwrap();
        assert!(z.causal && z.layout == SeqLayout::Zigzag, "{z}");
        assert_eq!(tag(&z), "1x4096x64x8x128cz");
        assert_eq!(parse_shape("1x4096x64x8x128c").unwrap().layout, SeqLayout::Contiguous);
        let e = parse_shape("1x4095x64x8x128cz").unwrap_err();
        assert!(e.contains("even"), "{e}");
        for bad in ["1x2x3", "1x4096x64x8x96", "1x4096x6x4x128", "0x1x1x1x64", "axbxcxdxe", "1x1x1x1x64cc"] {
            assert!(parse_shape(bad).is_err(), "{bad}");
        }
        // Gathered keys and values past 2^40 elements: the largest workspace's 2^37 binds.
        let e = parse_shape("512x1048576x8x8x128").unwrap_err();
        assert!(e.contains("largest communicator workspace") && !e.contains("2^40"), "{e}");
        for (label, s) in shapes() {
            assert!(mkernel_kernels::ring_attention::check_shape(s, 2).is_ok(), "{label}");
        }
    }
}
