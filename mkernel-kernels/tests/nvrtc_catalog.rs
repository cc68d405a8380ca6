//! Compiles every catalog instantiation with NVRTC for sm_90a (no GPU needed), checks
//! the host/device struct layouts, and checks that a cache hit does not recompile.
//! Skips with a printed reason when NVRTC is absent, unless MKERNEL_REQUIRE_NVRTC=1.

use mkernel_kernels::{catalog, jit};

#[test]
fn host_device_struct_layouts_match() {
    if !jit::nvrtc_or_skip("host_device_struct_layouts_match").unwrap() {
        return;
    }
    let c = jit::Compiler::new(None);
    if let Err(e) = c.compile(&catalog::layout_check().unwrap()) {
        panic!("layout mismatch between src/params.rs and src/cuda/params.cuh:\n{e}");
    }
}

#[test]
fn every_instantiation_compiles_and_cache_hits_skip_nvrtc() {
    if !jit::nvrtc_or_skip("every_instantiation_compiles_and_cache_hits_skip_nvrtc").unwrap() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let first = jit::Compiler::new(Some(dir.path().to_path_buf()));
    let reports = catalog::compile_all(&first).unwrap_or_else(|e| panic!("{e}"));
    for r in &reports {
        assert!(!r.from_cache, "{} came from an empty cache", r.name);
        assert!(r.bytes > 0);
        eprintln!("compiled {:<60} {:>8} bytes {:>6} ms", r.name, r.bytes, r.millis);
    }
    // A fresh compiler (no in-process memo) over the same directory must hit the disk
    // cache for every entry.
    let second = jit::Compiler::new(Some(dir.path().to_path_buf()));
    for src in catalog::all().unwrap() {
        let c = second.compile(&src).unwrap();
        assert!(c.from_cache, "{} recompiled despite a cache entry", src.name);
    }
    // A corrupt entry is recompiled, not loaded.
    let victim = catalog::all().unwrap().remove(1);
    let path = second.compile(&victim).unwrap().path.unwrap();
    std::fs::write(&path, b"garbage").unwrap();
    let third = jit::Compiler::new(Some(dir.path().to_path_buf()));
    let c = third.compile(&victim).unwrap();
    assert!(!c.from_cache && c.cubin.starts_with(b"\x7fELF"));
}

#[test]
fn compile_errors_carry_the_nvrtc_log() {
    if !jit::nvrtc_or_skip("compile_errors_carry_the_nvrtc_log").unwrap() {
        return;
    }
    let c = jit::Compiler::new(None);
    let bad = jit::KernelSource {
        name: "mkernel_bad".into(),
        source: "extern \"C\" __global__ void mkernel_bad() { undeclared_thing(); }".into(),
        needs_toolkit_headers: false,
    };
    let e = c.compile(&bad).unwrap_err().to_string();
    assert!(e.contains("mkernel_bad") && e.contains("undeclared_thing"), "{e}");
}
