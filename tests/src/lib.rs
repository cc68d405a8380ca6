//! Helpers of the integration tests: the GPU skip/require rule.
//!
//! A GPU test calls [`gpu_or_skip`] first: without a usable GPU it prints why and
//! returns `None` (the test passes as skipped), unless `MKERNEL_REQUIRE_GPU=1`, in
//! which case it fails, so a device run cannot pass empty.

use std::io::Write;

/// Returns the number of GPUs, or `None` (after printing the reason) when the test
/// must be skipped. Panics instead of skipping when `MKERNEL_REQUIRE_GPU=1`, or when
/// fewer than `min_gpus` are present under that variable.
pub fn gpu_or_skip(test: &str, min_gpus: usize) -> Option<usize> {
    let required = std::env::var("MKERNEL_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let reason = match mkernel::device_count() {
        Ok(n) if n >= min_gpus => return Some(n),
        Ok(n) => format!("{n} GPU(s) present, {min_gpus} needed"),
        Err(e) => e.to_string(),
    };
    assert!(!required, "{test}: MKERNEL_REQUIRE_GPU=1 but {reason}");
    // Straight to the stderr handle: the test harness captures `eprintln!`, and a skip
    // must be visible without --nocapture.
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {reason}");
    None
}
