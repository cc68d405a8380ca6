//! Errors of the kernel catalog.

use std::path::PathBuf;

/// Errors from compiling, loading or launching a catalog kernel.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The NVRTC shared library could not be loaded.
    #[error("NVRTC (libnvrtc.so.13) was not found; put the CUDA 13 library directory (e.g. /usr/local/cuda/lib64, or the nvidia-cuda-nvrtc wheel's nvidia/cu13/lib) on LD_LIBRARY_PATH")]
    NvrtcMissing,
    /// The CUDA driver library could not be loaded (no GPU driver on this machine).
    #[error("the CUDA driver (libcuda.so.1) was not found: no NVIDIA driver on this machine; the kernels need a Hopper GPU (sm_90a) and its driver (on a machine without one, `cargo test --workspace` runs the CPU tests)")]
    DriverMissing,
    /// NVRTC rejected the generated source.
    #[error("NVRTC failed to compile kernel `{kernel}`:\n{log}")]
    Compile {
        /// Kernel name.
        kernel: String,
        /// NVRTC's log.
        log: String,
    },
    /// A kernel asked for CUDA toolkit headers and none were found.
    #[error("CUDA headers (cuda.h) not found; looked in: {}", .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    HeadersNotFound {
        /// Folders searched.
        searched: Vec<PathBuf>,
    },
    /// A `#include "..."` in the embedded device code names no embedded header.
    #[error("device source `{from}` includes `{name}`, which is not an embedded header")]
    MissingHeader {
        /// The including source.
        from: String,
        /// The missing header.
        name: String,
    },
    /// Reading or writing the JIT cache failed.
    #[error("JIT cache: cannot write {path}: {source}")]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An NVRTC call failed.
    #[error("NVRTC call {call} failed: {detail}")]
    Nvrtc {
        /// The NVRTC entry point.
        call: &'static str,
        /// NVRTC's result, in words.
        detail: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver call {call} failed: {source}")]
    Driver {
        /// The driver API entry point.
        call: &'static str,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },
    /// An argument broke a rule of the operator; the message names argument and rule.
    #[error("invalid argument `{arg}`: {rule}")]
    InvalidArgument {
        /// The argument that broke the rule.
        arg: &'static str,
        /// The rule, with the value that broke it.
        rule: String,
    },
    /// The device cannot run this kernel.
    #[error("unsupported device: {0}")]
    Unsupported(String),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds the driver call's name to a [`cudarc::driver::DriverError`].
pub(crate) trait DriverContext<T> {
    fn call(self, call: &'static str) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn call(self, call: &'static str) -> Result<T> {
        self.map_err(|source| Error::Driver { call, source })
    }
}

/// Builds an [`Error::InvalidArgument`].
pub(crate) fn invalid(arg: &'static str, rule: impl Into<String>) -> Error {
    Error::InvalidArgument { arg, rule: rule.into() }
}
