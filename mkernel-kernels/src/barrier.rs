//! Device-side barrier of the ranks of one node (`src/cuda/ops/barrier.cuh`): the work
//! enqueued after it on each rank's stream starts only once every rank's stream has
//! reached it, without synchronising any host thread. Benchmarks put one before every
//! timed kernel so that each starts with the ranks aligned (bench/NOTES.md 11).

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime};
use crate::error::{invalid, Result};
use crate::gemm_allreduce::RankBuffers;
use crate::jit::KernelSource;
use crate::params::{BarrierParams, MAX_RANKS};

/// Name of the barrier kernel.
pub const KERNEL_NAME: &str = "mkernel_rank_barrier";

/// Source of the barrier kernel.
pub fn source() -> Result<KernelSource> {
    KernelSource::single_call(KERNEL_NAME, "ops/barrier.cuh", "BarrierParams", "rank_barrier")
}

/// Enqueues barrier number `epoch` of this rank on `stream`: one CTA of 32 threads that
/// stores `epoch` into this rank's slot of every peer's barrier flags
/// ([`crate::gemm_allreduce::WorkspaceLayout::barrier_offset`]) and waits, bounded by
/// `timeout`, until every peer's slot in its own flags has reached `epoch`. Every rank
/// must enqueue the same epochs in the same order; epoch 0 is refused (the flags start
/// at 0). A peer that does not arrive within `timeout` leaves a `KernelStatus` with
/// [`crate::params::WaitOp::PeerBarrier`] in `bufs.status`, and the kernel ends.
///
/// # Safety
/// `bufs` must describe this rank's live workspaces (every peer's mapped in `stream`'s
/// context) and status word.
pub unsafe fn launch(rt: &Runtime, stream: &Arc<CudaStream>, bufs: &RankBuffers, epoch: u32, timeout: Duration) -> Result<()> {
    if epoch == 0 {
        return Err(invalid("epoch", "must not be 0 (the barrier flags start at 0)"));
    }
    if bufs.world == 0 || bufs.world as usize > MAX_RANKS || bufs.rank >= bufs.world {
        return Err(invalid("rank", format!("rank {} of world {} is not a rank of 1..={MAX_RANKS} ranks", bufs.rank, bufs.world)));
    }
    let mut p = BarrierParams {
        control: bufs.workspace[bufs.rank as usize] + bufs.layout.control_offset(),
        status: bufs.status,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
        rank: bufs.rank,
        world: bufs.world,
        epoch,
        ..Default::default()
    };
    for q in 0..bufs.world as usize {
        p.flags[q] = bufs.workspace[q] + bufs.layout.barrier_offset();
    }
    // By name: benchmarks enqueue one before every timed step, and building the source
    // (include expansion) each time would cost the host more than the launch.
    let f = rt.function_named(stream.context(), KERNEL_NAME, source)?;
    driver::launch(&f, LaunchDims { grid: 1, block: 32, smem_bytes: 0 }, stream, &p)
}
