//! CUDA driver plumbing shared by every operator: availability checks, the per-context
//! module cache, TMA tensor maps, and raw launches with a `#[repr(C)]` parameter struct.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{result as drv, sys, CudaContext, CudaFunction, CudaStream};

use crate::error::{DriverContext, Error, Result};
use crate::jit::{Compiler, KernelSource};
use crate::params::TmaDescriptor;

/// True when the CUDA driver library loads and reports at least one device.
pub fn gpu_available() -> bool {
    device_count().map(|n| n > 0).unwrap_or(false)
}

/// Number of CUDA devices (errors when the driver is missing or fails to initialise).
pub fn device_count() -> Result<usize> {
    // SAFETY: only tries to dlopen candidate library names.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::DriverMissing);
    }
    drv::init().call("cuInit")?;
    let n = CudaContext::device_count().call("cuDeviceGetCount")?;
    Ok(n.max(0) as usize)
}

/// Facts about a device that kernels are specialised or sized by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceInfo {
    /// CUDA device ordinal.
    pub ordinal: usize,
    /// Streaming multiprocessors (one persistent CTA each).
    pub sm_count: u32,
    /// (major, minor); 9.0 for Hopper.
    pub compute_capability: (i32, i32),
    /// Largest dynamic shared memory a block may opt into, bytes.
    pub max_smem_per_block_optin: u32,
}

/// [`DeviceInfo`] of `ctx`'s device: read once per device (four driver queries) and kept,
/// since launches ask for it on every call and the attributes do not change while the
/// process runs.
pub fn device_info(ctx: &CudaContext) -> Result<DeviceInfo> {
    static KNOWN: Mutex<Vec<DeviceInfo>> = Mutex::new(Vec::new());
    let ordinal = ctx.ordinal();
    if let Some(info) = KNOWN.lock().ok().and_then(|k| k.iter().find(|i| i.ordinal == ordinal).copied()) {
        return Ok(info);
    }
    let info = query_device_info(ctx)?;
    if let Ok(mut k) = KNOWN.lock() {
        if !k.iter().any(|i| i.ordinal == ordinal) {
            k.push(info);
        }
    }
    Ok(info)
}

/// Reads [`DeviceInfo`] off `ctx`'s device (the driver's attributes).
fn query_device_info(ctx: &CudaContext) -> Result<DeviceInfo> {
    use sys::CUdevice_attribute::*;
    let sm = ctx.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).call("cuDeviceGetAttribute")?;
    let smem = ctx
        .attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .call("cuDeviceGetAttribute")?;
    Ok(DeviceInfo {
        ordinal: ctx.ordinal(),
        sm_count: sm.max(0) as u32,
        compute_capability: ctx.compute_capability().call("cuDeviceGetAttribute")?,
        max_smem_per_block_optin: smem.max(0) as u32,
    })
}

/// Refuses devices the catalog cannot run on (everything here is `sm_90a`).
pub fn require_hopper(info: &DeviceInfo) -> Result<()> {
    if info.compute_capability != (9, 0) {
        return Err(Error::Unsupported(format!(
            "device {} has compute capability {}.{}; mkernel kernels need sm_90a (H100/H200)",
            info.ordinal, info.compute_capability.0, info.compute_capability.1
        )));
    }
    Ok(())
}

/// Compiles (or finds in the caches) and loads kernels, one module per context.
pub struct Runtime {
    compiler: Compiler,
    loaded: Mutex<HashMap<(usize, String), CudaFunction>>,
}

impl Runtime {
    /// A runtime with its own compiler (and cache directory).
    pub fn new(compiler: Compiler) -> Self {
        Self { compiler, loaded: Mutex::new(HashMap::new()) }
    }

    /// The process-wide runtime, caching under [`crate::jit::default_cache_dir`].
    pub fn global() -> &'static Runtime {
        static RT: OnceLock<Runtime> = OnceLock::new();
        RT.get_or_init(|| Runtime::new(Compiler::new(Some(crate::jit::default_cache_dir()))))
    }

    /// The compiler behind this runtime.
    pub fn compiler(&self) -> &Compiler {
        &self.compiler
    }

    /// Returns `src`'s entry point loaded into `ctx`: loaded once per context, compiled
    /// by NVRTC on first use or taken from the disk cache.
    pub fn function(&self, ctx: &Arc<CudaContext>, src: &KernelSource) -> Result<CudaFunction> {
        match self.loaded_function(ctx, &src.name) {
            Some(f) => Ok(f),
            None => self.load(ctx, src),
        }
    }

    /// Like [`Self::function`] for a kernel known by `name` (which must be the name
    /// `build` gives it): a loaded kernel is returned without generating its source,
    /// which keeps the per-launch host cost to a map lookup.
    pub fn function_named(
        &self,
        ctx: &Arc<CudaContext>,
        name: &str,
        build: impl FnOnce() -> Result<KernelSource>,
    ) -> Result<CudaFunction> {
        match self.loaded_function(ctx, name) {
            Some(f) => Ok(f),
            None => self.load(ctx, &build()?),
        }
    }

    fn loaded_function(&self, ctx: &Arc<CudaContext>, name: &str) -> Option<CudaFunction> {
        let key = (ctx.cu_ctx() as usize, name.to_string());
        self.loaded.lock().ok().and_then(|m| m.get(&key).cloned())
    }

    /// Compiles (or takes from the disk cache) and loads `src` into `ctx`, and remembers it.
    fn load(&self, ctx: &Arc<CudaContext>, src: &KernelSource) -> Result<CudaFunction> {
        let key = (ctx.cu_ctx() as usize, src.name.clone());
        let compiled = self.compiler.compile(src)?;
        let load = |img: &[u8]| ctx.load_module(cudarc::nvrtc::Ptx::from_binary(img.to_vec())).call("cuModuleLoadData");
        let module = match load(&compiled.cubin) {
            Ok(m) => m,
            Err(e) if compiled.from_cache => {
                // A damaged cache entry (e.g. truncated by a full disk): rebuild it once.
                tracing::warn!(kernel = %src.name, "cached image failed to load ({e}); recompiling");
                self.compiler.invalidate(src)?;
                load(&self.compiler.compile(src)?.cubin)?
            }
            Err(e) => return Err(e),
        };
        let f = module.load_function(&src.name).call("cuModuleGetFunction")?;
        if let Ok(mut m) = self.loaded.lock() {
            m.insert(key, f.clone());
        }
        Ok(f)
    }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDims {
    /// CTAs.
    pub grid: u32,
    /// Threads per CTA.
    pub block: u32,
    /// Dynamic shared memory per CTA, bytes.
    pub smem_bytes: u32,
}

/// How a launch is ordered after the work before it on its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaunchOrder {
    /// The grid starts once the previous work on the stream has completed (`cuLaunchKernel`).
    #[default]
    Serialized,
    /// Programmatic dependent launch (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`;
    /// CUDA C++ Programming Guide, "Programmatic Dependent Launch and Synchronization"):
    /// where the work directly before it on the stream is a kernel, the grid may be
    /// scheduled while that kernel still runs (once each of its CTAs has executed
    /// `griddepcontrol.launch_dependents` or exited; at its end otherwise). Only for kernels
    /// that execute `griddepcontrol.wait` before touching any memory another kernel may
    /// read or write (`grid_dependency_wait`, ptx/common.cuh): the plain GEMM's, which
    /// triggers nothing, so the next grid is scheduled once all of its CTAs have exited
    /// (ahead of its completion and memory flush, which the wait still waits for).
    Programmatic,
}

/// Launches `f` on `stream` with one by-value parameter struct (declared in the kernel
/// as `const __grid_constant__ P p`), [`LaunchOrder::Serialized`].
///
/// # Safety
/// `P` must be the exact `#[repr(C)]` mirror of the kernel's parameter type, and every
/// device address inside it must stay valid until the launch completes.
pub unsafe fn launch<P: Copy>(f: &CudaFunction, dims: LaunchDims, stream: &CudaStream, params: &P) -> Result<()> {
    launch_ordered(f, dims, stream, params, LaunchOrder::Serialized)
}

/// [`launch`] with the given ordering after the previous work on `stream`.
///
/// # Safety
/// As [`launch`]; with [`LaunchOrder::Programmatic`], `f` must also wait as that variant
/// says before it touches memory another kernel may use.
pub unsafe fn launch_ordered<P: Copy>(f: &CudaFunction, dims: LaunchDims, stream: &CudaStream, params: &P, order: LaunchOrder) -> Result<()> {
    stream.context().bind_to_thread().call("cuCtxSetCurrent")?;
    drv::function::set_function_attribute(
        f.cu_function(),
        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        dims.smem_bytes as i32,
    )
    .call("cuFuncSetAttribute")?;
    let mut args = [params as *const P as *mut c_void];
    match order {
        LaunchOrder::Serialized => drv::launch_kernel(
            f.cu_function(),
            (dims.grid, 1, 1),
            (dims.block, 1, 1),
            dims.smem_bytes,
            stream.cu_stream(),
            &mut args,
        )
        .call("cuLaunchKernel"),
        LaunchOrder::Programmatic => {
            // SAFETY: a zeroed attribute is a valid value of the C struct (id 0, value
            // bytes 0); the id and its union member are set together below.
            let mut attr: sys::CUlaunchAttribute = std::mem::zeroed();
            attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attr.value.programmaticStreamSerializationAllowed = 1;
            let config = sys::CUlaunchConfig {
                gridDimX: dims.grid,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: dims.block,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: dims.smem_bytes,
                hStream: stream.cu_stream(),
                attrs: &mut attr,
                numAttrs: 1,
            };
            sys::cuLaunchKernelEx(&config, f.cu_function(), args.as_mut_ptr(), std::ptr::null_mut()).result().call("cuLaunchKernelEx")
        }
    }
}

/// A 2-D row-major bf16 tensor as TMA sees it: `rows` x `cols`, `row_stride_bytes` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tensor2d {
    /// Device address of element (0, 0).
    pub ptr: u64,
    /// Rows.
    pub rows: u64,
    /// Columns (elements per row).
    pub cols: u64,
    /// Distance between rows, bytes (a multiple of 16).
    pub row_stride_bytes: u64,
}

/// Shared-memory layout a TMA box is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swizzle {
    /// Rows of 128 bytes with the 128-byte swizzle (what wgmma's K-major descriptors read).
    B128,
    /// Plain row-major box.
    None,
}

/// Encodes a TMA descriptor moving boxes of `box_rows` x `box_cols` bf16 (with
/// [`Swizzle::B128`], `box_cols * 2` must be 128). Out-of-bounds elements read as 0
/// and are not written by stores.
///
/// Errors name the rule TMA imposes (address 16-byte aligned, row stride a multiple
/// of 16 bytes and below 2^40, dims below 2^32).
pub fn tma_2d_bf16(t: Tensor2d, box_rows: u32, box_cols: u32, swizzle: Swizzle, arg: &'static str) -> Result<TmaDescriptor> {
    if !t.ptr.is_multiple_of(16) {
        return Err(crate::error::invalid(arg, format!("device address {:#x} must be 16-byte aligned for TMA", t.ptr)));
    }
    if !t.row_stride_bytes.is_multiple_of(16) || t.row_stride_bytes >= (1 << 40) {
        return Err(crate::error::invalid(
            arg,
            format!(
                "row stride {} bytes ({} bf16) must be a multiple of 16 bytes (a multiple of 8 elements) for TMA",
                t.row_stride_bytes,
                t.row_stride_bytes / 2
            ),
        ));
    }
    if t.rows == 0 || t.cols == 0 || t.rows >= (1 << 32) || t.cols >= (1 << 32) {
        return Err(crate::error::invalid(arg, format!("dims [{}, {}] must be in 1..2^32", t.rows, t.cols)));
    }
    encode_bf16(t.ptr, &[t.cols, t.rows], &[t.row_stride_bytes], &[box_cols, box_rows], swizzle)
}

/// Encodes a TMA descriptor of a bf16 tensor of `dims.len()` dimensions (innermost first,
/// elements), `strides` bytes between consecutive indices of dimensions 1.. (the innermost is
/// dense), moving boxes of `boxes` elements. The caller has checked TMA's rules.
fn encode_bf16(ptr: u64, dims: &[u64], strides: &[u64], boxes: &[u32], swizzle: Swizzle) -> Result<TmaDescriptor> {
    let rank = dims.len();
    debug_assert!(strides.len() + 1 == rank && boxes.len() == rank && (1..=5).contains(&rank));
    let elem_strides = [1u32; 5];
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: every array has `rank` entries (strides rank - 1), as cuTensorMapEncodeTiled
    // reads them; `map` is writable.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            rank as u32,
            ptr as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            match swizzle {
                Swizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                Swizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            },
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()
        .call("cuTensorMapEncodeTiled")?;
        let map = map.assume_init();
        let mut out = TmaDescriptor::default();
        std::ptr::copy_nonoverlapping(
            &map as *const sys::CUtensorMap as *const u8,
            out.opaque.as_mut_ptr() as *mut u8,
            std::mem::size_of::<TmaDescriptor>(),
        );
        Ok(out)
    }
}

/// Encodes a TMA descriptor of a row-major bf16 tensor \[d3\]\[d2\]\[d1\]\[d0\] (`dims`
/// innermost first, elements; dense, so strides follow from the dims) moving boxes of `boxes`
/// elements (innermost first) with the 128B swizzle (`boxes[0] * 2` must be 128). Out-of-bounds
/// elements read as 0.
///
/// Errors name `arg` and the rule TMA imposes (address 16-byte aligned, `dims[0] * 2` a multiple
/// of 16 bytes, each dim in 1..2^32, each stride below 2^40 bytes).
pub fn tma_4d_bf16(ptr: u64, dims: [u64; 4], boxes: [u32; 4], arg: &'static str) -> Result<TmaDescriptor> {
    if !ptr.is_multiple_of(16) {
        return Err(crate::error::invalid(arg, format!("device address {ptr:#x} must be 16-byte aligned for TMA")));
    }
    if dims.iter().any(|&d| d == 0 || d >= 1 << 32) {
        return Err(crate::error::invalid(arg, format!("dims {dims:?} must each be in 1..2^32 for TMA")));
    }
    let s1 = dims[0] * 2;
    let s3 = s1.checked_mul(dims[1]).and_then(|x| x.checked_mul(dims[2])).filter(|&x| x < 1 << 40);
    let Some(s3) = s3.filter(|_| s1.is_multiple_of(16)) else {
        return Err(crate::error::invalid(arg, format!("dims {dims:?}: the strides must be multiples of 16 bytes below 2^40 for TMA")));
    };
    let strides = [s1, s1 * dims[1], s3];
    encode_bf16(ptr, &dims, &strides, &boxes, Swizzle::B128)
}
