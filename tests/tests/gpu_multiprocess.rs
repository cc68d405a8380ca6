//! GPU, one process per GPU: the test binary re-executes itself as the ranks (as a
//! launcher would, with RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/MASTER_ADDR/
//! MASTER_PORT), each rank builds `Communicator::from_env`, and
//! - `ranks_agree_over_shapes_and_100_epochs`: checks odd and LLM shapes and 100
//!   back-to-back calls with fresh data against the fp32 reference (each rank
//!   regenerates every rank's inputs from the shared seed), then 20 all-gather + GEMM
//!   calls the same way (each rank's reference: every rank's shard times its own B);
//! - `stopped_peer_is_named_within_the_timeout`: rank 1 joins but never launches;
//!   rank 0 must report a timeout naming rank 1 instead of hanging;
//! - `differing_max_output_elems_are_refused_on_every_rank`: ranks whose
//!   `CommConfig::max_output_elems` differ (so their workspace layouts would) must each get
//!   an error naming it and both ranks' values, not a communicator (refused in the first
//!   step of the exchange, before either rank allocates);
//! - `a_rank_out_of_memory_is_named_on_every_rank_at_once`: rank 1 fills its GPU so that
//!   its workspace cannot be allocated; it must return its own `Error::Allocation`, and
//!   rank 0, at once (well under `bootstrap_timeout`), an `Error::PeerSetup` naming rank 1
//!   and carrying its message.
//!
//! Children are stopped by PID if they overrun. Skips without 2 GPUs.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use half::bf16;
use mkernel::baseline::Cublas;
use mkernel::check::{self, AllReduceCase};
use mkernel::{AllGatherGemmOptions, CommConfig, Communicator, Error, GemmAllReduceOptions, GemmShape};
use mkernel_tests::gpu_or_skip;

const ROLE: &str = "MKERNEL_TEST_MP_ROLE";
const SEED: &str = "MKERNEL_TEST_MP_SEED";

fn free_port_pair() -> u16 {
    mkernel_topology::loopback_port_pair().expect("a free loopback port pair")
}

fn spawn_ranks(role: &str, world: usize, test: &str) -> Vec<Child> {
    let port = free_port_pair();
    let seed = check::fresh_seed();
    eprintln!("spawning {world} ranks of {test}, seed {seed:#x}");
    (0..world)
        .map(|r| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", test, "--nocapture", "--test-threads=1"])
                .env(ROLE, role)
                .env(SEED, seed.to_string())
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("LOCAL_RANK", r.to_string())
                .env("LOCAL_WORLD_SIZE", world.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env("NCCL_NVLS_ENABLE", "0")
                .env("NVSHMEM_DISABLE_NVLS", "1")
                .env("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Waits for every child (bounded); kills overrunning ones by PID. Returns exit codes.
fn wait_all(mut kids: Vec<Child>, limit: Duration) -> Vec<Option<i32>> {
    let start = Instant::now();
    let mut codes = vec![None; kids.len()];
    let mut done = vec![false; kids.len()];
    while done.iter().any(|d| !d) {
        for (i, k) in kids.iter_mut().enumerate() {
            if !done[i] {
                if let Ok(Some(st)) = k.try_wait() {
                    codes[i] = st.code();
                    done[i] = true;
                }
            }
        }
        if start.elapsed() > limit {
            for (i, k) in kids.iter_mut().enumerate() {
                if !done[i] {
                    let _ = k.kill();
                    let _ = k.wait();
                    done[i] = true;
                }
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    codes
}

fn child_role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// A two-process test: in a child process (ROLE set), runs `child` if ROLE is `role`; in
/// the test's own process, skips without two GPUs, else spawns ranks 0 and 1 as `role` and
/// asserts that both exit with status 0 within `limit`.
fn two_ranks(test: &str, role: &str, child: fn(), limit: Duration) {
    if let Some(r) = child_role() {
        if r == role {
            child();
        }
        return;
    }
    if gpu_or_skip(test, 2).is_none() {
        return;
    }
    let codes = wait_all(spawn_ranks(role, 2, test), limit);
    assert!(codes.iter().all(|c| *c == Some(0)), "rank exit codes {codes:?}");
}

#[test]
fn ranks_agree_over_shapes_and_100_epochs() {
    two_ranks("ranks_agree_over_shapes_and_100_epochs", "agree", agree_child, Duration::from_secs(300));
}

fn agree_child() {
    let seed: u64 = std::env::var(SEED).unwrap().parse().unwrap();
    let shapes = [(129u32, 8192u32, 4096u32), (2049, 8192, 4096), (4096, 7168, 9216), (333, 1000, 200), (8192, 8192, 14336)];
    let max = shapes.iter().map(|&(m, n, _)| m as u64 * n as u64).max().unwrap();
    let comm = Communicator::from_env(CommConfig { max_output_elems: max, timeout: Duration::from_secs(20), ..Default::default() }).unwrap();
    let rank = comm.rank();
    let stream = comm.context().new_stream().unwrap();
    let mut blas = Cublas::new(&stream).unwrap();
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let s = GemmShape { m, n, k };
        let reps = if i == 1 { 100 } else { 2 };
        let mut a = stream.alloc_zeros::<bf16>((m * k) as usize).unwrap();
        let mut b = stream.alloc_zeros::<bf16>((n * k) as usize).unwrap();
        let mut out = stream.alloc_zeros::<bf16>(m as usize * n as usize).unwrap();
        for rep in 0..reps {
            let case = AllReduceCase { shape: s, world: comm.world_size(), seed: seed.wrapping_add(1000 * i as u64 + rep) };
            case.fill_inputs(&stream, rank, &mut a, &mut b).unwrap();
            check::poison(&stream, &mut out).unwrap();
            comm.gemm_allreduce(&stream, &a, &b, &mut out, s, GemmAllReduceOptions::default()).unwrap();
            comm.synchronize(&stream).unwrap();
            let cmp = case.verify(&stream, &mut blas, &out).unwrap();
            assert!(cmp.passed(), "rank {rank} {s:?} rep {rep}: {cmp}");
        }
        eprintln!("rank {rank}: ok {s:?} x{reps}");
    }
    // The all-gather + GEMM in this mode (its workspace and flags through the exported
    // handles): every rank draws every rank's shard from the shared seed, uploads its own,
    // and checks the product of all of them with its own weights; 20 calls, fresh data each.
    let s = GemmShape { m: 2050, n: 4096, k: 1024 };
    let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
    let w = comm.world_size() as usize;
    let rows = m / w;
    let mut a = stream.alloc_zeros::<bf16>(rows * k).unwrap();
    let mut out = stream.alloc_zeros::<bf16>(m * n).unwrap();
    for rep in 0..20u64 {
        let base = seed.wrapping_add(7_000_000 + 100 * rep);
        let shards: Vec<Vec<bf16>> = (0..w).map(|q| check::random_bf16(rows * k, base + q as u64)).collect();
        let b = stream.clone_htod(&check::random_bf16(n * k, base + 50 + rank as u64)).unwrap();
        stream.memcpy_htod(&shards[rank as usize], &mut a).unwrap();
        check::poison(&stream, &mut out).unwrap();
        let plan = comm.allgather_gemm(&stream, &a, &b, &mut out, s, AllGatherGemmOptions::default()).unwrap();
        comm.synchronize(&stream).unwrap();
        let full = stream.clone_htod(&shards.concat()).unwrap();
        let mut want = stream.alloc_zeros::<f32>(m * n).unwrap();
        blas.gemm_f32_out(&full, &b, &mut want, s).unwrap();
        let cmp = check::compare(&stream.clone_dtoh(&out).unwrap(), &stream.clone_dtoh(&want).unwrap(), None, n, k);
        assert!(cmp.passed(), "rank {rank} all-gather + GEMM {s:?} {plan} rep {rep}: {cmp}");
    }
    eprintln!("rank {rank}: ok all-gather + GEMM {s:?} x20");
}

#[test]
fn stopped_peer_is_named_within_the_timeout() {
    two_ranks("stopped_peer_is_named_within_the_timeout", "stopped", stopped_child, Duration::from_secs(120));
}

fn stopped_child() {
    let timeout = Duration::from_secs(3);
    let comm = Communicator::from_env(CommConfig { max_output_elems: 1 << 20, timeout, ..Default::default() }).unwrap();
    let stream = comm.context().new_stream().unwrap();
    let s = GemmShape { m: 512, n: 1024, k: 256 };
    if comm.rank() == 1 {
        // Joined, but never launches; stays alive (its memory stays mapped) past
        // rank 0's timeout, then leaves without the collective drop barrier.
        std::thread::sleep(timeout + Duration::from_secs(4));
        std::mem::forget(comm);
        return;
    }
    let a = stream.alloc_zeros::<bf16>(512 * 256).unwrap();
    let b = stream.alloc_zeros::<bf16>(1024 * 256).unwrap();
    let mut out = stream.alloc_zeros::<bf16>(512 * 1024).unwrap();
    let start = Instant::now();
    comm.gemm_allreduce(&stream, &a, &b, &mut out, s, GemmAllReduceOptions::default()).unwrap();
    let err = comm.synchronize(&stream).unwrap_err();
    let elapsed = start.elapsed();
    assert!(matches!(err, Error::PeerTimeout { rank: 0, peer: 1, .. }), "expected a timeout naming rank 1, got: {err}");
    assert!(elapsed < timeout + Duration::from_secs(3), "took {elapsed:?}");
    eprintln!("rank 0: stopped peer reported after {elapsed:?}: {err}");
    std::mem::forget(comm);
}

#[test]
fn differing_max_output_elems_are_refused_on_every_rank() {
    two_ranks("differing_max_output_elems_are_refused_on_every_rank", "differing", differing_child, Duration::from_secs(120));
}

fn differing_child() {
    let rank: u64 = std::env::var("RANK").unwrap().parse().unwrap();
    let config = CommConfig { max_output_elems: (1 << 20) + rank, bootstrap_timeout: Duration::from_secs(20), ..Default::default() };
    let err = Communicator::from_env(config).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { arg: "max_output_elems", .. }), "rank {rank}: {err}");
    assert!(err.to_string().contains("rank 0 has 1048576, rank 1 has 1048577"), "rank {rank}: {err}");
    eprintln!("rank {rank}: refused: {err}");
}

#[test]
fn a_rank_out_of_memory_is_named_on_every_rank_at_once() {
    two_ranks("a_rank_out_of_memory_is_named_on_every_rank_at_once", "oom", oom_child, Duration::from_secs(150));
}

fn oom_child() {
    let rank: usize = std::env::var("RANK").unwrap().parse().unwrap();
    // Both ranks ask for 2^31 outputs (a workspace of about 4 GiB, equal on both: unequal
    // values are refused before anyone allocates); rank 1 first leaves 1 GiB of its GPU free.
    // (2^37, the largest max_output_elems, needs 256 GiB: no GPU here holds it, so it would
    // fail on both ranks alike.)
    let max_output_elems = 1u64 << 31;
    let _hog = (rank == 1).then(|| {
        let ctx = cudarc::driver::CudaContext::new(rank).unwrap();
        let (free, _) = ctx.mem_get_info().unwrap();
        let leave = 1usize << 30;
        assert!(free > 2 * leave, "rank 1: only {free} bytes free on GPU 1");
        // SAFETY: the context is current (mem_get_info binds it); freed at exit.
        unsafe { cudarc::driver::result::malloc_sync(free - leave) }.unwrap()
    });
    let timeout = Duration::from_secs(90);
    let start = Instant::now();
    let config = CommConfig { max_output_elems, bootstrap_timeout: timeout, ..Default::default() };
    let err = Communicator::from_env(config).unwrap_err();
    let elapsed = start.elapsed();
    // (the time includes the rendezvous: the other process's CUDA start-up)
    assert!(elapsed < Duration::from_secs(30), "rank {rank}: returned after {elapsed:?} (bootstrap_timeout {timeout:?}): {err}");
    let e = err.to_string();
    if rank == 1 {
        assert!(matches!(err, Error::Allocation { .. }), "rank 1: {e}");
        assert!(e.contains("rank 1's symmetric workspace on GPU 1") && e.contains("max_output_elems = 2147483648"), "rank 1: {e}");
    } else {
        assert!(matches!(err, Error::PeerSetup { rank: 0, peer: 1, .. }), "rank 0: {e}");
        assert!(e.starts_with("rank 0: rank 1 could not set up its symmetric workspace"), "rank 0: {e}");
        assert!(e.contains("rank 1's symmetric workspace on GPU 1") && e.contains("max_output_elems = 2147483648"), "rank 0: {e}");
    }
    eprintln!("rank {rank}: refused after {elapsed:?}: {e}");
}
