//! Loopback throughput of the libfabric backend: writes/s and GB/s for message sizes
//! 4 KiB..16 MiB and batch sizes 1/2/4/8/16, per provider, between two endpoints of
//! one process (the target endpoint progresses on its own thread, as a receiving proxy
//! would). Prints a table and writes JSON.
//!
//! Usage: `transport-bench [--providers tcp,shm] [--out PATH] [--reps N] [--bytes-per-rep B]`
//!
//! Method: per (provider, size, batch): one warm-up repetition, then `reps` timed
//! repetitions of about `bytes-per-rep` bytes (at least 64 writes), keeping up to
//! `queue_depth` writes in flight; the median repetition is reported. Destination
//! offsets rotate over a 64 MiB region. Loopback numbers measure the provider's
//! software path (memory copies, TCP stack), not a NIC.
use std::process::ExitCode;

use std::sync::atomic::{AtomicBool, Ordering as MemOrder};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mkernel_transport::{Completion, HostBuffer, Transport, TransportError, Write, WriteId};
use mkernel_transport_efa::{libfabric_version, provider_available, FabricConfig, FabricEndpoint};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const SIZES: [usize; 7] = [4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB];
const BATCHES: [usize; 5] = [1, 2, 4, 8, 16];
const DEST_BYTES: usize = 64 * MIB;
const QUEUE_DEPTH: usize = 64;

#[derive(Debug, serde::Serialize)]
struct Row {
    provider: String,
    size_bytes: usize,
    batch: usize,
    writes: usize,
    seconds_median: f64,
    writes_per_s: f64,
    gb_per_s: f64,
}

#[derive(Debug, serde::Serialize)]
struct Report {
    benchmark: &'static str,
    host: String,
    cpus: usize,
    libfabric: String,
    commit: String,
    date_unix: u64,
    queue_depth: usize,
    reps: usize,
    bytes_per_rep: usize,
    note: &'static str,
    rows: Vec<Row>,
}

struct Args {
    providers: Vec<String>,
    out: String,
    reps: usize,
    bytes_per_rep: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        providers: vec!["tcp".into(), "shm".into()],
        out: "bench/results/transport-loopback.json".into(),
        reps: 5,
        bytes_per_rep: 128 * MIB,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--providers" => a.providers = value()?.split(',').map(str::to_string).collect(),
            "--out" => a.out = value()?,
            "--reps" => a.reps = value()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--bytes-per-rep" => {
                a.bytes_per_rep = value()?.parse().map_err(|e| format!("--bytes-per-rep: {e}"))?
            }
            "-h" | "--help" => {
                return Err("usage: transport-bench [--providers tcp,shm] [--out PATH] [--reps N] [--bytes-per-rep B]".into())
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.reps == 0 {
        return Err("--reps must be > 0".into());
    }
    Ok(a)
}

/// Posts `count` writes of `size` bytes in batches of `batch`; returns elapsed seconds.
fn run_once(
    ep: &mut FabricEndpoint,
    local: mkernel_transport::LocalRegion,
    remote: mkernel_transport::RemoteRegion,
    size: usize,
    batch: usize,
    count: usize,
) -> Result<f64, TransportError> {
    let slots = (DEST_BYTES / size).max(1);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(60);
    let (mut posted, mut done) = (0usize, 0usize);
    let mut out = Vec::with_capacity(64);
    while done < count {
        while posted < count && ep.in_flight() + batch <= QUEUE_DEPTH {
            let n = batch.min(count - posted);
            let writes: Vec<Write> = (0..n)
                .map(|k| {
                    let i = posted + k;
                    Write {
                        id: WriteId(i as u64),
                        local,
                        local_offset: 0,
                        len: size,
                        remote,
                        remote_offset: (i % slots) * size,
                        imm: None,
                    }
                })
                .collect();
            ep.post_writes(1, &writes)?;
            posted += n;
        }
        out.clear();
        ep.poll(&mut out, 64)?;
        for c in &out {
            if let Completion::Write { result, .. } = c {
                result.clone()?;
                done += 1;
            }
        }
        if Instant::now() > deadline {
            return Err(TransportError::Timeout {
                what: format!("{count} writes of {size} bytes: {done} completed, {posted} posted"),
                waited_ms: 60_000,
            });
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

fn bench_provider(provider: &str, args: &Args, rows: &mut Vec<Row>) -> Result<(), TransportError> {
    let cfg = FabricConfig {
        provider: provider.into(),
        queue_depth: QUEUE_DEPTH,
        max_batch: 16,
        ..FabricConfig::default()
    };
    let mut a = FabricEndpoint::open(0, &cfg)?;
    let mut b = FabricEndpoint::open(1, &cfg)?;
    a.add_peer(1, &b.address())?;
    b.add_peer(0, &a.address())?;
    let src = HostBuffer::new(16 * MIB)?;
    src.write(0, &vec![0xa5; 16 * MIB])?;
    let local = a.register_host(&src)?;
    let dst = HostBuffer::new(DEST_BYTES)?;
    let dst_region = b.register_host(&dst)?;
    let remote = a.import_remote(1, &b.remote_key(&dst_region)?)?;
    eprintln!("{}: {:?}", provider, a.capabilities());
    // The target progresses on its own thread, like a receiving proxy.
    let stop = Arc::new(AtomicBool::new(false));
    let stop_target = stop.clone();
    let target = std::thread::Builder::new()
        .name(format!("bench-target-{provider}"))
        .spawn(move || {
            let mut out = Vec::new();
            while !stop_target.load(MemOrder::Acquire) {
                b.poll(&mut out, 64)?;
                out.clear();
            }
            Ok(())
        })
        .map_err(|e| TransportError::Backend { call: "thread spawn", code: -1, message: e.to_string() })?;
    let mut result = Ok(());
    'sizes: for &size in &SIZES {
        for &batch in &BATCHES {
            let count = (args.bytes_per_rep / size).max(64);
            let mut times = Vec::with_capacity(args.reps);
            if let Err(e) = run_once(&mut a, local, remote, size, batch, count.min(256)) {
                result = Err(e);
                break 'sizes;
            }
            for _ in 0..args.reps {
                match run_once(&mut a, local, remote, size, batch, count) {
                    Ok(t) => times.push(t),
                    Err(e) => {
                        result = Err(e);
                        break 'sizes;
                    }
                }
            }
            times.sort_by(f64::total_cmp);
            let t = times[times.len() / 2];
            let row = Row {
                provider: provider.into(),
                size_bytes: size,
                batch,
                writes: count,
                seconds_median: t,
                writes_per_s: count as f64 / t,
                gb_per_s: (count * size) as f64 / t / 1e9,
            };
            println!(
                "| {:<4} | {:>8} | {:>5} | {:>12.0} | {:>8.2} |",
                row.provider,
                human(size),
                batch,
                row.writes_per_s,
                row.gb_per_s
            );
            rows.push(row);
        }
    }
    stop.store(true, MemOrder::Release);
    let target_result = target.join().map_err(|_| TransportError::Backend {
        call: "bench target thread",
        code: -1,
        message: "panicked".into(),
    })?;
    result.and(target_result)
}

fn human(bytes: usize) -> String {
    if bytes >= MIB {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{} KiB", bytes / KIB)
    }
}

fn command_line(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    println!("| prov | size     | batch |     writes/s |     GB/s |");
    println!("| ---- | -------- | ----- | ------------ | -------- |");
    let mut rows = Vec::new();
    let mut failed = false;
    for p in &args.providers {
        if !provider_available(p) {
            eprintln!("provider {p}: not available, skipped");
            continue;
        }
        if let Err(e) = bench_provider(p, &args, &mut rows) {
            eprintln!("provider {p}: {e}");
            failed = true;
        }
    }
    let report = Report {
        benchmark: "mkernel-transport-efa loopback write throughput",
        host: command_line("hostname", &[]),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        libfabric: libfabric_version(),
        commit: command_line("git", &["rev-parse", "--short", "HEAD"]),
        date_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        queue_depth: QUEUE_DEPTH,
        reps: args.reps,
        bytes_per_rep: args.bytes_per_rep,
        note: "two endpoints in one process on loopback; target progresses on its own thread; no NIC",
        rows,
    };
    let json = match serde_json::to_string_pretty(&report) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("serialising report: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(dir) = std::path::Path::new(&args.out).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(&args.out, json) {
        Ok(()) => println!("wrote {}", args.out),
        Err(e) => {
            eprintln!("writing {}: {e}", args.out);
            failed = true;
        }
    }
    if failed {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
