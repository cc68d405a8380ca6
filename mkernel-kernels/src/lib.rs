//! mkernel-kernels: the kernel catalog.
//!
//! Owns the CUDA C++ device code (embedded `.cuh` headers under `src/cuda/`), turns a
//! kernel *instantiation* (a kernel plus its JIT constants: tile shape, stages, world
//! size, ...) into generated source, compiles it with NVRTC for `sm_90a`, caches the
//! cubin on disk, and launches it with `#[repr(C)]` parameter structs mirrored in
//! `src/cuda/params.cuh`.
//!
//! It must not know about processes, bootstrap or transports: callers (the `mkernel`
//! facade) hand it device pointers, peer pointers and an SM partition.
//!
//! Layout: `source` (header embedding and `#include` resolution), `jit` (NVRTC + disk
//! cache), `catalog` (every instantiation CI compiles), `params` (shared structs and
//! their layout check), `driver` (module cache, tensor maps, launches), and one module
//! per operator: `gemm`, `gemm_allreduce`, `allgather_gemm`, `moe_dispatch_gemm`, `moe_gemm_combine`, `ring_attention`, `proxy_stream` (and `fill` / `check`: test data and
//! device-side verification; `combine_sum`: the unfused MoE combine's weighted sum).

#![warn(missing_docs)]

pub mod allgather_gemm;
pub mod barrier;
pub mod catalog;
pub mod check;
pub mod combine_sum;
pub mod driver;
pub mod error;
pub mod fill;
pub mod gate;
pub mod gemm;
pub mod gemm_allreduce;
pub mod jit;
pub mod moe_dispatch_gemm;
pub mod moe_gemm_combine;
pub mod params;
pub mod proxy_stream;
pub mod ring_attention;
pub mod source;

pub use error::{Error, Result};
