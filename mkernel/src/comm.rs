//! `Communicator`: the ranks of one node, their symmetric workspaces and the
//! host-visible status the fused kernels report failures through.
//!
//! Two ways to build one:
//! - [`Communicator::local_group`]: one process drives every listed GPU (a rank per GPU);
//!   peer pointers are plain `cuMemAlloc` addresses made reachable with
//!   `cuCtxEnablePeerAccess`.
//! - [`Communicator::from_env`]: one process per GPU under any launcher that sets
//!   `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR`, `MASTER_PORT`;
//!   a TCP rendezvous (mkernel-topology) exchanges, in two steps (`SetupStep`), what the
//!   ranks must agree on, then CUDA IPC handles of each rank's workspace (or why a rank
//!   has none), which peers open with `cuIpcOpenMemHandle`.
//!
//! Workspaces come from `cuMemAlloc`, never from the stream-ordered pool allocator:
//! peers cannot touch pool memory without pool access rights. No NVLink multicast.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaStream};
use mkernel_kernels::driver::{self as kdriver, DeviceInfo};
use mkernel_kernels::gemm_allreduce::{RankBuffers, WorkspaceLayout};
use mkernel_kernels::params::{KernelStatus, WaitOp, MAX_RANKS};
use mkernel_topology::{Bootstrap, LaunchEnv};

use crate::error::{invalid, DriverContext, Error, Result};
use crate::host_mapped::HostMapped;

/// Settings of a communicator.
#[derive(Debug, Clone)]
pub struct CommConfig {
    /// Bound on every device-side wait for a peer; 1 ms to 1 day,
    /// default 30 s. The host's wait in [`Communicator::synchronize`] is bounded by
    /// `(3 x world + 2) x timeout + 5 s` (a call may wait on several peers in turn: 245 s
    /// for 2 ranks at the default). May differ between the ranks of
    /// [`Communicator::from_env`]: each rank bounds its own waits with its own (a rank with a
    /// shorter one just reports a late peer sooner).
    pub timeout: Duration,
    /// Largest M * N output a fused call may produce (sizes the symmetric workspace, per
    /// rank: 2 bytes per element plus flags, plus the split last wave's fp32 slots, up to
    /// 32 MiB or 16 bytes per element if less, and 16 KiB of split counts:
    /// `WorkspaceLayout::bytes`); 1..=2^37 elements, default 2^27 (16384 x 8192: 320 MiB
    /// per rank with 2 ranks). A call with a larger M * N is refused. The all-gather + GEMM
    /// keeps its gathered A (M x K) there, and the MoE dispatch its receive buffer
    /// (recv_capacity x K, with the token counts:
    /// `mkernel::moe_workspace_elems_needed`), which must fit too. Must be equal on every
    /// rank: it sets the layout of the symmetric workspace, which every rank reads in its
    /// peers' workspaces at the same offsets ([`Communicator::from_env`] refuses ranks that
    /// differ; a [`Communicator::local_group`] shares one config).
    pub max_output_elems: u64,
    /// Bound on each bootstrap step in [`Communicator::from_env`]; 1 ms to 1 day,
    /// default 60 s.
    pub bootstrap_timeout: Duration,
    /// TCP port of the rendezvous on `MASTER_ADDR`; `None` uses `MASTER_PORT + 1`,
    /// because torchrun's own store already listens on `MASTER_PORT`.
    pub bootstrap_port: Option<u16>,
}

/// Bounds of [`CommConfig::timeout`] and [`CommConfig::bootstrap_timeout`].
pub const TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> = Duration::from_millis(1)..=Duration::from_secs(86_400);

impl CommConfig {
    /// Checks every field, naming the one out of range.
    pub fn validate(&self) -> Result<()> {
        for (arg, t) in [("timeout", self.timeout), ("bootstrap_timeout", self.bootstrap_timeout)] {
            if !TIMEOUT_RANGE.contains(&t) {
                return Err(invalid(arg, format!("must be between 1 ms and 1 day, got {t:?}")));
            }
        }
        if self.bootstrap_port == Some(0) {
            return Err(invalid("bootstrap_port", "must be a TCP port in 1..=65535, got 0"));
        }
        if self.max_output_elems == 0 || self.max_output_elems > mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS {
            return Err(invalid("max_output_elems", format!("must be in 1..=2^37, got {}", self.max_output_elems)));
        }
        Ok(())
    }
}

impl Default for CommConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_output_elems: 16384 * 8192,
            bootstrap_timeout: Duration::from_secs(60),
            bootstrap_port: None,
        }
    }
}

/// A zeroed `cuMemAlloc` allocation (not pool memory: peers may map it), freed on drop.
pub(crate) struct DeviceMem {
    ctx: Arc<CudaContext>,
    /// Device address.
    pub(crate) ptr: u64,
}

impl DeviceMem {
    /// `bytes` (at least 16) zeroed bytes on `ctx`'s device; `what` names the allocation
    /// in the [`Error::Allocation`] a failure returns.
    pub(crate) fn zeroed(ctx: &Arc<CudaContext>, bytes: u64, what: impl FnOnce() -> String) -> Result<Self> {
        let len = usize::try_from(bytes.max(16)).map_err(|_| invalid("bytes", "does not fit this machine's address space"))?;
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let mut ptr = 0;
        // SAFETY: out-pointer to a local; the context is current.
        unsafe { sys::cuMemAlloc_v2(&mut ptr, len) }
            .result()
            .map_err(|source| Error::Allocation { what: what(), bytes: len as u64, source })?;
        let mem = Self { ctx: ctx.clone(), ptr };
        // SAFETY: `bytes` bytes at `ptr` were just allocated.
        unsafe { sys::cuMemsetD8_v2(ptr, 0, len) }.result().call("cuMemsetD8")?;
        Ok(mem)
    }
}

/// What a failed symmetric-workspace allocation names: the rank, its GPU, and the config
/// that sized it (the workspace grows with `CommConfig::max_output_elems` and the world size).
fn workspace_what(rank: u32, gpu: usize, config: &CommConfig, world: u32) -> String {
    format!(
        "rank {rank}'s symmetric workspace on GPU {gpu} (CommConfig::max_output_elems = {}, {world} ranks; \
         set max_output_elems to the largest M x N this communicator's calls take)",
        config.max_output_elems
    )
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemAlloc in `zeroed`, freed once.
        let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// A peer workspace opened from a CUDA IPC handle, closed on drop.
struct IpcMapping {
    ctx: Arc<CudaContext>,
    ptr: u64,
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: opened by cuIpcOpenMemHandle, closed once.
        let _ = unsafe { sys::cuIpcCloseMemHandle(self.ptr) };
    }
}

/// Pinned host memory mapped into the device, where a kernel's first timed-out wait
/// records what it waited for.
type StatusMem = HostMapped<KernelStatus>;

/// The number of the `n`-th device barrier (n from 0): 1, 2, ..., u32::MAX, then 1 again
/// (never 0: the flags start at 0; the kernel compares with wrap-around).
fn barrier_epoch(n: u64) -> u32 {
    (n % u32::MAX as u64) as u32 + 1
}

/// One rank of a group of GPUs in one node. See the module documentation.
pub struct Communicator {
    rank: u32,
    world: u32,
    /// CTAs (SMs) of this rank's persistent kernels: the GPU's SM count, or its share
    /// when several ranks of a local group use one GPU.
    grid: u32,
    /// Whether some GPU of the group holds more than one rank (the same on every rank,
    /// so that every rank plans the same path: see `PlanContext::gpu_shared`).
    gpu_shared: bool,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    layout: WorkspaceLayout,
    peers: [u64; MAX_RANKS],
    config: CommConfig,
    // Field order is drop order: mappings of peers close before our memory is freed.
    _mappings: Vec<IpcMapping>,
    _workspace: DeviceMem,
    status: StatusMem,
    bootstrap: Option<Bootstrap>,
    poisoned: Mutex<Option<String>>,
    /// Recorded after every fused call (re-recorded, never re-created), with the stream
    /// of the last call: a call on another stream waits for it (calls share the
    /// workspace and the epoch), and drop waits for it.
    launch_done: CudaEvent,
    last_stream: Mutex<Option<usize>>,
    /// Some call was captured into a CUDA graph: its replays record no event.
    captured: std::sync::atomic::AtomicBool,
    /// Device barriers enqueued so far ([`Communicator::device_barrier`]).
    barriers: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.rank)
            .field("world", &self.world)
            .field("device", &self.info.ordinal)
            .field("sm_count", &self.info.sm_count)
            .finish()
    }
}

fn check_world(world: usize) -> Result<()> {
    if world == 0 || world > MAX_RANKS {
        return Err(invalid("world_size", format!("must be 1..={MAX_RANKS} ranks in one node, got {world}")));
    }
    Ok(())
}

/// What each rank contributes to the first step of [`Communicator::from_launch_env`]'s
/// exchange: its GPU's UUID, its SM count, and its [`CommConfig::max_output_elems`] (which
/// every rank must share: it fixes the workspace layout, and every rank reads its peers'
/// workspaces at that layout's offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RankInfo {
    uuid: [u8; 16],
    sm_count: u32,
    max_output_elems: u64,
}

impl RankInfo {
    /// UUID (16), SM count (u32 LE), max_output_elems (u64 LE).
    const BYTES: usize = 16 + 4 + 8;

    /// The payload a rank contributes to [`SetupStep::Describe`].
    fn encode(&self) -> Vec<u8> {
        let mut blob = Vec::with_capacity(Self::BYTES);
        blob.extend_from_slice(&self.uuid);
        blob.extend(self.sm_count.to_le_bytes());
        blob.extend(self.max_output_elems.to_le_bytes());
        blob
    }

    /// The info of exactly [`Self::BYTES`] bytes; None for another length.
    fn decode(blob: &[u8]) -> Option<Self> {
        if blob.len() != Self::BYTES {
            return None;
        }
        Some(Self {
            uuid: blob[..16].try_into().ok()?,
            sm_count: u32::from_le_bytes(blob[16..20].try_into().ok()?),
            max_output_elems: u64::from_le_bytes(blob[20..28].try_into().ok()?),
        })
    }
}

/// The two steps of [`Communicator::from_launch_env`]'s exchange, each one bootstrap
/// all-gather of a tagged contribution per rank ([`encode_step`]):
///
/// ```text
/// step 1, Describe:  every rank --[READY, RankInfo (UUID, SM count, max_output_elems)]--> every rank
///                    every rank checks agreement on the same blobs (all refuse alike),
///                    then checks peer access and allocates + exports its workspace
/// step 2, Workspace: every rank --[READY, CUDA IPC handle]           --> every rank
///                    a rank that failed --[FAILED, its error's message]--> every rank
///                    the failed rank returns its own error, every other rank an
///                    Error::PeerSetup naming it; else every rank opens its peers' handles
/// ```
///
/// A rank that fails between the steps still contributes (its failure), so every peer
/// returns at once knowing which rank failed and why (rather than only that the rank
/// closed its connection, or, were its process to linger, after `bootstrap_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetupStep {
    Describe,
    Workspace,
}

impl SetupStep {
    /// 1 or 2, as errors number the steps.
    fn number(self) -> u32 {
        match self {
            Self::Describe => 1,
            Self::Workspace => 2,
        }
    }

    /// What a rank that failed the step could not do (completes "rank q could not ...").
    fn what(self) -> &'static str {
        match self {
            Self::Describe => "describe its GPU (UUID, SM count) to its peers",
            Self::Workspace => "set up its symmetric workspace",
        }
    }
}

/// First byte of a rank's contribution to a [`SetupStep`]: the step's payload follows.
const STEP_READY: u8 = 1;
/// First byte of a rank's contribution to a [`SetupStep`]: the rank failed the step; its
/// error's message follows (UTF-8, at most [`MAX_FAILURE_BYTES`]).
const STEP_FAILED: u8 = 2;
/// Failure messages longer than this are cut (at a character boundary).
const MAX_FAILURE_BYTES: usize = 2048;

/// A rank's contribution to a [`SetupStep`]: [`STEP_READY`] and the payload, or
/// [`STEP_FAILED`] and the failure's message, cut to [`MAX_FAILURE_BYTES`].
fn encode_step(own: std::result::Result<&[u8], &str>) -> Vec<u8> {
    match own {
        Ok(payload) => [&[STEP_READY], payload].concat(),
        Err(why) => {
            let mut cut = why.len().min(MAX_FAILURE_BYTES);
            while !why.is_char_boundary(cut) {
                cut -= 1;
            }
            [&[STEP_FAILED], &why.as_bytes()[..cut]].concat()
        }
    }
}

/// Every rank's payload of the all-gathered contributions to `step` (blob q is rank q's),
/// as seen by rank `rank`. Every rank runs it on the same blobs, so every rank refuses
/// alike.
///
/// Errors: a blob without a known tag, or a failure message over [`MAX_FAILURE_BYTES`]
/// (`bootstrap`, naming the rank: another mkernel build); a rank that failed the step
/// ([`Error::PeerSetup`], naming the first such rank and its message, and the others).
fn decode_step(blobs: &[Vec<u8>], step: SetupStep, rank: usize) -> Result<Vec<&[u8]>> {
    let mut payloads = Vec::with_capacity(blobs.len());
    let mut failed = Vec::new();
    for (q, b) in blobs.iter().enumerate() {
        let n = step.number();
        match b.split_first() {
            Some((&STEP_READY, payload)) => payloads.push(payload),
            Some((&STEP_FAILED, why)) if why.len() <= MAX_FAILURE_BYTES => failed.push((q, String::from_utf8_lossy(why))),
            Some((&STEP_FAILED, why)) => {
                return Err(invalid(
                    "bootstrap",
                    format!(
                        "rank {q}'s failure report in step {n} of 2 of the exchange is {} bytes, above {MAX_FAILURE_BYTES}; \
                         do all ranks run the same mkernel build?",
                        why.len()
                    ),
                ))
            }
            tag => {
                let tag = tag.map_or("nothing".to_string(), |(t, _)| format!("tag {t}"));
                return Err(invalid(
                    "bootstrap",
                    format!(
                        "rank {q} sent {} bytes starting with {tag} in step {n} of 2 of the exchange, expected tag \
                         {STEP_READY} (ready) or {STEP_FAILED} (failed) first; do all ranks run the same mkernel build?",
                        b.len()
                    ),
                ));
            }
        }
    }
    match failed.split_first() {
        None => Ok(payloads),
        Some(((peer, why), others)) => Err(Error::PeerSetup {
            rank: rank as u32,
            peer: *peer as u32,
            step: step.what(),
            reason: why.to_string(),
            others: others.iter().map(|(q, _)| *q as u32).collect(),
        }),
    }
}

/// One [`SetupStep`] on `boot`: contributes `payload(&value)` when `own` is Ok, else the
/// error's message, and returns (value, every rank's payload). A failed rank returns its
/// own error once every rank has its report (whatever the all-gather returns); the others
/// return [`decode_step`]'s error naming it.
fn exchange_step<T>(
    boot: &Bootstrap,
    step: SetupStep,
    own: Result<T>,
    payload: impl FnOnce(&T) -> Vec<u8>,
) -> Result<(T, Vec<Vec<u8>>)> {
    match own {
        Err(e) => {
            // (the failure is the rank's error to report; a failed all-gather adds nothing)
            let _ = boot.all_gather(&encode_step(Err(&e.to_string())));
            Err(e)
        }
        Ok(value) => {
            let blobs = boot.all_gather(&encode_step(Ok(&payload(&value))))?;
            let payloads = decode_step(&blobs, step, boot.rank())?.into_iter().map(<[u8]>::to_vec).collect();
            Ok((value, payloads))
        }
    }
}

/// Every rank's [`RankInfo`] from the payloads of [`SetupStep::Describe`] (payload q is
/// rank q's), checked for what every rank must agree on. Every rank runs it on the same
/// payloads, so every rank refuses alike (before any rank allocates its workspace).
///
/// Errors: a payload of another length (`bootstrap`, naming the rank and the lengths: a
/// rank running another mkernel build); `max_output_elems` not equal on every rank (naming
/// every rank's value); two ranks on one GPU (`LOCAL_RANK`, naming both).
fn parse_rank_infos(payloads: &[Vec<u8>]) -> Result<Vec<RankInfo>> {
    let infos = payloads
        .iter()
        .enumerate()
        .map(|(q, b)| {
            RankInfo::decode(b).ok_or_else(|| {
                invalid(
                    "bootstrap",
                    format!(
                        "rank {q} sent {} bytes in step 1 of 2 of the exchange, expected {} (GPU UUID 16, SM count 4, \
                         max_output_elems 8); do all ranks run the same mkernel build?",
                        b.len(),
                        RankInfo::BYTES
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if infos.windows(2).any(|w| w[0].max_output_elems != w[1].max_output_elems) {
        let each: Vec<String> = infos.iter().enumerate().map(|(q, p)| format!("rank {q} has {}", p.max_output_elems)).collect();
        return Err(invalid(
            "max_output_elems",
            format!(
                "must be equal on every rank (it sets the symmetric workspace's layout, which every rank reads in its \
                 peers' workspaces): {}",
                each.join(", ")
            ),
        ));
    }
    for (q, p) in infos.iter().enumerate() {
        if let Some(first) = infos[..q].iter().position(|o| o.uuid == p.uuid) {
            let uuid: String = p.uuid.iter().map(|b| format!("{b:02x}")).collect();
            return Err(invalid(
                "LOCAL_RANK",
                format!(
                    "ranks {first} and {q} use the same GPU (UUID {uuid}); one process per GPU (check LOCAL_RANK and \
                     CUDA_VISIBLE_DEVICES)"
                ),
            ));
        }
    }
    Ok(infos)
}

/// Bytes of a CUDA IPC memory handle.
const HANDLE_BYTES: usize = sys::CU_IPC_HANDLE_SIZE as usize;

/// Every rank's CUDA IPC handle from the payloads of [`SetupStep::Workspace`] (payload q
/// is rank q's).
///
/// Errors: a payload of another length than [`HANDLE_BYTES`] (`bootstrap`, naming the
/// rank and the lengths).
fn parse_handles(payloads: &[Vec<u8>]) -> Result<Vec<sys::CUipcMemHandle>> {
    payloads
        .iter()
        .enumerate()
        .map(|(q, b)| {
            if b.len() != HANDLE_BYTES {
                return Err(invalid(
                    "bootstrap",
                    format!(
                        "rank {q} sent {} bytes in step 2 of 2 of the exchange, expected a {HANDLE_BYTES}-byte CUDA IPC \
                         handle; do all ranks run the same mkernel build?",
                        b.len()
                    ),
                ));
            }
            let mut h = sys::CUipcMemHandle { reserved: [0; HANDLE_BYTES] };
            for (d, s) in h.reserved.iter_mut().zip(b) {
                *d = *s as std::ffi::c_char;
            }
            Ok(h)
        })
        .collect()
}

/// The bytes of `handle`, as [`parse_handles`] reads them.
fn handle_bytes(handle: &sys::CUipcMemHandle) -> Vec<u8> {
    handle.reserved.iter().map(|&c| c as u8).collect()
}

/// Opens GPU `ordinal` (primary context) and checks that it is a Hopper GPU.
pub(crate) fn open_device(ordinal: usize) -> Result<(Arc<CudaContext>, DeviceInfo)> {
    let count = kdriver::device_count()?;
    if ordinal >= count {
        return Err(invalid("device", format!("GPU {ordinal} does not exist ({count} visible)")));
    }
    let ctx = CudaContext::new(ordinal).call("cuDevicePrimaryCtxRetain")?;
    let info = kdriver::device_info(&ctx)?;
    kdriver::require_hopper(&info)?;
    Ok((ctx, info))
}

fn device_can_access_peer(from: sys::CUdevice, to: sys::CUdevice) -> Result<bool> {
    let mut ok = 0;
    // SAFETY: out-pointer to a local; both handles come from cuDeviceGet.
    unsafe { sys::cuDeviceCanAccessPeer(&mut ok, from, to) }.result().call("cuDeviceCanAccessPeer")?;
    Ok(ok != 0)
}

fn can_access_peer(from: &CudaContext, to: &CudaContext) -> Result<bool> {
    device_can_access_peer(from.cu_device(), to.cu_device())
}

/// (ordinal, handle, UUID bytes) of every visible GPU, without creating contexts.
fn visible_devices() -> Result<Vec<(usize, sys::CUdevice, Vec<u8>)>> {
    let n = kdriver::device_count()?;
    let mut out = Vec::with_capacity(n);
    for ord in 0..n {
        let mut dev = 0;
        let mut uuid = std::mem::MaybeUninit::<sys::CUuuid>::zeroed();
        // SAFETY: out-pointers to locals; `ord` < device count.
        unsafe {
            sys::cuDeviceGet(&mut dev, ord as i32).result().call("cuDeviceGet")?;
            sys::cuDeviceGetUuid_v2(uuid.as_mut_ptr(), dev).result().call("cuDeviceGetUuid")?;
        }
        // SAFETY: initialised by cuDeviceGetUuid.
        let uuid = unsafe { uuid.assume_init() };
        out.push((ord, dev, uuid.bytes.iter().map(|&c| c as u8).collect()));
    }
    Ok(out)
}

fn enable_peer_access(from: &CudaContext, to: &CudaContext) -> Result<()> {
    from.bind_to_thread().call("cuCtxSetCurrent")?;
    // SAFETY: both contexts are live primary contexts.
    match unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        e => Err(Error::Driver { call: "cuCtxEnablePeerAccess", source: cudarc::driver::DriverError(e) }),
    }
}

impl Communicator {
    /// One process, rank i on GPU `devices[i]`.
    ///
    /// A GPU may be listed several times (e.g. world size 4 on 2 GPUs, for testing the
    /// world sizes of larger machines): its ranks then split its SMs evenly, each
    /// persistent kernel sized to its share so that the ranks' kernels co-reside, and
    /// each rank must use its own stream. Performance in that mode means nothing.
    ///
    /// Errors: an empty or oversized list, a `config` field out of range
    /// ([`CommConfig::validate`], named), a missing or non-Hopper GPU, two GPUs without
    /// peer access ([`Error::NoPeerAccess`]), or a failed allocation of the symmetric
    /// workspace ([`Error::Allocation`], naming the rank, its GPU and `max_output_elems`).
    pub fn local_group(devices: &[usize], config: CommConfig) -> Result<Vec<Communicator>> {
        check_world(devices.len())?;
        // Argument errors first: they must not hide behind a missing driver or GPU.
        config.validate()?;
        let opened = devices.iter().map(|&d| open_device(d)).collect::<Result<Vec<_>>>()?;
        for (i, (ci, _)) in opened.iter().enumerate() {
            for (j, (cj, _)) in opened.iter().enumerate() {
                if devices[i] != devices[j] {
                    if !can_access_peer(ci, cj)? {
                        return Err(Error::NoPeerAccess { from: devices[i], to: devices[j] });
                    }
                    enable_peer_access(ci, cj)?;
                }
            }
        }
        let share = |d: usize| devices.iter().filter(|&&x| x == d).count() as u32;
        let gpu_shared = devices.iter().any(|&d| share(d) > 1);
        // Every rank must make the same per-call choices (tile shape, SM split), so all
        // use the smallest per-rank SM share of the group.
        let grid = opened.iter().zip(devices).map(|((_, info), &d)| info.sm_count / share(d)).min().unwrap_or(0);
        if grid < 2 {
            return Err(invalid("devices", format!("{} ranks on these GPUs leave fewer than 2 SMs per rank", devices.len())));
        }
        let layout = WorkspaceLayout::new(config.max_output_elems, devices.len() as u32)?;
        let workspaces = opened
            .iter()
            .zip(devices)
            .enumerate()
            .map(|(r, ((ctx, _), &d))| DeviceMem::zeroed(ctx, layout.bytes(), || workspace_what(r as u32, d, &config, devices.len() as u32)))
            .collect::<Result<Vec<_>>>()?;
        let mut peers = [0u64; MAX_RANKS];
        for (p, w) in peers.iter_mut().zip(&workspaces) {
            *p = w.ptr;
        }
        let world = devices.len() as u32;
        opened
            .into_iter()
            .zip(workspaces)
            .enumerate()
            .map(|(rank, ((ctx, info), workspace))| {
                let launch_done = ctx.new_event(None).call("cuEventCreate")?;
                Ok(Communicator {
                    rank: rank as u32,
                    world,
                    grid,
                    gpu_shared,
                    status: StatusMem::new(&ctx)?,
                    ctx,
                    info,
                    layout,
                    peers,
                    config: config.clone(),
                    _mappings: Vec::new(),
                    _workspace: workspace,
                    bootstrap: None,
                    poisoned: Mutex::new(None),
                    launch_done,
                    last_stream: Mutex::new(None),
                    captured: Default::default(),
                    barriers: Default::default(),
                })
            })
            .collect()
    }

    /// One process per GPU: reads the launcher's variables, uses GPU `LOCAL_RANK`,
    /// rendezvous over TCP, and maps every peer's workspace through CUDA IPC.
    ///
    /// The ranks exchange in two steps: first what they must agree on (checked on every
    /// rank alike, before anything is allocated), then their workspaces' IPC handles, or, from
    /// a rank that could not set its workspace up, its error, so that every rank returns at
    /// once with an error naming that rank and saying why.
    ///
    /// Errors: a `config` field out of range ([`CommConfig::validate`], named), launcher
    /// variables missing or inconsistent (named), more than one node (inter-node transport
    /// not available yet), a rank that does not show up within `bootstrap_timeout` (named),
    /// ranks whose `max_output_elems` differ (refused on every rank alike before any rank
    /// allocates, naming `max_output_elems` and every rank's value, e.g. "must be equal on
    /// every rank ...: rank 0 has 134217728, rank 1 has 1000"), two ranks on one GPU
    /// (`LOCAL_RANK`, naming both, on every rank), a rank whose exchange message has another
    /// length or tag (`bootstrap`: another mkernel build). A rank that cannot set up its
    /// workspace (GPUs without peer access, [`Error::NoPeerAccess`]; a failed allocation,
    /// [`Error::Allocation`], naming the rank, its GPU and `max_output_elems`; a driver
    /// error) returns that error, and every other rank at once [`Error::PeerSetup`] naming
    /// that rank and carrying its error's message (e.g. "rank 0: rank 1 could not set up its
    /// symmetric workspace, so no rank builds a communicator: allocating rank 1's symmetric
    /// workspace on GPU 1 (CommConfig::max_output_elems = ...) failed: ..."). Opening a
    /// peer's handle (`cuIpcOpenMemHandle`) fails on this rank alone; its peers then report
    /// that it closed its bootstrap connection.
    pub fn from_env(config: CommConfig) -> Result<Communicator> {
        let env = LaunchEnv::from_env()?;
        Self::from_launch_env(&env, config)
    }

    /// As [`Communicator::from_env`] with explicit launcher values.
    pub fn from_launch_env(env: &LaunchEnv, config: CommConfig) -> Result<Communicator> {
        check_world(env.world_size)?;
        config.validate()?;
        if env.num_nodes() != 1 {
            return Err(invalid(
                "WORLD_SIZE",
                format!(
                    "{} ranks over {} nodes: this build supports the ranks of one node (WORLD_SIZE == LOCAL_WORLD_SIZE)",
                    env.world_size,
                    env.num_nodes()
                ),
            ));
        }
        let (ctx, info) = open_device(env.local_rank)?;
        let port = match config.bootstrap_port {
            Some(p) => p,
            None => env.master_port.checked_add(1).ok_or_else(|| {
                invalid("MASTER_PORT", "is 65535; set CommConfig::bootstrap_port explicitly")
            })?,
        };
        let boot = Bootstrap::new(env.rank, env.world_size, &env.master_addr, port, config.bootstrap_timeout)?;
        // Step 1 of 2 (see `SetupStep`): what every rank must agree on, checked on the same
        // blobs by every rank, so every rank refuses alike and none has allocated yet.
        let own = ctx.uuid().call("cuDeviceGetUuid").map(|uuid| RankInfo {
            uuid: uuid.bytes.map(|c| c as u8),
            sm_count: info.sm_count,
            max_output_elems: config.max_output_elems,
        });
        let (_, payloads) = exchange_step(&boot, SetupStep::Describe, own, RankInfo::encode)?;
        let infos = parse_rank_infos(&payloads)?;
        // Step 2 of 2: this rank's workspace handle, or why it has none (every rank then
        // returns at once: the failed rank its own error, the others one naming it).
        let own = Self::export_workspace(&ctx, env, &config, &infos);
        let ((layout, workspace, _), payloads) = exchange_step(&boot, SetupStep::Workspace, own, |(_, _, h)| handle_bytes(h))?;
        let handles = parse_handles(&payloads)?;
        let mut peers = [0u64; MAX_RANKS];
        let mut mappings = Vec::new();
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        for (q, h) in handles.into_iter().enumerate() {
            if q == env.rank {
                peers[q] = workspace.ptr;
                continue;
            }
            let mut ptr = 0;
            // SAFETY: `h` is a handle another process exported for a cuMemAlloc buffer.
            unsafe {
                sys::cuIpcOpenMemHandle_v2(&mut ptr, h, sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32)
            }
            .result()
            .call("cuIpcOpenMemHandle")?;
            mappings.push(IpcMapping { ctx: ctx.clone(), ptr });
            peers[q] = ptr;
        }
        boot.barrier()?;
        let launch_done = ctx.new_event(None).call("cuEventCreate")?;
        // Same per-call choices on every rank: plan with the smallest SM count.
        let grid = infos.iter().map(|p| p.sm_count).min().unwrap_or(info.sm_count);
        Ok(Communicator {
            rank: env.rank as u32,
            world: env.world_size as u32,
            grid,
            // (ranks on one GPU are refused in step 1: LOCAL_RANK)
            gpu_shared: false,
            status: StatusMem::new(&ctx)?,
            ctx,
            info,
            layout,
            peers,
            config,
            _mappings: mappings,
            _workspace: workspace,
            bootstrap: Some(boot),
            poisoned: Mutex::new(None),
            launch_done,
            last_stream: Mutex::new(None),
            captured: Default::default(),
            barriers: Default::default(),
        })
    }

    /// The local part of [`Self::from_launch_env`] between its two exchange steps, whose
    /// failure every peer hears of: checks peer access to the peers' GPUs that this process
    /// sees (device handles only: no context is created on other ranks' GPUs), allocates
    /// this rank's symmetric workspace and exports its CUDA IPC handle.
    fn export_workspace(
        ctx: &Arc<CudaContext>,
        env: &LaunchEnv,
        config: &CommConfig,
        infos: &[RankInfo],
    ) -> Result<(WorkspaceLayout, DeviceMem, sys::CUipcMemHandle)> {
        let visible = visible_devices()?;
        for (q, peer) in infos.iter().enumerate() {
            if q == env.rank {
                continue;
            }
            for (ord, dev, uuid) in &visible {
                if uuid.as_slice() == peer.uuid.as_slice() && !device_can_access_peer(ctx.cu_device(), *dev)? {
                    return Err(Error::NoPeerAccess { from: env.local_rank, to: *ord });
                }
            }
        }
        let world = env.world_size as u32;
        let layout = WorkspaceLayout::new(config.max_output_elems, world)?;
        let workspace = DeviceMem::zeroed(ctx, layout.bytes(), || workspace_what(env.rank as u32, env.local_rank, config, world))?;
        let mut handle = std::mem::MaybeUninit::<sys::CUipcMemHandle>::zeroed();
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        // SAFETY: out-pointer; `workspace.ptr` is a cuMemAlloc base address.
        unsafe { sys::cuIpcGetMemHandle(handle.as_mut_ptr(), workspace.ptr) }.result().call("cuIpcGetMemHandle")?;
        // SAFETY: initialised by the call above.
        Ok((layout, workspace, unsafe { handle.assume_init() }))
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }
    /// Number of ranks.
    pub fn world_size(&self) -> u32 {
        self.world
    }
    /// The CUDA context of this rank's GPU.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// Facts about this rank's GPU.
    pub fn device_info(&self) -> DeviceInfo {
        self.info
    }
    /// CTAs (one per SM) of this rank's fused kernels: the smallest SM count (or share of
    /// a GPU's SMs) of the group, the same on every rank.
    pub fn grid(&self) -> u32 {
        self.grid
    }
    /// Whether some GPU of the group holds more than one rank (a local group listing a
    /// GPU twice); the same on every rank.
    pub fn gpu_shared(&self) -> bool {
        self.gpu_shared
    }
    /// The settings.
    pub fn config(&self) -> &CommConfig {
        &self.config
    }
    /// The rendezvous of a one-process-per-GPU communicator (for baselines).
    pub fn bootstrap(&self) -> Option<&Bootstrap> {
        self.bootstrap.as_ref()
    }

    pub(crate) fn rank_buffers(&self) -> RankBuffers {
        RankBuffers {
            rank: self.rank,
            world: self.world,
            workspace: self.peers,
            layout: self.layout,
            status: self.status.device(),
        }
    }

    /// Refuses work after a failure, and turns a status a kernel left behind into the
    /// error it stands for.
    pub(crate) fn check_usable(&self) -> Result<()> {
        if let Some(e) = self.status_error(false) {
            return Err(e);
        }
        match self.poisoned.lock() {
            Ok(p) => match p.as_ref() {
                Some(first) => Err(Error::Poisoned { rank: self.rank, first: first.clone() }),
                None => Ok(()),
            },
            Err(_) => Err(Error::Poisoned { rank: self.rank, first: "a thread panicked while holding the communicator".into() }),
        }
    }

    /// The error a kernel of this rank recorded in its status, if any: a wait that timed out
    /// (the communicator is poisoned), else, with `report_input` (after the stream's work is
    /// done: [`Communicator::synchronize`]), bad input the kernel found and went on without
    /// ([`Error::DeviceInput`]; the communicator stays usable). Input errors are not reported
    /// at the start of a call: another rank may not see its own until later, and refusing one
    /// rank's next collective alone would leave its peers waiting (helper-103).
    fn status_error(&self, report_input: bool) -> Option<Error> {
        let s = self.status.read();
        if s.code == 0 {
            if !report_input || s.input_code == 0 {
                return None;
            }
            let detail = match WaitOp::from_code(s.input_code) {
                Some(WaitOp::InvalidExpertId) => format!(
                    "expert_ids entry {} holds {}: an id must be -1 (none) or 0..{} and appear once in its token's top-k; the entry was dropped",
                    s.input_entry, s.input_observed as i32, s.input_expected
                ),
                Some(WaitOp::RecvCapacityExceeded) => format!(
                    "rank {} would receive {} rows (its experts' segments, each padded to {} rows) but recv_capacity is {}; no rank pushed or computed",
                    s.input_peer,
                    s.input_observed,
                    mkernel_kernels::moe_dispatch_gemm::SEGMENT_ALIGN,
                    s.input_expected
                ),
                Some(WaitOp::RanksDisagree) => {
                    let what = ["chunk_rows", "max_tokens", "recv_capacity", "K", "experts"];
                    format!(
                        "rank {} called with {} = {}, this rank with {}: every rank must pass the same chunk_rows, max_tokens, recv_capacity, K and experts; no rank pushed or computed",
                        s.input_peer,
                        what.get(s.input_entry as usize).copied().unwrap_or("an argument"),
                        s.input_observed,
                        s.input_expected
                    )
                }
                Some(WaitOp::InvalidDestRow) => format!(
                    "dest_rows entry {} holds row {} of rank {}, at or past {} (recv_capacity, or the rows that rank's layout uses); the entry was left out of the sum",
                    s.input_entry, s.input_observed, s.input_peer, s.input_expected
                ),
                Some(WaitOp::InvalidLayout) => format!(
                    "rank {}'s layout does not tile its rows as a dispatch's does (segment 0 at row 0, each at a multiple of {} rows, each ending where the next starts, the rows used within recv_capacity); no rank pushed or summed",
                    s.input_peer,
                    mkernel_kernels::moe_dispatch_gemm::SEGMENT_ALIGN
                ),
                Some(WaitOp::CombineRanksDisagree) => {
                    let name = mkernel_kernels::moe_gemm_combine::AGREE_NAMES.get(s.input_entry as usize).copied().unwrap_or("an argument");
                    // (the tile's word is BM | BN << 16)
                    let value = |v: u32| if name == "tile" { format!("{}x{}", v & 0xFFFF, v >> 16) } else { v.to_string() };
                    format!(
                        "rank {} called with {name} = {}, this rank with {}: every rank must pass the same recv_capacity, max_tokens, topk, experts, N, K and tile; no rank pushed or summed",
                        s.input_peer,
                        value(s.input_observed),
                        value(s.input_expected)
                    )
                }
                Some(WaitOp::InconsistentRoutes) => format!(
                    "row {} holds a token of rank {}, whose routes (dest_rows) name no entry for it in this call (or entry {}, entries < {}): layout and dest_rows are not from one dispatch, or that rank left the entry out for a bad id; the row was not sent",
                    s.input_entry, s.input_peer, s.input_observed, s.input_expected
                ),
                _ => format!("input error code {} (entry {}, peer {})", s.input_code, s.input_entry, s.input_peer),
            };
            self.status.write(KernelStatus { input_code: 0, input_peer: 0, input_entry: 0, input_epoch: 0, input_expected: 0, input_observed: 0, ..s });
            return Some(Error::DeviceInput { rank: self.rank, epoch: s.input_epoch, detail });
        }
        let op = WaitOp::from_code(s.code);
        let what = op.map_or("an unknown wait", WaitOp::describe);
        let err = Error::PeerTimeout {
            rank: s.rank,
            peer: s.peer,
            what,
            tile: match (s.tile, op) {
                (u32::MAX, _) => "no tile".into(),
                (c, Some(WaitOp::PeerChunkArrived)) => format!("chunk {c}"),
                (c, Some(WaitOp::PeerTokensArrived)) => format!("arrival flag {c}: local expert x chunks per segment + chunk"),
                (c, Some(WaitOp::LocalRoutingStep)) => format!("push CTA {c}"),
                (c, Some(WaitOp::PeerKvArrived)) => format!("chunk {c}: sequence x chunks per sequence + chunk"),
                (t, Some(WaitOp::PeerRowsPushed)) => format!("arrival flag of tile {t}: row block x column blocks + column block"),
                (t, Some(WaitOp::LocalTileStored)) => format!("tile {t} of this rank's GEMM"),
                (t, _) => format!("tile {t}"),
            },
            epoch: s.epoch,
            expected: s.expected,
            observed: s.observed,
            waited: Duration::from_nanos(s.waited_ns),
        };
        self.status.write(KernelStatus::default());
        self.poison(err.to_string());
        Some(err)
    }

    pub(crate) fn poison(&self, why: String) {
        if let Ok(mut p) = self.poisoned.lock() {
            p.get_or_insert(why);
        }
    }

    /// Bound of a host wait on this rank's kernels: above the longest wait a kernel may
    /// legitimately do (one timeout per rank's flag for each tile of a claim, then one
    /// per peer in the exit handshake), so a live but slow peer is reported by the
    /// kernel, not as a host timeout: (claim tiles + 1) x world + 2 timeouts + 5 s.
    fn host_wait_limit(&self) -> Duration {
        let timeouts = (mkernel_kernels::gemm_allreduce::ONE_SHOT_CLAIM_TILES + 1) * self.world + 2;
        self.config.timeout.saturating_mul(timeouts).saturating_add(Duration::from_secs(5))
    }

    fn capturing(stream: &CudaStream) -> Result<bool> {
        let status = stream.capture_status().call("cuStreamIsCapturing")?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Orders an eager fused call on `stream` after the previous eager one (if that ran
    /// on another stream). Inside a CUDA-graph capture the graph's own dependencies
    /// order the calls, and waiting on an event recorded outside the capture would
    /// invalidate it, so nothing is done. Call before enqueuing.
    pub(crate) fn order_after_last(&self, stream: &CudaStream) -> Result<()> {
        if Self::capturing(stream)? {
            return Ok(());
        }
        let last = self.last_stream.lock().map_err(|_| Error::Poisoned { rank: self.rank, first: "lock poisoned".into() })?;
        if last.is_some_and(|s| s != stream.cu_stream() as usize) {
            stream.wait(&self.launch_done).call("cuStreamWaitEvent")?;
        }
        Ok(())
    }

    /// A fused call's device rule: `stream` and every operand (`(argument, GPU ordinal)`)
    /// on this rank's GPU (named by the argument otherwise).
    pub(crate) fn check_on_own_gpu(&self, stream: &CudaStream, operands: &[(&'static str, usize)]) -> Result<()> {
        let ordinal = self.device_info().ordinal;
        crate::gemm::check_same_device(stream, ordinal, "stream")?;
        for &(arg, ord) in operands {
            if ord != ordinal {
                return Err(crate::error::invalid(arg, format!("is on GPU {ord}, but rank {} runs on GPU {ordinal}", self.rank())));
            }
        }
        Ok(())
    }

    /// After a fused kernel's launch on `stream`: a failure other than an argument error
    /// poisons the communicator (a rank that failed to launch leaves its peers waiting: they
    /// time out) and is returned; a launch is recorded ([`Self::record_launch`]).
    pub(crate) fn finish_launch(&self, launched: mkernel_kernels::Result<()>, stream: &CudaStream) -> Result<()> {
        if let Err(e) = launched {
            if !matches!(e, mkernel_kernels::Error::InvalidArgument { .. }) {
                self.poison(e.to_string());
            }
            return Err(e.into());
        }
        self.record_launch(stream)
    }

    /// Records the end of a fused call just enqueued on `stream` (eager calls only; a
    /// captured call marks the communicator so drop synchronises the context instead).
    pub(crate) fn record_launch(&self, stream: &CudaStream) -> Result<()> {
        if Self::capturing(stream)? {
            self.captured.store(true, std::sync::atomic::Ordering::Relaxed);
            return Ok(());
        }
        self.launch_done.record(stream).call("cuEventRecord")?;
        if let Ok(mut last) = self.last_stream.lock() {
            *last = Some(stream.cu_stream() as usize);
        }
        Ok(())
    }

    /// Enqueues a device-side barrier of the ranks on `stream` and returns once it is
    /// enqueued (the first call per GPU also compiles or loads the kernel): the work
    /// enqueued on `stream` after it starts only once every rank's stream has reached its
    /// barrier (the ranks leave it within the NVLink flag latency, about a microsecond),
    /// and no host thread waits. Benchmarks use it to start each timed kernel with the
    /// ranks aligned (`bench gemm-allreduce --align-ranks`).
    ///
    /// Collective: every rank calls it the same number of times, in the same order
    /// relative to its other collective calls. Where one thread drives every rank,
    /// interleave the ranks' calls: many barriers enqueued for one rank before the others
    /// can fill that stream's launch queue and block the thread before the peers' calls
    /// are made, until the barriers already enqueued time out.
    ///
    /// A rank whose peers do not arrive within [`CommConfig::timeout`] stops waiting and
    /// marks itself aborted: this communicator's later barriers and fused calls on the
    /// rank do nothing (other work queued on `stream` still runs, unaligned), and
    /// [`Self::synchronize`] or the next call reports [`Error::PeerTimeout`] (waiting for
    /// "the peer to reach the device-side barrier (barrier flag)"); the communicator then
    /// refuses further calls.
    ///
    /// Errors: `stream` on another GPU; `stream` capturing a CUDA graph (each barrier
    /// has its own number, which a graph replay would repeat); an earlier failure;
    /// NVRTC or driver errors (any failure after the argument checks poisons the
    /// communicator: the barrier's number is taken, and the peers would wait for it).
    pub fn device_barrier(&self, stream: &Arc<CudaStream>) -> Result<()> {
        self.check_usable()?;
        crate::gemm::check_same_device(stream, self.device_info().ordinal, "stream")?;
        if Self::capturing(stream)? {
            return Err(invalid("stream", "is capturing a CUDA graph; a device barrier cannot be captured (a replay would repeat its number)"));
        }
        // Ordered with this rank's fused calls on other streams, and covered by the
        // event `Drop` waits for (the barrier writes the workspace and the status word).
        self.order_after_last(stream)?;
        let epoch = barrier_epoch(self.barriers.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        // SAFETY: the workspaces and status word of rank_buffers live as long as `self`.
        let launched = unsafe { mkernel_kernels::barrier::launch(kdriver::Runtime::global(), stream, &self.rank_buffers(), epoch, self.config.timeout) };
        if let Err(e) = launched {
            // The number is taken: this rank's barriers no longer match its peers'
            // (which wait for this one and time out).
            self.poison(e.to_string());
            return Err(e.into());
        }
        self.record_launch(stream)
    }

    /// Waits (bounded by `(3 x world + 2) x timeout + 5 s`) until `stream` has finished, then reports
    /// any failure a fused kernel recorded, e.g. [`Error::PeerTimeout`] naming the peer
    /// that never arrived. After such an error the communicator refuses further calls.
    pub fn synchronize(&self, stream: &CudaStream) -> Result<()> {
        let limit = self.host_wait_limit();
        let start = Instant::now();
        stream.context().bind_to_thread().call("cuCtxSetCurrent")?;
        loop {
            // SAFETY: live stream.
            match unsafe { sys::cuStreamQuery(stream.cu_stream()) } {
                sys::CUresult::CUDA_SUCCESS => break,
                sys::CUresult::CUDA_ERROR_NOT_READY => {
                    if start.elapsed() > limit {
                        let e = Error::HostTimeout { rank: self.rank, what: "the stream's fused kernels".into(), waited: start.elapsed() };
                        self.poison(e.to_string());
                        return Err(e);
                    }
                    std::thread::sleep(Duration::from_micros(50));
                }
                e => {
                    let err = Error::Driver { call: "cuStreamQuery", source: cudarc::driver::DriverError(e) };
                    self.poison(err.to_string());
                    return Err(err);
                }
            }
        }
        if let Some(e) = self.status_error(true) {
            return Err(e);
        }
        self.check_usable()
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // Peers may still read this workspace until their kernels end; wait (bounded) for
        // our last fused call, then (one process per GPU) for everyone, before freeing it.
        let _ = self.ctx.bind_to_thread();
        let limit = self.host_wait_limit();
        if self.captured.load(std::sync::atomic::Ordering::Relaxed) {
            // Graph replays may still run this rank's kernels (each bounded by its own
            // timeouts, so this returns).
            let _ = self.ctx.synchronize();
        } else {
            let start = Instant::now();
            // Ok(false) = still running; Ok(true) = done; Err = the context failed (nothing
            // left to wait for).
            while matches!(self.launch_done.try_is_complete(), Ok(false)) && start.elapsed() < limit {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        if let Some(b) = &self.bootstrap {
            let _ = b.barrier();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_epochs_skip_zero_and_repeat_only_after_a_full_cycle() {
        assert_eq!((barrier_epoch(0), barrier_epoch(1)), (1, 2));
        let last = u32::MAX as u64 - 1; // the u32::MAX-th barrier
        assert_eq!(barrier_epoch(last), u32::MAX);
        assert_eq!(barrier_epoch(last + 1), 1); // then 1 again, never 0
        assert_eq!(barrier_epoch(last + 2), 2);
        // Consecutive barriers always differ (a repeat would pass at once).
        for n in [0, last - 1, last, last + 1, 3 * last] {
            assert_ne!(barrier_epoch(n), barrier_epoch(n + 1));
            assert_ne!(barrier_epoch(n), 0);
        }
    }

    #[test]
    fn config_validation_names_the_field() {
        assert!(CommConfig::default().validate().is_ok());
        let e = CommConfig { timeout: Duration::ZERO, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.contains("`timeout`") && e.contains("1 ms"), "{e}");
        let e = CommConfig { bootstrap_timeout: Duration::MAX, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.contains("`bootstrap_timeout`"), "{e}");
        let e = CommConfig { max_output_elems: 0, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.contains("`max_output_elems`"), "{e}");
        let e = CommConfig { max_output_elems: u64::MAX, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.contains("2^37"), "{e}");
        let e = CommConfig { bootstrap_port: Some(0), ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.contains("`bootstrap_port`"), "{e}");
        // What validate admits, the workspace layout accepts too.
        let max = mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS;
        assert!(CommConfig { max_output_elems: max, ..Default::default() }.validate().is_ok());
        assert!(WorkspaceLayout::new(max, MAX_RANKS as u32).is_ok());
    }

    #[test]
    fn a_failed_workspace_allocation_names_rank_gpu_and_config() {
        // (run 394: a 2^37-element workspace on one H200 came back as the driver's bare
        // out-of-memory error. `Error::Allocation` adds the size; its driver error needs a
        // driver to print, so only the part named here is checked without one.)
        let config = CommConfig { max_output_elems: 1 << 37, ..Default::default() };
        let what = workspace_what(1, 0, &config, 2);
        for part in ["rank 1's symmetric workspace on GPU 0", "max_output_elems = 137438953472", "2 ranks", "largest M x N"] {
            assert!(what.contains(part), "{part:?} not in {what}");
        }
        let layout = WorkspaceLayout::new(config.max_output_elems, 2).unwrap();
        assert!(layout.bytes() >= (1u64 << 37) * 2, "the workspace holds at least one bf16 output: {}", layout.bytes());
    }

    #[test]
    fn local_group_reports_argument_errors_before_touching_the_driver() {
        // Runs with or without a GPU: the config and world size are checked first.
        let bad = CommConfig { timeout: Duration::ZERO, ..Default::default() };
        let e = Communicator::local_group(&[0], bad).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "timeout", .. }), "{e}");
        let bad = CommConfig { max_output_elems: 0, ..Default::default() };
        let e = Communicator::local_group(&[0, 1], bad).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "max_output_elems", .. }), "{e}");
        let e = Communicator::local_group(&[], CommConfig::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "world_size", .. }), "{e}");
        let e = Communicator::local_group(&[0; 9], CommConfig::default()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "world_size", .. }), "{e}");
    }

    /// Step 1's payloads as `from_launch_env` builds them, one per `max_output_elems`
    /// given (rank q on a GPU with UUID bytes q).
    fn infos(max_output_elems: &[u64]) -> Vec<Vec<u8>> {
        max_output_elems
            .iter()
            .enumerate()
            .map(|(q, &m)| RankInfo { uuid: [q as u8; 16], sm_count: 132 - q as u32, max_output_elems: m }.encode())
            .collect()
    }

    #[test]
    fn rank_infos_round_trip_and_equal_max_output_elems_pass() {
        let got = parse_rank_infos(&infos(&[1 << 27; 4])).unwrap();
        assert_eq!(got.len(), 4);
        for (q, p) in got.iter().enumerate() {
            assert_eq!(*p, RankInfo { uuid: [q as u8; 16], sm_count: 132 - q as u32, max_output_elems: 1 << 27 });
        }
        // One rank alone agrees with itself.
        assert_eq!(parse_rank_infos(&infos(&[1000])).unwrap().len(), 1);
        // Values above u32 survive the round trip.
        let big = mkernel_kernels::gemm_allreduce::MAX_CAPACITY_ELEMS;
        assert_eq!(parse_rank_infos(&infos(&[big, big])).unwrap()[1].max_output_elems, big);
    }

    #[test]
    fn differing_max_output_elems_are_refused_naming_every_rank() {
        let e = parse_rank_infos(&infos(&[134_217_728, 1000])).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "max_output_elems", .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("must be equal on every rank") && e.contains("rank 0 has 134217728, rank 1 has 1000"), "{e}");
        // One rank of four differs (the last): named, with the others' value.
        let e = parse_rank_infos(&infos(&[1 << 20, 1 << 20, 1 << 20, (1 << 20) + 1])).unwrap_err().to_string();
        assert!(e.contains("rank 2 has 1048576, rank 3 has 1048577"), "{e}");
    }

    #[test]
    fn two_ranks_on_one_gpu_are_refused_naming_both() {
        let mut p = infos(&[1 << 20; 4]);
        p[3] = p[1].clone();
        let e = parse_rank_infos(&p).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "LOCAL_RANK", .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("ranks 1 and 3 use the same GPU (UUID 01010101") && e.contains("one process per GPU"), "{e}");
    }

    #[test]
    fn malformed_rank_infos_are_refused_naming_the_rank() {
        // A rank of a build without max_output_elems (UUID, SM count).
        let mut p = infos(&[1 << 20, 1 << 20, 1 << 20]);
        p[1].truncate(20);
        let e = parse_rank_infos(&p).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "bootstrap", .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("rank 1 sent 20 bytes in step 1 of 2 of the exchange, expected 28") && e.contains("same mkernel build"), "{e}");
        // Too long too (a build that still sends its IPC handle first); the length is
        // checked before any agreement.
        let mut p = infos(&[1 << 20, 7]);
        p[0].splice(0..0, [0u8; 64]);
        assert!(parse_rank_infos(&p).unwrap_err().to_string().contains("rank 0 sent 92 bytes"));
        assert!(parse_rank_infos(&[Vec::new()]).unwrap_err().to_string().contains("rank 0 sent 0 bytes"));
    }

    #[test]
    fn ready_contributions_pass_their_payloads_through() {
        let blobs: Vec<Vec<u8>> = (0..4u8).map(|q| encode_step(Ok(&[q; 3]))).collect();
        assert_eq!(blobs[2], [STEP_READY, 2, 2, 2]);
        let got = decode_step(&blobs, SetupStep::Workspace, 0).unwrap();
        assert_eq!(got, [[0u8; 3], [1; 3], [2; 3], [3; 3]]);
        // An empty payload is a payload (the length rules are the step's parser's).
        assert_eq!(decode_step(&[encode_step(Ok(&[]))], SetupStep::Describe, 0).unwrap(), [[0u8; 0]]);
    }

    #[test]
    fn a_rank_that_failed_a_step_is_named_with_its_message() {
        let why = "allocating rank 2's symmetric workspace on GPU 2 (CommConfig::max_output_elems = 137438953472, 4 ranks; \
                   ...) (274877906944 bytes, 256.00 GiB of GPU memory) failed: CUDA_ERROR_OUT_OF_MEMORY";
        let mut blobs: Vec<Vec<u8>> = (0..4u8).map(|q| encode_step(Ok(&[q; HANDLE_BYTES]))).collect();
        blobs[2] = encode_step(Err(why));
        assert_eq!(blobs[2][0], STEP_FAILED);
        for rank in [0, 1, 3] {
            let e = decode_step(&blobs, SetupStep::Workspace, rank).unwrap_err();
            match &e {
                Error::PeerSetup { rank: r, peer: 2, reason, others, .. } => {
                    assert_eq!((*r as usize, reason.as_str(), others.len()), (rank, why, 0), "{e}")
                }
                _ => panic!("expected PeerSetup naming rank 2, got {e}"),
            }
            let e = e.to_string();
            let head = format!("rank {rank}: rank 2 could not set up its symmetric workspace, so no rank builds a communicator: allocating rank 2's");
            assert!(e.starts_with(&head) && e.ends_with("CUDA_ERROR_OUT_OF_MEMORY"), "{e}");
        }
        // Several failed: the first is named with its message, the others by number.
        blobs[0] = encode_step(Err("rank 0's error"));
        blobs[3] = encode_step(Err("rank 3's error"));
        let e = decode_step(&blobs, SetupStep::Workspace, 1).unwrap_err();
        assert!(matches!(&e, Error::PeerSetup { peer: 0, others, .. } if others == &[2, 3]), "{e}");
        assert!(e.to_string().ends_with("rank 0's error (ranks 2, 3 failed too)"), "{e}");
        // Step 1 names what step 1 does.
        let e = decode_step(&[encode_step(Ok(&[1])), encode_step(Err("no UUID"))], SetupStep::Describe, 0).unwrap_err().to_string();
        assert!(e.contains("rank 1 could not describe its GPU") && !e.contains("failed too"), "{e}");
    }

    #[test]
    fn long_failure_messages_are_cut_at_a_character_boundary() {
        // 'é' is 2 bytes: MAX_FAILURE_BYTES + 1 bytes of them must be cut to an even length.
        let long = "é".repeat(MAX_FAILURE_BYTES / 2 + 1);
        let blob = encode_step(Err(&long));
        assert_eq!(blob.len(), 1 + MAX_FAILURE_BYTES);
        let e = decode_step(&[blob], SetupStep::Workspace, 0).unwrap_err();
        assert!(matches!(&e, Error::PeerSetup { reason, .. } if reason.len() == MAX_FAILURE_BYTES && !reason.contains('\u{FFFD}')), "{e}");
        let odd = "x".to_string() + &long;
        let blob = encode_step(Err(&odd));
        assert_eq!(blob.len(), MAX_FAILURE_BYTES); // (1 + 'x' + 1023 whole 'é's)
        assert!(std::str::from_utf8(&blob[1..]).is_ok());
    }

    #[test]
    fn malformed_contributions_are_refused_naming_the_rank() {
        let ok = encode_step(Ok(&[0; HANDLE_BYTES]));
        let e = decode_step(&[ok.clone(), Vec::new()], SetupStep::Workspace, 0).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { arg: "bootstrap", .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("rank 1 sent 0 bytes starting with nothing in step 2 of 2") && e.contains("same mkernel build"), "{e}");
        let e = decode_step(&[ok.clone(), vec![7; 65]], SetupStep::Workspace, 1).unwrap_err().to_string();
        assert!(e.contains("rank 1 sent 65 bytes starting with tag 7 in step 2 of 2"), "{e}");
        let mut long = vec![STEP_FAILED];
        long.resize(MAX_FAILURE_BYTES + 2, b'x');
        let e = decode_step(&[long, ok], SetupStep::Describe, 1).unwrap_err().to_string();
        assert!(e.contains(&format!("rank 0's failure report in step 1 of 2 of the exchange is {} bytes", MAX_FAILURE_BYTES + 1)), "{e}");
    }

    #[test]
    fn handles_round_trip_and_other_lengths_are_named() {
        let h = sys::CUipcMemHandle { reserved: std::array::from_fn(|i| (i as u8).wrapping_mul(37) as std::ffi::c_char) };
        let bytes = handle_bytes(&h);
        assert_eq!(bytes.len(), HANDLE_BYTES);
        let got = parse_handles(&[bytes.clone(), bytes.clone()]).unwrap();
        assert_eq!(got, [h, h]);
        for len in [0, HANDLE_BYTES - 1, HANDLE_BYTES + 1, HANDLE_BYTES + RankInfo::BYTES] {
            let mut bad = bytes.clone();
            bad.resize(len, 0);
            let e = parse_handles(&[bytes.clone(), bytes.clone(), bad]).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { arg: "bootstrap", .. }), "{e}");
            let e = e.to_string();
            assert!(e.contains(&format!("rank 2 sent {len} bytes in step 2 of 2 of the exchange, expected a 64-byte CUDA IPC handle")), "{e}");
        }
    }

    #[test]
    fn a_rank_that_fails_between_the_steps_is_named_promptly_on_every_rank() {
        // The protocol of `from_launch_env` over loopback TCP, without a GPU: 4 ranks agree in
        // step 1, then rank 2 fails (as an allocation would) and the others must hear of it
        // at once, not after the bootstrap timeout.
        let timeout = Duration::from_secs(60);
        let boots = Bootstrap::new_local(4, timeout).unwrap();
        let start = Instant::now();
        let results: Vec<(Result<Vec<u64>>, Result<u32>)> = std::thread::scope(|s| {
            let handles: Vec<_> = boots
                .iter()
                .map(|boot| {
                    s.spawn(move || {
                        let q = boot.rank();
                        let info = RankInfo { uuid: [q as u8; 16], sm_count: 132, max_output_elems: 1 << 20 };
                        let step1 = exchange_step(boot, SetupStep::Describe, Ok(info), RankInfo::encode)
                            .and_then(|(_, p)| parse_rank_infos(&p))
                            .map(|infos| infos.iter().map(|i| i.max_output_elems).collect());
                        let own = if q == 2 { Err(invalid("workspace", "rank 2's allocation failed")) } else { Ok(q as u32) };
                        let step2 = exchange_step(boot, SetupStep::Workspace, own, |v| v.to_le_bytes().to_vec()).map(|(v, _)| v);
                        (step1, step2)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let elapsed = start.elapsed();
        assert!(elapsed < Duration::from_secs(5), "took {elapsed:?} (bootstrap timeout {timeout:?})");
        for (q, (step1, step2)) in results.into_iter().enumerate() {
            assert_eq!(step1.unwrap(), [1 << 20; 4], "rank {q}");
            let e = step2.unwrap_err();
            if q == 2 {
                // The failed rank returns its own error.
                assert!(matches!(e, Error::InvalidArgument { arg: "workspace", .. }), "rank {q}: {e}");
            } else {
                assert!(matches!(e, Error::PeerSetup { peer: 2, .. }), "rank {q}: {e}");
                let e = e.to_string();
                assert!(e.starts_with(&format!("rank {q}: rank 2 could not set up its symmetric workspace")), "{e}");
                assert!(e.ends_with("invalid argument `workspace`: rank 2's allocation failed"), "{e}");
            }
        }
        // Every rank is still in step with the others: the bootstrap goes on.
        std::thread::scope(|s| {
            let handles: Vec<_> = boots.iter().map(|b| s.spawn(move || b.barrier())).collect();
            for h in handles {
                h.join().unwrap().unwrap();
            }
        });
    }

    #[test]
    fn world_size_bounds() {
        assert!(check_world(0).is_err());
        assert!(check_world(MAX_RANKS + 1).unwrap_err().to_string().contains("world_size"));
        assert!(check_world(MAX_RANKS).is_ok());
    }
}
