//! Plain data types shared by every transport: ranks, capabilities, region handles,
//! writes and completions.

use crate::error::{Side, TransportError};

/// A process's index in the job (0-based). A *peer* is any other rank this endpoint
/// has an address for.
pub type Rank = u32;

/// The write ordering a backend guarantees on one connection (one ordered pair of
/// ranks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// All bytes of write `k` are placed at the peer before any byte of write `k + 1`
    /// posted later on the same connection (InfiniBand RC; libfabric with
    /// `FI_ORDER_RMA_WAW` and an unlimited `max_order_waw_size`).
    Ordered,
    /// Writes on a connection may be placed in any order (EFA SRD, libfabric `shm`).
    Unordered,
}

/// What a backend can do, as reported by the backend at run time. Adaptors and callers
/// choose their protocol from this, never from the backend's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Placement order of writes on one connection.
    pub ordering: Ordering,
    /// `true` when writes can carry 32-bit immediate data that produces a
    /// [`Completion::Immediate`] on the peer after the write's bytes are placed.
    pub immediate_data: bool,
    /// `true` when device (GPU) memory can be registered. Host memory always can.
    pub device_memory: bool,
    /// Most writes one [`crate::Transport::post_writes`] call accepts for one peer.
    pub max_batch: usize,
    /// Most writes in flight (posted, not yet completed) on this endpoint.
    pub max_in_flight: usize,
    /// Largest single write in bytes.
    pub max_write_bytes: usize,
    /// Human-readable backend and provider name, for logs and benchmark output.
    pub name: String,
}

/// Caller-chosen identity of one write, returned in its [`Completion::Write`].
///
/// The adaptors in [`crate::adaptor`] reserve bit 63 ([`WriteId::FLAG_BIT`]) for the
/// arrival-flag write they add after a data write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriteId(pub u64);

impl WriteId {
    /// Bit set in the id of an adaptor's flag write.
    pub const FLAG_BIT: u64 = 1 << 63;
}

/// Handle of a memory region registered on this endpoint.
///
/// Only meaningful to the endpoint that returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocalRegion {
    id: u64,
    len: usize,
}

impl LocalRegion {
    /// Builds a handle; for backends.
    pub fn new(id: u64, len: usize) -> Self {
        LocalRegion { id, len }
    }
    /// Backend-assigned id.
    pub fn id(&self) -> u64 {
        self.id
    }
    /// Registered length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// `true` for a zero-length region.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A peer's registered region, as decoded from the bytes the peer published
/// ([`crate::Transport::remote_key`]) and accepted by
/// [`crate::Transport::import_remote`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RemoteRegion {
    /// Rank that registered the region.
    pub owner: Rank,
    /// Backend address of byte 0 of the region (virtual address or offset, as the
    /// backend's memory-registration mode requires).
    pub addr: u64,
    /// Backend remote access key.
    pub key: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Size in bytes of an encoded [`RemoteRegion`].
pub const REMOTE_REGION_BYTES: usize = 48;
const REMOTE_REGION_MAGIC: &[u8; 4] = b"MKRR";
const REMOTE_REGION_VERSION: u16 = 1;

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

impl RemoteRegion {
    /// Encodes the region as [`REMOTE_REGION_BYTES`] little-endian bytes:
    /// magic `"MKRR"`, version u16, 2 reserved, owner u32, 4 reserved, addr u64,
    /// key u64, len u64, FNV-1a checksum u64 of the first 40 bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(REMOTE_REGION_BYTES);
        out.extend_from_slice(REMOTE_REGION_MAGIC);
        out.extend_from_slice(&REMOTE_REGION_VERSION.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.owner.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&self.addr.to_le_bytes());
        out.extend_from_slice(&self.key.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Decodes bytes made by [`RemoteRegion::to_bytes`].
    ///
    /// Errors: [`TransportError::Malformed`] for a wrong length, magic, version or
    /// checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, TransportError> {
        let bad = |detail: String| TransportError::Malformed {
            what: "remote key",
            detail,
        };
        if bytes.len() != REMOTE_REGION_BYTES {
            return Err(bad(format!(
                "expected {REMOTE_REGION_BYTES} bytes, got {}",
                bytes.len()
            )));
        }
        if &bytes[0..4] != REMOTE_REGION_MAGIC {
            return Err(bad(format!("bad magic {:02x?}", &bytes[0..4])));
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != REMOTE_REGION_VERSION {
            return Err(bad(format!(
                "version {version}, expected {REMOTE_REGION_VERSION}"
            )));
        }
        let sum = read_u64(bytes, 40);
        let want = fnv1a(&bytes[0..40]);
        if sum != want {
            return Err(bad(format!(
                "checksum {sum:#018x}, expected {want:#018x}"
            )));
        }
        let owner = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        Ok(RemoteRegion {
            owner,
            addr: read_u64(bytes, 16),
            key: read_u64(bytes, 24),
            len: read_u64(bytes, 32),
        })
    }
}

/// One one-sided write: `len` bytes from `local` at `local_offset` to `remote` at
/// `remote_offset` on the peer that owns `remote`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// Identity returned in this write's [`Completion::Write`].
    pub id: WriteId,
    /// Source region on this endpoint.
    pub local: LocalRegion,
    /// Byte offset into `local`.
    pub local_offset: usize,
    /// Bytes to write.
    pub len: usize,
    /// Destination region on the peer.
    pub remote: RemoteRegion,
    /// Byte offset into `remote`.
    pub remote_offset: usize,
    /// 32-bit immediate data; when present, the peer gets a
    /// [`Completion::Immediate`] after all of this write's bytes are placed.
    pub imm: Option<u32>,
}

impl Write {
    /// Checks both byte ranges against their regions.
    ///
    /// Errors: [`TransportError::OutOfBounds`] naming the side.
    pub fn check_bounds(&self) -> Result<(), TransportError> {
        let local_end = self.local_offset.checked_add(self.len);
        if local_end.is_none_or(|end| end > self.local.len()) {
            return Err(TransportError::OutOfBounds {
                side: Side::Local,
                offset: self.local_offset,
                len: self.len,
                region_len: self.local.len(),
            });
        }
        let remote_len = usize::try_from(self.remote.len).unwrap_or(usize::MAX);
        let remote_end = self.remote_offset.checked_add(self.len);
        if remote_end.is_none_or(|end| end > remote_len) {
            return Err(TransportError::OutOfBounds {
                side: Side::Remote,
                offset: self.remote_offset,
                len: self.len,
                region_len: remote_len,
            });
        }
        Ok(())
    }
}

/// An event returned by [`crate::Transport::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// A write this endpoint posted has finished (its local buffer may be reused) or
    /// failed. Exactly one per posted write.
    Write {
        /// The write's identity.
        id: WriteId,
        /// The peer it was posted to.
        peer: Rank,
        /// `Ok` or why it failed.
        result: Result<(), TransportError>,
    },
    /// A peer's write with immediate data has been placed in one of this endpoint's
    /// regions: all of its bytes are visible.
    Immediate {
        /// The writer, when the backend can tell (`None` otherwise).
        peer: Option<Rank>,
        /// The 32-bit immediate.
        imm: u32,
        /// Bytes the write placed, where the backend reports it (0 otherwise: libfabric
        /// `tcp` does not).
        len: usize,
    },
}
