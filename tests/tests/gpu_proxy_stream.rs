//! GPU, two ranks in one process, each GPU playing one node (GPU 0 = node 0, GPU 1 =
//! node 1; with a single GPU both ranks share GPU 0, on separate streams): a persistent
//! kernel per rank streams chunks to the other rank only through its command ring, its
//! proxy thread and its own libfabric endpoint (`shm` or `tcp`, host-staged), while its
//! RECV CTAs wait on arrival flags and check every byte against the sender's pattern of
//! (seed, epoch, rank, byte index). Sizes 64 KiB to 1 GiB, both completion adaptors,
//! 100 back-to-back epochs with no host barrier and no reset; a peer that never runs is
//! named in a timeout; a wrong pattern is counted, not passed.
//!
//! Skips without a GPU (see mkernel-tests), and without the libfabric provider unless
//! `MKERNEL_REQUIRE_PROVIDERS=1` or `MKERNEL_REQUIRE_GPU=1`.
//! `MKERNEL_PROXY_STREAM_MAX_BYTES` caps the sizes and `MKERNEL_PROXY_STREAM_LARGE_EPOCHS`
//! (default 2) sets the epochs of the sizes above 64 MiB (diagnostics: the default runs
//! 1 GiB).

use std::time::{Duration, Instant};

use mkernel::internode::{connect_pair, pattern_word, DataPath, EpochReport, ProxyStream, StreamConfig, StreamRank};
use mkernel::Error;
use mkernel_proxy::ProxyConfig;
use mkernel_tests::gpu_or_skip;
use mkernel_transport::adaptor::CompletionMode;
use mkernel_transport_efa::{provider_available, FabricConfig, FabricEndpoint, Transport};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let parsed = v.parse().unwrap_or_else(|e| panic!("{name}={v}: {e}"));
    eprintln!("{name}={parsed}");
    Some(parsed)
}

/// GPUs for ranks 0 and 1, or `None` (skip).
fn devices(test: &str) -> Option<[usize; 2]> {
    let n = gpu_or_skip(test, 1)?;
    if n < 2 {
        eprintln!("{test}: one GPU: both ranks on GPU 0 (performance means nothing)");
        return Some([0, 0]);
    }
    Some([0, 1])
}

fn endpoints(test: &str, provider: &str) -> Option<[FabricEndpoint; 2]> {
    if !provider_available(provider) {
        let required = ["MKERNEL_REQUIRE_PROVIDERS", "MKERNEL_REQUIRE_GPU"].iter().any(|v| std::env::var(v).is_ok_and(|x| x == "1"));
        assert!(!required, "{test}: libfabric provider {provider} not available");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("SKIP {test}: libfabric provider {provider} not available\n").as_bytes());
        return None;
    }
    let config = FabricConfig { provider: provider.into(), queue_depth: 256, max_batch: 16, ..FabricConfig::default() };
    let open = |r| FabricEndpoint::open(r, &config).unwrap_or_else(|e| panic!("{test}: open {provider} endpoint for rank {r}: {e}"));
    Some([open(0), open(1)])
}

fn config(capacity: u64, mode: CompletionMode, timeout: Duration) -> StreamConfig {
    StreamConfig {
        capacity_bytes: capacity,
        chunk_bytes: 256 * KIB as u32,
        send_ctas: 8,
        recv_ctas: 8,
        staging_slots: 4,
        ring_slots: 1024,
        timeout,
        seed: 0x5eed_0005,
        path: None,
        proxy: ProxyConfig { completion_mode: Some(mode), ..ProxyConfig::default() },
    }
}

fn pair(test: &str, provider: &str, cfg: [StreamConfig; 2]) -> Option<(ProxyStream, ProxyStream)> {
    let devs = devices(test)?;
    let [e0, e1] = endpoints(test, provider)?;
    let [c0, c1] = cfg;
    let r0 = StreamRank::prepare(devs[0], e0, 1, c0).unwrap_or_else(|e| panic!("{test}: prepare rank 0: {e}"));
    let r1 = StreamRank::prepare(devs[1], e1, 0, c1).unwrap_or_else(|e| panic!("{test}: prepare rank 1: {e}"));
    let (s0, s1) = connect_pair(r0, r1).unwrap_or_else(|e| panic!("{test}: connect: {e}"));
    Some((s0, s1))
}

/// Both ranks run `epochs` back-to-back epochs of `bytes`, each on its own host thread.
fn run_both(streams: &mut [&mut ProxyStream; 2], bytes: u64, epochs: u32) -> [Vec<EpochReport>; 2] {
    let [a, b] = streams;
    let (ra, rb) = std::thread::scope(|s| {
        let ta = s.spawn(|| (0..epochs).map(|_| a.run_epoch(bytes)).collect::<Result<Vec<_>, Error>>());
        let tb = s.spawn(|| (0..epochs).map(|_| b.run_epoch(bytes)).collect::<Result<Vec<_>, Error>>());
        (ta.join().expect("rank 0 thread panicked"), tb.join().expect("rank 1 thread panicked"))
    });
    match (ra, rb) {
        (Ok(x), Ok(y)) => [x, y],
        (x, y) => panic!("{bytes} bytes: rank 0: {:?}\nrank 1: {:?}", x.err().map(|e| e.to_string()), y.err().map(|e| e.to_string())),
    }
}

/// Checks a few landed ranges on the host against the host mirror of the pattern.
fn host_check(s: &ProxyStream, bytes: u64) {
    let epoch = s.epoch();
    let seed = s.config().seed;
    let span = bytes.min(4 * KIB) as usize;
    for offset in [0, (bytes / 2) & !7, bytes - span as u64] {
        let got = s.landed(offset, span).unwrap();
        for (i, b) in got.iter().enumerate() {
            let at = offset + i as u64;
            let want = (pattern_word(seed, epoch, s.peer(), at / 8) >> (8 * (at % 8))) as u8;
            assert_eq!(*b, want, "rank {} epoch {epoch}: byte {at} of {bytes} from rank {}", s.rank(), s.peer());
        }
    }
}

fn stream_sizes(test: &str, provider: &str, mode: CompletionMode) {
    let max = env_u64("MKERNEL_PROXY_STREAM_MAX_BYTES").unwrap_or(GIB).clamp(64 * KIB, GIB);
    let large_epochs = env_u64("MKERNEL_PROXY_STREAM_LARGE_EPOCHS").unwrap_or(2).max(1) as u32;
    let timeout = Duration::from_secs(20);
    let cfg = config(max.next_multiple_of(256 * KIB), mode, timeout);
    let Some((mut s0, mut s1)) = pair(test, provider, [cfg.clone(), cfg]) else { return };
    assert_eq!(s0.completion_mode(), mode);
    assert_eq!(s0.path(), DataPath::HostStaged, "{provider} cannot register GPU memory");
    eprintln!("{test}: {:?} / {:?}", s0, s1);
    // 64 KiB (one partial chunk), an odd size (partial last chunk), then up to 1 GiB.
    let sizes: [(u64, u32); 6] =
        [(64 * KIB, 100), (MIB + 48, 100), (16 * MIB, 100), (64 * MIB, 100), (256 * MIB, large_epochs), (GIB, large_epochs)];
    for (bytes, epochs) in sizes.into_iter().filter(|(b, _)| *b <= max) {
        let t = Instant::now();
        let reports = run_both(&mut [&mut s0, &mut s1], bytes, epochs);
        let wall = t.elapsed();
        let mut kernel: Vec<f64> = reports[0].iter().chain(&reports[1]).map(|r| r.kernel_ms).collect();
        kernel.sort_by(f64::total_cmp);
        let median = kernel[kernel.len() / 2];
        eprintln!(
            "{test}: {bytes} B x {epochs} epochs in {wall:.2?}: kernel median {median:.3} ms = {:.2} GB/s per direction",
            bytes as f64 / (median * 1e-3) / 1e9
        );
        for s in [&s0, &s1] {
            host_check(s, bytes);
        }
    }
    let stats = s0.proxy_stats();
    eprintln!("{test}: rank 0 proxy: {} commands, batches {:?}, {} arrivals", stats.completed, stats.batch_sizes, stats.arrivals);
    for (r, s) in [s0, s1].into_iter().enumerate() {
        let report = s.shutdown().unwrap_or_else(|e| panic!("{test}: rank {r} shutdown: {e}"));
        assert_eq!(report.stats.consumed, report.stats.completed, "rank {r}");
    }
}

#[test]
fn shm_immediate_completion_streams_64k_to_1g_for_100_epochs() {
    stream_sizes("shm_immediate_completion_streams_64k_to_1g_for_100_epochs", "shm", CompletionMode::Immediate);
}

#[test]
fn tcp_ordered_flag_streams_64k_to_1g_for_100_epochs() {
    let test = "tcp_ordered_flag_streams_64k_to_1g_for_100_epochs";
    if provider_available("tcp") {
        let ep = FabricEndpoint::open(0, &FabricConfig { provider: "tcp".into(), ..FabricConfig::default() }).unwrap();
        assert_eq!(ep.capabilities().ordering, mkernel_transport::Ordering::Ordered, "{test}: tcp must report ordered writes");
    }
    stream_sizes(test, "tcp", CompletionMode::OrderedFlag);
}

#[test]
fn tcp_immediate_completion_streams_64k_to_1g_for_100_epochs() {
    stream_sizes("tcp_immediate_completion_streams_64k_to_1g_for_100_epochs", "tcp", CompletionMode::Immediate);
}

#[test]
fn a_peer_that_never_runs_is_named_in_a_timeout() {
    let test = "a_peer_that_never_runs_is_named_in_a_timeout";
    let timeout = Duration::from_secs(2);
    let cfg = config(4 * MIB, CompletionMode::Immediate, timeout);
    let Some((mut s0, s1)) = pair(test, "shm", [cfg.clone(), cfg]) else { return };
    // Rank 1 never launches (its proxy runs, so rank 0's sends complete).
    let start = Instant::now();
    s0.launch(4 * MIB).unwrap();
    let err = s0.wait().unwrap_err();
    let elapsed = start.elapsed();
    eprintln!("{test}: after {elapsed:?}: {err}");
    match &err {
        Error::StreamTimeout { rank: 0, peer: 1, epoch: 1, expected: 1, observed: 0, what, .. } => {
            assert!(what.contains("arrival"), "{err}");
        }
        other => panic!("expected a StreamTimeout naming peer 1's arrival flag, got: {other}"),
    }
    assert!(err.to_string().contains("rank 1"), "{err}");
    assert!(elapsed < timeout + Duration::from_secs(5), "took {elapsed:?}");
    let again = s0.launch(4 * MIB).unwrap_err();
    assert!(matches!(again, Error::Poisoned { rank: 0, .. }), "{again}");
    drop(s1);
    drop(s0);
}

#[test]
fn a_wrong_pattern_is_counted_not_passed() {
    let test = "a_wrong_pattern_is_counted_not_passed";
    let cfg = config(4 * MIB, CompletionMode::Immediate, Duration::from_secs(20));
    // Rank 1 fills (and expects) another seed: each rank must reject what it receives.
    let other = StreamConfig { seed: cfg.seed ^ 1, ..cfg.clone() };
    let Some((mut s0, mut s1)) = pair(test, "shm", [cfg, other]) else { return };
    let bytes = 2 * MIB + 16;
    let (r0, r1) = std::thread::scope(|s| {
        let a = s.spawn(|| s0.run_epoch(bytes));
        let b = s.spawn(|| s1.run_epoch(bytes));
        (a.join().unwrap(), b.join().unwrap())
    });
    for (r, res) in [r0, r1].into_iter().enumerate() {
        match res {
            Err(Error::StreamMismatch { mismatched_bytes, first_bad, chunks_verified, chunks, epoch: 1, .. }) => {
                assert!(mismatched_bytes > bytes * 9 / 10, "rank {r}: only {mismatched_bytes} of {bytes} bytes differ");
                assert!(first_bad < 64, "rank {r}: first bad byte {first_bad}");
                assert_eq!(chunks_verified, u64::from(chunks), "rank {r}");
            }
            other => panic!("rank {r}: expected StreamMismatch, got {other:?}"),
        }
    }
}

#[test]
fn arguments_are_checked() {
    let test = "arguments_are_checked";
    let cfg = config(MIB, CompletionMode::Immediate, Duration::from_secs(5));
    let Some((mut s0, _s1)) = pair(test, "shm", [cfg.clone(), cfg]) else { return };
    let e = s0.launch(2 * MIB).unwrap_err().to_string();
    assert!(e.contains("`bytes`") && e.contains("capacity"), "{e}");
    let e = s0.launch(1000).unwrap_err().to_string();
    assert!(e.contains("`bytes`") && e.contains("16"), "{e}");
    let e = s0.wait().unwrap_err().to_string();
    assert!(e.contains("`wait`"), "{e}");
    // A peer address from the wrong rank or with another chunk size is refused by name.
    let Some(devs) = devices(test) else { return };
    let Some([e0, e1]) = endpoints(test, "shm") else { return };
    let a = StreamRank::prepare(devs[0], e0, 1, config(MIB, CompletionMode::Immediate, Duration::from_secs(5))).unwrap();
    let b = StreamRank::prepare(devs[1], e1, 0, StreamConfig { chunk_bytes: 64 * KIB as u32, ..config(MIB, CompletionMode::Immediate, Duration::from_secs(5)) })
        .unwrap();
    let e = a.connect(&b.address().unwrap()).unwrap_err().to_string();
    assert!(e.contains("`peer_address`") && e.contains("chunk_bytes"), "{e}");
}
