//! The `mkernel` binary under a launcher's variables: with --launched the path rules are
//! checked against the launcher's WORLD_SIZE before any rendezvous or device.

use std::process::Command;

fn launched(world: &str, extra: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mkernel"))
        .args(["bench", "gemm-allreduce", "--launched", "--no-json"])
        .args(extra)
        .env("RANK", "0")
        .env("WORLD_SIZE", world)
        .env("LOCAL_RANK", "0")
        .env("LOCAL_WORLD_SIZE", world)
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", "1")
        .env("NCCL_NVLS_ENABLE", "0")
        .env("NVSHMEM_DISABLE_NVLS", "1")
        .env("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
        .output()
        .expect("the mkernel binary runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn launched_ranks_check_path_rules_against_world_size() {
    let (ok, err) = launched("4", &["--comm-path", "epilogue"]);
    assert!(!ok && err.contains("--comm-path epilogue") && err.contains("needs exactly 2 ranks, got 4"), "{err}");
    let (ok, err) = launched("4", &["--tile", "wide-tma-store-c2"]);
    assert!(!ok && err.contains("--tile wide-tma-store-c2") && err.contains("got 4"), "{err}");
    // A launcher variable that is not a number is named.
    let (ok, err) = launched("four", &[]);
    assert!(!ok && err.contains("WORLD_SIZE"), "{err}");
}
