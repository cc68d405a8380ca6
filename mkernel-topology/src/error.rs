//! The crate's error type. The facade's `Error` wraps it.

use std::io;
use std::time::Duration;

use crate::bootstrap::Op;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading the launcher environment or running the
/// bootstrap. Every variant names the variable, argument, operation or peer rank involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A launcher variable is not set.
    #[error(
        "launcher environment: {var} is not set (torchrun sets it; an srun wrapper must export \
         RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT)"
    )]
    EnvMissing {
        /// Name of the variable, e.g. `"LOCAL_RANK"`.
        var: &'static str,
    },

    /// A launcher variable is set but breaks a rule (not an integer, out of range,
    /// inconsistent with another variable).
    #[error("launcher environment: {var}={value:?}: {rule}")]
    EnvInvalid {
        /// Name of the variable.
        var: &'static str,
        /// Its value as read (or as stored in the [`LaunchEnv`](crate::LaunchEnv)).
        value: String,
        /// The rule it breaks.
        rule: String,
    },

    /// An argument of a public function breaks a rule; nothing was sent on the wire.
    #[error("{arg}: {rule}")]
    InvalidArgument {
        /// Name of the argument.
        arg: &'static str,
        /// The rule it breaks, with the value received.
        rule: String,
    },

    /// `MASTER_ADDR` could not be resolved to a socket address.
    #[error("bootstrap rendezvous: cannot resolve master address {addr}: {source}")]
    Resolve {
        /// `host:port` as given.
        addr: String,
        /// Resolver error.
        #[source]
        source: io::Error,
    },

    /// Rank 0 could not bind or accept on the master address.
    #[error("bootstrap rendezvous: rank 0 cannot listen on {addr}: {source}{hint}")]
    Listen {
        /// `host:port` rank 0 tried to listen on.
        addr: String,
        /// The socket error.
        #[source]
        source: io::Error,
        /// Extra advice for common causes (empty when none applies).
        hint: &'static str,
    },

    /// A rank other than 0 could not connect to rank 0 before the deadline.
    #[error(
        "bootstrap rendezvous: rank {rank} could not connect to rank 0 at {addr} within {}: \
         {source} (is rank 0 running, and MASTER_ADDR/MASTER_PORT the same on every rank?)",
        fmt_secs(*.after)
    )]
    Connect {
        /// The rank that tried to connect.
        rank: usize,
        /// `host:port` of rank 0.
        addr: String,
        /// The timeout that expired.
        after: Duration,
        /// The last connection error seen.
        #[source]
        source: io::Error,
    },

    /// Rank 0 waited `after` for ranks that never arrived at `op`.
    #[error(
        "bootstrap {op}: timed out after {} waiting for ranks {missing:?} ({} {arrived:?})",
        fmt_secs(*.after),
        if matches!(.op.kind, crate::OpKind::Rendezvous) { "connected:" } else { "arrived:" }
    )]
    Timeout {
        /// The operation that timed out.
        op: Op,
        /// The timeout that expired.
        after: Duration,
        /// Ranks whose contribution never (fully) arrived.
        missing: Vec<usize>,
        /// Ranks that did arrive (connected, for the rendezvous), rank 0 included.
        arrived: Vec<usize>,
    },

    /// A rank other than 0 got no answer from rank 0 (the hub of the star) in time.
    /// Rank 0's own error, when it has one, names the ranks that are missing.
    #[error(
        "bootstrap {op}: rank {rank} timed out after {} waiting for rank 0 (rank 0 is the \
         bootstrap hub; its error names the ranks that did not arrive)",
        fmt_secs(*.after)
    )]
    HubTimeout {
        /// The operation that timed out.
        op: Op,
        /// The rank that waited.
        rank: usize,
        /// How long it waited.
        after: Duration,
    },

    /// A peer closed its connection (its process exited or crashed) during `op`.
    #[error("bootstrap {op}: rank {peer} closed its connection (did that process exit or crash?)")]
    PeerClosed {
        /// The operation in progress.
        op: Op,
        /// The rank whose connection closed.
        peer: usize,
    },

    /// Ranks disagree: different collectives or sequence numbers (a collective called
    /// on some ranks only), different broadcast roots, world sizes or protocol versions.
    #[error("bootstrap {op}: {detail}")]
    Mismatch {
        /// The operation this rank was running.
        op: Op,
        /// The rank that disagrees with this one.
        peer: usize,
        /// What differs.
        detail: String,
    },

    /// A peer sent bytes that are not a valid frame at this point of the protocol.
    #[error("bootstrap {op}: malformed frame from rank {peer}: {detail}")]
    Protocol {
        /// The operation in progress.
        op: Op,
        /// The rank that sent the frame.
        peer: usize,
        /// What is wrong with it.
        detail: String,
    },

    /// Another rank failed and told this one; `reason` is that rank's own error.
    #[error("bootstrap {op}: aborted by rank {by}: {reason}")]
    Aborted {
        /// The operation this rank was running.
        op: Op,
        /// The rank that aborted.
        by: usize,
        /// The error message of the rank that aborted.
        reason: String,
    },

    /// An I/O error other than a closed connection or a timeout.
    #[error("bootstrap {op}: I/O error on the connection to rank {peer}: {source}")]
    Io {
        /// The operation in progress.
        op: Op,
        /// The rank at the other end of the connection.
        peer: usize,
        /// The socket error.
        #[source]
        source: io::Error,
    },

    /// An earlier bootstrap operation failed, so the connections are in an unknown state.
    #[error("bootstrap {op}: not attempted, the bootstrap failed earlier: {first}")]
    Poisoned {
        /// The operation that was refused.
        op: Op,
        /// The first error, as text.
        first: String,
    },

    /// A thread created by [`Bootstrap::new_local`](crate::Bootstrap::new_local) panicked.
    #[error("bootstrap rendezvous: the thread of local rank {rank} panicked")]
    LocalThreadPanicked {
        /// The rank that thread was creating.
        rank: usize,
    },
}

/// Formats a duration in seconds without noise: `5 s`, `0.25 s`.
pub(crate) fn fmt_secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}
