//! Embedded device headers and the `#include` resolution that turns an instantiation's
//! entry point into one self-contained translation unit for NVRTC.
//!
//! Every kernel source is generated as: the expanded headers it includes, then an
//! `extern "C" __global__` entry point that instantiates a template with the
//! instantiation's constants. The whole text is part of the JIT cache key.

use crate::error::{Error, Result};

/// Every device header, by path relative to `src/cuda/`.
pub const HEADERS: &[(&str, &str)] = &[
    ("ptx/common.cuh", include_str!("cuda/ptx/common.cuh")),
    ("ptx/wgmma.cuh", include_str!("cuda/ptx/wgmma.cuh")),
    ("ptx/fast_math.cuh", include_str!("cuda/ptx/fast_math.cuh")),
    ("params.cuh", include_str!("cuda/params.cuh")),
    ("sync/wait.cuh", include_str!("cuda/sync/wait.cuh")),
    ("gemm/sm90_gemm.cuh", include_str!("cuda/gemm/sm90_gemm.cuh")),
    ("ops/gemm.cuh", include_str!("cuda/ops/gemm.cuh")),
    ("ops/gemm_allreduce.cuh", include_str!("cuda/ops/gemm_allreduce.cuh")),
    ("ops/allgather_gemm.cuh", include_str!("cuda/ops/allgather_gemm.cuh")),
    ("ops/moe_dispatch_gemm.cuh", include_str!("cuda/ops/moe_dispatch_gemm.cuh")),
    ("ops/moe_gemm_combine.cuh", include_str!("cuda/ops/moe_gemm_combine.cuh")),
    ("ops/ring_attention.cuh", include_str!("cuda/ops/ring_attention.cuh")),
    ("ops/fill.cuh", include_str!("cuda/ops/fill.cuh")),
    ("ops/combine_sum.cuh", include_str!("cuda/ops/combine_sum.cuh")),
    ("ops/barrier.cuh", include_str!("cuda/ops/barrier.cuh")),
    ("ops/gate.cuh", include_str!("cuda/ops/gate.cuh")),
    ("ops/check.cuh", include_str!("cuda/ops/check.cuh")),
    ("comm/ring.cuh", include_str!("cuda/comm/ring.cuh")),
    ("ops/proxy_stream.cuh", include_str!("cuda/ops/proxy_stream.cuh")),
];

fn header(name: &str) -> Option<&'static str> {
    HEADERS.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// Joins `rel` to the directory of `from` and normalises `..` components.
fn resolve(from: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for piece in rel.split('/') {
        match piece {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn expand_into(name: &str, text: &str, seen: &mut Vec<String>, out: &mut String) -> Result<()> {
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#pragma once") {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("#include \"") {
            let rel = rest.split('"').next().unwrap_or_default();
            let target = resolve(name, rel);
            if seen.iter().any(|s| s == &target) {
                continue;
            }
            let body = header(&target)
                .ok_or_else(|| Error::MissingHeader { from: name.to_string(), name: target.clone() })?;
            seen.push(target.clone());
            out.push_str(&format!("// ---- {target} ----\n"));
            expand_into(&target, body, seen, out)?;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(())
}

/// Expands `#include "..."` of embedded headers (each at most once) in `entry`, whose
/// includes are resolved relative to `src/cuda/`.
pub fn expand(entry: &str) -> Result<String> {
    let mut out = String::new();
    let mut seen = Vec::new();
    expand_into("entry.cu", entry, &mut seen, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_includes_once() {
        let src = expand("#include \"ops/gemm.cuh\"\n#include \"params.cuh\"\nint x;\n").unwrap();
        assert_eq!(src.matches("struct GemmParams {").count(), 1, "params.cuh expanded once");
        assert_eq!(src.matches("struct alignas(64) TmaDescriptor").count(), 1, "common.cuh expanded once");
        assert!(!src.contains("#include \""), "no unresolved include left");
        assert!(src.ends_with("int x;\n"));
    }

    #[test]
    fn unknown_header_is_an_error_naming_it() {
        let err = expand("#include \"nope/missing.cuh\"\n").unwrap_err();
        assert!(err.to_string().contains("nope/missing.cuh"), "{err}");
    }

    #[test]
    fn resolve_handles_parent_dirs() {
        assert_eq!(resolve("gemm/sm90_gemm.cuh", "../ptx/common.cuh"), "ptx/common.cuh");
        assert_eq!(resolve("entry.cu", "ops/gemm.cuh"), "ops/gemm.cuh");
    }
}
