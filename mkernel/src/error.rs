//! The facade's error type: wraps the crates' errors and adds the communicator's own.

use std::time::Duration;

/// Every error an mkernel call can return.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Kernel compilation, loading or launching (argument rules of the kernels arrive as
    /// [`Error::InvalidArgument`]).
    #[error(transparent)]
    Kernels(mkernel_kernels::Error),
    /// Launcher environment or bootstrap rendezvous.
    #[error(transparent)]
    Topology(#[from] mkernel_topology::Error),
    /// A CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {source}")]
    Driver { call: &'static str, source: cudarc::driver::DriverError },
    /// cuBLAS (baselines and references).
    #[error("cuBLAS call {call} failed: {detail}")]
    Cublas { call: &'static str, detail: String },
    /// NCCL (baselines).
    #[error("NCCL call {call} failed: {detail}")]
    Nccl { call: &'static str, detail: String },
    /// An argument broke a rule; the message names the argument and the rule.
    #[error("invalid argument `{arg}`: {rule}")]
    InvalidArgument { arg: &'static str, rule: String },
    /// Two local GPUs cannot reach each other's memory.
    #[error("GPU {from} cannot access GPU {to} peer-to-peer (cuDeviceCanAccessPeer = 0); the fused kernels need NVLink/PCIe P2P between all local ranks")]
    NoPeerAccess { from: usize, to: usize },
    /// A device-side wait gave up: the peer's flag never reached the expected epoch.
    #[error("rank {rank} timed out after {waited:?} waiting for rank {peer}: {what} (tile {tile}, epoch {epoch}, expected flag >= {expected}, observed {observed}); is rank {peer} running the same call?")]
    PeerTimeout {
        rank: u32,
        peer: u32,
        what: &'static str,
        tile: String,
        epoch: u32,
        expected: u32,
        observed: u32,
        waited: Duration,
    },
    /// A host-side wait on GPU work expired.
    #[error("rank {rank}: {what} did not finish within {waited:?}")]
    HostTimeout { rank: u32, what: String, waited: Duration },
    /// The host proxy of an inter-node stream failed (its first error, or a setup step).
    #[error("rank {rank}: host proxy: {source}")]
    Proxy { rank: u32, source: mkernel_proxy::ProxyError },
    /// The transport (NIC library) refused a setup step of an inter-node stream.
    #[error("rank {rank}: transport {step} failed: {source}")]
    Transport { rank: u32, step: &'static str, source: mkernel_transport::TransportError },
    /// A device-side wait of an inter-node stream gave up (see `internode`).
    #[error("rank {rank} timed out after {waited:?} waiting for rank {peer}: {what} (chunk {chunk}, epoch {epoch}, expected >= {expected}, observed {observed}, CTA {cta}); is rank {peer} running the same epoch, and are both proxies alive?")]
    StreamTimeout {
        rank: u32,
        peer: u32,
        what: &'static str,
        chunk: String,
        epoch: u32,
        expected: u64,
        observed: u64,
        cta: u32,
        waited: Duration,
    },
    /// Bytes an inter-node stream received differ from the sender's pattern.
    #[error("rank {rank}, epoch {epoch}: {mismatched_bytes} bytes received from rank {peer} differ from its pattern (first at byte {first_bad}); {chunks_verified} of {chunks} chunks verified, {ahead} arrival flags ahead of the epoch")]
    StreamMismatch {
        rank: u32,
        peer: u32,
        epoch: u32,
        mismatched_bytes: u64,
        first_bad: u64,
        chunks_verified: u64,
        chunks: u32,
        ahead: u64,
    },
    /// An earlier call failed; the communicator refuses further work.
    #[error("communicator rank {rank} is unusable after an earlier failure: {first}")]
    Poisoned { rank: u32, first: String },
}

impl From<mkernel_kernels::Error> for Error {
    fn from(e: mkernel_kernels::Error) -> Self {
        match e {
            mkernel_kernels::Error::InvalidArgument { arg, rule } => Error::InvalidArgument { arg, rule },
            other => Error::Kernels(other),
        }
    }
}

/// Result alias of the facade.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) trait DriverContext<T> {
    fn call(self, call: &'static str) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn call(self, call: &'static str) -> Result<T> {
        self.map_err(|source| Error::Driver { call, source })
    }
}

pub(crate) fn invalid(arg: &'static str, rule: impl Into<String>) -> Error {
    Error::InvalidArgument { arg, rule: rule.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_argument_errors_become_facade_argument_errors() {
        let e: Error = mkernel_kernels::Error::InvalidArgument { arg: "k", rule: "K must be a multiple of 8".into() }.into();
        assert!(matches!(e, Error::InvalidArgument { arg: "k", .. }), "{e:?}");
        let e: Error = mkernel_kernels::Error::NvrtcMissing.into();
        assert!(matches!(e, Error::Kernels(mkernel_kernels::Error::NvrtcMissing)), "{e:?}");
    }
}
