// Embeds the commit the benchmark binary was built from into its JSON results.
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    println!("cargo:rustc-env=MKERNEL_GIT_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/index");
    // Edits that are not staged leave HEAD and the index alone: watch the sources too,
    // so a binary built from an edited tree says `-dirty`.
    for dir in ["src", "../mkernel-kernels/src", "../mkernel-sm/src", "../mkernel-proxy/src", "../mkernel-topology/src",
                "../mkernel-transport/src", "../mkernel-transport-efa/src"] {
        println!("cargo:rerun-if-changed={dir}");
    }
}
