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
    Driver {
        /// The driver API entry point, e.g. `cuMemAlloc`.
        call: &'static str,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },
    /// A device allocation failed (most often: out of GPU memory); names what was being
    /// allocated, for which rank, and its size.
    #[error("allocating {what} ({}) failed: {source}", allocation_size(*bytes))]
    Allocation {
        /// What was being allocated, with the config value that sized it.
        what: String,
        /// The size asked for, in bytes.
        bytes: u64,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },
    /// Another rank of [`crate::Communicator::from_env`] failed a step of the setup (most
    /// often: it could not allocate its symmetric workspace) and told every rank in the
    /// bootstrap exchange: no rank builds a communicator, and none waits for that rank. The
    /// rank that failed returns its own error instead (e.g. [`Error::Allocation`]).
    #[error("rank {rank}: rank {peer} could not {step}, so no rank builds a communicator: {reason}{}", also_failed(others))]
    PeerSetup {
        /// The rank reporting it.
        rank: u32,
        /// The (first) rank that failed.
        peer: u32,
        /// What it could not do, e.g. "set up its symmetric workspace".
        step: &'static str,
        /// That rank's error, as its message (cut to 2 KiB).
        reason: String,
        /// Other ranks that failed the same step (each returns its own error).
        others: Vec<u32>,
    },
    /// cuBLAS (baselines and references).
    #[error("cuBLAS call {call} failed: {detail}")]
    Cublas {
        /// The cuBLAS entry point.
        call: &'static str,
        /// cuBLAS's status, in words.
        detail: String,
    },
    /// NCCL (baselines).
    #[error("NCCL call {call} failed: {detail}")]
    Nccl {
        /// The NCCL entry point.
        call: &'static str,
        /// NCCL's result, in words.
        detail: String,
    },
    /// An argument broke a rule; the message names the argument and the rule.
    #[error("invalid argument `{arg}`: {rule}")]
    InvalidArgument {
        /// The argument (or config field) that broke the rule.
        arg: &'static str,
        /// The rule, with the value that broke it.
        rule: String,
    },
    /// Two local GPUs cannot reach each other's memory.
    #[error("GPU {from} cannot access GPU {to} peer-to-peer (cuDeviceCanAccessPeer = 0); the fused kernels need NVLink/PCIe P2P between all local ranks")]
    NoPeerAccess {
        /// Device ordinal that cannot map `to`'s memory.
        from: usize,
        /// Device ordinal whose memory is out of reach.
        to: usize,
    },
    /// A device-side wait gave up: the peer's flag never showed this call's epoch.
    #[error("rank {rank} timed out after {waited:?} waiting for rank {peer}: {what} ({tile}, epoch {epoch}, expected flag {expected}, observed {observed}); is rank {peer} running the same call?")]
    PeerTimeout {
        /// The rank whose kernel gave up.
        rank: u32,
        /// The rank it waited for.
        peer: u32,
        /// What it waited for (a peer's tile, a reduced slice, a peer's exit).
        what: &'static str,
        /// Which tile or chunk: "tile 5" (an output tile), "chunk 3" (an all-gather's chunk
        /// of the peer's rows), or "no tile" when the wait was for neither.
        tile: String,
        /// The call's epoch.
        epoch: u32,
        /// The flag value waited for (the epoch).
        expected: u32,
        /// The flag value last seen.
        observed: u32,
        /// How long the device waited.
        waited: Duration,
    },
    /// A kernel found bad input in device memory (an MoE dispatch's expert ids, or more
    /// routed tokens than a receive buffer holds) and went on without it: the call's
    /// outputs are not a result. The communicator stays usable.
    #[error("rank {rank}: bad device-side input in the call of epoch {epoch}: {detail}")]
    DeviceInput {
        /// The rank whose kernel found it.
        rank: u32,
        /// The call's epoch.
        epoch: u32,
        /// What was wrong, with the values.
        detail: String,
    },
    /// A host-side wait on GPU work expired.
    #[error("rank {rank}: {what} did not finish within {waited:?}")]
    HostTimeout {
        /// The rank whose host call waited.
        rank: u32,
        /// What it waited for.
        what: String,
        /// How long it waited.
        waited: Duration,
    },
    /// A [`crate::HostGate`] was not opened within its timeout: its stream went on, so
    /// the work behind it did not run back to back (benchmark timings are invalid).
    #[error("a host gate on GPU {gpu} was not opened within {timeout:?} (gate {at}); the work behind it ran as the host enqueued it")]
    GateTimeout {
        /// Device ordinal of the gate's stream.
        gpu: usize,
        /// The gate's number.
        at: u32,
        /// How long it held its stream.
        timeout: Duration,
    },
    /// The host proxy of an inter-node stream failed (its first error, or a setup step).
    #[error("rank {rank}: host proxy: {source}")]
    Proxy {
        /// The rank whose proxy failed.
        rank: u32,
        /// The proxy's error.
        source: mkernel_proxy::ProxyError,
    },
    /// The transport (NIC library) refused a setup step of an inter-node stream.
    #[error("rank {rank}: transport {step} failed: {source}")]
    Transport {
        /// The rank whose transport failed.
        rank: u32,
        /// The setup step (registration, connection, ...).
        step: &'static str,
        /// The transport's error.
        source: mkernel_transport::TransportError,
    },
    /// A device-side wait of an inter-node stream gave up (see `internode`).
    #[error("rank {rank} timed out after {waited:?} waiting for rank {peer}: {what} (chunk {chunk}, epoch {epoch}, expected >= {expected}, observed {observed}, CTA {cta}); is rank {peer} running the same epoch, and are both proxies alive?")]
    StreamTimeout {
        /// The rank whose kernel gave up.
        rank: u32,
        /// The rank it streams with.
        peer: u32,
        /// What it waited for (ring space, a send's completion, an arrival, a credit).
        what: &'static str,
        /// The chunk index (or "-").
        chunk: String,
        /// The stream's epoch.
        epoch: u32,
        /// The value waited for.
        expected: u64,
        /// The value last seen.
        observed: u64,
        /// The CTA that gave up.
        cta: u32,
        /// How long the device waited.
        waited: Duration,
    },
    /// Bytes an inter-node stream received differ from the sender's pattern.
    #[error("rank {rank}, epoch {epoch}: {mismatched_bytes} bytes received from rank {peer} differ from its pattern (first at byte {first_bad}); {chunks_verified} of {chunks} chunks verified, {ahead} arrival flags ahead of the epoch")]
    StreamMismatch {
        /// The receiving rank.
        rank: u32,
        /// The sending rank.
        peer: u32,
        /// The stream's epoch.
        epoch: u32,
        /// Bytes that differ from the expected pattern.
        mismatched_bytes: u64,
        /// Offset of the first differing byte.
        first_bad: u64,
        /// Chunks the RECV CTAs verified.
        chunks_verified: u64,
        /// Chunks of the epoch.
        chunks: u32,
        /// Arrival flags already at a later epoch (a sender running ahead).
        ahead: u64,
    },
    /// An earlier call failed; the communicator refuses further work.
    #[error("communicator rank {rank} is unusable after an earlier failure: {first}")]
    Poisoned {
        /// The communicator's rank.
        rank: u32,
        /// The first failure.
        first: String,
    },
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

/// How [`Error::Allocation`] states a size: "B bytes, G.GG GiB of GPU memory".
fn allocation_size(bytes: u64) -> String {
    format!("{bytes} bytes, {:.2} GiB of GPU memory", bytes as f64 / (1u64 << 30) as f64)
}

/// How [`Error::PeerSetup`] names the other ranks that failed: "" when none.
fn also_failed(others: &[u32]) -> String {
    match others {
        [] => String::new(),
        [q] => format!(" (rank {q} failed too)"),
        _ => format!(" (ranks {} failed too)", others.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
    }
}

pub(crate) fn invalid(arg: &'static str, rule: impl Into<String>) -> Error {
    Error::InvalidArgument { arg, rule: rule.into() }
}

/// Checks a call's buffers: each (argument, its length, the elements it must hold, its shape
/// in words) must hold at least that many elements, else the first that does not is named.
pub(crate) fn check_lengths(buffers: &[(&'static str, usize, usize, &str)]) -> Result<()> {
    for &(arg, len, want, what) in buffers {
        if len < want {
            return Err(invalid(arg, format!("must hold {what} = {want} elements, got {len}")));
        }
    }
    Ok(())
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

    #[test]
    fn peer_setup_names_the_rank_that_failed_and_the_others() {
        let e = |others: Vec<u32>| {
            Error::PeerSetup { rank: 0, peer: 1, step: "set up its symmetric workspace", reason: "out of memory".into(), others }.to_string()
        };
        assert_eq!(e(vec![]), "rank 0: rank 1 could not set up its symmetric workspace, so no rank builds a communicator: out of memory");
        assert!(e(vec![3]).ends_with("out of memory (rank 3 failed too)"));
        assert!(e(vec![2, 3]).ends_with("out of memory (ranks 2, 3 failed too)"));
    }

    #[test]
    fn allocation_sizes_in_bytes_and_gib() {
        // (the driver's error, the rest of `Error::Allocation`'s message, needs a driver to print)
        assert_eq!(allocation_size(65536 * 2097152 * 2), "274877906944 bytes, 256.00 GiB of GPU memory");
        assert_eq!(allocation_size(3 << 29), "1610612736 bytes, 1.50 GiB of GPU memory");
    }
}
