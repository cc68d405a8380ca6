//! `mkernel-transport`: the contract between mkernel's host proxy and a network
//! interface backend, and the completion semantics built on top of it.
//!
//! **What it owns.**
//! - The [`Transport`] trait a NIC backend implements: memory registration
//!   ([`HostBuffer`] always; device memory only where [`Capabilities::device_memory`]
//!   says so), endpoint addresses and remote keys exchanged as opaque bytes (the
//!   bootstrap carries them), one-sided [`Write`]s of `(local region, offset, len)` to
//!   `(peer, remote region, offset)` with an optional 32-bit immediate, batched posting
//!   of up to [`Capabilities::max_batch`] writes per connection per call, and completion
//!   polling with per-write identity ([`WriteId`]).
//! - The per-connection ordering a backend guarantees, reported as a capability
//!   ([`Ordering`]) and never assumed.
//! - The two completion-semantics adaptors of the mKernel paper (section "completion
//!   semantics adaptor"), in [`adaptor`]: *ordered flag* (data write, then an arrival
//!   flag write on the same connection; needs an ordered transport) and *immediate
//!   completion* (data write carrying the chunk id and epoch as immediate data; the
//!   receiver's progress engine publishes the arrival flag on the remote completion).
//!   Both keep one invariant: the arrival flag of chunk `c` for epoch `e` becomes
//!   visible only after all of chunk `c`'s bytes are. Flags hold the epoch, so they
//!   need no reset between iterations.
//! - A deterministic, seeded, in-memory transport ([`sim`]) that delays, reorders,
//!   splits writes into pieces and fails peers, used by the property tests here and by
//!   any crate that wants to test a proxy without a NIC.
//! - Bounded waiting ([`wait`]): every wait has a deadline and reports what it waited
//!   for.
//!
//! **What it must not know about.** CUDA, GPUs, kernels, topology, the proxy's command
//! ring, and any particular NIC library (libfabric, libibverbs): those live in the
//! backend crates, which depend on this crate, never the other way round. Today that is
//! `mkernel-transport-efa` (libfabric: the `efa` provider, and on InfiniBand the
//! `verbs;ofi_rxm` one); a native libibverbs backend (`mkernel-transport-ibverbs`) is
//! not built.
//!
//! **Who calls it.** `mkernel-proxy` (posts the writes the GPU asks for and runs the
//! receive-side progress engine), the backend crates (implement [`Transport`]), and
//! tests across the workspace (through [`sim`]).

pub mod adaptor;
mod error;
mod memory;
pub mod sim;
mod transport;
mod types;
pub mod wait;

pub use error::{Side, TransportError};
pub use memory::HostBuffer;
pub use transport::{check_batch, Transport};
pub use types::{
    Capabilities, Completion, LocalRegion, Ordering, Rank, RemoteRegion, Write, WriteId,
    REMOTE_REGION_BYTES,
};

/// Result alias used across this crate and its backends.
pub type Result<T, E = TransportError> = std::result::Result<T, E>;
