//! The GPU-driven inter-node stream (device side in `src/cuda/ops/proxy_stream.cuh`,
//! whose header comment draws the protocol): a persistent kernel whose SEND CTAs stage
//! chunks in pinned host memory (or name device memory directly) and publish
//! `PutSignal` commands into the proxy's ring, while its RECV CTAs wait on arrival flags
//! and check every landed byte against a pattern of (seed, epoch, rank, byte index).
//!
//! This module owns the launch: argument rules ([`StreamShape::validate`]), the grid,
//! and the JIT instantiation. Memory, rings, proxies and transports belong to the
//! caller (the facade's `internode` module).

use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime};
use crate::error::{invalid, Result};
use crate::jit::KernelSource;
use crate::params::ProxyStreamParams;

/// Threads per CTA of the catalog's instantiation.
pub const THREADS: u32 = 512;

/// Threads per CTA of the pattern fill kernel.
const FILL_THREADS: u32 = 256;

/// What a device-side wait of the stream kernel was waiting for when it gave up
/// (`mk::StreamWait`, `ProxyStreamStatus::code`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamWait {
    /// Nothing: the launch did not give up.
    None = 0,
    /// RECV: the peer's chunk (its arrival flag reaching the epoch).
    Arrival = 1,
    /// SEND: the peer's credit (it had not finished verifying the previous epoch).
    Credit = 2,
    /// SEND: the proxy completing a command (staging-slot reuse or the end of the epoch).
    SendComplete = 3,
    /// SEND: space in the command ring (the ring's fault record has the details).
    RingPush = 4,
    /// Any wait: the proxy set its abort word (`observed` holds the abort code).
    ProxyAborted = 5,
}

impl StreamWait {
    /// Every code, for the generated static_asserts.
    pub const ALL: [StreamWait; 6] = [
        StreamWait::None,
        StreamWait::Arrival,
        StreamWait::Credit,
        StreamWait::SendComplete,
        StreamWait::RingPush,
        StreamWait::ProxyAborted,
    ];

    /// Decodes `ProxyStreamStatus::code`.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|w| *w as u32 == code)
    }

    /// What the wait was for, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::None => "nothing",
            Self::Arrival => "the peer's chunk (arrival flag)",
            Self::Credit => "the peer's credit (it had not verified the previous epoch)",
            Self::SendComplete => "the proxy to complete a send (local completion flag)",
            Self::RingPush => "space in the command ring (the proxy did not consume)",
            Self::ProxyAborted => "nothing more: the proxy aborted",
        }
    }

    fn cpp(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Arrival => "Arrival",
            Self::Credit => "Credit",
            Self::SendComplete => "SendComplete",
            Self::RingPush => "RingPush",
            Self::ProxyAborted => "ProxyAborted",
        }
    }
}

/// Sizes and CTA split of one stream. All are run-time values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamShape {
    /// Bytes per direction this epoch (a multiple of 16, at most `capacity_chunks * chunk_bytes`).
    pub bytes: u64,
    /// Bytes per chunk (a multiple of 16).
    pub chunk_bytes: u32,
    /// Chunks the stream's flags and regions are sized for (the credit flag's index).
    pub capacity_chunks: u32,
    /// SEND CTAs.
    pub send_ctas: u32,
    /// RECV CTAs.
    pub recv_ctas: u32,
    /// Staging slots per SEND CTA (host-staged path).
    pub staging_slots: u32,
    /// SMs of the device: every CTA must be resident at once (they wait on each other
    /// through the peer).
    pub sm_count: u32,
}

impl std::fmt::Display for StreamShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes in {} chunks of {} B, {} SEND + {} RECV CTAs, {} staging slots per SEND CTA",
            self.bytes,
            self.chunks(),
            self.chunk_bytes,
            self.send_ctas,
            self.recv_ctas,
            self.staging_slots
        )
    }
}

impl StreamShape {
    /// Chunks this epoch: ceil(bytes / chunk_bytes).
    pub fn chunks(&self) -> u32 {
        if self.chunk_bytes == 0 {
            return 0;
        }
        u32::try_from(self.bytes.div_ceil(u64::from(self.chunk_bytes))).unwrap_or(u32::MAX)
    }

    /// Checks the rules of the kernel, naming the argument that breaks one.
    pub fn validate(&self) -> Result<()> {
        if self.chunk_bytes == 0 || !self.chunk_bytes.is_multiple_of(16) {
            return Err(invalid("chunk_bytes", format!("must be a positive multiple of 16, got {}", self.chunk_bytes)));
        }
        if self.bytes == 0 || !self.bytes.is_multiple_of(16) {
            return Err(invalid("bytes", format!("must be a positive multiple of 16, got {}", self.bytes)));
        }
        let capacity = u64::from(self.capacity_chunks) * u64::from(self.chunk_bytes);
        if self.bytes > capacity {
            return Err(invalid(
                "bytes",
                format!("{} exceeds the stream's capacity of {capacity} bytes ({} chunks of {})", self.bytes, self.capacity_chunks, self.chunk_bytes),
            ));
        }
        if self.send_ctas == 0 || self.recv_ctas == 0 {
            return Err(invalid(
                if self.send_ctas == 0 { "send_ctas" } else { "recv_ctas" },
                format!("SEND and RECV need at least one CTA each, got {} and {}", self.send_ctas, self.recv_ctas),
            ));
        }
        if self.send_ctas.saturating_add(self.recv_ctas) > self.sm_count {
            return Err(invalid(
                "send_ctas",
                format!(
                    "{} SEND + {} RECV CTAs exceed the device's {} SMs (every CTA must be resident)",
                    self.send_ctas, self.recv_ctas, self.sm_count
                ),
            ));
        }
        if self.staging_slots == 0 {
            return Err(invalid("staging_slots", "must be >= 1"));
        }
        Ok(())
    }
}

/// Source of the stream kernel with `threads` threads per CTA. The generated source
/// also asserts that the C++ `StreamWait` codes equal [`StreamWait`]'s.
pub fn source(threads: u32) -> Result<KernelSource> {
    if threads == 0 || !threads.is_multiple_of(32) || threads > 1024 {
        return Err(invalid("threads", format!("must be a multiple of 32 in 32..=1024, got {threads}")));
    }
    let name = format!("mkernel_proxy_stream_t{threads}");
    let mut entry = String::from("#include \"ops/proxy_stream.cuh\"\n");
    for w in StreamWait::ALL {
        entry.push_str(&format!(
            "static_assert((u32)mk::StreamWait::{0} == {1}u, \"StreamWait::{0} differs from Rust ({1})\");\n",
            w.cpp(),
            w as u32
        ));
    }
    entry.push_str(&format!(
        "extern \"C\" __global__ void __launch_bounds__({threads}, 1) {name}(const __grid_constant__ ProxyStreamParams p) {{\n\
         \x20 mk::proxy_stream_kernel<{threads}>(p);\n}}\n"
    ));
    Ok(KernelSource { name, source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
}

/// Source of the kernel that writes a rank's pattern for one epoch into its `src`.
pub fn fill_source() -> Result<KernelSource> {
    KernelSource::single_call("mkernel_proxy_stream_fill", "ops/proxy_stream.cuh", "ProxyStreamParams", "proxy_stream_fill")
}

fn check_params(shape: &StreamShape, p: &ProxyStreamParams) -> Result<()> {
    shape.validate()?;
    if p.chunks != shape.chunks() || p.bytes != shape.bytes || p.chunk_bytes != shape.chunk_bytes {
        return Err(invalid("params", format!("bytes/chunks ({}, {}) do not match the shape ({shape})", p.bytes, p.chunks)));
    }
    if p.epoch == 0 {
        return Err(invalid("epoch", "epochs start at 1 (0 means never arrived)"));
    }
    Ok(())
}

/// Enqueues the fill of `p.src` with rank `p.rank`'s pattern for `p.epoch`
/// (`p.bytes` bytes) on `stream`.
///
/// # Safety
/// `p.src` must hold `p.bytes` bytes in `stream`'s context.
pub unsafe fn launch_fill(rt: &Runtime, stream: &Arc<CudaStream>, shape: &StreamShape, p: &ProxyStreamParams) -> Result<()> {
    check_params(shape, p)?;
    let fill = rt.function(stream.context(), &fill_source()?)?;
    let vectors = p.bytes / 16;
    let grid = vectors.div_ceil(u64::from(FILL_THREADS)).clamp(1, u64::from(shape.sm_count.max(1)) * 8) as u32;
    driver::launch(&fill, LaunchDims { grid, block: FILL_THREADS, smem_bytes: 0 }, stream, p)
}

/// Enqueues the stream kernel (one CTA per SM of `send_ctas + recv_ctas`) on `stream`.
///
/// # Safety
/// Every address in `p` must be valid in `stream`'s context as the header describes
/// (`src` and `landing` of `p.bytes`, the staging slots, flags of `credit_flag + 1`
/// words, the ring of `p.ring` with `credit_flag` completion flags) until the kernel
/// completes, and a proxy must consume the ring.
pub unsafe fn launch(rt: &Runtime, stream: &Arc<CudaStream>, shape: &StreamShape, p: &ProxyStreamParams) -> Result<()> {
    check_params(shape, p)?;
    if p.ring.completions < p.credit_flag || p.credit_flag < p.chunks {
        return Err(invalid(
            "params",
            format!("{} chunks need credit_flag ({}) >= chunks and as many ring completion flags (has {})", p.chunks, p.credit_flag, p.ring.completions),
        ));
    }
    let f = rt.function(stream.context(), &source(THREADS)?)?;
    driver::launch(&f, LaunchDims { grid: shape.send_ctas + shape.recv_ctas, block: THREADS, smem_bytes: 0 }, stream, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> StreamShape {
        StreamShape { bytes: 1 << 20, chunk_bytes: 1 << 16, capacity_chunks: 64, send_ctas: 4, recv_ctas: 4, staging_slots: 2, sm_count: 132 }
    }

    #[test]
    fn shape_rules_name_the_argument() {
        assert!(shape().validate().is_ok());
        assert_eq!(shape().chunks(), 16);
        assert_eq!(StreamShape { bytes: (1 << 16) + 16, ..shape() }.chunks(), 2);
        let cases: [(StreamShape, &str); 7] = [
            (StreamShape { send_ctas: 0, ..shape() }, "`send_ctas`"),
            (StreamShape { chunk_bytes: 24, ..shape() }, "`chunk_bytes`"),
            (StreamShape { bytes: 1000, ..shape() }, "`bytes`"),
            (StreamShape { bytes: 1 << 30, ..shape() }, "capacity"),
            (StreamShape { recv_ctas: 0, ..shape() }, "`recv_ctas`"),
            (StreamShape { send_ctas: 100, recv_ctas: 40, ..shape() }, "132 SMs"),
            (StreamShape { staging_slots: 0, ..shape() }, "`staging_slots`"),
        ];
        for (s, want) in cases {
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(want), "{s:?}: {e}");
        }
    }

    #[test]
    fn wait_codes_round_trip() {
        for w in StreamWait::ALL {
            assert_eq!(StreamWait::from_code(w as u32), Some(w));
        }
        assert_eq!(StreamWait::from_code(77), None);
        assert!(source(500).is_err());
    }
}
