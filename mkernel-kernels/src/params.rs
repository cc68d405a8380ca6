//! Host mirrors of the structs in `src/cuda/params.cuh`.
//!
//! Every struct here is `#[repr(C)]` and field-for-field identical to its C++ twin.
//! [`layout_check_source`] turns the Rust offsets into `static_assert`s that NVRTC
//! compiles against the header (a test, and part of CI's catalog compile). Field
//! meanings, units and layouts are documented once, on the C++ side (`params.cuh`).
#![allow(missing_docs)]


/// Upper bound of the per-rank address arrays (`MKERNEL_MAX_RANKS` in the header). The
/// world size itself is a run-time value specialised by the JIT.
pub const MAX_RANKS: usize = 8;

/// Opaque TMA tensor map (`CUtensorMap`): 128 bytes, 64-byte aligned.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub struct TmaDescriptor {
    pub opaque: [u64; 16],
}

impl Default for TmaDescriptor {
    fn default() -> Self {
        Self { opaque: [0; 16] }
    }
}

impl std::fmt::Debug for TmaDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TmaDescriptor(..)")
    }
}

/// Why a kernel gave up waiting (`WaitOp` in `sync/wait.cuh`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOp {
    None = 0,
    PeerTileReady = 1,
    PeerSliceReduced = 2,
    PeerExit = 3,
    PeerBarrier = 4,
    PeerChunkArrived = 5,
    PeerCountsArrived = 6,
    PeerTokensArrived = 7,
    LocalRoutingStep = 8,
    InvalidExpertId = 9,
    RecvCapacityExceeded = 10,
    RanksDisagree = 11,
    PeerKvArrived = 12,
    PeerMapWritten = 13,
    PeerRowsPushed = 14,
    LocalTileStored = 15,
    InvalidDestRow = 16,
    InvalidLayout = 17,
    CombineRanksDisagree = 18,
    InconsistentRoutes = 19,
}

impl WaitOp {
    /// Decodes `KernelStatus::code`.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::None,
            1 => Self::PeerTileReady,
            2 => Self::PeerSliceReduced,
            3 => Self::PeerExit,
            4 => Self::PeerBarrier,
            5 => Self::PeerChunkArrived,
            6 => Self::PeerCountsArrived,
            7 => Self::PeerTokensArrived,
            8 => Self::LocalRoutingStep,
            9 => Self::InvalidExpertId,
            10 => Self::RecvCapacityExceeded,
            11 => Self::RanksDisagree,
            12 => Self::PeerKvArrived,
            13 => Self::PeerMapWritten,
            14 => Self::PeerRowsPushed,
            15 => Self::LocalTileStored,
            16 => Self::InvalidDestRow,
            17 => Self::InvalidLayout,
            18 => Self::CombineRanksDisagree,
            19 => Self::InconsistentRoutes,
            _ => return None,
        })
    }

    /// What the wait was for, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::None => "nothing",
            Self::PeerTileReady => "the peer's partial tile (ready flag)",
            Self::PeerSliceReduced => "the peer's reduced slice of a tile",
            Self::PeerExit => "the peer to finish reading this rank's buffers (exit flag)",
            Self::PeerBarrier => "the peer to reach the device-side barrier (barrier flag)",
            Self::PeerChunkArrived => "the peer's chunk of A rows (all-gather arrival flag)",
            Self::PeerCountsArrived => "the peer's token counts per expert (MoE dispatch counts flag)",
            Self::PeerTokensArrived => "the peer's chunk of tokens for a local expert (MoE dispatch arrival flag)",
            Self::LocalRoutingStep => "another push CTA of this rank's MoE routing (histogram or send-list flag)",
            Self::InvalidExpertId => "an expert id outside -1..experts, or repeated within a token's top-k (MoE dispatch input)",
            Self::RecvCapacityExceeded => "a rank's receive buffer rows (MoE dispatch: the routed tokens do not fit recv_capacity)",
            Self::RanksDisagree => "the ranks' collective arguments (MoE dispatch: chunk_rows, max_tokens, recv_capacity, K or experts differ)",
            Self::PeerKvArrived => "the peer's chunk of keys and values (ring attention arrival flag)",
            Self::PeerMapWritten => "the peer's routes of its tokens' rows and its arguments (MoE combine map flag)",
            Self::PeerRowsPushed => "the peer's rows of a tile for this rank's tokens (MoE combine arrival flag)",
            Self::LocalTileStored => "this rank's own GEMM tile (MoE combine tile flag)",
            Self::InvalidDestRow => "a dest_rows entry at or past recv_capacity (MoE combine input)",
            Self::InvalidLayout => "a rank's layout whose segments do not hold together (MoE combine input)",
            Self::CombineRanksDisagree => "the ranks' collective arguments (MoE combine: recv_capacity, max_tokens, topk, experts, N or K differ)",
            Self::InconsistentRoutes => "a received row no source rank routed (MoE combine: layout and dest_rows are not one dispatch's)",
        }
    }

    /// Whether the code reports bad device-side input (not a wait that gave up): the
    /// kernel recorded it and went on without the offending entries or work.
    pub fn is_input_error(self) -> bool {
        matches!(
            self,
            Self::InvalidExpertId
                | Self::RecvCapacityExceeded
                | Self::RanksDisagree
                | Self::InvalidDestRow
                | Self::InvalidLayout
                | Self::CombineRanksDisagree
                | Self::InconsistentRoutes
        )
    }
}

/// Written by a timed-out wait into host-mapped memory (`KernelStatus`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStatus {
    pub code: u32,
    pub rank: u32,
    pub peer: u32,
    pub tile: u32,
    pub epoch: u32,
    pub expected: u32,
    pub observed: u32,
    pub cta: u32,
    pub waited_ns: u64,
    pub input_code: u32,
    pub input_peer: u32,
    pub input_entry: u32,
    pub input_epoch: u32,
    pub input_expected: u32,
    pub input_observed: u32,
}

/// Parameters of the plain GEMM kernel (`GemmParams`). `tma_a` maps A and `tma_b` B,
/// except for swapped-operand tiles (`TileConfig::swap_ab`), where `tma_a` maps B and
/// `tma_b` A; `m`, `n`, `k` are the problem's either way.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct GemmParams {
    pub tma_a: TmaDescriptor,
    pub tma_b: TmaDescriptor,
    pub tma_c: TmaDescriptor,
    pub c: u64,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub ldc: u32,
    pub timeout_ns: u64,
    /// Split last wave (kernels compiled with it, `gemm::source_split`): the fp32 slots,
    /// one per slice, `bm * bn` floats each.
    pub split_scratch: u64,
    /// One u32 per left-over tile, 0 between calls (the last slice resets it).
    pub split_counts: u64,
    /// K-slices per left-over tile (1: none).
    pub split_slices: u32,
    pub pad0: u32,
}

/// Parameters of the fused GEMM + all-reduce kernel (`AllReduceParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct AllReduceParams {
    pub tma_a: TmaDescriptor,
    pub tma_b: TmaDescriptor,
    pub tma_c: TmaDescriptor,
    pub tma_c_out: TmaDescriptor,
    pub tma_out: TmaDescriptor,
    pub tma_partial: [TmaDescriptor; MAX_RANKS],
    pub out: u64,
    pub partial: [u64; MAX_RANKS],
    pub ready: [u64; MAX_RANKS],
    pub reduced: [u64; MAX_RANKS],
    pub exit_flags: [u64; MAX_RANKS],
    pub control: u64,
    pub status: u64,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub rank: u32,
    pub num_comm_ctas: u32,
    pub flag_stride: u32,
    pub num_tail_ctas: u32,
    /// Epilogue path: how each CTA paces its copies to the peer (`EpiloguePace as u32`).
    pub epilogue_pace: u32,
    pub timeout_ns: u64,
    pub trace: u64,
    pub trace_capacity: u32,
    /// Epilogue path: K-slices per tile of the last wave (1: none; `FusedConfig::split_slices`).
    pub split_slices: u32,
    /// Epilogue path: this rank's fp32 slots for those slices (`WorkspaceLayout::split_offset`).
    pub split_scratch: u64,
    /// Epilogue path, diagnostic (`FusedConfig::diag_skip`).
    pub diag_skip: u32,
    /// Reduce-scatter ([`crate::gemm_allreduce::Collective::ReduceScatter`]): rows of the
    /// sum each rank keeps, M / world; rank r's `out` is rows [r * scatter_rows, (r + 1) *
    /// scatter_rows) of it, an [scatter_rows, N] matrix. 0: an all-reduce (`out` [M, N]).
    pub scatter_rows: u32,
}

/// Parameters of the fused all-gather + GEMM kernel (`AllGatherParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct AllGatherParams {
    pub tma_a_local: TmaDescriptor,
    pub tma_a_gathered: TmaDescriptor,
    pub tma_b: TmaDescriptor,
    pub tma_c: TmaDescriptor,
    pub a_local: u64,
    pub out: u64,
    pub gathered: [u64; MAX_RANKS],
    pub arrived: [u64; MAX_RANKS],
    pub exit_flags: [u64; MAX_RANKS],
    pub control: u64,
    pub status: u64,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub rank: u32,
    pub shard_rows: u32,
    pub chunk_rows: u32,
    pub num_comm_ctas: u32,
    pub flag_stride: u32,
    pub timeout_ns: u64,
}

/// Parameters of the fused MoE dispatch + grouped GEMM kernel (`MoeDispatchParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MoeDispatchParams {
    pub tma_a: TmaDescriptor,
    pub tma_b: TmaDescriptor,
    pub tma_c: TmaDescriptor,
    pub x: u64,
    pub expert_ids: u64,
    pub out: u64,
    pub dest_rows: u64,
    pub layout: u64,
    pub recv: [u64; MAX_RANKS],
    pub arrived: [u64; MAX_RANKS],
    pub counts: [u64; MAX_RANKS],
    pub exit_flags: [u64; MAX_RANKS],
    pub scratch: u64,
    pub control: u64,
    pub status: u64,
    pub tokens: u32,
    pub topk: u32,
    pub experts: u32,
    pub local_experts: u32,
    pub n: u32,
    pub k: u32,
    pub rank: u32,
    pub recv_capacity: u32,
    pub chunk_rows: u32,
    pub seg_chunks: u32,
    pub num_comm_ctas: u32,
    pub flag_stride: u32,
    pub routing_flags_at: u32,
    pub max_tokens: u32,
    pub pad0: u32,
    pub timeout_ns: u64,
}

/// Parameters of the fused MoE grouped GEMM + combine kernel (`MoeCombineParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MoeCombineParams {
    pub tma_a: TmaDescriptor,
    pub tma_b: TmaDescriptor,
    pub tma_c: TmaDescriptor,
    pub expert_ids: u64,
    pub dest_rows: u64,
    pub topk_weights: u64,
    pub layout: u64,
    pub y: u64,
    pub out: u64,
    pub agree: [u64; MAX_RANKS],
    pub map: [u64; MAX_RANKS],
    pub slots: [u64; MAX_RANKS],
    pub arrived: [u64; MAX_RANKS],
    pub exit_flags: [u64; MAX_RANKS],
    pub control: u64,
    pub status: u64,
    pub tokens: u32,
    pub topk: u32,
    pub experts: u32,
    pub local_experts: u32,
    pub n: u32,
    pub k: u32,
    pub rank: u32,
    pub recv_capacity: u32,
    pub max_tokens: u32,
    pub num_comm_ctas: u32,
    pub flag_stride: u32,
    pub n_blocks: u32,
    pub tile_flags_at: u32,
    pub pad0: u32,
    pub timeout_ns: u64,
}

/// Parameters of the ring attention kernels (`RingAttentionParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RingAttentionParams {
    pub tma_q: TmaDescriptor,
    pub tma_k: TmaDescriptor,
    pub tma_v: TmaDescriptor,
    pub tma_kv: TmaDescriptor,
    pub q: u64,
    pub k: u64,
    pub v: u64,
    pub out: u64,
    pub lse: u64,
    pub kv_gathered: [u64; MAX_RANKS],
    pub arrived: [u64; MAX_RANKS],
    pub exit_flags: [u64; MAX_RANKS],
    pub control: u64,
    pub status: u64,
    pub batch: u32,
    pub seq: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub rank: u32,
    pub chunk_rows: u32,
    pub num_comm_ctas: u32,
    pub flag_stride: u32,
    pub scale_log2: f32,
    pub timeout_ns: u64,
}

/// Header of the optional event trace of one fused call (`FusedTraceHeader`); the
/// events follow it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FusedTraceHeader {
    pub count: u32,
    pub pad0: u32,
}

/// One event of a fused call's trace (`FusedTraceEvent`; kinds: `mk::TraceKind`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FusedTraceEvent {
    pub t_ns: u64,
    pub cta: u32,
    pub tile: u32,
    pub kind: u32,
    /// `%clock` (SM cycles, low 32 bits) when the event was recorded.
    pub sm_clock: u32,
}

/// Parameters of the random fill kernel (`FillParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FillParams {
    pub out: u64,
    pub len: u64,
    pub seed: u64,
    pub lo: f32,
    pub hi: f32,
}

/// Parameters of the unfused MoE combine's weighted sum (`CombineSumParams`,
/// `ops/combine_sum.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CombineSumParams {
    pub index: u64,
    pub weights: u64,
    pub land: u64,
    pub y: u64,
    pub tokens: u32,
    pub topk: u32,
    pub n: u32,
    pub rows: u32,
}

/// Parameters of the reference accumulation kernel (`AccumulateParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct AccumulateParams {
    pub sum: u64,
    pub abs_sum: u64,
    pub p: u64,
    pub len: u64,
    pub first: u32,
    pub pad0: u32,
}

/// Device-side comparison result (`CompareStats`), zeroed with `first_bad = u64::MAX`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CompareStats {
    pub err2: f64,
    pub ref2: f64,
    pub bad: u64,
    pub first_bad: u64,
    pub max_abs_bits: u32,
    pub pad0: u32,
}

/// Parameters of the comparison kernel (`CompareParams`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CompareParams {
    pub got: u64,
    pub reference: u64,
    pub scale: u64,
    pub stats: u64,
    pub len: u64,
    pub rel_tol: f32,
    pub abs_floor: f32,
}

/// Parameters of the device-side rank barrier (`BarrierParams`, `ops/barrier.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BarrierParams {
    /// Per rank: its barrier flags, u32 [`MAX_RANKS`] (slot `q` = the last barrier epoch
    /// rank `q` reached), mapped on this rank.
    pub flags: [u64; MAX_RANKS],
    /// This rank's `ControlBlock` (its `abort_epoch`; see `ops/barrier.cuh`).
    pub control: u64,
    /// Host-mapped [`KernelStatus`] of this rank.
    pub status: u64,
    /// Longest wait for a peer, nanoseconds.
    pub timeout_ns: u64,
    pub rank: u32,
    pub world: u32,
    /// This barrier's number (never 0: the flags start at 0).
    pub epoch: u32,
    pub pad0: u32,
}

/// Parameters of the host gate (`GateParams`, `ops/gate.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct GateParams {
    /// Device address of the host-mapped u32 the host raises.
    pub flag: u64,
    /// Device address of the host-mapped u32 the kernel sets to `at` when it gave up.
    pub timed_out: u64,
    /// Longest wait, nanoseconds.
    pub timeout_ns: u64,
    /// The value (wrap-around compare) `flag` must reach.
    pub at: u32,
    pub pad0: u32,
}

/// Per-rank device control words (`ControlBlock`), zeroed at allocation.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ControlBlock {
    pub epoch: u32,
    pub abort_epoch: u32,
    pub ctas_done: u32,
    pub comm_done: u32,
    pub comm_next: u32,
    pub input_error_epoch: u32,
}

/// Where a kernel finds the command ring (`RingView` in `comm/ring.cuh`): the proxy
/// crate's type, which owns the ring; its layout is asserted against the C++ struct with
/// the other mirrors ([`layout_check_source`]).
pub use mkernel_proxy::RingView;

/// Parameters of the proxy stream kernel (`ProxyStreamParams`; see
/// `src/cuda/ops/proxy_stream.cuh` and [`crate::proxy_stream`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ProxyStreamParams {
    pub ring: RingView,
    pub src: u64,
    pub staging: u64,
    pub landing: u64,
    pub arrivals: u64,
    pub control: u64,
    pub result: u64,
    pub status: u64,
    pub bytes: u64,
    pub seed: u64,
    pub timeout_ns: u64,
    pub chunk_bytes: u32,
    pub chunks: u32,
    pub credit_flag: u32,
    pub rank: u32,
    pub peer: u32,
    pub epoch: u32,
    pub send_ctas: u32,
    pub recv_ctas: u32,
    pub staging_slots: u32,
    pub direct: u32,
}

/// Device-resident words of one proxy stream (`ProxyStreamControl`), zeroed once.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ProxyStreamControl {
    pub recv_done: u32,
    pub abort_epoch: u32,
    pub pad: [u64; 3],
}

/// Verification result of one proxy stream launch (`ProxyStreamResult`), zeroed before
/// it with `first_bad = u64::MAX`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyStreamResult {
    pub mismatched_bytes: u64,
    pub first_bad: u64,
    pub chunks_verified: u64,
    pub ahead: u64,
}

/// Written by the first wait of a proxy stream launch that gives up
/// (`ProxyStreamStatus`, pinned host memory mapped into the device).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProxyStreamStatus {
    pub code: u32,
    pub rank: u32,
    pub peer: u32,
    pub chunk: u32,
    pub epoch: u32,
    pub cta: u32,
    pub expected: u64,
    pub observed: u64,
    pub waited_ns: u64,
}

/// `static_assert` lines (as `Vec<String>`) checking, in CUDA C++ compiled by NVRTC,
/// that struct `$t` has the size, alignment and listed field offsets of its Rust
/// mirror. Needs [`OFFSETOF_DEFINE`] earlier in the source. Used by every crate that
/// mirrors a device struct (here, and mkernel-proxy's command ring).
#[macro_export]
macro_rules! layout_asserts {
    ($t:ty; $($field:ident),+ $(,)?) => {{
        let mut v = vec![format!(
            "static_assert(sizeof({0}) == {1} && alignof({0}) == {2}, \"{0}: size/alignment differ from Rust\");",
            stringify!($t), ::std::mem::size_of::<$t>(), ::std::mem::align_of::<$t>()
        )];
        $(v.push(format!(
            "static_assert(MK_OFFSETOF({0}, {1}) == {2}, \"{0}.{1}: offset differs from Rust ({2})\");",
            stringify!($t), stringify!($field), ::std::mem::offset_of!($t, $field)
        ));)+
        v
    }};
}

/// Defines `MK_OFFSETOF` for [`layout_asserts!`]: NVRTC's front end has no constant
/// `offsetof`; EDG's `__INTADDR__` turns the classic null-pointer member address into
/// an integer constant expression.
pub const OFFSETOF_DEFINE: &str = "#define MK_OFFSETOF(T, f) __INTADDR__(&((T*)0)->f)";

/// C++ source that includes `params.cuh` and asserts, at compile time, that every
/// shared struct has the size, alignment and field offsets the Rust mirror has.
pub fn layout_check_source() -> String {
    let mut lines = vec!["#include \"params.cuh\"".to_string(), OFFSETOF_DEFINE.to_string()];
    lines.extend(crate::layout_asserts!(TmaDescriptor; opaque));
    lines.extend(crate::layout_asserts!(KernelStatus; code, rank, peer, tile, epoch, expected, observed, cta, waited_ns, input_code, input_peer,
        input_entry, input_epoch, input_expected, input_observed));
    lines.extend(crate::layout_asserts!(GemmParams; tma_a, tma_b, tma_c, c, m, n, k, ldc, timeout_ns, split_scratch, split_counts, split_slices, pad0));
    lines.extend(crate::layout_asserts!(AllReduceParams; tma_a, tma_b, tma_c, tma_c_out, tma_out, tma_partial, out, partial, ready, reduced, exit_flags, control,
        status, m, n, k, rank, num_comm_ctas, flag_stride, num_tail_ctas, epilogue_pace, timeout_ns, trace, trace_capacity, split_slices, split_scratch, diag_skip, scatter_rows));
    lines.extend(crate::layout_asserts!(AllGatherParams; tma_a_local, tma_a_gathered, tma_b, tma_c, a_local, out, gathered, arrived, exit_flags,
        control, status, m, n, k, rank, shard_rows, chunk_rows, num_comm_ctas, flag_stride, timeout_ns));
    lines.extend(crate::layout_asserts!(MoeDispatchParams; tma_a, tma_b, tma_c, x, expert_ids, out, dest_rows, layout, recv, arrived,
        counts, exit_flags, scratch, control, status, tokens, topk, experts, local_experts, n, k, rank, recv_capacity,
        chunk_rows, seg_chunks, num_comm_ctas, flag_stride, routing_flags_at, max_tokens, pad0, timeout_ns));
    lines.extend(crate::layout_asserts!(MoeCombineParams; tma_a, tma_b, tma_c, expert_ids, dest_rows, topk_weights, layout, y, out, agree, map,
        slots, arrived, exit_flags, control, status, tokens, topk, experts, local_experts, n, k, rank, recv_capacity, max_tokens,
        num_comm_ctas, flag_stride, n_blocks, tile_flags_at, pad0, timeout_ns));
    lines.extend(crate::layout_asserts!(RingAttentionParams; tma_q, tma_k, tma_v, tma_kv, q, k, v, out, lse, kv_gathered, arrived, exit_flags, control, status,
        batch, seq, heads, kv_heads, head_dim, rank, chunk_rows, num_comm_ctas, flag_stride, scale_log2, timeout_ns));
    lines.extend(crate::layout_asserts!(FusedTraceHeader; count, pad0));
    lines.extend(crate::layout_asserts!(FusedTraceEvent; t_ns, cta, tile, kind, sm_clock));
    lines.extend(crate::layout_asserts!(ControlBlock; epoch, abort_epoch, ctas_done, comm_done, comm_next, input_error_epoch));
    lines.extend(crate::layout_asserts!(BarrierParams; flags, control, status, timeout_ns, rank, world, epoch, pad0));
    lines.extend(crate::layout_asserts!(GateParams; flag, timed_out, timeout_ns, at, pad0));
    lines.extend(crate::layout_asserts!(FillParams; out, len, seed, lo, hi));
    lines.extend(crate::layout_asserts!(CombineSumParams; index, weights, land, y, tokens, topk, n, rows));
    lines.extend(crate::layout_asserts!(AccumulateParams; sum, abs_sum, p, len, first, pad0));
    lines.extend(crate::layout_asserts!(CompareStats; err2, ref2, bad, first_bad, max_abs_bits, pad0));
    lines.extend(crate::layout_asserts!(CompareParams; got, reference, scale, stats, len, rel_tol, abs_floor));
    lines.extend(crate::layout_asserts!(RingView; slots, control, head, completion, mask, completions, timeout_ns, rank, pad));
    lines.extend(crate::layout_asserts!(ProxyStreamParams; ring, src, staging, landing, arrivals, control, result, status,
        bytes, seed, timeout_ns, chunk_bytes, chunks, credit_flag, rank, peer, epoch, send_ctas, recv_ctas, staging_slots, direct));
    lines.extend(crate::layout_asserts!(ProxyStreamControl; recv_done, abort_epoch, pad));
    lines.extend(crate::layout_asserts!(ProxyStreamResult; mismatched_bytes, first_bad, chunks_verified, ahead));
    lines.extend(crate::layout_asserts!(ProxyStreamStatus; code, rank, peer, chunk, epoch, cta, expected, observed, waited_ns));
    lines.push(format!(
        "static_assert(MKERNEL_MAX_RANKS == {MAX_RANKS}, \"MKERNEL_MAX_RANKS differs from Rust\");"
    ));
    lines.push("extern \"C\" __global__ void mkernel_layout_check() {}".to_string());
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    #[test]
    fn tma_descriptor_is_a_cutensormap() {
        assert_eq!(size_of::<TmaDescriptor>(), size_of::<cudarc::driver::sys::CUtensorMap>());
        assert_eq!(align_of::<TmaDescriptor>(), 64);
    }

    #[test]
    fn params_fit_the_kernel_parameter_space() {
        // 4 KiB is the portable limit for __global__ parameters.
        assert!(size_of::<AllReduceParams>() <= 4096);
        assert!(size_of::<GemmParams>() <= 4096);
        assert!(size_of::<AllGatherParams>() <= 4096);
        assert!(size_of::<MoeDispatchParams>() <= 4096);
        assert!(size_of::<MoeCombineParams>() <= 4096);
        assert!(size_of::<RingAttentionParams>() <= 4096);
    }

    #[test]
    fn wait_op_codes_round_trip() {
        for op in [
            WaitOp::None,
            WaitOp::PeerTileReady,
            WaitOp::PeerSliceReduced,
            WaitOp::PeerExit,
            WaitOp::PeerBarrier,
            WaitOp::PeerChunkArrived,
            WaitOp::PeerCountsArrived,
            WaitOp::PeerTokensArrived,
            WaitOp::LocalRoutingStep,
            WaitOp::InvalidExpertId,
            WaitOp::RecvCapacityExceeded,
            WaitOp::RanksDisagree,
            WaitOp::PeerKvArrived,
            WaitOp::PeerMapWritten,
            WaitOp::PeerRowsPushed,
            WaitOp::LocalTileStored,
            WaitOp::InvalidDestRow,
            WaitOp::InvalidLayout,
            WaitOp::CombineRanksDisagree,
            WaitOp::InconsistentRoutes,
        ] {
            assert_eq!(WaitOp::from_code(op as u32), Some(op));
        }
        assert_eq!(WaitOp::from_code(99), None);
    }

    #[test]
    fn layout_check_names_every_struct() {
        let src = layout_check_source();
        for s in ["GemmParams", "AllReduceParams", "KernelStatus", "ControlBlock", "TmaDescriptor", "FillParams", "CombineSumParams", "ProxyStreamParams", "RingView", "RingAttentionParams"] {
            assert!(src.contains(&format!("sizeof({s})")), "{s} missing");
        }
    }
}
