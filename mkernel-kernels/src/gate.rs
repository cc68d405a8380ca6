//! Host gate (`src/cuda/ops/gate.cuh`): a one-thread kernel that holds its stream until
//! a host-mapped u32 reaches a value, so the work enqueued behind it runs back to back
//! however slowly the host enqueues it (nvbench's "blocking kernel"). Benchmarks hold
//! each timed round this way.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime};
use crate::error::{invalid, Result};
use crate::jit::KernelSource;
use crate::params::GateParams;

/// Name of the gate kernel.
pub const KERNEL_NAME: &str = "mkernel_host_gate";

/// Source of the gate kernel.
pub fn source() -> Result<KernelSource> {
    KernelSource::single_call(KERNEL_NAME, "ops/gate.cuh", "GateParams", "host_gate")
}

/// Enqueues a gate on `stream` that waits until the u32 at device address `flag` reaches
/// `at` (`(i32)(flag - at) >= 0`), polling with 0.5 us sleeps; after `timeout` it stores
/// `at` into the u32 at `timed_out` and ends. Both addresses are device views of
/// host-mapped memory the host writes and reads with volatile accesses.
///
/// Errors: a null address; driver errors.
///
/// # Safety
/// `flag` and `timed_out` must be device addresses of live host-mapped u32s in
/// `stream`'s context, valid until the kernel ends.
pub unsafe fn launch(rt: &Runtime, stream: &Arc<CudaStream>, flag: u64, timed_out: u64, at: u32, timeout: Duration) -> Result<()> {
    if flag == 0 || timed_out == 0 {
        return Err(invalid("flag", "the gate's flag and timed_out words must be device addresses, not null"));
    }
    let p = GateParams { flag, timed_out, timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64, at, pad0: 0 };
    let f = rt.function_named(stream.context(), KERNEL_NAME, source)?;
    driver::launch(&f, LaunchDims { grid: 1, block: 32, smem_bytes: 0 }, stream, &p)
}
