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
    // No kernel's wgmma pipeline is serialised by ptxas (a silent 10-20% on every GEMM:
    // bench/NOTES.md 10.6).
    let serialised: Vec<String> = reports.iter().flat_map(|r| r.wgmma_notes.iter().map(move |n| format!("{}: {n}", r.name))).collect();
    assert!(serialised.is_empty(), "ptxas serialised wgmma in {} place(s):\n{}", serialised.len(), serialised.join("\n"));
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
fn ptxas_wgmma_serialisation_is_reported() {
    if !jit::nvrtc_or_skip("ptxas_wgmma_serialisation_is_reported").unwrap() {
        return;
    }
    // A kernel that reads an accumulator between a wgmma's issue and its wait: ptxas
    // must serialise it and say so, and the compiler must pass the note on.
    let src = jit::KernelSource {
        name: "mkernel_wgmma_serialised".into(),
        source: r#"
extern "C" __global__ void mkernel_wgmma_serialised(float* out, unsigned long long da, unsigned long long db) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  d[0] = d[1] * 0.5f;
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  out[threadIdx.x] = d[0] + d[1] + d[2] + d[3];
}
"#
        .into(),
        needs_toolkit_headers: false,
    };
    let c = jit::Compiler::new(None).compile(&src).unwrap_or_else(|e| panic!("{e}"));
    assert!(!c.wgmma_notes.is_empty(), "ptxas reported nothing about a serialised wgmma");
    // The filter takes ptxas's wgmma lines, not its other -v lines.
    let log = "ptxas info    : Used 168 registers\nptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized\nwarning #177-D: variable declared but never referenced";
    assert_eq!(jit::wgmma_notes(log), vec!["ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized".to_string()]);
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
