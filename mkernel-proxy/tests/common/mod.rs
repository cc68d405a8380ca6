//! Helpers shared by the proxy tests: a rank's registered buffers, key exchange, and a
//! transport wrapper that records every post.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use mkernel_proxy::{PeerTables, ProxySetup};
use mkernel_transport::adaptor::{ArrivalFlags, RemoteFlags, FLAG_BYTES};
use mkernel_transport::sim::{SimConfig, SimEndpoint, SimFabric};
use mkernel_transport::{
    Capabilities, Completion, HostBuffer, LocalRegion, Rank, RemoteRegion, Transport,
    TransportError, Write,
};

/// One rank's buffers: `src` (what it sends), `dst` (where peers write, one slot of
/// `bytes` per source rank), and its arrival flags (`chunks` per source rank).
pub struct RankBuffers {
    pub rank: Rank,
    pub src: HostBuffer,
    pub src_region: LocalRegion,
    pub dst: HostBuffer,
    pub dst_region: LocalRegion,
    pub flags: HostBuffer,
    pub flags_region: LocalRegion,
    pub chunks: u32,
}

impl RankBuffers {
    pub fn new<T: Transport>(t: &mut T, world: u32, bytes: usize, chunks: u32) -> Self {
        let src = HostBuffer::new(bytes).unwrap();
        let dst = HostBuffer::new(bytes * world as usize).unwrap();
        let flags = HostBuffer::new(FLAG_BYTES * (chunks * world) as usize).unwrap();
        RankBuffers {
            rank: t.rank(),
            src_region: t.register_host(&src).unwrap(),
            dst_region: t.register_host(&dst).unwrap(),
            flags_region: t.register_host(&flags).unwrap(),
            src,
            dst,
            flags,
            chunks,
        }
    }

    /// This rank's arrival flags (all sources).
    pub fn arrivals(&self, world: u32) -> ArrivalFlags {
        ArrivalFlags::new(self.flags.clone(), 0, self.chunks * world).unwrap()
    }
}

/// A rank's published remote keys: (dst, flags).
pub type Keys = (Vec<u8>, Vec<u8>);

/// The remote keys rank `b.rank` publishes.
pub fn keys<T: Transport>(t: &T, b: &RankBuffers) -> Keys {
    (
        t.remote_key(&b.dst_region).unwrap(),
        t.remote_key(&b.flags_region).unwrap(),
    )
}

/// Proxy tables for `me` towards every other rank: local region 0 = src; remote
/// region 0 of each peer = its dst; flags = its arrival flags.
pub fn setup<T: Transport>(
    t: &mut T,
    me: &RankBuffers,
    peers: &[(Rank, Keys)],
    world: u32,
) -> ProxySetup {
    let mut tables = Vec::new();
    for (peer, (dst_key, flags_key)) in peers {
        let dst: RemoteRegion = t.import_remote(*peer, dst_key).unwrap();
        let flags: RemoteRegion = t.import_remote(*peer, flags_key).unwrap();
        tables.push(PeerTables {
            peer: *peer,
            regions: vec![dst],
            flags: Some(RemoteFlags {
                region: flags,
                offset: 0,
                chunks: me.chunks * world,
            }),
        });
    }
    ProxySetup {
        local_regions: vec![me.src_region],
        peers: tables,
        arrivals: Some(me.arrivals(world)),
    }
}

/// `n` connected simulated endpoints.
pub fn sim_world(config: SimConfig, n: u32) -> (SimFabric, Vec<SimEndpoint>) {
    let fabric = SimFabric::new(config).unwrap();
    let mut eps: Vec<SimEndpoint> = (0..n).map(|r| fabric.endpoint(r).unwrap()).collect();
    let addrs: Vec<Vec<u8>> = eps.iter().map(|e| e.address()).collect();
    for (r, ep) in eps.iter_mut().enumerate() {
        for (p, a) in addrs.iter().enumerate() {
            if p != r {
                ep.add_peer(p as Rank, a).unwrap();
            }
        }
    }
    (fabric, eps)
}

/// Bytes rank `src` sends in `epoch`: splitmix64 words keyed by (src, epoch), so stale
/// data of an earlier epoch never matches.
pub fn pattern(src: Rank, epoch: u64, len: usize) -> Vec<u8> {
    let key = (u64::from(src) << 48) ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut out = vec![0u8; len.div_ceil(8) * 8];
    for (j, word) in out.chunks_exact_mut(8).enumerate() {
        let mut z = key.wrapping_add((j as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        word.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// First differing byte index, if any.
pub fn first_mismatch(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter().zip(want).position(|(a, b)| a != b)
}

/// What a [`Recording`] transport saw.
#[derive(Debug, Default, Clone)]
pub struct Log {
    /// (peer, writes in the call) per successful `post_writes`.
    pub posts: Vec<(Rank, usize)>,
}

/// Wraps a transport, logging posts; can be told to fail posts or swallow completions.
pub struct Recording<T> {
    pub inner: T,
    pub log: Arc<Mutex<Log>>,
    pub fail_posts: Option<TransportError>,
    pub swallow_completions: bool,
}

impl<T: Transport> Recording<T> {
    pub fn new(inner: T) -> (Self, Arc<Mutex<Log>>) {
        let log = Arc::new(Mutex::new(Log::default()));
        (
            Recording {
                inner,
                log: log.clone(),
                fail_posts: None,
                swallow_completions: false,
            },
            log,
        )
    }
}

impl<T: Transport> Transport for Recording<T> {
    fn rank(&self) -> Rank {
        self.inner.rank()
    }
    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }
    fn address(&self) -> Vec<u8> {
        self.inner.address()
    }
    fn add_peer(&mut self, peer: Rank, address: &[u8]) -> Result<(), TransportError> {
        self.inner.add_peer(peer, address)
    }
    fn register_host(&mut self, buffer: &HostBuffer) -> Result<LocalRegion, TransportError> {
        self.inner.register_host(buffer)
    }
    fn deregister(&mut self, region: LocalRegion) -> Result<(), TransportError> {
        self.inner.deregister(region)
    }
    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError> {
        self.inner.remote_key(region)
    }
    fn import_remote(&mut self, peer: Rank, key: &[u8]) -> Result<RemoteRegion, TransportError> {
        self.inner.import_remote(peer, key)
    }
    fn post_writes(&mut self, peer: Rank, writes: &[Write]) -> Result<(), TransportError> {
        if let Some(e) = &self.fail_posts {
            return Err(e.clone());
        }
        self.inner.post_writes(peer, writes)?;
        self.log.lock().unwrap().posts.push((peer, writes.len()));
        Ok(())
    }
    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError> {
        if self.swallow_completions {
            let mut sink = Vec::new();
            self.inner.poll(&mut sink, max)?;
            return Ok(0);
        }
        self.inner.poll(out, max)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
}
