//! The trait a NIC backend implements.

use crate::error::TransportError;
use crate::memory::HostBuffer;
use crate::types::{Capabilities, Completion, LocalRegion, Rank, RemoteRegion, Write};

/// One endpoint of a one-sided RDMA transport, owned by one rank.
///
/// Life cycle: create the endpoint (backend-specific), publish [`Transport::address`]
/// through the bootstrap, [`Transport::add_peer`] every peer's address, register
/// memory and publish [`Transport::remote_key`] bytes, [`Transport::import_remote`] the
/// peers' keys, then [`Transport::post_writes`] and [`Transport::poll`].
///
/// Completion contract: every write accepted by `post_writes` yields exactly one
/// [`Completion::Write`] from `poll` (success or failure); a write rejected by
/// `post_writes` yields none. Backends with manual progress (libfabric `tcp`, `shm`)
/// only move data while someone calls `poll`, on the sender *and* on the receiver.
///
/// No method panics or blocks without a bound; errors are [`TransportError`] values.
pub trait Transport {
    /// This endpoint's rank.
    fn rank(&self) -> Rank;

    /// What the backend guarantees; see [`Capabilities`].
    fn capabilities(&self) -> &Capabilities;

    /// This endpoint's address as opaque bytes for the bootstrap to carry to peers.
    fn address(&self) -> Vec<u8>;

    /// Makes `peer` reachable at `address` (bytes from the peer's
    /// [`Transport::address`]).
    ///
    /// Errors: [`TransportError::Malformed`] when the bytes are not an address of this
    /// backend; [`TransportError::InvalidArgument`] when `peer` is this rank or was
    /// already added.
    fn add_peer(&mut self, peer: Rank, address: &[u8]) -> Result<(), TransportError>;

    /// Registers host memory for local reads and remote writes. The transport keeps a
    /// clone of `buffer` until [`Transport::deregister`] or drop.
    fn register_host(&mut self, buffer: &HostBuffer) -> Result<LocalRegion, TransportError>;

    /// Registers `len` bytes of device memory at device address `ptr` on device
    /// ordinal `device`.
    ///
    /// Backends that report [`Capabilities::device_memory`] `false` return
    /// [`TransportError::Unsupported`] (the default).
    ///
    /// # Safety
    /// `ptr..ptr + len` must be a live device allocation that outlives the
    /// registration.
    unsafe fn register_device(
        &mut self,
        ptr: u64,
        len: usize,
        device: i32,
    ) -> Result<LocalRegion, TransportError> {
        let _ = (ptr, device);
        Err(TransportError::Unsupported {
            what: format!(
                "device memory registration ({len} bytes) on {}",
                self.capabilities().name
            ),
        })
    }

    /// Releases a registration. Writes in flight from or into it must have completed.
    fn deregister(&mut self, region: LocalRegion) -> Result<(), TransportError>;

    /// The bytes a peer needs to write into `region` (decoded by
    /// [`Transport::import_remote`] on the peer; see [`RemoteRegion::to_bytes`]).
    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError>;

    /// Accepts `peer`'s key bytes for one of its regions.
    ///
    /// Errors: [`TransportError::Malformed`] for undecodable bytes,
    /// [`TransportError::UnknownPeer`], [`TransportError::KeyMismatch`] when the key
    /// was registered by a different rank than `peer`.
    fn import_remote(&mut self, peer: Rank, key: &[u8]) -> Result<RemoteRegion, TransportError>;

    /// Posts up to [`Capabilities::max_batch`] writes to `peer` in one call.
    ///
    /// The whole batch is validated before anything is posted, so a validation error
    /// posts nothing: [`TransportError::BatchTooLarge`], [`TransportError::UnknownPeer`],
    /// [`TransportError::KeyMismatch`] (remote region not owned by `peer` or not
    /// imported), [`TransportError::OutOfBounds`], [`TransportError::WriteTooLarge`],
    /// [`TransportError::UnknownRegion`], [`TransportError::PeerGone`].
    /// [`TransportError::QueueFull`] says how many of the batch were posted.
    fn post_writes(&mut self, peer: Rank, writes: &[Write]) -> Result<(), TransportError>;

    /// Drives progress and appends up to `max` completions to `out`; returns how many
    /// were appended. Never blocks.
    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError>;

    /// Writes posted by this endpoint that have not completed yet.
    fn in_flight(&self) -> usize;
}

/// A boxed transport (for example `Box<dyn Transport + Send>`) is a transport: every
/// method forwards to the box's contents.
impl<T: Transport + ?Sized> Transport for Box<T> {
    fn rank(&self) -> Rank {
        (**self).rank()
    }

    fn capabilities(&self) -> &Capabilities {
        (**self).capabilities()
    }

    fn address(&self) -> Vec<u8> {
        (**self).address()
    }

    fn add_peer(&mut self, peer: Rank, address: &[u8]) -> Result<(), TransportError> {
        (**self).add_peer(peer, address)
    }

    fn register_host(&mut self, buffer: &HostBuffer) -> Result<LocalRegion, TransportError> {
        (**self).register_host(buffer)
    }

    unsafe fn register_device(
        &mut self,
        ptr: u64,
        len: usize,
        device: i32,
    ) -> Result<LocalRegion, TransportError> {
        // SAFETY: the caller upholds `register_device`'s contract, which is forwarded
        // unchanged.
        unsafe { (**self).register_device(ptr, len, device) }
    }

    fn deregister(&mut self, region: LocalRegion) -> Result<(), TransportError> {
        (**self).deregister(region)
    }

    fn remote_key(&self, region: &LocalRegion) -> Result<Vec<u8>, TransportError> {
        (**self).remote_key(region)
    }

    fn import_remote(&mut self, peer: Rank, key: &[u8]) -> Result<RemoteRegion, TransportError> {
        (**self).import_remote(peer, key)
    }

    fn post_writes(&mut self, peer: Rank, writes: &[Write]) -> Result<(), TransportError> {
        (**self).post_writes(peer, writes)
    }

    fn poll(&mut self, out: &mut Vec<Completion>, max: usize) -> Result<usize, TransportError> {
        (**self).poll(out, max)
    }

    fn in_flight(&self) -> usize {
        (**self).in_flight()
    }
}

/// Validation every backend runs on a batch before posting any of it (see
/// [`Transport::post_writes`] for the errors). `imported` says whether a remote region
/// was accepted by `import_remote`; `local_known` whether a local region is registered.
pub fn check_batch(
    caps: &Capabilities,
    peer: Rank,
    writes: &[Write],
    imported: impl Fn(&RemoteRegion) -> bool,
    local_known: impl Fn(&LocalRegion) -> bool,
) -> Result<(), TransportError> {
    if writes.len() > caps.max_batch {
        return Err(TransportError::BatchTooLarge {
            len: writes.len(),
            max: caps.max_batch,
        });
    }
    for w in writes {
        if w.remote.owner != peer {
            return Err(TransportError::KeyMismatch {
                peer,
                detail: format!(
                    "write {:?} targets a region registered by rank {}",
                    w.id, w.remote.owner
                ),
            });
        }
        if !imported(&w.remote) {
            return Err(TransportError::KeyMismatch {
                peer,
                detail: format!(
                    "write {:?}: key {:#x} at addr {:#x} (len {}) was not imported from this peer",
                    w.id, w.remote.key, w.remote.addr, w.remote.len
                ),
            });
        }
        if !local_known(&w.local) {
            return Err(TransportError::UnknownRegion {
                region: w.local.id(),
            });
        }
        if w.len > caps.max_write_bytes {
            return Err(TransportError::WriteTooLarge {
                len: w.len,
                max: caps.max_write_bytes,
            });
        }
        if w.imm.is_some() && !caps.immediate_data {
            return Err(TransportError::CapabilityMissing {
                what: format!("write {:?} carries immediate data; {} has none", w.id, caps.name),
            });
        }
        w.check_bounds()?;
    }
    Ok(())
}
