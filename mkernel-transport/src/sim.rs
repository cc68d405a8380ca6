//! A simulated, in-memory transport, deterministic from a seed.
//!
//! Every endpoint of one [`SimFabric`] lives in this process. A posted write is copied
//! out of its source at post time, cut into 1..=`max_pieces` pieces, and each piece is
//! scheduled to land after a random delay of 1..=`1 + max_delay` ticks. With
//! [`Ordering::Ordered`] all pieces of write `k` on a connection land before any piece
//! of a later write on that connection; with [`Ordering::Unordered`] pieces of all
//! writes land in any order. A write completes (on the sender, and with an
//! immediate on the receiver) when its last piece lands. [`SimFabric::fail_peer`] kills
//! a rank: writes to it fail with [`TransportError::PeerGone`] as their pieces land.
//!
//! Time only moves when someone calls [`SimFabric::step`] (one piece) or
//! [`SimFabric::advance`], or, with [`SimConfig::auto_advance`], on every
//! [`Transport::poll`]. Driven from one thread, a run is a pure function of the seed.
//!
//! Cost model of the implementation (not of the simulated network): endpoints, regions
//! and in-flight writes live in index-addressed tables (no per-write hashing of ranks
//! or region ids), the remaining hash tables use a fixed multiplicative hash (no
//! SipHash, and no per-process random state), a write's bytes are copied into a buffer
//! recycled from completed writes, and pieces wait in a FIFO while their landing times
//! arrive in non-decreasing order (always so with `max_delay == 0`) and in a binary
//! heap otherwise. Pieces land in `(time, post order)` order, exactly as they would
//! from one sorted schedule.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering as MemOrder};
use std::sync::{Arc, Mutex, MutexGuard};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::{Side, TransportError};
use crate::memory::HostBuffer;
use crate::transport::{check_batch, Transport};
use crate::types::{
    Capabilities, Completion, LocalRegion, Ordering, Rank, RemoteRegion, Write, WriteId,
};

/// Parameters of a simulated fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// Seed of every random choice (split points, delays, keys).
    pub seed: u64,
    /// Ordering the simulated connections guarantee (and report).
    pub ordering: Ordering,
    /// Extra ticks a piece may take beyond the minimum of 1.
    pub max_delay: u64,
    /// A write lands in 1..=`max_pieces` pieces.
    pub max_pieces: usize,
    /// Reported [`Capabilities::max_batch`].
    pub max_batch: usize,
    /// Reported [`Capabilities::max_in_flight`], enforced per endpoint.
    pub max_in_flight: usize,
    /// Reported [`Capabilities::max_write_bytes`].
    pub max_write_bytes: usize,
    /// Reported [`Capabilities::immediate_data`].
    pub immediate_data: bool,
    /// When `true`, every `poll` advances the clock by one tick.
    pub auto_advance: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 0,
            ordering: Ordering::Unordered,
            max_delay: 8,
            max_pieces: 4,
            max_batch: 8,
            max_in_flight: 256,
            max_write_bytes: 1 << 30,
            immediate_data: true,
            auto_advance: true,
        }
    }
}

/// What one [`SimFabric::step`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimDelivery {
    /// Writer.
    pub src: Rank,
    /// Target.
    pub dst: Rank,
    /// The write's id.
    pub id: WriteId,
    /// Bytes in this piece.
    pub bytes: usize,
    /// `true` when this was the write's last piece (it completed).
    pub completed: bool,
}

/// FxHash-style hasher (rotate, xor, multiply by a fixed odd constant): a few cycles
/// per word for the small integer keys the simulator hashes (ranks, region keys,
/// remote-region tuples). Not DoS-resistant, which a simulator does not need.
#[derive(Default, Clone, Copy)]
struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

type FxBuild = BuildHasherDefault<FxHasher>;
type FxMap<K, V> = HashMap<K, V, FxBuild>;
type FxSet<K> = HashSet<K, FxBuild>;

/// A scheduled piece of write `write` (an index into [`World::writes`]): bytes
/// `start..end` of the write, landing at `time`; `seq` orders pieces of equal time by
/// post order.
#[derive(Clone, Copy)]
struct Piece {
    time: u64,
    seq: u64,
    write: usize,
    start: usize,
    end: usize,
}

impl Piece {
    fn order(&self) -> (u64, u64) {
        (self.time, self.seq)
    }
}

impl PartialEq for Piece {
    fn eq(&self, other: &Self) -> bool {
        self.order() == other.order()
    }
}
impl Eq for Piece {}
impl PartialOrd for Piece {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Piece {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order().cmp(&other.order())
    }
}

/// Pieces waiting to land, popped in `(time, seq)` order. `seq` grows with every
/// push, so a piece whose time is not earlier than the FIFO's last one keeps the FIFO
/// sorted and is appended there (O(1)); any other piece goes to the heap.
#[derive(Default)]
struct Schedule {
    fifo: VecDeque<Piece>,
    heap: BinaryHeap<Reverse<Piece>>,
}

impl Schedule {
    fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    fn push(&mut self, p: Piece) {
        match self.fifo.back() {
            Some(last) if p.time < last.time => self.heap.push(Reverse(p)),
            _ => self.fifo.push_back(p),
        }
    }

    fn heap_first(&self) -> bool {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(f), Some(Reverse(h))) => h.order() < f.order(),
            (None, Some(_)) => true,
            (_, None) => false,
        }
    }

    fn next_time(&self) -> Option<u64> {
        if self.heap_first() {
            self.heap.peek().map(|Reverse(p)| p.time)
        } else {
            self.fifo.front().map(|p| p.time)
        }
    }

    fn pop(&mut self) -> Option<Piece> {
        if self.heap_first() {
            self.heap.pop().map(|Reverse(p)| p)
        } else {
            self.fifo.pop_front()
        }
    }
}

/// A recycled buffer larger than this is released instead of kept for the next write.
const KEEP_BUFFER_BYTES: usize = 64 << 10;

/// A posted write not yet completed; a slot of [`World::writes`], reused after
/// completion (with its byte buffer).
struct PendingWrite {
    /// Endpoint indices ([`World::endpoints`]) of writer and target.
    src: usize,
    dst: usize,
    src_rank: Rank,
    dst_rank: Rank,
    id: WriteId,
    key: u64,
    remote_offset: usize,
    pieces_left: usize,
    imm: Option<u32>,
    len: usize,
    error: Option<TransportError>,
    /// The source bytes, copied at post time.
    data: Vec<u8>,
}

struct Region {
    buffer: HostBuffer,
    key: u64,
}

struct Endpoint {
    alive: bool,
    /// Region id `i + 1` lives at index `i` (`None` once deregistered); ids are never
    /// reused.
    regions: Vec<Option<Region>>,
    /// Remote key -> region id, for landing pieces.
    by_key: FxMap<u64, u64>,
    peers: FxSet<Rank>,
    imported: FxSet<RemoteRegion>,
    completions: VecDeque<Completion>,
    in_flight: usize,
}

impl Endpoint {
    fn region(&self, id: u64) -> Option<&Region> {
        let i = usize::try_from(id).ok()?.checked_sub(1)?;
        self.regions.get(i)?.as_ref()
    }
}

struct World {
    config: SimConfig,
    fabric_id: u64,
    rng: StdRng,
    now: u64,
    seq: u64,
    /// Endpoints in creation order; an endpoint is never removed, so indices are
    /// stable.
    endpoints: Vec<Endpoint>,
    index: FxMap<Rank, usize>,
    schedule: Schedule,
    /// Slots of in-flight writes; `free` lists the reusable ones.
    writes: Vec<PendingWrite>,
    free: Vec<usize>,
    /// Scratch for split points.
    cuts: Vec<usize>,
    connection_floor: FxMap<(Rank, Rank), u64>,
}

static NEXT_FABRIC: AtomicU64 = AtomicU64::new(1);
const ADDRESS_MAGIC: &[u8; 4] = b"MKSA";

/// A simulated network: create endpoints with [`SimFabric::endpoint`], drive time with
/// [`SimFabric::step`] / [`SimFabric::advance`]. Cloning shares the fabric.
#[derive(Clone)]
pub struct SimFabric {
    world: Arc<Mutex<World>>,
}

impl std::fmt::Debug for SimFabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimFabric").finish_non_exhaustive()
    }
}

fn lock(world: &Mutex<World>) -> Result<MutexGuard<'_, World>, TransportError> {
    world.lock().map_err(|_| TransportError::Backend {
        call: "SimFabric::lock",
        code: -1,
        message: "a thread panicked while holding the simulated fabric".into(),
    })
}

fn internal(message: &str) -> TransportError {
    TransportError::Backend {
        call: "SimFabric",
        code: -1,
        message: format!("simulator bookkeeping is inconsistent: {message}"),
    }
}

impl SimFabric {
    /// A new fabric with no endpoints.
    ///
    /// Errors: [`TransportError::InvalidArgument`] for `max_pieces`, `max_batch` or
    /// `max_in_flight` of 0.
    pub fn new(config: SimConfig) -> Result<Self, TransportError> {
        for (arg, v) in [
            ("config.max_pieces", config.max_pieces),
            ("config.max_batch", config.max_batch),
            ("config.max_in_flight", config.max_in_flight),
        ] {
            if v == 0 {
                return Err(TransportError::InvalidArgument {
                    arg,
                    rule: "must be > 0".into(),
                });
            }
        }
        let rng = StdRng::seed_from_u64(config.seed);
        Ok(SimFabric {
            world: Arc::new(Mutex::new(World {
                config,
                fabric_id: NEXT_FABRIC.fetch_add(1, MemOrder::Relaxed),
                rng,
                now: 0,
                seq: 0,
                endpoints: Vec::new(),
                index: FxMap::default(),
                schedule: Schedule::default(),
                writes: Vec::new(),
                free: Vec::new(),
                cuts: Vec::new(),
                connection_floor: FxMap::default(),
            })),
        })
    }

    /// Creates the endpoint of `rank`.
    ///
    /// Errors: [`TransportError::InvalidArgument`] when `rank` already has one.
    pub fn endpoint(&self, rank: Rank) -> Result<SimEndpoint, TransportError> {
        let mut w = lock(&self.world)?;
        if w.index.contains_key(&rank) {
            return Err(TransportError::InvalidArgument {
                arg: "rank",
                rule: format!("rank {rank} already has an endpoint on this fabric"),
            });
        }
        let index = w.endpoints.len();
        w.endpoints.push(Endpoint {
            alive: true,
            regions: Vec::new(),
            by_key: FxMap::default(),
            peers: FxSet::default(),
            imported: FxSet::default(),
            completions: VecDeque::new(),
            in_flight: 0,
        });
        w.index.insert(rank, index);
        let c = &w.config;
        let caps = Capabilities {
            ordering: c.ordering,
            immediate_data: c.immediate_data,
            device_memory: false,
            max_batch: c.max_batch,
            max_in_flight: c.max_in_flight,
            max_write_bytes: c.max_write_bytes,
            name: format!("sim({:?}, seed {})", c.ordering, c.seed),
        };
        Ok(SimEndpoint {
            fabric: self.clone(),
            rank,
            index,
            caps,
            address: address_bytes(w.fabric_id, rank),
        })
    }

    /// Lands the next scheduled piece (advancing the clock to its time). Returns what
    /// landed, or `None` when nothing is scheduled.
    pub fn step(&self) -> Result<Option<SimDelivery>, TransportError> {
        let mut w = lock(&self.world)?;
        Ok(w.step())
    }

    /// Advances the clock by `ticks`, landing every piece due by then.
    pub fn advance(&self, ticks: u64) -> Result<usize, TransportError> {
        let mut w = lock(&self.world)?;
        Ok(w.advance(ticks))
    }

    /// Lands pieces until none is scheduled or `max_steps` have landed; returns how
    /// many landed.
    pub fn run_until_idle(&self, max_steps: usize) -> Result<usize, TransportError> {
        let mut w = lock(&self.world)?;
        let mut n = 0;
        while n < max_steps && w.step().is_some() {
            n += 1;
        }
        Ok(n)
    }

    /// Pieces scheduled but not landed yet.
    pub fn pending_pieces(&self) -> Result<usize, TransportError> {
        Ok(lock(&self.world)?.schedule.len())
    }

    /// Current simulated time in ticks.
    pub fn now(&self) -> Result<u64, TransportError> {
        Ok(lock(&self.world)?.now)
    }

    /// Kills `rank`: its endpoint refuses every call with [`TransportError::PeerGone`],
    /// and writes to it fail as their pieces land.
    ///
    /// Errors: [`TransportError::UnknownPeer`].
    pub fn fail_peer(&self, rank: Rank) -> Result<(), TransportError> {
        let mut guard = lock(&self.world)?;
        let w = &mut *guard;
        let ep = w
            .index
            .get(&rank)
            .and_then(|&i| w.endpoints.get_mut(i))
            .ok_or(TransportError::UnknownPeer { peer: rank })?;
        ep.alive = false;
        ep.completions.clear();
        Ok(())
    }
}

fn address_bytes(fabric_id: u64, rank: Rank) -> Vec<u8> {
    let mut a = Vec::with_capacity(16);
    a.extend_from_slice(ADDRESS_MAGIC);
    a.extend_from_slice(&rank.to_le_bytes());
    a.extend_from_slice(&fabric_id.to_le_bytes());
    a
}

/// Places `piece` of `w` into its target region.
fn land(endpoints: &[Endpoint], w: &PendingWrite, piece: &Piece) -> Result<(), TransportError> {
    let dst = endpoints
        .get(w.dst)
        .ok_or(TransportError::UnknownPeer { peer: w.dst_rank })?;
    if !dst.alive {
        return Err(TransportError::PeerGone {
            peer: w.dst_rank,
            detail: "simulated failure".into(),
        });
    }
    let region = dst
        .by_key
        .get(&w.key)
        .and_then(|&id| dst.region(id))
        .ok_or_else(|| TransportError::KeyMismatch {
            peer: w.dst_rank,
            detail: format!("peer rejected key {:#x}: no such registered region", w.key),
        })?;
    let data = w
        .data
        .get(piece.start..piece.end)
        .ok_or_else(|| internal("piece outside its write"))?;
    let offset = w.remote_offset + piece.start;
    region
        .buffer
        .write(offset, data)
        .map_err(|_| TransportError::OutOfBounds {
            side: Side::Remote,
            offset,
            len: data.len(),
            region_len: region.buffer.len(),
        })
}

impl World {
    fn live(&mut self, index: usize, rank: Rank) -> Result<&mut Endpoint, TransportError> {
        match self.endpoints.get_mut(index) {
            Some(ep) if ep.alive => Ok(ep),
            _ => Err(TransportError::PeerGone {
                peer: rank,
                detail: "this endpoint's rank was failed".into(),
            }),
        }
    }

    fn step(&mut self) -> Option<SimDelivery> {
        let piece = self.schedule.pop()?;
        self.now = self.now.max(piece.time);
        let failed = match self.writes.get(piece.write) {
            Some(w) if w.error.is_none() => land(&self.endpoints, w, &piece).err(),
            Some(_) => None,
            None => return None,
        };
        let w = self.writes.get_mut(piece.write)?;
        if failed.is_some() {
            w.error = failed;
        }
        w.pieces_left = w.pieces_left.saturating_sub(1);
        let delivery = SimDelivery {
            src: w.src_rank,
            dst: w.dst_rank,
            id: w.id,
            bytes: piece.end - piece.start,
            completed: w.pieces_left == 0,
        };
        if w.pieces_left > 0 {
            return Some(delivery);
        }
        let result = match w.error.take() {
            None => Ok(()),
            Some(e) => Err(e),
        };
        let (src, dst, id, imm, len) = (w.src, w.dst, w.id, w.imm, w.len);
        if w.data.capacity() > KEEP_BUFFER_BYTES {
            w.data = Vec::new();
        }
        self.free.push(piece.write);
        if result.is_ok() {
            if let (Some(imm), Some(ep)) = (imm, self.endpoints.get_mut(dst)) {
                if ep.alive {
                    ep.completions.push_back(Completion::Immediate {
                        peer: Some(delivery.src),
                        imm,
                        len,
                    });
                }
            }
        }
        if let Some(ep) = self.endpoints.get_mut(src) {
            ep.in_flight = ep.in_flight.saturating_sub(1);
            if ep.alive {
                ep.completions.push_back(Completion::Write {
                    id,
                    peer: delivery.dst,
                    result,
                });
            }
        }
        Some(delivery)
    }

    fn advance(&mut self, ticks: u64) -> usize {
        let until = self.now.saturating_add(ticks);
        let mut n = 0;
        while self.schedule.next_time().is_some_and(|t| t <= until) {
            if self.step().is_some() {
                n += 1;
            }
        }
        self.now = until;
        n
    }

    /// A free write slot (recycled, or a new one).
    fn slot(&mut self) -> usize {
        if let Some(s) = self.free.pop() {
            return s;
        }
        self.writes.push(PendingWrite {
            src: 0,
            dst: 0,
            src_rank: 0,
            dst_rank: 0,
            id: WriteId(0),
            key: 0,
            remote_offset: 0,
            pieces_left: 0,
            imm: None,
            len: 0,
            error: None,
            data: Vec::new(),
        });
        self.writes.len() - 1
    }

    /// Copies `w`'s source bytes out of endpoint `src` and schedules its pieces to
    /// endpoint `dst`. Draws from the seeded generator in a fixed order: piece count,
    /// split points, then one delay per piece.
    fn schedule_write(
        &mut self,
        (src, src_rank): (usize, Rank),
        (dst, dst_rank): (usize, Rank),
        w: &Write,
    ) -> Result<(), TransportError> {
        let slot = self.slot();
        let copied = {
            let region = self
                .endpoints
                .get(src)
                .and_then(|e| e.region(w.local.id()));
            match (region, self.writes.get_mut(slot)) {
                (Some(region), Some(pending)) => {
                    pending.data.clear();
                    pending.data.resize(w.len, 0);
                    region.buffer.read(w.local_offset, &mut pending.data)
                }
                (None, _) => Err(TransportError::UnknownRegion {
                    region: w.local.id(),
                }),
                (_, None) => Err(internal("write slot out of range")),
            }
        };
        if let Err(e) = copied {
            self.free.push(slot);
            return Err(e);
        }

        let max_pieces = self.config.max_pieces.min(w.len.max(1));
        let pieces = self.rng.random_range(1..=max_pieces);
        let mut cuts = std::mem::take(&mut self.cuts);
        cuts.clear();
        for _ in 1..pieces {
            cuts.push(self.rng.random_range(0..=w.len));
        }
        cuts.push(0);
        cuts.push(w.len);
        cuts.sort_unstable();
        cuts.dedup();
        let floor = match self.config.ordering {
            Ordering::Ordered => self
                .connection_floor
                .get(&(src_rank, dst_rank))
                .copied()
                .unwrap_or(0),
            Ordering::Unordered => 0,
        };
        let mut latest = floor;
        let mut spans = 0;
        let mut schedule_span = |world: &mut World, a: usize, b: usize| {
            let delay = 1 + world.rng.random_range(0..=world.config.max_delay);
            let time = (world.now + delay).max(floor);
            latest = latest.max(time);
            world.seq += 1;
            world.schedule.push(Piece {
                time,
                seq: world.seq,
                write: slot,
                start: a,
                end: b,
            });
            spans += 1;
        };
        if cuts.len() < 2 {
            schedule_span(self, 0, 0);
        } else {
            for pair in cuts.windows(2) {
                schedule_span(self, pair[0], pair[1]);
            }
        }
        self.cuts = cuts;
        if self.config.ordering == Ordering::Ordered {
            self.connection_floor.insert((src_rank, dst_rank), latest);
        }
        let pending = self
            .writes
            .get_mut(slot)
            .ok_or_else(|| internal("write slot out of range"))?;
        pending.src = src;
        pending.dst = dst;
        pending.src_rank = src_rank;
        pending.dst_rank = dst_rank;
        pending.id = w.id;
        pending.key = w.remote.key;
        pending.remote_offset = w.remote_offset;
        pending.pieces_left = spans;
        pending.imm = w.imm;
        pending.len = w.len;
        pending.error = None;
        Ok(())
    }
}

/// One rank's endpoint on a [`SimFabric`].
#[derive(Debug)]
pub struct SimEndpoint {
    fabric: SimFabric,
    rank: Rank,
    /// Index of this endpoint in the fabric's table.
    index: usize,
    caps: Capabilities,
    address: Vec<u8>,
}

impl SimEndpoint {
    /// The fabric this endpoint belongs to.
    pub fn fabric(&self) -> &SimFabric {
        &self.fabric
    }
}

impl Transport for SimEndpoint {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn address(&self) -> Vec<u8> {
        self.address.clone()
    }

    fn add_peer(&mut self, peer: Rank, address: &[u8]) -> Result<(), TransportError> {
        let mut w = lock(&self.fabric.world)?;
        let fabric_id = w.fabric_id;
        if address.len() != 16 || &address[0..4] != ADDRESS_MAGIC {
            return Err(TransportError::Malformed {
                what: "endpoint address",
                detail: format!("expected 16 bytes starting with MKSA, got {} bytes", address.len()),
            });
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&address[8..16]);
        let addr_rank = u32::from_le_bytes([address[4], address[5], address[6], address[7]]);
        if u64::from_le_bytes(id) != fabric_id || addr_rank != peer {
            return Err(TransportError::Malformed {
                what: "endpoint address",
                detail: format!(
                    "address of rank {addr_rank} on fabric {}, expected rank {peer} on fabric {fabric_id}",
                    u64::from_le_bytes(id)
                ),
            });
        }
        if peer == self.rank {
            return Err(TransportError::InvalidArgument {
                arg: "peer",
                rule: format!("rank {peer} is this endpoint"),
            });
        }
        let ep = w.live(self.index, self.rank)?;
        if !ep.peers.insert(peer) {
            return Err(TransportError::InvalidArgument {
                arg: "peer",
                rule: format!("rank {peer} was already added"),
            });
        }
        Ok(())
    }

    fn register_host(&mut self, buffer: &HostBuffer) -> Result<LocalRegion, TransportError> {
        let mut w = lock(&self.fabric.world)?;
        let key: u64 = w.rng.random();
        let ep = w.live(self.index, self.rank)?;
        ep.regions.push(Some(Region {
            buffer: buffer.clone(),
            key,
        }));
        let id = ep.regions.len() as u64;
        // A key drawn twice (2^-64 odds) keeps landing in the older region.
        ep.by_key.entry(key).or_insert(id);
        Ok(LocalRegion::new(id, buffer.len()))
    }

    fn deregister(&mut self, region: LocalRegion) -> Result<(), TransportError> {
        let mut w = lock(&self.fabric.world)?;
        let ep = w.live(self.index, self.rank)?;
        let id = region.id();
        let removed = usize::try_from(id)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| ep.regions.get_mut(i))
            .and_then(Option::take)
            .ok_or(TransportError::UnknownRegion { region: id })?;
        if ep.by_key.get(&removed.key) == Some(&id) {
            ep.by_key.remove(&removed.key);
            let other = ep
                .regions
                .iter()
                .position(|r| r.as_ref().is_some_and(|r| r.key == removed.key));
            if let Some(i) = other {
                ep.by_key.insert(removed.key, i as u64 + 1);
            }
        }
        Ok(())
    }

    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError> {
        let mut w = lock(&self.fabric.world)?;
        let ep = w.live(self.index, self.rank)?;
        let r = ep
            .region(region.id())
            .ok_or(TransportError::UnknownRegion { region: region.id() })?;
        Ok(RemoteRegion {
            owner: self.rank,
            addr: 0,
            key: r.key,
            len: r.buffer.len() as u64,
        }
        .to_bytes())
    }

    fn import_remote(&mut self, peer: Rank, key: &[u8]) -> Result<RemoteRegion, TransportError> {
        let region = RemoteRegion::from_bytes(key)?;
        let mut w = lock(&self.fabric.world)?;
        let ep = w.live(self.index, self.rank)?;
        if !ep.peers.contains(&peer) {
            return Err(TransportError::UnknownPeer { peer });
        }
        if region.owner != peer {
            return Err(TransportError::KeyMismatch {
                peer,
                detail: format!("key was registered by rank {}", region.owner),
            });
        }
        ep.imported.insert(region);
        Ok(region)
    }

    fn post_writes(&mut self, peer: Rank, writes: &[Write]) -> Result<(), TransportError> {
        let mut guard = lock(&self.fabric.world)?;
        let w = &mut *guard;
        let ep = w.live(self.index, self.rank)?;
        if !ep.peers.contains(&peer) {
            return Err(TransportError::UnknownPeer { peer });
        }
        check_batch(
            &self.caps,
            peer,
            writes,
            |r| ep.imported.contains(r),
            |l| ep.region(l.id()).is_some_and(|r| r.buffer.len() == l.len()),
        )?;
        let dst = match w.index.get(&peer) {
            Some(&d) if w.endpoints.get(d).is_some_and(|p| p.alive) => d,
            _ => {
                return Err(TransportError::PeerGone {
                    peer,
                    detail: "simulated failure".into(),
                })
            }
        };
        let capacity = w.config.max_in_flight;
        for (posted, wr) in writes.iter().enumerate() {
            let in_flight = w.live(self.index, self.rank)?.in_flight;
            if in_flight >= capacity {
                return Err(TransportError::QueueFull {
                    peer,
                    posted,
                    in_flight,
                    capacity,
                });
            }
            w.schedule_write((self.index, self.rank), (dst, peer), wr)?;
            w.live(self.index, self.rank)?.in_flight += 1;
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError> {
        let mut w = lock(&self.fabric.world)?;
        if w.config.auto_advance {
            w.advance(1);
        }
        let ep = w.live(self.index, self.rank)?;
        let n = max.min(ep.completions.len());
        out.extend(ep.completions.drain(..n));
        Ok(n)
    }

    fn in_flight(&self) -> usize {
        lock(&self.fabric.world)
            .ok()
            .and_then(|w| w.endpoints.get(self.index).map(|e| e.in_flight))
            .unwrap_or(0)
    }
}
