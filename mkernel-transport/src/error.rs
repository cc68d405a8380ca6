//! Transport errors: values, never panics.

use crate::types::Rank;

/// Which end of a write an out-of-bounds error refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The registered region the bytes are read from, on the posting rank.
    Local,
    /// The registered region the bytes are written to, on the peer.
    Remote,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Side::Local => f.write_str("local"),
            Side::Remote => f.write_str("remote"),
        }
    }
}

/// Everything a transport, an adaptor or a bounded wait can report.
///
/// `Clone` so that a per-write failure can be carried inside a [`crate::Completion`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// A write, key import or address lookup named a peer this endpoint has no address for.
    #[error("unknown peer: rank {peer} was never added to this endpoint")]
    UnknownPeer {
        /// The rank that was named.
        peer: Rank,
    },
    /// A remote key does not belong to the peer it is used with, was not imported, or
    /// was rejected by the peer.
    #[error("remote key mismatch for peer {peer}: {detail}")]
    KeyMismatch {
        /// The peer the key was used with.
        peer: Rank,
        /// Which check failed.
        detail: String,
    },
    /// `offset + len` exceeds the length of a registered region.
    #[error("write out of bounds of the {side} region: offset {offset} + len {len} > region length {region_len}")]
    OutOfBounds {
        /// Local (source) or remote (destination) region.
        side: Side,
        /// Byte offset into the region.
        offset: usize,
        /// Bytes to write.
        len: usize,
        /// Registered length of the region in bytes.
        region_len: usize,
    },
    /// The peer process or its connection is gone; writes to it cannot complete.
    #[error("peer {peer} gone: {detail}")]
    PeerGone {
        /// The rank that is gone.
        peer: Rank,
        /// What reported it (provider message, simulated failure, ...).
        detail: String,
    },
    /// The send queue has no room. The first `posted` writes of the batch were posted
    /// and will complete; the rest were not posted.
    #[error("queue full towards peer {peer}: {posted} of the batch posted, {in_flight} writes in flight, capacity {capacity}")]
    QueueFull {
        /// Destination of the batch.
        peer: Rank,
        /// Writes of this batch that were posted before the queue filled.
        posted: usize,
        /// Writes in flight on this endpoint when the post was refused.
        in_flight: usize,
        /// The endpoint's capacity in in-flight writes.
        capacity: usize,
    },
    /// A batch holds more writes than [`crate::Capabilities::max_batch`].
    #[error("batch too large: {len} writes, at most {max} per connection per call")]
    BatchTooLarge {
        /// Writes in the batch.
        len: usize,
        /// The backend's maximum.
        max: usize,
    },
    /// A single write is larger than the backend can post as one operation.
    #[error("write too large: {len} bytes, at most {max} per write")]
    WriteTooLarge {
        /// Bytes requested.
        len: usize,
        /// The backend's maximum.
        max: usize,
    },
    /// Bytes received as a remote key or an endpoint address do not decode.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// `"remote key"` or `"endpoint address"`.
        what: &'static str,
        /// What is wrong with the bytes.
        detail: String,
    },
    /// A local region handle that this endpoint did not register (or has deregistered).
    #[error("unknown local region {region}")]
    UnknownRegion {
        /// The handle's id.
        region: u64,
    },
    /// An argument broke a documented rule.
    #[error("invalid argument {arg}: {rule}")]
    InvalidArgument {
        /// Name of the argument.
        arg: &'static str,
        /// The rule that was broken, with the value seen.
        rule: String,
    },
    /// The adaptor needs a capability the transport does not report.
    #[error("capability missing: {what}")]
    CapabilityMissing {
        /// What was needed and what the transport reported.
        what: String,
    },
    /// The backend does not implement this operation.
    #[error("unsupported: {what}")]
    Unsupported {
        /// The operation.
        what: String,
    },
    /// A bounded wait reached its deadline.
    #[error("timed out after {waited_ms} ms waiting for {what}")]
    Timeout {
        /// What was waited for, with the expected and observed values.
        what: String,
        /// How long the wait lasted.
        waited_ms: u64,
    },
    /// A call into the backend library failed in a way not covered above.
    #[error("backend call {call} failed with code {code}: {message}")]
    Backend {
        /// The library function.
        call: &'static str,
        /// Its return code.
        code: i64,
        /// The library's description of the code.
        message: String,
    },
}
