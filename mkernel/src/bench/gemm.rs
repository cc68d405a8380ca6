//! `mkernel bench gemm`: our Hopper GEMM vs cuBLAS, same inputs, one GPU.

use clap::Args;
use cudarc::driver::{CudaContext, CudaSlice};
use half::bf16;
use mkernel::baseline::Cublas;
use mkernel::check;
use mkernel::{GemmOptions, GemmShape, TileConfig};
use serde::Serialize;

use super::{median, rotation_sets, run_info, time_rounds_ms, BenchResult, Common, Pace, Warmup, GATE_TIMEOUT};

#[derive(Args, Clone, Debug)]
pub struct GemmArgs {
    #[command(flatten)]
    pub common: Common,
    /// GPU to run on (an index, 0 or more).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = parse_device)]
    pub device: usize,
    /// Force a tile configuration: wide (128x256), narrow (128x128) or m64-wide (64x256),
    /// each also with the TMA-store epilogue (wide-tma-store, narrow-tma-store,
    /// m64-wide-tma-store), which also comes in 2-CTA clusters sharing B by TMA multicast
    /// (wide-tma-store-c2, narrow-tma-store-c2, m64-wide-tma-store-c2); and
    /// m64-narrow-tma-store (64x128); swapped-operand tiles swap-ab-64xR (R rows of A
    /// per tile, a multiple of 8 up to 256) and swap-ab-64xR-c2 (R a multiple of 16, 2-CTA
    /// clusters sharing A), swap-ab-64xR-tma-store, or swap-ab / swap-ab-c2: the one fitted
    /// to each shape's M (M <= 256: use with --shape or a --filter of small-M shapes);
    /// swap-ab-128xR[-tma-store] (128 rows of B, R in 64..=256), also in 2-CTA clusters
    /// sharing A (swap-ab-128xR-c2, swap-ab-128xR-tma-store-c2; R a multiple of 16), and
    /// swap-ab-128-fit (the Registers one fitted to M, 257 <= M <= 8192); cols-128xC (128 x
    /// C, C = 8, 16, ..., 120 or 136, 144, ..., 248, Registers epilogue; cols-128xC-tma-store with the TMA
    /// store; cols-128xC-tma-store-c2, C = 48, 64, 72, 80, ..., 120 and 136, 144, ..., 248, in 2-CTA clusters sharing B;
    /// cols-128xC-tma-store-n2, C = 48, 64, ..., 160 but 128, and narrow-tma-store-n2, in
    /// 2-CTA clusters along N sharing A, never split; narrow-tma-store-n2 is the default's last
    /// step where it applies, bench/NOTES.md 38.1) and cols-fit / cols-fit-tma-store (the one
    /// fitted to N on this GPU's SMs, the 128 x 128 tile where 136 columns would make as many
    /// tiles in one wave, or the default where the wide tile fits best). Default: the heuristic, which takes
    /// cols-128xN-tma-store for N <= 32 and swap-ab-64xR-tma-store (R = 64, 128 or 256) up
    /// to N = 160 (NOTES 23-24), the -c2 tile when K % 64 != 0 (bench/NOTES.md 13.3),
    /// swap-ab-64x64-tma-store where the split rule splits few tiles with K <= 28672 (NOTES
    /// 24.3; with the bench's workspace) and for few tiles with K = 1024-4095 (unsplit, NOTES
    /// 24.4), swapped-operand tiles for small M
    /// (NOTES 15), where a work model says they win the 128-row swapped ones fitted to M
    /// (TMA-store epilogue where N % 8 == 0) and the column-fitted ones (NOTES 16, 17.6),
    /// and the 2-CTA twins of the 128 x 256 TMA-store tile and of the column-fitted ones of
    /// 136..248 columns (M >= 1024, K >= 4096, row blocks in pairs; NOTES 17.4, 25.2, 50.3)
    /// and of the fitted swapped one (height a multiple of 16, K >= 4096, N's 128-row
    /// blocks in pairs; NOTES 17.5-17.6). Where the clustered 128 x 256 tile is picked and a
    /// clustered 176-, 192- or 208-column tile cuts the busiest SM's work to at most 99.5%
    /// of it, that one instead (NOTES 27.2).
    #[arg(long)]
    pub tile: Option<String>,
    /// Time these shapes instead of the built-in list: MxNxK, comma-separated or
    /// repeated (e.g. --shape 4096x4096x1000,2048x8192x2048); --filter still applies
    /// (their labels are "shape MxNxK").
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, value_parser = parse_shape)]
    pub shape: Vec<GemmShape>,
    /// Time the linear layers of common open models instead of the built-in list: the
    /// qkv, o, gate_up and down projections of Llama-3-8B, Llama-3-70B and Qwen2.5-32B
    /// sharded for tensor parallelism 1, 2, 4 and 8 (qkv and gate_up split along N, o and
    /// down along K), at M = 1, 16, 64, 256, 1024 and 4096 tokens, and DeepSeek-V3's routed
    /// experts and router (listed in mkernel/src/bench/gemm.rs, `model_shapes`). Labels such as "M=256 llama3-70b tp4 down",
    /// so --filter "M=16 " (with the space) or "tp8" picks a part.
    #[arg(long, conflicts_with = "shape")]
    pub models: bool,
    /// K-slices for the tiles left over after our GEMM's full waves: off, auto (default)
    /// or a count (`mkernel::LastWaveSplit`; TMA-store tiles without clusters, e.g. with
    /// --tile swap-ab-128x136-tma-store). Our GEMM always runs with a workspace
    /// (`mkernel::gemm_with_workspace`).
    #[arg(long, allow_negative_numbers = true, value_parser = super::gemm_allreduce::parse_split_last_wave)]
    pub split_last_wave: Option<mkernel::LastWaveSplit>,
    /// With --tile: split the forced tile's K loop as the few-tiles split rule would split
    /// it on each shape (`TileConfig::few_tiles_slices`: where it makes at most SMs / 2
    /// tiles and K >= 4096; from K = 1024 for the small-N column tiles, 2048 for the 64 x 64
    /// swapped TMA-store tile), unsplit elsewhere; to time a tile as the default would run
    /// it if the heuristic chose it. Not with --split-last-wave.
    #[arg(long, requires = "tile", conflicts_with = "split_last_wave")]
    pub split_like_rule: bool,
    /// Hold each timed round behind a host gate (`mkernel::HostGate`): its steps run back
    /// to back on the GPU, so the times are the GPU's alone, without the host's enqueueing
    /// (which bounds small GEMMs otherwise: bench/NOTES.md 23.5). The host's time per call
    /// is printed either way.
    #[arg(long)]
    pub host_gate: bool,
    /// Calls per timed step, enqueued back to back with nothing between them (as a model's
    /// layers run), 1..=1000; the times are per call. Above 1, our GEMM is also timed with
    /// its programmatic dependent launch off (`GemmOptions::dependent_launch`), the "serial"
    /// column: what PDL saves between consecutive calls. Default 1 (our GEMM then launched
    /// serialized, so that none of it runs before its step's start event).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub back_to_back: u32,
}

/// --shape: "MxNxK", three whole numbers that pass the GEMM's shape rules
/// (`GemmShape::validate_dims`: 1..=2^31-256, K % 8 == 0), checked before any device is opened.
pub(crate) fn parse_shape(v: &str) -> Result<GemmShape, String> {
    if v.trim().is_empty() {
        // (clap splits the list at commas and shows only this piece)
        return Err("an empty shape in the list (two commas, or a comma at an end); expected MxNxK, e.g. 4096x4096x1000".to_string());
    }
    let dims: Vec<&str> = v.trim().split('x').collect();
    let [m, n, k] = dims[..] else {
        return Err(format!("'{v}': expected MxNxK, e.g. 4096x4096x1000"));
    };
    let dim = |d: &str, name: &str| -> Result<u32, String> {
        match d.trim().parse::<u32>() {
            Ok(x) if x >= 1 && x as usize <= mkernel_kernels::gemm::MAX_DIM => Ok(x),
            _ => Err(format!("'{v}': {name} must be a whole number in 1..={} (2^31 - 256), got '{d}'", mkernel_kernels::gemm::MAX_DIM)),
        }
    };
    let s = GemmShape { m: dim(m, "M")?, n: dim(n, "N")?, k: dim(k, "K")? };
    s.validate_dims().map_err(|e| format!("'{v}': {e}"))?;
    Ok(s)
}

/// --device: a GPU index, 0 or more (the GPU count is checked once it is known).
fn parse_device(v: &str) -> Result<usize, String> {
    match v.trim().parse::<i64>() {
        Ok(d) => usize::try_from(d).map_err(|_| format!("GPU {d}: must be a GPU index, 0 or more (below the number of GPUs present)")),
        Err(e) => Err(format!("'{v}' is not a whole number ({e})")),
    }
}

/// The shape list of the foundation issue: square, LLM layers, odd sizes.
pub fn shapes() -> Vec<(String, GemmShape)> {
    let mut v = Vec::new();
    let mut add = |label: String, m: u32, n: u32, k: u32| v.push((label, GemmShape { m, n, k }));
    for s in [4096, 8192] {
        add(format!("square {s}"), s, s, s);
    }
    for t in [2048, 8192] {
        add(format!("llama70b-tp2 qkv t{t}"), t, 5120, 8192);
        add(format!("llama70b-tp2 o t{t}"), t, 8192, 4096);
        add(format!("llama70b-tp2 gate_up t{t}"), t, 28672, 8192);
        add(format!("llama70b-tp2 down t{t}"), t, 8192, 14336);
        add(format!("deepseek-v3 down t{t}"), t, 7168, 9216);
        add(format!("deepseek-v3 up t{t}"), t, 9216, 7168);
    }
    for m in [1, 127, 129, 2049] {
        add(format!("odd M={m}"), m, 8192, 4096);
    }
    add("odd N=2880".into(), 4096, 2880, 4096);
    add("odd K=1000".into(), 4096, 4096, 1000);
    v
}

/// The dense models of `--models`: name, hidden size, FFN intermediate size, query heads,
/// key-value heads, head dimension (from the models' published configurations).
pub(crate) const DENSE_MODELS: [(&str, u32, u32, u32, u32, u32); 3] = [
    ("llama3-8b", 4096, 14336, 32, 8, 128),
    ("llama3-70b", 8192, 28672, 64, 8, 128),
    ("qwen2.5-32b", 5120, 27648, 40, 8, 128),
];

/// `--models`: per dense model of [`DENSE_MODELS`] and tensor-parallel size tp in 1, 2, 4,
/// 8, the four projections of a layer on one rank (C[M, N] = A[M, K] B[N, K]^T):
/// qkv N = (q + 2 kv) x head_dim / tp, K = hidden (key-value heads replicated where tp
/// exceeds them); o N = hidden, K = q x head_dim / tp; gate_up N = 2 ffn / tp, K =
/// hidden; down N = hidden, K = ffn / tp; at M = 1, 16, 64, 256, 1024, 4096. Then
/// DeepSeek-V3 (hidden 7168, routed experts of 2048, 256 of them): an expert's gate_up
/// (N = 4096, K = 7168) and down (N = 7168, K = 2048) at M = 16, 64, 256, 1024 tokens per
/// expert, and the router (N = 256, K = 7168) at M = 1, 64, 1024, 4096.
pub fn model_shapes() -> Vec<(String, GemmShape)> {
    let mut v = Vec::new();
    for (name, hidden, ffn, q, kv, hd) in DENSE_MODELS {
        for tp in [1u32, 2, 4, 8] {
            let kv_rank = (kv / tp).max(1);
            let layers = [
                ("qkv", (q / tp + 2 * kv_rank) * hd, hidden),
                ("o", hidden, q * hd / tp),
                ("gate_up", 2 * ffn / tp, hidden),
                ("down", hidden, ffn / tp),
            ];
            for (layer, n, k) in layers {
                for m in [1u32, 16, 64, 256, 1024, 4096] {
                    v.push((format!("M={m} {name} tp{tp} {layer}"), GemmShape { m, n, k }));
                }
            }
        }
    }
    for m in [16u32, 64, 256, 1024] {
        v.push((format!("M={m} deepseek-v3 expert gate_up"), GemmShape { m, n: 4096, k: 7168 }));
        v.push((format!("M={m} deepseek-v3 expert down"), GemmShape { m, n: 7168, k: 2048 }));
    }
    for m in [1u32, 64, 1024, 4096] {
        v.push((format!("M={m} deepseek-v3 router"), GemmShape { m, n: 256, k: 7168 }));
    }
    v
}

#[derive(Serialize)]
struct Row {
    label: String,
    m: u32,
    n: u32,
    k: u32,
    tile: String,
    /// K-slices per left-over tile of our GEMM (1: no split; `--split-last-wave`).
    split_slices: u32,
    ours_ms: f64,
    ours_tflops: f64,
    cublas_ms: f64,
    cublas_tflops: f64,
    ratio_to_cublas: f64,
    /// Median host time of one call (enqueueing it), microseconds, over every timed call.
    ours_host_us: f64,
    cublas_host_us: f64,
    /// Whether the timed rounds were held behind a host gate (GPU time alone).
    host_gate: bool,
    /// Calls per timed step, back to back (`--back-to-back`); the times are per call.
    back_to_back: u32,
    /// Our GEMM with its programmatic dependent launch off, per call (back to back only).
    ours_serial_ms: Option<f64>,
    check: Option<String>,
    floor_flop_ms: f64,
    floor_bytes_ms: f64,
}

pub fn run(args: GemmArgs) -> BenchResult<()> {
    // "swap-ab" / "swap-ab-c2": the swapped-operand tile fitted to each shape's M
    // (cluster size 1 or 2); "swap-ab-128-fit": the 128-row one fitted to M > 256 (0);
    // "cols-fit": the 128-row tile whose width fits N (3).
    let fitted_swap = match args.tile.as_deref() {
        Some("swap-ab") => Some(1),
        Some("swap-ab-c2") => Some(2),
        Some("swap-ab-128-fit") => Some(0),
        Some("cols-fit") => Some(3),
        Some("cols-fit-tma-store") => Some(4),
        _ => None,
    };
    let fitted = |cm: u32, s: &GemmShape, sm_count: u32| match cm {
        0 => TileConfig::swapped_fit(s.m, s.n, sm_count),
        3 => TileConfig::cols_fit(s.m, s.n, sm_count),
        4 => TileConfig::cols_fit(s.m, s.n, sm_count).map(TileConfig::with_tma_store),
        _ => TileConfig::swapped_for(s.m, cm),
    };
    let tile = if fitted_swap.is_some() { None } else { super::parse_tile(args.tile.as_deref(), true)? };
    super::check_unique_shapes(&args.shape)?;
    let list = if args.models {
        model_shapes()
    } else if args.shape.is_empty() {
        shapes()
    } else {
        args.shape.iter().map(|s| (format!("shape {}x{}x{}", s.m, s.n, s.k), *s)).collect()
    };
    let list = super::filter_shapes(list, args.common.filter.as_deref())?;
    // A forced tile must be able to write every listed shape (the TMA-store epilogue needs
    // N % 8 == 0): refused here rather than found out on the GPU.
    if let Some(cm) = fitted_swap {
        // (the fitted Registers and clustered tiles never split; cols-fit-tma-store's do)
        if cm < 4 && (args.split_like_rule || matches!(args.split_last_wave, Some(mkernel::LastWaveSplit::Slices(n)) if n >= 2)) {
            let flag = if args.split_like_rule { "--split-like-rule" } else { "--split-last-wave" };
            return Err(super::usage(format!("{flag} with --tile {}: only TMA-store tiles without clusters split their last wave (this name fits Registers-epilogue or clustered tiles)", args.tile.as_deref().unwrap_or_default())));
        }
        // (any SM count will do for these rules; the real one is used below. A shape no
        // column-fitted tile fits better than the wide one takes the default.)
        if let Some((label, s)) = list.iter().find(|(_, s)| cm < 3 && fitted(cm, s, 1).is_none()) {
            let rule = if cm == 0 { "fits 257 <= M <= 8192" } else { "holds at most 256 rows of A" };
            return Err(super::usage(format!("--tile {}: this swapped-operand tile {rule}, but '{label}' has M={}", args.tile.as_deref().unwrap_or_default(), s.m)));
        }
    }
    if let Some(t) = tile {
        if let Some((label, s)) = list.iter().find(|(_, s)| t.check_output(s.n).is_err()) {
            return Err(super::usage(format!("--tile {}: the TMA-store epilogue needs N % 8 == 0, but '{label}' has N={}; use a tile without -tma-store (wide, narrow, m64-wide)", t.name(), s.n)));
        }
        if (args.split_like_rule || matches!(args.split_last_wave, Some(mkernel::LastWaveSplit::Slices(n)) if n >= 2)) && !t.can_split_last_wave() {
            let flag = if args.split_like_rule { "--split-like-rule" } else { "--split-last-wave" };
            return Err(super::usage(format!("{flag} with --tile {}: only TMA-store tiles without clusters split their last wave", t.name())));
        }
    }
    super::check_out_dir(&args.common)?;
    let present = mkernel::device_count()?;
    if args.device >= present {
        return Err(super::usage(format!("--device {}: {present} GPU(s) present", args.device)));
    }
    let ctx = CudaContext::new(args.device)?;
    let stream = ctx.new_stream()?;
    let info = run_info(&ctx)?;
    let mut blas = Cublas::new(&stream)?;
    let opts = GemmOptions { tile, split_last_wave: args.split_last_wave.unwrap_or_default(), ..Default::default() };
    let mut workspace = mkernel::GemmWorkspace::new(&stream)?;
    let c = &args.common;
    let b2b = args.back_to_back as usize;
    println!("# mkernel bench gemm on {} ({} SMs), {}, commit {}", info.device, info.sm_count, info.driver, info.commit);
    if b2b > 1 {
        println!("# {b2b} calls back to back per step, times per call; serial: our GEMM without programmatic dependent launch");
    }
    println!(
        "{:<32} {:>6} {:>6} {:>6} {:>9} {:>8} {:>9} {:>8} {:>6}  {}",
        "shape", "M", "N", "K", "ours ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ratio", "check"
    );
    let mut rows = Vec::new();
    let mut failures = 0;
    for (label, s) in list {
        let opts = match fitted_swap {
            Some(cm) => GemmOptions { tile: fitted(cm, &s, info.sm_count), ..opts },
            None => opts,
        };
        let opts = match opts.tile.and_then(|t| t.few_tiles_slices(s, info.sm_count)).filter(|_| args.split_like_rule) {
            Some(slices) => GemmOptions { split_last_wave: mkernel::LastWaveSplit::Slices(slices), ..opts },
            None => opts,
        };
        // One call a step: ours launched serialized (with PDL its set-up could run before the
        // step's start event, behind an earlier call of ours); back to back with PDL, as the
        // default runs, next to the serialized launch.
        let opts = GemmOptions { dependent_launch: b2b > 1, ..opts };
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let sets = rotation_sets(((m * k + n * k) * 2) as u64);
        let mut a_sets: Vec<CudaSlice<bf16>> = Vec::new();
        let mut b_sets: Vec<CudaSlice<bf16>> = Vec::new();
        let seed = check::fresh_seed();
        for i in 0..sets {
            let mut a = super::alloc::<bf16>(&stream, m * k, &label, "A [M, K] bf16")?;
            let mut b = super::alloc::<bf16>(&stream, n * k, &label, "B [N, K] bf16")?;
            check::fill_uniform(&stream, &mut a, seed ^ (2 * i as u64 + 1))?;
            check::fill_uniform(&stream, &mut b, seed ^ (2 * i as u64 + 2))?;
            a_sets.push(a);
            b_sets.push(b);
        }
        let mut c_ours = super::alloc::<bf16>(&stream, m * n, &label, "C [M, N] bf16 (ours)")?;
        let mut c_blas = super::alloc::<bf16>(&stream, m * n, &label, "C [M, N] bf16 (cuBLAS)")?;
        let verdict = if c.check {
            check::poison(&stream, &mut c_ours)?;
            mkernel::gemm_with_workspace(&stream, &a_sets[0], &b_sets[0], &mut c_ours, s, opts, &mut workspace)?;
            let mut reference = super::alloc::<f32>(&stream, m * n, &label, "the fp32 reference C [M, N]")?;
            blas.gemm_f32_out(&a_sets[0], &b_sets[0], &mut reference, s)?;
            let got = stream.clone_dtoh(&c_ours)?;
            let want = stream.clone_dtoh(&reference)?;
            let cmp = check::compare(&got, &want, None, n, k);
            // Cross-check the GPU reference itself on a few rows in fp64.
            let a_host = stream.clone_dtoh(&a_sets[0])?;
            let b_host = stream.clone_dtoh(&b_sets[0])?;
            let rows_to_check: Vec<usize> = [0, m / 2, m - 1].into_iter().collect();
            let exact = check::reference_rows_f64(&a_host, &b_host, &rows_to_check, n, k)?;
            // The reference must be well inside the tolerance it is used with: each
            // element within REL_TOL / 4 of the fp64 value, relative to |value| + the
            // row's rms (cuBLAS's tensor-core fp32 accumulation is not IEEE-exact: at
            // K = 14336 single elements were measured 1.1e-3 * (1 + |C|) off).
            let mut ref_err = 0f64;
            for ri in 0..rows_to_check.len() {
                let row = &exact[ri * n..(ri + 1) * n];
                let rms = (row.iter().map(|x| x * x).sum::<f64>() / n as f64).sqrt();
                for (j, &x) in row.iter().enumerate() {
                    let d = (want[rows_to_check[ri] * n + j] as f64 - x).abs() / (x.abs() + rms).max(f64::MIN_POSITIVE);
                    ref_err = ref_err.max(d);
                }
            }
            let ok = cmp.passed() && ref_err < check::REL_TOL / 4.0;
            if !ok {
                failures += 1;
            }
            // The same criterion on cuBLAS's bf16 output (informative: a calibration of the
            // check, not part of the verdict).
            check::poison(&stream, &mut c_blas)?;
            blas.gemm_bf16(&a_sets[0], &b_sets[0], &mut c_blas, s)?;
            let blas_cmp = check::compare(&stream.clone_dtoh(&c_blas)?, &want, None, n, k);
            Some(format!(
                "{} ({cmp}; fp32 reference vs fp64 rows: {ref_err:.1e}; cuBLAS bf16 output: {} bad; seed {seed:#x})",
                if ok { "PASS" } else { "FAIL" },
                blas_cmp.bad
            ))
        } else {
            None
        };
        let mut used = mkernel::GemmRun { tile: TileConfig::WIDE, split_slices: 1, grid: 0 };
        let mut host_us: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        // Variants: 0 ours, 1 cuBLAS, and back to back 2 ours without dependent launch.
        let variants = if b2b > 1 { 3 } else { 2 };
        let serial = GemmOptions { dependent_launch: false, ..opts };
        let mut gate = if args.host_gate { Some(mkernel::HostGate::new(&ctx)?) } else { None };
        let pace = |at: Pace| -> BenchResult<()> {
            match (at, gate.as_mut()) {
                (Pace::RoundStart, Some(g)) => g.hold(&stream, GATE_TIMEOUT)?,
                (Pace::RoundEnd, Some(g)) => g.open(),
                _ => {}
            }
            Ok(())
        };
        // Side by side, round-robin (time_rounds_ms: the same clocks for both).
        // (consecutive steps take consecutive input sets: neither finds the other's in L2)
        // (back to back, call j of step i takes input set (i x calls + j) % sets)
        let mut times = time_rounds_ms(std::slice::from_ref(&stream), Warmup { rounds: c.warmup, ms: c.warmup_ms }, Ok, pace, c.iters, variants, |v, i| {
            for j in 0..b2b {
                let set = (i * b2b + j) % sets;
                let t0 = std::time::Instant::now();
                match v {
                    0 => used = mkernel::gemm_with_workspace(&stream, &a_sets[set], &b_sets[set], &mut c_ours, s, opts, &mut workspace)?,
                    2 => used = mkernel::gemm_with_workspace(&stream, &a_sets[set], &b_sets[set], &mut c_ours, s, serial, &mut workspace)?,
                    _ => blas.gemm_bf16(&a_sets[set], &b_sets[set], &mut c_blas, s)?,
                }
                if v < 2 {
                    host_us[v].push(t0.elapsed().as_secs_f64() * 1e6);
                }
            }
            Ok(())
        })?;
        if times.len() != variants {
            return Err(format!("{label}: the timer returned the wrong number of variants").into());
        }
        let per_call = |t: &mut Vec<f64>| median(t) / b2b as f64;
        let ours_serial = if b2b > 1 { Some(per_call(&mut times[2])) } else { None };
        let (ours, cublas) = (per_call(&mut times[0]), per_call(&mut times[1]));
        if let Some(g) = &gate {
            g.check()?;
        }
        // (the timed rounds come last: the warm-up's calls, the first with its compile, are
        // left out)
        let [mut ours_host, mut cublas_host] = host_us.map(|mut v| v.split_off(v.len().saturating_sub(c.iters * b2b)));
        let (ours_host_us, cublas_host_us) = (median(&mut ours_host), median(&mut cublas_host));
        if mkernel_kernels::gemm::probe_cta_spans() {
            probe_spans(&c.out_dir, &label, ours, sets, |set| {
                blas.gemm_bf16(&a_sets[set], &b_sets[set], &mut c_blas, s)?;
                workspace.probe_clear(PROBE_CTAS)?;
                mkernel::gemm_with_workspace(&stream, &a_sets[set], &b_sets[set], &mut c_ours, s, opts, &mut workspace)?;
                Ok(workspace.probe_cta_spans(PROBE_CTAS)?)
            })?;
        }
        let tf = |ms: f64| s.flops() / (ms * 1e-3) / 1e12;
        let row = Row {
            label: label.clone(),
            m: s.m,
            n: s.n,
            k: s.k,
            tile: used.tile.to_string(),
            split_slices: used.split_slices,
            ours_ms: ours,
            ours_tflops: tf(ours),
            cublas_ms: cublas,
            cublas_tflops: tf(cublas),
            ratio_to_cublas: cublas / ours,
            ours_host_us,
            cublas_host_us,
            host_gate: args.host_gate,
            back_to_back: args.back_to_back,
            ours_serial_ms: ours_serial,
            check: verdict.clone(),
            floor_flop_ms: super::floors::compute_us(s) / 1e3,
            floor_bytes_ms: super::floors::hbm_us(s) / 1e3,
        };
        let split_note = if used.split_slices > 1 { format!("  [last wave split {}]", used.split_slices) } else { String::new() };
        let serial_note = ours_serial.map(|t| format!("  [serial {t:.4} ms: PDL saves {:.2} us a call]", (t - ours) * 1e3)).unwrap_or_default();
        println!(
            "{:<32} {:>6} {:>6} {:>6} {:>9.4} {:>8.1} {:>9.4} {:>8.1} {:>6.3}  {}{split_note}{serial_note}  [host us {ours_host_us:.1}/{cublas_host_us:.1}]",
            label,
            s.m,
            s.n,
            s.k,
            ours,
            row.ours_tflops,
            cublas,
            row.cublas_tflops,
            row.ratio_to_cublas,
            verdict.as_deref().unwrap_or("-")
        );
        rows.push(row);
    }
    if !c.no_json {
        #[derive(Serialize)]
        struct Out<'a> {
            bench: &'a str,
            info: super::RunInfo,
            iters: usize,
            warmup: usize,
            warmup_ms: u64,
            rows: Vec<Row>,
        }
        let date = info.date.clone();
        let p = super::write_json(&c.out_dir, "gemm", &date, &Out { bench: "gemm", info, iters: c.iters, warmup: c.warmup, warmup_ms: c.warmup_ms, rows })?;
        println!("# wrote {}", p.display());
    }
    if failures > 0 {
        return Err(format!("--check: {failures} shape(s) FAILED").into());
    }
    Ok(())
}

/// Most CTAs [`probe_spans`] reads (more than any GPU's SMs: the plain GEMM's grid is at
/// most one CTA per SM).
const PROBE_CTAS: usize = 1024;

/// Diagnostic (`MKERNEL_PROBE_CTA_SPANS` set: [`mkernel_kernels::gemm::probe_cta_spans`]):
/// after a shape's timing, three more calls of ours per input set, each after one of
/// cuBLAS's as in the timed rounds, with every CTA's SM, start and end appended to
/// `cta-spans.csv` in `out_dir` (times in ns from the call's first CTA start).
fn probe_spans(
    out_dir: &std::path::Path,
    label: &str,
    median_ms: f64,
    sets: usize,
    mut call: impl FnMut(usize) -> BenchResult<Vec<[u64; 4]>>,
) -> BenchResult<()> {
    use std::io::Write;
    std::fs::create_dir_all(out_dir)?;
    let path = out_dir.join("cta-spans.csv");
    let new = !path.exists();
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    if new {
        writeln!(f, "shape,median_ms,set,rep,cta,sm,start_ns,end_ns")?;
    }
    for set in 0..sets {
        for rep in 0..3 {
            let spans: Vec<(usize, [u64; 4])> = call(set)?.into_iter().enumerate().filter(|(_, s)| s[3] == 1).collect();
            let t0 = spans.iter().map(|(_, s)| s[1]).min().unwrap_or(0);
            for (cta, s) in &spans {
                writeln!(f, "{label},{median_ms:.4},{set},{rep},{cta},{},{},{}", s[0], s[1] - t0, s[2].saturating_sub(t0))?;
            }
            if spans.is_empty() {
                println!("# cta spans {label} set {set} rep {rep}: none (the probe records unsplit calls only; this one split its K loop)");
                continue;
            }
            let end = spans.iter().map(|(_, s)| s[2]).max().unwrap_or(0).saturating_sub(t0);
            println!("# cta spans {label} set {set} rep {rep}: {} CTAs, first start to last end {:.4} ms", spans.len(), end as f64 * 1e-6);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        gemm: GemmArgs,
    }

    #[test]
    fn device_flag_parses_and_names_its_rule() {
        assert_eq!(Cli::try_parse_from(["x", "--device", "3"]).unwrap().gemm.device, 3);
        assert_eq!(Cli::try_parse_from(["x"]).unwrap().gemm.device, 0);
        for (bad, rule) in [("-1", "0 or more"), ("x", "whole number")] {
            let e = Cli::try_parse_from(["x", "--device", bad]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("--device") && e.contains(rule), "{bad}: {e}");
        }
        // Common's flags reach their parsers through this bench too.
        let e = Cli::try_parse_from(["x", "--iters", "-5"]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("--iters") && e.contains("1..=100000"), "{e}");
    }

    #[test]
    fn shape_flag_parses_lists_and_names_its_rule() {
        let a = Cli::try_parse_from(["x", "--shape", "4096x4096x1000,1x8x8", "--shape", "2x3x16"]).unwrap().gemm;
        assert_eq!(a.shape, vec![GemmShape { m: 4096, n: 4096, k: 1000 }, GemmShape { m: 1, n: 8, k: 8 }, GemmShape { m: 2, n: 3, k: 16 }]);
        assert!(Cli::try_parse_from(["x"]).unwrap().gemm.shape.is_empty());
        for (bad, rule) in [
            ("4096x4096", "MxNxK"),
            ("0x8x8", "M must be"),
            ("8x-1x8", "N must be"),
            ("8x8xk", "K must be"),
            ("8x8x12", "multiple of 8"),
            ("2147483648x8x8", "2^31"),
            ("5000000000x8x8", "1..=2147483392"),
            ("-1x8x8", "M must be"),
        ] {
            let e = Cli::try_parse_from(["x", "--shape", bad]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("--shape") && e.contains(rule), "{bad}: {e}");
        }
        // A negative split count names the option (helper-47).
        let e = Cli::try_parse_from(["x", "--split-last-wave", "-1"]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("--split-last-wave") && e.contains("slice count"), "{e}");
    }

    #[test]
    fn back_to_back_flag_parses_and_names_its_range() {
        assert_eq!(Cli::try_parse_from(["x"]).unwrap().gemm.back_to_back, 1);
        assert_eq!(Cli::try_parse_from(["x", "--back-to-back", "20"]).unwrap().gemm.back_to_back, 20);
        for bad in ["0", "1001", "-3", "x"] {
            let e = Cli::try_parse_from(["x", "--back-to-back", bad]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("--back-to-back"), "{bad}: {e}");
        }
    }

    #[test]
    fn forced_tma_store_tile_with_odd_n_is_refused_before_any_device() {
        let cli = Cli::try_parse_from(["x", "--tile", "wide-tma-store", "--shape", "4096x4096x4096,4096x4095x4096", "--no-json"]).unwrap();
        let e = run(cli.gemm).map(|_| ()).map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(e.contains("--tile wide-tma-store") && e.contains("N % 8") && e.contains("4096x4095x4096"), "{e}");
    }

    #[test]
    fn forced_split_of_a_tile_that_cannot_split_is_refused_before_any_device() {
        // (and the fitted names, which only fit Registers-epilogue or clustered tiles: helper-44)
        for tile in ["narrow", "wide-tma-store-c2", "swap-ab", "swap-ab-c2", "swap-ab-128-fit", "cols-fit"] {
            let cli = Cli::try_parse_from(["x", "--tile", tile, "--split-last-wave", "4", "--shape", "512x4096x4096", "--no-json"]).unwrap();
            let e = run(cli.gemm).map(|_| ()).map_err(|e| e.to_string()).err().unwrap_or_default();
            assert!(e.contains("--split-last-wave") && e.contains(tile) && e.contains("without clusters"), "{e}");
        }
    }

    #[test]
    fn split_like_rule_needs_a_tile_that_can_split_and_no_forced_split() {
        for tile in ["narrow", "wide-tma-store-c2", "swap-ab", "cols-fit"] {
            let cli = Cli::try_parse_from(["x", "--tile", tile, "--split-like-rule", "--shape", "512x8x4096", "--no-json"]).unwrap();
            let e = run(cli.gemm).map(|_| ()).map_err(|e| e.to_string()).err().unwrap_or_default();
            assert!(e.contains("--split-like-rule") && e.contains(tile) && e.contains("without clusters"), "{e}");
        }
        for args in [vec!["x", "--split-like-rule"], vec!["x", "--tile", "swap-ab-64x64-tma-store", "--split-like-rule", "--split-last-wave", "4"]] {
            let e = Cli::try_parse_from(args.clone()).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("--split-like-rule") || e.contains("--tile"), "{args:?}: {e}");
        }
        assert!(Cli::try_parse_from(["x", "--tile", "swap-ab-64x64-tma-store", "--split-like-rule"]).is_ok());
    }

    #[test]
    fn model_shapes_are_valid_distinct_and_sharded_as_documented() {
        let list = model_shapes();
        assert_eq!(list.len(), 3 * 4 * 4 * 6 + 2 * 4 + 4);
        let mut labels = std::collections::HashSet::new();
        for (label, s) in &list {
            assert!(labels.insert(label.clone()), "label {label} twice");
            assert!(s.validate_dims().is_ok() && s.n % 8 == 0 && s.k % 64 == 0, "{label}: {s:?}");
            assert!(label.starts_with(&format!("M={} ", s.m)), "{label}: {s:?}");
        }
        let get = |l: &str| list.iter().find(|(x, _)| x == l).map(|(_, s)| *s).unwrap();
        // Llama-3-70B at TP 4: 64 / 4 query heads + 2 x 8 / 4 key-value heads of 128; FFN 28672.
        assert_eq!(get("M=256 llama3-70b tp4 qkv"), GemmShape { m: 256, n: (16 + 4) * 128, k: 8192 });
        assert_eq!(get("M=256 llama3-70b tp4 o"), GemmShape { m: 256, n: 8192, k: 2048 });
        assert_eq!(get("M=16 llama3-8b tp2 gate_up"), GemmShape { m: 16, n: 14336, k: 4096 });
        assert_eq!(get("M=4096 qwen2.5-32b tp8 down"), GemmShape { m: 4096, n: 5120, k: 3456 });
        // 8 key-value heads at TP 8: one each (replicated beyond that).
        assert_eq!(get("M=1 llama3-8b tp8 qkv").n, (4 + 2) * 128);
        // "M=1 " (with the space) picks M = 1 alone.
        let kept = crate::bench::filter_shapes(list.clone(), Some("M=1 ")).unwrap();
        assert!(!kept.is_empty() && kept.iter().all(|(_, s)| s.m == 1), "{kept:?}");
        assert!(Cli::try_parse_from(["x", "--models", "--shape", "8x8x8"]).is_err(), "--models conflicts with --shape");
    }

    #[test]
    fn unwritable_out_dir_fails_before_any_device_is_touched() {
        crate::bench::assert_out_dir_checked_first("gemm", |args| run(Cli::try_parse_from(args).unwrap().gemm).map_err(|e| e.to_string()));
    }
}
