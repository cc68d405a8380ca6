//! Proxy throughput and latency with a simulated transport: commands/s through ring ->
//! proxy -> transport -> completion, and the latency from a command's publication in
//! the ring to its `post_writes` call (median and p99). Prints a table and writes JSON.
//!
//! Usage: `proxy-bench [--commands N] [--producers P] [--slots S] [--max-batch B]
//!         [--window-us W] [--reps R] [--latency-commands N] [--verbose] [--out PATH]`
//!
//! Transports: `sim` (mkernel-transport's simulated fabric, one piece per write, no
//! delay: every write is copied and delivered in-process), and `null` (completes every
//! write at the next poll without moving bytes: the proxy's own cost). For each, a
//! "transport alone" row posts batches straight to the transport from one thread (no
//! ring, no proxy): the ceiling the proxy can reach on that transport.
//!
//! Method. Throughput: `P` CPU producer threads publish `N` 64-byte `Put` commands as
//! fast as the ring accepts them; the time runs from the first publication until the
//! ring's completed counter reaches `N`; one warm-up repetition, then the median of
//! `R`. Latency: one producer publishes at a fixed offered rate (paced, so the ring
//! never fills); each command's publication time (taken just before `push`) is compared
//! with the time the transport saw it in `post_writes`. CPU producers cost host cores
//! that GPU producers would not; on a 2-core machine producer and proxy share them.
use std::process::ExitCode;

use std::sync::atomic::{AtomicU64, Ordering as MemOrder};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mkernel_proxy::{
    ticket_low_bits, MonotonicClock, PeerTables, Proxy, ProxyConfig, ProxyEngine, ProxySetup, Ring,
    RingLayout, TransferCommand,
};
use mkernel_transport::sim::{SimConfig, SimFabric};
use mkernel_transport::{
    Capabilities, Completion, HostBuffer, LocalRegion, Ordering, Rank, RemoteRegion, Transport,
    TransportError, Write,
};

const PAYLOAD: u32 = 64;
const REGION_BYTES: usize = 1 << 20;
const WAIT: Duration = Duration::from_secs(120);

struct Args {
    commands: u64,
    producers: u32,
    slots: u32,
    max_batch: usize,
    window_us: u64,
    reps: usize,
    latency_commands: u64,
    verbose: bool,
    out: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        commands: 4_000_000,
        producers: 1,
        slots: 4096,
        max_batch: 8,
        window_us: 2,
        reps: 5,
        latency_commands: 200_000,
        verbose: false,
        out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--commands" => a.commands = num(value()?)?,
            "--producers" => a.producers = num(value()?)? as u32,
            "--slots" => a.slots = num(value()?)? as u32,
            "--max-batch" => a.max_batch = num(value()?)? as usize,
            "--window-us" => a.window_us = num(value()?)?,
            "--reps" => a.reps = num(value()?)?.max(1) as usize,
            "--latency-commands" => a.latency_commands = num(value()?)?,
            "--out" => a.out = Some(value()?),
            "--verbose" => a.verbose = true,
            "-h" | "--help" => {
                return Err("usage: proxy-bench [--commands N] [--producers P] [--slots S] \
                            [--max-batch B] [--window-us W] [--reps R] [--latency-commands N] [--verbose] [--out PATH]"
                    .into())
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.producers == 0 || a.commands == 0 {
        return Err("--producers and --commands must be > 0".into());
    }
    Ok(a)
}

/// Completes every write at the next poll without moving bytes.
struct NullTransport {
    rank: Rank,
    caps: Capabilities,
    next_region: u64,
    done: Vec<Completion>,
}

impl NullTransport {
    fn new(rank: Rank) -> Self {
        NullTransport {
            rank,
            caps: Capabilities {
                ordering: Ordering::Unordered,
                immediate_data: true,
                device_memory: false,
                max_batch: 64,
                max_in_flight: 1 << 20,
                max_write_bytes: 1 << 30,
                name: "null".into(),
            },
            next_region: 1,
            done: Vec::new(),
        }
    }
}

impl Transport for NullTransport {
    fn rank(&self) -> Rank {
        self.rank
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn address(&self) -> Vec<u8> {
        self.rank.to_le_bytes().to_vec()
    }
    fn add_peer(&mut self, _peer: Rank, _address: &[u8]) -> Result<(), TransportError> {
        Ok(())
    }
    fn register_host(&mut self, buffer: &HostBuffer) -> Result<LocalRegion, TransportError> {
        self.next_region += 1;
        Ok(LocalRegion::new(self.next_region, buffer.len()))
    }
    fn deregister(&mut self, _region: LocalRegion) -> Result<(), TransportError> {
        Ok(())
    }
    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError> {
        Ok(RemoteRegion {
            owner: self.rank,
            addr: 0,
            key: region.id(),
            len: region.len() as u64,
        }
        .to_bytes())
    }
    fn import_remote(&mut self, _peer: Rank, key: &[u8]) -> Result<RemoteRegion, TransportError> {
        RemoteRegion::from_bytes(key)
    }
    fn post_writes(&mut self, peer: Rank, writes: &[Write]) -> Result<(), TransportError> {
        self.done.extend(writes.iter().map(|w| Completion::Write {
            id: w.id,
            peer,
            result: Ok(()),
        }));
        Ok(())
    }
    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError> {
        let n = max.min(self.done.len());
        out.extend(self.done.drain(..n));
        Ok(n)
    }
    fn in_flight(&self) -> usize {
        self.done.len()
    }
}

/// Records when each command (by ticket) reached `post_writes` (latency runs only;
/// throughput runs hand the boxed transport to the proxy directly).
struct Timed {
    inner: Box<dyn Transport + Send>,
    origin: Instant,
    post_ns: Arc<Vec<AtomicU64>>,
}

impl Transport for Timed {
    fn rank(&self) -> Rank {
        self.inner.rank()
    }
    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }
    fn address(&self) -> Vec<u8> {
        self.inner.address()
    }
    fn add_peer(&mut self, peer: Rank, address: &[u8]) -> Result<(), TransportError> {
        self.inner.add_peer(peer, address)
    }
    fn register_host(&mut self, buffer: &HostBuffer) -> Result<LocalRegion, TransportError> {
        self.inner.register_host(buffer)
    }
    fn deregister(&mut self, region: LocalRegion) -> Result<(), TransportError> {
        self.inner.deregister(region)
    }
    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError> {
        self.inner.remote_key(region)
    }
    fn import_remote(&mut self, peer: Rank, key: &[u8]) -> Result<RemoteRegion, TransportError> {
        self.inner.import_remote(peer, key)
    }
    fn post_writes(&mut self, peer: Rank, writes: &[Write]) -> Result<(), TransportError> {
        let now = self.origin.elapsed().as_nanos() as u64;
        for w in writes {
            if let Some(slot) = self.post_ns.get(ticket_low_bits(w.id) as usize) {
                slot.store(now, MemOrder::Relaxed);
            }
        }
        self.inner.post_writes(peer, writes)
    }
    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError> {
        self.inner.poll(out, max)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}

/// A transport for rank 0 with peer 1 and the tables the proxy needs.
fn make_transport(kind: &str) -> Result<(Box<dyn Transport + Send>, ProxySetup), String> {
    let e = |e: TransportError| e.to_string();
    let src = HostBuffer::new(REGION_BYTES).map_err(e)?;
    let dst = HostBuffer::new(REGION_BYTES).map_err(e)?;
    match kind {
        "sim" => {
            let fabric = SimFabric::new(SimConfig {
                seed: 1,
                max_delay: 0,
                max_pieces: 1,
                max_batch: 64,
                max_in_flight: 1 << 20,
                ..SimConfig::default()
            })
            .map_err(e)?;
            let mut a = fabric.endpoint(0).map_err(e)?;
            let mut b = fabric.endpoint(1).map_err(e)?;
            a.add_peer(1, &b.address()).map_err(e)?;
            b.add_peer(0, &a.address()).map_err(e)?;
            let local = a.register_host(&src).map_err(e)?;
            let remote_local = b.register_host(&dst).map_err(e)?;
            let remote = a
                .import_remote(1, &b.remote_key(&remote_local).map_err(e)?)
                .map_err(e)?;
            // Rank 1's endpoint only needs to exist in the fabric; its completions are
            // discarded with it.
            drop(b);
            Ok((Box::new(a), tables(local, remote)))
        }
        "null" => {
            let mut a = NullTransport::new(0);
            let local = a.register_host(&src).map_err(e)?;
            let remote = RemoteRegion {
                owner: 1,
                addr: 0,
                key: 9,
                len: REGION_BYTES as u64,
            };
            Ok((Box::new(a), tables(local, remote)))
        }
        other => Err(format!("unknown transport {other}")),
    }
}

fn tables(local: LocalRegion, remote: RemoteRegion) -> ProxySetup {
    ProxySetup {
        local_regions: vec![local],
        peers: vec![PeerTables {
            peer: 1,
            regions: vec![remote],
            flags: None,
        }],
        arrivals: None,
    }
}

fn command(i: u64) -> TransferCommand {
    let off = (i * u64::from(PAYLOAD)) % (REGION_BYTES as u64);
    TransferCommand::put(1, 0, off, 0, off, PAYLOAD)
}

struct Started {
    proxy: Proxy,
    ring: Ring,
}

/// Starts a proxy over `kind`'s transport. With `post_ns` the transport is wrapped in
/// [`Timed`]; without, the `Box<dyn Transport + Send>` goes to the proxy as it is.
fn start(
    kind: &str,
    args: &Args,
    window_us: u64,
    post_ns: Option<Arc<Vec<AtomicU64>>>,
    origin: Instant,
) -> Result<Started, String> {
    let (inner, setup) = make_transport(kind)?;
    match post_ns {
        Some(post_ns) => spawn(
            kind,
            args,
            window_us,
            Timed {
                inner,
                origin,
                post_ns,
            },
            setup,
        ),
        None => spawn(kind, args, window_us, inner, setup),
    }
}

fn spawn<T: Transport + Send + 'static>(
    kind: &str,
    args: &Args,
    window_us: u64,
    transport: T,
    setup: ProxySetup,
) -> Result<Started, String> {
    let ring = Ring::host(RingLayout::new(args.slots, 0).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let config = ProxyConfig {
        name: format!("proxy-bench-{kind}"),
        max_batch: args.max_batch,
        batch_window: Duration::from_micros(window_us),
        max_outstanding: args.slots as usize * 4,
        // A production proxy owns a core and never yields it.
        idle_spins: u32::MAX,
        ..ProxyConfig::default()
    };
    let engine = ProxyEngine::new(transport, &ring, setup, config, MonotonicClock::default())
        .map_err(|e| e.to_string())?;
    let proxy = Proxy::spawn(engine).map_err(|e| e.to_string())?;
    Ok(Started { proxy, ring })
}

#[derive(Debug, serde::Serialize)]
struct ThroughputRow {
    transport: String,
    producers: u32,
    slots: u32,
    max_batch: usize,
    window_us: u64,
    commands: u64,
    seconds_median: f64,
    commands_per_s: f64,
    mean_batch: f64,
}

#[derive(Debug, serde::Serialize)]
struct LatencyRow {
    transport: String,
    offered_per_s: f64,
    window_us: u64,
    max_batch: usize,
    commands: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
}

fn throughput(kind: &str, args: &Args) -> Result<ThroughputRow, String> {
    let mut secs = Vec::new();
    let mut mean_batch = 0.0;
    for rep in 0..=args.reps {
        let origin = Instant::now();
        let s = start(kind, args, args.window_us, None, origin)?;
        let per = args.commands / u64::from(args.producers);
        let total = per * u64::from(args.producers);
        let t0 = Instant::now();
        let threads: Vec<_> = (0..args.producers)
            .map(|p| {
                let producer = s.ring.producer();
                std::thread::spawn(move || -> Result<(), String> {
                    for i in 0..per {
                        producer
                            .push(&command(u64::from(p) * per + i), WAIT)
                            .map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            })
            .collect();
        for t in threads {
            t.join().map_err(|_| "producer panicked".to_string())??;
        }
        s.proxy
            .wait_completed(total, WAIT)
            .map_err(|e| e.to_string())?;
        let dt = t0.elapsed().as_secs_f64();
        let report = s.proxy.shutdown().map_err(|e| e.to_string())?;
        if args.verbose {
            eprintln!("{kind} rep {rep}: {:.2} M/s", total as f64 / dt / 1e6);
        }
        if rep > 0 {
            secs.push(dt);
            mean_batch = report.stats.consumed as f64 / report.stats.batches.max(1) as f64;
        }
    }
    secs.sort_by(f64::total_cmp);
    let median = secs[secs.len() / 2];
    let per = args.commands / u64::from(args.producers) * u64::from(args.producers);
    Ok(ThroughputRow {
        transport: kind.into(),
        producers: args.producers,
        slots: args.slots,
        max_batch: args.max_batch,
        window_us: args.window_us,
        commands: per,
        seconds_median: median,
        commands_per_s: per as f64 / median,
        mean_batch,
    })
}

/// The transport alone: batches of `max_batch` writes posted straight to it and polled
/// to completion from one thread, no ring and no proxy (the ceiling the proxy can reach).
fn transport_ceiling(kind: &str, args: &Args) -> Result<ThroughputRow, String> {
    let e = |e: TransportError| e.to_string();
    let mut secs = Vec::new();
    for rep in 0..=args.reps {
        let (mut t, setup) = make_transport(kind)?;
        let local = setup.local_regions[0];
        let remote = setup.peers[0].regions[0];
        let mut writes = Vec::with_capacity(args.max_batch);
        let mut done = Vec::with_capacity(1024);
        let mut completed = 0u64;
        let mut posted = 0u64;
        let t0 = Instant::now();
        while completed < args.commands {
            if posted < args.commands && t.in_flight() < args.slots as usize {
                writes.clear();
                for _ in 0..args.max_batch {
                    let c = command(posted);
                    writes.push(Write {
                        id: mkernel_transport::WriteId(posted),
                        local,
                        local_offset: c.local_offset as usize,
                        len: PAYLOAD as usize,
                        remote,
                        remote_offset: c.remote_offset as usize,
                        imm: None,
                    });
                    posted += 1;
                }
                t.post_writes(1, &writes).map_err(e)?;
            }
            done.clear();
            completed += t.poll(&mut done, 1024).map_err(e)? as u64;
        }
        if rep > 0 {
            secs.push(t0.elapsed().as_secs_f64());
        }
    }
    secs.sort_by(f64::total_cmp);
    let median = secs[secs.len() / 2];
    Ok(ThroughputRow {
        transport: format!("{kind} (transport alone, no ring/proxy)"),
        producers: 0,
        slots: args.slots,
        max_batch: args.max_batch,
        window_us: 0,
        commands: args.commands,
        seconds_median: median,
        commands_per_s: args.commands as f64 / median,
        mean_batch: args.max_batch as f64,
    })
}

fn latency(kind: &str, args: &Args, rate: f64, window_us: u64) -> Result<LatencyRow, String> {
    let n = args.latency_commands;
    let origin = Instant::now();
    let post: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let s = start(kind, args, window_us, Some(post.clone()), origin)?;
    let producer = s.ring.producer();
    let mut publish = vec![0u64; n as usize];
    let gap_ns = 1e9 / rate;
    let t0 = origin.elapsed().as_nanos() as f64;
    for i in 0..n {
        let due = (t0 + gap_ns * i as f64) as u64;
        let mut now = origin.elapsed().as_nanos() as u64;
        while now < due {
            std::hint::spin_loop();
            now = origin.elapsed().as_nanos() as u64;
        }
        publish[i as usize] = now;
        producer
            .push(&command(i), WAIT)
            .map_err(|e| e.to_string())?;
    }
    s.proxy.wait_completed(n, WAIT).map_err(|e| e.to_string())?;
    s.proxy.shutdown().map_err(|e| e.to_string())?;
    let mut lat: Vec<u64> = publish
        .iter()
        .zip(post.iter())
        .map(|(p, q)| q.load(MemOrder::Relaxed).saturating_sub(*p))
        .collect();
    lat.sort_unstable();
    let pick = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize];
    Ok(LatencyRow {
        transport: kind.into(),
        offered_per_s: rate,
        window_us,
        max_batch: args.max_batch,
        commands: n,
        median_ns: pick(0.5),
        p99_ns: pick(0.99),
        max_ns: pick(1.0),
    })
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

/// `YYYY-MM-DDTHHMMSSZ` for a Unix time (civil-from-days, H. Hinnant's algorithm).
fn utc_stamp(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}{:02}{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[derive(Debug, serde::Serialize)]
struct Report {
    benchmark: &'static str,
    host: String,
    cpus: usize,
    /// `/proc/loadavg` before and after the run: other work on the host skews the
    /// latency tail.
    load_before: String,
    load_after: String,
    commit: String,
    date: String,
    date_unix: u64,
    payload_bytes: u32,
    reps: usize,
    note: &'static str,
    throughput: Vec<ThroughputRow>,
    latency: Vec<LatencyRow>,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
}

fn run(args: &Args) -> Result<Report, String> {
    let load_before = loadavg();
    println!("| transport | producers | commands | Mcmd/s | mean batch |");
    println!("| --- | --- | --- | --- | --- |");
    let mut rows = Vec::new();
    for kind in ["null", "sim"] {
        let ceiling = transport_ceiling(kind, args)?;
        println!(
            "| {} | - | {} | {:.2} | {:.2} |",
            ceiling.transport,
            ceiling.commands,
            ceiling.commands_per_s / 1e6,
            ceiling.mean_batch
        );
        rows.push(ceiling);
        let row = throughput(kind, args)?;
        println!(
            "| {} | {} | {} | {:.2} | {:.2} |",
            row.transport,
            row.producers,
            row.commands,
            row.commands_per_s / 1e6,
            row.mean_batch
        );
        rows.push(row);
    }
    println!();
    println!("| transport | offered/s | window us | median ns | p99 ns | max ns |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut lat = Vec::new();
    for kind in ["null", "sim"] {
        for (rate, window) in [
            (100_000.0, 0),
            (100_000.0, args.window_us),
            (1_000_000.0, args.window_us),
        ] {
            let row = latency(kind, args, rate, window)?;
            println!(
                "| {} | {:.0} | {} | {} | {} | {} |",
                row.transport,
                row.offered_per_s,
                row.window_us,
                row.median_ns,
                row.p99_ns,
                row.max_ns
            );
            lat.push(row);
        }
    }
    let date_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(Report {
        benchmark: "mkernel-proxy ring -> proxy -> transport",
        host: command_line("hostname", &[]),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before,
        load_after: loadavg(),
        commit: command_line("git", &["rev-parse", "--short", "HEAD"]),
        date: utc_stamp(date_unix),
        date_unix,
        payload_bytes: PAYLOAD,
        reps: args.reps,
        note: "CPU producer threads play the GPU (they share the host's cores with the proxy thread); \
               null = proxy cost only, sim = in-process simulated fabric (copies every write); \
               latency = publish (just before push) to post_writes; the proxy thread spins without \
               yielding (idle_spins = u32::MAX), as on a dedicated core",
        throughput: rows,
        latency: lat,
    })
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let report = match run(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("proxy-bench failed: {e}");
            return ExitCode::from(1);
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| format!("bench/results/proxy-{}.json", report.date));
    let json = match serde_json::to_string_pretty(&report) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("serialising report: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(dir) = std::path::Path::new(&out).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(&out, json) {
        Ok(()) => println!("wrote {out}"),
        Err(e) => {
            eprintln!("writing {out}: {e}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
