//! mkernel: multi-GPU fused kernels for tensor-, expert- and sequence-parallel LLM
//! layers. One persistent CUDA kernel per GPU computes tiles and moves them over
//! NVLink while later tiles are still being computed.
//!
//! This facade owns the public API: [`gemm`] on one GPU, [`Communicator`] for the
//! ranks of a node (one process driving all local GPUs, or one process per GPU
//! launched by torchrun/srun/mpirun), and its fused operators
//! ([`Communicator::gemm_allreduce`], [`Communicator::gemm_reduce_scatter`], [`Communicator::allgather_gemm`],
//! [`Communicator::moe_dispatch_gemm`], [`Communicator::moe_gemm_combine`], [`Communicator::ring_attention`]; [`attention`] on one GPU), and [`internode`]: GPU-driven streaming to a rank on
//! another node through the host proxy. It also ships the baselines (cuBLAS, NCCL) and
//! the numerical checks the benchmark binary `mkernel` and the tests use. What a call
//! would run (tile, split, path, SM partition) can be asked without a GPU:
//! [`plan_gemm`], [`plan_gemm_allreduce`], [`plan_gemm_reduce_scatter`], [`plan_allgather_gemm`],
//! [`plan_moe_dispatch_gemm`], [`plan_moe_gemm_combine`], [`plan_ring_attention`] (`mkernel plan` prints each per shape).
//!
//! Conventions: bf16 data as [`half::bf16`] in `cudarc` device buffers; row-major
//! matrices; `b` operands are [N, K] (K contiguous, the `nn.Linear` weight layout).
//! Calls are stream-ordered and return once the work is enqueued; a wait the device gave up
//! (a peer that never arrived) is returned by [`Communicator::synchronize`] and by the next
//! call; bad input found on the device (an MoE dispatch's expert ids) by `synchronize` only.

#![warn(missing_docs)]

mod allgather_gemm;
pub mod baseline;
pub mod check;
mod comm;
mod error;
mod gemm;
mod gemm_allreduce;
mod gemm_reduce_scatter;
mod host_gate;
mod host_mapped;
mod moe_dispatch_gemm;
mod moe_gemm_combine;
mod ring_attention;
pub mod internode;
pub mod trace;

pub use allgather_gemm::{plan_allgather_gemm, AllGatherGemmOptions};
pub use comm::{CommConfig, Communicator};
pub use mkernel_kernels::allgather_gemm::AllGatherConfig;
pub use error::{Error, Result};
pub use gemm::{gemm, gemm_with_workspace, plan_gemm, release_gemm_workspaces, GemmOptions, GemmRun, GemmWorkspace, CACHED_WORKSPACES};
pub use gemm_allreduce::{plan_gemm_allreduce, GemmAllReduceOptions, PlanContext, MAX_PLAN_GRID};
pub use gemm_reduce_scatter::plan_gemm_reduce_scatter;
pub use host_gate::HostGate;
pub use mkernel_kernels::moe_dispatch_gemm::{workspace_elems_needed as moe_workspace_elems_needed, MoeDispatchConfig, MoeShape};
pub use moe_dispatch_gemm::{layout_words as moe_layout_words, plan_moe_dispatch_gemm, MoeDispatchGemmOptions};
pub use mkernel_kernels::moe_gemm_combine::{workspace_elems_needed as moe_combine_workspace_elems_needed, MoeCombineConfig};
pub use moe_gemm_combine::{plan_moe_gemm_combine, MoeGemmCombineOptions};
pub use mkernel_kernels::ring_attention::{block_m as attention_block_m, units as attention_units, AttentionShape, RingAttentionConfig, SeqLayout, MAX_SOFTMAX_SCALE};
pub use ring_attention::{attention, plan_ring_attention, AttentionOptions, KvSources, RingAttentionOptions};
pub use mkernel_kernels::gemm::{Epilogue, GemmShape, TileConfig};
pub use mkernel_kernels::gemm_allreduce::{Collective, CommPath, EpiloguePace, FusedConfig, LastWaveSplit};
pub use mkernel_sm::Partition;

/// Number of CUDA devices; an error when no driver is installed.
pub fn device_count() -> Result<usize> {
    Ok(mkernel_kernels::driver::device_count()?)
}
