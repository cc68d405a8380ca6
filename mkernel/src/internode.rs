//! GPU-driven inter-node streaming through the host proxy (the design notes, `../shared/DESIGN.md`, section 2, items
//! 3, 5 and 6): one rank's persistent kernel streams bytes to its peer on another node
//! while receiving as many from it, with every network operation going GPU -> command
//! ring -> proxy thread -> [`Transport`] -> peer -> arrival flag -> GPU.
//!
//! ```text
//!  rank r (GPU r, its own context)                      rank p
//!  src (device) --SEND CTAs: copy--> staging (pinned)   landing (pinned) --RECV CTAs: verify
//!        ring (pinned, cuMemHostAlloc) --proxy r--> transport r ==> transport p --> landing_p
//!                                                    arrival flags_p[c] := epoch (adaptor)
//! ```
//!
//! **Host-staged or direct.** When the transport cannot register GPU memory
//! ([`mkernel_transport::Capabilities::device_memory`] is false: libfabric `tcp`, `shm`),
//! SEND CTAs copy each chunk into a registered pinned staging slot and the peer's bytes
//! land in registered pinned host memory that RECV CTAs read through its device mapping.
//! When it can (EFA, verbs with GPUDirect), `src` and `landing` are device memory
//! registered with the NIC and commands name `src` directly. [`DataPath::select`] makes
//! the choice from the capability; the kernel has one code path with a `direct` switch.
//!
//! **Memory.** The ring and the status word come from `cuMemHostAlloc(DEVICEMAP |
//! PORTABLE)`. Memory the transport registers must be a [`HostBuffer`], so staging,
//! landing, arrival flags and the 8-byte credit words are page-aligned `HostBuffer`s
//! pinned and mapped into the device with `cuMemHostRegister(DEVICEMAP | PORTABLE)`.
//!
//! **Protocol.** Chunk `c` of epoch `e` raises the peer's arrival flag `c` to `e`
//! through the completion adaptor the transport calls for (ordered flag write, or
//! immediate data that the peer's proxy turns into the flag). After verifying an epoch,
//! the receiver sends a credit (flag `capacity_chunks` at the sender) so that the sender
//! never overwrites bytes still being read: epochs run back to back with no host barrier
//! and no reset. See `mkernel-kernels/src/cuda/ops/proxy_stream.cuh`.
//!
//! **Setup.** [`StreamRank::prepare`] opens the GPU, allocates and registers memory;
//! [`StreamRank::address`] gives the bytes the peer needs (transport address and remote
//! keys; a bootstrap carries them between processes); [`StreamRank::connect`] imports the
//! peer's and starts the proxy thread. [`connect_pair`] does both ranks of one process
//! (the GPU test and the benchmark: each GPU plays one node).
//!
//! Every host wait on GPU-written memory is bounded ([`ProxyStream::wait`]) and every
//! device wait is bounded by [`StreamConfig::timeout`] and reports what it waited for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaStream};
use mkernel_kernels::driver::{self as kdriver, DeviceInfo};
use mkernel_kernels::params::{ProxyStreamControl, ProxyStreamParams, ProxyStreamResult, ProxyStreamStatus, RingView};
use mkernel_kernels::proxy_stream::{self as kstream, StreamShape, StreamWait};
use mkernel_proxy::{
    MonotonicClock, PeerTables, Proxy, ProxyConfig, ProxyEngine, ProxyError, ProxySetup, ProxyStats, Ring, RingLayout,
    RingMemory, ShutdownReport,
};
use mkernel_transport::adaptor::{ArrivalFlags, CompletionMode, RemoteFlags, FLAG_BYTES};
use mkernel_transport::{Capabilities, HostBuffer, LocalRegion, Rank, RemoteRegion, Transport, TransportError};

use crate::error::{invalid, DriverContext, Error, Result};
use crate::comm::{open_device, DeviceMem};

const PAGE: usize = 4096;

/// Where the stream's bytes live while the network moves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataPath {
    /// Staged through registered pinned host memory on both sides (the transport cannot
    /// register device memory).
    HostStaged,
    /// Device memory registered with the NIC on both sides (GPUDirect RDMA).
    Direct,
}

impl DataPath {
    /// Direct when the transport registers device memory, host-staged otherwise.
    pub fn select(caps: &Capabilities) -> Self {
        if caps.device_memory {
            DataPath::Direct
        } else {
            DataPath::HostStaged
        }
    }
}

/// Settings of one rank's stream. Both ranks must use the same capacity, chunk size
/// and seed ([`StreamRank::connect`] checks the first two).
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// Largest bytes per direction of one epoch (sizes `src`, `landing` and the flags).
    pub capacity_bytes: u64,
    /// Bytes per chunk (one command, one arrival flag); a multiple of 16.
    pub chunk_bytes: u32,
    /// SEND CTAs of the kernel.
    pub send_ctas: u32,
    /// RECV CTAs of the kernel.
    pub recv_ctas: u32,
    /// Staging slots (of `chunk_bytes`) per SEND CTA on the host-staged path.
    pub staging_slots: u32,
    /// Command ring slots (a power of two).
    pub ring_slots: u32,
    /// Bound on every device-side wait (and, doubled plus 5 s, on the host's wait).
    pub timeout: Duration,
    /// Seed of the byte pattern.
    pub seed: u64,
    /// Force a data path; `None` selects it from the transport's capabilities.
    pub path: Option<DataPath>,
    /// The proxy's tunables (its thread name is set per rank); its `completion_mode`
    /// picks the adaptor (`None`: from the transport's capabilities).
    pub proxy: ProxyConfig,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            capacity_bytes: 64 << 20,
            chunk_bytes: 1 << 20,
            send_ctas: 8,
            recv_ctas: 8,
            staging_slots: 4,
            ring_slots: 1024,
            timeout: Duration::from_secs(30),
            seed: 0x6d6b_7072_6f78_7931,
            path: None,
            proxy: ProxyConfig::default(),
        }
    }
}

impl StreamConfig {
    /// Chunks the capacity holds.
    pub fn capacity_chunks(&self) -> Result<u32> {
        if self.chunk_bytes == 0 || !self.chunk_bytes.is_multiple_of(16) {
            return Err(invalid("chunk_bytes", format!("must be a positive multiple of 16, got {}", self.chunk_bytes)));
        }
        if self.capacity_bytes == 0 || !self.capacity_bytes.is_multiple_of(16) {
            return Err(invalid("capacity_bytes", format!("must be a positive multiple of 16, got {}", self.capacity_bytes)));
        }
        let chunks = self.capacity_bytes.div_ceil(u64::from(self.chunk_bytes));
        // Flags 0..chunks plus the credit flag must fit the immediate's chunk field.
        if chunks + 1 > 1 << 20 {
            return Err(invalid(
                "capacity_bytes",
                format!("{chunks} chunks of {} B: at most 2^20 - 1 chunks (immediate data carries 20 chunk bits)", self.chunk_bytes),
            ));
        }
        Ok(chunks as u32)
    }

    fn validate(&self, sm_count: u32) -> Result<u32> {
        let chunks = self.capacity_chunks()?;
        if !crate::comm::TIMEOUT_RANGE.contains(&self.timeout) {
            return Err(invalid("timeout", format!("must be between 1 ms and 1 day, got {:?}", self.timeout)));
        }
        if !self.ring_slots.is_power_of_two() {
            return Err(invalid("ring_slots", format!("must be a power of two, got {}", self.ring_slots)));
        }
        StreamShape {
            bytes: self.capacity_bytes,
            chunk_bytes: self.chunk_bytes,
            capacity_chunks: chunks,
            send_ctas: self.send_ctas,
            recv_ctas: self.recv_ctas,
            staging_slots: self.staging_slots,
            sm_count,
        }
        .validate()?;
        Ok(chunks)
    }
}

/// Word `word` (bytes `8 * word ..`, little-endian) of rank `rank`'s stream in `epoch`:
/// the host mirror of `stream_word` in `ops/proxy_stream.cuh`, for checks on the host.
pub fn pattern_word(seed: u64, epoch: u32, rank: u32, word: u64) -> u64 {
    fn mix64(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    let key = mix64(seed ^ mix64((u64::from(epoch) << 32) | u64::from(rank)));
    mix64(key.wrapping_add(word.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
}

// ---- memory ---------------------------------------------------------------------------

/// Pinned host memory from `cuMemHostAlloc(DEVICEMAP | PORTABLE)`, zeroed, freed on drop:
/// the command ring and the status word.
struct PinnedAlloc {
    ctx: Arc<CudaContext>,
    host: *mut u8,
    device: u64,
    len: usize,
}

// SAFETY: the allocation is plain pinned memory owned by this value; concurrent access
// goes through the ring protocol (atomics) or volatile reads of the status.
unsafe impl Send for PinnedAlloc {}
// SAFETY: as above.
unsafe impl Sync for PinnedAlloc {}

impl PinnedAlloc {
    fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self> {
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        let mut host = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: out-pointer to a local.
        unsafe { sys::cuMemHostAlloc(&mut host, len, flags) }.result().call("cuMemHostAlloc")?;
        let mut mem = PinnedAlloc { ctx: ctx.clone(), host: host.cast(), device: 0, len };
        // SAFETY: `len` writable bytes were just allocated.
        unsafe { std::ptr::write_bytes(mem.host, 0, len) };
        let mut device = 0;
        // SAFETY: allocated with DEVICEMAP.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }.result().call("cuMemHostGetDevicePointer")?;
        mem.device = device;
        Ok(mem)
    }
}

impl Drop for PinnedAlloc {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemHostAlloc, freed once.
        let _ = unsafe { sys::cuMemFreeHost(self.host.cast()) };
    }
}

// SAFETY: the address is fixed for the life of the value, page-aligned, `len` bytes,
// and only the ring (and the GPU through the ring protocol) uses it.
unsafe impl RingMemory for PinnedAlloc {
    fn host_ptr(&self) -> *mut u8 {
        self.host
    }
    fn len(&self) -> usize {
        self.len
    }
    fn device_ptr(&self) -> Option<u64> {
        Some(self.device)
    }
}

/// A [`HostBuffer`] (what transports register) pinned and mapped into the device with
/// `cuMemHostRegister(DEVICEMAP | PORTABLE)`; unregistered on drop (the transport's
/// clone keeps the bytes alive as long as it needs them).
struct MappedHost {
    ctx: Arc<CudaContext>,
    buffer: HostBuffer,
    device: u64,
}

impl MappedHost {
    fn new(ctx: &Arc<CudaContext>, len: usize, rank: Rank, what: &'static str) -> Result<Self> {
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        let buffer = HostBuffer::new(len).map_err(|source| Error::Transport { rank, step: what, source })?;
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let flags = sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_PORTABLE;
        // SAFETY: `len` bytes at a page-aligned address owned by `buffer`.
        unsafe { sys::cuMemHostRegister_v2(buffer.as_ptr().cast(), len, flags) }.result().call("cuMemHostRegister")?;
        let mut mem = MappedHost { ctx: ctx.clone(), buffer, device: 0 };
        let mut device = 0;
        // SAFETY: registered with DEVICEMAP just above.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, mem.buffer.as_ptr().cast(), 0) }
            .result()
            .call("cuMemHostGetDevicePointer")?;
        mem.device = device;
        Ok(mem)
    }
}

impl Drop for MappedHost {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered in `new`, unregistered once.
        let _ = unsafe { sys::cuMemHostUnregister(self.buffer.as_ptr().cast()) };
    }
}


/// Where the peer's bytes land.
enum Landing {
    Host(MappedHost),
    Device(DeviceMem),
}

impl Landing {
    fn device_ptr(&self) -> u64 {
        match self {
            Landing::Host(m) => m.device,
            Landing::Device(d) => d.ptr,
        }
    }
}

/// Every allocation of one rank's stream. Dropped after the kernel and the proxy have
/// stopped (see [`ProxyStream`]'s `Drop`).
struct Buffers {
    src: DeviceMem,
    staging: Option<MappedHost>,
    landing: Landing,
    arrivals: MappedHost,
    _credit_src: HostBuffer,
    _credit_sink: HostBuffer,
    device_head: DeviceMem,
    control: DeviceMem,
    result: DeviceMem,
    status: PinnedAlloc,
}

// ---- setup ----------------------------------------------------------------------------

/// Regions this rank registered with its transport.
struct Registered {
    data_src: LocalRegion,
    credit_src: LocalRegion,
    landing: LocalRegion,
    arrivals: LocalRegion,
    credit_sink: LocalRegion,
}

/// One rank after [`StreamRank::prepare`]: memory allocated and registered, waiting for
/// the peer's [`StreamRank::address`] bytes.
pub struct StreamRank<T: Transport> {
    rank: Rank,
    peer: Rank,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    transport: T,
    config: StreamConfig,
    capacity_chunks: u32,
    path: DataPath,
    buffers: Buffers,
    regions: Registered,
}

impl<T: Transport> std::fmt::Debug for StreamRank<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRank")
            .field("rank", &self.rank)
            .field("peer", &self.peer)
            .field("device", &self.info.ordinal)
            .field("path", &self.path)
            .finish()
    }
}

const ADDRESS_MAGIC: &[u8; 4] = b"MKPS";
const ADDRESS_VERSION: u16 = 1;

/// What a rank publishes for its peer (see [`StreamRank::address`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PeerAddress {
    rank: Rank,
    chunk_bytes: u32,
    capacity_chunks: u32,
    endpoint: Vec<u8>,
    landing_key: Vec<u8>,
    arrivals_key: Vec<u8>,
    credit_key: Vec<u8>,
}

impl PeerAddress {
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(ADDRESS_MAGIC);
        out.extend_from_slice(&ADDRESS_VERSION.to_le_bytes());
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.chunk_bytes.to_le_bytes());
        out.extend_from_slice(&self.capacity_chunks.to_le_bytes());
        for part in [&self.endpoint, &self.landing_key, &self.arrivals_key, &self.credit_key] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
        out
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = |why: String| invalid("peer_address", why);
        let mut at = 0usize;
        let mut take = |n: usize, what: &str| -> Result<&[u8]> {
            let s = bytes.get(at..at + n).ok_or_else(|| bad(format!("{} bytes end before the {what}", bytes.len())))?;
            at += n;
            Ok(s)
        };
        if take(4, "magic")? != ADDRESS_MAGIC {
            return Err(bad("not a proxy-stream address (bad magic)".into()));
        }
        let u16_at = |s: &[u8]| u16::from_le_bytes([s[0], s[1]]);
        let u32_at = |s: &[u8]| u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        let version = u16_at(take(2, "version")?);
        if version != ADDRESS_VERSION {
            return Err(bad(format!("version {version}, expected {ADDRESS_VERSION}")));
        }
        let rank = u32_at(take(4, "rank")?);
        let chunk_bytes = u32_at(take(4, "chunk size")?);
        let capacity_chunks = u32_at(take(4, "capacity")?);
        let mut parts = Vec::new();
        for what in ["endpoint address", "landing key", "arrival-flag key", "credit key"] {
            let n = u32_at(take(4, what)?) as usize;
            parts.push(take(n, what)?.to_vec());
        }
        if at != bytes.len() {
            return Err(bad(format!("{} trailing bytes", bytes.len() - at)));
        }
        let credit_key = parts.pop().unwrap_or_default();
        let arrivals_key = parts.pop().unwrap_or_default();
        let landing_key = parts.pop().unwrap_or_default();
        let endpoint = parts.pop().unwrap_or_default();
        Ok(PeerAddress { rank, chunk_bytes, capacity_chunks, endpoint, landing_key, arrivals_key, credit_key })
    }
}

impl<T: Transport + Send + 'static> StreamRank<T> {
    /// Opens GPU `device` for rank `transport.rank()`, which streams to and from `peer`,
    /// allocates the stream's memory and registers it with `transport` (staging and
    /// landing in pinned host memory, or device memory when the path is direct).
    ///
    /// Errors: a missing or non-Hopper GPU; a config value out of range (named); a peer
    /// equal to this rank; [`Error::Transport`] naming the registration that failed.
    pub fn prepare(device: usize, mut transport: T, peer: Rank, config: StreamConfig) -> Result<Self> {
        let rank = transport.rank();
        if peer == rank {
            return Err(invalid("peer", format!("rank {rank} cannot stream to itself")));
        }
        // Config rules first (a bad value is reported as such, also without a GPU), then
        // again with the GPU's SM count.
        config.validate(u32::MAX)?;
        let (ctx, info) = open_device(device)?;
        let capacity_chunks = config.validate(info.sm_count)?;
        let caps = transport.capabilities().clone();
        let path = config.path.unwrap_or_else(|| DataPath::select(&caps));
        if path == DataPath::Direct && !caps.device_memory {
            return Err(invalid("path", format!("the direct path needs a transport that registers device memory; {} cannot", caps.name)));
        }
        let capacity = usize::try_from(config.capacity_bytes)
            .map_err(|_| invalid("capacity_bytes", "does not fit this machine's address space"))?;
        let tr = |step: &'static str| move |source: TransportError| Error::Transport { rank, step, source };
        let src = DeviceMem::zeroed(&ctx, capacity as u64, || format!("rank {rank}'s stream source buffer (capacity_bytes = {capacity})"))?;
        let staging_bytes = (config.send_ctas as usize)
            .checked_mul(config.staging_slots as usize)
            .and_then(|b| b.checked_mul(config.chunk_bytes as usize))
            .ok_or_else(|| invalid("staging_slots", "send_ctas x staging_slots x chunk_bytes overflows this machine's address space"))?;
        let (staging, landing) = match path {
            DataPath::HostStaged => {
                (Some(MappedHost::new(&ctx, staging_bytes, rank, "staging allocation")?), Landing::Host(MappedHost::new(&ctx, capacity, rank, "landing allocation")?))
            }
            DataPath::Direct => (None, Landing::Device(DeviceMem::zeroed(&ctx, capacity as u64, || format!("rank {rank}'s landing buffer (capacity_bytes = {capacity})"))?)),
        };
        let arrivals = MappedHost::new(&ctx, (capacity_chunks as usize + 1) * FLAG_BYTES, rank, "arrival-flag allocation")?;
        let credit_src = HostBuffer::new(PAGE).map_err(tr("credit allocation"))?;
        let credit_sink = HostBuffer::new(PAGE).map_err(tr("credit allocation"))?;
        let data_src = match (&staging, path) {
            (Some(s), DataPath::HostStaged) => transport.register_host(&s.buffer).map_err(tr("register_host(staging)"))?,
            // SAFETY: `src` is a live cuMemAlloc allocation of `capacity` bytes on
            // `device`, freed only after the transport (inside the proxy) is dropped.
            _ => unsafe { transport.register_device(src.ptr, capacity, device as i32) }.map_err(tr("register_device(src)"))?,
        };
        let landing_region = match &landing {
            Landing::Host(m) => transport.register_host(&m.buffer).map_err(tr("register_host(landing)"))?,
            // SAFETY: as for `src`.
            Landing::Device(d) => unsafe { transport.register_device(d.ptr, capacity, device as i32) }.map_err(tr("register_device(landing)"))?,
        };
        let regions = Registered {
            data_src,
            credit_src: transport.register_host(&credit_src).map_err(tr("register_host(credit source)"))?,
            landing: landing_region,
            arrivals: transport.register_host(&arrivals.buffer).map_err(tr("register_host(arrival flags)"))?,
            credit_sink: transport.register_host(&credit_sink).map_err(tr("register_host(credit sink)"))?,
        };
        let buffers = Buffers {
            src,
            staging,
            landing,
            arrivals,
            _credit_src: credit_src,
            _credit_sink: credit_sink,
            device_head: DeviceMem::zeroed(&ctx, 8, || format!("rank {rank}'s device head"))?,
            control: DeviceMem::zeroed(&ctx, std::mem::size_of::<ProxyStreamControl>() as u64, || format!("rank {rank}'s stream control block"))?,
            result: DeviceMem::zeroed(&ctx, std::mem::size_of::<ProxyStreamResult>() as u64, || format!("rank {rank}'s stream result block"))?,
            status: PinnedAlloc::new(&ctx, std::mem::size_of::<ProxyStreamStatus>())?,
        };
        tracing::debug!(rank, peer, device, ?path, transport = %caps.name, capacity_chunks, "proxy stream prepared");
        Ok(StreamRank { rank, peer, ctx, info, transport, config, capacity_chunks, path, buffers, regions })
    }

    /// The data path chosen for this rank.
    pub fn path(&self) -> DataPath {
        self.path
    }

    /// The bytes the peer passes to [`StreamRank::connect`]: this endpoint's address and
    /// the remote keys of the landing region, the arrival flags and the credit word.
    ///
    /// Errors: [`Error::Transport`] when a key cannot be produced.
    pub fn address(&self) -> Result<Vec<u8>> {
        let rank = self.rank;
        let key = |r: &LocalRegion, step: &'static str| self.transport.remote_key(r).map_err(|source| Error::Transport { rank, step, source });
        Ok(PeerAddress {
            rank,
            chunk_bytes: self.config.chunk_bytes,
            capacity_chunks: self.capacity_chunks,
            endpoint: self.transport.address(),
            landing_key: key(&self.regions.landing, "remote_key(landing)")?,
            arrivals_key: key(&self.regions.arrivals, "remote_key(arrival flags)")?,
            credit_key: key(&self.regions.credit_sink, "remote_key(credit sink)")?,
        }
        .to_bytes())
    }

    /// Imports the peer's address bytes, builds the proxy's tables (local regions:
    /// 0 = staging or `src`, 1 = credit source; the peer's regions: 0 = landing,
    /// 1 = credit sink; its flags: one per chunk plus the credit flag), creates the ring in
    /// pinned memory and starts the proxy thread `mkernel-proxy-r<rank>`.
    ///
    /// Errors: malformed bytes, a different peer rank, chunk size or capacity (named);
    /// [`Error::Transport`] for the transport's refusals; [`Error::Proxy`] when the proxy
    /// cannot be built (e.g. the ordered-flag adaptor on an unordered transport).
    pub fn connect(mut self, peer_address: &[u8]) -> Result<ProxyStream> {
        let rank = self.rank;
        let a = PeerAddress::from_bytes(peer_address)?;
        if a.rank != self.peer {
            return Err(invalid("peer_address", format!("comes from rank {}, this rank {rank} streams with rank {}", a.rank, self.peer)));
        }
        if a.chunk_bytes != self.config.chunk_bytes || a.capacity_chunks != self.capacity_chunks {
            return Err(invalid(
                "peer_address",
                format!(
                    "rank {} uses {} chunks of {} B, rank {rank} uses {} chunks of {} B: both ranks need the same capacity_bytes and chunk_bytes",
                    a.rank, a.capacity_chunks, a.chunk_bytes, self.capacity_chunks, self.config.chunk_bytes
                ),
            ));
        }
        let tr = |step: &'static str| move |source: TransportError| Error::Transport { rank, step, source };
        self.transport.add_peer(self.peer, &a.endpoint).map_err(tr("add_peer"))?;
        let landing: RemoteRegion = self.transport.import_remote(self.peer, &a.landing_key).map_err(tr("import_remote(landing)"))?;
        let flags: RemoteRegion = self.transport.import_remote(self.peer, &a.arrivals_key).map_err(tr("import_remote(arrival flags)"))?;
        let sink: RemoteRegion = self.transport.import_remote(self.peer, &a.credit_key).map_err(tr("import_remote(credit sink)"))?;
        let flag_count = self.capacity_chunks + 1;
        let arrivals = ArrivalFlags::new(self.buffers.arrivals.buffer.clone(), 0, flag_count).map_err(tr("arrival flags"))?;
        let setup = ProxySetup {
            local_regions: vec![self.regions.data_src, self.regions.credit_src],
            peers: vec![PeerTables {
                peer: self.peer,
                regions: vec![landing, sink],
                flags: Some(RemoteFlags { region: flags, offset: 0, chunks: flag_count }),
            }],
            arrivals: Some(arrivals),
        };
        let proxy_err = |source: ProxyError| Error::Proxy { rank, source };
        let layout = RingLayout::new(self.config.ring_slots, self.capacity_chunks).map_err(proxy_err)?;
        let ring = Ring::new(PinnedAlloc::new(&self.ctx, layout.bytes())?, layout).map_err(proxy_err)?;
        let proxy_config = ProxyConfig { name: format!("mkernel-proxy-r{rank}"), ..self.config.proxy.clone() };
        let engine = ProxyEngine::new(self.transport, &ring, setup, proxy_config, MonotonicClock::default()).map_err(proxy_err)?;
        let mode = engine.completion_mode();
        let transport_name = engine.transport().capabilities().name.clone();
        let view = ring.view(Some(self.buffers.device_head.ptr), self.config.timeout, rank).map_err(proxy_err)?;
        let kring = view;
        let proxy = Proxy::spawn(engine).map_err(proxy_err)?;
        let stream = self.ctx.new_stream().call("cuStreamCreate")?;
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let started = self.ctx.new_event(timing).call("cuEventCreate")?;
        let finished = self.ctx.new_event(timing).call("cuEventCreate")?;
        tracing::debug!(rank, peer = self.peer, ?mode, transport = %transport_name, "proxy stream connected");
        Ok(ProxyStream {
            rank,
            peer: self.peer,
            ctx: self.ctx,
            info: self.info,
            config: self.config,
            capacity_chunks: self.capacity_chunks,
            path: self.path,
            mode,
            transport_name,
            stream,
            started,
            finished,
            ring,
            kring,
            proxy: Some(proxy),
            epoch: 0,
            in_flight: None,
            poisoned: None,
            buffers: self.buffers,
        })
    }
}

/// Connects two ranks prepared in this process (each GPU plays one node): exchanges their
/// address bytes and starts both proxies. Returns the streams in argument order.
///
/// Errors: as [`StreamRank::address`] and [`StreamRank::connect`].
pub fn connect_pair<T: Transport + Send + 'static>(a: StreamRank<T>, b: StreamRank<T>) -> Result<(ProxyStream, ProxyStream)> {
    let (addr_a, addr_b) = (a.address()?, b.address()?);
    let sa = a.connect(&addr_b)?;
    let sb = b.connect(&addr_a)?;
    Ok((sa, sb))
}

// ---- the stream -------------------------------------------------------------------------

/// What one epoch did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpochReport {
    /// The epoch (1, 2, ...).
    pub epoch: u32,
    /// Bytes sent (and received) this epoch.
    pub bytes: u64,
    /// Chunks per direction.
    pub chunks: u32,
    /// Time of the stream kernel on the GPU (CUDA events), milliseconds.
    pub kernel_ms: f64,
    /// Host time from the launch to the end of the wait, milliseconds.
    pub host_ms: f64,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    epoch: u32,
    shape: StreamShape,
    launched: Instant,
}

/// One connected rank: a GPU, its proxy thread and the stream kernel's memory. Epochs are
/// collective: both ranks must launch the same byte count for the same epoch (no host
/// barrier is needed between epochs). See the module documentation.
pub struct ProxyStream {
    rank: Rank,
    peer: Rank,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    config: StreamConfig,
    capacity_chunks: u32,
    path: DataPath,
    mode: CompletionMode,
    transport_name: String,
    stream: Arc<CudaStream>,
    started: CudaEvent,
    finished: CudaEvent,
    ring: Ring,
    kring: RingView,
    proxy: Option<Proxy>,
    epoch: u32,
    in_flight: Option<InFlight>,
    poisoned: Option<String>,
    buffers: Buffers,
}

impl std::fmt::Debug for ProxyStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyStream")
            .field("rank", &self.rank)
            .field("peer", &self.peer)
            .field("device", &self.info.ordinal)
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("transport", &self.transport_name)
            .field("epoch", &self.epoch)
            .finish()
    }
}

impl ProxyStream {
    /// This rank.
    pub fn rank(&self) -> Rank {
        self.rank
    }
    /// The peer rank.
    pub fn peer(&self) -> Rank {
        self.peer
    }
    /// Host-staged or direct.
    pub fn path(&self) -> DataPath {
        self.path
    }
    /// The completion adaptor the proxy uses.
    pub fn completion_mode(&self) -> CompletionMode {
        self.mode
    }
    /// The transport's name (backend and provider).
    pub fn transport_name(&self) -> &str {
        &self.transport_name
    }
    /// The last epoch launched (0 before the first).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }
    /// Largest bytes per epoch.
    pub fn capacity_bytes(&self) -> u64 {
        self.config.capacity_bytes
    }
    /// The stream's settings.
    pub fn config(&self) -> &StreamConfig {
        &self.config
    }
    /// The proxy's counters so far.
    pub fn proxy_stats(&self) -> ProxyStats {
        self.proxy.as_ref().map(Proxy::stats).unwrap_or_default()
    }

    fn check_usable(&self) -> Result<()> {
        if let Some(first) = &self.poisoned {
            return Err(Error::Poisoned { rank: self.rank, first: first.clone() });
        }
        if let Some(p) = &self.proxy {
            p.check().map_err(|source| Error::Proxy { rank: self.rank, source })?;
        }
        Ok(())
    }

    fn poison(&mut self, e: &Error) {
        self.poisoned.get_or_insert_with(|| e.to_string());
    }

    fn shape(&self, bytes: u64) -> StreamShape {
        StreamShape {
            bytes,
            chunk_bytes: self.config.chunk_bytes,
            capacity_chunks: self.capacity_chunks,
            send_ctas: self.config.send_ctas,
            recv_ctas: self.config.recv_ctas,
            staging_slots: self.config.staging_slots,
            sm_count: self.info.sm_count,
        }
    }

    /// Enqueues epoch `epoch() + 1` of `bytes` per direction (a multiple of 16, at most
    /// the capacity): the pattern fill of `src`, then the stream kernel. Returns the
    /// epoch. The peer must launch the same bytes for the same epoch.
    ///
    /// Errors: an argument out of range (named); an epoch already in flight; the proxy's
    /// first error; [`Error::Poisoned`] after an earlier failure.
    pub fn launch(&mut self, bytes: u64) -> Result<u32> {
        self.check_usable()?;
        if let Some(f) = &self.in_flight {
            return Err(invalid("launch", format!("epoch {} is still in flight; call wait() first", f.epoch)));
        }
        let shape = self.shape(bytes);
        shape.validate()?;
        let epoch = self.epoch.checked_add(1).ok_or_else(|| invalid("epoch", "2^32 - 1 epochs ran; create a new stream"))?;
        let b = &self.buffers;
        let p = ProxyStreamParams {
            ring: self.kring,
            src: b.src.ptr,
            staging: b.staging.as_ref().map_or(0, |s| s.device),
            landing: b.landing.device_ptr(),
            arrivals: b.arrivals.device,
            control: b.control.ptr,
            result: b.result.ptr,
            status: b.status.device,
            bytes,
            seed: self.config.seed,
            timeout_ns: u64::try_from(self.config.timeout.as_nanos()).unwrap_or(u64::MAX),
            chunk_bytes: self.config.chunk_bytes,
            chunks: shape.chunks(),
            credit_flag: self.capacity_chunks,
            rank: self.rank,
            peer: self.peer,
            epoch,
            send_ctas: self.config.send_ctas,
            recv_ctas: self.config.recv_ctas,
            staging_slots: self.config.staging_slots,
            direct: u32::from(self.path == DataPath::Direct),
        };
        self.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let cu = self.stream.cu_stream();
        let rt = kdriver::Runtime::global();
        // SAFETY: every address in `p` belongs to `self.buffers` or the ring, which live
        // until the kernel has completed (`wait`, or the bounded wait in `Drop`); the
        // result words are zeroed (and first_bad set to ~0) before the kernel, in order.
        let enqueued = unsafe {
            sys::cuMemsetD8Async(b.result.ptr, 0, std::mem::size_of::<ProxyStreamResult>(), cu)
                .result()
                .call("cuMemsetD8Async")
                .and_then(|()| sys::cuMemsetD32Async(b.result.ptr + 8, u32::MAX, 2, cu).result().call("cuMemsetD32Async"))
                .and_then(|()| Ok(kstream::launch_fill(rt, &self.stream, &shape, &p)?))
                .and_then(|()| self.started.record(&self.stream).call("cuEventRecord"))
                .and_then(|()| Ok(kstream::launch(rt, &self.stream, &shape, &p)?))
                .and_then(|()| self.finished.record(&self.stream).call("cuEventRecord"))
        };
        if let Err(e) = enqueued {
            self.poison(&e);
            return Err(e);
        }
        self.epoch = epoch;
        self.in_flight = Some(InFlight { epoch, shape, launched: Instant::now() });
        Ok(epoch)
    }

    fn host_wait_limit(&self) -> Duration {
        self.config.timeout.saturating_mul(2).saturating_add(Duration::from_secs(5))
    }

    /// Waits until the stream's work on this rank's GPU is done, bounded by `limit`.
    fn wait_stream(&self, limit: Duration) -> std::result::Result<(), (Duration, Option<cudarc::driver::DriverError>)> {
        let start = Instant::now();
        if self.ctx.bind_to_thread().is_err() {
            return Err((Duration::ZERO, None));
        }
        loop {
            // SAFETY: live stream.
            match unsafe { sys::cuStreamQuery(self.stream.cu_stream()) } {
                sys::CUresult::CUDA_SUCCESS => return Ok(()),
                sys::CUresult::CUDA_ERROR_NOT_READY => {
                    if start.elapsed() > limit {
                        return Err((start.elapsed(), None));
                    }
                    std::thread::sleep(Duration::from_micros(20));
                }
                e => return Err((start.elapsed(), Some(cudarc::driver::DriverError(e)))),
            }
        }
    }

    fn read_status(&self) -> ProxyStreamStatus {
        // SAFETY: the status allocation holds one ProxyStreamStatus; the kernel has ended
        // (or wrote it with system-scope fences before the code).
        unsafe { self.buffers.status.host.cast::<ProxyStreamStatus>().read_volatile() }
    }

    /// Waits for the epoch in flight, bounded by `2 * timeout + 5 s`, and checks it:
    /// a device-side wait that gave up ([`Error::StreamTimeout`] naming the peer, chunk,
    /// expected and observed epochs), the proxy's error ([`Error::Proxy`]), and the
    /// verification of every received byte ([`Error::StreamMismatch`]).
    ///
    /// Errors: those, [`Error::HostTimeout`] when the kernel does not end in time (the
    /// stream is then unusable), driver errors. After a timeout the stream refuses further
    /// epochs ([`Error::Poisoned`]).
    pub fn wait(&mut self) -> Result<EpochReport> {
        let f = self.in_flight.ok_or_else(|| invalid("wait", "no epoch in flight; call launch() first"))?;
        match self.wait_stream(self.host_wait_limit()) {
            Ok(()) => {}
            Err((waited, driver)) => {
                let e = match driver {
                    Some(source) => Error::Driver { call: "cuStreamQuery", source },
                    None => Error::HostTimeout {
                        rank: self.rank,
                        what: format!(
                            "proxy stream epoch {} ({} bytes to/from rank {}; ring tail {} completed {}, proxy {:?})",
                            f.epoch,
                            f.shape.bytes,
                            self.peer,
                            self.ring.tail(),
                            self.ring.completed(),
                            self.proxy.as_ref().map(|p| p.check().map(|s| s.completed))
                        ),
                        waited,
                    },
                };
                // The kernel may still run: keep `in_flight` so drop waits for it again.
                self.poison(&e);
                return Err(e);
            }
        }
        self.in_flight = None;
        let host_ms = f.launched.elapsed().as_secs_f64() * 1e3;
        let status = self.read_status();
        if status.code != 0 {
            let proxy_error = self.proxy.as_ref().and_then(|p| p.check().err());
            let e = match (StreamWait::from_code(status.code), proxy_error) {
                (Some(StreamWait::ProxyAborted), Some(source)) | (Some(StreamWait::RingPush), Some(source)) => {
                    Error::Proxy { rank: self.rank, source }
                }
                (op, _) => Error::StreamTimeout {
                    rank: status.rank,
                    peer: status.peer,
                    what: op.map_or("an unknown wait", StreamWait::describe),
                    chunk: if status.chunk == u32::MAX {
                        "-".into()
                    } else if status.chunk == self.capacity_chunks {
                        format!("{} = the credit flag", status.chunk)
                    } else {
                        status.chunk.to_string()
                    },
                    epoch: status.epoch,
                    expected: status.expected,
                    observed: status.observed,
                    cta: status.cta,
                    waited: Duration::from_nanos(status.waited_ns),
                },
            };
            self.poison(&e);
            return Err(e);
        }
        self.check_usable()?;
        let mut result = ProxyStreamResult::default();
        self.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        // SAFETY: `result` is a ProxyStreamResult; the kernel that wrote it has completed.
        unsafe {
            sys::cuMemcpyDtoH_v2(
                (&mut result as *mut ProxyStreamResult).cast(),
                self.buffers.result.ptr,
                std::mem::size_of::<ProxyStreamResult>(),
            )
        }
        .result()
        .call("cuMemcpyDtoH")?;
        let chunks = f.shape.chunks();
        if result.mismatched_bytes != 0 || result.chunks_verified != u64::from(chunks) || result.ahead != 0 {
            return Err(Error::StreamMismatch {
                rank: self.rank,
                peer: self.peer,
                epoch: f.epoch,
                mismatched_bytes: result.mismatched_bytes,
                first_bad: result.first_bad,
                chunks_verified: result.chunks_verified,
                chunks,
                ahead: result.ahead,
            });
        }
        let kernel_ms = f64::from(self.started.elapsed_ms(&self.finished).call("cuEventElapsedTime")?);
        Ok(EpochReport { epoch: f.epoch, bytes: f.shape.bytes, chunks, kernel_ms, host_ms })
    }

    /// [`ProxyStream::launch`] then [`ProxyStream::wait`].
    pub fn run_epoch(&mut self, bytes: u64) -> Result<EpochReport> {
        self.launch(bytes)?;
        self.wait()
    }

    /// Copies `len` bytes of the landing region at `offset` (what the peer sent in the last
    /// epoch) to the host, for checks there.
    ///
    /// Errors: an epoch in flight, or a range outside the capacity.
    pub fn landed(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if let Some(f) = &self.in_flight {
            return Err(invalid("landed", format!("epoch {} is still in flight", f.epoch)));
        }
        if offset.saturating_add(len as u64) > self.config.capacity_bytes {
            return Err(invalid("offset", format!("{offset} + {len} exceeds the capacity {}", self.config.capacity_bytes)));
        }
        let mut out = vec![0u8; len];
        match &self.buffers.landing {
            Landing::Host(m) => m
                .buffer
                .read(offset as usize, &mut out)
                .map_err(|source| Error::Transport { rank: self.rank, step: "landing read", source })?,
            Landing::Device(d) => {
                self.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
                // SAFETY: the range is inside the allocation (checked above); no kernel runs.
                unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), d.ptr + offset, len) }.result().call("cuMemcpyDtoH")?;
            }
        }
        Ok(out)
    }

    /// Waits for an epoch in flight (bounded), then stops the proxy after it drained.
    ///
    /// Errors: the proxy's first error or what it could not drain; a kernel that did not
    /// end in time.
    pub fn shutdown(mut self) -> Result<ShutdownReport> {
        if self.in_flight.is_some() {
            self.wait()?;
        }
        let rank = self.rank;
        match self.proxy.take() {
            Some(p) => p.shutdown().map_err(|source| Error::Proxy { rank, source }),
            None => Err(invalid("shutdown", "the proxy was already stopped")),
        }
    }
}

impl Drop for ProxyStream {
    fn drop(&mut self) {
        // The kernel reads and writes this rank's buffers and ring: let it end (bounded; its
        // own waits are bounded too) before the proxy stops and the memory is freed.
        if self.in_flight.is_some() {
            if let Some(p) = &self.proxy {
                // A kernel still waiting for a peer that will never come ends at once.
                if self.wait_stream(Duration::from_millis(1)).is_err() {
                    p.abort();
                }
            }
            if let Err((waited, _)) = self.wait_stream(self.host_wait_limit()) {
                tracing::warn!(rank = self.rank, ?waited, "proxy stream dropped while its kernel still runs");
            }
        }
        if let Some(p) = self.proxy.take() {
            if let Err(e) = p.shutdown() {
                tracing::debug!(rank = self.rank, error = %e, "proxy stream: proxy shutdown");
            }
        }
        let _ = self.ctx.bind_to_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_bytes_round_trip_and_name_errors() {
        let a = PeerAddress {
            rank: 3,
            chunk_bytes: 1 << 20,
            capacity_chunks: 64,
            endpoint: vec![1, 2, 3],
            landing_key: vec![4; 48],
            arrivals_key: vec![5; 48],
            credit_key: vec![],
        };
        let bytes = a.to_bytes();
        assert_eq!(PeerAddress::from_bytes(&bytes).unwrap(), a);
        let e = PeerAddress::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err().to_string();
        assert!(e.contains("`peer_address`") && e.contains("credit key"), "{e}");
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(PeerAddress::from_bytes(&bad).unwrap_err().to_string().contains("magic"));
        let mut long = bytes;
        long.push(0);
        assert!(PeerAddress::from_bytes(&long).unwrap_err().to_string().contains("trailing"));
    }

    #[test]
    fn config_rules_name_the_field() {
        assert_eq!(StreamConfig::default().capacity_chunks().unwrap(), 64);
        let e = StreamConfig { chunk_bytes: 100, ..Default::default() }.capacity_chunks().unwrap_err().to_string();
        assert!(e.contains("`chunk_bytes`"), "{e}");
        let e = StreamConfig { capacity_bytes: 1 << 40, chunk_bytes: 16, ..Default::default() }.capacity_chunks().unwrap_err().to_string();
        assert!(e.contains("2^20"), "{e}");
        let e = StreamConfig { ring_slots: 1000, ..Default::default() }.validate(132).unwrap_err().to_string();
        assert!(e.contains("`ring_slots`"), "{e}");
        let e = StreamConfig { send_ctas: 100, recv_ctas: 100, ..Default::default() }.validate(132).unwrap_err().to_string();
        assert!(e.contains("132 SMs"), "{e}");
    }

    #[test]
    fn pattern_depends_on_every_input() {
        let w = pattern_word(1, 1, 0, 0);
        assert_ne!(w, pattern_word(2, 1, 0, 0));
        assert_ne!(w, pattern_word(1, 2, 0, 0));
        assert_ne!(w, pattern_word(1, 1, 1, 0));
        assert_ne!(w, pattern_word(1, 1, 0, 1));
        assert_eq!(w, pattern_word(1, 1, 0, 0));
    }

    #[test]
    fn path_follows_the_device_memory_capability() {
        let mut caps = Capabilities {
            ordering: mkernel_transport::Ordering::Ordered,
            immediate_data: true,
            device_memory: false,
            max_batch: 8,
            max_in_flight: 64,
            max_write_bytes: 1 << 30,
            name: "test".into(),
        };
        assert_eq!(DataPath::select(&caps), DataPath::HostStaged);
        caps.device_memory = true;
        assert_eq!(DataPath::select(&caps), DataPath::Direct);
    }
}
