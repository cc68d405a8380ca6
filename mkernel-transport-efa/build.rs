//! Generates Rust bindings for libfabric from the system headers (`libfabric-dev`) with
//! bindgen, including C wrappers for the `static inline` calls (`fi_writemsg`,
//! `fi_cq_read`, `fi_mr_reg`, ...) which are compiled into a small static library.
//! Needs libclang at build time (`libclang-dev`).

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");
    let out = match env::var("OUT_DIR") {
        Ok(v) => PathBuf::from(v),
        Err(e) => {
            println!("cargo:warning=OUT_DIR not set: {e}");
            std::process::exit(1);
        }
    };
    let shim = out.join("fabric_static_fns");
    let builder = bindgen::Builder::default()
        .header("wrapper.h")
        .allowlist_function("fi_.*")
        .allowlist_type("fi_.*")
        .allowlist_var("FI_.*")
        .wrap_static_fns(true)
        .wrap_static_fns_path(&shim)
        .derive_default(true)
        .layout_tests(false);
    // (bindgen panics rather than erring when it cannot load libclang: caught, so the
    // hint below is what the user reads last)
    let bindings = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.generate())) {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            println!(
                "cargo:warning=bindgen failed on <rdma/fabric.h>: {e}. Install libfabric-dev and libclang-dev."
            );
            std::process::exit(1);
        }
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("bindgen panicked");
            println!("cargo:warning=bindgen could not run ({why}); install libclang-dev and libfabric-dev (apt-get install libclang-dev clang libfabric-dev), see README.md");
            eprintln!("mkernel-transport-efa: bindgen needs libclang: install libclang-dev and libfabric-dev (see README.md's prerequisites)");
            std::process::exit(1);
        }
    };
    if let Err(e) = bindings.write_to_file(out.join("fabric.rs")) {
        println!("cargo:warning=writing bindings failed: {e}");
        std::process::exit(1);
    }
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    cc::Build::new()
        .file(shim.with_extension("c"))
        .include(manifest)
        .warnings(false)
        .compile("fabric_static_fns");
    println!("cargo:rustc-link-lib=fabric");
}
