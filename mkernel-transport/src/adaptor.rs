//! Completion-semantics adaptors: how a receiver learns that chunk `c` of epoch `e`
//! has *landed* (never merely "was submitted").
//!
//! Source: mKernel paper, section "Completion semantics adaptor" (restated in
//! the design notes (`../shared/DESIGN.md`) section 2, item 6).
//!
//! ```text
//!  ordered flag (Ordering::Ordered, e.g. InfiniBand RC, libfabric tcp)
//!    sender:   post [ data(c) -> peer.data[off..off+len] , flag(c) := e -> peer.flags[c] ]
//!    wire:     data(c) bytes ......... then flag(c)    (same connection, placed in order)
//!    receiver: poll flags[c] >= e  ==> all of data(c) is visible
//!
//!  immediate completion (Capabilities::immediate_data, e.g. EFA SRD, libfabric shm)
//!    sender:   post  data(c) with imm = (e mod 2^k) << chunk_bits | c
//!    wire:     data(c) pieces in any order; remote completion after the last piece
//!    receiver: progress engine: on Completion::Immediate(imm) -> flags[c] := e (release)
//! ```
//!
//! Arrival flags are one `u64` per chunk holding the epoch of the chunk's last arrival;
//! epochs start at 1 (0 means "never arrived") and grow by one per iteration, so flags
//! never need a reset. The ordered-flag adaptor refuses an unordered transport at
//! construction ([`TransportError::CapabilityMissing`]); the property tests show the
//! invariant breaks when that check is bypassed.

use std::time::Duration;

use crate::error::TransportError;
use crate::memory::HostBuffer;
use crate::transport::Transport;
use crate::types::{Completion, LocalRegion, Ordering, Rank, RemoteRegion, Write, WriteId};
use crate::wait::{wait_until, Deadline};

/// Bytes per arrival flag.
pub const FLAG_BYTES: usize = 8;

/// Which adaptor a transport's capabilities call for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionMode {
    /// Data write then flag write on the same connection; needs [`Ordering::Ordered`].
    OrderedFlag,
    /// Data write with immediate data; the receiver's progress engine sets the flag.
    Immediate,
}

impl CompletionMode {
    /// Picks the adaptor for `caps`: ordered flag on an ordered transport (no receiver
    /// progress engine needed), otherwise immediate completion.
    ///
    /// Errors: [`TransportError::CapabilityMissing`] when the transport is unordered and
    /// has no immediate data.
    pub fn select(caps: &crate::Capabilities) -> Result<Self, TransportError> {
        match (caps.ordering, caps.immediate_data) {
            (Ordering::Ordered, _) => Ok(CompletionMode::OrderedFlag),
            (Ordering::Unordered, true) => Ok(CompletionMode::Immediate),
            (Ordering::Unordered, false) => Err(TransportError::CapabilityMissing {
                what: format!(
                    "{} is unordered and has no immediate data: no completion adaptor can prove arrival",
                    caps.name
                ),
            }),
        }
    }

    /// Checks that `caps` can carry this mode.
    ///
    /// Errors: [`TransportError::CapabilityMissing`] naming the missing capability.
    pub fn check(self, caps: &crate::Capabilities) -> Result<(), TransportError> {
        match self {
            CompletionMode::OrderedFlag if caps.ordering != Ordering::Ordered => {
                Err(TransportError::CapabilityMissing {
                    what: format!(
                        "ordered-flag adaptor needs Ordering::Ordered; {} reports {:?} \
                         (a flag could land before its data)",
                        caps.name, caps.ordering
                    ),
                })
            }
            CompletionMode::Immediate if !caps.immediate_data => {
                Err(TransportError::CapabilityMissing {
                    what: format!(
                        "immediate-completion adaptor needs immediate data; {} has none",
                        caps.name
                    ),
                })
            }
            _ => Ok(()),
        }
    }
}

/// A rank's arrival flags: `chunks` consecutive `u64` words in `buffer` starting at
/// byte `offset` (a multiple of 8). Flag `c` holds the epoch of chunk `c`'s last
/// arrival.
#[derive(Debug, Clone)]
pub struct ArrivalFlags {
    buffer: HostBuffer,
    offset: usize,
    chunks: u32,
}

impl ArrivalFlags {
    /// Views `chunks` flags at `offset` in `buffer`.
    ///
    /// Errors: [`TransportError::InvalidArgument`] when `offset` is not 8-aligned or the
    /// flags do not fit in the buffer.
    pub fn new(buffer: HostBuffer, offset: usize, chunks: u32) -> Result<Self, TransportError> {
        let bytes = (chunks as usize).saturating_mul(FLAG_BYTES);
        if !offset.is_multiple_of(FLAG_BYTES) || offset.saturating_add(bytes) > buffer.len() {
            return Err(TransportError::InvalidArgument {
                arg: "offset",
                rule: format!(
                    "{chunks} flags at byte {offset} must be 8-aligned and fit in {} bytes",
                    buffer.len()
                ),
            });
        }
        Ok(ArrivalFlags {
            buffer,
            offset,
            chunks,
        })
    }

    /// Number of chunks.
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// Byte offset of chunk `chunk`'s flag in the buffer.
    pub fn flag_offset(&self, chunk: u32) -> Result<usize, TransportError> {
        if chunk >= self.chunks {
            return Err(TransportError::InvalidArgument {
                arg: "chunk",
                rule: format!("chunk {chunk} >= {} chunks", self.chunks),
            });
        }
        Ok(self.offset + chunk as usize * FLAG_BYTES)
    }

    /// Epoch of chunk `chunk`'s last arrival (0: never), read with acquire ordering.
    pub fn epoch(&self, chunk: u32) -> Result<u64, TransportError> {
        self.buffer.load_u64_acquire(self.flag_offset(chunk)?)
    }

    /// `true` once chunk `chunk` has arrived for `epoch` (or a later epoch).
    pub fn arrived(&self, chunk: u32, epoch: u64) -> Result<bool, TransportError> {
        Ok(self.epoch(chunk)? >= epoch)
    }

    /// Publishes chunk `chunk`'s arrival for `epoch` with release ordering; a flag never
    /// moves backwards.
    pub fn publish(&self, chunk: u32, epoch: u64) -> Result<(), TransportError> {
        let at = self.flag_offset(chunk)?;
        if self.buffer.load_u64_acquire(at)? < epoch {
            self.buffer.store_u64_release(at, epoch)?;
        }
        Ok(())
    }

    /// Waits until chunk `chunk` has arrived for `epoch`, calling `progress` between
    /// checks (backends with manual progress need it).
    ///
    /// Errors: [`TransportError::Timeout`] naming rank, chunk, expected and observed
    /// epoch; any error from `progress`.
    pub fn wait_arrived(
        &self,
        rank: Rank,
        chunk: u32,
        epoch: u64,
        timeout: Duration,
        mut progress: impl FnMut() -> Result<(), TransportError>,
    ) -> Result<(), TransportError> {
        let deadline = Deadline::after(timeout);
        wait_until(
            &deadline,
            || {
                format!(
                    "arrival flag: rank {rank} chunk {chunk} expected epoch >= {epoch}, observed {}",
                    self.epoch(chunk).map_or_else(|e| e.to_string(), |v| v.to_string())
                )
            },
            || {
                if self.arrived(chunk, epoch)? {
                    return Ok(true);
                }
                progress()?;
                self.arrived(chunk, epoch)
            },
        )
    }
}

/// How a 32-bit immediate carries (chunk, epoch): the low `chunk_bits` bits are the
/// chunk, the remaining high bits are the epoch modulo `2^(32 - chunk_bits)`. The
/// receiver recovers the full epoch by serial-number arithmetic (RFC 1982) against the
/// epoch it expects, so sender and receiver may be up to half the epoch window apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImmLayout {
    chunk_bits: u32,
}

impl Default for ImmLayout {
    /// 20 chunk bits (1,048,576 chunks), 12 epoch bits.
    fn default() -> Self {
        ImmLayout { chunk_bits: 20 }
    }
}

impl ImmLayout {
    /// Errors: [`TransportError::InvalidArgument`] unless `1 <= chunk_bits <= 30`.
    pub fn new(chunk_bits: u32) -> Result<Self, TransportError> {
        if !(1..=30).contains(&chunk_bits) {
            return Err(TransportError::InvalidArgument {
                arg: "chunk_bits",
                rule: format!("must be in 1..=30, got {chunk_bits}"),
            });
        }
        Ok(ImmLayout { chunk_bits })
    }

    fn epoch_bits(self) -> u32 {
        32 - self.chunk_bits
    }

    /// Packs `chunk` and `epoch` into an immediate.
    ///
    /// Errors: [`TransportError::InvalidArgument`] for `epoch == 0` or a chunk that does
    /// not fit in `chunk_bits`.
    pub fn encode(self, chunk: u32, epoch: u64) -> Result<u32, TransportError> {
        if epoch == 0 {
            return Err(TransportError::InvalidArgument {
                arg: "epoch",
                rule: "epochs start at 1 (0 means never arrived)".into(),
            });
        }
        if u64::from(chunk) >> self.chunk_bits != 0 {
            return Err(TransportError::InvalidArgument {
                arg: "chunk",
                rule: format!("chunk {chunk} does not fit in {} bits", self.chunk_bits),
            });
        }
        let epoch_mask = (1u64 << self.epoch_bits()) - 1;
        let low = u32::try_from(epoch & epoch_mask).unwrap_or(0);
        Ok((low << self.chunk_bits) | chunk)
    }

    /// Unpacks an immediate into (chunk, full epoch), taking the epoch nearest to
    /// `expected_epoch` whose low bits match.
    pub fn decode(self, imm: u32, expected_epoch: u64) -> (u32, u64) {
        let chunk = imm & ((1u32 << self.chunk_bits) - 1);
        let bits = self.epoch_bits();
        let window = 1u64 << bits;
        let low = u64::from(imm >> self.chunk_bits);
        let diff = low.wrapping_sub(expected_epoch) & (window - 1);
        let epoch = if diff < window / 2 {
            expected_epoch.wrapping_add(diff)
        } else {
            expected_epoch.saturating_sub(window - diff)
        };
        (chunk, epoch)
    }
}

/// One chunk to send: `len` bytes of `local` at `local_offset` to the peer's data
/// region at `remote_offset`, announced as chunk `chunk` of the peer's arrival flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkWrite {
    /// Identity of the data write (must be below [`WriteId::FLAG_BIT`]); an ordered-flag
    /// write gets `id | FLAG_BIT`.
    pub id: WriteId,
    /// Chunk index in the receiver's arrival flags.
    pub chunk: u32,
    /// Source region.
    pub local: LocalRegion,
    /// Byte offset into `local`.
    pub local_offset: usize,
    /// Bytes in the chunk.
    pub len: usize,
    /// Receiver's data region.
    pub remote: RemoteRegion,
    /// Byte offset into `remote`.
    pub remote_offset: usize,
}

/// Where a peer's arrival flags live: `chunks` flags at byte `offset` of `region`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteFlags {
    /// The peer's registered flag region.
    pub region: RemoteRegion,
    /// Byte offset of chunk 0's flag.
    pub offset: usize,
    /// Number of chunks.
    pub chunks: u32,
}

/// Number of epochs whose flag values the ordered-flag sender keeps staged; a flag
/// write must complete within this many epochs of being posted.
pub const STAGED_EPOCHS: usize = 64;

/// Sender side of a completion adaptor. Build it with [`ChunkSender::new`] from the
/// mode [`CompletionMode::select`] returned.
#[derive(Debug)]
pub struct ChunkSender {
    mode: CompletionMode,
    layout: ImmLayout,
    staging: Option<(HostBuffer, LocalRegion)>,
}

impl ChunkSender {
    /// Builds the sender for `mode` on `transport`, registering a small staging buffer
    /// for flag values in ordered-flag mode.
    ///
    /// Errors: [`TransportError::CapabilityMissing`] when the transport cannot carry
    /// `mode` (the ordered-flag adaptor on an unordered transport is refused here).
    pub fn new<T: Transport + ?Sized>(
        transport: &mut T,
        mode: CompletionMode,
        layout: ImmLayout,
    ) -> Result<Self, TransportError> {
        mode.check(transport.capabilities())?;
        Self::new_unchecked(transport, mode, layout)
    }

    /// As [`ChunkSender::new`] without the capability check.
    ///
    /// Exists so tests can demonstrate that pairing the ordered-flag adaptor with an
    /// unordered transport breaks the arrival invariant. Never use it elsewhere.
    #[doc(hidden)]
    pub fn new_unchecked<T: Transport + ?Sized>(
        transport: &mut T,
        mode: CompletionMode,
        layout: ImmLayout,
    ) -> Result<Self, TransportError> {
        let staging = match mode {
            CompletionMode::OrderedFlag => {
                let buf = HostBuffer::new(STAGED_EPOCHS * FLAG_BYTES)?;
                let region = transport.register_host(&buf)?;
                Some((buf, region))
            }
            CompletionMode::Immediate => None,
        };
        Ok(ChunkSender {
            mode,
            layout,
            staging,
        })
    }

    /// The adaptor in use.
    pub fn mode(&self) -> CompletionMode {
        self.mode
    }

    /// Writes that announce `chunk` for `epoch` (one with immediate data, or data then
    /// flag), appended to `out`.
    ///
    /// Errors: [`TransportError::InvalidArgument`] for an id using bit 63, epoch 0, or a
    /// chunk outside `flags`; [`TransportError::KeyMismatch`] when the data and flag
    /// regions belong to different ranks.
    pub fn chunk_writes(
        &self,
        flags: &RemoteFlags,
        chunk: &ChunkWrite,
        epoch: u64,
        out: &mut Vec<Write>,
    ) -> Result<(), TransportError> {
        if chunk.id.0 & WriteId::FLAG_BIT != 0 {
            return Err(TransportError::InvalidArgument {
                arg: "chunk.id",
                rule: format!("bit 63 is reserved for flag writes, got {:#x}", chunk.id.0),
            });
        }
        if chunk.chunk >= flags.chunks {
            return Err(TransportError::InvalidArgument {
                arg: "chunk.chunk",
                rule: format!("chunk {} >= {} flags at the peer", chunk.chunk, flags.chunks),
            });
        }
        if flags.region.owner != chunk.remote.owner {
            return Err(TransportError::KeyMismatch {
                peer: chunk.remote.owner,
                detail: format!(
                    "flag region belongs to rank {}, data region to rank {}",
                    flags.region.owner, chunk.remote.owner
                ),
            });
        }
        let mut data = Write {
            id: chunk.id,
            local: chunk.local,
            local_offset: chunk.local_offset,
            len: chunk.len,
            remote: chunk.remote,
            remote_offset: chunk.remote_offset,
            imm: None,
        };
        match (self.mode, &self.staging) {
            (CompletionMode::Immediate, _) => {
                data.imm = Some(self.layout.encode(chunk.chunk, epoch)?);
                out.push(data);
            }
            (CompletionMode::OrderedFlag, Some((buf, region))) => {
                if epoch == 0 {
                    return Err(TransportError::InvalidArgument {
                        arg: "epoch",
                        rule: "epochs start at 1 (0 means never arrived)".into(),
                    });
                }
                let slot = (epoch % STAGED_EPOCHS as u64) as usize * FLAG_BYTES;
                buf.store_u64_release(slot, epoch)?;
                out.push(data);
                out.push(Write {
                    id: WriteId(chunk.id.0 | WriteId::FLAG_BIT),
                    local: *region,
                    local_offset: slot,
                    len: FLAG_BYTES,
                    remote: flags.region,
                    remote_offset: flags.offset + chunk.chunk as usize * FLAG_BYTES,
                    imm: None,
                });
            }
            (CompletionMode::OrderedFlag, None) => {
                return Err(TransportError::InvalidArgument {
                    arg: "self",
                    rule: "ordered-flag sender has no staging buffer".into(),
                })
            }
        }
        Ok(())
    }

    /// Posts `chunks` for `epoch` to the owner of `flags`, in batches of at most the
    /// transport's `max_batch` writes (a chunk's data and flag writes may span two
    /// batches; ordering is per connection, not per batch). Returns the ids posted.
    ///
    /// When the queue fills, polls `transport` (handing completions to `on_completion`)
    /// until there is room or `timeout` passes.
    ///
    /// Errors: as [`ChunkSender::chunk_writes`] and [`Transport::post_writes`];
    /// [`TransportError::Timeout`] when the queue stays full.
    pub fn send<T: Transport + ?Sized>(
        &self,
        transport: &mut T,
        flags: &RemoteFlags,
        chunks: &[ChunkWrite],
        epoch: u64,
        timeout: Duration,
        mut on_completion: impl FnMut(Completion),
    ) -> Result<Vec<WriteId>, TransportError> {
        let mut writes = Vec::with_capacity(chunks.len() * 2);
        for c in chunks {
            self.chunk_writes(flags, c, epoch, &mut writes)?;
        }
        let peer = flags.region.owner;
        let max_batch = transport.capabilities().max_batch.max(1);
        let deadline = Deadline::after(timeout);
        let mut next = 0;
        let mut polled = Vec::new();
        while next < writes.len() {
            let end = (next + max_batch).min(writes.len());
            match transport.post_writes(peer, &writes[next..end]) {
                Ok(()) => next = end,
                Err(TransportError::QueueFull { posted, .. }) => {
                    next += posted;
                    if deadline.expired() {
                        return Err(deadline.timeout(format!(
                            "send queue room towards peer {peer}: {next} of {} writes posted, \
                             {} in flight",
                            writes.len(),
                            transport.in_flight()
                        )));
                    }
                    polled.clear();
                    transport.poll(&mut polled, 64)?;
                    for c in polled.drain(..) {
                        on_completion(c);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(writes.iter().map(|w| w.id).collect())
    }
}

/// Receiver side: the arrival flags plus, in immediate mode, the progress engine that
/// turns remote completions into flag stores.
#[derive(Debug, Clone)]
pub struct ArrivalReceiver {
    mode: CompletionMode,
    layout: ImmLayout,
    flags: ArrivalFlags,
    expected_epoch: u64,
}

impl ArrivalReceiver {
    /// Receiver for `mode` publishing into `flags`.
    pub fn new(mode: CompletionMode, layout: ImmLayout, flags: ArrivalFlags) -> Self {
        ArrivalReceiver {
            mode,
            layout,
            flags,
            expected_epoch: 1,
        }
    }

    /// The flags this receiver publishes into (ordered mode: the peer writes them).
    pub fn flags(&self) -> &ArrivalFlags {
        &self.flags
    }

    /// Sets the epoch used to recover full epochs from immediates (call at the start of
    /// each iteration).
    pub fn set_expected_epoch(&mut self, epoch: u64) {
        self.expected_epoch = epoch;
    }

    /// Handles one completion: in immediate mode an [`Completion::Immediate`] publishes
    /// its chunk's flag and returns `Ok(None)`; anything else is handed back.
    ///
    /// Errors: [`TransportError::InvalidArgument`] for an immediate naming a chunk
    /// outside the flags (malformed or foreign immediate).
    pub fn absorb(&self, completion: Completion) -> Result<Option<Completion>, TransportError> {
        match (self.mode, completion) {
            (CompletionMode::Immediate, Completion::Immediate { imm, peer, len }) => {
                let (chunk, epoch) = self.layout.decode(imm, self.expected_epoch);
                if chunk >= self.flags.chunks() {
                    return Err(TransportError::InvalidArgument {
                        arg: "imm",
                        rule: format!(
                            "immediate {imm:#010x} from peer {peer:?} ({len} bytes) names chunk \
                             {chunk} >= {} chunks",
                            self.flags.chunks()
                        ),
                    });
                }
                self.flags.publish(chunk, epoch)?;
                Ok(None)
            }
            (_, other) => Ok(Some(other)),
        }
    }

    /// Polls `transport` once, publishing arrivals; other completions go to `others`.
    /// Returns the number of completions polled.
    pub fn progress<T: Transport + ?Sized>(
        &self,
        transport: &mut T,
        others: &mut Vec<Completion>,
    ) -> Result<usize, TransportError> {
        let mut polled = Vec::new();
        let n = transport.poll(&mut polled, 64)?;
        for c in polled {
            if let Some(other) = self.absorb(c)? {
                others.push(other);
            }
        }
        Ok(n)
    }

    /// Waits for chunk `chunk` of `epoch`, driving [`ArrivalReceiver::progress`].
    ///
    /// Errors: [`TransportError::Timeout`] naming rank, chunk and epochs; transport
    /// errors.
    pub fn wait_arrived<T: Transport + ?Sized>(
        &self,
        transport: &mut T,
        chunk: u32,
        epoch: u64,
        timeout: Duration,
        others: &mut Vec<Completion>,
    ) -> Result<(), TransportError> {
        let rank = transport.rank();
        self.flags.wait_arrived(rank, chunk, epoch, timeout, || {
            self.progress(transport, others).map(|_| ())
        })
    }
}
