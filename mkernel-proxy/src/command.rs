//! Host mirrors of the structs in mkernel-kernels' `comm/ring.cuh`: the 48-byte transfer command, the
//! ring's control block and the kernel-side view of a ring.
//!
//! Every struct here is `#[repr(C)]` and field-for-field identical to its C++ twin.
//! `tests/layout_nvrtc.rs` turns the Rust sizes, alignments and offsets into
//! `static_assert`s that NVRTC compiles against the header.

use std::mem::{align_of, offset_of, size_of};

use mkernel_transport::Rank;

/// Bytes of one [`TransferCommand`] (one ring slot).
pub const COMMAND_BYTES: usize = 48;

/// [`TransferCommand::completion`] value meaning "no completion flag for this command".
pub const NO_COMPLETION: u32 = u32::MAX;

/// What a command asks the proxy to do (`CommandKind` in `ring.cuh`).
#[repr(u16)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    /// One-sided write of `length` bytes; no arrival signal at the peer.
    Put = 1,
    /// One-sided write of `length` bytes announced as chunk `chunk` of epoch `epoch` in
    /// the peer's arrival flags, through the completion adaptor the transport calls for
    /// (ordered flag write, or immediate data turned into a flag by the peer's proxy).
    PutSignal = 2,
}

impl CommandKind {
    /// Decodes [`TransferCommand::kind`]; `None` for an unknown code.
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            1 => Some(CommandKind::Put),
            2 => Some(CommandKind::PutSignal),
            _ => None,
        }
    }
}

/// One transfer request, as a producer (a SEND CTA, or a CPU thread in tests) writes it
/// into a ring slot. 48 bytes, 8-byte aligned.
///
/// Regions are indices into tables the proxy was given at setup: `local_region` into
/// its registered local regions, `remote_region` into the regions imported from
/// `peer`. Offsets and `length` are in bytes. `epoch` starts at 1 and is the value the
/// arrival flag (`PutSignal`) and the completion flag (`completion`) take.
///
/// `seq` is the publication word: a producer holding ticket `t` writes every other
/// field, then stores `(t + 1) as u32` with release ordering. Callers of
/// [`crate::RingProducer::push`] leave it 0; the ring sets it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TransferCommand {
    /// Publication word: low 32 bits of (ticket + 1), stored last with release order.
    pub seq: u32,
    /// A [`CommandKind`] code.
    pub kind: u16,
    /// Index of the source region in the proxy's local region table.
    pub local_region: u16,
    /// Destination rank.
    pub peer: u32,
    /// Index of the destination region in the proxy's table for `peer`.
    pub remote_region: u16,
    /// Reserved, 0.
    pub flags: u16,
    /// Byte offset into the local region.
    pub local_offset: u64,
    /// Byte offset into the remote region.
    pub remote_offset: u64,
    /// Bytes to write.
    pub length: u32,
    /// Chunk index in the peer's arrival flags (`PutSignal`); free for `Put`.
    pub chunk: u32,
    /// Epoch of this transfer (>= 1): arrival and completion flags take this value.
    pub epoch: u32,
    /// Index of this command's completion flag in the ring's completion array, or
    /// [`NO_COMPLETION`]. The proxy stores `epoch` there (release) once every write of
    /// the command has completed locally, so the source bytes may be reused.
    pub completion: u32,
}

impl TransferCommand {
    /// A [`CommandKind::Put`] of `length` bytes from local region `local_region` at
    /// `local_offset` to `peer`'s region `remote_region` at `remote_offset`, epoch 1,
    /// no completion flag.
    pub fn put(
        peer: Rank,
        local_region: u16,
        local_offset: u64,
        remote_region: u16,
        remote_offset: u64,
        length: u32,
    ) -> Self {
        TransferCommand {
            seq: 0,
            kind: CommandKind::Put as u16,
            local_region,
            peer,
            remote_region,
            flags: 0,
            local_offset,
            remote_offset,
            length,
            chunk: 0,
            epoch: 1,
            completion: NO_COMPLETION,
        }
    }

    /// Turns the command into a [`CommandKind::PutSignal`] announcing `chunk` of `epoch`.
    pub fn signal(mut self, chunk: u32, epoch: u32) -> Self {
        self.kind = CommandKind::PutSignal as u16;
        self.chunk = chunk;
        self.epoch = epoch;
        self
    }

    /// Sets the epoch (without changing the kind).
    pub fn with_epoch(mut self, epoch: u32) -> Self {
        self.epoch = epoch;
        self
    }

    /// Asks for completion flag `index` to be set to the epoch when the command's
    /// writes have completed.
    pub fn with_completion(mut self, index: u32) -> Self {
        self.completion = index;
        self
    }

    /// The decoded kind, `None` for an unknown code.
    pub fn command_kind(&self) -> Option<CommandKind> {
        CommandKind::from_code(self.kind)
    }
}

/// Why a proxy set the abort word ([`RingControl::abort`], `AbortCode` in `ring.cuh`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortCode {
    /// Running (the word is 0).
    None = 0,
    /// A post or a write failed in the transport.
    Transport = 1,
    /// A command in the ring was malformed (unknown kind, peer, region, bounds).
    BadCommand = 2,
    /// A producer reported a fault (back-pressure timeout) in [`RingControl::fault`].
    ProducerFault = 3,
    /// The host asked for an abort.
    Host = 4,
    /// Shutdown could not drain in-flight commands in time.
    Shutdown = 5,
}

impl AbortCode {
    /// Decodes an abort word; `None` for an unknown code.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => AbortCode::None,
            1 => AbortCode::Transport,
            2 => AbortCode::BadCommand,
            3 => AbortCode::ProducerFault,
            4 => AbortCode::Host,
            5 => AbortCode::Shutdown,
            _ => return None,
        })
    }
}

/// What a producer records when it gives up ([`RingControl::fault`], `RingFault` in
/// `ring.cuh`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingFault {
    /// No fault (the word is 0).
    None = 0,
    /// The ring stayed full past the producer's deadline (the proxy did not advance
    /// its tail).
    RingFull = 1,
    /// The producer saw the abort word while waiting for space.
    Aborted = 2,
}

impl RingFault {
    /// Decodes a fault word; `None` for an unknown code.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => RingFault::None,
            1 => RingFault::RingFull,
            2 => RingFault::Aborted,
            _ => return None,
        })
    }
}

/// Control words of one ring, at byte 0 of the ring memory (192 bytes: three 64-byte
/// lines so producers' claims, the proxy's progress and fault reports do not share a
/// cache line).
///
/// | line | written by | read by |
/// | --- | --- | --- |
/// | `head` | host producers (atomic add) | nobody else (GPU producers claim on a device-memory head) |
/// | `tail`, `completed`, `abort` | the proxy (release) | producers (acquire) |
/// | `fault*` | the first producer that gives up | the proxy |
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingControl {
    /// Claim counter of host producers: the next ticket.
    pub head: u64,
    /// Padding to the next line.
    pub pad0: [u64; 7],
    /// Commands the proxy has consumed (copied out of the ring); slot `tail % slots` is
    /// the next it reads. A producer holding ticket `t` may write once `t < tail + slots`.
    pub tail: u64,
    /// Commands whose writes have all completed.
    pub completed: u64,
    /// An [`AbortCode`]; nonzero once the proxy has failed or was told to stop.
    pub abort: u32,
    /// Number of slots (a power of two), written at initialisation.
    pub slots: u32,
    /// Padding to the next line.
    pub pad1: [u64; 5],
    /// A [`RingFault`] code, stored last (release) by the first producer that gives up.
    pub fault: u32,
    /// Rank of the producer (as the kernel knows it), or `u32::MAX` for host threads.
    pub fault_rank: u32,
    /// Ticket the producer held.
    pub fault_ticket: u64,
    /// Tail it observed last.
    pub fault_tail: u64,
    /// Nanoseconds it waited.
    pub fault_waited_ns: u64,
    /// Padding to 192 bytes.
    pub pad2: [u64; 4],
}

/// Where a kernel finds one ring (`RingView` in `ring.cuh`, a kernel parameter).
/// Addresses are device addresses (host-mapped memory seen from the GPU).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingView {
    /// `slots` commands (host-mapped).
    pub slots: u64,
    /// The [`RingControl`] (host-mapped).
    pub control: u64,
    /// Claim counter: a `u64` in device memory (fast), or `control->head`.
    pub head: u64,
    /// `completions` `u64` completion flags (host-mapped), epoch per index.
    pub completion: u64,
    /// `slots - 1`.
    pub mask: u32,
    /// Number of completion flags.
    pub completions: u32,
    /// Bound on a producer's wait for ring space, in nanoseconds.
    pub timeout_ns: u64,
    /// Rank of the producing GPU (recorded with a fault).
    pub rank: u32,
    /// Reserved, 0.
    pub pad: u32,
}

const _: () = assert!(size_of::<TransferCommand>() == COMMAND_BYTES);
const _: () = assert!(align_of::<TransferCommand>() == 8);
const _: () = assert!(size_of::<RingControl>() == 192);
const _: () = assert!(offset_of!(RingControl, tail) == 64);
const _: () = assert!(offset_of!(RingControl, fault) == 128);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_is_48_bytes_with_seq_first() {
        assert_eq!(size_of::<TransferCommand>(), 48);
        assert_eq!(offset_of!(TransferCommand, seq), 0);
        assert_eq!(offset_of!(TransferCommand, completion), 44);
    }

    #[test]
    fn codes_round_trip() {
        for k in [CommandKind::Put, CommandKind::PutSignal] {
            assert_eq!(CommandKind::from_code(k as u16), Some(k));
        }
        assert_eq!(CommandKind::from_code(0), None);
        for c in 0..6 {
            assert_eq!(AbortCode::from_code(c).map(|a| a as u32), Some(c));
        }
        assert_eq!(AbortCode::from_code(6), None);
        for c in 0..3 {
            assert_eq!(RingFault::from_code(c).map(|a| a as u32), Some(c));
        }
    }
}
