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
    // No kernel loses performance ptxas can name (a serialised wgmma pipeline was a
    // silent 10-20% on every GEMM: bench/NOTES.md 10.6).
    let notes: Vec<String> = reports.iter().flat_map(|r| r.performance_notes.iter().map(move |n| format!("{}: {n}", r.name))).collect();
    assert!(notes.is_empty(), "ptxas performance notes in {} place(s):\n{}", notes.len(), notes.join("\n"));
    // Register spills are what tests/known_spills.txt records, kernel by kernel: a kernel
    // that starts spilling, spills more or stops spilling fails here until the record says
    // so (with the measurement that justifies it, bench/NOTES.md).
    let spills: Vec<(String, u64)> = reports.iter().filter_map(|r| r.spill_store_bytes.filter(|&b| b > 0).map(|b| (r.name.clone(), b))).collect();
    let known = known_spills();
    let unknown_kernels: Vec<&String> = known.iter().map(|(n, _)| n).filter(|n| !reports.iter().any(|r| &r.name == *n)).collect();
    assert!(unknown_kernels.is_empty(), "tests/known_spills.txt names kernels the catalog does not have: {unknown_kernels:?}");
    if spills != known {
        let now: Vec<String> = spills.iter().map(|(n, b)| format!("{n} {b}")).collect();
        panic!("ptxas spill stores differ from tests/known_spills.txt; now ({} kernels):\n{}", now.len(), now.join("\n"));
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

/// tests/known_spills.txt: `kernel bytes` lines (bytes of ptxas's spill stores), `#`
/// comments, in the catalog's order.
fn known_spills() -> Vec<(String, u64)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/known_spills.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, bytes) = l.split_once(char::is_whitespace).unwrap_or_else(|| panic!("{}: `{l}` is not `kernel bytes`", path.display()));
            (name.to_string(), bytes.trim().parse().unwrap_or_else(|e| panic!("{}: `{l}`: {e}", path.display())))
        })
        .collect()
}

#[test]
fn spill_stores_are_read_from_the_ptxas_report() {
    let log = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
               ptxas info    : Function properties for k\n\
               ptxas         .     40 bytes stack frame, 36 bytes spill stores, 36 bytes spill loads\n\
               ptxas info    : Function properties for helper\n\
               ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
               ptxas info    : Used 168 registers, used 2 barriers\n\
               note: 99 bytes spill stores (not ptxas's)";
    assert_eq!(jit::spill_store_bytes(log), 40);
    assert_eq!(jit::spill_store_bytes("ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"), 0);
    assert_eq!(jit::spill_store_bytes(""), 0);
}

#[test]
fn ptxas_performance_notes_are_reported() {
    if !jit::nvrtc_or_skip("ptxas_performance_notes_are_reported").unwrap() {
        return;
    }
    // A kernel whose loop reads an accumulator while its wgmma may still be in flight:
    // ptxas injects waits and says so, and the compiler must pass the notes on. (Its
    // name says nothing about wgmma: notes are found by what ptxas says, not by name.)
    let src = jit::KernelSource {
        name: "mkernel_serial_probe".into(),
        source: r#"
extern "C" __global__ void mkernel_serial_probe(float* out, unsigned long long da, unsigned long long db, int n) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  for (int i = 0; i < n; ++i) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da + i), "l"(db));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (d[1] > 3.f) d[0] += 1.f;
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  out[threadIdx.x] = d[0] + d[1] + d[2] + d[3];
}
"#
        .into(),
        needs_toolkit_headers: false,
    };
    let c = jit::Compiler::new(None).compile(&src).unwrap_or_else(|e| panic!("{e}"));
    assert!(!c.performance_notes.is_empty(), "ptxas reported nothing about the probe's wgmma");
    // The filter takes ptxas's notes, not its other -v lines, whatever the kernel's name.
    let log = "ptxas info    : Compiling entry function 'k_wgmma' for 'sm_90a'\n\
               ptxas info    : Function properties for k_wgmma_warpgroup_GMMA\n\
               ptxas info    : Used 168 registers\n\
               ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized\n\
               ptxas info    : (C7517) warpgroup.wait is injected in around line 12 by compiler to allow use of registers defined by GMMA\n\
               warning #177-D: variable declared but never referenced";
    assert_eq!(
        jit::performance_notes(log),
        vec![
            "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized".to_string(),
            "ptxas info    : (C7517) warpgroup.wait is injected in around line 12 by compiler to allow use of registers defined by GMMA".to_string(),
        ]
    );
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
