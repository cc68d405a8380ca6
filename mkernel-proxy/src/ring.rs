//! The command ring in host memory: layout, the producer protocol (CPU implementation
//! of mkernel-kernels' `comm/ring.cuh`'s `ring_push`) and the single consumer the proxy runs.
//!
//! ```text
//!  ring memory (one allocation, device-mapped on a GPU run)
//!  +---------------------+-----------------------------------+----------------------+
//!  | RingControl (192 B) | slots x TransferCommand (48 B)     | completions x u64    |
//!  | head|tail..|fault.. | slot i holds ticket t, t % slots=i | epoch per index      |
//!  +---------------------+-----------------------------------+----------------------+
//! ```
//!
//! Protocol, for ticket `t` and `S` slots (see the header of mkernel-kernels' `comm/ring.cuh`):
//! a producer claims `t` with an atomic add on the head, waits (bounded) until
//! `t < tail + S`, writes the body of slot `t % S`, then stores `seq = (t + 1) as u32`
//! with release ordering. The consumer, at its tail `c`, loads slot `c % S`'s `seq` with
//! acquire ordering; only when it equals `(c + 1) as u32` does it copy the command out.
//! It publishes its tail (release) only after the copy, so no producer overwrites a slot
//! that is being read. A producer that times out leaves its ticket unpublished: the ring
//! then stops at that ticket, which is why a timeout is an error reported to the proxy
//! (through [`RingControl::fault`]) and ends the run.

use std::cell::Cell;
use std::ptr::addr_of_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering as MemOrder};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mkernel_transport::HostBuffer;

use crate::command::{AbortCode, RingControl, RingFault, RingView, TransferCommand, COMMAND_BYTES};
use crate::error::{invalid, ProxyError};

/// Bytes of the control block at the start of the ring memory.
pub const CONTROL_BYTES: usize = std::mem::size_of::<RingControl>();

/// Most slots a ring may have (the sequence word is 32 bits).
pub const MAX_SLOTS: u32 = 1 << 30;

/// Backing memory of a ring.
///
/// The facade implements this for pinned, device-mapped host memory (then
/// [`RingMemory::device_ptr`] returns the address the GPU uses); tests and CPU-only
/// runs use [`HostBuffer`].
///
/// # Safety
/// `host_ptr()` must return the same address for the life of the value, aligned to 64
/// bytes, of at least `len()` bytes readable and writable from any thread, and not
/// accessed other than through the ring (and the GPU through the ring protocol) while a
/// [`Ring`] uses it.
pub unsafe trait RingMemory: Send + Sync + 'static {
    /// Host address of byte 0.
    fn host_ptr(&self) -> *mut u8;
    /// Length in bytes.
    fn len(&self) -> usize;
    /// `true` for zero bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Device address of byte 0 when the memory is mapped into a GPU.
    fn device_ptr(&self) -> Option<u64> {
        None
    }
}

// SAFETY: a HostBuffer is a page-aligned allocation whose address never changes and
// which lives as long as any clone; it is shared across threads by design.
unsafe impl RingMemory for HostBuffer {
    fn host_ptr(&self) -> *mut u8 {
        self.as_ptr()
    }
    fn len(&self) -> usize {
        HostBuffer::len(self)
    }
}

/// Size of a ring: `slots` commands (a power of two) and `completions` completion flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingLayout {
    slots: u32,
    completions: u32,
}

impl RingLayout {
    /// Errors: [`ProxyError::InvalidArgument`] unless `slots` is a power of two in
    /// `1..=MAX_SLOTS`.
    pub fn new(slots: u32, completions: u32) -> Result<Self, ProxyError> {
        if !slots.is_power_of_two() || slots > MAX_SLOTS {
            return Err(invalid(
                "slots",
                format!("must be a power of two in 1..={MAX_SLOTS}, got {slots}"),
            ));
        }
        Ok(RingLayout { slots, completions })
    }
    /// Number of command slots.
    pub fn slots(&self) -> u32 {
        self.slots
    }
    /// Number of completion flags.
    pub fn completions(&self) -> u32 {
        self.completions
    }
    /// Byte offset of slot 0.
    pub fn slots_offset(&self) -> usize {
        CONTROL_BYTES
    }
    /// Byte offset of completion flag 0.
    pub fn completions_offset(&self) -> usize {
        CONTROL_BYTES + self.slots as usize * COMMAND_BYTES
    }
    /// Total bytes of ring memory.
    pub fn bytes(&self) -> usize {
        self.completions_offset() + self.completions as usize * 8
    }
}

// NOTE: aligned to two cache lines so that no other heap object shares a line with what
// every push and pop reads (`base`, `layout`); without it the proxy's throughput on the
// null transport flipped between ~7 and ~17 M commands/s from one process to the next.
#[repr(align(128))]
struct RingInner {
    memory: Box<dyn RingMemory>,
    /// `memory.host_ptr()`, read once (the trait promises it never changes).
    base: *mut u8,
    layout: RingLayout,
    consumer_taken: AtomicBool,
}

// SAFETY: `base` points into `memory`, which is Send + Sync and shared across threads by
// design; every concurrent access through it is atomic or ordered by the ring protocol.
unsafe impl Send for RingInner {}
// SAFETY: as above.
unsafe impl Sync for RingInner {}

/// One command ring over some [`RingMemory`]. Cloning shares the ring.
#[derive(Clone)]
pub struct Ring {
    inner: Arc<RingInner>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("layout", &self.inner.layout)
            .field("tail", &self.tail())
            .field("completed", &self.completed())
            .finish()
    }
}

impl Ring {
    /// Initialises a ring in `memory`: zeroes the control block, every slot and every
    /// completion flag, and records the slot count. Call before any producer starts.
    ///
    /// Errors: [`ProxyError::InvalidArgument`] when the memory is smaller than
    /// `layout.bytes()` or not 64-byte aligned.
    pub fn new(memory: impl RingMemory, layout: RingLayout) -> Result<Self, ProxyError> {
        let base = memory.host_ptr();
        if !(base as usize).is_multiple_of(64) {
            return Err(invalid(
                "memory",
                format!("must be 64-byte aligned, got {base:p}"),
            ));
        }
        if memory.len() < layout.bytes() {
            return Err(invalid(
                "memory",
                format!(
                    "{} bytes, the layout ({} slots, {} completion flags) needs {}",
                    memory.len(),
                    layout.slots,
                    layout.completions,
                    layout.bytes()
                ),
            ));
        }
        // SAFETY: the range is inside the memory (checked above) and no one else uses it
        // yet (the trait's contract).
        unsafe {
            std::ptr::write_bytes(base, 0, layout.bytes());
            (*base.cast::<RingControl>()).slots = layout.slots;
        }
        Ok(Ring {
            inner: Arc::new(RingInner {
                memory: Box::new(memory),
                base,
                layout,
                consumer_taken: AtomicBool::new(false),
            }),
        })
    }

    /// A ring in freshly allocated, page-aligned host memory.
    pub fn host(layout: RingLayout) -> Result<Self, ProxyError> {
        let buffer = HostBuffer::new(layout.bytes())?;
        Ring::new(buffer, layout)
    }

    /// The ring's size.
    pub fn layout(&self) -> RingLayout {
        self.inner.layout
    }

    fn control(&self) -> *mut RingControl {
        self.inner.base.cast::<RingControl>()
    }

    fn word64(&self, field: fn(*mut RingControl) -> *mut u64) -> &AtomicU64 {
        // SAFETY: the field lies in the control block (inside the memory, 8-aligned) and
        // lives as long as `self`; all concurrent access to it is atomic.
        unsafe { AtomicU64::from_ptr(field(self.control())) }
    }

    fn word32(&self, field: fn(*mut RingControl) -> *mut u32) -> &AtomicU32 {
        // SAFETY: as in `word64`.
        unsafe { AtomicU32::from_ptr(field(self.control())) }
    }

    fn head_word(&self) -> &AtomicU64 {
        // SAFETY (all closures below): projection of a field of a valid control block.
        self.word64(|c| unsafe { addr_of_mut!((*c).head) })
    }
    fn tail_word(&self) -> &AtomicU64 {
        self.word64(|c| unsafe { addr_of_mut!((*c).tail) })
    }
    fn completed_word(&self) -> &AtomicU64 {
        self.word64(|c| unsafe { addr_of_mut!((*c).completed) })
    }
    fn abort_word(&self) -> &AtomicU32 {
        self.word32(|c| unsafe { addr_of_mut!((*c).abort) })
    }
    fn fault_word(&self) -> &AtomicU32 {
        self.word32(|c| unsafe { addr_of_mut!((*c).fault) })
    }
    fn fault_rank_word(&self) -> &AtomicU32 {
        self.word32(|c| unsafe { addr_of_mut!((*c).fault_rank) })
    }
    fn fault_ticket_word(&self) -> &AtomicU64 {
        self.word64(|c| unsafe { addr_of_mut!((*c).fault_ticket) })
    }
    fn fault_tail_word(&self) -> &AtomicU64 {
        self.word64(|c| unsafe { addr_of_mut!((*c).fault_tail) })
    }
    fn fault_waited_word(&self) -> &AtomicU64 {
        self.word64(|c| unsafe { addr_of_mut!((*c).fault_waited_ns) })
    }

    fn slot_ptr(&self, ticket: u64) -> *mut TransferCommand {
        let index = (ticket & u64::from(self.inner.layout.slots - 1)) as usize;
        // SAFETY: index < slots, so the slot lies inside the memory (checked in `new`).
        unsafe {
            self.inner
                .base
                .add(self.inner.layout.slots_offset() + index * COMMAND_BYTES)
                .cast::<TransferCommand>()
        }
    }

    fn seq_word(&self, ticket: u64) -> &AtomicU32 {
        // SAFETY: `seq` is the first, 4-aligned field of a slot inside the memory.
        unsafe { AtomicU32::from_ptr(addr_of_mut!((*self.slot_ptr(ticket)).seq)) }
    }

    fn completion_word(&self, index: u32) -> Result<&AtomicU64, ProxyError> {
        if index >= self.inner.layout.completions {
            return Err(invalid(
                "completion",
                format!(
                    "index {index} >= {} completion flags",
                    self.inner.layout.completions
                ),
            ));
        }
        // SAFETY: index in range; the flags are 8-aligned (192 + 48 * slots) and inside
        // the memory.
        Ok(unsafe {
            AtomicU64::from_ptr(
                self.inner
                    .base
                    .add(self.inner.layout.completions_offset() + index as usize * 8)
                    .cast::<u64>(),
            )
        })
    }

    /// Tickets claimed by host producers so far.
    pub fn head(&self) -> u64 {
        self.head_word().load(MemOrder::Acquire)
    }

    /// Commands the proxy has consumed (acquire).
    pub fn tail(&self) -> u64 {
        self.tail_word().load(MemOrder::Acquire)
    }

    /// Commands whose writes have all completed (acquire).
    pub fn completed(&self) -> u64 {
        self.completed_word().load(MemOrder::Acquire)
    }

    /// The abort word: [`AbortCode::None`] while the proxy runs.
    pub fn abort_code(&self) -> AbortCode {
        let raw = self.abort_word().load(MemOrder::Acquire);
        AbortCode::from_code(raw).unwrap_or(AbortCode::Host)
    }

    /// Sets the abort word to `code` unless it is already set (the first reason stays).
    /// Returns `true` when this call set it.
    pub fn set_abort(&self, code: AbortCode) -> bool {
        self.abort_word()
            .compare_exchange(0, code as u32, MemOrder::AcqRel, MemOrder::Acquire)
            .is_ok()
    }

    /// The first producer fault recorded in the control block, if any (one being
    /// recorded right now reads as none).
    pub fn fault(&self) -> Option<ProxyError> {
        let code = self.fault_word().load(MemOrder::Acquire);
        let fault = RingFault::from_code(code)?;
        if fault == RingFault::None {
            return None;
        }
        Some(ProxyError::ProducerFault {
            fault,
            rank: self.fault_rank_word().load(MemOrder::Relaxed),
            ticket: self.fault_ticket_word().load(MemOrder::Relaxed),
            tail: self.fault_tail_word().load(MemOrder::Relaxed),
            waited_ns: self.fault_waited_word().load(MemOrder::Relaxed),
        })
    }

    fn record_fault(&self, fault: RingFault, ticket: u64, tail: u64, waited: Duration) {
        // Same protocol as `ring_report_fault` in ring.cuh: claim with a transient value,
        // fill the fields, store the code last with release.
        if self
            .fault_word()
            .compare_exchange(0, u32::MAX, MemOrder::Acquire, MemOrder::Relaxed)
            .is_err()
        {
            return;
        }
        self.fault_rank_word().store(u32::MAX, MemOrder::Relaxed);
        self.fault_ticket_word().store(ticket, MemOrder::Relaxed);
        self.fault_tail_word().store(tail, MemOrder::Relaxed);
        let ns = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        self.fault_waited_word().store(ns, MemOrder::Relaxed);
        self.fault_word().store(fault as u32, MemOrder::Release);
    }

    /// Epoch last stored in completion flag `index` (acquire).
    ///
    /// Errors: [`ProxyError::InvalidArgument`] for an index outside the layout.
    pub fn completion_epoch(&self, index: u32) -> Result<u64, ProxyError> {
        Ok(self.completion_word(index)?.load(MemOrder::Acquire))
    }

    /// Raises completion flag `index` to `epoch` (release); a flag never moves back.
    /// Called by the proxy (the only writer).
    pub(crate) fn publish_completion(&self, index: u32, epoch: u64) -> Result<(), ProxyError> {
        let w = self.completion_word(index)?;
        if w.load(MemOrder::Relaxed) < epoch {
            w.store(epoch, MemOrder::Release);
        }
        Ok(())
    }

    pub(crate) fn publish_completed(&self, completed: u64) {
        self.completed_word().store(completed, MemOrder::Release);
    }

    /// Waits until completion flag `index` reaches `epoch`, the proxy aborts, or
    /// `timeout` passes.
    ///
    /// Errors: [`ProxyError::Aborted`], [`ProxyError::Timeout`] naming the index, the
    /// expected and observed epochs and the ring counters.
    pub fn wait_completion(
        &self,
        index: u32,
        epoch: u64,
        timeout: Duration,
    ) -> Result<(), ProxyError> {
        let word = self.completion_word(index)?;
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if word.load(MemOrder::Acquire) >= epoch {
                return Ok(());
            }
            let code = self.abort_code();
            if code != AbortCode::None {
                return Err(ProxyError::Aborted { code });
            }
            if start.elapsed() >= timeout {
                return Err(ProxyError::Timeout {
                    what: format!(
                        "completion flag {index}: expected epoch >= {epoch}, observed {}; ring \
                         head {} tail {} completed {}",
                        word.load(MemOrder::Acquire),
                        self.head(),
                        self.tail(),
                        self.completed()
                    ),
                    waited_ms: ms(start.elapsed()),
                });
            }
            spins = spins.saturating_add(1);
            patient_backoff(spins);
        }
    }

    /// The kernel parameter describing this ring, for memory that is mapped into a GPU.
    /// `device_head` is the device address of a `u64` claim counter in device memory
    /// (zeroed once, never reset; the fast choice), or `None` to use the control block's
    /// `head` in the mapped host memory. `ring_push` claims with a `.gpu`-scope atomic,
    /// which is atomic among the CTAs of one GPU on either; host producers
    /// ([`RingProducer`]) must then not push into the same ring.
    ///
    /// Errors: [`ProxyError::InvalidArgument`] when the memory has no device address.
    pub fn view(
        &self,
        device_head: Option<u64>,
        timeout: Duration,
        rank: u32,
    ) -> Result<RingView, ProxyError> {
        let base = self.inner.memory.device_ptr().ok_or_else(|| {
            invalid(
                "memory",
                "the ring memory is not mapped into a device (no device_ptr)",
            )
        })?;
        let layout = self.inner.layout;
        Ok(RingView {
            slots: base + layout.slots_offset() as u64,
            control: base,
            head: device_head.unwrap_or(base),
            completion: base + layout.completions_offset() as u64,
            mask: layout.slots - 1,
            completions: layout.completions,
            timeout_ns: u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
            rank,
            pad: 0,
        })
    }

    /// A CPU producer (any number may run concurrently).
    pub fn producer(&self) -> RingProducer {
        RingProducer {
            ring: self.clone(),
            cached_tail: Cell::new(0),
        }
    }

    /// The ring's single consumer.
    ///
    /// Errors: [`ProxyError::InvalidArgument`] while another consumer of this ring exists.
    pub fn consumer(&self) -> Result<RingConsumer, ProxyError> {
        if self
            .inner
            .consumer_taken
            .compare_exchange(false, true, MemOrder::AcqRel, MemOrder::Acquire)
            .is_err()
        {
            return Err(invalid(
                "ring",
                "already has a consumer (one proxy per ring)",
            ));
        }
        let tail = self.tail();
        Ok(RingConsumer {
            ring: self.clone(),
            tail,
            published: tail,
        })
    }
}

pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(crate) fn backoff(spins: u32) {
    if spins.is_multiple_of(64) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// Back-off of host threads waiting on the proxy: spin briefly, then yield, then sleep
/// in short naps so a waiting host thread does not take a core from the proxy.
pub(crate) fn patient_backoff(spins: u32) {
    if spins < 256 {
        std::hint::spin_loop();
    } else if spins < 1024 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(20));
    }
}

/// The CPU implementation of the producer protocol (`ring_push` in mkernel-kernels' `comm/ring.cuh`).
/// Cheap to clone; give each producing thread its own clone (it caches the last tail it
/// saw, so a push into a ring with room reads no line the proxy writes).
#[derive(Debug, Clone)]
pub struct RingProducer {
    ring: Ring,
    cached_tail: Cell<u64>,
}

impl RingProducer {
    /// The ring this producer writes.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Publishes `cmd` (its `seq` is ignored) and returns its ticket.
    ///
    /// Claims a ticket, waits up to `timeout` for the proxy to free its slot, writes the
    /// body and stores the sequence word with release ordering.
    ///
    /// Errors: [`ProxyError::Aborted`] when the abort word is set (before claiming, or
    /// while waiting); [`ProxyError::RingFull`] when the ring stayed full for `timeout`.
    /// Both also record a fault in the control block (the claimed ticket is never
    /// published, so the ring cannot continue past it).
    pub fn push(&self, cmd: &TransferCommand, timeout: Duration) -> Result<u64, ProxyError> {
        let ring = &self.ring;
        let code = ring.abort_code();
        if code != AbortCode::None {
            return Err(ProxyError::Aborted { code });
        }
        let slots = u64::from(ring.inner.layout.slots);
        let ticket = ring.head_word().fetch_add(1, MemOrder::Relaxed);
        // ---- back-pressure ----------------------------------------------------------
        // NOTE: a tail seen earlier is a lower bound of the current one; when it already
        // leaves room, the acquire it came with still orders this slot's reuse after
        // the consumer's copy of the previous lap, so no new load is needed.
        let mut tail = self.cached_tail.get();
        if ticket.wrapping_sub(tail) >= slots {
            tail = ring.tail_word().load(MemOrder::Acquire);
            self.cached_tail.set(tail);
        }
        if ticket.wrapping_sub(tail) >= slots {
            let start = Instant::now();
            let mut spins = 0u32;
            loop {
                tail = ring.tail_word().load(MemOrder::Acquire);
                if ticket.wrapping_sub(tail) < slots {
                    self.cached_tail.set(tail);
                    break;
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(32) {
                    let code = ring.abort_code();
                    let waited = start.elapsed();
                    if code != AbortCode::None {
                        ring.record_fault(RingFault::Aborted, ticket, tail, waited);
                        return Err(ProxyError::Aborted { code });
                    }
                    if waited >= timeout {
                        ring.record_fault(RingFault::RingFull, ticket, tail, waited);
                        return Err(ProxyError::RingFull {
                            ticket,
                            tail,
                            slots: ring.inner.layout.slots,
                            waited_ms: ms(waited),
                        });
                    }
                }
                backoff(spins);
            }
        }
        // ---- body, then the release store of the sequence word ----------------------
        let slot = ring.slot_ptr(ticket).cast::<u8>();
        let src = (cmd as *const TransferCommand).cast::<u8>();
        // SAFETY: both ranges are 44 bytes inside a 48-byte command; the slot belongs to
        // this ticket until we publish it (the consumer reads it only after the acquire
        // load of `seq`, and no other producer holds this slot: its previous ticket was
        // consumed, as the tail says). `seq` (bytes 0..4) is not touched here.
        unsafe { std::ptr::copy_nonoverlapping(src.add(4), slot.add(4), COMMAND_BYTES - 4) };
        ring.seq_word(ticket)
            .store(ticket.wrapping_add(1) as u32, MemOrder::Release);
        Ok(ticket)
    }
}

/// The single consumer of a ring (the proxy). Dropping it lets another be created.
#[derive(Debug)]
pub struct RingConsumer {
    ring: Ring,
    tail: u64,
    published: u64,
}

impl Drop for RingConsumer {
    fn drop(&mut self) {
        self.publish_tail();
        self.ring
            .inner
            .consumer_taken
            .store(false, MemOrder::Release);
    }
}

impl RingConsumer {
    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Tickets consumed so far (may be ahead of the published tail).
    pub fn tail(&self) -> u64 {
        self.tail
    }

    /// `true` when the command at the tail has been published.
    pub fn ready(&self) -> bool {
        self.ring.seq_word(self.tail).load(MemOrder::Acquire) == self.tail.wrapping_add(1) as u32
    }

    /// Copies out the command at the tail if it has been published, and advances the
    /// (local) tail. The slot is not released to producers until
    /// [`RingConsumer::publish_tail`].
    pub fn try_pop(&mut self) -> Option<(u64, TransferCommand)> {
        let ticket = self.tail;
        if self.ring.seq_word(ticket).load(MemOrder::Acquire) != ticket.wrapping_add(1) as u32 {
            return None;
        }
        // SAFETY: the acquire load above saw this ticket's sequence value, so the
        // producer's body writes happen-before this read, and no producer writes the
        // slot again before the tail is published past it.
        let cmd = unsafe { std::ptr::read_volatile(self.ring.slot_ptr(ticket)) };
        self.tail = ticket.wrapping_add(1);
        Some((ticket, cmd))
    }

    /// Releases every consumed slot to producers (release store of the tail).
    pub fn publish_tail(&mut self) {
        if self.published != self.tail {
            self.ring.tail_word().store(self.tail, MemOrder::Release);
            self.published = self.tail;
        }
    }
}
