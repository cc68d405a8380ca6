//! [`HostGate`]: holds a stream on the GPU until the host opens the gate, so a batch of
//! work enqueued behind it runs back to back however slowly the host enqueues it
//! (nvbench's "blocking kernel"). The benchmarks hold every timed round this way: a
//! step then never waits for the host's launch of the next step, which would count as
//! that step's time (bench/NOTES.md 11.3).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

use crate::error::{invalid, DriverContext, Error, Result};
use crate::gemm::check_same_device;
use crate::host_mapped::HostMapped;

/// A gate for the streams of one GPU.
///
/// [`Self::hold`] enqueues a one-thread kernel that waits until the host calls
/// [`Self::open`]; every stream held since the last `open` is released by the next.
/// Each wait is bounded by the `timeout` given to `hold`: a gate that expires lets its
/// stream go on and is reported by [`Self::check`], from then on (an expiry is never
/// cleared; later gates still hold their streams). `hold` does not fail on an earlier
/// expiry, so a caller whose ranks must agree on stopping (one process per GPU) can
/// enqueue the same work on every rank and compare `check`s at a point of its choosing.
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
    /// The value the host raises (the gates wait for it to reach theirs), and the value of
    /// the last gate that gave up (0: none): two words, so that raising one never
    /// rewrites the other. `None` only inside `Drop`.
    open: Option<HostMapped<u32>>,
    timed_out: Option<HostMapped<u32>>,
    ctx: Arc<CudaContext>,
    ordinal: usize,
    /// The value the gates enqueued since the last open wait for (never 0).
    next: u32,
    /// The bound of the last `hold` (for the error and for `Drop`'s wait).
    timeout: Duration,
    /// Recorded after the last gate enqueued: `Drop` waits for it (bounded).
    last: Option<CudaEvent>,
}

impl HostGate {
    /// A gate for streams of `ctx`'s GPU (pinned, device-mapped host memory).
    ///
    /// Errors: driver errors.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        Ok(Self {
            open: Some(HostMapped::new(ctx)?),
            timed_out: Some(HostMapped::new(ctx)?),
            ctx: ctx.clone(),
            ordinal: ctx.ordinal(),
            next: 1,
            timeout: Duration::ZERO,
            last: None,
        })
    }

    /// Enqueues a gate on `stream`: the work enqueued on `stream` after it starts once
    /// [`Self::open`] is called, or after `timeout` (then [`Self::check`] errs).
    ///
    /// Errors: `timeout` zero; `stream` on another GPU; NVRTC or driver errors. (An
    /// earlier expiry is [`Self::check`]'s to report.)
    pub fn hold(&mut self, stream: &Arc<CudaStream>, timeout: Duration) -> Result<()> {
        if timeout.is_zero() {
            return Err(invalid("timeout", "must be positive: a gate with no time to wait expires at once"));
        }
        check_same_device(stream, self.ordinal, "stream")?;
        let (Some(open), Some(timed_out)) = (&self.open, &self.timed_out) else {
            return Err(invalid("self", "the gate is being dropped"));
        };
        self.timeout = self.timeout.max(timeout);
        // SAFETY: both words are live host-mapped memory of this GPU, owned by self;
        // `Drop` frees them only once the last gate's kernel has ended (else it leaks them).
        unsafe { mkernel_kernels::gate::launch(mkernel_kernels::driver::Runtime::global(), stream, open.device(), timed_out.device(), self.next, timeout) }?;
        let ev = self.ctx.new_event(None).call("cuEventCreate")?;
        ev.record(stream).call("cuEventRecord")?;
        self.last = Some(ev);
        Ok(())
    }

    /// Opens every gate enqueued since the last `open`.
    pub fn open(&mut self) {
        if let Some(open) = &self.open {
            open.write(self.next);
        }
        // The next gates wait for the next value (0 is skipped: the words start at 0).
        self.next = self.next.wrapping_add(1).max(1);
    }

    /// Errs if a gate gave up waiting ([`Error::GateTimeout`]), which the host sees once
    /// the gate's kernel has ended (after synchronising its stream, at the latest).
    pub fn check(&self) -> Result<()> {
        match self.timed_out.as_ref().map_or(0, |w| w.read()) {
            0 => Ok(()),
            at => Err(Error::GateTimeout { gpu: self.ordinal, at, timeout: self.timeout }),
        }
    }
}

impl Drop for HostGate {
    fn drop(&mut self) {
        // Release any gate still waiting, then free the words only once the last gate's
        // kernel has ended: wait for its event, bounded by its timeout plus a margin (a
        // stream stuck behind other work must not hang the drop); if it has not ended,
        // leak the words rather than let a gate read freed memory.
        self.open();
        let limit = self.timeout.saturating_add(Duration::from_secs(5));
        let start = Instant::now();
        let done = match &self.last {
            None => true,
            Some(ev) => loop {
                match ev.is_complete() {
                    true => break true,
                    false if start.elapsed() > limit => break false,
                    false => std::thread::sleep(Duration::from_micros(100)),
                }
            },
        };
        if !done {
            std::mem::forget(self.open.take());
            std::mem::forget(self.timed_out.take());
        }
    }
}
