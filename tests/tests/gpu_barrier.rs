//! GPU: the device-side barrier of the ranks (`Communicator::device_barrier`): it holds
//! each rank's stream until every rank's stream reaches it, survives a rank running
//! ahead by many barriers, and reports a rank that never arrives. Two ranks on two GPUs
//! (or on one GPU, as two ranks, when only one is present). Skips without a GPU.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{sys::CUevent_flags, CudaStream};
use mkernel::{CommConfig, Communicator, Error};
use mkernel_tests::gpu_or_skip;

fn pair(timeout: Duration) -> Option<(Vec<Communicator>, Vec<Arc<CudaStream>>)> {
    let n = gpu_or_skip("gpu_barrier", 1)?;
    let devices = if n >= 2 { [0, 1] } else { [0, 0] };
    let comms = Communicator::local_group(&devices, CommConfig { max_output_elems: 1 << 16, timeout, ..Default::default() }).unwrap();
    let streams = comms.iter().map(|c| c.context().new_stream().unwrap()).collect();
    Some((comms, streams))
}

#[test]
fn barrier_holds_a_rank_until_its_peer_arrives() {
    let Some((comms, streams)) = pair(Duration::from_secs(20)) else { return };
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    for delay_ms in [300u64, 50] {
        let before = comms[0].context().new_event(timing).unwrap();
        let after = comms[0].context().new_event(timing).unwrap();
        before.record(&streams[0]).unwrap();
        comms[0].device_barrier(&streams[0]).unwrap();
        after.record(&streams[0]).unwrap();
        // Rank 1 reaches its barrier only `delay_ms` later (host time).
        std::thread::sleep(Duration::from_millis(delay_ms));
        let arrived = Instant::now();
        comms[1].device_barrier(&streams[1]).unwrap();
        for (c, s) in comms.iter().zip(&streams) {
            c.synchronize(s).unwrap();
        }
        let held = before.elapsed_ms(&after).unwrap() as f64;
        // Rank 0's stream passed the barrier only after rank 1's arrived.
        assert!(held >= 0.8 * delay_ms as f64, "rank 0 left the barrier after {held} ms, rank 1 came {delay_ms} ms later");
        assert!(arrived.elapsed() < Duration::from_secs(5));
        eprintln!("rank 0 held {held:.1} ms for a peer {delay_ms} ms late");
    }
}

#[test]
fn many_barriers_with_one_rank_running_ahead() {
    let Some((comms, streams)) = pair(Duration::from_secs(20)) else { return };
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
}

#[test]
fn missing_peer_at_a_barrier_is_named_and_poisons() {
    let timeout = Duration::from_secs(1);
    let Some((comms, streams)) = pair(timeout) else { return };
    let start = Instant::now();
    comms[0].device_barrier(&streams[0]).unwrap();
    let err = comms[0].synchronize(&streams[0]).unwrap_err();
    let elapsed = start.elapsed();
    match &err {
        Error::PeerTimeout { rank, peer, .. } => assert_eq!((*rank, *peer), (0, 1), "{err}"),
        other => panic!("expected PeerTimeout naming rank 1, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("barrier") && text.contains("rank 1"), "{text}");
    assert!(elapsed >= timeout && elapsed < timeout + Duration::from_secs(4), "reported after {elapsed:?}");
    let again = comms[0].device_barrier(&streams[0]).unwrap_err();
    assert!(matches!(again, Error::Poisoned { .. }), "{again}");
}

#[test]
fn barrier_refuses_a_stream_of_another_gpu() {
    let Some((comms, streams)) = pair(Duration::from_secs(5)) else { return };
    if comms[0].device_info().ordinal == comms[1].device_info().ordinal {
        eprintln!("SKIP barrier_refuses_a_stream_of_another_gpu: both ranks on one GPU");
        return;
    }
    let e = comms[0].device_barrier(&streams[1]).unwrap_err().to_string();
    assert!(e.contains("`stream`"), "{e}");
}
