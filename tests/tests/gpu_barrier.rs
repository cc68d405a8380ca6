//! GPU: the device-side barrier of the ranks (`Communicator::device_barrier`) holds each
//! rank's stream until every rank's stream reaches it, survives a rank running ahead by
//! many barriers, and reports a rank that never arrives (two ranks on two GPUs, or on one
//! GPU when only one is present); the host gate (`HostGate`) holds a stream until it is
//! opened and reports one that expired. Skips without a GPU.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{sys::CUevent_flags, CudaStream};
use mkernel::{CommConfig, Communicator, Error};
use mkernel_tests::gpu_or_skip;

fn pair(test: &str, timeout: Duration) -> Option<(Vec<Communicator>, Vec<Arc<CudaStream>>)> {
    let n = gpu_or_skip(test, 1)?;
    let devices = if n >= 2 { [0, 1] } else { [0, 0] };
    let comms = Communicator::local_group(&devices, CommConfig { max_output_elems: 1 << 16, timeout, ..Default::default() }).unwrap();
    let streams = comms.iter().map(|c| c.context().new_stream().unwrap()).collect();
    Some((comms, streams))
}

#[test]
fn barrier_holds_a_rank_until_its_peer_arrives() {
    let Some((comms, streams)) = pair("barrier_holds_a_rank_until_its_peer_arrives", Duration::from_secs(20)) else { return };
    // One untimed barrier first: the first launch compiles or loads the kernel on the
    // host, which would otherwise count as waiting.
    for (c, s) in comms.iter().zip(&streams) {
        c.device_barrier(s).unwrap();
    }
    for (c, s) in comms.iter().zip(&streams) {
        c.synchronize(s).unwrap();
    }
    for delay_ms in [300u64, 50] {
        held_for_a_late_peer(&comms, &streams, delay_ms);
    }
}

/// Rank 0 enqueues a barrier, rank 1 `delay_ms` later (host time): rank 0's stream must
/// pass it only after rank 1's arrived.
fn held_for_a_late_peer(comms: &[Communicator], streams: &[Arc<CudaStream>], delay_ms: u64) {
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let before = comms[0].context().new_event(timing).unwrap();
    let after = comms[0].context().new_event(timing).unwrap();
    before.record(&streams[0]).unwrap();
    comms[0].device_barrier(&streams[0]).unwrap();
    after.record(&streams[0]).unwrap();
    // Rank 1 reaches its barrier only `delay_ms` later (host time).
    std::thread::sleep(Duration::from_millis(delay_ms));
    let arrived = Instant::now();
    comms[1].device_barrier(&streams[1]).unwrap();
    for (c, s) in comms.iter().zip(streams) {
        c.synchronize(s).unwrap();
    }
    let held = before.elapsed_ms(&after).unwrap() as f64;
    // Rank 0's stream passed the barrier only after rank 1's arrived.
    assert!(held >= 0.8 * delay_ms as f64, "rank 0 left the barrier after {held} ms, rank 1 came {delay_ms} ms later");
    assert!(arrived.elapsed() < Duration::from_secs(5));
    eprintln!("rank 0 held {held:.1} ms for a peer {delay_ms} ms late");
}

#[test]
fn many_barriers_with_one_rank_running_ahead() {
    let Some((comms, streams)) = pair("many_barriers_with_one_rank_running_ahead", Duration::from_secs(20)) else { return };
    // Batches of 64 per rank, rank 0's first: on the device rank 0 passes barrier e as
    // soon as rank 1 stores e, and may store e + 1 before rank 1 has read e (the wait is
    // "reached", not "equal"). (Not all 2000 of rank 0's at once from this one thread:
    // a full launch queue would block the host before rank 1's barriers are enqueued,
    // as with any collective enqueued rank by rank from one thread.)
    for _ in 0..2000 / 64 {
        for (c, s) in comms.iter().zip(&streams) {
            for _ in 0..64 {
                c.device_barrier(s).unwrap();
            }
        }
    }
    let start = Instant::now();
    for (c, s) in comms.iter().zip(&streams) {
        c.synchronize(s).unwrap();
    }
    eprintln!("{} barriers per rank in {:?}", 2000 / 64 * 64, start.elapsed());
    // The ranks' barrier numbers still match: the next barrier still holds a rank for
    // its late peer (a barrier that passed at once would not).
    held_for_a_late_peer(&comms, &streams, 50);
}

#[test]
fn missing_peer_at_a_barrier_is_named_and_poisons() {
    let timeout = Duration::from_secs(1);
    let Some((comms, streams)) = pair("missing_peer_at_a_barrier_is_named_and_poisons", timeout) else { return };
    let s = mkernel::GemmShape { m: 128, n: 256, k: 64 };
    let a = streams[0].alloc_zeros::<half::bf16>(128 * 64).unwrap();
    let b = streams[0].alloc_zeros::<half::bf16>(256 * 64).unwrap();
    let mut out = streams[0].alloc_zeros::<half::bf16>(128 * 256).unwrap();
    let start = Instant::now();
    // Rank 1 never comes. The work queued behind the first barrier (four more barriers
    // and a fused call) must give up at once, not wait a timeout each.
    for _ in 0..5 {
        comms[0].device_barrier(&streams[0]).unwrap();
    }
    comms[0].gemm_allreduce(&streams[0], &a, &b, &mut out, s, mkernel::GemmAllReduceOptions::default()).unwrap();
    let err = comms[0].synchronize(&streams[0]).unwrap_err();
    let elapsed = start.elapsed();
    match &err {
        Error::PeerTimeout { rank, peer, .. } => assert_eq!((*rank, *peer), (0, 1), "{err}"),
        other => panic!("expected PeerTimeout naming rank 1, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("barrier") && text.contains("rank 1"), "{text}");
    assert!(elapsed >= timeout && elapsed < 2 * timeout + Duration::from_millis(1500), "reported after {elapsed:?}");
    let again = comms[0].device_barrier(&streams[0]).unwrap_err();
    assert!(matches!(again, Error::Poisoned { .. }), "{again}");
}

#[test]
fn barrier_refuses_a_stream_of_another_gpu() {
    let Some((comms, streams)) = pair("barrier_refuses_a_stream_of_another_gpu", Duration::from_secs(5)) else { return };
    if comms[0].device_info().ordinal == comms[1].device_info().ordinal {
        eprintln!("SKIP barrier_refuses_a_stream_of_another_gpu: both ranks on one GPU");
        return;
    }
    let e = comms[0].device_barrier(&streams[1]).unwrap_err().to_string();
    assert!(e.contains("`stream`"), "{e}");
}

#[test]
fn host_gate_holds_a_stream_until_opened() {
    let Some(_) = gpu_or_skip("host_gate_holds_a_stream_until_opened", 1) else { return };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut gate = mkernel::HostGate::new(&ctx).unwrap();
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    for round in 0..3 {
        let before = ctx.new_event(timing).unwrap();
        let after = ctx.new_event(timing).unwrap();
        before.record(&stream).unwrap();
        gate.hold(&stream, Duration::from_secs(20)).unwrap();
        gate.hold(&stream, Duration::from_secs(20)).unwrap(); // two gates, one open
        after.record(&stream).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!after.is_complete(), "round {round}: the work behind the gate ran before the gate was opened");
        gate.open();
        stream.synchronize().unwrap();
        let held = before.elapsed_ms(&after).unwrap();
        assert!(held >= 150.0, "round {round}: held {held} ms, opened after 200 ms");
        gate.check().unwrap();
    }
}

#[test]
fn host_gate_never_opened_expires_and_is_reported() {
    let Some(_) = gpu_or_skip("host_gate_never_opened_expires_and_is_reported", 1) else { return };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    // A first gate, opened at once, loads the kernel (a cold NVRTC compile must not count
    // as the gate's wait below).
    let mut warm = mkernel::HostGate::new(&ctx).unwrap();
    warm.hold(&stream, Duration::from_secs(20)).unwrap();
    warm.open();
    stream.synchronize().unwrap();
    warm.check().unwrap();
    let mut gate = mkernel::HostGate::new(&ctx).unwrap();
    let timeout = Duration::from_millis(300);
    let start = Instant::now();
    gate.hold(&stream, timeout).unwrap();
    stream.synchronize().unwrap();
    let elapsed = start.elapsed();
    assert!(elapsed >= timeout && elapsed < timeout + Duration::from_secs(3), "the gate let go after {elapsed:?}");
    let e = gate.check().unwrap_err();
    assert!(matches!(e, Error::GateTimeout { gpu: 0, at: 1, .. }), "{e}");
    assert!(e.to_string().contains("not opened within 300ms"), "{e}");
    // The expiry stays reported; a later gate still holds and opens (no pre-check: the
    // bench's ranks agree on the verdict at the end of a shape instead).
    gate.hold(&stream, Duration::from_secs(20)).unwrap();
    gate.open();
    stream.synchronize().unwrap();
    assert!(matches!(gate.check().unwrap_err(), Error::GateTimeout { gpu: 0, at: 1, .. }));
    let e = gate.hold(&stream, Duration::ZERO).unwrap_err().to_string();
    assert!(e.contains("`timeout`") && e.contains("positive"), "{e}");
}
