//! Property tests of the completion-semantics adaptors over the simulated transport.
//!
//! Invariants:
//! 1. the arrival flag of chunk `c` for epoch `e` is visible only after all of chunk
//!    `c`'s epoch-`e` bytes are (checked after every landed piece and every progress
//!    call, for both adaptors, over 2..=4 ranks and up to 3 epochs without flag reset);
//! 2. every posted write completes exactly once (success or error), also when a peer
//!    fails mid-run;
//! 3. the ordered-flag adaptor on an unordered transport is refused at construction,
//!    and when forced, the invariant checker catches the flag landing early.

use std::collections::HashMap;
use std::time::Duration;

use mkernel_transport::adaptor::{
    ArrivalFlags, ArrivalReceiver, ChunkSender, ChunkWrite, CompletionMode, ImmLayout,
    RemoteFlags, FLAG_BYTES,
};
use mkernel_transport::sim::{SimConfig, SimEndpoint, SimFabric};
use mkernel_transport::{
    Completion, HostBuffer, LocalRegion, Ordering, Rank, RemoteRegion, Transport,
    TransportError, WriteId,
};
use proptest::prelude::*;

const CASES: u32 = 256;

/// Byte `i` of chunk `chunk` sent by `src` to `dst` in `epoch`: distinct for every
/// epoch, so a stale byte from an earlier epoch is caught.
fn pattern(src: Rank, dst: Rank, chunk: u32, epoch: u64, i: usize) -> u8 {
    let mut h = (u64::from(src) << 48) ^ (u64::from(dst) << 40) ^ (u64::from(chunk) << 20);
    h ^= epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 29;
    (h.wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 56) as u8
}

#[derive(Debug, Clone)]
struct Scenario {
    seed: u64,
    world: u32,
    chunks_per_peer: u32,
    chunk_len: usize,
    epochs: u64,
    max_pieces: usize,
    max_delay: u64,
    max_batch: usize,
    /// Per landed piece: which receivers run their progress engine now.
    progress_mask: Vec<u8>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        any::<u64>(),
        2u32..=4,
        1u32..=5,
        1usize..=257,
        1u64..=3,
        1usize..=6,
        0u64..=12,
        1usize..=16,
        proptest::collection::vec(any::<u8>(), 1..64),
    )
        .prop_map(
            |(seed, world, chunks_per_peer, chunk_len, epochs, max_pieces, max_delay, max_batch, progress_mask)| {
                Scenario {
                    seed,
                    world,
                    chunks_per_peer,
                    chunk_len,
                    epochs,
                    max_pieces,
                    max_delay,
                    max_batch,
                    progress_mask,
                }
            },
        )
}

struct Rank_ {
    ep: SimEndpoint,
    send_buf: HostBuffer,
    send_region: LocalRegion,
    recv_buf: HostBuffer,
    receiver: ArrivalReceiver,
    sender: ChunkSender,
    /// For each peer: its data region and its flags.
    remotes: HashMap<Rank, (RemoteRegion, RemoteFlags)>,
    completions: Vec<Completion>,
}

struct Run {
    fabric: SimFabric,
    ranks: Vec<Rank_>,
    s: Scenario,
}

impl Run {
    /// Chunk index in `dst`'s flags for chunk `k` from `src`.
    fn chunk_index(&self, src: Rank, k: u32) -> u32 {
        src * self.s.chunks_per_peer + k
    }

    fn new(s: &Scenario, ordering: Ordering, mode: CompletionMode, checked: bool) -> Result<Run, TransportError> {
        let fabric = SimFabric::new(SimConfig {
            seed: s.seed,
            ordering,
            max_delay: s.max_delay,
            max_pieces: s.max_pieces,
            max_batch: s.max_batch,
            max_in_flight: 4096,
            max_write_bytes: 1 << 20,
            immediate_data: true,
            auto_advance: false,
        })?;
        let chunks = s.world * s.chunks_per_peer;
        let mut eps = Vec::new();
        for r in 0..s.world {
            eps.push(fabric.endpoint(r)?);
        }
        let addrs: Vec<Vec<u8>> = eps.iter().map(|e| e.address()).collect();
        let mut ranks = Vec::new();
        let mut keys = Vec::new();
        for (r, mut ep) in eps.into_iter().enumerate() {
            for (p, a) in addrs.iter().enumerate() {
                if p != r {
                    ep.add_peer(p as Rank, a)?;
                }
            }
            let per_dst = s.chunks_per_peer as usize * s.chunk_len;
            let send_buf = HostBuffer::new(per_dst * s.world as usize)?;
            let send_region = ep.register_host(&send_buf)?;
            // Data region then flags, in one registered buffer.
            let data_bytes = chunks as usize * s.chunk_len;
            let flag_offset = data_bytes.div_ceil(8) * 8;
            let recv_buf = HostBuffer::new(flag_offset + chunks as usize * FLAG_BYTES)?;
            let recv_region = ep.register_host(&recv_buf)?;
            keys.push((ep.remote_key(&recv_region)?, flag_offset));
            let flags = ArrivalFlags::new(recv_buf.clone(), flag_offset, chunks)?;
            let receiver = ArrivalReceiver::new(mode, ImmLayout::default(), flags);
            let sender = if checked {
                ChunkSender::new(&mut ep, mode, ImmLayout::default())?
            } else {
                ChunkSender::new_unchecked(&mut ep, mode, ImmLayout::default())?
            };
            ranks.push(Rank_ {
                ep,
                send_buf,
                send_region,
                recv_buf,
                receiver,
                sender,
                remotes: HashMap::new(),
                completions: Vec::new(),
            });
        }
        for (r, rank) in ranks.iter_mut().enumerate() {
            for (p, (key, flag_offset)) in keys.iter().enumerate() {
                if p != r {
                    let region = rank.ep.import_remote(p as Rank, key)?;
                    let flags = RemoteFlags {
                        region,
                        offset: *flag_offset,
                        chunks,
                    };
                    rank.remotes.insert(p as Rank, (region, flags));
                }
            }
        }
        Ok(Run {
            fabric,
            ranks,
            s: s.clone(),
        })
    }

    /// Fills every send buffer with epoch `epoch`'s bytes and posts every chunk.
    fn post_epoch(&mut self, epoch: u64) -> Result<usize, TransportError> {
        let s = self.s.clone();
        let mut posted = 0;
        for src in 0..s.world {
            for dst in 0..s.world {
                if dst == src {
                    continue;
                }
                let mut chunks = Vec::new();
                for k in 0..s.chunks_per_peer {
                    let local_offset = (dst * s.chunks_per_peer + k) as usize * s.chunk_len;
                    let bytes: Vec<u8> = (0..s.chunk_len).map(|i| pattern(src, dst, k, epoch, i)).collect();
                    let r = &self.ranks[src as usize];
                    r.send_buf.write(local_offset, &bytes)?;
                    let c = self.chunk_index(src, k);
                    let (data, _) = r.remotes[&dst];
                    chunks.push(ChunkWrite {
                        id: WriteId((epoch << 32) | (u64::from(dst) << 24) | u64::from(c)),
                        chunk: c,
                        local: r.send_region,
                        local_offset,
                        len: s.chunk_len,
                        remote: data,
                        remote_offset: c as usize * s.chunk_len,
                    });
                }
                let r = &mut self.ranks[src as usize];
                let (_, flags) = r.remotes[&dst];
                let mut sink = Vec::new();
                let ids = r.sender.send(&mut r.ep, &flags, &chunks, epoch, Duration::from_secs(5), |c| sink.push(c))?;
                r.completions.extend(sink);
                posted += ids.len();
            }
        }
        Ok(posted)
    }

    /// The invariant: for every rank and chunk, a flag showing `epoch` implies the
    /// chunk's bytes are exactly epoch `epoch`'s.
    fn check(&self, epoch: u64) -> Result<(), String> {
        let s = &self.s;
        for (dst, r) in self.ranks.iter().enumerate() {
            let dst = dst as Rank;
            for src in 0..s.world {
                if src == dst {
                    continue;
                }
                for k in 0..s.chunks_per_peer {
                    let c = self.chunk_index(src, k);
                    let seen = r.receiver.flags().epoch(c).map_err(|e| e.to_string())?;
                    if seen > epoch {
                        return Err(format!("rank {dst} chunk {c}: flag epoch {seen} > current {epoch}"));
                    }
                    if seen < epoch {
                        continue;
                    }
                    let mut got = vec![0u8; s.chunk_len];
                    r.recv_buf.read(c as usize * s.chunk_len, &mut got).map_err(|e| e.to_string())?;
                    if let Some(i) = (0..s.chunk_len).find(|&i| got[i] != pattern(src, dst, k, epoch, i)) {
                        return Err(format!(
                            "arrival flag visible before data: rank {dst} chunk {c} (from rank {src}) \
                             epoch {epoch}: byte {i} is {:#04x}, expected {:#04x}",
                            got[i],
                            pattern(src, dst, k, epoch, i)
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Lands every piece one at a time, running receivers' progress engines as the mask
    /// says, checking the invariant after each event. Returns the first violation.
    fn drain(&mut self, epoch: u64) -> Result<Result<(), String>, TransportError> {
        let mut step = 0usize;
        loop {
            let landed = self.fabric.step()?;
            let mask = self.s.progress_mask[step % self.s.progress_mask.len()];
            step += 1;
            for (i, r) in self.ranks.iter_mut().enumerate() {
                if landed.is_none() || mask & (1 << i) != 0 {
                    for _ in 0..8 {
                        let mut others = Vec::new();
                        let n = r.receiver.progress(&mut r.ep, &mut others)?;
                        r.completions.extend(others);
                        if n == 0 {
                            break;
                        }
                    }
                }
                r.receiver.set_expected_epoch(epoch);
            }
            if let Err(v) = self.check(epoch) {
                return Ok(Err(v));
            }
            if landed.is_none() {
                return Ok(Ok(()));
            }
        }
    }
}

/// Runs all epochs; returns the first invariant violation (if any).
fn run_scenario(s: &Scenario, ordering: Ordering, mode: CompletionMode, checked: bool) -> Result<Result<(), String>, TransportError> {
    let mut run = Run::new(s, ordering, mode, checked)?;
    let mut posted = 0;
    for epoch in 1..=s.epochs {
        for r in &mut run.ranks {
            r.receiver.set_expected_epoch(epoch);
        }
        posted += run.post_epoch(epoch)?;
        if let Err(v) = run.drain(epoch)? {
            return Ok(Err(v));
        }
        // All arrived.
        for (dst, r) in run.ranks.iter().enumerate() {
            for c in 0..s.world * s.chunks_per_peer {
                let src = c / s.chunks_per_peer;
                if src as usize == dst {
                    continue;
                }
                let seen = r.receiver.flags().epoch(c)?;
                if seen != epoch {
                    return Ok(Err(format!("rank {dst} chunk {c}: flag {seen} after drain, expected {epoch}")));
                }
            }
        }
    }
    // Every posted write completed exactly once, successfully.
    let mut done: HashMap<(Rank, WriteId), usize> = HashMap::new();
    for (src, r) in run.ranks.iter().enumerate() {
        for c in &r.completions {
            match c {
                Completion::Write { id, result: Ok(()), .. } => *done.entry((src as Rank, *id)).or_default() += 1,
                other => return Ok(Err(format!("rank {src}: unexpected completion {other:?}"))),
            }
        }
    }
    if done.len() != posted || done.values().any(|&n| n != 1) {
        return Ok(Err(format!("{} distinct completions for {posted} posted writes", done.len())));
    }
    Ok(Ok(()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// Immediate-completion adaptor on an unordered transport that splits, delays and
    /// reorders: flags never run ahead of data.
    #[test]
    fn immediate_adaptor_unordered_keeps_invariant(s in scenario()) {
        let out = run_scenario(&s, Ordering::Unordered, CompletionMode::Immediate, true);
        prop_assert_eq!(out, Ok(Ok(())));
    }

    /// Immediate-completion adaptor also holds on an ordered transport.
    #[test]
    fn immediate_adaptor_ordered_keeps_invariant(s in scenario()) {
        let out = run_scenario(&s, Ordering::Ordered, CompletionMode::Immediate, true);
        prop_assert_eq!(out, Ok(Ok(())));
    }

    /// Ordered-flag adaptor on an ordered transport: flags never run ahead of data.
    #[test]
    fn ordered_flag_adaptor_ordered_keeps_invariant(s in scenario()) {
        let out = run_scenario(&s, Ordering::Ordered, CompletionMode::OrderedFlag, true);
        prop_assert_eq!(out, Ok(Ok(())));
    }

    /// Every write accepted by `post_writes` yields exactly one completion, success or
    /// error, when a random rank fails at a random point; writes refused at post yield
    /// none. Writes to the failed rank that complete report `PeerGone`.
    #[test]
    fn every_posted_write_completes_or_errors(
        seed in any::<u64>(),
        world in 2u32..=4,
        writes_per_peer in 1usize..=12,
        len in 1usize..=200,
        victim_pick in any::<u32>(),
        fail_after in 0usize..=60,
        ordered in any::<bool>(),
    ) {
        let ordering = if ordered { Ordering::Ordered } else { Ordering::Unordered };
        let fabric = SimFabric::new(SimConfig {
            seed, ordering, max_delay: 6, max_pieces: 4, max_batch: 4,
            max_in_flight: 4096, max_write_bytes: 1 << 20, immediate_data: true, auto_advance: false,
        }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let victim = victim_pick % world;
        let run = || -> Result<(), TransportError> {
            let mut eps: Vec<SimEndpoint> = (0..world).map(|r| fabric.endpoint(r)).collect::<Result<_, _>>()?;
            let addrs: Vec<Vec<u8>> = eps.iter().map(|e| e.address()).collect();
            let mut bufs = Vec::new();
            let mut keys = Vec::new();
            for (r, ep) in eps.iter_mut().enumerate() {
                for (p, a) in addrs.iter().enumerate() {
                    if p != r { ep.add_peer(p as Rank, a)?; }
                }
                let buf = HostBuffer::new(len * writes_per_peer * world as usize)?;
                let region = ep.register_host(&buf)?;
                keys.push(ep.remote_key(&region)?);
                bufs.push((buf, region));
            }
            let mut remotes = vec![HashMap::new(); world as usize];
            for (r, ep) in eps.iter_mut().enumerate() {
                for (p, k) in keys.iter().enumerate() {
                    if p != r { remotes[r].insert(p as Rank, ep.import_remote(p as Rank, k)?); }
                }
            }
            let mut accepted: Vec<HashMap<WriteId, Rank>> = vec![HashMap::new(); world as usize];
            let mut completions: Vec<Vec<Completion>> = vec![Vec::new(); world as usize];
            let mut steps = 0usize;
            let mut failed = false;
            let mut next_id = 0u64;
            for round in 0..writes_per_peer {
                for src in 0..world {
                    for dst in 0..world {
                        if src == dst { continue; }
                        let w = mkernel_transport::Write {
                            id: WriteId(next_id),
                            local: bufs[src as usize].1,
                            local_offset: (dst as usize * writes_per_peer + round) * len,
                            len,
                            remote: remotes[src as usize][&dst],
                            remote_offset: (src as usize * writes_per_peer + round) * len,
                            imm: Some(next_id as u32),
                        };
                        next_id += 1;
                        match eps[src as usize].post_writes(dst, &[w]) {
                            Ok(()) => { accepted[src as usize].insert(w.id, dst); }
                            Err(TransportError::PeerGone { peer, .. }) => {
                                // Only the failed rank may be reported gone.
                                assert!(failed && (peer == victim), "PeerGone({peer}) before failure");
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
                // Land a few pieces, maybe fail the victim.
                for _ in 0..3 {
                    if steps == fail_after && !failed {
                        fabric.fail_peer(victim)?;
                        failed = true;
                    }
                    fabric.step()?;
                    steps += 1;
                }
            }
            if !failed {
                fabric.fail_peer(victim)?;
            }
            fabric.run_until_idle(1 << 20)?;
            for (r, ep) in eps.iter_mut().enumerate() {
                if r as Rank == victim { continue; }
                while ep.poll(&mut completions[r], 1024)? > 0 {}
            }
            for r in 0..world as usize {
                if r as Rank == victim { continue; }
                let mut seen: HashMap<WriteId, usize> = HashMap::new();
                for c in &completions[r] {
                    if let Completion::Write { id, peer, result } = c {
                        *seen.entry(*id).or_default() += 1;
                        assert_eq!(accepted[r].get(id), Some(peer), "completion for a write never accepted");
                        if let Err(e) = result {
                            assert!(matches!(e, TransportError::PeerGone { peer: p, .. } if *p == victim), "unexpected error {e}");
                        }
                    }
                }
                assert_eq!(seen.len(), accepted[r].len(), "rank {r}: some accepted writes never completed");
                assert!(seen.values().all(|&n| n == 1), "rank {r}: a write completed twice");
                assert_eq!(eps[r].in_flight(), 0);
            }
            Ok(())
        };
        prop_assert_eq!(run(), Ok(()));
    }

    /// Immediates round-trip through encode/decode when the receiver's expected epoch is
    /// within half the epoch window of the sender's.
    #[test]
    fn immediate_layout_round_trips(chunk_bits in 1u32..=24, chunk in any::<u32>(), epoch in 1u64..1_000_000, skew in -1000i64..1000) {
        let layout = ImmLayout::new(chunk_bits).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let chunk = chunk & ((1u32 << chunk_bits) - 1);
        let half = 1i64 << (32 - chunk_bits - 1);
        let skew = skew.clamp(-(half - 1), half - 1);
        let expected = (epoch as i64 + skew).max(0) as u64;
        let imm = layout.encode(chunk, epoch).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(layout.decode(imm, expected), (chunk, epoch));
    }
}

#[test]
fn ordered_flag_adaptor_refuses_unordered_transport() {
    let fabric = SimFabric::new(SimConfig::default()).expect("fabric");
    let mut ep = fabric.endpoint(0).expect("endpoint");
    let err = ChunkSender::new(&mut ep, CompletionMode::OrderedFlag, ImmLayout::default())
        .expect_err("ordered flag on an unordered transport must be refused");
    assert!(matches!(err, TransportError::CapabilityMissing { .. }), "{err}");
    assert_eq!(CompletionMode::select(ep.capabilities()), Ok(CompletionMode::Immediate));
}

/// Forcing the ordered-flag adaptor onto an unordered transport: the invariant checker
/// must catch flags landing before their data on some schedules.
#[test]
fn ordered_flag_on_unordered_transport_is_caught() {
    let mut caught = 0;
    let mut first = None;
    let seeds = 64u64;
    for seed in 0..seeds {
        let s = Scenario {
            seed,
            world: 2,
            chunks_per_peer: 4,
            chunk_len: 64,
            epochs: 2,
            max_pieces: 4,
            max_delay: 10,
            max_batch: 8,
            progress_mask: vec![0xff],
        };
        match run_scenario(&s, Ordering::Unordered, CompletionMode::OrderedFlag, false) {
            Ok(Err(violation)) => {
                caught += 1;
                first.get_or_insert((seed, violation));
            }
            Ok(Ok(())) => {}
            Err(e) => panic!("seed {seed}: transport error {e}"),
        }
    }
    let (seed, violation) = first.expect("no violation detected: the checker is blind");
    println!("caught {caught}/{seeds} schedules; first: seed {seed}: {violation}");
    assert!(violation.contains("arrival flag visible before data"), "{violation}");
    assert!(caught > seeds / 4, "only {caught}/{seeds} schedules caught");
}
