//! `mkernel-proxy`: GPU-driven networking through a host proxy (mKernel paper, "GPU-driven
//! networking"; the design notes (`../shared/DESIGN.md`) section 2, items 3, 5 and 6).
//!
//! **What it owns.**
//! - The 48-byte [`TransferCommand`] and the ring's [`RingControl`] and [`RingView`],
//!   `#[repr(C)]` and mirrored in mkernel-kernels' `src/cuda/comm/ring.cuh` (with the device producer
//!   `ring_push`); the crate's `layout_nvrtc` test asserts both sides agree under NVRTC.
//! - The command [`Ring`] over pluggable [`RingMemory`] (pinned, device-mapped memory
//!   from the facade; [`mkernel_transport::HostBuffer`] in tests): many producers claim
//!   tickets with an atomic add, write the body and publish it with a release store of
//!   a sequence word; one consumer reads with acquire loads and publishes its tail, so
//!   producers apply bounded back-pressure. [`RingProducer`] is the CPU implementation
//!   of the producer protocol.
//! - The proxy ([`ProxyEngine`], run by [`Proxy`] on a named thread): groups ready
//!   commands per connection into batches of up to `max_batch` with a bounded polling
//!   window ([`Clock`] is injectable), posts through [`mkernel_transport::Transport`],
//!   tracks every command to completion, writes completion flags and (immediate
//!   adaptor) arrival flags, stores its first error, sets the abort word producers
//!   poll, and drains or reports in-flight work at shutdown.
//!
//! **What it must not know about.** CUDA APIs, kernels and launches (the facade maps the
//! ring memory and passes a [`RingView`] to kernels built by `mkernel-kernels`), any NIC
//! library (it sees only the `Transport` trait), topology and the bootstrap that
//! exchanges addresses and keys (it receives resolved region tables in
//! [`ProxySetup`]).
//!
//! **Who calls it.** The `mkernel` facade (creates rings in pinned memory, spawns one
//! proxy per GPU or NIC, checks it on every host call), the cross-crate GPU tests, and
//! the `proxy-bench` binary. Kernels include `comm/ring.cuh` from `mkernel-kernels`.

mod clock;
mod command;
mod error;
mod proxy;
mod ring;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use command::{
    AbortCode, CommandKind, RingControl, RingFault, RingView, TransferCommand,
    COMMAND_BYTES, NO_COMPLETION,
};
pub use error::ProxyError;
pub use proxy::{
    ticket_low_bits, PeerTables, Proxy, ProxyConfig, ProxyEngine, ProxySetup, ProxyStats,
    ShutdownReport, StepReport, MAX_BATCH_LIMIT,
};
pub use ring::{
    Ring, RingConsumer, RingLayout, RingMemory, RingProducer, CONTROL_BYTES, MAX_SLOTS,
};
