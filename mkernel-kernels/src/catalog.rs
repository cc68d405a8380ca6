//! Every kernel instantiation mkernel can launch. CI compiles all of them with NVRTC
//! (`compile_all`), so a source or template error is caught without a GPU.

use crate::error::Result;
use crate::gemm::TileConfig;
use crate::gemm_allreduce::Collective;
use crate::jit::{Compiler, KernelSource};
use crate::params::MAX_RANKS;

/// The layout-check translation unit (see [`crate::params::layout_check_source`]).
pub fn layout_check() -> Result<KernelSource> {
    Ok(KernelSource {
        name: "mkernel_layout_check".into(),
        source: crate::source::expand(&crate::params::layout_check_source())?,
        needs_toolkit_headers: false,
    })
}

/// All instantiations: the layout check, the test-data and check kernels, the unfused MoE
/// combine's weighted sum, the GEMM for each tile config (swapped-operand tiles included; TMA-store
/// tiles without clusters also with a split last wave), and the fused
/// GEMM + all-reduce for each tile config, world size 1..=MAX_RANKS and comm path, and the
/// fused all-gather + GEMM, MoE dispatch + GEMM and MoE GEMM + combine for each of their tiles and world sizes 2..=MAX_RANKS,
/// and ring attention (fused and unfused) for each head dimension and mask.
pub fn all() -> Result<Vec<KernelSource>> {
    let mut v = vec![
        layout_check()?,
        crate::barrier::source()?,
        crate::gate::source()?,
        crate::fill::source()?,
        crate::combine_sum::source()?,
        crate::check::accumulate_source()?,
        crate::check::compare_source()?,
        crate::proxy_stream::fill_source()?,
        crate::proxy_stream::source(crate::proxy_stream::THREADS)?,
    ];
    for cfg in TileConfig::gemm_catalog() {
        v.push(crate::gemm::source(cfg)?);
        if cfg.can_split_last_wave() {
            v.push(crate::gemm::source_split(cfg)?);
        }
    }
    for cfg in TileConfig::fused_catalog() {
        for world in 1..=MAX_RANKS as u32 {
            // Push runs TmaReduce's kernel (same name): one entry per distinct kernel.
            let mut names = Vec::new();
            // (not the local path: it launches the plain GEMM's kernel, compiled above)
            // (a reduce-scatter's kernels, `_rs`, where one exists: crate::gemm_allreduce::has_kernel)
            for collective in [Collective::AllReduce, Collective::ReduceScatter] {
                for path in crate::gemm_allreduce::CommPath::fused_for(cfg, world) {
                    if !crate::gemm_allreduce::has_kernel(cfg, world, path, collective) {
                        continue;
                    }
                    let name = crate::gemm_allreduce::kernel_name_for(cfg, world, path, collective);
                    if !names.contains(&name) {
                        v.push(crate::gemm_allreduce::source_for(cfg, world, path, collective)?);
                        names.push(name);
                    }
                }
            }
        }
    }
    // The fused all-gather + GEMM: its tiles at world sizes 2..=MAX_RANKS.
    v.extend(crate::allgather_gemm::catalog()?);
    // The fused MoE dispatch + grouped GEMM: its tiles at world sizes 2..=MAX_RANKS.
    v.extend(crate::moe_dispatch_gemm::catalog()?);
    // The fused MoE grouped GEMM + combine: its tiles at world sizes 2..=MAX_RANKS.
    v.extend(crate::moe_gemm_combine::catalog()?);
    // Ring attention: fused at world sizes 2..=MAX_RANKS, unfused at 1..=MAX_RANKS.
    v.extend(crate::ring_attention::catalog()?);
    Ok(v)
}

/// The kernel of `source` for each tile of `tiles` at world sizes 2..=[`MAX_RANKS`] (the
/// all-gather's and the MoE dispatch's catalogs).
pub(crate) fn at_world_sizes_2_up(tiles: impl Iterator<Item = TileConfig>, source: fn(TileConfig, u32) -> Result<KernelSource>) -> Result<Vec<KernelSource>> {
    let mut v = Vec::new();
    for tile in tiles {
        for world in 2..=MAX_RANKS as u32 {
            v.push(source(tile, world)?);
        }
    }
    Ok(v)
}

/// The world-size rule of a kernel that needs `min..=`[`MAX_RANKS`] ranks (`world_size`),
/// naming the kernel (`what`).
pub(crate) fn check_world(world: u32, min: u32, what: &str) -> Result<()> {
    if world < min || world as usize > MAX_RANKS {
        return Err(crate::error::invalid("world_size", format!("{what} needs {min}..={MAX_RANKS} ranks, got {world}")));
    }
    Ok(())
}

/// The source of a fused GEMM kernel whose CTAs push first (the all-gather's, the MoE
/// dispatch's): `kernel`<tile's config, world>(p) with `params` p, from `header`, named
/// `name`, plus the shared-memory assert and `extra` (more static_asserts, or empty).
pub(crate) fn pushing_gemm_source(header: &str, params: &str, kernel: &str, name: String, tile: TileConfig, world: u32, extra: &str) -> Result<KernelSource> {
    let entry = format!(
        "#include \"{header}\"\n{wrapper}\
         extern \"C\" __global__ void __launch_bounds__({threads}, 1){cluster} {name}(const __grid_constant__ {params} p) {{\n\
         \x20 {kernel}<{cfg_ty}, {world}>(p);\n}}\n\
         static_assert({cfg_ty}::kSmemBytes == {smem}, \"shared memory differs from the host's TileConfig::smem_bytes\");\n{extra}",
        wrapper = crate::gemm::wgmma_wrapper_for(tile),
        smem = tile.smem_bytes(),
        threads = tile.threads(),
        cluster = tile.cluster_attribute(),
        cfg_ty = tile.cpp_type(),
    );
    Ok(KernelSource { name, source: crate::source::expand(&entry)?, needs_toolkit_headers: false })
}

/// Outcome of compiling one instantiation.
#[derive(Debug)]
pub struct CompileReport {
    /// Kernel name.
    pub name: String,
    /// Size of the cubin, bytes.
    pub bytes: usize,
    /// Loaded from the disk cache rather than compiled.
    pub from_cache: bool,
    /// Wall time of the compile or cache load, ms.
    pub millis: u128,
    /// ptxas's performance notes ([`crate::jit::performance_notes`]; none from the cache).
    pub performance_notes: Vec<String>,
    /// ptxas's spill stores, bytes ([`crate::jit::spill_store_bytes`]; `None` from the cache).
    pub spill_store_bytes: Option<u64>,
}

/// Compiles every instantiation, stopping at the first error.
pub fn compile_all(compiler: &Compiler) -> Result<Vec<CompileReport>> {
    let mut out = Vec::new();
    for src in all()? {
        let t = std::time::Instant::now();
        let c = compiler.compile(&src)?;
        out.push(CompileReport { name: src.name, bytes: c.cubin.len(), from_cache: c.from_cache, millis: t.elapsed().as_millis(), performance_notes: c.performance_notes, spill_store_bytes: c.spill_store_bytes });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let all = all().unwrap();
        let mut names: Vec<_> = all.iter().map(|s| s.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
    }
}
