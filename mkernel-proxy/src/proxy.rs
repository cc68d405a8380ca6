//! The host proxy: consumes a ring, groups commands per connection into batches,
//! posts them through a [`Transport`], tracks every command to completion, and
//! publishes completion flags and (immediate-completion adaptor) arrival flags.
//!
//! ```text
//!  ring --try_pop--> pending[peer] --batch (<= max_batch cmds: full, or oldest waited
//!                    (consumed)       >= batch_window, or draining)--> staged[peer]
//!  staged[peer] --post_writes (<= transport max_batch writes per call)--> transport
//!  transport.poll --Write{id}--> writes_left -= 1 --0--> completion[idx] := epoch
//!                 --Immediate{imm}--> arrival[chunk] := epoch  (immediate adaptor)
//! ```
//!
//! [`ProxyEngine::step`] does one round of the above and never blocks; tests drive it
//! directly with a [`crate::ManualClock`]. [`Proxy::spawn`] runs it on a named thread.
//! The first error is stored, sets the ring's abort word (which producers poll) and is
//! returned by the next host call; the thread then drains what is in flight (bounded)
//! and exits.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering as MemOrder};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mkernel_transport::adaptor::{
    ArrivalFlags, ChunkSender, ChunkWrite, CompletionMode, ImmLayout, RemoteFlags,
};
use mkernel_transport::{
    Completion, LocalRegion, Rank, RemoteRegion, Transport, TransportError, Write, WriteId,
};

use crate::clock::Clock;
use crate::command::{AbortCode, CommandKind, TransferCommand, NO_COMPLETION};
use crate::error::{invalid, ProxyError};
use crate::ring::{backoff, ms, patient_backoff, Ring, RingConsumer};

/// Largest configurable batch (commands per connection per batch).
pub const MAX_BATCH_LIMIT: usize = 64;

/// Tunables of one proxy. All are run-time values.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConfig {
    /// Name of the proxy thread (shown by debuggers and `top -H`).
    pub name: String,
    /// Most commands per batch per connection (paper: 8). `1..=MAX_BATCH_LIMIT`.
    pub max_batch: usize,
    /// Longest a consumed command waits for its batch to fill before a partial batch
    /// is posted (the bounded polling window). Zero posts whatever is ready every step.
    pub batch_window: Duration,
    /// Most commands read from the ring per step.
    pub max_consume: usize,
    /// Most commands consumed but not completed; the proxy stops reading the ring
    /// beyond this, so back-pressure reaches the producers.
    pub max_outstanding: usize,
    /// Most completions taken per `poll` call.
    pub poll_max: usize,
    /// Idle steps spun before the thread starts yielding between steps.
    pub idle_spins: u32,
    /// Bound on draining in-flight commands at shutdown or after an error.
    pub drain_timeout: Duration,
    /// Completion adaptor; `None` picks it from the transport's capabilities
    /// ([`CompletionMode::select`]).
    pub completion_mode: Option<CompletionMode>,
    /// How immediates carry (chunk, epoch); must match the peers'.
    pub imm_layout: ImmLayout,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            name: "mkernel-proxy".into(),
            max_batch: 8,
            batch_window: Duration::from_micros(2),
            max_consume: 256,
            max_outstanding: 4096,
            poll_max: 256,
            idle_spins: 1 << 14,
            drain_timeout: Duration::from_secs(5),
            completion_mode: None,
            imm_layout: ImmLayout::default(),
        }
    }
}

/// What the proxy knows about one peer: the regions commands may name by index, and
/// where its arrival flags are (needed for [`CommandKind::PutSignal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerTables {
    /// The peer's rank.
    pub peer: Rank,
    /// Regions imported from the peer; `TransferCommand::remote_region` indexes this.
    pub regions: Vec<RemoteRegion>,
    /// The peer's arrival flags.
    pub flags: Option<RemoteFlags>,
}

/// The tables a proxy resolves command indices with.
#[derive(Debug, Clone, Default)]
pub struct ProxySetup {
    /// Registered local regions; `TransferCommand::local_region` indexes this.
    pub local_regions: Vec<LocalRegion>,
    /// One entry per peer commands may target.
    pub peers: Vec<PeerTables>,
    /// This rank's arrival flags, published by this proxy when immediates arrive
    /// (immediate-completion adaptor). With the ordered-flag adaptor peers write them.
    pub arrivals: Option<ArrivalFlags>,
}

/// Counters of one proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Commands read from the ring.
    pub consumed: u64,
    /// Commands whose writes all completed successfully.
    pub completed: u64,
    /// Batches formed; `batch_sizes[n]` counts batches of `n` commands.
    pub batches: u64,
    /// Histogram of commands per batch (index = batch size).
    pub batch_sizes: Vec<u64>,
    /// Writes accepted by the transport.
    pub posted_writes: u64,
    /// `post_writes` calls made.
    pub post_calls: u64,
    /// Calls answered with `QueueFull`.
    pub queue_full: u64,
    /// Arrival flags published from immediates.
    pub arrivals: u64,
}

/// What one [`ProxyEngine::step`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Commands read from the ring.
    pub consumed: usize,
    /// Batches formed.
    pub batches: usize,
    /// Writes accepted by the transport.
    pub posted_writes: usize,
    /// Completions handled (write and immediate).
    pub completions: usize,
}

impl StepReport {
    /// `true` when the step did nothing.
    pub fn is_idle(&self) -> bool {
        self.consumed == 0 && self.batches == 0 && self.posted_writes == 0 && self.completions == 0
    }
}

/// What a clean shutdown reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Final counters.
    pub stats: ProxyStats,
    /// How long the drain took.
    pub drain_ms: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    ticket: u64,
    cmd: TransferCommand,
    writes_left: u8,
    live: bool,
}

#[derive(Debug)]
struct PeerState {
    rank: Rank,
    regions: Vec<RemoteRegion>,
    flags: Option<RemoteFlags>,
    /// Consumed commands not yet batched: (slab index, consume time in clock ns).
    pending: VecDeque<(u32, u64)>,
    /// Writes of formed batches not yet accepted by the transport.
    staged: VecDeque<Write>,
    /// Commands in `staged` (for error messages).
    staged_commands: usize,
}

/// Write ids carry the slab index in bits 32..63 and the ticket's low 32 bits below;
/// bit 63 is the adaptor's flag bit.
fn write_id(index: u32, ticket: u64) -> WriteId {
    WriteId((u64::from(index) << 32) | (ticket & 0xFFFF_FFFF))
}

/// The low 32 bits of the ticket of the command a proxy write belongs to (for
/// instrumented transports, e.g. the benchmark's).
pub fn ticket_low_bits(id: WriteId) -> u32 {
    (id.0 & 0xFFFF_FFFF) as u32
}

/// The proxy's state machine for one ring and one transport. Single-threaded; see
/// [`Proxy`] for the thread.
pub struct ProxyEngine<T: Transport, C: Clock> {
    config: ProxyConfig,
    transport: T,
    clock: C,
    ring: Ring,
    consumer: RingConsumer,
    sender: ChunkSender,
    locals: Vec<LocalRegion>,
    peers: Vec<PeerState>,
    /// rank -> index into `peers` (`u32::MAX`: not a peer).
    peer_index: Vec<u32>,
    arrivals: Option<ArrivalFlags>,
    expected_epoch: u64,
    slab: Vec<Entry>,
    free: Vec<u32>,
    outstanding: usize,
    window_ns: u64,
    max_writes_per_call: usize,
    draining: bool,
    failed: bool,
    stats: ProxyStats,
    completions: Vec<Completion>,
    writes: Vec<Write>,
}

impl<T: Transport, C: Clock> std::fmt::Debug for ProxyEngine<T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyEngine")
            .field("name", &self.config.name)
            .field("rank", &self.transport.rank())
            .field("mode", &self.sender.mode())
            .field("tail", &self.consumer.tail())
            .field("outstanding", &self.outstanding)
            .field("failed", &self.failed)
            .finish()
    }
}

impl<T: Transport, C: Clock> ProxyEngine<T, C> {
    /// Builds a proxy for `ring` posting through `transport`.
    ///
    /// Errors: [`ProxyError::InvalidArgument`] for a config value out of range, a peer
    /// listed twice or equal to this rank, more than 65536 regions in a table, or a ring
    /// that already has a consumer; [`ProxyError::Transport`] when the completion mode
    /// does not fit the transport (e.g. the ordered-flag adaptor on an unordered one).
    pub fn new(
        mut transport: T,
        ring: &Ring,
        setup: ProxySetup,
        config: ProxyConfig,
        clock: C,
    ) -> Result<Self, ProxyError> {
        if !(1..=MAX_BATCH_LIMIT).contains(&config.max_batch) {
            return Err(invalid(
                "config.max_batch",
                format!("must be in 1..={MAX_BATCH_LIMIT}, got {}", config.max_batch),
            ));
        }
        for (arg, v) in [
            ("config.max_consume", config.max_consume),
            ("config.max_outstanding", config.max_outstanding),
            ("config.poll_max", config.poll_max),
        ] {
            if v == 0 {
                return Err(invalid(arg, "must be > 0"));
            }
        }
        if config.max_outstanding > (1 << 31) {
            return Err(invalid("config.max_outstanding", "must be <= 2^31"));
        }
        if setup.local_regions.len() > 1 << 16 {
            return Err(invalid(
                "setup.local_regions",
                "at most 65536 regions (u16 index)",
            ));
        }
        let me = transport.rank();
        let mut peers = Vec::with_capacity(setup.peers.len());
        let mut peer_index: Vec<u32> = Vec::new();
        for (i, p) in setup.peers.into_iter().enumerate() {
            if p.peer == me {
                return Err(invalid(
                    "setup.peers",
                    format!("rank {me} is this proxy's own rank"),
                ));
            }
            if p.regions.len() > 1 << 16 {
                return Err(invalid(
                    "setup.peers",
                    format!("peer {}: at most 65536 regions (u16 index)", p.peer),
                ));
            }
            let slot = p.peer as usize;
            if slot >= peer_index.len() {
                peer_index.resize(slot + 1, u32::MAX);
            }
            if peer_index[slot] != u32::MAX {
                return Err(invalid(
                    "setup.peers",
                    format!("peer {} listed twice", p.peer),
                ));
            }
            peer_index[slot] = i as u32;
            peers.push(PeerState {
                rank: p.peer,
                regions: p.regions,
                flags: p.flags,
                pending: VecDeque::new(),
                staged: VecDeque::new(),
                staged_commands: 0,
            });
        }
        let caps = transport.capabilities().clone();
        let mode = match config.completion_mode {
            Some(m) => m,
            None => CompletionMode::select(&caps)?,
        };
        let sender = ChunkSender::new(&mut transport, mode, config.imm_layout)?;
        let consumer = ring.consumer()?;
        let window_ns = u64::try_from(config.batch_window.as_nanos()).unwrap_or(u64::MAX);
        tracing::debug!(
            name = %config.name, rank = me, transport = %caps.name, ?mode,
            max_batch = config.max_batch, window_ns, "proxy configured"
        );
        Ok(ProxyEngine {
            stats: ProxyStats {
                batch_sizes: vec![0; config.max_batch + 1],
                ..ProxyStats::default()
            },
            max_writes_per_call: caps.max_batch.max(1),
            slab: Vec::with_capacity(config.max_outstanding.min(1 << 16)),
            completions: Vec::with_capacity(config.poll_max),
            writes: Vec::with_capacity(2),
            transport,
            clock,
            ring: ring.clone(),
            consumer,
            sender,
            locals: setup.local_regions,
            peers,
            peer_index,
            arrivals: setup.arrivals,
            expected_epoch: 1,
            free: Vec::new(),
            outstanding: 0,
            window_ns,
            draining: false,
            failed: false,
            config,
        })
    }

    /// The transport (e.g. to inspect a test double).
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The adaptor in use.
    pub fn completion_mode(&self) -> CompletionMode {
        self.sender.mode()
    }

    /// Counters so far.
    pub fn stats(&self) -> &ProxyStats {
        &self.stats
    }

    /// Commands consumed and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.outstanding
    }

    /// Commands consumed and not yet posted (pending a batch, or staged after a full
    /// queue).
    pub fn unposted(&self) -> usize {
        self.peers
            .iter()
            .map(|p| p.pending.len() + p.staged_commands)
            .sum()
    }

    /// The configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.config
    }

    /// From now on, partial batches are posted without waiting for the window (used by
    /// shutdown).
    pub fn set_draining(&mut self, draining: bool) {
        self.draining = draining;
    }

    /// `true` once a step has failed (the engine then only drains completions).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// One round: read ready commands, form batches, post, poll completions. Never
    /// blocks. After the first error (which it returns, after setting the ring's abort
    /// word), later steps only poll completions of writes already in flight.
    pub fn step(&mut self) -> Result<StepReport, ProxyError> {
        let mut report = StepReport::default();
        let result = self.step_inner(&mut report);
        if let Err(e) = &result {
            if !self.failed {
                self.failed = true;
                let code = abort_code_for(e);
                self.ring.set_abort(code);
                tracing::error!(name = %self.config.name, error = %e, ?code, "proxy failed");
            }
        }
        result.map(|()| report)
    }

    fn step_inner(&mut self, report: &mut StepReport) -> Result<(), ProxyError> {
        if !self.failed {
            if let Some(fault) = self.ring.fault() {
                return Err(fault);
            }
            let now = self.clock.now_ns();
            report.consumed = self.consume(now)?;
            self.batch_and_post(now, report)?;
        }
        report.completions = self.poll_completions()?;
        Ok(())
    }

    fn alloc(&mut self, ticket: u64, cmd: TransferCommand) -> u32 {
        let entry = Entry {
            ticket,
            cmd,
            writes_left: 0,
            live: true,
        };
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = entry;
            i
        } else {
            self.slab.push(entry);
            (self.slab.len() - 1) as u32
        }
    }

    fn release(&mut self, index: u32) {
        if let Some(e) = self.slab.get_mut(index as usize) {
            e.live = false;
            self.free.push(index);
        }
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    fn peer_state(&self, peer: Rank) -> Option<usize> {
        match self.peer_index.get(peer as usize) {
            Some(&i) if i != u32::MAX => Some(i as usize),
            _ => None,
        }
    }

    fn validate(&self, ticket: u64, cmd: &TransferCommand) -> Result<usize, ProxyError> {
        let bad = |detail: String| ProxyError::BadCommand {
            ticket,
            peer: cmd.peer,
            chunk: cmd.chunk,
            detail,
        };
        let kind = cmd
            .command_kind()
            .ok_or_else(|| bad(format!("unknown kind {}", cmd.kind)))?;
        let p = self
            .peer_state(cmd.peer)
            .ok_or_else(|| bad(format!("rank {} is not a peer of this proxy", cmd.peer)))?;
        let peer = &self.peers[p];
        let local = self.locals.get(cmd.local_region as usize).ok_or_else(|| {
            bad(format!(
                "local region {} >= {} registered",
                cmd.local_region,
                self.locals.len()
            ))
        })?;
        let remote = peer
            .regions
            .get(cmd.remote_region as usize)
            .ok_or_else(|| {
                bad(format!(
                    "remote region {} >= {} imported from peer {}",
                    cmd.remote_region,
                    peer.regions.len(),
                    cmd.peer
                ))
            })?;
        let len = u64::from(cmd.length);
        if cmd
            .local_offset
            .checked_add(len)
            .is_none_or(|end| end > local.len() as u64)
        {
            return Err(bad(format!(
                "local bytes [{}, +{}) exceed region {} of {} bytes",
                cmd.local_offset,
                cmd.length,
                cmd.local_region,
                local.len()
            )));
        }
        if cmd
            .remote_offset
            .checked_add(len)
            .is_none_or(|end| end > remote.len)
        {
            return Err(bad(format!(
                "remote bytes [{}, +{}) exceed peer region {} of {} bytes",
                cmd.remote_offset, cmd.length, cmd.remote_region, remote.len
            )));
        }
        if kind == CommandKind::PutSignal {
            let flags = peer.flags.as_ref().ok_or_else(|| {
                bad(format!(
                    "PutSignal but peer {} has no arrival flags",
                    cmd.peer
                ))
            })?;
            if cmd.chunk >= flags.chunks {
                return Err(bad(format!(
                    "chunk {} >= {} arrival flags",
                    cmd.chunk, flags.chunks
                )));
            }
        }
        if cmd.completion != NO_COMPLETION && cmd.completion >= self.ring.layout().completions() {
            return Err(bad(format!(
                "completion index {} >= {} completion flags",
                cmd.completion,
                self.ring.layout().completions()
            )));
        }
        if cmd.epoch == 0 && (kind == CommandKind::PutSignal || cmd.completion != NO_COMPLETION) {
            return Err(bad("epoch 0 (epochs start at 1)".into()));
        }
        Ok(p)
    }

    fn consume(&mut self, now: u64) -> Result<usize, ProxyError> {
        let mut n = 0;
        while n < self.config.max_consume && self.outstanding < self.config.max_outstanding {
            let Some((ticket, cmd)) = self.consumer.try_pop() else {
                break;
            };
            n += 1;
            self.stats.consumed += 1;
            let p = match self.validate(ticket, &cmd) {
                Ok(p) => p,
                Err(e) => {
                    self.consumer.publish_tail();
                    return Err(e);
                }
            };
            let index = self.alloc(ticket, cmd);
            self.outstanding += 1;
            self.peers[p].pending.push_back((index, now));
        }
        self.consumer.publish_tail();
        Ok(n)
    }

    fn command_writes(&mut self, p: usize, index: u32) -> Result<(), ProxyError> {
        let entry = self.slab[index as usize];
        let cmd = &entry.cmd;
        let peer = &self.peers[p];
        // validate() checked every index and bound at consume time.
        let local = self.locals[cmd.local_region as usize];
        let remote = peer.regions[cmd.remote_region as usize];
        let id = write_id(index, entry.ticket);
        self.writes.clear();
        let as_usize = |v: u64, what: &'static str| {
            usize::try_from(v).map_err(|_| invalid(what, format!("{v} does not fit in usize")))
        };
        let local_offset = as_usize(cmd.local_offset, "local_offset")?;
        let remote_offset = as_usize(cmd.remote_offset, "remote_offset")?;
        match cmd.command_kind() {
            Some(CommandKind::PutSignal) => {
                let flags = peer.flags.ok_or_else(|| invalid("peer.flags", "missing"))?;
                let chunk = ChunkWrite {
                    id,
                    chunk: cmd.chunk,
                    local,
                    local_offset,
                    len: cmd.length as usize,
                    remote,
                    remote_offset,
                };
                self.sender
                    .chunk_writes(&flags, &chunk, u64::from(cmd.epoch), &mut self.writes)
                    .map_err(|source| ProxyError::BadCommand {
                        ticket: entry.ticket,
                        peer: cmd.peer,
                        chunk: cmd.chunk,
                        detail: format!("completion adaptor refused it: {source}"),
                    })?;
            }
            _ => self.writes.push(Write {
                id,
                local,
                local_offset,
                len: cmd.length as usize,
                remote,
                remote_offset,
                imm: None,
            }),
        }
        self.slab[index as usize].writes_left = self.writes.len() as u8;
        let peer = &mut self.peers[p];
        peer.staged.extend(self.writes.iter().copied());
        peer.staged_commands += 1;
        Ok(())
    }

    /// Per peer: retry writes left over by a full queue; then, while the oldest pending
    /// command's batch is full, its window has closed, or we are draining, form a batch
    /// of up to `max_batch` commands and post it (in calls of at most the transport's
    /// `max_batch` writes). A peer with leftover writes forms no new batch, so writes
    /// keep their order per connection.
    fn batch_and_post(&mut self, now: u64, report: &mut StepReport) -> Result<(), ProxyError> {
        for p in 0..self.peers.len() {
            report.posted_writes += self.post_staged(p)?;
            while self.peers[p].staged.is_empty() {
                let peer = &self.peers[p];
                let Some(&(_, oldest)) = peer.pending.front() else {
                    break;
                };
                let full = peer.pending.len() >= self.config.max_batch;
                let expired = now.saturating_sub(oldest) >= self.window_ns;
                if !(full || expired || self.draining) {
                    break;
                }
                let take = peer.pending.len().min(self.config.max_batch);
                for _ in 0..take {
                    if let Some((index, _)) = self.peers[p].pending.pop_front() {
                        self.command_writes(p, index)?;
                    }
                }
                self.stats.batches += 1;
                self.stats.batch_sizes[take] += 1;
                report.batches += 1;
                report.posted_writes += self.post_staged(p)?;
            }
        }
        Ok(())
    }

    /// Posts peer `p`'s staged writes until they are all accepted or the queue is full.
    fn post_staged(&mut self, p: usize) -> Result<usize, ProxyError> {
        let mut posted_total = 0;
        let peer = &mut self.peers[p];
        while !peer.staged.is_empty() {
            let k = peer.staged.len().min(self.max_writes_per_call);
            let batch = &peer.staged.make_contiguous()[..k];
            self.stats.post_calls += 1;
            let posted = match self.transport.post_writes(peer.rank, batch) {
                Ok(()) => k,
                Err(TransportError::QueueFull { posted, .. }) => {
                    self.stats.queue_full += 1;
                    posted.min(k)
                }
                Err(source) => {
                    return Err(ProxyError::Post {
                        peer: peer.rank,
                        commands: peer.staged_commands,
                        writes: k,
                        source,
                    })
                }
            };
            for w in peer.staged.drain(..posted) {
                // A command leaves `staged` with its last write (data, or flag).
                let last = match self.slab.get((w.id.0 & !WriteId::FLAG_BIT) as usize >> 32) {
                    Some(e) => e.writes_left == 1 || w.id.0 & WriteId::FLAG_BIT != 0,
                    None => true,
                };
                if last {
                    peer.staged_commands = peer.staged_commands.saturating_sub(1);
                }
            }
            self.stats.posted_writes += posted as u64;
            posted_total += posted;
            if posted < k {
                break;
            }
        }
        Ok(posted_total)
    }

    fn poll_completions(&mut self) -> Result<usize, ProxyError> {
        let mut handled = 0;
        loop {
            self.completions.clear();
            let n = self
                .transport
                .poll(&mut self.completions, self.config.poll_max)?;
            let mut batch = std::mem::take(&mut self.completions);
            let mut result = Ok(());
            for c in batch.drain(..) {
                if result.is_ok() {
                    result = self.handle_completion(c);
                }
            }
            self.completions = batch;
            result?;
            handled += n;
            if n < self.config.poll_max {
                break;
            }
        }
        if handled > 0 {
            self.ring.publish_completed(self.stats.completed);
        }
        Ok(handled)
    }

    fn handle_completion(&mut self, c: Completion) -> Result<(), ProxyError> {
        match c {
            Completion::Write { id, peer, result } => {
                let index = ((id.0 & !WriteId::FLAG_BIT) >> 32) as u32;
                let entry = match self.slab.get(index as usize) {
                    Some(e) if e.live && (e.ticket & 0xFFFF_FFFF) == (id.0 & 0xFFFF_FFFF) => *e,
                    _ => {
                        return Err(ProxyError::Transport(TransportError::InvalidArgument {
                            arg: "completion",
                            rule: format!(
                                "write id {:#x} from peer {peer} matches no command in flight",
                                id.0
                            ),
                        }))
                    }
                };
                if let Err(source) = result {
                    self.release(index);
                    return Err(ProxyError::WriteFailed {
                        ticket: entry.ticket,
                        peer,
                        chunk: entry.cmd.chunk,
                        epoch: entry.cmd.epoch,
                        source,
                    });
                }
                let left = entry.writes_left.saturating_sub(1);
                self.slab[index as usize].writes_left = left;
                if left == 0 {
                    if entry.cmd.completion != NO_COMPLETION {
                        self.ring
                            .publish_completion(entry.cmd.completion, u64::from(entry.cmd.epoch))?;
                    }
                    self.stats.completed += 1;
                    self.release(index);
                }
                Ok(())
            }
            Completion::Immediate { peer, imm, len } => {
                let flags = self.arrivals.as_ref().ok_or_else(|| {
                    ProxyError::Transport(TransportError::InvalidArgument {
                        arg: "imm",
                        rule: format!(
                            "immediate {imm:#010x} from peer {peer:?} ({len} bytes) but this \
                             proxy has no arrival flags"
                        ),
                    })
                })?;
                let (chunk, epoch) = self.config.imm_layout.decode(imm, self.expected_epoch);
                if chunk >= flags.chunks() {
                    return Err(ProxyError::Transport(TransportError::InvalidArgument {
                        arg: "imm",
                        rule: format!(
                            "immediate {imm:#010x} from peer {peer:?} names chunk {chunk} >= {} \
                             arrival flags",
                            flags.chunks()
                        ),
                    }));
                }
                flags.publish(chunk, epoch)?;
                self.expected_epoch = self.expected_epoch.max(epoch);
                self.stats.arrivals += 1;
                Ok(())
            }
        }
    }

    /// Runs steps until everything consumed is completed and no published command is
    /// left in the ring (after a failure: until nothing is in flight), or `timeout`.
    ///
    /// Errors: the first step error (when not already failed);
    /// [`ProxyError::ShutdownIncomplete`] with the counters when time runs out.
    pub fn drain(&mut self, timeout: Duration) -> Result<ShutdownReport, ProxyError> {
        self.draining = true;
        let start = Instant::now();
        let mut spins = 0u32;
        let mut first_error = None;
        loop {
            let was_failed = self.failed;
            if let Err(e) = self.step() {
                if !was_failed && first_error.is_none() {
                    first_error = Some(e);
                }
            }
            let ring_done = self.failed || !self.consumer.ready();
            if ring_done && self.outstanding == 0 {
                break;
            }
            if self.failed && self.transport.in_flight() == 0 {
                break;
            }
            if start.elapsed() >= self.config.drain_timeout.min(timeout) {
                self.ring.set_abort(AbortCode::Shutdown);
                let err = ProxyError::ShutdownIncomplete {
                    consumed: self.stats.consumed,
                    completed: self.stats.completed,
                    in_flight: self.outstanding - self.unposted().min(self.outstanding),
                    unposted: self.unposted(),
                    unpublished: self.ring.head().saturating_sub(self.consumer.tail()),
                    waited_ms: ms(start.elapsed()),
                };
                return Err(first_error.unwrap_or(err));
            }
            spins = spins.wrapping_add(1);
            backoff(spins);
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        Ok(ShutdownReport {
            stats: self.stats.clone(),
            drain_ms: ms(start.elapsed()),
        })
    }
}

fn abort_code_for(e: &ProxyError) -> AbortCode {
    match e {
        ProxyError::BadCommand { .. } => AbortCode::BadCommand,
        ProxyError::ProducerFault { .. } | ProxyError::RingFull { .. } => AbortCode::ProducerFault,
        ProxyError::ShutdownIncomplete { .. } => AbortCode::Shutdown,
        _ => AbortCode::Transport,
    }
}

#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    /// `true` once `error` holds something (checked before taking the lock).
    failed: AtomicBool,
    /// Set by [`Proxy::abort`]: stop without posting anything more.
    aborted: AtomicBool,
    error: Mutex<Option<ProxyError>>,
    stats: Mutex<ProxyStats>,
}

impl Shared {
    fn store_error(&self, e: ProxyError) {
        if let Ok(mut slot) = self.error.lock() {
            if slot.is_none() {
                *slot = Some(e);
            }
        }
        self.failed.store(true, MemOrder::Release);
    }
    fn first_error(&self) -> Option<ProxyError> {
        if !self.failed.load(MemOrder::Acquire) {
            return None;
        }
        self.error.lock().ok().and_then(|e| e.clone())
    }
}

/// A proxy running on its own named thread. Host calls return the thread's first error.
pub struct Proxy {
    name: String,
    ring: Ring,
    shared: Arc<Shared>,
    handle: Option<JoinHandle<Result<ShutdownReport, ProxyError>>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("name", &self.name)
            .field("ring", &self.ring)
            .finish()
    }
}

impl Proxy {
    /// Starts `engine` on a thread named `engine.config().name`.
    ///
    /// The thread polls (spinning, then yielding after `idle_spins` idle steps) until
    /// [`Proxy::shutdown`], [`Proxy::abort`] or its first error; it then drains (bounded
    /// by `drain_timeout`) and exits.
    ///
    /// Errors: [`ProxyError::Thread`] when the thread cannot be created.
    pub fn spawn<T, C>(engine: ProxyEngine<T, C>) -> Result<Proxy, ProxyError>
    where
        T: Transport + Send + 'static,
        C: Clock,
    {
        let name = engine.config.name.clone();
        let ring = engine.ring.clone();
        let shared = Arc::new(Shared::default());
        let thread_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || run(engine, &thread_shared))
            .map_err(|e| ProxyError::Thread {
                name: name.clone(),
                detail: format!("spawn failed: {e}"),
            })?;
        Ok(Proxy {
            name,
            ring,
            shared,
            handle: Some(handle),
        })
    }

    /// The ring this proxy consumes.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// The thread's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The latest counters (updated by the thread after every step that did work).
    pub fn stats(&self) -> ProxyStats {
        self.shared
            .stats
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// `Ok(stats)` while the proxy is healthy; its first error otherwise.
    pub fn check(&self) -> Result<ProxyStats, ProxyError> {
        match self.shared.first_error() {
            Some(e) => Err(e),
            None => Ok(self.stats()),
        }
    }

    /// Sets the ring's abort word ([`AbortCode::Host`]) and stops the thread without
    /// posting anything more (writes already in flight are still collected, bounded by
    /// `drain_timeout`); producers waiting for space give up. Later host calls return [`ProxyError::Aborted`] unless
    /// an earlier error was stored.
    pub fn abort(&self) {
        self.ring.set_abort(AbortCode::Host);
        self.shared.store_error(ProxyError::Aborted {
            code: self.ring.abort_code(),
        });
        self.shared.aborted.store(true, MemOrder::Release);
        self.shared.stop.store(true, MemOrder::Release);
    }

    /// Waits until the ring's completed counter reaches `count`.
    ///
    /// Errors: the proxy's first error as soon as there is one;
    /// [`ProxyError::Timeout`] naming the counters.
    pub fn wait_completed(&self, count: u64, timeout: Duration) -> Result<(), ProxyError> {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if self.ring.completed() >= count {
                return self.shared.first_error().map_or(Ok(()), Err);
            }
            if let Some(e) = self.shared.first_error() {
                return Err(e);
            }
            if start.elapsed() >= timeout {
                return Err(ProxyError::Timeout {
                    what: format!(
                        "proxy {}: completed >= {count}; observed completed {}, tail {}, head {}",
                        self.name,
                        self.ring.completed(),
                        self.ring.tail(),
                        self.ring.head()
                    ),
                    waited_ms: ms(start.elapsed()),
                });
            }
            spins = spins.saturating_add(1);
            patient_backoff(spins);
        }
    }

    /// Stops the thread after it has drained: every command already published in the
    /// ring is posted and completed (partial batches go out at once), bounded by the
    /// config's `drain_timeout`. Stop producers first.
    ///
    /// Errors: the proxy's first error; [`ProxyError::ShutdownIncomplete`] naming what
    /// was left; [`ProxyError::Thread`] if the thread panicked.
    pub fn shutdown(mut self) -> Result<ShutdownReport, ProxyError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<ShutdownReport, ProxyError> {
        self.shared.stop.store(true, MemOrder::Release);
        let Some(handle) = self.handle.take() else {
            return Err(ProxyError::Thread {
                name: self.name.clone(),
                detail: "already joined".into(),
            });
        };
        let joined = handle.join().map_err(|_| ProxyError::Thread {
            name: self.name.clone(),
            detail: "panicked".into(),
        })?;
        if let Some(e) = self.shared.first_error() {
            return Err(e);
        }
        joined
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if self.handle.is_some() {
            if let Err(e) = self.stop_and_join() {
                tracing::warn!(name = %self.name, error = %e, "proxy dropped with an error");
            }
        }
    }
}

fn run<T: Transport, C: Clock>(
    mut engine: ProxyEngine<T, C>,
    shared: &Shared,
) -> Result<ShutdownReport, ProxyError> {
    let mut idle = 0u32;
    while !shared.stop.load(MemOrder::Acquire) {
        match engine.step() {
            Ok(report) if report.is_idle() => {
                idle = idle.saturating_add(1);
                if idle > engine.config.idle_spins {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            Ok(_) => {
                idle = 0;
                if let Ok(mut s) = shared.stats.lock() {
                    s.clone_from(&engine.stats);
                }
            }
            Err(e) => {
                shared.store_error(e);
                break;
            }
        }
    }
    if shared.aborted.load(MemOrder::Acquire) {
        // An abort posts nothing more; the drain only collects writes in flight.
        engine.failed = true;
    }
    let timeout = engine.config.drain_timeout;
    let result = engine.drain(timeout);
    if let Ok(mut s) = shared.stats.lock() {
        s.clone_from(&engine.stats);
    }
    if let Err(e) = &result {
        shared.store_error(e.clone());
    }
    result
}
