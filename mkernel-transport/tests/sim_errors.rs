//! Every error the trait promises, produced by the simulated transport.

use mkernel_transport::sim::{SimConfig, SimEndpoint, SimFabric};
use mkernel_transport::{
    Completion, HostBuffer, LocalRegion, RemoteRegion, Side, Transport, TransportError, Write, WriteId,
};

struct Pair {
    fabric: SimFabric,
    a: SimEndpoint,
    b: SimEndpoint,
    a_region: LocalRegion,
    b_remote: RemoteRegion,
}

fn pair(config: SimConfig) -> Result<Pair, TransportError> {
    let fabric = SimFabric::new(config)?;
    let mut a = fabric.endpoint(0)?;
    let mut b = fabric.endpoint(1)?;
    a.add_peer(1, &b.address())?;
    b.add_peer(0, &a.address())?;
    let a_buf = HostBuffer::new(4096)?;
    let a_region = a.register_host(&a_buf)?;
    let b_buf = HostBuffer::new(1024)?;
    let b_region = b.register_host(&b_buf)?;
    let b_remote = a.import_remote(1, &b.remote_key(&b_region)?)?;
    Ok(Pair { fabric, a, b, a_region, b_remote })
}

fn write(p: &Pair, id: u64, len: usize, remote_offset: usize) -> Write {
    Write {
        id: WriteId(id),
        local: p.a_region,
        local_offset: 0,
        len,
        remote: p.b_remote,
        remote_offset,
        imm: None,
    }
}

#[test]
fn malformed_and_mismatched_inputs_are_errors() -> Result<(), TransportError> {
    let mut p = pair(SimConfig { max_batch: 4, max_in_flight: 3, ..SimConfig::default() })?;
    // Oversize batch.
    let batch: Vec<Write> = (0..5).map(|i| write(&p, i, 8, 0)).collect();
    assert!(matches!(p.a.post_writes(1, &batch), Err(TransportError::BatchTooLarge { len: 5, max: 4 })));
    // Out of bounds, remote and local.
    let e = p.a.post_writes(1, &[write(&p, 1, 64, 1000)]).expect_err("remote oob");
    assert!(matches!(e, TransportError::OutOfBounds { side: Side::Remote, offset: 1000, len: 64, region_len: 1024 }), "{e}");
    let mut w = write(&p, 1, 64, 0);
    w.local_offset = 4090;
    assert!(matches!(p.a.post_writes(1, &[w]), Err(TransportError::OutOfBounds { side: Side::Local, .. })));
    // Unknown peer.
    assert!(matches!(p.a.post_writes(7, &[write(&p, 1, 8, 0)]), Err(TransportError::UnknownPeer { peer: 7 })));
    assert!(matches!(p.a.import_remote(7, &p.b_remote.to_bytes()), Err(TransportError::UnknownPeer { peer: 7 })));
    // Forged key (decodes, never imported).
    let mut forged = write(&p, 1, 8, 0);
    forged.remote.key ^= 1;
    assert!(matches!(p.a.post_writes(1, &[forged]), Err(TransportError::KeyMismatch { peer: 1, .. })));
    // Key of another rank.
    let mut other = write(&p, 1, 8, 0);
    other.remote.owner = 0;
    assert!(matches!(p.a.post_writes(1, &[other]), Err(TransportError::KeyMismatch { .. })));
    // Malformed key bytes and addresses.
    let mut bytes = p.b_remote.to_bytes();
    bytes[30] ^= 0x40;
    assert!(matches!(p.a.import_remote(1, &bytes), Err(TransportError::Malformed { what: "remote key", .. })));
    assert!(matches!(p.a.import_remote(1, &bytes[..10]), Err(TransportError::Malformed { .. })));
    let fabric2 = SimFabric::new(SimConfig::default())?;
    let stranger = fabric2.endpoint(2)?;
    assert!(matches!(p.a.add_peer(2, &stranger.address()), Err(TransportError::Malformed { what: "endpoint address", .. })));
    // Queue full: capacity 3, batch of 4 posts 3.
    let batch: Vec<Write> = (0..4).map(|i| write(&p, 100 + i, 8, 0)).collect();
    let e = p.a.post_writes(1, &batch).expect_err("queue full");
    assert!(matches!(e, TransportError::QueueFull { peer: 1, posted: 3, capacity: 3, .. }), "{e}");
    // Nothing was lost: the 3 posted complete.
    p.fabric.run_until_idle(1000)?;
    let mut out = Vec::new();
    p.a.poll(&mut out, 100)?;
    let ids: Vec<u64> = out.iter().filter_map(|c| match c {
        Completion::Write { id, result: Ok(()), .. } => Some(id.0),
        _ => None,
    }).collect();
    assert_eq!(ids.len(), 3);
    // Peer gone.
    p.fabric.fail_peer(1)?;
    assert!(matches!(p.a.post_writes(1, &[write(&p, 9, 8, 0)]), Err(TransportError::PeerGone { peer: 1, .. })));
    assert!(matches!(p.b.poll(&mut out, 1), Err(TransportError::PeerGone { peer: 1, .. })));
    Ok(())
}

#[test]
fn remote_rejects_key_of_deregistered_region() -> Result<(), TransportError> {
    let mut p = pair(SimConfig::default())?;
    let b_region = LocalRegion::new(1, 1024);
    p.b.deregister(b_region)?;
    p.a.post_writes(1, &[write(&p, 5, 8, 0)])?;
    p.fabric.run_until_idle(1000)?;
    let mut out = Vec::new();
    p.a.poll(&mut out, 10)?;
    assert!(matches!(&out[..], [Completion::Write { id: WriteId(5), result: Err(TransportError::KeyMismatch { peer: 1, .. }), .. }]), "{out:?}");
    Ok(())
}

#[test]
fn device_memory_is_a_capability_not_assumed() {
    let fabric = SimFabric::new(SimConfig::default()).expect("fabric");
    let mut ep = fabric.endpoint(0).expect("endpoint");
    assert!(!ep.capabilities().device_memory);
    // SAFETY: the default implementation never dereferences the pointer.
    let e = unsafe { ep.register_device(0x1000, 4096, 0) };
    assert!(matches!(e, Err(TransportError::Unsupported { .. })));
}
