//! Multi-process bootstrap tests on 127.0.0.1.
//!
//! Each `*_across_processes` test re-executes this test binary once per rank, running
//! only the matching `child_*` test with the launcher variables set and
//! `MKERNEL_TOPOLOGY_TEST_CHILD=1`. Without that marker the `child_*` tests return at
//! once, so a plain `cargo test` runs them harmlessly.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mkernel_topology::{Bootstrap, Error, LaunchEnv};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Marks a process as a rank started by a parent test.
const CHILD_MARKER: &str = "MKERNEL_TOPOLOGY_TEST_CHILD";
/// Seed for the random blobs, chosen by the parent so every rank can check every blob.
const SEED_VAR: &str = "MKERNEL_TOPOLOGY_TEST_SEED";
/// Upper bound on one multi-process test; ranks that outlive it are killed.
const PARENT_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------
// Parent side
// ---------------------------------------------------------------------------------

fn free_port() -> u16 {
    mkernel_topology::loopback_port_pair().expect("a free loopback port")
}

/// Starts `ranks` (a subset of `0..world_size`) as child processes running `child_test`.
fn spawn_ranks(
    child_test: &str,
    world_size: usize,
    ranks: &[usize],
    seed: u64,
) -> Vec<(usize, Child)> {
    let exe = std::env::current_exe().expect("current_exe");
    let port = free_port();
    // Two "nodes" when the world size allows it, to exercise the node layout too.
    let local_world_size = if world_size.is_multiple_of(2) {
        world_size / 2
    } else {
        world_size
    };
    ranks
        .iter()
        .map(|&rank| {
            let child = Command::new(&exe)
                .args(["--exact", child_test, "--nocapture", "--test-threads=1"])
                .env(CHILD_MARKER, "1")
                .env(SEED_VAR, seed.to_string())
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", world_size.to_string())
                .env("LOCAL_RANK", (rank % local_world_size).to_string())
                .env("LOCAL_WORLD_SIZE", local_world_size.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn rank");
            (rank, child)
        })
        .collect()
}

/// Waits for every child (killing those still running after `PARENT_LIMIT`) and
/// asserts that each one passed, printing every rank's output otherwise.
fn expect_all_pass(children: Vec<(usize, Child)>) -> Duration {
    let start = Instant::now();
    let mut pending = children;
    let mut done: Vec<(usize, Output)> = Vec::new();
    while !pending.is_empty() {
        let mut i = 0;
        while i < pending.len() {
            let exited = matches!(pending[i].1.try_wait(), Ok(Some(_)));
            if exited || start.elapsed() > PARENT_LIMIT {
                let (rank, mut child) = pending.swap_remove(i);
                if !exited {
                    // Only the children this test started, by their handle.
                    let _ = child.kill();
                }
                done.push((rank, child.wait_with_output().expect("wait rank")));
            } else {
                i += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done.sort_by_key(|(rank, _)| *rank);
    let report: String = done
        .iter()
        .map(|(rank, out)| {
            format!(
                "--- rank {rank}: {}\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .collect();
    println!("{report}"); // shown with --nocapture
    assert!(
        done.iter().all(|(_, out)| out.status.success()),
        "a rank failed:\n{report}"
    );
    start.elapsed()
}

#[test]
fn collectives_across_2_processes() {
    let seed = rand::random::<u64>();
    println!("seed {seed}");
    expect_all_pass(spawn_ranks("child_collectives", 2, &[0, 1], seed));
}

#[test]
fn collectives_across_4_processes() {
    let seed = rand::random::<u64>();
    println!("seed {seed}");
    expect_all_pass(spawn_ranks("child_collectives", 4, &[0, 1, 2, 3], seed));
}

#[test]
fn missing_rank_across_processes() {
    // World size 3, rank 2 never started.
    let elapsed = expect_all_pass(spawn_ranks("child_missing_rank", 3, &[0, 1], 0));
    assert!(
        elapsed < MISSING_RANK_TIMEOUT + Duration::from_secs(5),
        "took {elapsed:?}"
    );
}

#[test]
fn dying_rank_across_processes() {
    expect_all_pass(spawn_ranks("child_dying_rank", 3, &[0, 1, 2], 0));
}

#[test]
fn mismatched_collectives_across_processes() {
    expect_all_pass(spawn_ranks("child_mismatched_collectives", 2, &[0, 1], 0));
}

// ---------------------------------------------------------------------------------
// Child side: each test is a no-op unless started by a parent above.
// ---------------------------------------------------------------------------------

/// The layout and seed of this child, or `None` when not started as a rank.
fn child_env() -> Option<(LaunchEnv, u64)> {
    std::env::var_os(CHILD_MARKER)?;
    let env = LaunchEnv::from_env().expect("launcher environment set by the parent");
    let seed = std::env::var(SEED_VAR)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Some((env, seed))
}

const ROUNDS: usize = 6;
/// The round whose blobs are 1-2 MiB, so frames span many partial reads and writes.
const BIG_ROUND: usize = 3;

/// The blob rank `rank` contributes in `round`: random length (empty for even ranks in
/// round 0) and random bytes, reproducible on every rank from `seed`.
fn blob(seed: u64, round: usize, rank: usize) -> Vec<u8> {
    let mix = ((round as u64) << 32 | rank as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = StdRng::seed_from_u64(seed ^ mix);
    let len = match round {
        0 if rank.is_multiple_of(2) => 0,
        BIG_ROUND => rng.random_range((1 << 20)..(2 << 20)),
        _ => rng.random_range(1..=4096),
    };
    // NOTE: splitmix64 instead of `fill_bytes`: StdRng (ChaCha) in a debug build made
    // the 4-rank test take ~5 s, mostly spent generating the 1-2 MiB blobs.
    let mut state: u64 = rng.random();
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        v.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    v.truncate(len);
    v
}

#[test]
fn child_collectives() {
    let Some((env, seed)) = child_env() else {
        return;
    };
    let (rank, world_size) = (env.rank, env.world_size);
    let boot = Bootstrap::from_launch_env(&env, Duration::from_secs(10)).expect("rendezvous");
    assert_eq!((boot.rank(), boot.world_size()), (rank, world_size));

    for round in 0..ROUNDS {
        let all = boot
            .all_gather(&blob(seed, round, rank))
            .expect("all_gather");
        assert_eq!(all.len(), world_size);
        for (r, got) in all.iter().enumerate() {
            let want = blob(seed, round, r);
            assert!(
                *got == want,
                "rank {rank}, round {round}: blob of rank {r} differs ({} bytes, expected {}; first bad byte {:?})",
                got.len(),
                want.len(),
                got.iter().zip(&want).position(|(a, b)| a != b)
            );
        }

        boot.barrier().expect("barrier");

        let root = round % world_size;
        let want = blob(!seed, round, root);
        let mine = if rank == root {
            want.clone()
        } else {
            Vec::new()
        };
        let got = boot.broadcast(root, &mine).expect("broadcast");
        assert!(
            got == want,
            "rank {rank}, round {round}: broadcast from root {root} differs"
        );
    }
    boot.barrier().expect("final barrier");
    println!("rank {rank}: {ROUNDS} rounds of all_gather/barrier/broadcast ok ({env})");
}

const MISSING_RANK_TIMEOUT: Duration = Duration::from_secs(2);

#[test]
fn child_missing_rank() {
    let Some((env, _)) = child_env() else { return };
    let start = Instant::now();
    let err =
        Bootstrap::from_launch_env(&env, MISSING_RANK_TIMEOUT).expect_err("rank 2 never starts");
    let elapsed = start.elapsed();
    let msg = err.to_string();
    println!("rank {}: {msg} (after {elapsed:?})", env.rank);
    assert!(
        msg.contains("waiting for ranks [2] (connected: [0, 1])"),
        "rank {}: {msg}",
        env.rank
    );
    match env.rank {
        0 => assert!(matches!(err, Error::Timeout { ref missing, .. } if *missing == [2])),
        _ => assert!(matches!(err, Error::Aborted { by: 0, .. })),
    }
    // Rank 0 reports at the deadline; rank 1 hears it moments later.
    assert!(
        elapsed < MISSING_RANK_TIMEOUT + Duration::from_millis(700),
        "rank {}: {elapsed:?}",
        env.rank
    );
    if env.rank == 0 {
        assert!(
            elapsed >= MISSING_RANK_TIMEOUT,
            "rank 0 gave up early: {elapsed:?}"
        );
    }
}

#[test]
fn child_dying_rank() {
    let Some((env, _)) = child_env() else { return };
    let boot = Bootstrap::from_launch_env(&env, Duration::from_secs(10)).expect("rendezvous");
    boot.all_gather(b"alive").expect("first all_gather");
    if env.rank == 2 {
        // Die while ranks 0 and 1 wait in all_gather #1.
        std::thread::sleep(Duration::from_millis(300));
        std::process::exit(0);
    }
    let start = Instant::now();
    let err = boot.all_gather(b"still here").expect_err("rank 2 died");
    let msg = err.to_string();
    println!("rank {}: {msg}", env.rank);
    assert!(msg.contains("bootstrap all_gather #1"), "{msg}");
    assert!(msg.contains("rank 2 closed its connection"), "{msg}");
    // Reported when rank 2 dies, not at the 10 s timeout.
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    // The handle stays failed.
    let again = boot.barrier().expect_err("poisoned").to_string();
    assert!(
        again.contains("bootstrap barrier #2: not attempted"),
        "{again}"
    );
}

#[test]
fn child_mismatched_collectives() {
    let Some((env, _)) = child_env() else { return };
    let boot = Bootstrap::from_launch_env(&env, Duration::from_secs(10)).expect("rendezvous");
    boot.barrier().expect("barrier #0");
    let start = Instant::now();
    let err = match env.rank {
        0 => boot.barrier().expect_err("rank 1 calls all_gather"),
        _ => boot
            .all_gather(b"12345")
            .map(|_| ())
            .expect_err("rank 0 calls barrier"),
    };
    let msg = err.to_string();
    println!("rank {}: {msg}", env.rank);
    assert!(
        msg.contains("rank 1 called all_gather #1 while rank 0 called barrier #1"),
        "{msg}"
    );
    assert!(msg.contains("mismatched collectives"), "{msg}");
    match env.rank {
        0 => assert!(matches!(err, Error::Mismatch { peer: 1, .. })),
        _ => assert!(matches!(err, Error::Aborted { by: 0, .. })),
    }
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}
