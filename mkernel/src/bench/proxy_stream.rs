//! `mkernel bench proxy-stream`: the GPU-driven inter-node stream (`mkernel::internode`)
//! with each of two GPUs playing one node, over libfabric `shm` and `tcp` (host-staged),
//! both ranks sending at once. Per size it reports GB/s per direction (bytes of one
//! direction / the slower rank's stream-kernel time, median over epochs, each epoch a new
//! pattern) against two references measured in the same process:
//! - pinned copy: `cuMemcpyDtoHAsync` / `cuMemcpyHtoDAsync` between device memory and
//!   `cuMemHostAlloc` memory on GPU 0 (the ceiling of any host-staged path, ~55 GB/s);
//! - NCCL send/recv between the two GPUs (both directions at once) with
//!   `NCCL_P2P_DISABLE=1` (no NVLink/PCIe peer access: NCCL stages through host memory,
//!   SHM transport left at its default) and `NCCL_NVLS_ENABLE=0`.
//!
//! Proxy latency (publish to post, median and p99) is the `proxy-bench` binary's
//! (mkernel-proxy), which measures it with the simulated transport.
//!
//! The libfabric part needs the `fabric` feature (`cargo build --release -p mkernel
//! --features fabric`), which links libfabric.so.1 into this binary.

use std::sync::Arc;

use clap::Args;
use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream};
use serde::Serialize;

use super::{median, run_info, time_iters_ms, BenchResult, Common};

#[derive(Args, Clone, Debug)]
pub struct ProxyStreamArgs {
    #[command(flatten)]
    pub common: Common,
    /// libfabric providers to stream over.
    #[arg(long, value_delimiter = ',', default_value = "shm,tcp")]
    pub providers: Vec<String>,
    /// Bytes per direction per epoch (multiples of 16).
    #[arg(long, value_delimiter = ',', default_value = "1048576,16777216,67108864,268435456,1073741824")]
    pub sizes: Vec<u64>,
    /// Bytes per chunk (one command, one arrival flag).
    #[arg(long, default_value_t = 1 << 20)]
    pub chunk_bytes: u32,
    /// SEND CTAs per rank.
    #[arg(long, default_value_t = 8)]
    pub send_ctas: u32,
    /// RECV CTAs per rank.
    #[arg(long, default_value_t = 8)]
    pub recv_ctas: u32,
    /// Staging slots per SEND CTA.
    #[arg(long, default_value_t = 4)]
    pub staging_slots: u32,
    /// Also run the adaptor the provider does not select by default (tcp: immediate).
    #[arg(long)]
    pub both_adaptors: bool,
    /// Skip the NCCL reference.
    #[arg(long)]
    pub no_nccl: bool,
    /// Device-side wait bound in seconds, 1 to 86400.
    #[arg(long, default_value_t = 30, allow_negative_numbers = true, value_parser = clap::builder::RangedI64ValueParser::<u64>::new().range(1..=86_400))]
    pub timeout_s: u64,
}

#[derive(Serialize, Clone, Debug)]
struct CopyRow {
    bytes: u64,
    dtoh_ms: f64,
    dtoh_gbps: f64,
    htod_ms: f64,
    htod_gbps: f64,
}

#[derive(Serialize, Clone, Debug)]
struct NcclRow {
    bytes: u64,
    ms: f64,
    gbps_per_direction: f64,
}

#[derive(Serialize, Clone, Debug)]
struct StreamRow {
    provider: String,
    transport: String,
    adaptor: String,
    path: String,
    bytes: u64,
    chunks: u32,
    kernel_ms: f64,
    host_ms: f64,
    gbps_per_direction: f64,
    ratio_to_pinned_dtoh: Option<f64>,
    ratio_to_nccl: Option<f64>,
    proxy_batches: Vec<u64>,
}

fn gbps(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// Pinned host memory for the copy reference.
struct Pinned {
    ptr: *mut std::ffi::c_void,
}

impl Pinned {
    fn new(ctx: &Arc<CudaContext>, bytes: usize) -> BenchResult<Self> {
        ctx.bind_to_thread()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        unsafe { sys::cuMemHostAlloc(&mut ptr, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }.result()?;
        Ok(Pinned { ptr })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc, freed once.
        let _ = unsafe { sys::cuMemFreeHost(self.ptr) };
    }
}

fn pinned_copy(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, sizes: &[u64], c: &Common) -> BenchResult<Vec<CopyRow>> {
    let max = sizes.iter().copied().max().unwrap_or(0) as usize;
    let host = Pinned::new(ctx, max.max(16))?;
    let dev: CudaSlice<u8> = stream.alloc_zeros(max.max(16))?;
    let (dptr, _guard) = cudarc::driver::DevicePtr::device_ptr(&dev, stream);
    let mut rows = Vec::new();
    for &bytes in sizes {
        let n = bytes as usize;
        let mut dtoh = time_iters_ms(std::slice::from_ref(stream), c.warmup, c.iters, |_| {
            // SAFETY: both buffers hold `max >= n` bytes; stream-ordered.
            unsafe { sys::cuMemcpyDtoHAsync_v2(host.ptr, dptr, n, stream.cu_stream()) }.result()?;
            Ok(())
        })?;
        let mut htod = time_iters_ms(std::slice::from_ref(stream), c.warmup, c.iters, |_| {
            // SAFETY: as above.
            unsafe { sys::cuMemcpyHtoDAsync_v2(dptr, host.ptr, n, stream.cu_stream()) }.result()?;
            Ok(())
        })?;
        let (d, h) = (median(&mut dtoh), median(&mut htod));
        println!("pinned copy {bytes:>11} B: DtoH {d:>9.3} ms {:>6.2} GB/s   HtoD {h:>9.3} ms {:>6.2} GB/s", gbps(bytes, d), gbps(bytes, h));
        rows.push(CopyRow { bytes, dtoh_ms: d, dtoh_gbps: gbps(bytes, d), htod_ms: h, htod_gbps: gbps(bytes, h) });
    }
    Ok(rows)
}

fn nccl_send_recv(streams: &[Arc<CudaStream>], sizes: &[u64], c: &Common) -> BenchResult<Vec<NcclRow>> {
    use cudarc::nccl::safe::Comm;
    // SAFETY: only tries to dlopen candidate library names.
    if !unsafe { cudarc::nccl::sys::is_culib_present() } {
        return Err("NCCL reference: libnccl.so not found on LD_LIBRARY_PATH (pass --no-nccl to skip it)".into());
    }
    let comms = Comm::from_devices(streams.to_vec()).map_err(|e| format!("ncclCommInitAll: {e:?}"))?;
    let max = sizes.iter().copied().max().unwrap_or(0) as usize;
    let mut send: Vec<CudaSlice<u8>> = Vec::new();
    let mut recv: Vec<CudaSlice<u8>> = Vec::new();
    for s in streams {
        send.push(s.alloc_zeros(max)?);
        recv.push(s.alloc_zeros(max)?);
    }
    let mut rows = Vec::new();
    for &bytes in sizes {
        let n = bytes as usize;
        let mut t = time_iters_ms(streams, c.warmup, c.iters, |_| {
            cudarc::nccl::result::group_start().map_err(|e| format!("ncclGroupStart: {e:?}"))?;
            let mut first = None;
            for (r, comm) in comms.iter().enumerate() {
                let peer = (1 - r) as i32;
                let s = send[r].slice(0..n);
                if let Err(e) = comm.send(&s, peer) {
                    first.get_or_insert(format!("ncclSend: {e:?}"));
                }
                let mut d = recv[r].slice_mut(0..n);
                if let Err(e) = comm.recv(&mut d, peer) {
                    first.get_or_insert(format!("ncclRecv: {e:?}"));
                }
            }
            cudarc::nccl::result::group_end().map_err(|e| format!("ncclGroupEnd: {e:?}"))?;
            match first {
                Some(e) => Err(e.into()),
                None => Ok(()),
            }
        })?;
        let ms = median(&mut t);
        println!("NCCL send/recv (P2P off) {bytes:>11} B: {ms:>9.3} ms {:>6.2} GB/s per direction", gbps(bytes, ms));
        rows.push(NcclRow { bytes, ms, gbps_per_direction: gbps(bytes, ms) });
    }
    for s in streams {
        s.synchronize()?;
    }
    Ok(rows)
}

#[cfg(feature = "fabric")]
fn stream_rows(args: &ProxyStreamArgs, copy: &[CopyRow], nccl: &[NcclRow], errors: &mut Vec<String>) -> BenchResult<Vec<StreamRow>> {
    let max = args.sizes.iter().copied().max().unwrap_or(0);
    let mut rows = Vec::new();
    for provider in &args.providers {
        if let Err(e) = stream_provider(args, provider, max, copy, nccl, &mut rows) {
            eprintln!("stream over {provider} FAILED: {e}");
            errors.push(format!("{provider}: {e}"));
        }
    }
    Ok(rows)
}

#[cfg(feature = "fabric")]
fn stream_provider(
    args: &ProxyStreamArgs,
    provider: &str,
    max: u64,
    copy: &[CopyRow],
    nccl: &[NcclRow],
    rows: &mut Vec<StreamRow>,
) -> BenchResult<()> {
    use mkernel::internode::{connect_pair, EpochReport, ProxyStream, StreamConfig, StreamRank};
    use mkernel_transport::adaptor::CompletionMode;
    use mkernel_transport_efa::{FabricConfig, FabricEndpoint, Transport};

    let c = &args.common;
    {
        let fc = FabricConfig { provider: provider.to_string(), queue_depth: 256, max_batch: 16, ..FabricConfig::default() };
        let probe = FabricEndpoint::open(0, &fc).map_err(|e| format!("{provider}: {e}"))?;
        let selected = CompletionMode::select(probe.capabilities()).map_err(|e| format!("{provider}: {e}"))?;
        let mut modes = vec![selected];
        if args.both_adaptors {
            let other = if selected == CompletionMode::Immediate { CompletionMode::OrderedFlag } else { CompletionMode::Immediate };
            if other.check(probe.capabilities()).is_ok() {
                modes.push(other);
            }
        }
        drop(probe);
        for mode in modes {
            let cfg = StreamConfig {
                capacity_bytes: max.next_multiple_of(u64::from(args.chunk_bytes)),
                chunk_bytes: args.chunk_bytes,
                send_ctas: args.send_ctas,
                recv_ctas: args.recv_ctas,
                staging_slots: args.staging_slots,
                timeout: std::time::Duration::from_secs(args.timeout_s),
                proxy: mkernel_proxy::ProxyConfig { completion_mode: Some(mode), ..Default::default() },
                ..StreamConfig::default()
            };
            let r0 = StreamRank::prepare(0, FabricEndpoint::open(0, &fc)?, 1, cfg.clone())?;
            let r1 = StreamRank::prepare(1, FabricEndpoint::open(1, &fc)?, 0, cfg)?;
            let (mut s0, mut s1) = connect_pair(r0, r1)?;
            for &bytes in &args.sizes {
                let total = (c.warmup + c.iters) as u32;
                let run = |s: &mut ProxyStream| (0..total).map(|_| s.run_epoch(bytes)).collect::<mkernel::Result<Vec<EpochReport>>>();
                let (a, b) = std::thread::scope(|sc| {
                    let ta = sc.spawn(|| run(&mut s0));
                    let tb = sc.spawn(|| run(&mut s1));
                    (ta.join(), tb.join())
                });
                let (a, b) = (a.map_err(|_| "rank 0 thread panicked")??, b.map_err(|_| "rank 1 thread panicked")??);
                let timed = a.iter().zip(&b).skip(c.warmup);
                let mut kernel: Vec<f64> = timed.clone().map(|(x, y)| x.kernel_ms.max(y.kernel_ms)).collect();
                let mut host: Vec<f64> = timed.map(|(x, y)| x.host_ms.max(y.host_ms)).collect();
                let (k, h) = (median(&mut kernel), median(&mut host));
                let g = gbps(bytes, k);
                let copy_ref = copy.iter().find(|r| r.bytes == bytes).map(|r| g / r.dtoh_gbps);
                let nccl_ref = nccl.iter().find(|r| r.bytes == bytes).map(|r| g / r.gbps_per_direction);
                println!(
                    "stream {provider:<4} {:<11} {bytes:>11} B: kernel {k:>9.3} ms {g:>6.2} GB/s per direction (host {h:.3} ms){}{}",
                    format!("{mode:?}"),
                    copy_ref.map(|x| format!(", {x:.3} x pinned DtoH")).unwrap_or_default(),
                    nccl_ref.map(|x| format!(", {x:.3} x NCCL")).unwrap_or_default()
                );
                rows.push(StreamRow {
                    provider: provider.to_string(),
                    transport: s0.transport_name().to_string(),
                    adaptor: format!("{mode:?}"),
                    path: format!("{:?}", s0.path()),
                    bytes,
                    chunks: a.first().map_or(0, |r| r.chunks),
                    kernel_ms: k,
                    host_ms: h,
                    gbps_per_direction: g,
                    ratio_to_pinned_dtoh: copy_ref,
                    ratio_to_nccl: nccl_ref,
                    proxy_batches: s0.proxy_stats().batch_sizes,
                });
            }
            s0.shutdown()?;
            s1.shutdown()?;
        }
    }
    Ok(())
}

#[cfg(not(feature = "fabric"))]
fn stream_rows(_: &ProxyStreamArgs, _: &[CopyRow], _: &[NcclRow], _: &mut Vec<String>) -> BenchResult<Vec<StreamRow>> {
    Err(NO_FABRIC.into())
}

const NO_FABRIC: &str =
    "this mkernel binary was built without the `fabric` feature (libfabric); rebuild with `cargo build --release -p mkernel --features fabric`";

pub fn run(args: ProxyStreamArgs) -> BenchResult<()> {
    check_unused_common(&args.common)?;
    if !cfg!(feature = "fabric") {
        return Err(NO_FABRIC.into());
    }
    // NCCL reads these when its communicators are created (below); nothing else runs yet.
    std::env::set_var("NCCL_P2P_DISABLE", "1");
    std::env::set_var("NCCL_NVLS_ENABLE", "0");
    if let Some(bad) = args.sizes.iter().find(|s| **s == 0 || **s % 16 != 0) {
        return Err(super::usage(format!("--sizes: every size must be a positive multiple of 16, got {bad}")));
    }
    super::check_out_dir(&args.common)?;
    let present = mkernel::device_count()?;
    if present < 2 {
        return Err(format!("proxy-stream needs 2 GPUs (one per emulated node), {present} present").into());
    }
    let ctxs = [CudaContext::new(0)?, CudaContext::new(1)?];
    let streams: Vec<Arc<CudaStream>> = ctxs.iter().map(|c| c.new_stream()).collect::<Result<_, _>>()?;
    let info = run_info(&ctxs[0])?;
    let c = &args.common;
    println!("# mkernel bench proxy-stream on {} x2, {}, commit {}", info.device, info.driver, info.commit);
    let copy = pinned_copy(&ctxs[0], &streams[0], &args.sizes, c)?;
    let mut errors = Vec::new();
    let nccl = if args.no_nccl {
        Vec::new()
    } else {
        nccl_send_recv(&streams, &args.sizes, c).unwrap_or_else(|e| {
            eprintln!("NCCL reference FAILED: {e}");
            errors.push(format!("NCCL: {e}"));
            Vec::new()
        })
    };
    let rows = stream_rows(&args, &copy, &nccl, &mut errors)?;
    if !c.no_json {
        #[derive(Serialize)]
        struct Out<'a> {
            bench: &'a str,
            info: super::RunInfo,
            iters: usize,
            warmup: usize,
            chunk_bytes: u32,
            send_ctas: u32,
            recv_ctas: u32,
            staging_slots: u32,
            note: &'a str,
            pinned_copy_gpu0: Vec<CopyRow>,
            nccl_p2p_disabled: Vec<NcclRow>,
            stream: Vec<StreamRow>,
            errors: &'a [String],
        }
        let date = info.date.clone();
        let out = Out {
            bench: "proxy-stream",
            info,
            iters: c.iters,
            warmup: c.warmup,
            chunk_bytes: args.chunk_bytes,
            send_ctas: args.send_ctas,
            recv_ctas: args.recv_ctas,
            staging_slots: args.staging_slots,
            note: "two GPUs of one host, each one emulated node; both ranks send at once; GB/s per direction = bytes / median \
                   (over epochs) of the slower rank's stream-kernel time (CUDA events; the pattern fill is outside); \
                   host-staged (libfabric tcp/shm cannot register GPU memory); NCCL with NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE default, \
                   NCCL_NVLS_ENABLE=0; pinned copy = cuMemcpy*Async with cuMemHostAlloc memory on GPU 0",
            pinned_copy_gpu0: copy,
            nccl_p2p_disabled: nccl,
            stream: rows,
            errors: &errors,
        };
        let p = super::write_json(&c.out_dir, "proxy-stream", &date, &out)?;
        println!("# wrote {}", p.display());
    }
    if !errors.is_empty() {
        return Err(format!("proxy-stream failed over {}", errors.join("; ")).into());
    }
    Ok(())
}

/// The shared options this bench has no use for are refused, not ignored: it has no
/// shapes (`--sizes` picks what it moves), no fp32 reference to check against (the
/// transports' tests check the bytes), and times one transfer kind at a time.
fn check_unused_common(c: &Common) -> Result<(), String> {
    let unused = [(c.check, "--check"), (c.filter.is_some(), "--filter"), (c.warmup_ms != 0, "--warmup-ms")];
    match unused.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(format!(
            "bench proxy-stream does not take {flag} (no shapes: --sizes picks the transfers; no reference check: the transport tests check the bytes; one transfer kind timed at a time)"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ps: ProxyStreamArgs,
    }

    #[test]
    fn shared_options_it_cannot_use_are_refused_by_name() {
        for (flag, value) in [("--check", None), ("--filter", Some("M=1")), ("--warmup-ms", Some("100"))] {
            let args: Vec<&str> = ["x", flag].into_iter().chain(value).collect();
            let cli = Cli::try_parse_from(args).unwrap();
            let e = run(cli.ps).unwrap_err().to_string();
            assert!(e.contains(flag) && e.contains("does not take"), "{flag}: {e}");
        }
        assert!(check_unused_common(&Cli::try_parse_from(["x", "--iters", "3"]).unwrap().ps.common).is_ok());
    }

    #[test]
    fn timeout_flag_names_its_range_also_when_negative() {
        assert_eq!(Cli::try_parse_from(["x", "--timeout-s", "86400"]).unwrap().ps.timeout_s, 86_400);
        for bad in ["-1", "0", "86401"] {
            let e = Cli::try_parse_from(["x", "--timeout-s", bad]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("--timeout-s") && e.contains("1..=86400"), "{bad}: {e}");
        }
    }
}
