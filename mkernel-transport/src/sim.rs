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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
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

struct Piece {
    write: u64,
    dst_offset: usize,
    data: Vec<u8>,
}

struct PendingWrite {
    src: Rank,
    dst: Rank,
    id: WriteId,
    key: u64,
    pieces_left: usize,
    imm: Option<u32>,
    len: usize,
    error: Option<TransportError>,
}

struct Region {
    buffer: HostBuffer,
    key: u64,
}

struct Endpoint {
    alive: bool,
    regions: HashMap<u64, Region>,
    next_region: u64,
    peers: HashSet<Rank>,
    imported: HashSet<RemoteRegion>,
    completions: VecDeque<Completion>,
    in_flight: usize,
}

struct World {
    config: SimConfig,
    fabric_id: u64,
    rng: StdRng,
    now: u64,
    seq: u64,
    endpoints: HashMap<Rank, Endpoint>,
    schedule: BTreeMap<(u64, u64), Piece>,
    writes: HashMap<u64, PendingWrite>,
    next_write: u64,
    connection_floor: HashMap<(Rank, Rank), u64>,
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
                endpoints: HashMap::new(),
                schedule: BTreeMap::new(),
                writes: HashMap::new(),
                next_write: 0,
                connection_floor: HashMap::new(),
            })),
        })
    }

    /// Creates the endpoint of `rank`.
    ///
    /// Errors: [`TransportError::InvalidArgument`] when `rank` already has one.
    pub fn endpoint(&self, rank: Rank) -> Result<SimEndpoint, TransportError> {
        let mut w = lock(&self.world)?;
        if w.endpoints.contains_key(&rank) {
            return Err(TransportError::InvalidArgument {
                arg: "rank",
                rule: format!("rank {rank} already has an endpoint on this fabric"),
            });
        }
        w.endpoints.insert(
            rank,
            Endpoint {
                alive: true,
                regions: HashMap::new(),
                next_region: 1,
                peers: HashSet::new(),
                imported: HashSet::new(),
                completions: VecDeque::new(),
                in_flight: 0,
            },
        );
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
        let mut w = lock(&self.world)?;
        let ep = w
            .endpoints
            .get_mut(&rank)
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

impl World {
    fn step(&mut self) -> Option<SimDelivery> {
        let ((time, _), piece) = self.schedule.pop_first()?;
        self.now = self.now.max(time);
        let mut w = self.writes.remove(&piece.write)?;
        if w.error.is_none() {
            w.error = self.land(&w, &piece).err();
        }
        w.pieces_left = w.pieces_left.saturating_sub(1);
        let delivery = SimDelivery {
            src: w.src,
            dst: w.dst,
            id: w.id,
            bytes: piece.data.len(),
            completed: w.pieces_left == 0,
        };
        if w.pieces_left > 0 {
            self.writes.insert(piece.write, w);
            return Some(delivery);
        }
        let result = match w.error.take() {
            None => Ok(()),
            Some(e) => Err(e),
        };
        if result.is_ok() {
            if let (Some(imm), Some(dst)) = (w.imm, self.endpoints.get_mut(&w.dst)) {
                if dst.alive {
                    dst.completions.push_back(Completion::Immediate {
                        peer: Some(w.src),
                        imm,
                        len: w.len,
                    });
                }
            }
        }
        if let Some(src) = self.endpoints.get_mut(&w.src) {
            src.in_flight = src.in_flight.saturating_sub(1);
            if src.alive {
                src.completions.push_back(Completion::Write {
                    id: w.id,
                    peer: w.dst,
                    result,
                });
            }
        }
        Some(delivery)
    }

    fn land(&mut self, w: &PendingWrite, piece: &Piece) -> Result<(), TransportError> {
        let dst = self.endpoints.get(&w.dst).ok_or(TransportError::UnknownPeer { peer: w.dst })?;
        if !dst.alive {
            return Err(TransportError::PeerGone {
                peer: w.dst,
                detail: "simulated failure".into(),
            });
        }
        let region = dst
            .regions
            .values()
            .find(|r| r.key == w.key)
            .ok_or_else(|| TransportError::KeyMismatch {
                peer: w.dst,
                detail: format!("peer rejected key {:#x}: no such registered region", w.key),
            })?;
        region.buffer.write(piece.dst_offset, &piece.data).map_err(|_| {
            TransportError::OutOfBounds {
                side: Side::Remote,
                offset: piece.dst_offset,
                len: piece.data.len(),
                region_len: region.buffer.len(),
            }
        })
    }

    fn advance(&mut self, ticks: u64) -> usize {
        let until = self.now.saturating_add(ticks);
        let mut n = 0;
        while self
            .schedule
            .first_key_value()
            .is_some_and(|((t, _), _)| *t <= until)
        {
            if self.step().is_some() {
                n += 1;
            }
        }
        self.now = until;
        n
    }

    fn schedule_write(&mut self, src: Rank, dst: Rank, w: &Write, data: Vec<u8>) {
        let max_pieces = self.config.max_pieces.min(w.len.max(1));
        let pieces = self.rng.random_range(1..=max_pieces);
        let mut cuts: Vec<usize> = (1..pieces)
            .map(|_| self.rng.random_range(0..=w.len))
            .collect();
        cuts.push(0);
        cuts.push(w.len);
        cuts.sort_unstable();
        cuts.dedup();
        let write = self.next_write;
        self.next_write += 1;
        let floor = match self.config.ordering {
            Ordering::Ordered => self.connection_floor.get(&(src, dst)).copied().unwrap_or(0),
            Ordering::Unordered => 0,
        };
        let mut latest = floor;
        let spans: Vec<(usize, usize)> = if cuts.len() < 2 {
            vec![(0, 0)]
        } else {
            cuts.windows(2).map(|p| (p[0], p[1])).collect()
        };
        for &(a, b) in &spans {
            let delay = 1 + self.rng.random_range(0..=self.config.max_delay);
            let time = (self.now + delay).max(floor);
            latest = latest.max(time);
            self.seq += 1;
            self.schedule.insert(
                (time, self.seq),
                Piece {
                    write,
                    dst_offset: w.remote_offset + a,
                    data: data[a..b].to_vec(),
                },
            );
        }
        if self.config.ordering == Ordering::Ordered {
            self.connection_floor.insert((src, dst), latest);
        }
        self.writes.insert(
            write,
            PendingWrite {
                src,
                dst,
                id: w.id,
                key: w.remote.key,
                pieces_left: spans.len(),
                imm: w.imm,
                len: w.len,
                error: None,
            },
        );
    }
}

/// One rank's endpoint on a [`SimFabric`].
#[derive(Debug)]
pub struct SimEndpoint {
    fabric: SimFabric,
    rank: Rank,
    caps: Capabilities,
    address: Vec<u8>,
}

impl SimEndpoint {
    /// The fabric this endpoint belongs to.
    pub fn fabric(&self) -> &SimFabric {
        &self.fabric
    }
}

fn live(w: &mut World, rank: Rank) -> Result<&mut Endpoint, TransportError> {
    match w.endpoints.get_mut(&rank) {
        Some(ep) if ep.alive => Ok(ep),
        _ => Err(TransportError::PeerGone {
            peer: rank,
            detail: "this endpoint's rank was failed".into(),
        }),
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
        let ep = live(&mut w, self.rank)?;
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
        let ep = live(&mut w, self.rank)?;
        let id = ep.next_region;
        ep.next_region += 1;
        ep.regions.insert(
            id,
            Region {
                buffer: buffer.clone(),
                key,
            },
        );
        Ok(LocalRegion::new(id, buffer.len()))
    }

    fn deregister(&mut self, region: LocalRegion) -> Result<(), TransportError> {
        let mut w = lock(&self.fabric.world)?;
        let ep = live(&mut w, self.rank)?;
        ep.regions
            .remove(&region.id())
            .map(|_| ())
            .ok_or(TransportError::UnknownRegion { region: region.id() })
    }

    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError> {
        let mut w = lock(&self.fabric.world)?;
        let ep = live(&mut w, self.rank)?;
        let r = ep
            .regions
            .get(&region.id())
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
        let ep = live(&mut w, self.rank)?;
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
        let ep = live(w, self.rank)?;
        if !ep.peers.contains(&peer) {
            return Err(TransportError::UnknownPeer { peer });
        }
        check_batch(
            &self.caps,
            peer,
            writes,
            |r| ep.imported.contains(r),
            |l| ep.regions.get(&l.id()).is_some_and(|r| r.buffer.len() == l.len()),
        )?;
        let mut sources = Vec::with_capacity(writes.len());
        for wr in writes {
            let region = ep
                .regions
                .get(&wr.local.id())
                .ok_or(TransportError::UnknownRegion { region: wr.local.id() })?;
            let mut data = vec![0u8; wr.len];
            region.buffer.read(wr.local_offset, &mut data)?;
            sources.push(data);
        }
        if !w.endpoints.get(&peer).is_some_and(|p| p.alive) {
            return Err(TransportError::PeerGone {
                peer,
                detail: "simulated failure".into(),
            });
        }
        let capacity = w.config.max_in_flight;
        for (posted, (wr, data)) in writes.iter().zip(sources).enumerate() {
            let ep = live(w, self.rank)?;
            if ep.in_flight >= capacity {
                return Err(TransportError::QueueFull {
                    peer,
                    posted,
                    in_flight: ep.in_flight,
                    capacity,
                });
            }
            ep.in_flight += 1;
            w.schedule_write(self.rank, peer, wr, data);
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError> {
        let mut w = lock(&self.fabric.world)?;
        if w.config.auto_advance {
            w.advance(1);
        }
        let ep = live(&mut w, self.rank)?;
        let n = max.min(ep.completions.len());
        out.extend(ep.completions.drain(..n));
        Ok(n)
    }

    fn in_flight(&self) -> usize {
        lock(&self.fabric.world)
            .ok()
            .and_then(|w| w.endpoints.get(&self.rank).map(|e| e.in_flight))
            .unwrap_or(0)
    }
}
