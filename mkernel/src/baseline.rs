//! Unfused baselines and references: cuBLAS GEMM (bf16 out, or fp32 out as the
//! reference), NCCL's collectives and point-to-point blocks, and the unfused MoE combine's
//! weighted sum ([`combine_sum`]), called through `cudarc` on the caller's stream.

use std::sync::Arc;

use cudarc::cublas::{result as cublas, sys as cublas_sys};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::safe::{Comm, Id, ReduceOp};
use half::bf16;
use mkernel_kernels::gemm::GemmShape;

use crate::error::{Error, Result};

/// A cuBLAS handle bound to one stream.
pub struct Cublas {
    handle: cublas_sys::cublasHandle_t,
    stream: Arc<CudaStream>,
}

// SAFETY: the handle is only used through &mut self or under the stream's ordering;
// cuBLAS handles may move between threads.
unsafe impl Send for Cublas {}

impl Cublas {
    /// Creates a handle on `stream`'s context, issuing work to `stream`.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Self> {
        // SAFETY: only tries to dlopen candidate library names.
        if !unsafe { cublas_sys::is_culib_present() } {
            return Err(Error::Cublas { call: "dlopen", detail: "libcublas.so.13 not found on LD_LIBRARY_PATH (e.g. /usr/local/cuda/lib64)".into() });
        }
        stream.context().bind_to_thread().map_err(|source| Error::Driver { call: "cuCtxSetCurrent", source })?;
        let handle = cublas::create_handle().map_err(|e| Error::Cublas { call: "cublasCreate", detail: format!("{e:?}") })?;
        // SAFETY: fresh handle, live stream.
        unsafe { cublas::set_stream(handle, stream.cu_stream() as _) }
            .map_err(|e| Error::Cublas { call: "cublasSetStream", detail: format!("{e:?}") })?;
        Ok(Self { handle, stream: stream.clone() })
    }

    fn gemm_raw(&mut self, a: u64, b: u64, c: u64, c_type: cublas_sys::cudaDataType, s: GemmShape) -> Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Row-major C[M,N] = A[M,K] B[N,K]^T is column-major C^T[N,M] = B^T' A: with
        // column-major views B is K x N (ld K) used transposed, A is K x M (ld K).
        // SAFETY: the caller checked the buffer sizes against `s`.
        unsafe {
            cublas::gemm_ex(
                self.handle,
                cublas_sys::cublasOperation_t::CUBLAS_OP_T,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                s.n as i32,
                s.m as i32,
                s.k as i32,
                &alpha as *const f32 as *const _,
                b as *const _,
                cublas_sys::cudaDataType::CUDA_R_16BF,
                s.k as i32,
                a as *const _,
                cublas_sys::cudaDataType::CUDA_R_16BF,
                s.k as i32,
                &beta as *const f32 as *const _,
                c as *mut _,
                c_type,
                s.n as i32,
                cublas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| Error::Cublas { call: "cublasGemmEx", detail: format!("{e:?}") })
    }

    /// C = A * B^T in bf16 (the baseline GEMM). Layouts as [`crate::gemm`].
    pub fn gemm_bf16(&mut self, a: &CudaSlice<bf16>, b: &CudaSlice<bf16>, c: &mut CudaSlice<bf16>, s: GemmShape) -> Result<()> {
        s.validate(a.len(), b.len(), c.len())?;
        let stream = self.stream.clone();
        let (pa, _ga) = a.device_ptr(&stream);
        let (pb, _gb) = b.device_ptr(&stream);
        let (pc, _gc) = c.device_ptr_mut(&stream);
        self.gemm_raw(pa, pb, pc, cublas_sys::cudaDataType::CUDA_R_16BF, s)
    }

    /// A grouped GEMM as one cuBLAS call per group (the unfused experts' GEMMs): for each
    /// `(first_row, rows, b_first_row)`, C rows \[first_row, first_row + rows) = A's same
    /// rows times B's rows \[b_first_row, b_first_row + n)^T. A is \[., k\], B \[., k\], C
    /// \[., n\], bf16 row-major; groups of 0 rows are skipped.
    ///
    /// Errors: a group outside a buffer (`groups`), or a shape error from cuBLAS.
    pub fn gemm_bf16_groups(&mut self, a: &CudaSlice<bf16>, b: &CudaSlice<bf16>, c: &mut CudaSlice<bf16>, n: u32, k: u32, groups: &[(u32, u32, u32)]) -> Result<()> {
        let (n64, k64) = (n as u64, k as u64);
        for &(r0, rows, b0) in groups {
            let (r0, rows64, b0) = (r0 as u64, rows as u64, b0 as u64);
            if (r0 + rows64) * k64 > a.len() as u64 || (b0 + n64) * k64 > b.len() as u64 || (r0 + rows64) * n64 > c.len() as u64 {
                return Err(crate::error::invalid("groups", format!("group ({r0}, {rows}, {b0}) with N={n} K={k} lies outside a ({}), b ({}) or c ({})", a.len(), b.len(), c.len())));
            }
        }
        let stream = self.stream.clone();
        let (pa, _ga) = a.device_ptr(&stream);
        let (pb, _gb) = b.device_ptr(&stream);
        let (pc, _gc) = c.device_ptr_mut(&stream);
        for &(r0, rows, b0) in groups.iter().filter(|g| g.1 > 0) {
            let (r0, b0) = (r0 as u64, b0 as u64);
            self.gemm_raw(pa + 2 * r0 * k64, pb + 2 * b0 * k64, pc + 2 * r0 * n64, cublas_sys::cudaDataType::CUDA_R_16BF, GemmShape { m: rows, n, k })?;
        }
        Ok(())
    }

    /// C = A * B^T with an fp32 output: the higher-precision reference of the checks.
    pub fn gemm_f32_out(&mut self, a: &CudaSlice<bf16>, b: &CudaSlice<bf16>, c: &mut CudaSlice<f32>, s: GemmShape) -> Result<()> {
        s.validate(a.len(), b.len(), c.len())?;
        let stream = self.stream.clone();
        let (pa, _ga) = a.device_ptr(&stream);
        let (pb, _gb) = b.device_ptr(&stream);
        let (pc, _gc) = c.device_ptr_mut(&stream);
        self.gemm_raw(pa, pb, pc, cublas_sys::cudaDataType::CUDA_R_32F, s)
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { cublas::destroy_handle(self.handle) };
    }
}

/// The unfused MoE combine's last step, enqueued on `stream`: y\[t\] = sum over k of
/// `weights`\[t, k\] x `land`\[`index`\[t, k\]\] for the `tokens` tokens, in fp32 in k order,
/// rounded once to bf16 ([`mkernel_kernels::combine_sum`]). `land` \[rows, N\] bf16 holds the
/// rows an all-to-all brought back; `index` \[tokens, topk\] u32 is each entry's row of it
/// (u32::MAX, or a row past `land`'s: no part); `weights` \[tokens, topk\] f32; `y` \[tokens,
/// N\] bf16 is written (a token without entries gets zeros).
///
/// Errors: a buffer too short (`index`, `weights`, `y`), N not a positive multiple of 8
/// (`n`); driver errors.
#[allow(clippy::too_many_arguments)]
pub fn combine_sum(
    stream: &Arc<CudaStream>,
    index: &CudaSlice<u32>,
    weights: &CudaSlice<f32>,
    land: &CudaSlice<bf16>,
    y: &mut CudaSlice<bf16>,
    tokens: u32,
    topk: u32,
    n: u32,
) -> Result<()> {
    let entries = tokens as usize * topk as usize;
    crate::error::check_lengths(&[
        ("index", index.len(), entries, "tokens x topk"),
        ("weights", weights.len(), entries, "tokens x topk"),
        ("y", y.len(), tokens as usize * n as usize, "tokens x N"),
    ])?;
    // (rows of `land`: an index at or past them takes no part)
    let rows = if n == 0 { 0 } else { (land.len() / n as usize).min(u32::MAX as usize) as u32 };
    let (pi, _gi) = index.device_ptr(stream);
    let (pw, _gw) = weights.device_ptr(stream);
    let (pl, _gl) = land.device_ptr(stream);
    let (py, _gy) = y.device_ptr_mut(stream);
    // SAFETY: the lengths were checked above (land: `rows` x N by construction); cudarc's
    // slices live in `stream`'s context.
    unsafe { mkernel_kernels::combine_sum::launch(mkernel_kernels::driver::Runtime::global(), stream, pi, pw, pl, rows, py, tokens, topk, n)? };
    Ok(())
}

fn nccl_err(call: &'static str) -> impl Fn(cudarc::nccl::result::NcclError) -> Error {
    move |e| Error::Nccl { call, detail: format!("{e:?}") }
}

/// One rank's blocks of [`Nccl::exchange_blocks`]: (peer, first element, elements) each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct P2pBlocks {
    /// Blocks of the rank's send buffer, each to `peer`.
    pub sends: Vec<(usize, usize, usize)>,
    /// Blocks of the rank's receive buffer, each from `peer`.
    pub recvs: Vec<(usize, usize, usize)>,
}

/// NCCL communicators of the unfused baseline.
pub struct Nccl {
    comms: Vec<Comm>,
}

fn nccl_present() -> Result<()> {
    // SAFETY: only tries to dlopen candidate library names.
    if unsafe { cudarc::nccl::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::Nccl {
            call: "dlopen",
            detail: "libnccl.so not found (cudarc looks for libnccl.so; with only libnccl.so.2 installed, add a libnccl.so symlink to a directory on LD_LIBRARY_PATH)".into(),
        })
    }
}

impl Nccl {
    /// One process driving every GPU of `streams` (rank i = `streams[i]`).
    pub fn local_group(streams: &[Arc<CudaStream>]) -> Result<Self> {
        nccl_present()?;
        Ok(Self { comms: Comm::from_devices(streams.to_vec()).map_err(nccl_err("ncclCommInitAll"))? })
    }

    /// This process's rank of a group bootstrapped by the communicator's rendezvous.
    pub fn from_bootstrap(stream: &Arc<CudaStream>, boot: &mkernel_topology::Bootstrap) -> Result<Self> {
        nccl_present()?;
        let id = if boot.rank() == 0 { Some(Id::new().map_err(nccl_err("ncclGetUniqueId"))?) } else { None };
        let bytes: Vec<u8> = id.as_ref().map(|i| i.internal().iter().map(|&c| c as u8).collect()).unwrap_or_default();
        let got = boot.broadcast(0, &bytes)?;
        let mut internal = [0 as std::ffi::c_char; 128];
        if got.len() != internal.len() {
            return Err(Error::Nccl { call: "ncclGetUniqueId", detail: format!("broadcast id has {} bytes, expected 128", got.len()) });
        }
        for (d, s) in internal.iter_mut().zip(&got) {
            *d = *s as std::ffi::c_char;
        }
        let comm = Comm::from_rank(stream.clone(), boot.rank(), boot.world_size(), Id::uninit(internal))
            .map_err(nccl_err("ncclCommInitRank"))?;
        Ok(Self { comms: vec![comm] })
    }

    /// In-place sum all-reduce of `bufs\[i\]` on the i-th local communicator (grouped
    /// when one process drives several GPUs).
    pub fn all_reduce_sum(&self, bufs: &mut [&mut CudaSlice<bf16>]) -> Result<()> {
        if bufs.len() != self.comms.len() {
            return Err(crate::error::invalid("bufs", format!("expected {} buffers (one per local rank), got {}", self.comms.len(), bufs.len())));
        }
        let mut bufs = bufs.iter_mut();
        self.grouped("ncclAllReduce", |comm| match bufs.next() {
            Some(buf) => comm.all_reduce_in_place(*buf, &ReduceOp::Sum).map(|_| ()),
            None => Ok(()),
        })
    }

    /// Sum reduce-scatter on the i-th local communicator: `sends[i]` \[world x count\]
    /// into `recvs[i]` \[count\] = block r of the sum on rank r (`ncclReduceScatter`,
    /// count = `recvs[i].len()`; grouped when one process drives several GPUs).
    ///
    /// Errors: not one buffer pair per local rank (`bufs`), a send buffer shorter than
    /// world x count (`sends`), NCCL's errors.
    pub fn reduce_scatter_sum(&self, sends: &[&CudaSlice<bf16>], recvs: &mut [&mut CudaSlice<bf16>]) -> Result<()> {
        self.check_pairs(sends.len(), recvs.len())?;
        for (comm, (send, recv)) in self.comms.iter().zip(sends.iter().zip(recvs.iter())) {
            let world = comm.world_size();
            if send.len() < world * recv.len() {
                return Err(crate::error::invalid(
                    "sends",
                    format!("a send buffer holds world x count = {world} x {} elements, got {}", recv.len(), send.len()),
                ));
            }
        }
        let mut pairs = sends.iter().zip(recvs.iter_mut());
        self.grouped("ncclReduceScatter", |comm| match pairs.next() {
            Some((send, recv)) => comm.reduce_scatter(*send, *recv, &ReduceOp::Sum).map(|_| ()),
            None => Ok(()),
        })
    }

    /// All-gather on the i-th local communicator: `sends[i]` \[count\] into `recvs[i]`
    /// \[world x count\], block q from rank q (`ncclAllGather`, count = `sends[i].len()`;
    /// grouped when one process drives several GPUs).
    ///
    /// Errors: not one buffer pair per local rank (`bufs`), a receive buffer shorter than
    /// world x count (`recvs`), NCCL's errors.
    pub fn all_gather(&self, sends: &[&CudaSlice<bf16>], recvs: &mut [&mut CudaSlice<bf16>]) -> Result<()> {
        self.check_pairs(sends.len(), recvs.len())?;
        for (comm, (send, recv)) in self.comms.iter().zip(sends.iter().zip(recvs.iter())) {
            let world = comm.world_size();
            if recv.len() < world * send.len() {
                return Err(crate::error::invalid(
                    "recvs",
                    format!("a receive buffer holds world x count = {world} x {} elements, got {}", send.len(), recv.len()),
                ));
            }
        }
        let mut pairs = sends.iter().zip(recvs.iter_mut());
        self.grouped("ncclAllGather", |comm| match pairs.next() {
            Some((send, recv)) => comm.all_gather(*send, *recv).map(|_| ()),
            None => Ok(()),
        })
    }

    /// Point-to-point blocks between the local ranks in one NCCL group (`ncclSend` /
    /// `ncclRecv`: an all-to-all with a block per (peer, ...) of any size, as an MoE dispatch's
    /// token rows): local rank i sends `blocks[i].sends` (peer, first element, elements) of
    /// `sends[i]` and receives `blocks[i].recvs` (peer, first element, elements) into
    /// `recvs[i]`; blocks to the rank itself too (NCCL copies them, as in its all-to-all
    /// example). Blocks between two ranks are matched in the order they are listed.
    ///
    /// Errors: not one buffer pair and block list per local rank (`bufs`), a block outside
    /// its buffer or naming no rank of the group (`blocks`), NCCL's errors.
    pub fn exchange_blocks(&self, sends: &[&CudaSlice<bf16>], recvs: &mut [&mut CudaSlice<bf16>], blocks: &[P2pBlocks]) -> Result<()> {
        self.check_pairs(sends.len(), recvs.len())?;
        if blocks.len() != self.comms.len() {
            return Err(crate::error::invalid("bufs", format!("expected {} block lists (one per local rank), got {}", self.comms.len(), blocks.len())));
        }
        for (i, (comm, b)) in self.comms.iter().zip(blocks).enumerate() {
            let inside = |list: &[(usize, usize, usize)], len: usize| list.iter().all(|&(peer, off, n)| peer < comm.world_size() && off.checked_add(n).is_some_and(|end| end <= len));
            if !inside(&b.sends, sends[i].len()) || !inside(&b.recvs, recvs[i].len()) {
                return Err(crate::error::invalid("blocks", format!("local rank {i}: a block lies outside its buffer or names no rank of the {}", comm.world_size())));
            }
        }
        let mut per_rank = sends.iter().zip(recvs.iter_mut()).zip(blocks);
        self.grouped("ncclSend/ncclRecv", |comm| {
            let Some(((send, recv), b)) = per_rank.next() else { return Ok(()) };
            for &(peer, off, n) in b.sends.iter().filter(|blk| blk.2 > 0) {
                comm.send(&send.slice(off..off + n), peer as i32)?;
            }
            for &(peer, off, n) in b.recvs.iter().filter(|blk| blk.2 > 0) {
                comm.recv(&mut recv.slice_mut(off..off + n), peer as i32)?;
            }
            Ok(())
        })
    }

    /// One send and one receive buffer per local rank (`bufs`).
    fn check_pairs(&self, sends: usize, recvs: usize) -> Result<()> {
        if sends != self.comms.len() || recvs != self.comms.len() {
            return Err(crate::error::invalid(
                "bufs",
                format!("expected {} send and receive buffers (one each per local rank), got {sends} and {recvs}", self.comms.len()),
            ));
        }
        Ok(())
    }

    /// Calls `each` on every local communicator in order, inside one NCCL group when this
    /// process drives several GPUs (else NCCL would wait for the first rank's peers before
    /// the second rank's call is made); the first error is returned as `call`'s, after the
    /// group is closed.
    fn grouped(&self, call: &'static str, mut each: impl FnMut(&Comm) -> std::result::Result<(), cudarc::nccl::result::NcclError>) -> Result<()> {
        let grouped = self.comms.len() > 1;
        if grouped {
            cudarc::nccl::result::group_start().map_err(nccl_err("ncclGroupStart"))?;
        }
        let mut first_err = None;
        for comm in &self.comms {
            if let Err(e) = each(comm) {
                first_err.get_or_insert(e);
            }
        }
        if grouped {
            cudarc::nccl::result::group_end().map_err(nccl_err("ncclGroupEnd"))?;
        }
        match first_err {
            Some(e) => Err(nccl_err(call)(e)),
            None => Ok(()),
        }
    }
}
