//! Compiles mkernel-kernels' `comm/ring.cuh` with NVRTC for sm_90a (no GPU needed) together with
//! `static_assert`s generated from the Rust layouts, plus a tiny kernel calling the
//! producer, so a layout or syntax error in the device header fails CI.
//! Skips with a printed reason when NVRTC is absent, unless MKERNEL_REQUIRE_NVRTC=1.

use mkernel_kernels::{jit, source};
use mkernel_proxy::{
    AbortCode, CommandKind, RingControl, RingFault, RingView, TransferCommand, COMMAND_BYTES, NO_COMPLETION,
};

/// mkernel-kernels' `comm/ring.cuh` with its includes expanded.
fn expanded_ring_header() -> String {
    source::expand("#include \"comm/ring.cuh\"\n").unwrap()
}

/// C++ source that asserts, at compile time, that every struct of `ring.cuh` has the
/// size, alignment and field offsets of its Rust mirror, and that the enum codes
/// agree. Append it after the expanded header.
fn layout_check_source() -> String {
    let mut lines = vec![mkernel_kernels::params::OFFSETOF_DEFINE.to_string()];
    lines.extend(
        mkernel_kernels::layout_asserts!(TransferCommand; seq, kind, local_region, peer, remote_region, flags,
        local_offset, remote_offset, length, chunk, epoch, completion),
    );
    lines.extend(
        mkernel_kernels::layout_asserts!(RingControl; head, tail, completed, abort, slots, fault, fault_rank,
        fault_ticket, fault_tail, fault_waited_ns),
    );
    lines.extend(
        mkernel_kernels::layout_asserts!(RingView; slots, control, head, completion, mask, completions,
        timeout_ns, rank, pad),
    );
    let enums: [(&str, u32); 9] = [
        ("CommandKind::Put", CommandKind::Put as u32),
        ("CommandKind::PutSignal", CommandKind::PutSignal as u32),
        ("AbortCode::Transport", AbortCode::Transport as u32),
        ("AbortCode::BadCommand", AbortCode::BadCommand as u32),
        ("AbortCode::ProducerFault", AbortCode::ProducerFault as u32),
        ("AbortCode::Host", AbortCode::Host as u32),
        ("AbortCode::Shutdown", AbortCode::Shutdown as u32),
        ("RingFault::RingFull", RingFault::RingFull as u32),
        ("RingFault::Aborted", RingFault::Aborted as u32),
    ];
    for (name, code) in enums {
        lines.push(format!(
            "static_assert((u32){name} == {code}u, \"{name}: code differs from Rust ({code})\");"
        ));
    }
    lines.push(format!(
        "static_assert(kNoCompletion == {NO_COMPLETION}u, \"kNoCompletion differs from Rust\");"
    ));
    lines.push(format!(
        "static_assert(kCommandBytes == {COMMAND_BYTES}u, \"kCommandBytes differs from Rust\");"
    ));
    lines.join("\n") + "\n"
}


const PRODUCER_KERNEL: &str = r#"
extern "C" __global__ void mkernel_ring_producer_check(RingView ring, TransferCommand cmd, u32* ok) {
  if (threadIdx.x != 0) return;
  cmd.epoch = blockIdx.x + 1;
  bool pushed = ring_push(ring, cmd);
  bool done = pushed && ring_wait_completed(ring, blockIdx.x % ring.completions, cmd.epoch);
  ok[blockIdx.x] = done ? 1u : 0u;
}
"#;

#[test]
fn ring_header_layouts_match_rust_and_producer_compiles() {
    if !jit::nvrtc_or_skip("ring_header_layouts_match_rust_and_producer_compiles").unwrap() {
        return;
    }
    let src = format!(
        "{}\n{}\n{}",
        expanded_ring_header(),
        layout_check_source(),
        PRODUCER_KERNEL
    );
    let kernel = jit::KernelSource {
        name: "mkernel_ring_layout_check".into(),
        source: src,
        needs_toolkit_headers: false,
    };
    let compiler = jit::Compiler::new(None);
    if let Err(e) = compiler.compile(&kernel) {
        panic!("ring.cuh vs src/command.rs:\n{e}");
    }
}

#[test]
fn a_layout_difference_fails_the_compile() {
    if !jit::nvrtc_or_skip("a_layout_difference_fails_the_compile").unwrap() {
        return;
    }
    // The check must be able to fail: move one field in the generated asserts.
    let asserts = layout_check_source().replace(
        "MK_OFFSETOF(TransferCommand, chunk) == 36",
        "MK_OFFSETOF(TransferCommand, chunk) == 40",
    );
    assert_ne!(
        asserts,
        layout_check_source(),
        "the assert to corrupt was not found"
    );
    let kernel = jit::KernelSource {
        name: "mkernel_ring_layout_negative".into(),
        source: format!(
            "{}\n{}\nextern \"C\" __global__ void k() {{}}\n",
            expanded_ring_header(),
            asserts
        ),
        needs_toolkit_headers: false,
    };
    let err = jit::Compiler::new(None)
        .compile(&kernel)
        .unwrap_err()
        .to_string();
    assert!(err.contains("TransferCommand.chunk"), "{err}");
}

#[test]
fn layout_check_names_every_struct_and_field() {
    let src = layout_check_source();
    for s in ["TransferCommand", "RingControl", "RingView"] {
        assert!(src.contains(&format!("sizeof({s})")), "{s} missing");
    }
    assert!(src.contains("MK_OFFSETOF(TransferCommand, completion) == 44"));
}
