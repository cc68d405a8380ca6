//! Batching with a fake clock: full batches go out at once, a partial batch waits at
//! most the polling window, commands are grouped per connection, and every command
//! completes with its completion flag set. The engine is stepped by hand, so each
//! assertion is deterministic.

mod common;

use std::time::Duration;

use common::{keys, setup, sim_world, RankBuffers, Recording};
use mkernel_proxy::{
    ManualClock, ProxyConfig, ProxyEngine, Ring, RingLayout, TransferCommand, NO_COMPLETION,
};
use mkernel_transport::sim::{SimConfig, SimEndpoint};

const WAIT: Duration = Duration::from_secs(5);
const BYTES: usize = 64 * 64;

struct Fixture {
    engine: ProxyEngine<Recording<SimEndpoint>, ManualClock>,
    log: std::sync::Arc<std::sync::Mutex<common::Log>>,
    clock: ManualClock,
    ring: Ring,
}

/// Rank 0 proxies towards ranks 1 and 2 over a simulated fabric (unordered, immediate
/// data: one write per command).
fn fixture(max_batch: usize, window_us: u64) -> Fixture {
    let (_fabric, mut eps) = sim_world(
        SimConfig {
            seed: 7,
            ..SimConfig::default()
        },
        3,
    );
    let bufs: Vec<RankBuffers> = eps
        .iter_mut()
        .map(|e| RankBuffers::new(e, 3, BYTES, 64))
        .collect();
    let peer_keys = vec![(1, keys(&eps[1], &bufs[1])), (2, keys(&eps[2], &bufs[2]))];
    let mut ep0 = eps.remove(0);
    let s = setup(&mut ep0, &bufs[0], &peer_keys, 3);
    let (transport, log) = Recording::new(ep0);
    let ring = Ring::host(RingLayout::new(64, 64).unwrap()).unwrap();
    let clock = ManualClock::new();
    let config = ProxyConfig {
        name: "test-proxy".into(),
        max_batch,
        batch_window: Duration::from_micros(window_us),
        ..ProxyConfig::default()
    };
    let engine = ProxyEngine::new(transport, &ring, s, config, clock.clone()).unwrap();
    Fixture {
        engine,
        log,
        clock,
        ring,
    }
}

fn put(peer: u32, i: u32) -> TransferCommand {
    TransferCommand::put(
        peer,
        0,
        u64::from(i % 64) * 64,
        0,
        u64::from(i % 64) * 64,
        64,
    )
}

fn posts(f: &Fixture) -> Vec<(u32, usize)> {
    std::mem::take(&mut f.log.lock().unwrap().posts)
}

#[test]
fn full_batches_go_at_once_and_a_partial_batch_waits_one_window() {
    let mut f = fixture(8, 10);
    let producer = f.ring.producer();
    for i in 0..20 {
        producer.push(&put(1, i), WAIT).unwrap();
    }
    let r = f.engine.step().unwrap();
    assert_eq!(r.consumed, 20);
    assert_eq!(
        posts(&f),
        vec![(1, 8), (1, 8)],
        "two full batches, 4 held back"
    );
    assert_eq!(f.engine.unposted(), 4);

    f.clock.advance(Duration::from_nanos(9_999));
    f.engine.step().unwrap();
    assert_eq!(
        posts(&f),
        vec![],
        "the partial batch waits inside the window"
    );

    f.clock.advance(Duration::from_nanos(1));
    f.engine.step().unwrap();
    assert_eq!(
        posts(&f),
        vec![(1, 4)],
        "the partial batch goes out when the window closes"
    );
    let stats = f.engine.stats();
    assert_eq!(
        (stats.batches, stats.batch_sizes[8], stats.batch_sizes[4]),
        (3, 2, 1)
    );
    assert_eq!(f.ring.tail(), 20, "consumed slots are released at once");
}

#[test]
fn commands_are_grouped_per_connection() {
    let mut f = fixture(8, 10);
    let producer = f.ring.producer();
    for i in 0..3 {
        producer.push(&put(1, i), WAIT).unwrap();
        producer.push(&put(2, i), WAIT).unwrap();
    }
    for i in 3..6 {
        producer.push(&put(1, i), WAIT).unwrap();
    }
    f.engine.step().unwrap();
    assert_eq!(posts(&f), vec![]);
    f.clock.advance(Duration::from_micros(10));
    f.engine.step().unwrap();
    assert_eq!(posts(&f), vec![(1, 6), (2, 3)], "one batch per peer");
}

#[test]
fn a_sparse_arrival_is_posted_alone_after_the_window() {
    let mut f = fixture(8, 10);
    let producer = f.ring.producer();
    producer.push(&put(2, 0), WAIT).unwrap();
    f.engine.step().unwrap();
    f.clock.advance(Duration::from_micros(6));
    // A second command arriving later does not restart the first one's window.
    producer.push(&put(2, 1), WAIT).unwrap();
    f.engine.step().unwrap();
    assert_eq!(posts(&f), vec![]);
    f.clock.advance(Duration::from_micros(4));
    f.engine.step().unwrap();
    assert_eq!(posts(&f), vec![(2, 2)]);
}

#[test]
fn zero_window_posts_every_step_and_batch_size_is_configurable() {
    let mut f = fixture(3, 0);
    let producer = f.ring.producer();
    for i in 0..7 {
        producer.push(&put(1, i), WAIT).unwrap();
    }
    f.engine.step().unwrap();
    assert_eq!(posts(&f), vec![(1, 3), (1, 3), (1, 1)]);
    producer.push(&put(1, 7), WAIT).unwrap();
    f.engine.step().unwrap();
    assert_eq!(posts(&f), vec![(1, 1)]);
}

#[test]
fn every_command_completes_and_sets_its_completion_flag() {
    let mut f = fixture(8, 10);
    let producer = f.ring.producer();
    for i in 0..40u32 {
        let cmd = put(1 + i % 2, i).with_epoch(5).with_completion(i);
        producer.push(&cmd, WAIT).unwrap();
    }
    producer.push(&put(1, 40), WAIT).unwrap();
    let mut steps = 0;
    while f.engine.outstanding() > 0 || f.ring.tail() < 41 {
        f.clock.advance(Duration::from_micros(1));
        f.engine.step().unwrap();
        steps += 1;
        assert!(steps < 10_000, "no progress: {:?}", f.engine);
    }
    for i in 0..40 {
        assert_eq!(
            f.ring.completion_epoch(i).unwrap(),
            5,
            "completion flag {i}"
        );
    }
    assert_eq!(
        f.ring.completion_epoch(40).unwrap(),
        0,
        "flag 40 was never named"
    );
    assert_eq!(f.ring.completed(), 41);
    assert_eq!(f.engine.stats().completed, 41);
    assert_eq!(NO_COMPLETION, u32::MAX);
}

#[test]
fn the_proxy_stops_reading_the_ring_at_max_outstanding() {
    let (_fabric, mut eps) = sim_world(SimConfig::default(), 2);
    let bufs: Vec<RankBuffers> = eps
        .iter_mut()
        .map(|e| RankBuffers::new(e, 2, BYTES, 8))
        .collect();
    let peer_keys = vec![(1, keys(&eps[1], &bufs[1]))];
    let mut ep0 = eps.remove(0);
    let s = setup(&mut ep0, &bufs[0], &peer_keys, 2);
    let (mut transport, _log) = Recording::new(ep0);
    transport.swallow_completions = true;
    let ring = Ring::host(RingLayout::new(16, 0).unwrap()).unwrap();
    let config = ProxyConfig {
        max_outstanding: 5,
        batch_window: Duration::ZERO,
        ..ProxyConfig::default()
    };
    let mut engine = ProxyEngine::new(transport, &ring, s, config, ManualClock::new()).unwrap();
    let producer = ring.producer();
    for i in 0..12 {
        producer.push(&put(1, i), WAIT).unwrap();
    }
    for _ in 0..10 {
        engine.step().unwrap();
    }
    assert_eq!(ring.tail(), 5, "no more than max_outstanding consumed");
    assert_eq!(engine.outstanding(), 5);
}
