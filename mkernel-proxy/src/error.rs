//! Proxy errors: values, never panics.

use mkernel_transport::{Rank, TransportError};

use crate::command::{AbortCode, RingFault};

/// Everything the ring, a producer or a proxy can report.
///
/// `Clone` because a proxy stores its first error and returns it from every later host
/// call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    /// An argument broke a documented rule.
    #[error("invalid argument {arg}: {rule}")]
    InvalidArgument {
        /// Name of the argument.
        arg: &'static str,
        /// The rule that was broken, with the value seen.
        rule: String,
    },
    /// A producer waited longer than its timeout for ring space.
    #[error(
        "ring full: producer holding ticket {ticket} waited {waited_ms} ms for space; \
         proxy tail {tail}, {slots} slots (the proxy is stalled or too slow)"
    )]
    RingFull {
        /// The ticket the producer claimed (its slot was never published).
        ticket: u64,
        /// The proxy's tail as last observed.
        tail: u64,
        /// Ring size.
        slots: u32,
        /// How long the producer waited.
        waited_ms: u64,
    },
    /// A producer found the abort word set.
    #[error("ring aborted by its proxy ({code:?})")]
    Aborted {
        /// The abort word's reason.
        code: AbortCode,
    },
    /// A producer (GPU or host) recorded a fault in the ring's control block.
    #[error(
        "producer fault {fault:?} from rank {rank}: ticket {ticket}, observed tail {tail}, \
         waited {waited_ns} ns"
    )]
    ProducerFault {
        /// What the producer reported.
        fault: RingFault,
        /// The producer's rank (`u32::MAX` for a host thread).
        rank: u32,
        /// Ticket it held.
        ticket: u64,
        /// Tail it last observed.
        tail: u64,
        /// Nanoseconds it waited.
        waited_ns: u64,
    },
    /// A command in the ring cannot be carried out.
    #[error("bad command at ticket {ticket} (peer {peer}, chunk {chunk}): {detail}")]
    BadCommand {
        /// Ticket of the command.
        ticket: u64,
        /// Its destination.
        peer: Rank,
        /// Its chunk field.
        chunk: u32,
        /// What is wrong with it.
        detail: String,
    },
    /// Posting a batch failed.
    #[error("posting {writes} writes of {commands} commands to peer {peer} failed: {source}")]
    Post {
        /// Destination.
        peer: Rank,
        /// Commands in the batch.
        commands: usize,
        /// Writes in the call.
        writes: usize,
        /// The transport's error.
        source: TransportError,
    },
    /// A posted write completed with an error.
    #[error(
        "write of ticket {ticket} to peer {peer} (chunk {chunk}, epoch {epoch}) failed: {source}"
    )]
    WriteFailed {
        /// Ticket of the command.
        ticket: u64,
        /// Destination.
        peer: Rank,
        /// Chunk field of the command.
        chunk: u32,
        /// Epoch of the command.
        epoch: u32,
        /// The transport's error.
        source: TransportError,
    },
    /// Any other transport error (polling, setup, adaptor).
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    /// The proxy was stopped with commands it could not finish.
    #[error(
        "shutdown incomplete after {waited_ms} ms: consumed {consumed}, completed {completed}, \
         {in_flight} commands in flight, {unposted} not posted, {unpublished} tickets claimed \
         but never published"
    )]
    ShutdownIncomplete {
        /// Commands consumed from the ring.
        consumed: u64,
        /// Commands completed.
        completed: u64,
        /// Commands posted and not completed.
        in_flight: usize,
        /// Commands consumed but never posted.
        unposted: usize,
        /// Host-producer tickets claimed but not published (0 when the head lives on the GPU).
        unpublished: u64,
        /// How long the drain lasted.
        waited_ms: u64,
    },
    /// A bounded host wait reached its deadline.
    #[error("timed out after {waited_ms} ms waiting for {what}")]
    Timeout {
        /// What was waited for, with expected and observed values.
        what: String,
        /// How long the wait lasted.
        waited_ms: u64,
    },
    /// The proxy thread could not be started or ended abnormally.
    #[error("proxy thread {name}: {detail}")]
    Thread {
        /// The thread's name.
        name: String,
        /// What happened.
        detail: String,
    },
}

pub(crate) fn invalid(arg: &'static str, rule: impl Into<String>) -> ProxyError {
    ProxyError::InvalidArgument {
        arg,
        rule: rule.into(),
    }
}
