//! Two ranks, each with a ring and a proxy thread, stream chunks to each other through
//! a transport: CPU threads play the SEND CTAs (publish `PutSignal` commands), the main
//! thread plays the RECV CTAs (waits on arrival flags, checks every byte, then poisons
//! the slot so the next epoch must rewrite it). Both completion adaptors, over the
//! simulated transport (ordered and unordered, pieces delayed and reordered) and over
//! libfabric's `tcp` provider on loopback when it is available.

mod common;

use std::time::{Duration, Instant};

use common::{first_mismatch, keys, pattern, setup, sim_world, RankBuffers};
use mkernel_proxy::{
    MonotonicClock, Proxy, ProxyConfig, ProxyEngine, Ring, RingLayout, RingProducer,
    TransferCommand,
};
use mkernel_transport::adaptor::CompletionMode;
use mkernel_transport::sim::SimConfig;
use mkernel_transport::{Ordering, Rank, Transport};
use mkernel_transport_efa::{provider_available, FabricConfig, FabricEndpoint};

const WAIT: Duration = Duration::from_secs(30);

struct Plan {
    label: String,
    epochs: u64,
    chunks: u32,
    chunk_bytes: usize,
    ring_slots: u32,
    max_batch: usize,
    mode: Option<CompletionMode>,
}

fn exchange<T: Transport + Send + 'static>(mut eps: Vec<T>, plan: &Plan) {
    let world = eps.len() as u32;
    let bytes = plan.chunks as usize * plan.chunk_bytes;
    let bufs: Vec<RankBuffers> = eps
        .iter_mut()
        .map(|e| RankBuffers::new(e, world, bytes, plan.chunks))
        .collect();
    let all_keys: Vec<_> = eps.iter().zip(&bufs).map(|(e, b)| keys(e, b)).collect();
    let mut proxies = Vec::new();
    let mut producers: Vec<RingProducer> = Vec::new();
    let mut rings = Vec::new();
    for (r, mut ep) in eps.into_iter().enumerate() {
        let peer_keys: Vec<_> = (0..world as usize)
            .filter(|&p| p != r)
            .map(|p| (p as Rank, all_keys[p].clone()))
            .collect();
        let s = setup(&mut ep, &bufs[r], &peer_keys, world);
        let ring =
            Ring::host(RingLayout::new(plan.ring_slots, plan.chunks * world).unwrap()).unwrap();
        let config = ProxyConfig {
            name: format!("proxy-r{r}"),
            max_batch: plan.max_batch,
            batch_window: Duration::from_micros(20),
            idle_spins: 64,
            completion_mode: plan.mode,
            ..ProxyConfig::default()
        };
        let engine = ProxyEngine::new(ep, &ring, s, config, MonotonicClock::default()).unwrap();
        if let Some(m) = plan.mode {
            assert_eq!(engine.completion_mode(), m);
        }
        eprintln!(
            "{}: rank {r} uses {:?}",
            plan.label,
            engine.completion_mode()
        );
        producers.push(ring.producer());
        rings.push(ring);
        proxies.push(Proxy::spawn(engine).unwrap());
    }
    let arrivals: Vec<_> = bufs.iter().map(|b| b.arrivals(world)).collect();
    for epoch in 1..=plan.epochs {
        // ---- SEND: one producer thread per rank --------------------------------------
        let senders: Vec<_> = (0..world)
            .map(|r| {
                let producer = producers[r as usize].clone();
                let src = bufs[r as usize].src.clone();
                let (chunks, chunk_bytes) = (plan.chunks, plan.chunk_bytes);
                std::thread::spawn(move || {
                    let ring = producer.ring();
                    // The source may be overwritten once the last epoch's writes completed.
                    for i in (0..chunks * world).filter(|i| i / chunks != r) {
                        ring.wait_completion(i, epoch - 1, WAIT).unwrap();
                    }
                    src.write(0, &pattern(r, epoch, bytes)).unwrap();
                    for peer in (0..world).filter(|&p| p != r) {
                        for c in 0..chunks {
                            let off = c as u64 * chunk_bytes as u64;
                            let cmd = TransferCommand::put(
                                peer,
                                0,
                                off,
                                0,
                                r as u64 * bytes as u64 + off,
                                chunk_bytes as u32,
                            )
                            .signal(r * chunks + c, epoch as u32)
                            .with_completion(peer * chunks + c);
                            producer.push(&cmd, WAIT).unwrap();
                        }
                    }
                })
            })
            .collect();
        // ---- RECV: wait on every arrival flag, check every byte, poison -------------
        for (r, b) in bufs.iter().enumerate() {
            for src in (0..world).filter(|&s| s as usize != r) {
                for c in 0..plan.chunks {
                    let flag = src * plan.chunks + c;
                    let start = Instant::now();
                    loop {
                        let seen = arrivals[r].epoch(flag).unwrap();
                        if seen >= epoch {
                            assert_eq!(
                                seen, epoch,
                                "{}: rank {r} flag {flag} ran ahead",
                                plan.label
                            );
                            break;
                        }
                        for p in &proxies {
                            if let Err(e) = p.check() {
                                panic!("{}: proxy {} failed: {e}", plan.label, p.name());
                            }
                        }
                        assert!(
                            start.elapsed() < WAIT,
                            "{}: rank {r} waited for chunk {c} from {src}, epoch {epoch}: flag {seen}; \
                             rings tail/completed {:?}",
                            plan.label,
                            rings.iter().map(|g| (g.tail(), g.completed())).collect::<Vec<_>>()
                        );
                        std::thread::yield_now();
                    }
                }
                let at = src as usize * bytes;
                let mut got = vec![0u8; bytes];
                b.dst.read(at, &mut got).unwrap();
                let want = pattern(src, epoch, bytes);
                if let Some(i) = first_mismatch(&got, &want) {
                    panic!(
                        "{}: rank {r}, data from {src}, epoch {epoch}: first bad byte {i} (chunk {}, \
                         offset {}): got {:#04x}, want {:#04x}",
                        plan.label,
                        i / plan.chunk_bytes,
                        i % plan.chunk_bytes,
                        got[i],
                        want[i]
                    );
                }
                b.dst.write(at, &vec![0u8; bytes]).unwrap();
            }
        }
        for s in senders {
            s.join().unwrap();
        }
    }
    let per_rank = plan.epochs * u64::from(plan.chunks) * u64::from(world - 1);
    for (r, (p, ring)) in proxies.into_iter().zip(&rings).enumerate() {
        let report = p
            .shutdown()
            .unwrap_or_else(|e| panic!("{}: rank {r}: {e}", plan.label));
        assert_eq!(report.stats.consumed, per_rank);
        assert_eq!(report.stats.completed, per_rank);
        assert_eq!(ring.completed(), per_rank);
        for i in 0..plan.chunks * world {
            let want = if i / plan.chunks == r as u32 {
                0
            } else {
                plan.epochs
            };
            assert_eq!(
                ring.completion_epoch(i).unwrap(),
                want,
                "rank {r} completion flag {i}"
            );
        }
        eprintln!(
            "{}: rank {r}: {} commands in {} batches (sizes {:?}), {} queue-full, {} arrivals",
            plan.label,
            report.stats.consumed,
            report.stats.batches,
            report.stats.batch_sizes,
            report.stats.queue_full,
            report.stats.arrivals
        );
    }
}

fn sim_plan(label: &str) -> Plan {
    Plan {
        label: label.into(),
        epochs: 30,
        chunks: 24,
        chunk_bytes: 1000,
        ring_slots: 16,
        max_batch: 8,
        mode: None,
    }
}

#[test]
fn two_proxies_over_the_unordered_sim_with_immediate_completion() {
    let config = SimConfig {
        seed: 11,
        ordering: Ordering::Unordered,
        max_in_flight: 32,
        ..SimConfig::default()
    };
    let (_fabric, eps) = sim_world(config, 2);
    exchange(
        eps,
        &Plan {
            mode: Some(CompletionMode::Immediate),
            ..sim_plan("sim-unordered-imm")
        },
    );
}

#[test]
fn two_proxies_over_the_ordered_sim_with_ordered_flags() {
    let config = SimConfig {
        seed: 12,
        ordering: Ordering::Ordered,
        immediate_data: false,
        max_in_flight: 32,
        ..SimConfig::default()
    };
    let (_fabric, eps) = sim_world(config, 2);
    exchange(
        eps,
        &Plan {
            mode: Some(CompletionMode::OrderedFlag),
            ..sim_plan("sim-ordered-flag")
        },
    );
}

#[test]
fn three_proxies_over_the_sim_all_to_all() {
    let config = SimConfig {
        seed: 13,
        max_batch: 4,
        max_in_flight: 16,
        ..SimConfig::default()
    };
    let (_fabric, eps) = sim_world(config, 3);
    exchange(
        eps,
        &Plan {
            epochs: 10,
            ring_slots: 8,
            max_batch: 5,
            ..sim_plan("sim-3-ranks")
        },
    );
}

fn fabric_pair(provider: &str) -> Option<Vec<FabricEndpoint>> {
    if !provider_available(provider) {
        eprintln!("SKIP: libfabric {provider} provider not available");
        return None;
    }
    let config = FabricConfig {
        provider: provider.into(),
        queue_depth: 64,
        max_batch: 16,
        ..FabricConfig::default()
    };
    let mut eps: Vec<FabricEndpoint> = (0..2)
        .map(|r| FabricEndpoint::open(r, &config).unwrap())
        .collect();
    let addrs: Vec<Vec<u8>> = eps.iter().map(|e| e.address()).collect();
    eps[0].add_peer(1, &addrs[1]).unwrap();
    eps[1].add_peer(0, &addrs[0]).unwrap();
    Some(eps)
}

fn tcp_plan(label: &str, mode: CompletionMode) -> Plan {
    Plan {
        label: label.into(),
        epochs: 8,
        chunks: 8,
        chunk_bytes: 16 * 1024 + 24,
        ring_slots: 8,
        max_batch: 8,
        mode: Some(mode),
    }
}

#[test]
fn two_proxies_over_libfabric_tcp_with_both_adaptors() {
    let Some(eps) = fabric_pair("tcp") else {
        return;
    };
    let caps = eps[0].capabilities().clone();
    eprintln!("tcp capabilities: {caps:?}");
    if caps.ordering == Ordering::Ordered {
        exchange(
            eps,
            &tcp_plan("tcp-ordered-flag", CompletionMode::OrderedFlag),
        );
    } else {
        eprintln!(
            "SKIP tcp ordered-flag: provider reports {:?}",
            caps.ordering
        );
        drop(eps);
    }
    if caps.immediate_data {
        let Some(eps) = fabric_pair("tcp") else {
            return;
        };
        exchange(eps, &tcp_plan("tcp-immediate", CompletionMode::Immediate));
    } else {
        eprintln!("SKIP tcp immediate: provider has no immediate data");
    }
}

#[test]
fn two_proxies_over_libfabric_shm_with_immediate_completion() {
    let Some(eps) = fabric_pair("shm") else {
        return;
    };
    let caps = eps[0].capabilities().clone();
    eprintln!("shm capabilities: {caps:?}");
    if !caps.immediate_data {
        eprintln!("SKIP shm immediate: provider has no immediate data");
        return;
    }
    exchange(eps, &tcp_plan("shm-immediate", CompletionMode::Immediate));
}

#[test]
fn seeded_stress_over_the_sim_with_random_shapes() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    for seed in 0..6u64 {
        let ordered = seed % 2 == 0;
        let config = SimConfig {
            seed: 100 + seed,
            ordering: if ordered {
                Ordering::Ordered
            } else {
                Ordering::Unordered
            },
            immediate_data: !ordered,
            max_delay: rng.random_range(0..16),
            max_pieces: rng.random_range(1..6),
            max_batch: rng.random_range(1..17),
            max_in_flight: rng.random_range(2..64),
            ..SimConfig::default()
        };
        let plan = Plan {
            label: format!("stress seed {seed} ({config:?})"),
            epochs: 6,
            chunks: rng.random_range(1..20),
            chunk_bytes: rng.random_range(1..3000),
            ring_slots: 1 << rng.random_range(0..6),
            max_batch: rng.random_range(1..12),
            mode: None,
        };
        let (_fabric, eps) = sim_world(config, 2);
        exchange(eps, &plan);
    }
}
