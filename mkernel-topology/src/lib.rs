//! Where every rank sits, and how the ranks first find each other.
//!
//! # What this crate owns
//! - The rank/node layout of a job: rank, world size, local rank, ranks per node,
//!   node rank ([`launch::LaunchEnv`]).
//! - Reading that layout from the launcher's environment (`torchrun`, or an `srun`
//!   wrapper that exports the same variables). This is the only place in mkernel that
//!   reads `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`, `MASTER_ADDR` and
//!   `MASTER_PORT`.
//! - The out-of-band bootstrap ([`bootstrap::Bootstrap`]): a TCP rendezvous through
//!   rank 0 with bounded, collective `all_gather` / `barrier` / `broadcast` of byte
//!   blobs, used to exchange memory handles, NIC addresses and GPU identities before
//!   any fast transport exists.
//! - Later: GPU and NIC discovery (which GPU a local rank drives, which NIC rails sit
//!   next to it).
//!
//! # What it must not know about
//! Kernels, JIT, symmetric buffers, RDMA transports or their backends. Blobs passed
//! through the bootstrap are opaque bytes here; their meaning belongs to the caller.
//!
//! # Who calls it
//! The `mkernel` facade's `Communicator`: it builds a [`launch::LaunchEnv`] (from the
//! environment or from explicit arguments), opens a [`bootstrap::Bootstrap`], and uses
//! it to exchange the handles the transports and kernels need.

pub mod bootstrap;
mod error;
pub mod launch;

pub use bootstrap::{Bootstrap, Op, OpKind};
pub use error::{Error, Result};
pub use launch::{loopback_port_pair, LaunchEnv};
