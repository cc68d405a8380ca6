//! Single-process bootstrap tests: every rank is a thread of this process.

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use mkernel_topology::{Bootstrap, Error, Result};

const TIMEOUT: Duration = Duration::from_secs(5);

fn free_port() -> u16 {
    mkernel_topology::loopback_port_pair().expect("a free loopback port")
}

/// Runs `body(rank, bootstrap)` on one thread per rank; results in rank order.
fn on_each_rank<T: Send>(group: Vec<Bootstrap>, body: impl Fn(&Bootstrap) -> T + Sync) -> Vec<T> {
    thread::scope(|s| {
        let body = &body;
        let handles: Vec<_> = group.iter().map(|b| s.spawn(move || body(b))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Calls `Bootstrap::new` for each `(rank, world_size)` on its own thread.
fn join_each(port: u16, members: &[(usize, usize)], timeout: Duration) -> Vec<Result<Bootstrap>> {
    thread::scope(|s| {
        let handles: Vec<_> = members
            .iter()
            .map(|&(rank, world_size)| {
                s.spawn(move || Bootstrap::new(rank, world_size, "127.0.0.1", port, timeout))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn bootstrap_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Bootstrap>();
    assert_send_sync::<Error>();
}

#[test]
fn local_group_runs_collectives() {
    let group = Bootstrap::new_local(3, TIMEOUT).unwrap();
    let results = on_each_rank(group, |b| {
        let r = b.rank();
        let all = b.all_gather(&vec![r as u8; r * 3]).unwrap();
        b.barrier().unwrap();
        let bc = b
            .broadcast(2, if r == 2 { b"from two" } else { b"" })
            .unwrap();
        (all, bc)
    });
    for (all, bc) in results {
        assert_eq!(all, vec![vec![], vec![1; 3], vec![2; 6]]);
        assert_eq!(bc, b"from two");
    }
}

#[test]
fn world_size_one_needs_no_socket() {
    let b = Bootstrap::new(0, 1, "unresolvable.invalid", 1, TIMEOUT).unwrap();
    assert_eq!(b.all_gather(b"solo").unwrap(), vec![b"solo".to_vec()]);
    b.barrier().unwrap();
    assert_eq!(b.broadcast(0, b"x").unwrap(), b"x");
}

#[test]
fn invalid_arguments_are_named() {
    let msg = |r: Result<Bootstrap>| r.unwrap_err().to_string();
    assert_eq!(
        msg(Bootstrap::new(3, 3, "127.0.0.1", 1, TIMEOUT)),
        "rank: must be less than world size 3, got 3"
    );
    assert!(msg(Bootstrap::new(0, 0, "127.0.0.1", 1, TIMEOUT))
        .starts_with("world_size: must be in 1..="));
    assert_eq!(
        msg(Bootstrap::new(0, 2, "127.0.0.1", 1, Duration::ZERO)),
        "timeout: must be greater than zero"
    );
    assert_eq!(
        msg(Bootstrap::new(0, 2, "127.0.0.1", 0, TIMEOUT)),
        "master_port: must be in 1..=65535, got 0"
    );

    let group = Bootstrap::new_local(2, TIMEOUT).unwrap();
    let err = group[0].broadcast(2, b"").unwrap_err().to_string();
    assert_eq!(err, "root: must be less than world size 2, got 2");
    // A rejected argument sends nothing and does not poison the group.
    on_each_rank(group, |b| b.barrier().unwrap());
}

#[test]
fn broadcast_root_mismatch_is_reported() {
    let group = Bootstrap::new_local(2, TIMEOUT).unwrap();
    let errs = on_each_rank(group, |b| {
        b.broadcast(b.rank(), b"mine").unwrap_err().to_string()
    });
    for e in &errs {
        assert!(
            e.contains("rank 1 called broadcast #0 with root 1 while rank 0 used root 0"),
            "{e}"
        );
    }
}

#[test]
fn world_size_mismatch_is_reported_on_both_sides() {
    let results = join_each(free_port(), &[(0, 2), (1, 3)], TIMEOUT);
    for r in results {
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("rank 1 was started with world size 3 but rank 0 with world size 2"),
            "{e}"
        );
    }
}

#[test]
fn duplicate_rank_is_reported() {
    let results = join_each(free_port(), &[(0, 3), (1, 3), (1, 3)], TIMEOUT);
    let e = results[0].as_ref().unwrap_err().to_string();
    assert!(e.contains("two processes claim rank 1"), "{e}");
}

#[test]
fn missing_rank_0_fails_to_connect_within_the_timeout() {
    let timeout = Duration::from_millis(300);
    let start = Instant::now();
    let e = Bootstrap::new(1, 2, "127.0.0.1", free_port(), timeout).unwrap_err();
    assert!(
        start.elapsed() < timeout + Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(e, Error::Connect { rank: 1, .. }), "{e}");
    assert!(
        e.to_string()
            .contains("could not connect to rank 0 at 127.0.0.1:"),
        "{e}"
    );
}

#[test]
fn stray_connections_are_ignored() {
    let port = free_port();
    thread::scope(|s| {
        let hub = s.spawn(move || Bootstrap::new(0, 2, "127.0.0.1", port, TIMEOUT));
        // Something that is not a bootstrap peer connects first and sends garbage.
        let deadline = Instant::now() + TIMEOUT;
        let mut stray = loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => break s,
                Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("{e}"),
            }
        };
        stray.write_all(&[0x47; 64]).unwrap();
        let spoke = Bootstrap::new(1, 2, "127.0.0.1", port, TIMEOUT).unwrap();
        let hub = hub.join().unwrap().unwrap();
        on_each_rank(vec![hub, spoke], |b| b.barrier().unwrap());
    });
}

#[test]
fn rebinding_the_master_port_right_after_a_run_works() {
    // Rank 0 closes first, leaving its side of the connections in TIME_WAIT; binding
    // the same port again must still work (SO_REUSEADDR).
    let port = free_port();
    for _ in 0..2 {
        let group: Vec<Bootstrap> = join_each(port, &[(0, 2), (1, 2)], TIMEOUT)
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        on_each_rank(group, |b| b.barrier().unwrap());
    }
}

#[test]
fn errors_poison_the_handle() {
    let mut group = Bootstrap::new_local(2, TIMEOUT).unwrap();
    drop(group.pop()); // rank 1 leaves
    let rank0 = &group[0];
    let e = rank0.barrier().unwrap_err().to_string();
    assert_eq!(
        e,
        "bootstrap barrier #0: rank 1 closed its connection (did that process exit or crash?)"
    );
    let e = rank0.all_gather(b"").unwrap_err().to_string();
    assert!(e.starts_with("bootstrap all_gather #1: not attempted, the bootstrap failed earlier: bootstrap barrier #0"), "{e}");
}

#[test]
fn timeout_names_missing_ranks() {
    let group = Bootstrap::new_local(3, Duration::from_millis(400)).unwrap();
    let start = Instant::now();
    let errs = on_each_rank(group, |b| {
        if b.rank() == 2 {
            None
        } else {
            Some(b.barrier().unwrap_err().to_string())
        }
    });
    let elapsed = start.elapsed();
    let e0 = errs[0].as_deref().unwrap();
    assert_eq!(
        e0,
        "bootstrap barrier #0: timed out after 0.4 s waiting for ranks [2] (arrived: [0, 1])"
    );
    let e1 = errs[1].as_deref().unwrap();
    assert!(
        e1.starts_with("bootstrap barrier #0: aborted by rank 0: bootstrap barrier #0: timed out"),
        "{e1}"
    );
    assert!(elapsed < Duration::from_millis(400 + 600), "{elapsed:?}");
}
