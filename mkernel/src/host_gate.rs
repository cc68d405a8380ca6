//! [`HostGate`]: holds a stream on the GPU until the host opens the gate, so a batch of
//! work enqueued behind it runs back to back however slowly the host enqueues it
//! (nvbench's "blocking kernel"). The benchmarks hold every timed round this way: a
//! step then never waits for the host's launch of the next step, which would count as
//! that step's time (bench/NOTES.md 11.3).

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::{CudaContext, CudaStream};

use crate::error::{Error, Result};
use crate::gemm::check_same_device;
use crate::host_mapped::HostMapped;

/// Host-mapped words of a gate: the value the host raises, and the value of the last
/// gate that gave up (0: none).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct GateWords {
    open: u32,
    timed_out: u32,
}

/// A gate for the streams of one GPU.
///
/// [`Self::hold`] enqueues a one-thread kernel that waits until the host calls
/// [`Self::open`]; every stream held since the last `open` is released by the next.
/// Each wait is bounded by the `timeout` given to `hold`: a gate that expires lets its
/// stream go on and is reported by [`Self::check`] (and by the next `hold`).
///
/// ```no_run
/// # fn demo(ctx: &std::sync::Arc<cudarc::driver::CudaContext>, stream: &std::sync::Arc<cudarc::driver::CudaStream>) -> mkernel::Result<()> {
/// let mut gate = mkernel::HostGate::new(ctx)?;
/// gate.hold(stream, std::time::Duration::from_secs(10))?;
/// // ... enqueue the work to run back to back ...
/// gate.open();
/// gate.check()?;
/// # Ok(()) }
/// ```
pub struct HostGate {
    words: HostMapped<GateWords>,
    ordinal: usize,
    /// The value the gates enqueued since the last open wait for (never 0).
    next: u32,
    /// The bound of the last `hold` (for the error).
    timeout: Duration,
}

impl HostGate {
    /// A gate for streams of `ctx`'s GPU (pinned, device-mapped host memory).
    ///
    /// Errors: driver errors.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Ok(Self { words: HostMapped::new(ctx)?, ordinal: ctx.ordinal(), next: 1, timeout: Duration::ZERO })
    }

    /// Enqueues a gate on `stream`: the work enqueued on `stream` after it starts once
    /// [`Self::open`] is called, or after `timeout` (then [`Self::check`] errs).
    ///
    /// Errors: an earlier gate expired ([`Error::GateTimeout`]); `stream` on another GPU;
    /// driver errors.
    pub fn hold(&mut self, stream: &Arc<CudaStream>, timeout: Duration) -> Result<()> {
        self.check()?;
        check_same_device(stream, self.ordinal, "stream")?;
        self.timeout = timeout;
        let words = self.words.device();
        let (open, timed_out) = (words, words + std::mem::size_of::<u32>() as u64);
        // SAFETY: both words are live host-mapped memory of this GPU, owned by self;
        // `Drop` opens the gate and synchronises the context before freeing them.
        unsafe { mkernel_kernels::gate::launch(mkernel_kernels::driver::Runtime::global(), stream, open, timed_out, self.next, timeout) }?;
        Ok(())
    }

    /// Opens every gate enqueued since the last `open`.
    pub fn open(&mut self) {
        let mut w = self.words.read();
        w.open = self.next;
        self.words.write(w);
        // The next gates wait for the next value (0 is skipped: the words start at 0).
        self.next = self.next.wrapping_add(1).max(1);
    }

    /// Errs if a gate gave up waiting ([`Error::GateTimeout`]), which the host sees once
    /// the gate's kernel has ended (after synchronising its stream, at the latest).
    pub fn check(&self) -> Result<()> {
        match self.words.read().timed_out {
            0 => Ok(()),
            at => Err(Error::GateTimeout { gpu: self.ordinal, at, timeout: self.timeout }),
        }
    }
}

impl Drop for HostGate {
    fn drop(&mut self) {
        // Release any gate still waiting, then let its kernel end before the words are
        // freed (HostMapped's drop).
        self.open();
        let _ = self.words.context().synchronize();
    }
}
