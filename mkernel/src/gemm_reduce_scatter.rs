//! `Communicator::gemm_reduce_scatter`: the row-parallel layer of sequence-parallel
//! tensor parallelism, where each rank keeps a block of rows of out = sum over ranks of
//! A_r * B_r^T, in the fused GEMM + all-reduce's kernel ([`Collective::ReduceScatter`]:
//! each rank's partial crosses the link once, half of it each way, where the all-reduce
//! moves all of it both ways).
//!
//! Status: its GPU tests (`tests/tests/gpu_gemm_reduce_scatter.rs`) pass on one H100 and
//! on one H200 with every rank on that GPU (bench/NOTES.md 55, 56: the epilogue path with
//! 2 ranks, vec16 and scalar with 2-8); not yet run with ranks on GPUs of their own (the
//! pair), and no time is measured against cuBLAS + NCCL yet. Where M / 2 is not a multiple
//! of the tile's rows, the tiles of the row block holding rank 1's first row cannot be
//! stored by TMA and the storer warp adds them by hand: with both ranks on one H200 the
//! call is then ~8% slower than the all-reduce of the same shape (M = 130 and 1040; at
//! M = 1024 as fast or faster, NOTES 56).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use mkernel_kernels::gemm::GemmShape;
use mkernel_kernels::gemm_allreduce::{Collective, CommPath, FusedConfig};

use crate::comm::Communicator;
use crate::error::{invalid, Result};
use crate::gemm_allreduce::{path_asked_by, plan_fused, plan_gemm_allreduce, GemmAllReduceOptions, PlanContext};

impl Communicator {
    /// The configuration a [`Communicator::gemm_reduce_scatter`] call of this shape would
    /// use ([`plan_gemm_reduce_scatter`] on this communicator).
    ///
    /// Errors: as [`plan_gemm_reduce_scatter`].
    pub fn plan_gemm_reduce_scatter(&self, shape: GemmShape, opts: GemmAllReduceOptions) -> Result<FusedConfig> {
        let cfg = plan_gemm_reduce_scatter(shape, opts, self.plan_context())?;
        tracing::debug!(rank = self.rank(), m = shape.m, n = shape.n, k = shape.k, %cfg, "gemm_reduce_scatter plan");
        Ok(cfg)
    }

    /// out\[M / world, N\] = rows \[r M / world, (r + 1) M / world) of the sum over ranks q
    /// of a_q\[M, K\] * b_q\[N, K\]^T, on rank r, enqueued on `stream` (the split of
    /// `torch.distributed.reduce_scatter_tensor` along dim 0, after a row-parallel layer's
    /// GEMM).
    ///
    /// A collective, as [`Communicator::gemm_allreduce`] (the same operands, ordering,
    /// CUDA-graph capture and failure reporting). M is the rows of the activations (the
    /// flattened tokens): each rank gets a contiguous block of M / world of them, so with
    /// Megatron's sequence parallelism the rows must be in sequence-major order for a rank
    /// to get its own sequence chunk. `out` is this rank's rows, \[M / world, N\] bf16
    /// row-major (M % world == 0; pad M otherwise); a longer buffer has only its first
    /// M / world rows written. The workspace holds every rank's partial, so the full M x N
    /// must not exceed `CommConfig::max_output_elems` (not M / world x N). On 2 ranks the rows are meant to have the bits of the all-reduce's on
    /// the same path (a sum of two terms, rounded once; the GPU tests check it), but where
    /// the epilogue path splits its last wave along K on an unswapped tile: there its order
    /// (the next rank's rows first, this rank's own last, where a rank's rows are whole
    /// pairs of row blocks) may split other tiles than the all-reduce's, and a split tile's
    /// partial may differ in the last bit. From 3 ranks the vec16 and scalar paths sum the
    /// ranks' partials in another order (starting at the row's rank rather than its
    /// slice's), so a row may differ in the last bit.
    ///
    /// Paths ([`plan_gemm_reduce_scatter`]): the epilogue path on 2 ranks with GPUs of
    /// their own (each tile's rows of the peer's block go to it as the tile finishes, and
    /// the peer's copy of this rank's rows is added into `out`); vec16 or scalar elsewhere
    /// (communication CTAs sum this rank's rows from every rank's partial); the plain GEMM
    /// with one rank. The options are [`GemmAllReduceOptions`], with these differences:
    /// `comm_path` takes epilogue, vec16, scalar or local only; `comm_ctas` (above 0) asks
    /// for vec16 (scalar where N % 8 != 0), not one-shot; `tail_ctas` above 0 is refused
    /// and 0 means none (no path here takes tail CTAs); with one rank `comm_path` (but
    /// local) and `comm_ctas` are refused (its fused kernels need 2 ranks). The tile rules
    /// of the epilogue path and the SM split of vec16 and scalar are the all-reduce's,
    /// tuned for twice the bytes.
    ///
    /// Status: tested on one GPU shared by the ranks, not yet across GPUs (the module doc).
    ///
    /// Errors: as `gemm_allreduce`, and those of [`plan_gemm_reduce_scatter`], and `out`
    /// shorter than \[M / world, N\] (`out`).
    pub fn gemm_reduce_scatter(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        shape: GemmShape,
        opts: GemmAllReduceOptions,
    ) -> Result<FusedConfig> {
        self.fused_call(stream, a, b, out, shape, opts, Collective::ReduceScatter, None)
    }

    /// [`Communicator::gemm_reduce_scatter`], recording this rank's events into `trace`
    /// (as [`Communicator::gemm_allreduce_traced`]; a tile that meets only the peer's rows
    /// has no `PeerAdded` event, one that meets only this rank's no copy events).
    ///
    /// Errors: as `gemm_reduce_scatter`, `trace` on another GPU, and a call on the local
    /// path (one rank: the plain GEMM, which records no events).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_reduce_scatter_traced(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        out: &mut CudaSlice<bf16>,
        shape: GemmShape,
        opts: GemmAllReduceOptions,
        trace: &mut crate::trace::TraceBuffer,
    ) -> Result<FusedConfig> {
        self.fused_call(stream, a, b, out, shape, opts, Collective::ReduceScatter, Some(trace))
    }
}

/// The configuration a [`Communicator::gemm_reduce_scatter`] call of this shape would use
/// on a communicator described by `ctx`, without one.
///
/// The path: `comm_path` where given (epilogue, vec16, scalar or local:
/// [`Collective::runs_on`]); else vec16 (scalar where N % 8 != 0) where `comm_ctas` asks for
/// communication CTAs; else the all-reduce's default path for the call where the
/// reduce-scatter has it (the epilogue path on 2 ranks with GPUs of their own, a TMA-store
/// tile and N % 8 == 0, or a clustered, swapped-operand or column-fitted tile asked for;
/// local with one rank), else vec16 or scalar as above (e.g. 2 ranks sharing a GPU, more
/// than 2 ranks, a Registers tile asked for). Then [`plan_gemm_allreduce`]'s plan on that
/// path, so that where the all-reduce takes the same path the two plans are equal. The SM
/// split of vec16 and scalar is the all-reduce's heuristic (`mkernel_sm::balance`; a
/// reduce-scatter moves about half the bytes, so it may give communication more CTAs than
/// it needs). With one rank, the plain GEMM into all M rows (the local path).
///
/// Errors: as [`plan_gemm_allreduce`] (on the path so chosen), and, checked first: tail
/// CTAs above 0 (`tail_ctas`: none of these paths takes any), a fused kernel asked of one
/// rank (`comm_path` other than local, or `comm_ctas` above 0: a reduce-scatter's fused
/// kernels need 2 ranks), a `comm_path` without a reduce-scatter or not available for the
/// world size (`comm_path`, naming the reduce-scatter's paths there), M not a multiple of
/// the world size (`shape`); before all of them a context no communicator has (`ctx`).
/// A path the tile does not have lists the reduce-scatter's paths for the tile and names
/// what asked for the path (`comm_path`; else `comm_ctas`; else `tile`, whose default path
/// it was).
pub fn plan_gemm_reduce_scatter(shape: GemmShape, opts: GemmAllReduceOptions, ctx: PlanContext) -> Result<FusedConfig> {
    let rs = Collective::ReduceScatter;
    let world = ctx.world_size;
    // (the context first: its world size is what every rule below divides by)
    ctx.check()?;
    if let Some(t) = opts.tail_ctas.filter(|&t| t > 0) {
        return Err(invalid(
            "tail_ctas",
            format!("a reduce-scatter runs on the epilogue, vec16, scalar or local path, none of which takes tail CTAs; got {t}"),
        ));
    }
    // (0 tail or communication CTAs: none)
    let comm_ctas = opts.comm_ctas.filter(|&c| c > 0);
    let opts = GemmAllReduceOptions { tail_ctas: None, comm_ctas, ..opts };
    if world == 1 {
        let asked = match (opts.comm_path, comm_ctas) {
            (Some(p), _) if p != CommPath::Local => Some("comm_path"),
            (_, Some(_)) => Some("comm_ctas"),
            _ => None,
        };
        if let Some(arg) = asked {
            return Err(invalid(
                arg,
                "with one rank a reduce-scatter is the plain GEMM into all M rows (the local path): its fused kernels need 2 ranks or more",
            ));
        }
    }
    if let Some(p) = opts.comm_path {
        // (its paths at this world size: local alone with one rank, the epilogue path with 2)
        let here: Vec<&str> = CommPath::ALL
            .into_iter()
            .filter(|&q| rs.runs_on(q) && (q == CommPath::Local) == (world == 1) && (q != CommPath::Epilogue || world == 2))
            .map(CommPath::name)
            .collect();
        if !here.contains(&p.name()) {
            return Err(invalid(
                "comm_path",
                format!("a reduce-scatter of {world} rank(s) runs on {}; got {}", here.join(", "), p.name()),
            ));
        }
    }
    rs.check_m(shape, world)?;
    let two_phase = if shape.n.is_multiple_of(8) { CommPath::Vec16 } else { CommPath::Scalar };
    let path = match (opts.comm_path, comm_ctas) {
        (Some(p), _) => p,
        (None, Some(_)) => two_phase,
        (None, None) => {
            // (the all-reduce's default path for the call: the path choice does not depend on
            // the split, the pace or the diagnostic, which are checked on the path chosen)
            let probe = GemmAllReduceOptions { split_last_wave: None, epilogue_pace: None, diagnostic_skip: None, ..opts };
            let default = plan_gemm_allreduce(shape, probe, ctx)?.path;
            if rs.runs_on(default) { default } else { two_phase }
        }
    };
    // (the all-reduce's plan on that path, its refusals listing the reduce-scatter's paths
    // and naming what chose the path where the caller gave no comm_path, in the order above)
    let chooser = if comm_ctas.is_some() { Some("comm_ctas") } else { opts.tile.map(|_| "tile") };
    plan_fused(shape, GemmAllReduceOptions { comm_path: Some(path), ..opts }, ctx, rs).map_err(|e| path_asked_by(e, &opts, chooser))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use mkernel_kernels::gemm::TileConfig;

    fn ctx(world: u32, gpu_shared: bool) -> PlanContext {
        PlanContext::new(world, 132, gpu_shared, 16384 * 8192).unwrap()
    }

    fn arg_of(e: &Error) -> String {
        match e {
            Error::InvalidArgument { arg, .. } => arg.to_string(),
            other => panic!("expected an argument error, got {other}"),
        }
    }

    /// Two ranks with GPUs of their own take the all-reduce's plan (the epilogue path) for
    /// every shape of the list whose M is even; the reduce-scatter changes no tile.
    #[test]
    fn two_ranks_of_their_own_plan_as_the_all_reduce() {
        for (m, n, k) in [(1024, 8192, 4096), (2048, 7168, 9216), (4096, 8192, 14336), (16384, 8192, 4096), (2050, 8192, 4096)] {
            let shape = GemmShape { m, n, k };
            let rs = plan_gemm_reduce_scatter(shape, GemmAllReduceOptions::default(), ctx(2, false)).unwrap();
            let ar = plan_gemm_allreduce(shape, GemmAllReduceOptions::default(), ctx(2, false)).unwrap();
            assert_eq!(rs, ar, "{m}x{n}x{k}");
            assert_eq!(rs.path, CommPath::Epilogue, "{m}x{n}x{k}");
        }
    }

    /// Where the all-reduce's default path has no reduce-scatter (ranks sharing a GPU: one-
    /// shot; more than 2 ranks: tma), the reduce-scatter takes vec16, or scalar for N % 8
    /// != 0; every plan it gives runs on a path with a reduce-scatter.
    #[test]
    fn paths_without_a_reduce_scatter_become_the_two_phase_ones() {
        let shape = GemmShape { m: 1024, n: 8192, k: 4096 };
        let ar = plan_gemm_allreduce(shape, GemmAllReduceOptions::default(), ctx(2, true)).unwrap();
        assert_eq!(ar.path, CommPath::TmaOneShot);
        let rs = plan_gemm_reduce_scatter(shape, GemmAllReduceOptions::default(), ctx(2, true)).unwrap();
        assert_eq!(rs.path, CommPath::Vec16);
        assert!(rs.comm_ctas >= 1 && rs.comm_ctas < rs.grid && rs.tail_ctas == 0, "{rs}");
        for world in [3, 4, 8] {
            let shape = GemmShape { m: 1024 * world, n: 8192, k: 4096 };
            let rs = plan_gemm_reduce_scatter(shape, GemmAllReduceOptions::default(), ctx(world, false)).unwrap();
            assert_eq!(rs.path, CommPath::Vec16, "world {world}");
            let ragged = GemmShape { n: 8190, ..shape };
            let rs = plan_gemm_reduce_scatter(ragged, GemmAllReduceOptions::default(), ctx(world, false)).unwrap();
            assert_eq!(rs.path, CommPath::Scalar, "world {world}");
        }
        // (communication CTAs asked for: the all-reduce would take one-shot with them)
        let opts = GemmAllReduceOptions { comm_ctas: Some(16), ..Default::default() };
        let rs = plan_gemm_reduce_scatter(shape, opts, ctx(2, false)).unwrap();
        assert_eq!((rs.path, rs.comm_ctas), (CommPath::Vec16, 16));
        // One rank: the plain GEMM (its out is all M rows).
        let rs = plan_gemm_reduce_scatter(shape, GemmAllReduceOptions::default(), ctx(1, false)).unwrap();
        assert_eq!(rs.path, CommPath::Local);
    }

    /// M not a multiple of the world size, and a path asked for that has no reduce-scatter,
    /// are refused by name; tail CTAs (which only one-shot, reduce and push take) too.
    #[test]
    fn refusals_name_the_argument() {
        let odd = GemmShape { m: 2049, n: 8192, k: 4096 };
        let e = plan_gemm_reduce_scatter(odd, GemmAllReduceOptions::default(), ctx(2, false)).unwrap_err();
        assert!(e.to_string().contains("multiple of the world size") && e.to_string().contains("M=2049"), "{e}");
        assert_eq!(arg_of(&e), "shape");
        let e = plan_gemm_reduce_scatter(GemmShape { m: 1026, n: 8192, k: 4096 }, GemmAllReduceOptions::default(), ctx(4, false)).unwrap_err();
        assert_eq!(arg_of(&e), "shape");
        let shape = GemmShape { m: 1024, n: 8192, k: 4096 };
        for path in [CommPath::TmaOneShot, CommPath::TmaReduce, CommPath::Push, CommPath::Tma] {
            let opts = GemmAllReduceOptions { comm_path: Some(path), ..Default::default() };
            let e = plan_gemm_reduce_scatter(shape, opts, ctx(2, false)).unwrap_err();
            assert!(e.to_string().contains("a reduce-scatter of 2 rank(s) runs on epilogue, vec16, scalar"), "{path:?}: {e}");
            assert_eq!(arg_of(&e), "comm_path", "{path:?}");
        }
        let opts = GemmAllReduceOptions { tail_ctas: Some(8), ..Default::default() };
        let e = plan_gemm_reduce_scatter(shape, opts, ctx(2, false)).unwrap_err();
        assert_eq!(arg_of(&e), "tail_ctas", "{e}");
        assert!(e.to_string().contains("none of which takes tail CTAs"), "{e}");
        // 0 tail CTAs is no tail CTAs: the default plan stays (the epilogue path).
        let opts = GemmAllReduceOptions { tail_ctas: Some(0), ..Default::default() };
        assert_eq!(plan_gemm_reduce_scatter(shape, opts, ctx(2, false)).unwrap().path, CommPath::Epilogue);
        // One rank asked for a fused kernel: named by the option given.
        for (opts, arg) in [
            (GemmAllReduceOptions { comm_path: Some(CommPath::Vec16), ..Default::default() }, "comm_path"),
            (GemmAllReduceOptions { comm_ctas: Some(8), ..Default::default() }, "comm_ctas"),
        ] {
            let e = plan_gemm_reduce_scatter(shape, opts, ctx(1, false)).unwrap_err();
            assert_eq!(arg_of(&e), arg, "{e}");
        }
        // Refusals name the reduce-scatter's paths, never one it does not run.
        for (world, path, want) in [
            (4u32, CommPath::Epilogue, "a reduce-scatter of 4 rank(s) runs on vec16, scalar; got epilogue"),
            (2, CommPath::TmaOneShot, "runs on epilogue, vec16, scalar; got one-shot"),
            (1, CommPath::Epilogue, "with one rank a reduce-scatter is the plain GEMM"),
        ] {
            let opts = GemmAllReduceOptions { comm_path: Some(path), ..Default::default() };
            let e = plan_gemm_reduce_scatter(GemmShape { m: 4096, ..shape }, opts, ctx(world, false)).unwrap_err();
            assert!(e.to_string().contains(want) && !e.to_string().contains("available"), "world {world} {path:?}: {e}");
        }
        let opts = GemmAllReduceOptions { comm_ctas: Some(132), ..Default::default() };
        let e = plan_gemm_reduce_scatter(shape, opts, ctx(2, false)).unwrap_err();
        assert!(e.to_string().contains("vec16") && !e.to_string().contains("one-shot"), "{e}");
        // 0 communication CTAs is none, as 0 tail CTAs.
        let opts = GemmAllReduceOptions { comm_ctas: Some(0), ..Default::default() };
        assert_eq!(plan_gemm_reduce_scatter(shape, opts, ctx(2, false)).unwrap().path, CommPath::Epilogue);
        // An epilogue-only option where the reduce-scatter runs vec16 (ranks sharing a GPU)
        // is refused naming vec16, the path it would run, not one-shot.
        let opts = GemmAllReduceOptions { split_last_wave: Some(mkernel_kernels::gemm_allreduce::LastWaveSplit::Slices(2)), ..Default::default() };
        let e = plan_gemm_reduce_scatter(shape, opts, ctx(2, true)).unwrap_err();
        assert!(e.to_string().contains("vec16") && !e.to_string().contains("one-shot"), "{e}");
        // A tile asked for keeps its rules: a clustered one has the epilogue path alone.
        let opts = GemmAllReduceOptions { tile: Some(TileConfig::NARROW_TMA_STORE_C2), ..Default::default() };
        let rs = plan_gemm_reduce_scatter(shape, opts, ctx(2, false)).unwrap();
        assert_eq!((rs.path, rs.tile), (CommPath::Epilogue, TileConfig::NARROW_TMA_STORE_C2));
    }

    /// The path rules helper-97 found without a test of their own: local refused from 2
    /// ranks (naming the reduce-scatter's paths), communication CTAs on N % 8 != 0 taking
    /// scalar, the epilogue path asked for on 2 ranks sharing a GPU taken, and 0
    /// communication or tail CTAs on one rank still the local path.
    #[test]
    fn path_rules_by_world_and_n() {
        let shape = GemmShape { m: 1024, n: 8192, k: 4096 };
        let local = GemmAllReduceOptions { comm_path: Some(CommPath::Local), ..Default::default() };
        let e = plan_gemm_reduce_scatter(shape, local, ctx(2, false)).unwrap_err();
        assert_eq!(arg_of(&e), "comm_path", "{e}");
        assert!(e.to_string().contains("runs on epilogue, vec16, scalar; got local"), "{e}");
        let ragged = GemmAllReduceOptions { comm_ctas: Some(16), ..Default::default() };
        let rs = plan_gemm_reduce_scatter(GemmShape { n: 8190, ..shape }, ragged, ctx(2, false)).unwrap();
        assert_eq!((rs.path, rs.comm_ctas), (CommPath::Scalar, 16));
        let epilogue = GemmAllReduceOptions { comm_path: Some(CommPath::Epilogue), ..Default::default() };
        assert_eq!(plan_gemm_reduce_scatter(shape, epilogue, ctx(2, true)).unwrap().path, CommPath::Epilogue);
        for opts in [GemmAllReduceOptions { comm_ctas: Some(0), ..Default::default() }, GemmAllReduceOptions { tail_ctas: Some(0), ..Default::default() }] {
            assert_eq!(plan_gemm_reduce_scatter(shape, opts, ctx(1, false)).unwrap().path, CommPath::Local, "{opts:?}");
        }
    }

    /// A path the tile asked for does not have is refused naming what asked for the path
    /// (comm_path, else comm_ctas, else the tile) and the reduce-scatter's own paths for the
    /// tile, never one it does not run; a tile with no reduce-scatter path at the world size
    /// is refused on `tile`; a context no communicator has on `ctx`, whatever M (helper-97).
    #[test]
    fn tile_path_refusals_name_what_asked() {
        let shape = GemmShape { m: 1024, n: 8192, k: 4096 };
        let cases = [
            // (a Registers tile has no epilogue path)
            (GemmAllReduceOptions { tile: Some(TileConfig::WIDE), comm_path: Some(CommPath::Epilogue), ..Default::default() }, 2, "comm_path", "available: vec16, scalar)"),
            // (communication CTAs choose vec16, which a clustered tile does not have)
            (GemmAllReduceOptions { tile: Some(TileConfig::NARROW_TMA_STORE_C2), comm_ctas: Some(16), ..Default::default() }, 2, "comm_ctas", "available: epilogue)"),
            (GemmAllReduceOptions { tile: Some(TileConfig::NARROW_TMA_STORE_C2), comm_path: Some(CommPath::Vec16), ..Default::default() }, 2, "comm_path", "available: epilogue)"),
            (GemmAllReduceOptions { tile: Some(TileConfig::swapped_tma_store(136)), ..Default::default() }, 4, "tile", "available: none"),
        ];
        for (opts, world, arg, want) in cases {
            let e = plan_gemm_reduce_scatter(shape, opts, ctx(world, false)).unwrap_err();
            let text = e.to_string();
            assert_eq!(arg_of(&e), arg, "{opts:?} world {world}: {e}");
            assert!(text.contains(want) && !text.contains("one-shot") && !text.contains("tma,"), "{opts:?} world {world}: {e}");
        }
        for world in [0, 9, 16] {
            let bad = PlanContext { world_size: world, ..ctx(2, false) };
            for m in [10, 144] {
                let e = plan_gemm_reduce_scatter(GemmShape { m, ..shape }, GemmAllReduceOptions::default(), bad).unwrap_err();
                assert_eq!(arg_of(&e), "ctx", "world {world} M={m}: {e}");
            }
        }
    }
}
