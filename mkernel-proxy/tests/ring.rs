//! The ring protocol on its own: many concurrent CPU producers, one consumer; no lost,
//! duplicated, reordered (per producer) or torn command; bounded back-pressure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mkernel_proxy::{
    AbortCode, ProxyError, Ring, RingFault, RingLayout, TransferCommand, CONTROL_BYTES,
};

const WAIT: Duration = Duration::from_secs(20);

fn mix(p: u64, i: u64) -> u64 {
    let mut z = (p << 40) ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A command whose every field is derived from (producer, index): a torn read (fields
/// from two different commands) fails `check`.
fn command(p: u32, i: u32) -> TransferCommand {
    let h = mix(u64::from(p), u64::from(i));
    TransferCommand {
        seq: 0,
        kind: 1 + (h & 1) as u16,
        local_region: (h >> 1) as u16,
        peer: p,
        remote_region: (h >> 17) as u16,
        flags: (h >> 33) as u16,
        local_offset: h,
        remote_offset: !h,
        length: (h >> 7) as u32,
        chunk: i,
        epoch: (h >> 29) as u32,
        completion: (h >> 13) as u32 ^ i,
    }
}

fn check(ticket: u64, got: &TransferCommand) {
    let want = command(got.peer, got.chunk);
    assert_eq!(
        got.seq,
        (ticket + 1) as u32,
        "ticket {ticket}: sequence word"
    );
    let mut body = *got;
    body.seq = 0;
    assert_eq!(body, want, "ticket {ticket}: torn or corrupt command");
}

#[test]
fn many_producers_no_loss_duplication_or_tearing() {
    const PRODUCERS: u32 = 8;
    const PER_PRODUCER: u32 = 20_000;
    // 64 slots for 160k commands: producers spend most of the run in back-pressure.
    let ring = Ring::host(RingLayout::new(64, 0).unwrap()).unwrap();
    let mut consumer = ring.consumer().unwrap();
    let threads: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let producer = ring.producer();
            std::thread::spawn(move || {
                let mut last = None;
                for i in 0..PER_PRODUCER {
                    let t = producer.push(&command(p, i), WAIT).unwrap();
                    assert!(last.is_none_or(|l| t > l), "tickets grow per producer");
                    last = Some(t);
                }
            })
        })
        .collect();
    let mut next = vec![0u32; PRODUCERS as usize];
    let total = u64::from(PRODUCERS * PER_PRODUCER);
    let start = Instant::now();
    let mut seen = 0u64;
    let mut since_publish = 0;
    while seen < total {
        match consumer.try_pop() {
            Some((ticket, cmd)) => {
                assert_eq!(ticket, seen, "tickets are consumed in order");
                check(ticket, &cmd);
                let p = cmd.peer as usize;
                // Each producer's tickets are claimed in program order and consumed in
                // ticket order: exactly the next index, or something was lost/duplicated.
                assert_eq!(
                    cmd.chunk, next[p],
                    "producer {p}: lost or duplicated command"
                );
                next[p] += 1;
                seen += 1;
                since_publish += 1;
                if since_publish == 7 {
                    consumer.publish_tail();
                    since_publish = 0;
                }
            }
            None => {
                consumer.publish_tail();
                assert!(start.elapsed() < WAIT, "stalled at {seen} of {total}");
                std::thread::yield_now();
            }
        }
    }
    consumer.publish_tail();
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        consumer.try_pop().is_none(),
        "nothing beyond the last ticket"
    );
    assert_eq!(ring.head(), total);
    assert_eq!(ring.tail(), total);
    assert!(next.iter().all(|&n| n == PER_PRODUCER));
    assert!(ring.fault().is_none());
}

#[test]
fn full_ring_times_out_with_a_report_and_records_the_fault() {
    let ring = Ring::host(RingLayout::new(4, 0).unwrap()).unwrap();
    let producer = ring.producer();
    for i in 0..4 {
        assert_eq!(producer.push(&command(0, i), WAIT).unwrap(), u64::from(i));
    }
    let start = Instant::now();
    let err = producer
        .push(&command(0, 4), Duration::from_millis(50))
        .unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the wait is bounded"
    );
    match &err {
        ProxyError::RingFull {
            ticket,
            tail,
            slots,
            ..
        } => {
            assert_eq!((*ticket, *tail, *slots), (4, 0, 4));
        }
        other => panic!("expected RingFull, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("ticket 4") && msg.contains("tail 0"), "{msg}");
    match ring.fault() {
        Some(ProxyError::ProducerFault {
            fault: RingFault::RingFull,
            ticket: 4,
            tail: 0,
            rank,
            ..
        }) => {
            assert_eq!(rank, u32::MAX, "host producer");
        }
        other => panic!("expected a recorded RingFull fault, got {other:?}"),
    }
}

#[test]
fn back_pressure_releases_when_the_consumer_advances() {
    let ring = Ring::host(RingLayout::new(4, 0).unwrap()).unwrap();
    let producer = ring.producer();
    for i in 0..4 {
        producer.push(&command(1, i), WAIT).unwrap();
    }
    let released = Arc::new(AtomicBool::new(false));
    let flag = released.clone();
    let mut consumer = ring.consumer().unwrap();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        let (ticket, cmd) = consumer.try_pop().unwrap();
        check(ticket, &cmd);
        flag.store(true, Ordering::SeqCst);
        consumer.publish_tail();
        consumer
    });
    let ticket = producer.push(&command(1, 4), WAIT).unwrap();
    assert!(
        released.load(Ordering::SeqCst),
        "push returned before the slot was released"
    );
    assert_eq!(ticket, 4);
    let mut consumer = t.join().unwrap();
    for expect in 1..5u64 {
        let (ticket, cmd) = consumer.try_pop().unwrap();
        assert_eq!(ticket, expect);
        check(ticket, &cmd);
    }
    assert!(ring.fault().is_none());
}

#[test]
fn abort_wakes_a_producer_waiting_for_space() {
    let ring = Ring::host(RingLayout::new(2, 0).unwrap()).unwrap();
    let producer = ring.producer();
    producer.push(&command(0, 0), WAIT).unwrap();
    producer.push(&command(0, 1), WAIT).unwrap();
    let waiter = {
        let producer = producer.clone();
        std::thread::spawn(move || producer.push(&command(0, 2), WAIT))
    };
    std::thread::sleep(Duration::from_millis(20));
    assert!(ring.set_abort(AbortCode::Host));
    assert!(
        !ring.set_abort(AbortCode::Transport),
        "the first reason stays"
    );
    match waiter.join().unwrap() {
        Err(ProxyError::Aborted {
            code: AbortCode::Host,
        }) => {}
        other => panic!("expected Aborted(Host), got {other:?}"),
    }
    assert!(matches!(
        producer.push(&command(0, 3), WAIT),
        Err(ProxyError::Aborted {
            code: AbortCode::Host
        })
    ));
    assert!(matches!(
        ring.fault(),
        Some(ProxyError::ProducerFault {
            fault: RingFault::Aborted,
            ticket: 2,
            ..
        })
    ));
}

#[test]
fn single_slot_ring_survives_many_laps() {
    let ring = Ring::host(RingLayout::new(1, 0).unwrap()).unwrap();
    let producer = ring.producer();
    let mut consumer = ring.consumer().unwrap();
    for i in 0..10_000u32 {
        assert!(
            consumer.try_pop().is_none(),
            "lap {i}: stale slot read as new"
        );
        producer.push(&command(3, i), WAIT).unwrap();
        let (ticket, cmd) = consumer.try_pop().unwrap();
        assert_eq!(ticket, u64::from(i));
        check(ticket, &cmd);
        consumer.publish_tail();
    }
}

#[test]
fn one_consumer_at_a_time_and_layout_rules() {
    let ring = Ring::host(RingLayout::new(8, 4).unwrap()).unwrap();
    let first = ring.consumer().unwrap();
    assert!(matches!(
        ring.consumer(),
        Err(ProxyError::InvalidArgument { arg: "ring", .. })
    ));
    drop(first);
    assert!(ring.consumer().is_ok());

    for bad in [0, 3, 12, (1 << 30) + 1] {
        assert!(RingLayout::new(bad, 0).is_err(), "{bad} slots accepted");
    }
    let layout = RingLayout::new(8, 4).unwrap();
    assert_eq!(layout.slots_offset(), CONTROL_BYTES);
    assert_eq!(layout.bytes(), 192 + 8 * 48 + 4 * 8);
    let small = mkernel_transport::HostBuffer::new(layout.bytes() - 1).unwrap();
    // HostBuffer rounds up to a page but reports the requested length.
    assert!(Ring::new(small, layout).is_err());
    assert!(ring.completion_epoch(4).is_err());
    assert_eq!(ring.completion_epoch(3).unwrap(), 0);
    assert!(
        ring.view(None, WAIT, 0).is_err(),
        "host memory has no device address"
    );
}
