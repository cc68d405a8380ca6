//! Properties of the fused call's plan (`mkernel::plan_gemm_allreduce`, what
//! `Communicator::plan_gemm_allreduce` runs), checked without a GPU:
//! - with default options, every shape the workspace holds gets a plan, and the plan is
//!   one the kernel catalog and the later checks accept (a default that the library
//!   itself refuses would fail every such call);
//! - with any options, the plan is such a plan or an error naming an argument; never a
//!   panic.

use mkernel::{plan_gemm, plan_gemm_allreduce, CommPath, EpiloguePace, Error, FusedConfig, GemmAllReduceOptions, GemmOptions, GemmShape, LastWaveSplit, PlanContext, TileConfig};
use mkernel_kernels::gemm::SPLIT_COUNTS;
use mkernel_kernels::gemm_allreduce::WorkspaceLayout;
use proptest::prelude::*;

const MAX_ELEMS: u64 = 16384 * 8192;

fn shape() -> impl Strategy<Value = GemmShape> {
    let dim = prop_oneof![1u32..=300, 1u32..=16384, Just(2049u32), Just(8192u32), (1u32..=128).prop_map(|i| 128 * i)];
    (dim.clone(), dim.clone(), prop_oneof![(1u32..=2048).prop_map(|i| 8 * i), Just(4104u32), Just(4096u32), Just(14336u32)])
        .prop_map(|(m, n, k)| GemmShape { m, n, k })
        .prop_filter("the workspace holds M x N", |s| s.m as u64 * s.n as u64 <= MAX_ELEMS)
}

/// (Every field is a property of the group, the same on every rank, so ranks plan alike
/// even on GPUs with different SM counts: the grid is the group's smallest.)
fn context(world: u32, grid: u32, gpu_shared: bool) -> PlanContext {
    // The split scratch of a workspace sized as CommConfig's default.
    let split = WorkspaceLayout::new(MAX_ELEMS, world).map(|l| l.split_bytes()).unwrap_or(0);
    PlanContext { world_size: world, grid, gpu_shared, max_output_elems: MAX_ELEMS, split_scratch_bytes: split }
}

/// What every plan must satisfy, whatever the options: the later checks pass on it.
fn check_plan(cfg: &FusedConfig, s: GemmShape, ctx: PlanContext) -> Result<(), TestCaseError> {
    // (the local path, one rank, runs the plain GEMM's kernel: any tile of its catalog)
    prop_assert!(cfg.check_tile().is_ok(), "{s:?}: {cfg}: tile outside the catalog of its path");
    if cfg.path != CommPath::Local {
        prop_assert!(cfg.tile.validate().is_ok(), "{s:?}: {cfg}: tile outside the fused catalog");
    }
    prop_assert!(cfg.tile.check_output(s.n).is_ok(), "{s:?}: {cfg}");
    prop_assert!(cfg.path.check(s.n, cfg.tile, ctx.world_size).is_ok(), "{s:?}: {cfg}: path");
    prop_assert_eq!(cfg.grid, ctx.grid);
    if cfg.path != CommPath::Local {
        prop_assert_eq!(cfg.grid % cfg.tile.cluster_m.max(1), 0, "{:?}: {}", s, cfg);
    }
    prop_assert!(cfg.check_split(s, ctx.split_scratch_bytes).is_ok(), "{s:?}: {cfg}: split");
    prop_assert!(cfg.check_tail_ctas().is_ok(), "{s:?}: {cfg}: tail");
    prop_assert!(cfg.comm_ctas < cfg.grid, "{s:?}: {cfg}");
    if cfg.path == CommPath::Epilogue {
        prop_assert_eq!(ctx.world_size, 2, "{:?}: {}", s, cfg);
        prop_assert_eq!(cfg.comm_ctas, 0);
    }
    if cfg.path == CommPath::Local {
        prop_assert_eq!(ctx.world_size, 1, "{:?}: {}", s, cfg);
        prop_assert_eq!((cfg.comm_ctas, cfg.tail_ctas), (0, 0), "{:?}: {}", s, cfg);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn default_options_always_plan(s in shape(), world in prop_oneof![Just(2u32), Just(1u32), Just(4u32), Just(8u32)],
                                   sm_count in prop_oneof![Just(132u32), Just(114u32), Just(66u32), 8u32..=200],
                                   shared in any::<bool>()) {
        // A GPU of its own, or (shared) a share of one: grid < sm_count.
        let grid = if shared { (sm_count / 2).max(2) } else { sm_count };
        let ctx = context(world, grid, shared);
        match plan_gemm_allreduce(s, GemmAllReduceOptions::default(), ctx) {
            Ok(cfg) => {
                check_plan(&cfg, s, ctx)?;
                // One rank: the plain GEMM alone, as `mkernel::gemm` runs it: the split
                // rules' tile and slices where one applies within the workspace, else the
                // default tile unsplit.
                prop_assert_eq!(cfg.path == CommPath::Local, world == 1, "{:?}: {}", s, cfg);
                if world == 1 {
                    let want = TileConfig::split_rule_for(s, grid, ctx.split_scratch_bytes, SPLIT_COUNTS).unwrap_or((TileConfig::choose_for(s, grid), 1));
                    prop_assert_eq!((cfg.tile, cfg.split_slices), want, "{:?}", s);
                    // (and that tile and split, asked for, plan the same: helper-51)
                    let split = if cfg.split_slices > 1 { LastWaveSplit::Slices(cfg.split_slices) } else { LastWaveSplit::Off };
                    let opts = GemmAllReduceOptions { tile: Some(cfg.tile), split_last_wave: Some(split), ..Default::default() };
                    prop_assert_eq!(plan_gemm_allreduce(s, opts, ctx).ok(), Some(cfg), "{:?}", s);
                    // A tile asked for alone is not split (as in `mkernel::gemm`).
                    let forced = plan_gemm_allreduce(s, GemmAllReduceOptions { tile: Some(cfg.tile), ..Default::default() }, ctx);
                    prop_assert_eq!(forced.ok(), Some(FusedConfig { split_slices: 1, ..cfg }), "{:?}", s);
                    // (the plain GEMM's own plan with a workspace of the same slots agrees)
                    let plain = plan_gemm(s, GemmOptions::default(), grid, Some(ctx.split_scratch_bytes)).map(|r| (r.tile, r.split_slices));
                    prop_assert_eq!(plain.ok(), Some((cfg.tile, cfg.split_slices)), "{:?}", s);
                }
            }
            Err(e) => prop_assert!(false, "{s:?} world {world} grid {grid}/{sm_count}: the default plan failed: {e}"),
        }
    }

    #[test]
    fn any_options_plan_or_name_the_argument(
        s in shape(),
        world in prop_oneof![Just(2u32), Just(1u32), Just(4u32)],
        tile in proptest::option::of(proptest::sample::select(TileConfig::fused_catalog().collect::<Vec<_>>())),
        path in proptest::option::of(proptest::sample::select(CommPath::ALL.to_vec())),
        comm_ctas in proptest::option::of(0u32..140),
        tail_ctas in proptest::option::of(0u32..140),
        split in proptest::option::of(prop_oneof![Just(LastWaveSplit::Off), Just(LastWaveSplit::Auto), (0u32..9).prop_map(LastWaveSplit::Slices)]),
        pace in proptest::option::of(prop_oneof![Just(EpiloguePace::Sleep), Just(EpiloguePace::Clock)]),
    ) {
        let ctx = context(world, 132, false);
        let opts = GemmAllReduceOptions { tile, comm_path: path, comm_ctas, tail_ctas, split_last_wave: split, epilogue_pace: pace, ..Default::default() };
        match plan_gemm_allreduce(s, opts, ctx) {
            Ok(cfg) => {
                check_plan(&cfg, s, ctx)?;
                // What was asked is what is planned.
                if let Some(t) = tile { prop_assert_eq!(cfg.tile, t); }
                if let Some(p) = path { prop_assert_eq!(cfg.path, p); }
            }
            Err(Error::InvalidArgument { arg, rule }) => prop_assert!(!arg.is_empty() && !rule.is_empty()),
            Err(e) => prop_assert!(false, "{s:?} {opts:?}: not an argument error: {e}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// The plain GEMM (`mkernel::plan_gemm`): every shape gets a default plan that the
    /// catalog and the launch's checks accept, on any SM count; `mkernel::gemm`'s own
    /// workspace (sized as the split rules' pick needs) plans as an unbounded one would.
    #[test]
    fn gemm_default_options_always_plan(s in shape(), sm_count in prop_oneof![Just(132u32), Just(114u32), Just(78u32), 2u32..=200]) {
        let own = plan_gemm(s, GemmOptions::default(), sm_count, None);
        prop_assert!(own.is_ok(), "{:?} on {} SMs: {:?}", s, sm_count, own);
        let Ok(run) = own else { unreachable!() };
        prop_assert!(run.tile.validate_for_gemm().is_ok() && run.tile.check_output(s.n).is_ok(), "{:?}: {}", s, run.tile);
        prop_assert!(run.grid >= 1 && run.grid <= sm_count, "{:?}: grid {} on {} SMs", s, run.grid, sm_count);
        prop_assert!(run.split_slices == 1 || run.tile.can_split_last_wave(), "{:?}: {:?}", s, run);
        prop_assert_eq!(plan_gemm(s, GemmOptions::default(), sm_count, Some(1 << 40)).ok(), Some(run), "{:?}", s);
    }

    /// The plain GEMM with any options: a plan that honours them, or an error naming an
    /// argument; never a panic.
    #[test]
    fn gemm_any_options_plan_or_name_the_argument(
        s in shape(),
        sm_count in prop_oneof![Just(132u32), 2u32..=200],
        tile in proptest::option::of(proptest::sample::select(TileConfig::gemm_catalog().collect::<Vec<_>>())),
        split in prop_oneof![Just(LastWaveSplit::Off), Just(LastWaveSplit::Auto), (0u32..9).prop_map(LastWaveSplit::Slices)],
        workspace in proptest::option::of(prop_oneof![0u64..4096, Just(32u64 << 20)]),
    ) {
        let opts = GemmOptions { tile, split_last_wave: split, ..Default::default() };
        match plan_gemm(s, opts, sm_count, workspace) {
            Ok(run) => {
                if let Some(t) = tile { prop_assert_eq!(run.tile, t); }
                if let LastWaveSplit::Slices(n) = split { prop_assert_eq!(run.split_slices, n); }
                if split == LastWaveSplit::Off { prop_assert_eq!(run.split_slices, 1); }
            }
            Err(Error::InvalidArgument { arg, rule }) => prop_assert!(!arg.is_empty() && !rule.is_empty()),
            Err(e) => prop_assert!(false, "{s:?} {opts:?}: not an argument error: {e}"),
        }
    }
}

/// `mkernel::plan_gemm` refuses by name what the calls refuse before launching.
#[test]
fn gemm_plan_refusals_name_the_argument() {
    let s = GemmShape { m: 2049, n: 8192, k: 4096 };
    let named = |r: mkernel::Result<mkernel::GemmRun>| match r {
        Err(Error::InvalidArgument { arg, rule }) => format!("{arg}: {rule}"),
        other => panic!("{other:?}"),
    };
    assert!(named(plan_gemm(s, GemmOptions::default(), 0, None)).starts_with("sm_count"));
    assert!(named(plan_gemm(s, GemmOptions::default(), mkernel::MAX_PLAN_GRID + 1, None)).starts_with("sm_count"));
    assert!(named(plan_gemm(s, GemmOptions::default(), 132, Some(3))).starts_with("workspace_bytes"));
    assert!(named(plan_gemm(GemmShape { k: 12, ..s }, GemmOptions::default(), 132, None)).contains("K"));
    let split2 = GemmOptions { split_last_wave: LastWaveSplit::Slices(2), tile: Some(TileConfig::NARROW_TMA_STORE), ..Default::default() };
    let e = named(plan_gemm(s, split2, 132, None));
    assert!(e.starts_with("split_last_wave") && e.contains("workspace"), "{e}");
    assert_eq!(plan_gemm(s, split2, 132, Some(32 << 20)).unwrap().split_slices, 2);
    let zero = GemmOptions { split_last_wave: LastWaveSplit::Slices(0), ..Default::default() };
    assert!(named(plan_gemm(s, zero, 132, Some(32 << 20))).starts_with("split_last_wave"));
    let e = named(plan_gemm(GemmShape { n: 8190, ..s }, GemmOptions { tile: Some(TileConfig::WIDE_TMA_STORE), ..Default::default() }, 132, None));
    assert!(e.starts_with("tile"), "{e}");
}

/// A context no communicator has (world size 0 or above MAX_RANKS, fewer than 2 CTAs or
/// more than MAX_PLAN_GRID) is refused by name, not planned (helper-42: grid 0 gave "0
/// compute CTAs"; helper-44: grid u32::MAX searched partitions for 22 s before a later check refused it).
#[test]
fn contexts_no_communicator_has_are_refused() {
    let s = GemmShape { m: 1024, n: 8192, k: 4096 };
    for (world, grid) in [(0, 132), (9, 132), (u32::MAX, 132), (2, 0), (2, 1), (2, mkernel::MAX_PLAN_GRID + 1), (2, u32::MAX)] {
        match plan_gemm_allreduce(s, GemmAllReduceOptions::default(), context(world, grid, false)) {
            Err(Error::InvalidArgument { arg, rule }) => assert!(arg == "ctx" && rule.contains("world size"), "{arg}: {rule}"),
            other => panic!("world {world} grid {grid}: {other:?}"),
        }
    }
    assert!(plan_gemm_allreduce(s, GemmAllReduceOptions::default(), context(8, 2, false)).is_ok());
    assert!(plan_gemm_allreduce(s, GemmAllReduceOptions::default(), context(2, mkernel::MAX_PLAN_GRID, false)).is_ok());
}

/// A path with 16-byte rows asked for with no tile and N % 8 != 0 is refused naming
/// `comm_path` and its rule, not `tile` (the TMA-store tile the planner would pick for it;
/// helper-90); a forced TMA-store tile on such N is still refused naming `tile`.
#[test]
fn a_path_asked_for_on_ragged_n_is_refused_by_its_own_rule() {
    let s = GemmShape { m: 1, n: 17, k: 8 };
    for path in CommPath::ALL.iter().copied().filter(|p| p.needs_16_byte_rows()) {
        let opts = GemmAllReduceOptions { comm_path: Some(path), ..Default::default() };
        match plan_gemm_allreduce(s, opts, context(2, 132, false)) {
            Err(Error::InvalidArgument { arg, rule }) => assert!(arg == "comm_path" && rule.contains("N % 8 == 0") && rule.contains("N=17"), "{}: {arg}: {rule}", path.name()),
            other => panic!("{}: {other:?}", path.name()),
        }
    }
    let forced = GemmAllReduceOptions { tile: Some(TileConfig::WIDE_TMA_STORE), ..Default::default() };
    match plan_gemm_allreduce(s, forced, context(2, 132, false)) {
        Err(Error::InvalidArgument { arg, .. }) => assert_eq!(arg, "tile"),
        other => panic!("{other:?}"),
    }
    // The scalar path takes such N.
    let scalar = GemmAllReduceOptions { comm_path: Some(CommPath::Scalar), ..Default::default() };
    assert!(plan_gemm_allreduce(s, scalar, context(2, 132, false)).is_ok());
}

/// One rank (helper-52): an explicit local path takes plain-GEMM tiles, with or without
/// `tail_ctas: Some(0)`; asking one rank for a fused kernel (comm_ctas, tail_ctas or a
/// fused path) with a clustered or swapped-operand tile is refused naming `tile`, and an
/// explicit local path on two ranks is refused naming `comm_path`.
#[test]
fn one_rank_local_path_and_fused_requests() {
    let s = GemmShape { m: 2048, n: 7168, k: 9216 };
    let cols = TileConfig::cols_tma_store_c2(176);
    let local = GemmAllReduceOptions { comm_path: Some(CommPath::Local), tile: Some(cols), ..Default::default() };
    for opts in [local, GemmAllReduceOptions { tail_ctas: Some(0), ..local }, GemmAllReduceOptions { tile: Some(cols), ..Default::default() }] {
        let cfg = plan_gemm_allreduce(s, opts, context(1, 132, false)).unwrap();
        assert_eq!((cfg.path, cfg.tile), (CommPath::Local, cols), "{opts:?}");
    }
    let e = plan_gemm_allreduce(s, GemmAllReduceOptions { tail_ctas: Some(1), ..local }, context(1, 132, false)).unwrap_err().to_string();
    assert!(e.contains("`tail_ctas`"), "{e}");
    for t in [TileConfig::WIDE_TMA_STORE_C2, TileConfig::swapped_tma_store(136), cols] {
        for opts in [
            GemmAllReduceOptions { tail_ctas: Some(0), ..Default::default() },
            GemmAllReduceOptions { comm_ctas: Some(8), ..Default::default() },
            GemmAllReduceOptions { comm_path: Some(CommPath::TmaOneShot), ..Default::default() },
        ] {
            let opts = GemmAllReduceOptions { tile: Some(t), ..opts };
            let e = plan_gemm_allreduce(s, opts, context(1, 132, false)).unwrap_err().to_string();
            assert!(e.contains("`tile`") && e.contains("local path"), "{opts:?}: {e}");
        }
    }
    let e = plan_gemm_allreduce(s, GemmAllReduceOptions { comm_path: Some(CommPath::Local), ..Default::default() }, context(2, 132, false)).unwrap_err().to_string();
    assert!(e.contains("`comm_path`") && e.contains("one-rank"), "{e}");
    // (a column-fitted TMA-store tile on two ranks: the epilogue path, whole tiles)
    let cfg = plan_gemm_allreduce(s, GemmAllReduceOptions { tile: Some(cols), ..Default::default() }, context(2, 132, false)).unwrap();
    assert_eq!((cfg.path, cfg.tile, cfg.split_slices), (CommPath::Epilogue, cols, 1));
    // (a plain-GEMM tile on two ranks, or on one rank asked for a fused kernel: the fused catalog's rule)
    let plain = TileConfig::cols(176);
    for (world, opts) in [(2, GemmAllReduceOptions { tile: Some(plain), ..Default::default() }), (1, GemmAllReduceOptions { tile: Some(plain), comm_ctas: Some(8), ..Default::default() })] {
        let e = plan_gemm_allreduce(s, opts, context(world, 132, false)).unwrap_err().to_string();
        assert!(e.contains("`tile`") && e.contains("only the plain GEMM"), "world {world}: {e}");
    }
}

/// A tile asked for whose path does not exist at the world size, with no comm_path given,
/// is refused naming `tile` (its default path), also when communication CTAs are asked for
/// (a clustered, swapped-operand or column-fitted tile chose the path); a comm_path given
/// is still named (helper-97).
#[test]
fn a_tiles_own_path_refusal_names_the_tile() {
    let s = GemmShape { m: 1024, n: 8192, k: 4096 };
    let swapped = TileConfig::swapped_tma_store(136);
    for opts in [
        GemmAllReduceOptions { tile: Some(swapped), ..Default::default() },
        GemmAllReduceOptions { tile: Some(swapped), comm_ctas: Some(8), ..Default::default() },
        GemmAllReduceOptions { tile: Some(TileConfig::WIDE_TMA_STORE_C2), ..Default::default() },
    ] {
        match plan_gemm_allreduce(s, opts, context(4, 132, false)) {
            Err(Error::InvalidArgument { arg, rule }) => assert!(arg == "tile" && rule.contains("no comm_path given"), "{opts:?}: {arg}: {rule}"),
            other => panic!("{opts:?}: {other:?}"),
        }
    }
    let asked = GemmAllReduceOptions { tile: Some(swapped), comm_path: Some(CommPath::Epilogue), ..Default::default() };
    match plan_gemm_allreduce(s, asked, context(4, 132, false)) {
        Err(Error::InvalidArgument { arg, .. }) => assert_eq!(arg, "comm_path"),
        other => panic!("{other:?}"),
    }
}

/// One rank takes the plain GEMM's split rules (the local path in the workspace's split
/// slots and counts): 8 x 9216 x 7168 (M <= 64 spilling past a wave) and 256 x 2048 x 8192
/// (few tiles, K >= 4096) split as `TileConfig::split_rule_for` says; `Off` and a forced
/// tile do not split; a count the plain GEMM's rules refuse is refused naming
/// `split_last_wave`; a workspace too small for the rule's slots runs unsplit.
#[test]
fn one_rank_takes_the_plain_split_rules() {
    let ctx = context(1, 132, false);
    for (m, n, k) in [(8, 9216, 7168), (256, 2048, 8192)] {
        let s = GemmShape { m, n, k };
        let (tile, slices) = TileConfig::split_rule_for(s, 132, ctx.split_scratch_bytes, SPLIT_COUNTS).unwrap();
        assert!(slices >= 2, "{s:?}");
        let cfg = plan_gemm_allreduce(s, GemmAllReduceOptions::default(), ctx).unwrap();
        assert_eq!((cfg.path, cfg.tile, cfg.split_slices), (CommPath::Local, tile, slices), "{s:?}: {cfg}");
        assert!(cfg.to_string().ends_with(&format!("local path (one rank: the plain GEMM alone), last wave split {slices}-way")), "{cfg}");
        let off = plan_gemm_allreduce(s, GemmAllReduceOptions { split_last_wave: Some(LastWaveSplit::Off), ..Default::default() }, ctx).unwrap();
        assert_eq!((off.tile, off.split_slices), (TileConfig::choose_for(s, 132), 1), "{s:?}: {off}");
        // More slices than K blocks: the plain GEMM's rule, named.
        let many = GemmAllReduceOptions { split_last_wave: Some(LastWaveSplit::Slices(k / 64 + 1)), ..Default::default() };
        let e = plan_gemm_allreduce(s, many, ctx).unwrap_err().to_string();
        assert!(e.contains("`split_last_wave`") && e.contains("K blocks"), "{e}");
        // A workspace of one 64 x 64 fp32 tile of slots holds no split.
        let tiny = PlanContext { split_scratch_bytes: 64 * 64 * 4, ..ctx };
        let cfg = plan_gemm_allreduce(s, GemmAllReduceOptions::default(), tiny).unwrap();
        assert_eq!(cfg.split_slices, 1, "{s:?}: {cfg}");
    }
    // Whole waves (12 x 11 tiles of 128 x 128 on 132 CTAs): nothing to split, refused by name.
    let s = GemmShape { m: 1536, n: 1408, k: 4096 };
    let two = GemmAllReduceOptions { split_last_wave: Some(LastWaveSplit::Slices(2)), tile: Some(TileConfig::NARROW_TMA_STORE), ..Default::default() };
    let e = plan_gemm_allreduce(s, two, ctx).unwrap_err().to_string();
    assert!(e.contains("`split_last_wave`") && e.contains("whole waves"), "{e}");
    // One tile more: a last wave of one tile, split in 2.
    let s = GemmShape { m: 1536 + 128, ..s };
    assert_eq!(plan_gemm_allreduce(s, two, ctx).unwrap().split_slices, 2);
}
