//! Error propagation: a failing post, a failing write, a malformed command and a
//! producer fault each surface as the proxy's first error on the next host call, set
//! the abort word producers poll, and never hang. Shutdown drains or reports.

mod common;

use std::time::{Duration, Instant};

use common::{keys, setup, sim_world, RankBuffers, Recording};
use mkernel_proxy::{
    AbortCode, ManualClock, MonotonicClock, Proxy, ProxyConfig, ProxyEngine, ProxyError, Ring,
    RingFault, RingLayout, TransferCommand,
};
use mkernel_transport::sim::{SimConfig, SimEndpoint, SimFabric};
use mkernel_transport::TransportError;

const WAIT: Duration = Duration::from_secs(10);
const BYTES: usize = 4096;

fn world() -> (SimFabric, Recording<SimEndpoint>, mkernel_proxy::ProxySetup) {
    let (fabric, mut eps) = sim_world(
        SimConfig {
            seed: 3,
            ..SimConfig::default()
        },
        2,
    );
    let bufs: Vec<RankBuffers> = eps
        .iter_mut()
        .map(|e| RankBuffers::new(e, 2, BYTES, 8))
        .collect();
    let peer_keys = vec![(1, keys(&eps[1], &bufs[1]))];
    let mut ep0 = eps.remove(0);
    let s = setup(&mut ep0, &bufs[0], &peer_keys, 2);
    // Rank 1's endpoint may be dropped: the fabric keeps its registrations.
    drop(eps);
    let (t, _log) = Recording::new(ep0);
    (fabric, t, s)
}

fn config() -> ProxyConfig {
    ProxyConfig {
        name: "err-proxy".into(),
        batch_window: Duration::ZERO,
        drain_timeout: Duration::from_millis(300),
        ..ProxyConfig::default()
    }
}

fn put(i: u32) -> TransferCommand {
    TransferCommand::put(1, 0, 0, 0, u64::from(i % 4) * 64, 64).with_completion(i % 4)
}

#[test]
fn failing_post_is_surfaced_and_sets_the_abort_flag() {
    let (_fabric, mut t, s) = world();
    t.fail_posts = Some(TransportError::PeerGone {
        peer: 1,
        detail: "injected".into(),
    });
    let ring = Ring::host(RingLayout::new(8, 4).unwrap()).unwrap();
    let proxy =
        Proxy::spawn(ProxyEngine::new(t, &ring, s, config(), MonotonicClock::default()).unwrap())
            .unwrap();
    let producer = ring.producer();
    producer.push(&put(0), WAIT).unwrap();
    let err = proxy.wait_completed(1, WAIT).unwrap_err();
    match &err {
        ProxyError::Post {
            peer: 1,
            source: TransportError::PeerGone { .. },
            ..
        } => {}
        other => panic!("expected Post/PeerGone, got {other}"),
    }
    assert_eq!(
        ring.abort_code(),
        AbortCode::Transport,
        "GPU-visible abort word"
    );
    // The GPU side polls the abort word: a producer gives up instead of hanging.
    let start = Instant::now();
    assert!(matches!(
        producer.push(&put(1), WAIT),
        Err(ProxyError::Aborted {
            code: AbortCode::Transport
        })
    ));
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(
        proxy.check().unwrap_err(),
        err,
        "every later host call returns the first error"
    );
    assert_eq!(
        ring.wait_completion(0, 1, WAIT),
        Err(ProxyError::Aborted {
            code: AbortCode::Transport
        })
    );
    assert_eq!(proxy.shutdown().unwrap_err(), err);
}

#[test]
fn failing_write_completion_is_surfaced() {
    let (fabric, t, s) = world();
    let ring = Ring::host(RingLayout::new(8, 4).unwrap()).unwrap();
    let mut engine = ProxyEngine::new(t, &ring, s, config(), ManualClock::new()).unwrap();
    ring.producer().push(&put(2).with_epoch(9), WAIT).unwrap();
    let r = engine.step().unwrap();
    assert_eq!(r.posted_writes, 1);
    // The peer dies while the write is in flight: it completes with an error.
    fabric.fail_peer(1).unwrap();
    let mut err = None;
    for _ in 0..1000 {
        if let Err(e) = engine.step() {
            err = Some(e);
            break;
        }
    }
    match err {
        Some(ProxyError::WriteFailed {
            ticket: 0,
            peer: 1,
            epoch: 9,
            source: TransportError::PeerGone { .. },
            ..
        }) => {}
        other => panic!("expected WriteFailed, got {other:?}"),
    }
    assert!(engine.failed());
    assert_eq!(ring.abort_code(), AbortCode::Transport);
    assert_eq!(
        ring.completion_epoch(2).unwrap(),
        0,
        "a failed command never completes"
    );
}

#[test]
fn malformed_commands_are_rejected_with_their_ticket() {
    let cases: Vec<(TransferCommand, &str)> = vec![
        (TransferCommand { kind: 7, ..put(0) }, "unknown kind 7"),
        (
            TransferCommand { peer: 5, ..put(0) },
            "rank 5 is not a peer",
        ),
        (
            TransferCommand {
                local_region: 3,
                ..put(0)
            },
            "local region 3",
        ),
        (
            TransferCommand {
                remote_region: 1,
                ..put(0)
            },
            "remote region 1",
        ),
        (
            TransferCommand {
                local_offset: 4090,
                ..put(0)
            },
            "local bytes [4090",
        ),
        (put(0).signal(99, 1), "chunk 99"),
        (put(0).with_completion(4), "completion index 4"),
        (put(0).signal(1, 0), "epoch 0"),
    ];
    for (cmd, want) in cases {
        let (_fabric, t, s) = world();
        let ring = Ring::host(RingLayout::new(8, 4).unwrap()).unwrap();
        let mut engine = ProxyEngine::new(t, &ring, s, config(), ManualClock::new()).unwrap();
        ring.producer().push(&put(0), WAIT).unwrap();
        ring.producer().push(&cmd, WAIT).unwrap();
        let err = engine.step().unwrap_err();
        assert!(
            matches!(err, ProxyError::BadCommand { ticket: 1, .. }),
            "{err}"
        );
        assert!(err.to_string().contains(want), "{want:?} not in: {err}");
        assert_eq!(ring.abort_code(), AbortCode::BadCommand);
    }
}

#[test]
fn producer_fault_is_reported_by_the_proxy() {
    let (_fabric, t, s) = world();
    let ring = Ring::host(RingLayout::new(2, 4).unwrap()).unwrap();
    let mut engine = ProxyEngine::new(t, &ring, s, config(), ManualClock::new()).unwrap();
    let producer = ring.producer();
    producer.push(&put(0), WAIT).unwrap();
    producer.push(&put(1), WAIT).unwrap();
    // The proxy is not stepped: the third producer times out on back-pressure.
    assert!(matches!(
        producer.push(&put(2), Duration::from_millis(20)),
        Err(ProxyError::RingFull {
            ticket: 2,
            tail: 0,
            slots: 2,
            ..
        })
    ));
    let err = engine.step().unwrap_err();
    match &err {
        ProxyError::ProducerFault {
            fault: RingFault::RingFull,
            ticket: 2,
            tail: 0,
            ..
        } => {}
        other => panic!("expected ProducerFault, got {other}"),
    }
    assert!(err.to_string().contains("ticket 2"), "{err}");
    assert_eq!(ring.abort_code(), AbortCode::ProducerFault);
}

#[test]
fn clean_shutdown_drains_partial_batches_and_in_flight_writes() {
    let (_fabric, t, s) = world();
    let ring = Ring::host(RingLayout::new(64, 4).unwrap()).unwrap();
    // A window far longer than the test: only the drain can post the partial batch.
    let config = ProxyConfig {
        batch_window: Duration::from_secs(3600),
        max_batch: 8,
        ..config()
    };
    let proxy =
        Proxy::spawn(ProxyEngine::new(t, &ring, s, config, MonotonicClock::default()).unwrap())
            .unwrap();
    let producer = ring.producer();
    for i in 0..13 {
        producer.push(&put(i).with_epoch(2), WAIT).unwrap();
    }
    proxy.wait_completed(8, WAIT).unwrap();
    let report = proxy.shutdown().unwrap();
    assert_eq!(report.stats.consumed, 13);
    assert_eq!(report.stats.completed, 13);
    assert_eq!(report.stats.batch_sizes[8], 1);
    assert_eq!(report.stats.batch_sizes[5], 1);
    assert_eq!(ring.completed(), 13);
    for i in 0..4 {
        assert_eq!(ring.completion_epoch(i).unwrap(), 2);
    }
}

#[test]
fn shutdown_reports_commands_that_never_complete() {
    let (_fabric, mut t, s) = world();
    t.swallow_completions = true;
    let ring = Ring::host(RingLayout::new(16, 4).unwrap()).unwrap();
    let proxy =
        Proxy::spawn(ProxyEngine::new(t, &ring, s, config(), MonotonicClock::default()).unwrap())
            .unwrap();
    let producer = ring.producer();
    for i in 0..5 {
        producer.push(&put(i), WAIT).unwrap();
    }
    let start = Instant::now();
    while ring.tail() < 5 {
        assert!(start.elapsed() < WAIT);
        std::thread::yield_now();
    }
    let err = proxy.shutdown().unwrap_err();
    match &err {
        ProxyError::ShutdownIncomplete {
            consumed: 5,
            completed: 0,
            in_flight: 5,
            unposted: 0,
            ..
        } => {}
        other => panic!("expected ShutdownIncomplete, got {other}"),
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the drain is bounded"
    );
    assert_eq!(ring.abort_code(), AbortCode::Shutdown);
}

#[test]
fn host_abort_stops_the_proxy_and_producers() {
    let (_fabric, t, s) = world();
    let ring = Ring::host(RingLayout::new(8, 4).unwrap()).unwrap();
    let proxy =
        Proxy::spawn(ProxyEngine::new(t, &ring, s, config(), MonotonicClock::default()).unwrap())
            .unwrap();
    proxy.abort();
    assert_eq!(ring.abort_code(), AbortCode::Host);
    assert!(matches!(
        proxy.check(),
        Err(ProxyError::Aborted {
            code: AbortCode::Host
        })
    ));
    assert!(matches!(
        ring.producer().push(&put(0), WAIT),
        Err(ProxyError::Aborted { .. })
    ));
    assert!(matches!(proxy.shutdown(), Err(ProxyError::Aborted { .. })));
}

#[test]
fn the_ordered_flag_adaptor_is_refused_on_an_unordered_transport() {
    let (_fabric, t, s) = world();
    let ring = Ring::host(RingLayout::new(8, 4).unwrap()).unwrap();
    let config = ProxyConfig {
        completion_mode: Some(mkernel_transport::adaptor::CompletionMode::OrderedFlag),
        ..config()
    };
    let err = ProxyEngine::new(t, &ring, s, config, ManualClock::new()).unwrap_err();
    assert!(
        matches!(
            err,
            ProxyError::Transport(TransportError::CapabilityMissing { .. })
        ),
        "{err}"
    );
    let bad = ProxyConfig {
        max_batch: 0,
        ..ProxyConfig::default()
    };
    let (_fabric, t, s) = world();
    let err = ProxyEngine::new(t, &ring, s, bad, ManualClock::new()).unwrap_err();
    assert!(err.to_string().contains("config.max_batch"), "{err}");
}
