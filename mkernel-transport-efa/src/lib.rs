//! `mkernel-transport-efa`: the libfabric backend of [`mkernel_transport::Transport`].
//!
//! **What it owns.** One libfabric reliable-datagram (`FI_EP_RDM`) endpoint per rank:
//! fabric, domain, completion queue, address vector, memory registrations, one-sided
//! writes posted with `fi_writemsg` (with `FI_REMOTE_CQ_DATA` for immediates and
//! `FI_MORE` across a batch) and completion polling with per-write identity. The
//! provider is chosen at run time ([`FabricConfig::provider`]): `efa` on AWS (the
//! default), `tcp` (`tcp;ofi_rxm`) and `shm` on any Linux box, `verbs;ofi_rxm` where
//! an RDMA device exists. Ordering and immediate-data support are read from what the
//! provider reports (`tx_attr.msg_order` with `FI_ORDER_RMA_WAW` and an unbounded
//! `max_order_waw_size`, `domain_attr.cq_data_size`), never assumed from its name.
//!
//! **What it must not know about.** GPUs, kernels, the proxy's command ring, chunk and
//! epoch layouts (those live in `mkernel-transport`'s adaptors) and the bootstrap that
//! carries addresses and keys between ranks.
//!
//! **Who calls it.** `mkernel-proxy` and the facade (through the `Transport` trait),
//! this crate's loopback tests and the `transport-bench` benchmark binary.
//!
//! Bindings are generated at build time by bindgen from the system's
//! `<rdma/fabric.h>` (Debian `libfabric-dev`, 1.17); the `static inline` calls are
//! compiled into a C shim. Progress is manual on `tcp` and `shm`: data moves only while
//! both sides call [`Transport::poll`].
//!
//! Device memory: the capability flag reports whether the provider offers `FI_HMEM`
//! when [`FabricConfig::hmem`] asks for it; registering device memory itself is not
//! implemented yet (returns [`TransportError::Unsupported`]). EFA and verbs have not
//! been run (no such NIC on the development machines).

#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all
)]
mod ffi {
    include!(concat!(env!("OUT_DIR"), "/fabric.rs"));
}

mod endpoint;

pub use endpoint::{libfabric_version, provider_available, FabricConfig, FabricEndpoint};
pub use mkernel_transport::{Transport, TransportError};
