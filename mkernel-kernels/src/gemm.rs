//! The plain GEMM operator: C\[M,N\] = A\[M,K\] * B\[N,K\]^T on one GPU.
//!
//! Layouts (bf16, row-major, contiguous):
//! - `a`: \[M, K\] (K contiguous),
//! - `b`: \[N, K\] (K contiguous: the layout of a PyTorch `nn.Linear` weight, i.e. B^T
//!   of a [K, N] matrix; both operands K-major is what TMA + wgmma read natively),
//! - `c`: \[M, N\] (N contiguous), fp32 accumulation rounded once to bf16.
//!
//! Any M, N >= 1 and K >= 8 with K % 8 == 0 work: partial tiles are zero-filled by TMA
//! on load and masked on store. K % 8 != 0 is refused because TMA needs every row
//! stride to be a multiple of 16 bytes.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::CudaStream;

use crate::driver::{self, LaunchDims, Runtime, Tensor2d};
use crate::error::{invalid, Result};
use crate::jit::KernelSource;
use crate::params::GemmParams;

/// JIT constants of the GEMM engine (`mk::GemmConfig<BM, BN, BK, STAGES>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileConfig {
    /// Rows of C per tile (two consumer warpgroups of 64).
    pub bm: u32,
    /// Columns of C per tile (the wgmma N).
    pub bn: u32,
    /// K per pipeline stage (one 128-byte swizzle row).
    pub bk: u32,
    /// Shared-memory pipeline stages.
    pub stages: u32,
    /// How finished tiles leave the SM.
    pub epilogue: Epilogue,
    /// CTAs per cluster along M (1 or 2): with 2, the two CTAs of a cluster compute
    /// vertically adjacent tiles together and each B tile is TMA-multicast to both from
    /// one read of L2 (within the GPU; no NVLink multicast). The grid is then even, and
    /// an odd number of row blocks gets one padding tile per column block.
    pub cluster_m: u32,
}

/// How the GEMM engine writes a finished tile (`mk::Epilogue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Consumers store their accumulator fragments straight to global memory (any N).
    Registers,
    /// Consumers stage the tile in shared memory and a storer warp TMA-stores it while
    /// they start the next tile (needs N % 8 == 0; costs a pipeline stage of shared
    /// memory).
    TmaStore,
}

impl std::fmt::Display for TileConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tile {}x{}x{}, {} stages", self.bm, self.bn, self.bk, self.stages)?;
        if self.epilogue == Epilogue::TmaStore {
            write!(f, ", TMA-store epilogue")?;
        }
        if self.cluster_m > 1 {
            write!(f, ", {}-CTA clusters (B multicast)", self.cluster_m)?;
        }
        Ok(())
    }
}

impl TileConfig {
    /// 128 x 256 tiles, 4 stages: the large-problem configuration.
    pub const WIDE: Self = Self { bm: 128, bn: 256, bk: 64, stages: 4, epilogue: Epilogue::Registers, cluster_m: 1 };
    /// 128 x 128 tiles, 6 stages: more tiles for small problems.
    pub const NARROW: Self = Self { bm: 128, bn: 128, bk: 64, stages: 6, epilogue: Epilogue::Registers, cluster_m: 1 };
    /// [`Self::WIDE`] with the TMA-store epilogue (3 stages + a 64 KiB staging tile).
    pub const WIDE_TMA_STORE: Self = Self { bm: 128, bn: 256, bk: 64, stages: 3, epilogue: Epilogue::TmaStore, cluster_m: 1 };
    /// [`Self::NARROW`] with the TMA-store epilogue (5 stages + a 32 KiB staging tile).
    pub const NARROW_TMA_STORE: Self = Self { bm: 128, bn: 128, bk: 64, stages: 5, epilogue: Epilogue::TmaStore, cluster_m: 1 };
    /// 64 x 256 tiles (one consumer warpgroup), 5 stages: less padding and more tiles
    /// for small M (M=129 is 3 row blocks instead of 2 half-empty ones). Opt-in, not yet
    /// measured on a GPU (bench/NOTES.md 4.5).
    pub const M64_WIDE: Self = Self { bm: 64, bn: 256, bk: 64, stages: 5, epilogue: Epilogue::Registers, cluster_m: 1 };
    /// [`Self::M64_WIDE`] with the TMA-store epilogue (4 stages + a 32 KiB staging tile).
    pub const M64_WIDE_TMA_STORE: Self = Self { bm: 64, bn: 256, bk: 64, stages: 4, epilogue: Epilogue::TmaStore, cluster_m: 1 };
    /// 64 x 128 tiles (one consumer warpgroup), 8 stages, TMA-store epilogue: twice the
    /// tiles of [`Self::M64_WIDE_TMA_STORE`], for small M where 64 x 256 tiles fill less
    /// than one wave (M=129 on 132 SMs: 96 tiles; 192 of these, whose last wave the fused
    /// epilogue path can split). Opt-in: slower than 64 x 256 tiles on the H200 (fused
    /// M=129 0.0617 against 0.0586 ms, plain 0.0446 against 0.034; bench/NOTES.md 14.1).
    pub const M64_NARROW_TMA_STORE: Self = Self { bm: 64, bn: 128, bk: 64, stages: 8, epilogue: Epilogue::TmaStore, cluster_m: 1 };
    /// [`Self::WIDE_TMA_STORE`] in 2-CTA clusters sharing B (TMA multicast). The plain
    /// GEMM's default when K % 64 != 0 ([`Self::choose_for`]); otherwise opt-in (within
    /// +-2% there, bench/NOTES.md 13.2).
    pub const WIDE_TMA_STORE_C2: Self = Self { cluster_m: 2, ..Self::WIDE_TMA_STORE };
    /// [`Self::NARROW_TMA_STORE`] in 2-CTA clusters sharing B. Opt-in (NOTES 13.2).
    pub const NARROW_TMA_STORE_C2: Self = Self { cluster_m: 2, ..Self::NARROW_TMA_STORE };
    /// [`Self::M64_WIDE_TMA_STORE`] in 2-CTA clusters sharing B. The plain GEMM's
    /// default in place of that tile when K % 64 != 0 and M > 64 ([`Self::choose_for`]).
    pub const M64_WIDE_TMA_STORE_C2: Self = Self { cluster_m: 2, ..Self::M64_WIDE_TMA_STORE };
    /// Every configuration the catalog instantiates.
    pub const ALL: [Self; 10] = [
        Self::WIDE,
        Self::NARROW,
        Self::WIDE_TMA_STORE,
        Self::NARROW_TMA_STORE,
        Self::M64_WIDE,
        Self::M64_WIDE_TMA_STORE,
        Self::WIDE_TMA_STORE_C2,
        Self::NARROW_TMA_STORE_C2,
        Self::M64_WIDE_TMA_STORE_C2,
        Self::M64_NARROW_TMA_STORE,
    ];

    /// The configuration of [`Self::ALL`] with this one's tile shape, cluster and the
    /// TMA-store epilogue (itself if it has it).
    pub fn with_tma_store(self) -> Self {
        Self::ALL
            .into_iter()
            .find(|t| {
                t.epilogue == Epilogue::TmaStore
                    && t.bm == self.bm
                    && t.bn == self.bn
                    && t.bk == self.bk
                    && t.cluster_m == self.cluster_m
            })
            .unwrap_or(self)
    }

    /// The command-line name of a configuration of [`Self::ALL`].
    pub fn name(&self) -> String {
        let base = match (self.bm, self.bn) {
            (64, 128) => "m64-narrow",
            (64, _) => "m64-wide",
            (_, 256) => "wide",
            _ => "narrow",
        };
        let epi = if self.epilogue == Epilogue::TmaStore { "-tma-store" } else { "" };
        let cluster = if self.cluster_m > 1 { format!("-c{}", self.cluster_m) } else { String::new() };
        format!("{base}{epi}{cluster}")
    }

    /// Looks a configuration up by its command-line name: `wide`, `narrow`,
    /// `wide-tma-store`, `narrow-tma-store`, `m64-wide`, `m64-wide-tma-store`,
    /// `m64-narrow-tma-store`, and the
    /// clustered `wide-tma-store-c2`, `narrow-tma-store-c2`, `m64-wide-tma-store-c2`.
    pub fn by_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Checks that this is one of the configurations the catalog instantiates
    /// ([`Self::ALL`]). The fields are public, but no kernel exists for other values
    /// (and a zero `bm`/`bn` would divide by zero in the tile counts).
    pub fn validate(&self) -> Result<()> {
        if Self::ALL.contains(self) {
            return Ok(());
        }
        Err(invalid(
            "tile",
            format!(
                "{self:?} is not a catalog configuration; use one of TileConfig::ALL ({})",
                Self::ALL.map(|t| t.name()).join(", ")
            ),
        ))
    }

    /// Threads per CTA: one producer warpgroup plus BM/64 consumer warpgroups.
    pub fn threads(&self) -> u32 {
        128 + 128 * (self.bm / 64)
    }

    /// Dynamic shared memory per CTA in bytes (mirrors `GemmConfig::kSmemBytes`, checked
    /// when the kernels compile).
    pub fn smem_bytes(&self) -> u32 {
        let staging = if self.epilogue == Epilogue::TmaStore { self.bm * self.bn * 2 } else { 0 };
        self.stages * (self.bm * self.bk * 2 + self.bn * self.bk * 2) + staging + 2 * self.stages * 8 + 1024
    }

    /// Number of tiles the kernel schedules for an M x N problem: the output tiles, and
    /// with clusters one padding tile per column block when the row blocks are odd
    /// (mirrors `TileScheduler::total`; flags and waves count these).
    pub fn tiles(&self, m: u32, n: u32) -> u64 {
        let cm = self.cluster_m.max(1) as u64;
        (m.div_ceil(self.bm.max(1)) as u64).div_ceil(cm) * cm * n.div_ceil(self.bn.max(1)) as u64
    }

    /// CTAs of a persistent grid on `sm_count` SMs for `tiles` scheduled tiles: one per
    /// tile up to one per SM, rounded down to whole clusters (at least one cluster, so
    /// with fewer SMs than a cluster it exceeds `sm_count`: CTAs then wait for SMs).
    pub fn grid_for(&self, tiles: u64, sm_count: u32) -> u32 {
        let cm = self.cluster_m.max(1);
        let g = tiles.min(sm_count as u64).max(1) as u32;
        (g / cm * cm).max(cm)
    }

    /// The C++ type naming this configuration.
    pub fn cpp_type(&self) -> String {
        let epi = match self.epilogue {
            Epilogue::Registers => "mk::Epilogue::Registers",
            Epilogue::TmaStore => "mk::Epilogue::TmaStore",
        };
        if self.cluster_m > 1 {
            format!("mk::GemmConfig<{}, {}, {}, {}, {epi}, {}>", self.bm, self.bn, self.bk, self.stages, self.cluster_m)
        } else {
            format!("mk::GemmConfig<{}, {}, {}, {}, {epi}>", self.bm, self.bn, self.bk, self.stages)
        }
    }

    /// The entry point's cluster attribute (empty without clusters).
    pub fn cluster_attribute(&self) -> String {
        if self.cluster_m > 1 {
            format!(" __cluster_dims__({}, 1, 1)", self.cluster_m)
        } else {
            String::new()
        }
    }

    /// Short tag used in kernel names.
    pub fn tag(&self) -> String {
        let epi = if self.epilogue == Epilogue::TmaStore { "_te" } else { "" };
        let cluster = if self.cluster_m > 1 { format!("_c{}", self.cluster_m) } else { String::new() };
        format!("bm{}_bn{}_bk{}_s{}{epi}{cluster}", self.bm, self.bn, self.bk, self.stages)
    }

    /// Checks that this configuration can produce an N-column output.
    pub fn check_output(&self, n: u32) -> Result<()> {
        if self.epilogue == Epilogue::TmaStore && n % 8 != 0 {
            return Err(invalid(
                "tile",
                format!("the TMA-store epilogue needs N % 8 == 0 (16-byte rows of C), got N={n}; use a Registers configuration"),
            ));
        }
        Ok(())
    }

    /// Heuristic: wide tiles unless they leave most SMs idle (fewer tiles than half
    /// the SMs), then narrow ones. Wide tiles use the TMA-store epilogue when N allows
    /// it (N % 8 == 0): on the H200 it was 5-33% faster on every wide shape of `bench
    /// gemm` (bench/NOTES.md, run 2026-11-30T062710Z).
    ///
    /// Before that: 64x256 tiles (TMA-store epilogue) when M <= 4096 ends in a short
    /// row of 128-row tiles (M % 128 in 1..=64), where 128-row tiles would compute up to
    /// 64 padding rows per column of tiles: on the H200 they took M=1 from 0.046 to
    /// 0.034 ms, M=129 from 0.048 to 0.034 ms and M=2049 from 0.230 to 0.223 ms (N=8192,
    /// K=4096; bench/NOTES.md, run 10), and the fused M=129 call from 0.080 to 0.054 ms.
    pub fn choose(m: u32, n: u32, sm_count: u32) -> Self {
        if n % 8 == 0 && m <= 4096 && (1..=64).contains(&(m % 128)) {
            Self::M64_WIDE_TMA_STORE
        } else if Self::WIDE.tiles(m, n) * 2 < sm_count as u64 {
            Self::NARROW
        } else if n % 8 == 0 {
            Self::WIDE_TMA_STORE
        } else {
            Self::WIDE
        }
    }
}

impl TileConfig {
    /// [`Self::choose`] for a whole shape: its TMA-store tile in 2-CTA clusters sharing
    /// B ([`Self::WIDE_TMA_STORE_C2`], [`Self::M64_WIDE_TMA_STORE_C2`]) when K % 64 != 0
    /// and there are at least two row blocks (one would pair with a padding tile).
    ///
    /// Why: rows of A and B that are not a multiple of 128 bytes apart (K % 64 != 0) make
    /// every 128-byte row of a TMA box straddle two L2 lines; the unclustered kernel then
    /// runs at 440-530 TFLOP/s, and fetching each B tile once per pair (TMA multicast)
    /// takes it back to 550-680 (H200, bench gemm, 2026-11-30 ~20:48Z, runs 89-90: 4096^2 x 1000
    /// 0.0757 -> 0.0600 ms, x 1032 0.0782 -> 0.0628, 4096^2 x 4104 0.2720 -> 0.2084,
    /// 8192^2 x 4104 1.0351 -> 0.8060, 2048 x 8192 x 1000 0.0745 -> 0.0609; 64 x 256
    /// tiles: 4096^2 x 1000 0.1163 -> 0.0720, 129 x 8192 x 4104 0.0555 -> 0.0462, 2049 x
    /// 8192 x 1000 0.1177 -> 0.0796, but M=1 0.0372 -> 0.0389). With K % 64 == 0
    /// clusters changed nothing beyond +-2% on 27 shapes and were 5-15% slower for
    /// M <= 129, so they stay off there (bench/NOTES.md 13).
    pub fn choose_for(shape: GemmShape, sm_count: u32) -> Self {
        let t = Self::choose(shape.m, shape.n, sm_count);
        if shape.k % 64 == 0 || shape.m <= t.bm {
            return t;
        }
        if t == Self::WIDE_TMA_STORE || t == Self::M64_WIDE_TMA_STORE {
            Self { cluster_m: 2, ..t }
        } else {
            t
        }
    }
}

/// Largest M, N or K: tile coordinates (up to a tile past the edge) must stay within
/// TMA's signed 32-bit coordinates.
pub const MAX_DIM: usize = (1 << 31) - 256;

/// Shape of one GEMM: C\[M,N\] = A\[M,K\] * B\[N,K\]^T.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmShape {
    /// Rows of A and C.
    pub m: u32,
    /// Rows of B, columns of C.
    pub n: u32,
    /// Columns of A and B (the reduction dimension).
    pub k: u32,
}

impl GemmShape {
    /// Floating-point operations (2 M N K).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Checks the shape rules and the operand lengths (in elements).
    pub fn validate(&self, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
        self.validate_dims()?;
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        if a_len < m * k {
            return Err(invalid("a", format!("expected [M={m}, K={k}] = {} elements, got {a_len}", m * k)));
        }
        if b_len < n * k {
            return Err(invalid("b", format!("expected [N={n}, K={k}] = {} elements, got {b_len}", n * k)));
        }
        if c_len < m * n {
            return Err(invalid("c", format!("expected [M={m}, N={n}] = {} elements, got {c_len}", m * n)));
        }
        Ok(())
    }

    /// Checks the shape rules alone (no operands): M, N, K in 1..=[`MAX_DIM`], at most
    /// 2^32 128x128 output tiles, K % 8 == 0.
    pub fn validate_dims(&self) -> Result<()> {
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        if m == 0 || n == 0 || k == 0 {
            return Err(invalid("shape", format!("M, N and K must be >= 1, got M={m}, N={n}, K={k}")));
        }
        if m > MAX_DIM || n > MAX_DIM || k > MAX_DIM {
            return Err(invalid(
                "shape",
                format!(
                    "M, N and K must be at most 2^31 - 256 = {MAX_DIM} (TMA coordinates are signed 32-bit), got M={m}, N={n}, K={k}"
                ),
            ));
        }
        if (m.div_ceil(128) as u64) * (n.div_ceil(128) as u64) > u32::MAX as u64 {
            return Err(invalid("shape", format!("M={m} x N={n} has more than 2^32 output tiles")));
        }
        if k % 8 != 0 {
            return Err(invalid(
                "k",
                format!("K must be a multiple of 8 (TMA needs the rows of A and B to be a multiple of 16 bytes apart), got K={k}"),
            ));
        }
        Ok(())
    }
}

/// Name of the GEMM kernel for `cfg`.
pub fn kernel_name(cfg: TileConfig) -> String {
    format!("mkernel_gemm_{}", cfg.tag())
}

/// Source of the GEMM kernel instantiated with `cfg`.
pub fn source(cfg: TileConfig) -> Result<KernelSource> {
    cfg.validate()?;
    let name = kernel_name(cfg);
    let entry = format!(
        "#include \"ops/gemm.cuh\"\n\
         extern \"C\" __global__ void __launch_bounds__({threads}, 1){cluster} {name}(const __grid_constant__ GemmParams p) {{\n\
         \x20 mk::gemm_kernel<{cfg_ty}>(p);\n}}\n\
         static_assert({cfg_ty}::kSmemBytes == {smem}, \"shared memory differs from the host's TileConfig::smem_bytes\");\n",
        threads = cfg.threads(),
        cluster = cfg.cluster_attribute(),
        cfg_ty = cfg.cpp_type(),
        smem = cfg.smem_bytes()
    );
    Ok(KernelSource { name, source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
}

/// TMA descriptors of the two K-major operands for tile config `cfg`.
pub fn operand_maps(
    a: u64,
    b: u64,
    shape: GemmShape,
    cfg: TileConfig,
) -> Result<(crate::params::TmaDescriptor, crate::params::TmaDescriptor)> {
    let k = shape.k as u64;
    let ta = Tensor2d { ptr: a, rows: shape.m as u64, cols: k, row_stride_bytes: 2 * k };
    let tb = Tensor2d { ptr: b, rows: shape.n as u64, cols: k, row_stride_bytes: 2 * k };
    Ok((
        driver::tma_2d_bf16(ta, cfg.bm, cfg.bk, driver::Swizzle::B128, "a")?,
        // (with clusters each CTA loads, and multicasts, 1 / cluster_m of the B tile)
        driver::tma_2d_bf16(tb, cfg.bn / cfg.cluster_m.max(1), cfg.bk, driver::Swizzle::B128, "b")?,
    ))
}

/// TMA descriptor of an \[M, N\] bf16 output for the TMA-store epilogue (box [BM rows x
/// 64 columns], 128B swizzle); a zeroed descriptor for the Registers epilogue.
pub fn output_map(c: u64, shape: GemmShape, cfg: TileConfig) -> Result<crate::params::TmaDescriptor> {
    if cfg.epilogue != Epilogue::TmaStore {
        return Ok(Default::default());
    }
    let t = Tensor2d { ptr: c, rows: shape.m as u64, cols: shape.n as u64, row_stride_bytes: 2 * shape.n as u64 };
    driver::tma_2d_bf16(t, cfg.bm, 64, driver::Swizzle::B128, "c")
}

/// Launches C = A * B^T on `stream`. `a`, `b`, `c` are device addresses of contiguous
/// bf16 buffers of at least the lengths `shape` needs (the caller validated them with
/// [`GemmShape::validate`]). Returns the tile configuration used.
///
/// # Safety
/// The addresses must be valid device memory of `stream`'s context for the duration
/// of the launch.
pub unsafe fn launch(
    rt: &Runtime,
    stream: &Arc<CudaStream>,
    a: u64,
    b: u64,
    c: u64,
    shape: GemmShape,
    cfg: Option<TileConfig>,
    timeout: Duration,
) -> Result<TileConfig> {
    let ctx = stream.context();
    let info = driver::device_info(ctx)?;
    driver::require_hopper(&info)?;
    let cfg = cfg.unwrap_or_else(|| TileConfig::choose_for(shape, info.sm_count));
    tracing::debug!(m = shape.m, n = shape.n, k = shape.k, %cfg, "gemm");
    cfg.validate()?;
    cfg.check_output(shape.n)?;
    let (tma_a, tma_b) = operand_maps(a, b, shape, cfg)?;
    let params = GemmParams {
        tma_a,
        tma_b,
        tma_c: output_map(c, shape, cfg)?,
        c,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        ldc: shape.n,
        timeout_ns: timeout.as_nanos().min(u64::MAX as u128) as u64,
    };
    let f = rt.function_named(ctx, &kernel_name(cfg), || source(cfg))?;
    let grid = cfg.grid_for(cfg.tiles(shape.m, shape.n), info.sm_count);
    driver::launch(&f, LaunchDims { grid, block: cfg.threads(), smem_bytes: cfg.smem_bytes() }, stream, &params)?;
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_argument_and_rule() {
        let s = GemmShape { m: 4, n: 4, k: 12 };
        let e = s.validate(48, 48, 16).unwrap_err().to_string();
        assert!(e.contains("`k`") && e.contains("multiple of 8") && e.contains("K=12"), "{e}");
        let s = GemmShape { m: 4, n: 4, k: 16 };
        let e = s.validate(63, 64, 16).unwrap_err().to_string();
        assert!(e.contains("`a`") && e.contains("[M=4, K=16]") && e.contains("got 63"), "{e}");
        let e = s.validate(64, 64, 15).unwrap_err().to_string();
        assert!(e.contains("`c`"), "{e}");
        let e = GemmShape { m: 0, n: 4, k: 16 }.validate(0, 64, 0).unwrap_err().to_string();
        assert!(e.contains("M=0"), "{e}");
        let e = GemmShape { m: 1 << 31, n: 4, k: 16 }.validate(usize::MAX, 64, usize::MAX).unwrap_err().to_string();
        assert!(e.contains("2^31"), "{e}");
        let e = GemmShape { m: 4, n: 4, k: (1 << 31) - 8 }.validate(usize::MAX, usize::MAX, 16).unwrap_err().to_string();
        assert!(e.contains("2^31"), "{e}");
        let big = MAX_DIM as u32;
        let e = GemmShape { m: big, n: big, k: 16 }.validate(usize::MAX, usize::MAX, usize::MAX).unwrap_err().to_string();
        assert!(e.contains("2^32 output tiles"), "{e}");
        assert!(s.validate(64, 64, 16).is_ok());
    }

    #[test]
    fn smem_matches_device_formula_and_fits() {
        for cfg in TileConfig::ALL {
            assert!(cfg.smem_bytes() <= 232_448, "{cfg}");
            assert_eq!(cfg.threads(), 128 + 128 * (cfg.bm / 64));
            assert_eq!(TileConfig::by_name(&cfg.name()), Some(cfg));
        }
        assert_eq!(TileConfig::WIDE_TMA_STORE.smem_bytes(), 3 * (16384 + 32768) + 65536 + 48 + 1024);
        let e = TileConfig::WIDE_TMA_STORE.check_output(1001).unwrap_err().to_string();
        assert!(e.contains("`tile`") && e.contains("N % 8"), "{e}");
        assert!(TileConfig::WIDE.check_output(1001).is_ok());
        assert_eq!(TileConfig::WIDE.smem_bytes(), 4 * (16384 + 32768) + 64 + 1024);
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.smem_bytes(), 4 * (8192 + 32768) + 32768 + 64 + 1024);
        assert_eq!(TileConfig::M64_WIDE.threads(), 256);
        // Every kernel's source asserts, when it compiles, that the device computes the same size.
        for cfg in TileConfig::ALL {
            let src = source(cfg).unwrap().source;
            assert!(src.contains(&format!("{}::kSmemBytes == {}", cfg.cpp_type(), cfg.smem_bytes())), "{cfg}");
        }
    }

    #[test]
    fn only_catalog_tiles_are_accepted() {
        for cfg in TileConfig::ALL {
            assert!(cfg.validate().is_ok(), "{cfg}");
        }
        for bad in [
            TileConfig { bm: 0, bn: 0, ..TileConfig::WIDE },
            TileConfig { bm: 64, ..TileConfig::NARROW },
            TileConfig { stages: 9, ..TileConfig::WIDE },
            TileConfig { epilogue: Epilogue::TmaStore, ..TileConfig::WIDE },
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains("`tile`") && e.contains("TileConfig::ALL"), "{e}");
            let _ = bad.tiles(129, 257); // no division by zero
        }
    }

    #[test]
    fn heuristic_prefers_wide_tiles_when_sms_are_busy() {
        assert_eq!(TileConfig::choose(8192, 8192, 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose(8192, 8191, 132), TileConfig::WIDE);
        assert_eq!(TileConfig::NARROW.with_tma_store(), TileConfig::NARROW_TMA_STORE);
        assert_eq!(TileConfig::WIDE_TMA_STORE.with_tma_store(), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose(128, 2048, 132), TileConfig::NARROW);
        // A short last row of 128-row tiles: 64-row tiles.
        for m in [1, 129, 2049, 3969, 4032] {
            assert_eq!(TileConfig::choose(m, 8192, 132), TileConfig::M64_WIDE_TMA_STORE, "M={m}");
        }
        for (m, n) in [(127, 8192), (1024, 8192), (4097 + 128, 8192), (8193, 8192), (129, 8191)] {
            assert_ne!(TileConfig::choose(m, n, 132), TileConfig::M64_WIDE_TMA_STORE, "M={m} N={n}");
        }
        assert_eq!(TileConfig::WIDE.tiles(129, 257), 2 * 2);
    }

    #[test]
    fn misaligned_k_takes_clusters() {
        let s = |m, n, k| GemmShape { m, n, k };
        assert_eq!(TileConfig::choose_for(s(4096, 4096, 1000), 132), TileConfig::WIDE_TMA_STORE_C2);
        assert_eq!(TileConfig::choose_for(s(4096, 4096, 1024), 132), TileConfig::WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose_for(s(129, 8192, 4104), 132), TileConfig::M64_WIDE_TMA_STORE_C2);
        assert_eq!(TileConfig::choose_for(s(129, 8192, 4096), 132), TileConfig::M64_WIDE_TMA_STORE);
        // One row block would pair with a padding tile (M=1 measured slower).
        assert_eq!(TileConfig::choose_for(s(1, 8192, 4104), 132), TileConfig::M64_WIDE_TMA_STORE);
        assert_eq!(TileConfig::choose_for(s(257, 8192, 4104), 132), TileConfig::M64_WIDE_TMA_STORE_C2);
        // No clustered Registers tiles: N % 8 != 0 and the few-tiles case keep theirs.
        assert_eq!(TileConfig::choose_for(s(8192, 8191, 1000), 132), TileConfig::WIDE);
        assert_eq!(TileConfig::choose_for(s(128, 2048, 1000), 132), TileConfig::NARROW);
    }

    #[test]
    fn clusters_pad_odd_row_blocks_and_take_even_grids() {
        let c2 = TileConfig::M64_WIDE_TMA_STORE_C2;
        // 129 rows: 3 row blocks of 64 -> 2 pairs, one padding tile per column block.
        assert_eq!(c2.tiles(129, 8192), 4 * 32);
        assert_eq!(TileConfig::M64_WIDE_TMA_STORE.tiles(129, 8192), 3 * 32);
        assert_eq!(TileConfig::NARROW_TMA_STORE_C2.tiles(1024, 8192), 8 * 64);
        assert_eq!(TileConfig::NARROW_TMA_STORE_C2.tiles(1, 1), 2);
        assert_eq!(c2.grid_for(128, 132), 128);
        assert_eq!(c2.grid_for(1000, 133), 132);
        assert_eq!(c2.grid_for(1, 132), 2);
        assert_eq!(TileConfig::WIDE.grid_for(1000, 133), 133);
        assert_eq!(TileConfig::WIDE.grid_for(3, 133), 3);
        for t in TileConfig::ALL {
            assert_eq!(t.cluster_attribute().is_empty(), t.cluster_m == 1, "{t}");
            assert_eq!(t.with_tma_store().cluster_m, t.cluster_m, "{t}");
            let src = source(t).unwrap().source;
            assert_eq!(src.contains("__cluster_dims__(2, 1, 1)"), t.cluster_m == 2, "{t}");
        }
        assert_eq!(c2.name(), "m64-wide-tma-store-c2");
        assert_eq!(TileConfig::by_name("narrow-tma-store-c2"), Some(TileConfig::NARROW_TMA_STORE_C2));
        assert!(c2.to_string().contains("2-CTA clusters"), "{c2}");
        assert_ne!(kernel_name(c2), kernel_name(TileConfig::M64_WIDE_TMA_STORE));
    }
}
