//! The libfabric RDM endpoint.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{c_void, CStr, CString};
use std::ptr;
use std::time::Duration;

use mkernel_transport::wait::Deadline;
use mkernel_transport::{
    check_batch, Capabilities, Completion, HostBuffer, LocalRegion, Ordering, Rank, RemoteRegion,
    Transport, TransportError, Write, WriteId,
};

use crate::ffi;

/// How to open a [`FabricEndpoint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricConfig {
    /// libfabric provider name: `"efa"`, `"tcp"`, `"shm"`, `"verbs"`, ...
    pub provider: String,
    /// Domain (NIC) name to pick among the provider's (`fi_info -p tcp` lists them);
    /// `None` takes the first.
    pub domain: Option<String>,
    /// Most writes in flight on the endpoint (capped by the provider's `tx_attr.size`).
    pub queue_depth: usize,
    /// Most writes per [`Transport::post_writes`] call.
    pub max_batch: usize,
    /// Largest single write in bytes (capped by the provider's `max_msg_size`).
    pub max_write_bytes: usize,
    /// How long a post retries while the provider answers `FI_EAGAIN` before returning
    /// [`TransportError::QueueFull`].
    pub post_timeout: Duration,
    /// Ask for `FI_HMEM` (device memory); the endpoint's
    /// [`Capabilities::device_memory`] says whether the provider granted it.
    pub hmem: bool,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            provider: "efa".into(),
            domain: None,
            queue_depth: 256,
            max_batch: 16,
            max_write_bytes: 1 << 30,
            post_timeout: Duration::from_secs(5),
            hmem: false,
        }
    }
}

const API_VERSION: u32 = (ffi::FI_MAJOR_VERSION << 16) | ffi::FI_MINOR_VERSION;
const ADDRESS_MAGIC: &[u8; 4] = b"MKFA";
const FI_ADDR_UNSPEC: u64 = u64::MAX;
const POLL_BATCH: usize = 64;

fn strerror(code: i64) -> String {
    let errnum = i32::try_from(code.unsigned_abs()).unwrap_or(i32::MAX);
    // SAFETY: fi_strerror returns a static NUL-terminated string for any code.
    let s = unsafe { ffi::fi_strerror(errnum) };
    if s.is_null() {
        return format!("error {code}");
    }
    // SAFETY: non-null static string from libfabric.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

fn check(call: &'static str, ret: i64) -> Result<(), TransportError> {
    if ret < 0 {
        return Err(TransportError::Backend {
            call,
            code: ret,
            message: strerror(ret),
        });
    }
    Ok(())
}

/// libfabric error codes that mean the peer (or the connection to it) is gone.
fn is_peer_gone(code: u32) -> bool {
    matches!(
        code,
        ffi::FI_ECONNRESET
            | ffi::FI_ECONNREFUSED
            | ffi::FI_ECONNABORTED
            | ffi::FI_ENOTCONN
            | ffi::FI_EHOSTUNREACH
            | ffi::FI_ETIMEDOUT
            | ffi::FI_ESHUTDOWN
            | ffi::FI_EIO
            | 32 /* EPIPE */
    )
}

/// Whether an error completion (`err`, `prov_errno` of a `fi_cq_err_entry`) means the
/// peer is gone. Besides the codes of [`is_peer_gone`]: the tcp provider cancels the
/// writes in flight when the connection drops, reporting FI_ECANCELED with the socket's
/// errno (e.g. ENOTCONN) as the provider errno.
fn completion_peer_gone(err: i32, prov_errno: i32) -> bool {
    let code = err.unsigned_abs();
    is_peer_gone(code) || (code == ffi::FI_ECANCELED && is_peer_gone(prov_errno.unsigned_abs()))
}

/// RAII list of `fi_info`, freed with `fi_freeinfo`.
struct InfoList(*mut ffi::fi_info);

impl Drop for InfoList {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: returned by fi_getinfo / fi_dupinfo and not freed elsewhere.
            unsafe { ffi::fi_freeinfo(self.0) }
        }
    }
}

fn getinfo(config: &FabricConfig) -> Result<InfoList, TransportError> {
    // SAFETY: fi_allocinfo returns a zeroed fi_info with all attribute structs allocated.
    let hints = InfoList(unsafe { ffi::fi_allocinfo() });
    if hints.0.is_null() {
        return Err(TransportError::Backend {
            call: "fi_allocinfo",
            code: -12,
            message: "out of memory".into(),
        });
    }
    let prov = CString::new(config.provider.clone()).map_err(|_| TransportError::InvalidArgument {
        arg: "config.provider",
        rule: format!("must not contain NUL, got {:?}", config.provider),
    })?;
    let prov_raw = prov.into_raw();
    let mut list: *mut ffi::fi_info = ptr::null_mut();
    // SAFETY: hints and its attribute structs were allocated by fi_allocinfo; prov_raw
    // is reclaimed below before fi_freeinfo can see it.
    let ret = unsafe {
        let h = &mut *hints.0;
        h.caps = u64::from(ffi::FI_RMA | ffi::FI_WRITE | ffi::FI_REMOTE_WRITE);
        if config.hmem {
            h.caps |= ffi::FI_HMEM;
        }
        h.mode = ffi::FI_CONTEXT | ffi::FI_CONTEXT2;
        (*h.ep_attr).type_ = ffi::fi_ep_type_FI_EP_RDM;
        let mut mr_mode = ffi::FI_MR_LOCAL
            | ffi::FI_MR_VIRT_ADDR
            | ffi::FI_MR_ALLOCATED
            | ffi::FI_MR_PROV_KEY
            | ffi::FI_MR_ENDPOINT;
        if config.hmem {
            mr_mode |= ffi::FI_MR_HMEM;
        }
        (*h.domain_attr).mr_mode = mr_mode as i32;
        (*h.domain_attr).threading = ffi::fi_threading_FI_THREAD_DOMAIN;
        (*h.fabric_attr).prov_name = prov_raw;
        let ret = ffi::fi_getinfo(API_VERSION, ptr::null(), ptr::null(), 0, hints.0, &mut list);
        (*h.fabric_attr).prov_name = ptr::null_mut();
        drop(CString::from_raw(prov_raw));
        ret
    };
    check("fi_getinfo", i64::from(ret)).map_err(|e| match e {
        TransportError::Backend { code, message, .. } => TransportError::Unsupported {
            what: format!(
                "libfabric provider {:?} with RDM endpoints and RMA writes: fi_getinfo returned {code} ({message})",
                config.provider
            ),
        },
        other => other,
    })?;
    Ok(InfoList(list))
}

/// Version of the libfabric library loaded at run time, as `"major.minor"`.
pub fn libfabric_version() -> String {
    // SAFETY: fi_version has no preconditions.
    let v = unsafe { ffi::fi_version() };
    format!("{}.{}", v >> 16, v & 0xffff)
}

/// `true` when libfabric offers `provider` with RDM endpoints and RMA writes here.
pub fn provider_available(provider: &str) -> bool {
    getinfo(&FabricConfig {
        provider: provider.into(),
        ..FabricConfig::default()
    })
    .is_ok_and(|l| !l.0.is_null())
}

/// Per-operation context handed to libfabric (`FI_CONTEXT2` needs the first field to be
/// provider scratch space owned by us until the completion).
#[repr(C)]
struct Slot {
    ctx: ffi::fi_context2,
    id: WriteId,
    peer: Rank,
}

struct Mr {
    mr: *mut ffi::fid_mr,
    desc: *mut c_void,
    buffer: HostBuffer,
    key: u64,
    addr: u64,
}

/// A rank's libfabric RDM endpoint; implements [`Transport`].
///
/// Single-threaded (`FI_THREAD_DOMAIN`): every call takes `&mut self`; the endpoint may
/// move between threads.
pub struct FabricEndpoint {
    rank: Rank,
    caps: Capabilities,
    info: InfoList,
    fabric: *mut ffi::fid_fabric,
    domain: *mut ffi::fid_domain,
    cq: *mut ffi::fid_cq,
    av: *mut ffi::fid_av,
    ep: *mut ffi::fid_ep,
    mr_mode: u32,
    address: Vec<u8>,
    raw_addrlen: usize,
    peers: HashMap<Rank, u64>,
    gone: HashMap<Rank, String>,
    regions: HashMap<u64, Mr>,
    next_region: u64,
    next_key: u64,
    imported: HashSet<RemoteRegion>,
    slots: Box<[Slot]>,
    free_slots: Vec<usize>,
    /// Per slot: posted and not yet completed by the provider.
    busy: Vec<bool>,
    /// Per slot: already reported failed to the caller (peer gone) but still held by the
    /// provider; its late completion is dropped silently.
    abandoned: Vec<bool>,
    ready: VecDeque<Completion>,
    post_timeout: Duration,
}

// SAFETY: the endpoint owns its libfabric objects, opened with FI_THREAD_DOMAIN, and
// every access takes `&mut self`, so moving it to another thread is sound.
unsafe impl Send for FabricEndpoint {}

impl std::fmt::Debug for FabricEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FabricEndpoint")
            .field("rank", &self.rank)
            .field("caps", &self.caps)
            .field("peers", &self.peers.len())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

/// A name for an shm endpoint's region no other process has used: "mk<pid>_<random>_<n>"
/// (the random part drawn once per process from the standard library's hasher keys, n
/// counting this process's endpoints), well within shm's 256-byte names.
fn unique_shm_name() -> CString {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
    static NONCE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nonce = *NONCE.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish()
    });
    let n = NEXT.fetch_add(1, AtomicOrdering::Relaxed);
    // (digits and letters only: no NUL)
    CString::new(format!("mk{}_{nonce:016x}_{n}", std::process::id())).unwrap_or_default()
}

fn cstr_field(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: libfabric strings in fi_info are NUL-terminated.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl FabricEndpoint {
    /// Opens an RDM endpoint of `config.provider` for `rank`.
    ///
    /// Errors: [`TransportError::Unsupported`] when the provider (or the domain asked
    /// for) is not available; [`TransportError::Backend`] naming the failing call.
    pub fn open(rank: Rank, config: &FabricConfig) -> Result<Self, TransportError> {
        if config.queue_depth == 0 || config.max_batch == 0 {
            return Err(TransportError::InvalidArgument {
                arg: "config",
                rule: format!(
                    "queue_depth ({}) and max_batch ({}) must be > 0",
                    config.queue_depth, config.max_batch
                ),
            });
        }
        let list = getinfo(config)?;
        // Pick the info for the requested domain.
        let mut chosen: *mut ffi::fi_info = ptr::null_mut();
        let mut names = Vec::new();
        let mut cur = list.0;
        while !cur.is_null() {
            // SAFETY: walking the list fi_getinfo returned.
            let (name, next) = unsafe { (cstr_field((*(*cur).domain_attr).name), (*cur).next) };
            if config.domain.as_deref().is_none_or(|d| d == name) {
                chosen = cur;
                break;
            }
            names.push(name);
            cur = next;
        }
        if chosen.is_null() {
            return Err(TransportError::Unsupported {
                what: format!(
                    "domain {:?} of provider {:?}; available: {names:?}",
                    config.domain, config.provider
                ),
            });
        }
        // SAFETY: chosen is a valid element of `list`; fi_dupinfo copies it alone.
        let info = InfoList(unsafe {
            let next = (*chosen).next;
            (*chosen).next = ptr::null_mut();
            let dup = ffi::fi_dupinfo(chosen);
            (*chosen).next = next;
            dup
        });
        drop(list);
        if info.0.is_null() {
            return Err(TransportError::Backend {
                call: "fi_dupinfo",
                code: -12,
                message: "out of memory".into(),
            });
        }
        // SAFETY: info is a valid fi_info with attribute structs.
        let (caps, mr_mode, name, tx_size) = unsafe {
            let i = &*info.0;
            let tx = &*i.tx_attr;
            let ep_attr = &*i.ep_attr;
            let dom = &*i.domain_attr;
            let max_write = config.max_write_bytes.min(ep_attr.max_msg_size);
            let waw = tx.msg_order & (ffi::FI_ORDER_RMA_WAW | u64::from(ffi::FI_ORDER_WAW)) != 0;
            let ordered = waw && ep_attr.max_order_waw_size >= max_write;
            let name = format!(
                "libfabric {} ({}, domain {})",
                cstr_field((*i.fabric_attr).prov_name),
                cstr_field((*i.fabric_attr).name),
                cstr_field(dom.name)
            );
            (
                Capabilities {
                    ordering: if ordered { Ordering::Ordered } else { Ordering::Unordered },
                    immediate_data: dom.cq_data_size >= 4,
                    device_memory: config.hmem && i.caps & ffi::FI_HMEM != 0,
                    max_batch: config.max_batch,
                    max_in_flight: config.queue_depth.min(tx.size.max(1)),
                    max_write_bytes: max_write,
                    name: name.clone(),
                },
                dom.mr_mode as u32,
                name,
                tx.size,
            )
        };
        tracing::debug!(rank, provider = %name, ?caps, mr_mode, tx_size, "opening libfabric endpoint");
        let slots: Box<[Slot]> = (0..caps.max_in_flight)
            .map(|_| Slot {
                ctx: ffi::fi_context2::default(),
                id: WriteId(0),
                peer: 0,
            })
            .collect();
        let mut me = FabricEndpoint {
            rank,
            free_slots: (0..caps.max_in_flight).rev().collect(),
            busy: vec![false; caps.max_in_flight],
            abandoned: vec![false; caps.max_in_flight],
            caps,
            info,
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            cq: ptr::null_mut(),
            av: ptr::null_mut(),
            ep: ptr::null_mut(),
            mr_mode,
            address: Vec::new(),
            raw_addrlen: 0,
            peers: HashMap::new(),
            gone: HashMap::new(),
            regions: HashMap::new(),
            next_region: 1,
            next_key: 1,
            imported: HashSet::new(),
            slots,
            ready: VecDeque::new(),
            post_timeout: config.post_timeout,
        };
        // On error, `me` drops and closes whatever was opened.
        me.open_objects()?;
        Ok(me)
    }

    fn open_objects(&mut self) -> Result<(), TransportError> {
        // SAFETY: standard libfabric bring-up on a valid fi_info; every out-pointer is a
        // field of `self` closed in Drop (null when never opened).
        unsafe {
            let info = self.info.0;
            check("fi_fabric", i64::from(ffi::fi_fabric((*info).fabric_attr, &mut self.fabric, ptr::null_mut())))?;
            check("fi_domain", i64::from(ffi::fi_domain(self.fabric, info, &mut self.domain, ptr::null_mut())))?;
            let mut cq_attr = ffi::fi_cq_attr {
                size: self.caps.max_in_flight * 4 + 1024,
                format: ffi::fi_cq_format_FI_CQ_FORMAT_DATA,
                wait_obj: ffi::fi_wait_obj_FI_WAIT_NONE,
                ..Default::default()
            };
            check("fi_cq_open", i64::from(ffi::fi_cq_open(self.domain, &mut cq_attr, &mut self.cq, ptr::null_mut())))?;
            let mut av_attr = ffi::fi_av_attr {
                type_: ffi::fi_av_type_FI_AV_TABLE,
                count: 64,
                ..Default::default()
            };
            check("fi_av_open", i64::from(ffi::fi_av_open(self.domain, &mut av_attr, &mut self.av, ptr::null_mut())))?;
            check("fi_endpoint", i64::from(ffi::fi_endpoint(self.domain, info, &mut self.ep, ptr::null_mut())))?;
            check(
                "fi_ep_bind(cq)",
                i64::from(ffi::fi_ep_bind(self.ep, &mut (*self.cq).fid, u64::from(ffi::FI_TRANSMIT | ffi::FI_RECV))),
            )?;
            check("fi_ep_bind(av)", i64::from(ffi::fi_ep_bind(self.ep, &mut (*self.av).fid, 0)))?;
            // The shm provider (libfabric 1.17) names its shared-memory region
            // "<pid>:<uid>:<endpoint index>" in /dev/shm; a killed process leaves its
            // region behind, and when a later process reuses a PID that is alive again
            // the provider finds the stale region "in use" and fi_enable fails with EBUSY
            // (seen in CI after the killed-peer tests). A name with a per-process random
            // part does not collide that way (and not across PID namespaces sharing
            // /dev/shm either).
            if cstr_field((*(*info).fabric_attr).prov_name) == "shm" {
                let name = unique_shm_name();
                let len = name.as_bytes_with_nul().len();
                check("fi_setname", i64::from(ffi::fi_setname(&mut (*self.ep).fid, name.as_ptr() as *mut c_void, len)))?;
            }
            check("fi_enable", i64::from(ffi::fi_enable(self.ep)))?;
            let mut len: usize = 0;
            let ret = ffi::fi_getname(&mut (*self.ep).fid, ptr::null_mut(), &mut len);
            if ret != -(ffi::FI_ETOOSMALL as i32) && ret < 0 {
                check("fi_getname(size)", i64::from(ret))?;
            }
            let mut raw = vec![0u8; len.max(1)];
            let mut len2 = raw.len();
            check("fi_getname", i64::from(ffi::fi_getname(&mut (*self.ep).fid, raw.as_mut_ptr().cast(), &mut len2)))?;
            raw.truncate(len2);
            self.raw_addrlen = len2;
            let prov = cstr_field((*(*info).fabric_attr).prov_name);
            let mut address = Vec::with_capacity(8 + prov.len() + raw.len());
            address.extend_from_slice(ADDRESS_MAGIC);
            address.extend_from_slice(&u16::try_from(prov.len()).unwrap_or(0).to_le_bytes());
            address.extend_from_slice(prov.as_bytes());
            address.extend_from_slice(&raw);
            self.address = address;
        }
        Ok(())
    }

    fn raw_address<'a>(&self, address: &'a [u8]) -> Result<&'a [u8], TransportError> {
        let bad = |detail: String| TransportError::Malformed {
            what: "endpoint address",
            detail,
        };
        if address.len() < 6 || &address[0..4] != ADDRESS_MAGIC {
            return Err(bad(format!("{} bytes without the MKFA header", address.len())));
        }
        let plen = usize::from(u16::from_le_bytes([address[4], address[5]]));
        let ours_plen = usize::from(u16::from_le_bytes([self.address[4], self.address[5]]));
        let prov = address.get(6..6 + plen).ok_or_else(|| bad("truncated provider name".into()))?;
        let ours = &self.address[6..6 + ours_plen];
        if prov != ours {
            return Err(bad(format!(
                "address of provider {:?}, this endpoint is {:?}",
                String::from_utf8_lossy(prov),
                String::from_utf8_lossy(ours)
            )));
        }
        let raw = &address[6 + plen..];
        if raw.len() != self.raw_addrlen {
            return Err(bad(format!("raw address of {} bytes, expected {}", raw.len(), self.raw_addrlen)));
        }
        Ok(raw)
    }

    fn slot_index(&self, ctx: *mut c_void) -> Option<usize> {
        let base = self.slots.as_ptr() as usize;
        let p = ctx as usize;
        let size = std::mem::size_of::<Slot>();
        if p < base || !(p - base).is_multiple_of(size) {
            return None;
        }
        let i = (p - base) / size;
        (i < self.slots.len()).then_some(i)
    }

    fn complete_slot(&mut self, i: usize, result: Result<(), TransportError>) {
        if !self.busy[i] {
            tracing::warn!(rank = self.rank, slot = i, "completion for an idle context ignored");
            return;
        }
        self.busy[i] = false;
        self.free_slots.push(i);
        if std::mem::take(&mut self.abandoned[i]) {
            return;
        }
        let (id, peer) = (self.slots[i].id, self.slots[i].peer);
        if let Err(TransportError::PeerGone { detail, .. }) = &result {
            self.abandon_peer(peer, detail);
        }
        self.ready.push_back(Completion::Write { id, peer, result });
    }

    /// Marks `peer` gone and reports every write still in flight to it as failed; the
    /// provider's own (late or never) completions for them are dropped.
    fn abandon_peer(&mut self, peer: Rank, detail: &str) {
        self.gone.entry(peer).or_insert_with(|| detail.to_string());
        for i in 0..self.slots.len() {
            if self.busy[i] && !self.abandoned[i] && self.slots[i].peer == peer {
                self.abandoned[i] = true;
                self.ready.push_back(Completion::Write {
                    id: self.slots[i].id,
                    peer,
                    result: Err(TransportError::PeerGone {
                        peer,
                        detail: format!("peer failed while this write was in flight: {detail}"),
                    }),
                });
            }
        }
    }

    /// Reads the completion queue into `self.ready`; returns entries read.
    fn progress(&mut self) -> Result<usize, TransportError> {
        let mut entries: [ffi::fi_cq_data_entry; POLL_BATCH] = std::array::from_fn(|_| ffi::fi_cq_data_entry {
            op_context: ptr::null_mut(),
            flags: 0,
            len: 0,
            buf: ptr::null_mut(),
            data: 0,
        });
        // SAFETY: entries is a writable array of POLL_BATCH fi_cq_data_entry (the CQ's format).
        let n = unsafe { ffi::fi_cq_read(self.cq, entries.as_mut_ptr().cast(), POLL_BATCH) };
        if n == -(ffi::FI_EAGAIN as isize) {
            return Ok(0);
        }
        if n == -(ffi::FI_EAVAIL as isize) {
            return self.read_error().map(|()| 1);
        }
        check("fi_cq_read", n as i64)?;
        let n = n as usize;
        for e in &entries[..n] {
            if e.flags & u64::from(ffi::FI_REMOTE_CQ_DATA) != 0 {
                self.ready.push_back(Completion::Immediate {
                    peer: None,
                    imm: e.data as u32,
                    len: e.len,
                });
            } else if let Some(i) = self.slot_index(e.op_context) {
                self.complete_slot(i, Ok(()));
            } else {
                tracing::warn!(rank = self.rank, flags = e.flags, "completion with unknown context ignored");
            }
        }
        Ok(n)
    }

    fn read_error(&mut self) -> Result<(), TransportError> {
        let mut err = ffi::fi_cq_err_entry {
            op_context: ptr::null_mut(),
            flags: 0,
            len: 0,
            buf: ptr::null_mut(),
            data: 0,
            tag: 0,
            olen: 0,
            err: 0,
            prov_errno: 0,
            err_data: ptr::null_mut(),
            err_data_size: 0,
        };
        // SAFETY: err is a valid, zeroed fi_cq_err_entry (err_data_size 0: provider owns err_data).
        let ret = unsafe { ffi::fi_cq_readerr(self.cq, &mut err, 0) };
        if ret == -(ffi::FI_EAGAIN as isize) {
            return Ok(());
        }
        check("fi_cq_readerr", ret as i64)?;
        let mut buf = [0 as std::os::raw::c_char; 256];
        // SAFETY: buf is writable for its length; err_data comes from the same entry.
        let msg = unsafe { ffi::fi_cq_strerror(self.cq, err.prov_errno, err.err_data, buf.as_mut_ptr(), buf.len()) };
        let detail = format!(
            "{} (err {}, provider errno {}: {})",
            strerror(i64::from(err.err)),
            err.err,
            err.prov_errno,
            cstr_field(msg)
        );
        let code = err.err.unsigned_abs();
        let gone = completion_peer_gone(err.err, err.prov_errno);
        let Some(i) = self.slot_index(err.op_context) else {
            // NOTE: libfabric 1.17 shm reports a write to a killed peer as EIO with a
            // NULL op_context. When every write in flight goes to one peer, that peer is
            // the one gone: fail its writes (each still gets exactly one completion).
            let mut peers: Vec<Rank> = (0..self.slots.len())
                .filter(|&i| self.busy[i] && !self.abandoned[i])
                .map(|i| self.slots[i].peer)
                .collect();
            peers.sort_unstable();
            peers.dedup();
            if gone && peers.len() == 1 {
                self.abandon_peer(peers[0], &detail);
                return Ok(());
            }
            return Err(TransportError::Backend {
                call: "fi_cq_readerr",
                code: i64::from(err.err),
                message: format!(
                    "error completion without a write context (op_context {:p}, flags {:#x}): {detail}",
                    err.op_context, err.flags
                ),
            });
        };
        let peer = self.slots[i].peer;
        let result = if gone {
            Err(TransportError::PeerGone { peer, detail })
        } else if code == ffi::FI_EKEYREJECTED || code == ffi::FI_EACCES {
            Err(TransportError::KeyMismatch { peer, detail })
        } else {
            Err(TransportError::Backend {
                call: "fi_writemsg completion",
                code: i64::from(err.err),
                message: detail,
            })
        };
        self.complete_slot(i, result);
        Ok(())
    }

    fn post_one(&mut self, fi_addr: u64, w: &Write, more: bool) -> Result<isize, TransportError> {
        let mr = self.regions.get(&w.local.id()).ok_or(TransportError::UnknownRegion { region: w.local.id() })?;
        let slot = self.free_slots.last().copied().ok_or(TransportError::QueueFull {
            peer: w.remote.owner,
            posted: 0,
            in_flight: self.in_flight(),
            capacity: self.caps.max_in_flight,
        })?;
        self.slots[slot].id = w.id;
        self.slots[slot].peer = w.remote.owner;
        let iov = ffi::iovec {
            // SAFETY: bounds checked by check_batch against the registered length.
            iov_base: unsafe { mr.buffer.as_ptr().add(w.local_offset) }.cast(),
            iov_len: w.len,
        };
        let rma_iov = ffi::fi_rma_iov {
            addr: w.remote.addr + w.remote_offset as u64,
            len: w.len,
            key: w.remote.key,
        };
        let mut desc = [mr.desc];
        let ctx: *mut Slot = &mut self.slots[slot];
        let msg = ffi::fi_msg_rma {
            msg_iov: &iov,
            desc: desc.as_mut_ptr(),
            iov_count: 1,
            addr: fi_addr,
            rma_iov: &rma_iov,
            rma_iov_count: 1,
            context: ctx.cast(),
            data: u64::from(w.imm.unwrap_or(0)),
        };
        let mut flags = u64::from(ffi::FI_COMPLETION);
        if w.imm.is_some() {
            flags |= u64::from(ffi::FI_REMOTE_CQ_DATA);
        }
        if more {
            flags |= u64::from(ffi::FI_MORE);
        }
        // SAFETY: msg points at locals valid for the call; the context slot and the
        // registered buffer stay alive until the completion is read.
        let ret = unsafe { ffi::fi_writemsg(self.ep, &msg, flags) };
        if ret == 0 {
            self.free_slots.pop();
            self.busy[slot] = true;
        }
        Ok(ret)
    }
}

impl Drop for FabricEndpoint {
    fn drop(&mut self) {
        // SAFETY: each object is closed once, endpoint before what it is bound to.
        unsafe {
            if !self.ep.is_null() {
                ffi::fi_close(&mut (*self.ep).fid);
            }
            for (_, mr) in self.regions.drain() {
                ffi::fi_close(&mut (*mr.mr).fid);
            }
            if !self.av.is_null() {
                ffi::fi_close(&mut (*self.av).fid);
            }
            if !self.cq.is_null() {
                ffi::fi_close(&mut (*self.cq).fid);
            }
            if !self.domain.is_null() {
                ffi::fi_close(&mut (*self.domain).fid);
            }
            if !self.fabric.is_null() {
                ffi::fi_close(&mut (*self.fabric).fid);
            }
        }
    }
}

impl Transport for FabricEndpoint {
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
        if peer == self.rank {
            return Err(TransportError::InvalidArgument {
                arg: "peer",
                rule: format!("rank {peer} is this endpoint"),
            });
        }
        if self.peers.contains_key(&peer) {
            return Err(TransportError::InvalidArgument {
                arg: "peer",
                rule: format!("rank {peer} was already added"),
            });
        }
        let raw = self.raw_address(address)?;
        let mut fi_addr: u64 = FI_ADDR_UNSPEC;
        // SAFETY: raw is one address of the provider's format (length checked).
        let ret = unsafe { ffi::fi_av_insert(self.av, raw.as_ptr().cast(), 1, &mut fi_addr, 0, ptr::null_mut()) };
        if ret != 1 {
            return Err(TransportError::Malformed {
                what: "endpoint address",
                detail: format!("fi_av_insert accepted {ret} of 1 addresses ({})", strerror(i64::from(ret.min(0)))),
            });
        }
        self.peers.insert(peer, fi_addr);
        Ok(())
    }

    fn register_host(&mut self, buffer: &HostBuffer) -> Result<LocalRegion, TransportError> {
        let mut mr: *mut ffi::fid_mr = ptr::null_mut();
        let requested_key = self.next_key;
        // SAFETY: the buffer is live for the registration (a clone is kept in `regions`).
        unsafe {
            check(
                "fi_mr_reg",
                i64::from(ffi::fi_mr_reg(
                    self.domain,
                    buffer.as_ptr().cast(),
                    buffer.len(),
                    u64::from(ffi::FI_WRITE | ffi::FI_REMOTE_WRITE),
                    0,
                    requested_key,
                    0,
                    &mut mr,
                    ptr::null_mut(),
                )),
            )?;
            if self.mr_mode & ffi::FI_MR_ENDPOINT != 0 {
                let bound = check("fi_mr_bind", i64::from(ffi::fi_mr_bind(mr, &mut (*self.ep).fid, 0)))
                    .and_then(|()| check("fi_mr_enable", i64::from(ffi::fi_mr_enable(mr))));
                if let Err(e) = bound {
                    ffi::fi_close(&mut (*mr).fid);
                    return Err(e);
                }
            }
        }
        self.next_key += 1;
        // SAFETY: mr is a registered memory region.
        let (key, desc) = unsafe { (ffi::fi_mr_key(mr), ffi::fi_mr_desc(mr)) };
        let addr = if self.mr_mode & ffi::FI_MR_VIRT_ADDR != 0 {
            buffer.as_ptr() as u64
        } else {
            0
        };
        let id = self.next_region;
        self.next_region += 1;
        self.regions.insert(
            id,
            Mr {
                mr,
                desc,
                buffer: buffer.clone(),
                key,
                addr,
            },
        );
        Ok(LocalRegion::new(id, buffer.len()))
    }

    fn deregister(&mut self, region: LocalRegion) -> Result<(), TransportError> {
        let mr = self
            .regions
            .remove(&region.id())
            .ok_or(TransportError::UnknownRegion { region: region.id() })?;
        // SAFETY: mr.mr is a registered region closed exactly once.
        check("fi_close(mr)", i64::from(unsafe { ffi::fi_close(&mut (*mr.mr).fid) }))
    }

    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError> {
        let mr = self
            .regions
            .get(&region.id())
            .ok_or(TransportError::UnknownRegion { region: region.id() })?;
        Ok(RemoteRegion {
            owner: self.rank,
            addr: mr.addr,
            key: mr.key,
            len: mr.buffer.len() as u64,
        }
        .to_bytes())
    }

    fn import_remote(&mut self, peer: Rank, key: &[u8]) -> Result<RemoteRegion, TransportError> {
        let region = RemoteRegion::from_bytes(key)?;
        if !self.peers.contains_key(&peer) {
            return Err(TransportError::UnknownPeer { peer });
        }
        if region.owner != peer {
            return Err(TransportError::KeyMismatch {
                peer,
                detail: format!("key was registered by rank {}", region.owner),
            });
        }
        self.imported.insert(region);
        Ok(region)
    }

    fn post_writes(&mut self, peer: Rank, writes: &[Write]) -> Result<(), TransportError> {
        let fi_addr = *self.peers.get(&peer).ok_or(TransportError::UnknownPeer { peer })?;
        check_batch(
            &self.caps,
            peer,
            writes,
            |r| self.imported.contains(r),
            |l| self.regions.get(&l.id()).is_some_and(|m| m.buffer.len() == l.len()),
        )?;
        if let Some(detail) = self.gone.get(&peer) {
            return Err(TransportError::PeerGone {
                peer,
                detail: detail.clone(),
            });
        }
        if self.free_slots.len() < writes.len() {
            return Err(TransportError::QueueFull {
                peer,
                posted: 0,
                in_flight: self.in_flight(),
                capacity: self.caps.max_in_flight,
            });
        }
        let deadline = Deadline::after(self.post_timeout);
        for (i, w) in writes.iter().enumerate() {
            let more = i + 1 < writes.len();
            loop {
                let ret = self.post_one(fi_addr, w, more)?;
                if ret == 0 {
                    break;
                }
                let code = ret.unsigned_abs() as u32;
                if code == ffi::FI_EAGAIN {
                    self.progress()?;
                    if deadline.expired() {
                        return Err(TransportError::QueueFull {
                            peer,
                            posted: i,
                            in_flight: self.in_flight(),
                            capacity: self.caps.max_in_flight,
                        });
                    }
                    continue;
                }
                let detail = format!("fi_writemsg: {}", strerror(ret as i64));
                if is_peer_gone(code) {
                    self.gone.insert(peer, detail.clone());
                    return Err(TransportError::PeerGone { peer, detail });
                }
                return Err(TransportError::Backend {
                    call: "fi_writemsg",
                    code: ret as i64,
                    message: format!("write {:?} to peer {peer} ({i} of the batch posted): {detail}", w.id),
                });
            }
        }
        Ok(())
    }

    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError> {
        if self.ready.len() < max {
            self.progress()?;
        }
        let n = max.min(self.ready.len());
        out.extend(self.ready.drain(..n));
        Ok(n)
    }

    fn in_flight(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelled_writes_of_a_dropped_connection_mean_peer_gone() {
        // tcp, peer killed: "Operation canceled (err 125, provider errno 107: Transport
        // endpoint is not connected)".
        assert!(completion_peer_gone(ffi::FI_ECANCELED as i32, 107));
        assert!(completion_peer_gone(ffi::FI_ECANCELED as i32, -104));
        assert!(completion_peer_gone(ffi::FI_EIO as i32, 0));
        assert!(!completion_peer_gone(ffi::FI_ECANCELED as i32, 0));
        assert!(!completion_peer_gone(ffi::FI_EKEYREJECTED as i32, 107));
    }
}
