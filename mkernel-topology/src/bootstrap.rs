//! TCP bootstrap: every rank meets rank 0, then runs small, bounded collectives on
//! byte blobs (memory handles, NIC addresses, GPU identities) before any fast
//! transport exists.
//!
//! # Protocol
//! A star through rank 0 (the hub). Every frame carries a header with magic, protocol
//! version, frame kind, world size, sender rank, sequence number, broadcast root and
//! payload length (see `wire.rs`), so disagreeing ranks produce an error, not corrupt data.
//!
//! ```text
//! rendezvous:
//!   rank r>0 --connect, hello(rank, world_size)--> rank 0 (listens on MASTER_ADDR:MASTER_PORT)
//!   rank 0   --welcome--------------------------> every rank, once all ranks said hello
//!
//! collective #s (all_gather, barrier or broadcast; s counts collectives from 0):
//!   rank 1 --contribution(kind, #s, root)--+
//!   rank 2 --contribution(kind, #s, root)--+--> rank 0 checks kind, #s and root of
//!   rank 3 --contribution(kind, #s, root)--+    each, combines, then sends
//!   rank 0 --result(kind, #s)----------------> ranks 1..world_size
//!
//! failure on rank 0:   abort(reason) --> every other rank
//! failure on rank r>0: abort(reason) --> rank 0, which forwards it to the others
//! ```
//!
//! # Timeouts
//! Rank 0 waits at most `timeout` for all contributions of a collective (or for all
//! ranks to connect), then fails naming the ranks that did not arrive. Other ranks wait
//! `timeout` plus a short grace (`min(500 ms, timeout)`) for rank 0's answer, so that
//! rank 0's error, which names the missing ranks, reaches them before they give up.
//! After any error a [`Bootstrap`] refuses further operations ([`Error::Poisoned`]).

mod wire;

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wire::{
    Backoff, Frame, FrameKind, FrameReader, Header, HeaderError, WireError, MAX_PAYLOAD_BYTES,
};

use crate::error::{fmt_secs, Error, Result};
use crate::launch::LaunchEnv;

/// The bootstrap operations, as named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// Connecting all ranks ([`Bootstrap::new`]).
    Rendezvous,
    /// [`Bootstrap::all_gather`].
    AllGather,
    /// [`Bootstrap::barrier`].
    Barrier,
    /// [`Bootstrap::broadcast`].
    Broadcast,
}

impl OpKind {
    /// `"rendezvous"`, `"all_gather"`, `"barrier"` or `"broadcast"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rendezvous => "rendezvous",
            Self::AllGather => "all_gather",
            Self::Barrier => "barrier",
            Self::Broadcast => "broadcast",
        }
    }

    fn frame_kind(self) -> FrameKind {
        match self {
            Self::Rendezvous => FrameKind::Hello,
            Self::AllGather => FrameKind::AllGather,
            Self::Barrier => FrameKind::Barrier,
            Self::Broadcast => FrameKind::Broadcast,
        }
    }
}

/// One bootstrap operation: its kind and, for collectives, its sequence number (the
/// number of collectives this [`Bootstrap`] ran before it). Displays as `all_gather #3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Op {
    /// Which operation.
    pub kind: OpKind,
    /// Sequence number among collectives, from 0; 0 for the rendezvous.
    pub seq: u64,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            OpKind::Rendezvous => f.write_str("rendezvous"),
            k => write!(f, "{} #{}", k.name(), self.seq),
        }
    }
}

const RENDEZVOUS: Op = Op {
    kind: OpKind::Rendezvous,
    seq: 0,
};

/// Extra time ranks other than 0 wait for rank 0, so rank 0's diagnosis arrives first.
const HUB_REPORT_GRACE: Duration = Duration::from_millis(500);
/// Bound on forwarding an abort message; best effort, the local error is returned anyway.
const ABORT_SEND_TIMEOUT: Duration = Duration::from_millis(200);
/// Abort reasons longer than this are cut (at a character boundary).
const MAX_ABORT_REASON_BYTES: usize = 4096;

/// A connected bootstrap group: this rank's handle on a TCP star through rank 0.
///
/// Every operation is collective: all `world_size` ranks must call the same
/// operations in the same order (with the same `root` for broadcasts). Each is bounded
/// by the timeout given at creation (see the module docs). `Bootstrap` is `Send + Sync`;
/// calls from several threads of one rank are serialised, in lock order.
///
/// Dropping it closes the connections; a peer still inside a collective then gets
/// [`Error::PeerClosed`] naming this rank.
///
/// ```no_run
/// use std::time::Duration;
/// use mkernel_topology::{Bootstrap, LaunchEnv};
///
/// let env = LaunchEnv::from_env()?;
/// let boot = Bootstrap::from_launch_env(&env, Duration::from_secs(60))?;
/// let hostnames = boot.all_gather(b"my-host")?; // hostnames[r] from rank r
/// boot.barrier()?;
/// # Ok::<(), mkernel_topology::Error>(())
/// ```
pub struct Bootstrap {
    rank: usize,
    world_size: usize,
    timeout: Duration,
    state: Mutex<State>,
}

struct State {
    /// Sequence number of the next collective.
    next_seq: u64,
    links: Links,
    /// Text of the first error; set, every later call fails with [`Error::Poisoned`].
    failed: Option<String>,
}

enum Links {
    /// Rank 0: one link per other rank, in rank order (`links[i].rank == i + 1`).
    Hub(Vec<Link>),
    /// Rank > 0: the link to rank 0.
    Spoke(Link),
}

/// One TCP connection (non-blocking, `TCP_NODELAY`) to the rank at the other end.
struct Link {
    rank: usize,
    stream: TcpStream,
    reader: FrameReader,
    /// A write failed part-way, so the stream may hold a partial frame: send nothing more.
    tx_broken: bool,
}

impl Link {
    fn new(rank: usize, stream: TcpStream) -> Self {
        Self {
            rank,
            stream,
            reader: FrameReader::default(),
            tx_broken: false,
        }
    }

    fn send(
        &mut self,
        header: &Header,
        payload: &[u8],
        deadline: Instant,
    ) -> Result<(), WireError> {
        if self.tx_broken {
            return Err(WireError::Closed);
        }
        let sent = wire::write_frame(&mut self.stream, header, payload, deadline);
        if sent.is_err() {
            self.tx_broken = true;
        }
        sent
    }

    /// Best effort: tells the peer why this rank gave up.
    fn send_abort(&mut self, from: usize, world_size: usize, seq: u64, reason: &str) {
        let mut cut = reason.len().min(MAX_ABORT_REASON_BYTES);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        let reason = &reason.as_bytes()[..cut];
        let header = Header {
            kind: FrameKind::Abort,
            world_size: world_size as u32,
            rank: from as u32,
            seq,
            root: 0,
            len: reason.len() as u64,
        };
        if let Err(e) = self.send(&header, reason, Instant::now() + ABORT_SEND_TIMEOUT) {
            tracing::debug!(peer = self.rank, error = ?e, "could not send the bootstrap abort");
        }
    }
}

impl Bootstrap {
    /// Joins the bootstrap group as `rank` of `world_size`. Rank 0 listens on
    /// `master_addr:master_port` (with `SO_REUSEADDR`) until every other rank has
    /// connected; other ranks connect to it, retrying until the deadline. Returns when
    /// all ranks are connected. With `world_size == 1` no socket is opened.
    ///
    /// `timeout` bounds the rendezvous and, later, every collective.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (rank out of range, zero timeout, empty address, port 0),
    /// [`Error::Resolve`], [`Error::Listen`] (rank 0), [`Error::Connect`] (rank > 0),
    /// [`Error::Timeout`] naming the ranks that never connected (rank 0),
    /// [`Error::Aborted`] carrying rank 0's error (rank > 0), [`Error::Mismatch`] for
    /// differing world sizes or duplicate ranks, [`Error::HubTimeout`].
    pub fn new(
        rank: usize,
        world_size: usize,
        master_addr: &str,
        master_port: u16,
        timeout: Duration,
    ) -> Result<Self> {
        validate_args(rank, world_size, timeout)?;
        if master_addr.trim().is_empty() {
            return Err(Error::InvalidArgument {
                arg: "master_addr",
                rule: "must not be empty".into(),
            });
        }
        if master_port == 0 {
            return Err(Error::InvalidArgument {
                arg: "master_port",
                rule: "must be in 1..=65535, got 0".into(),
            });
        }
        let start = Instant::now();
        let links = if world_size == 1 {
            Links::Hub(Vec::new())
        } else if rank == 0 {
            let listener = listen(master_addr, master_port)?;
            Links::Hub(hub_rendezvous(&listener, world_size, timeout, start)?)
        } else {
            Links::Spoke(spoke_rendezvous(
                rank,
                world_size,
                master_addr,
                master_port,
                timeout,
                start,
            )?)
        };
        tracing::debug!(rank, world_size, elapsed = ?start.elapsed(), "bootstrap rendezvous complete");
        Ok(Self::from_links(rank, world_size, timeout, links))
    }

    /// [`Bootstrap::new`] with rank, world size and master address from `env`.
    ///
    /// # Errors
    /// As [`Bootstrap::new`].
    pub fn from_launch_env(env: &LaunchEnv, timeout: Duration) -> Result<Self> {
        Self::new(
            env.rank,
            env.world_size,
            &env.master_addr,
            env.master_port,
            timeout,
        )
    }

    /// Creates all `world_size` ranks of a group inside this process (one thread per
    /// rank during the rendezvous, on 127.0.0.1 and a port chosen by the OS). Element
    /// `r` is rank `r`. For tests and single-process runs; each element is then usually
    /// moved to its own thread, since collectives block until every rank joins.
    ///
    /// # Errors
    /// As [`Bootstrap::new`], for the first rank (in rank order) that failed.
    pub fn new_local(world_size: usize, timeout: Duration) -> Result<Vec<Self>> {
        validate_args(0, world_size, timeout)?;
        if world_size == 1 {
            return Ok(vec![Self::from_links(
                0,
                1,
                timeout,
                Links::Hub(Vec::new()),
            )]);
        }
        let listen_err = |source| Error::Listen {
            addr: "127.0.0.1:0".into(),
            source,
            hint: "",
        };
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(listen_err)?;
        listener.set_nonblocking(true).map_err(listen_err)?;
        let port = listener.local_addr().map_err(listen_err)?.port();
        let start = Instant::now();
        std::thread::scope(|scope| {
            let mut spokes = Vec::with_capacity(world_size - 1);
            for rank in 1..world_size {
                let spawned = std::thread::Builder::new()
                    .name(format!("mkernel-bootstrap-r{rank}"))
                    .spawn_scoped(scope, move || {
                        spoke_rendezvous(rank, world_size, "127.0.0.1", port, timeout, start)
                    });
                match spawned {
                    Ok(handle) => spokes.push((rank, handle)),
                    // Threads already started find no rank 0 and stop at the deadline.
                    Err(source) => {
                        return Err(Error::Io {
                            op: RENDEZVOUS,
                            peer: rank,
                            source,
                        })
                    }
                }
            }
            let hub = hub_rendezvous(&listener, world_size, timeout, start);
            // Join every thread before returning, whatever happened.
            let joined: Vec<_> = spokes
                .into_iter()
                .map(|(rank, handle)| (rank, handle.join()))
                .collect();
            // Rank 0's error names the missing or disagreeing ranks: report it first.
            let mut group = vec![Self::from_links(0, world_size, timeout, Links::Hub(hub?))];
            for (rank, result) in joined {
                match result {
                    Ok(link) => group.push(Self::from_links(
                        rank,
                        world_size,
                        timeout,
                        Links::Spoke(link?),
                    )),
                    Err(_) => return Err(Error::LocalThreadPanicked { rank }),
                }
            }
            Ok(group)
        })
    }

    fn from_links(rank: usize, world_size: usize, timeout: Duration, links: Links) -> Self {
        Self {
            rank,
            world_size,
            timeout,
            state: Mutex::new(State {
                next_seq: 0,
                links,
                failed: None,
            }),
        }
    }

    /// This process's rank, `0..world_size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks in the group.
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// The bound on each operation, as given at creation.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Collective: every rank contributes `bytes` (any length, may differ per rank,
    /// at most 1 GiB in total); every rank receives all contributions, indexed by rank.
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the ranks that did not arrive (rank 0),
    /// [`Error::Aborted`] carrying another rank's error, [`Error::HubTimeout`],
    /// [`Error::PeerClosed`] naming a rank that exited, [`Error::Mismatch`] when a rank
    /// called another collective, [`Error::InvalidArgument`] when too large,
    /// [`Error::Poisoned`] after an earlier failure.
    pub fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        check_payload_len(bytes)?;
        let world_size = self.world_size;
        self.collective(OpKind::AllGather, 0, bytes, |op, reply| {
            decode_gather(&reply, world_size).map_err(|detail| Error::Protocol {
                op,
                peer: 0,
                detail,
            })
        })
    }

    /// Collective: returns once every rank has called `barrier`.
    ///
    /// # Errors
    /// As [`Bootstrap::all_gather`].
    pub fn barrier(&self) -> Result<()> {
        self.collective(OpKind::Barrier, 0, &[], |_, _| Ok(()))
    }

    /// Collective: every rank receives `bytes` as passed by rank `root`. On the other
    /// ranks `bytes` is ignored (pass `&[]`). All ranks must pass the same `root`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `root >= world_size` (nothing is sent), otherwise
    /// as [`Bootstrap::all_gather`]; a different `root` on another rank is a
    /// [`Error::Mismatch`].
    pub fn broadcast(&self, root: usize, bytes: &[u8]) -> Result<Vec<u8>> {
        if root >= self.world_size {
            return Err(Error::InvalidArgument {
                arg: "root",
                rule: format!(
                    "must be less than world size {}, got {root}",
                    self.world_size
                ),
            });
        }
        let contribution = if root == self.rank { bytes } else { &[] };
        check_payload_len(contribution)?;
        self.collective(OpKind::Broadcast, root, contribution, |_, reply| Ok(reply))
    }

    /// Runs one collective under the lock: assigns its sequence number, exchanges frames,
    /// and on failure tells the other ranks and poisons this handle.
    fn collective<T>(
        &self,
        kind: OpKind,
        root: usize,
        payload: &[u8],
        finish: impl FnOnce(Op, Vec<u8>) -> Result<T>,
    ) -> Result<T> {
        let mut state = self.lock();
        let op = Op {
            kind,
            seq: state.next_seq,
        };
        if let Some(first) = &state.failed {
            return Err(Error::Poisoned {
                op,
                first: first.clone(),
            });
        }
        state.next_seq += 1;
        let state = &mut *state;
        let result = match &mut state.links {
            Links::Hub(peers) => self.hub_collective(peers, op, root, payload),
            Links::Spoke(hub) => self.spoke_collective(hub, op, root, payload),
        }
        .and_then(|reply| finish(op, reply));

        if let Err(e) = &result {
            let reason = e.to_string();
            match &mut state.links {
                Links::Hub(peers) => {
                    for link in peers.iter_mut() {
                        link.send_abort(self.rank, self.world_size, op.seq, &reason);
                    }
                }
                Links::Spoke(hub) => {
                    // Rank 0 already knows when it aborted us or is gone.
                    if !matches!(e, Error::Aborted { .. } | Error::PeerClosed { .. }) {
                        hub.send_abort(self.rank, self.world_size, op.seq, &reason);
                    }
                }
            }
            tracing::debug!(rank = self.rank, error = %reason, "bootstrap failed");
            state.failed = Some(reason);
        }
        result
    }

    /// Rank 0's side of a collective: gather every contribution, check it, reply.
    fn hub_collective(
        &self,
        peers: &mut [Link],
        op: Op,
        root: usize,
        own: &[u8],
    ) -> Result<Vec<u8>> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let mut got: Vec<Option<Vec<u8>>> = vec![None; self.world_size];
        got[0] = Some(own.to_vec());

        let mut backoff = Backoff::new();
        loop {
            let mut progress = false;
            for link in peers.iter_mut() {
                if got[link.rank].is_some() {
                    continue;
                }
                match link.reader.poll(&mut link.stream) {
                    Ok(None) => {}
                    Ok(Some(frame)) => {
                        progress = true;
                        self.check_contribution(op, root, link.rank, &frame)?;
                        got[link.rank] = Some(frame.payload);
                    }
                    Err(e) => return Err(wire_error(op, link.rank, e, self.timeout)),
                }
            }
            if got.iter().all(Option::is_some) {
                break;
            }
            if Instant::now() >= deadline {
                let (arrived, missing): (Vec<usize>, Vec<usize>) =
                    (0..self.world_size).partition(|&r| got[r].is_some());
                return Err(Error::Timeout {
                    op,
                    after: self.timeout,
                    missing,
                    arrived,
                });
            }
            if progress {
                backoff = Backoff::new();
            } else {
                backoff.sleep(deadline);
            }
        }

        let contributions: Vec<Vec<u8>> = got.into_iter().map(Option::unwrap_or_default).collect();
        let reply = match op.kind {
            OpKind::AllGather => {
                encode_gather(&contributions).map_err(|rule| Error::InvalidArgument {
                    arg: "bytes",
                    rule: format!("{op}: {rule}"),
                })?
            }
            OpKind::Broadcast => contributions.into_iter().nth(root).unwrap_or_default(),
            OpKind::Barrier | OpKind::Rendezvous => Vec::new(),
        };
        let header = Header {
            kind: op.kind.frame_kind(),
            world_size: self.world_size as u32,
            rank: 0,
            seq: op.seq,
            root: root as u32,
            len: reply.len() as u64,
        };
        let send_deadline = Instant::now() + self.timeout;
        for link in peers.iter_mut() {
            link.send(&header, &reply, send_deadline)
                .map_err(|e| wire_error(op, link.rank, e, self.timeout))?;
        }
        Ok(reply)
    }

    /// Checks that rank `peer` is running the same collective as rank 0.
    fn check_contribution(&self, op: Op, root: usize, peer: usize, frame: &Frame) -> Result<()> {
        let h = &frame.header;
        if h.kind == FrameKind::Abort {
            return Err(Error::Aborted {
                op,
                by: peer,
                reason: String::from_utf8_lossy(&frame.payload).into_owned(),
            });
        }
        if h.rank as usize != peer {
            return Err(Error::Protocol {
                op,
                peer,
                detail: format!("frame claims to come from rank {}", h.rank),
            });
        }
        if matches!(h.kind, FrameKind::Hello | FrameKind::Welcome) {
            return Err(Error::Protocol {
                op,
                peer,
                detail: format!("unexpected {} frame", h.kind.name()),
            });
        }
        if h.kind != op.kind.frame_kind() || h.seq != op.seq {
            return Err(Error::Mismatch {
                op,
                peer,
                detail: format!(
                    "rank {peer} called {} #{} while rank 0 called {op} (mismatched collectives: every \
                     rank must call the same collectives in the same order)",
                    h.kind.name(),
                    h.seq
                ),
            });
        }
        if h.kind == FrameKind::Broadcast && h.root as usize != root {
            return Err(Error::Mismatch {
                op,
                peer,
                detail: format!(
                    "rank {peer} called {op} with root {} while rank 0 used root {root}",
                    h.root
                ),
            });
        }
        if h.world_size as usize != self.world_size {
            return Err(Error::Mismatch {
                op,
                peer,
                detail: format!(
                    "rank {peer} has world size {}, rank 0 has {}",
                    h.world_size, self.world_size
                ),
            });
        }
        Ok(())
    }

    /// A rank > 0's side of a collective: send the contribution, wait for the result.
    fn spoke_collective(
        &self,
        hub: &mut Link,
        op: Op,
        root: usize,
        payload: &[u8],
    ) -> Result<Vec<u8>> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let spoke_error = |e: WireError| match e {
            WireError::TimedOut => Error::HubTimeout {
                op,
                rank: self.rank,
                after: start.elapsed(),
            },
            e => wire_error(op, 0, e, self.timeout),
        };
        let header = Header {
            kind: op.kind.frame_kind(),
            world_size: self.world_size as u32,
            rank: self.rank as u32,
            seq: op.seq,
            root: root as u32,
            len: payload.len() as u64,
        };
        hub.send(&header, payload, deadline).map_err(spoke_error)?;
        let frame = hub
            .reader
            .read_until(&mut hub.stream, deadline + hub_grace(self.timeout))
            .map_err(spoke_error)?;
        let h = frame.header;
        if h.kind == FrameKind::Abort {
            return Err(Error::Aborted {
                op,
                by: 0,
                reason: String::from_utf8_lossy(&frame.payload).into_owned(),
            });
        }
        if h.kind != op.kind.frame_kind() || h.seq != op.seq {
            return Err(Error::Protocol {
                op,
                peer: 0,
                detail: format!(
                    "expected the result of {op}, got a {} #{} frame",
                    h.kind.name(),
                    h.seq
                ),
            });
        }
        Ok(frame.payload)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                if guard.failed.is_none() {
                    guard.failed =
                        Some("a thread panicked inside an earlier bootstrap call".into());
                }
                guard
            }
        }
    }
}

impl fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bootstrap")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn validate_args(rank: usize, world_size: usize, timeout: Duration) -> Result<()> {
    if world_size == 0 || world_size > u32::MAX as usize {
        return Err(Error::InvalidArgument {
            arg: "world_size",
            rule: format!("must be in 1..={}, got {world_size}", u32::MAX),
        });
    }
    if rank >= world_size {
        return Err(Error::InvalidArgument {
            arg: "rank",
            rule: format!("must be less than world size {world_size}, got {rank}"),
        });
    }
    if timeout.is_zero() {
        return Err(Error::InvalidArgument {
            arg: "timeout",
            rule: "must be greater than zero".into(),
        });
    }
    Ok(())
}

fn check_payload_len(bytes: &[u8]) -> Result<()> {
    if bytes.len() as u64 > MAX_PAYLOAD_BYTES {
        return Err(Error::InvalidArgument {
            arg: "bytes",
            rule: format!(
                "{} bytes exceed the bootstrap limit of {MAX_PAYLOAD_BYTES} bytes",
                bytes.len()
            ),
        });
    }
    Ok(())
}

fn hub_grace(timeout: Duration) -> Duration {
    HUB_REPORT_GRACE.min(timeout)
}

/// Maps a wire failure on the connection to `peer` during `op` to an [`Error`].
fn wire_error(op: Op, peer: usize, e: WireError, timeout: Duration) -> Error {
    match e {
        WireError::Closed => Error::PeerClosed { op, peer },
        WireError::TimedOut => Error::Io {
            op,
            peer,
            source: io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no progress sending within {}", fmt_secs(timeout)),
            ),
        },
        WireError::Header(h) => Error::Protocol {
            op,
            peer,
            detail: h.describe(),
        },
        WireError::Io(source) => Error::Io { op, peer, source },
    }
}

/// All-gather result encoding: for each rank in order, `u64` little-endian length, bytes.
fn encode_gather(contributions: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    let total: u64 = contributions.iter().map(|c| 8 + c.len() as u64).sum();
    if total > MAX_PAYLOAD_BYTES {
        return Err(format!("the gathered result is {total} bytes, above the bootstrap limit of {MAX_PAYLOAD_BYTES}"));
    }
    let mut out = Vec::with_capacity(total as usize);
    for c in contributions {
        out.extend_from_slice(&(c.len() as u64).to_le_bytes());
        out.extend_from_slice(c);
    }
    Ok(out)
}

fn decode_gather(mut buf: &[u8], world_size: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::with_capacity(world_size);
    for r in 0..world_size {
        let Some((len, rest)) = buf.split_first_chunk::<8>() else {
            return Err(format!(
                "all_gather result truncated before rank {r}'s length"
            ));
        };
        let len = u64::from_le_bytes(*len);
        if len > rest.len() as u64 {
            return Err(format!(
                "all_gather result truncated inside rank {r}'s {len} bytes"
            ));
        }
        let (blob, rest) = rest.split_at(len as usize);
        out.push(blob.to_vec());
        buf = rest;
    }
    if !buf.is_empty() {
        return Err(format!(
            "all_gather result has {} bytes after the last rank",
            buf.len()
        ));
    }
    Ok(out)
}

fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>> {
    let host = host.trim().trim_start_matches('[').trim_end_matches(']');
    let shown = format!("{host}:{port}");
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|source| Error::Resolve {
            addr: shown.clone(),
            source,
        })?
        .collect();
    if addrs.is_empty() {
        return Err(Error::Resolve {
            addr: shown,
            source: io::Error::new(io::ErrorKind::NotFound, "the name resolved to no address"),
        });
    }
    Ok(addrs)
}

/// Binds rank 0's listener.
// NOTE: on Unix, std's `TcpListener::bind` sets SO_REUSEADDR before binding, so a
// restarted job can reuse MASTER_PORT while old connections sit in TIME_WAIT
// (tested by `rebinding_the_master_port_right_after_a_run_works`).
fn listen(host: &str, port: u16) -> Result<TcpListener> {
    let shown = format!("{host}:{port}");
    let mut last = None;
    for addr in resolve(host, port)? {
        match TcpListener::bind(addr) {
            Ok(listener) => {
                listener
                    .set_nonblocking(true)
                    .map_err(|source| Error::Listen {
                        addr: shown.clone(),
                        source,
                        hint: "",
                    })?;
                return Ok(listener);
            }
            Err(e) => last = Some(e),
        }
    }
    let source =
        last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address to bind"));
    let hint = match source.kind() {
        io::ErrorKind::AddrInUse => {
            " (another process holds this port; under torchrun the agent's own TCPStore listens on \
             MASTER_PORT, so give mkernel a different port)"
        }
        io::ErrorKind::AddrNotAvailable => " (MASTER_ADDR is not an address of rank 0's host)",
        _ => "",
    };
    Err(Error::Listen {
        addr: shown,
        source,
        hint,
    })
}

fn configure(stream: &TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_nonblocking(true)
}

/// Rank 0's rendezvous: accept until every rank has said hello, then welcome them all.
fn hub_rendezvous(
    listener: &TcpListener,
    world_size: usize,
    timeout: Duration,
    start: Instant,
) -> Result<Vec<Link>> {
    let deadline = start + timeout;
    // peers[r - 1] is rank r once it has said hello.
    let mut peers: Vec<Option<Link>> = (1..world_size).map(|_| None).collect();
    // Accepted connections that have not said hello yet.
    let mut pending: Vec<(TcpStream, FrameReader, SocketAddr)> = Vec::new();
    let mut backoff = Backoff::new();

    let outcome: Result<()> = 'wait: loop {
        let mut progress = false;
        loop {
            match listener.accept() {
                Ok((stream, addr)) => {
                    progress = true;
                    match configure(&stream) {
                        Ok(()) => pending.push((stream, FrameReader::default(), addr)),
                        Err(e) => {
                            tracing::debug!(%addr, error = %e, "dropping a bootstrap connection")
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(source) => {
                    let addr = listener
                        .local_addr()
                        .map_or_else(|_| "?".into(), |a| a.to_string());
                    break 'wait Err(Error::Listen {
                        addr,
                        source,
                        hint: "",
                    });
                }
            }
        }

        let mut i = 0;
        while i < pending.len() {
            let (stream, reader, addr) = &mut pending[i];
            let addr = *addr;
            match reader.poll(stream) {
                Ok(None) => i += 1,
                Ok(Some(frame)) => {
                    progress = true;
                    let (stream, _, _) = pending.swap_remove(i);
                    match check_hello(&frame, world_size, &peers) {
                        Ok(rank) => peers[rank - 1] = Some(Link::new(rank, stream)),
                        Err(e) => {
                            Link::new(frame.header.rank as usize, stream).send_abort(
                                0,
                                world_size,
                                0,
                                &e.to_string(),
                            );
                            break 'wait Err(e);
                        }
                    }
                }
                Err(WireError::Header(HeaderError::BadMagic(magic))) => {
                    tracing::warn!(%addr, ?magic, "ignoring a connection that is not an mkernel bootstrap peer");
                    pending.swap_remove(i);
                }
                Err(WireError::Header(h)) => {
                    let peer = h.rank().unwrap_or(0) as usize;
                    break 'wait Err(Error::Protocol {
                        op: RENDEZVOUS,
                        peer,
                        detail: h.describe(),
                    });
                }
                Err(e) => {
                    tracing::debug!(%addr, error = ?e, "connection closed before saying hello");
                    pending.swap_remove(i);
                }
            }
        }

        if peers.iter().all(Option::is_some) {
            break Ok(());
        }
        if Instant::now() >= deadline {
            let mut arrived = vec![0];
            let mut missing = Vec::new();
            for (i, p) in peers.iter().enumerate() {
                if p.is_some() {
                    arrived.push(i + 1)
                } else {
                    missing.push(i + 1)
                }
            }
            break Err(Error::Timeout {
                op: RENDEZVOUS,
                after: timeout,
                missing,
                arrived,
            });
        }
        if progress {
            backoff = Backoff::new();
        } else {
            backoff.sleep(deadline);
        }
    };

    let welcome = outcome.and_then(|()| {
        let header = Header {
            kind: FrameKind::Welcome,
            world_size: world_size as u32,
            rank: 0,
            seq: 0,
            root: 0,
            len: 0,
        };
        let send_deadline = Instant::now() + timeout;
        for link in peers.iter_mut().flatten() {
            link.send(&header, &[], send_deadline)
                .map_err(|e| wire_error(RENDEZVOUS, link.rank, e, timeout))?;
        }
        Ok(())
    });
    if let Err(e) = welcome {
        let reason = e.to_string();
        for link in peers.iter_mut().flatten() {
            link.send_abort(0, world_size, 0, &reason);
        }
        return Err(e);
    }
    Ok(peers.into_iter().flatten().collect())
}

/// Validates a hello received by rank 0 and returns the sender's rank.
fn check_hello(frame: &Frame, world_size: usize, peers: &[Option<Link>]) -> Result<usize> {
    let h = &frame.header;
    let rank = h.rank as usize;
    let mismatch = |detail: String| Error::Mismatch {
        op: RENDEZVOUS,
        peer: rank,
        detail,
    };
    if h.kind != FrameKind::Hello {
        return Err(Error::Protocol {
            op: RENDEZVOUS,
            peer: rank,
            detail: format!("expected a hello frame, got {}", h.kind.name()),
        });
    }
    if h.world_size as usize != world_size {
        return Err(mismatch(format!(
            "rank {rank} was started with world size {} but rank 0 with world size {world_size} \
             (WORLD_SIZE must be the same on every rank)",
            h.world_size
        )));
    }
    if rank == 0 {
        return Err(mismatch(
            "a second process claims rank 0 (RANK must be unique)".into(),
        ));
    }
    if rank >= world_size {
        return Err(mismatch(format!(
            "a process claims rank {rank}, beyond world size {world_size}"
        )));
    }
    if peers[rank - 1].is_some() {
        return Err(mismatch(format!(
            "two processes claim rank {rank} (RANK must be unique)"
        )));
    }
    Ok(rank)
}

/// A rank > 0's rendezvous: connect to rank 0 (retrying), say hello, wait for welcome.
fn spoke_rendezvous(
    rank: usize,
    world_size: usize,
    host: &str,
    port: u16,
    timeout: Duration,
    start: Instant,
) -> Result<Link> {
    let deadline = start + timeout;
    let addrs = resolve(host, port)?;
    let mut backoff = Backoff::with_cap(Duration::from_millis(100));
    let mut last_err = io::Error::new(
        io::ErrorKind::TimedOut,
        "no connection attempt finished in time",
    );
    let stream = 'connect: loop {
        for addr in &addrs {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match TcpStream::connect_timeout(addr, left.min(Duration::from_secs(1))) {
                // NOTE: retrying connects to a port nobody listens on can, on Linux, hit
                // TCP simultaneous open and connect the socket to itself; drop that.
                Ok(s) if is_self_connected(&s) => {
                    last_err = io::Error::new(
                        io::ErrorKind::ConnectionRefused,
                        "socket connected to itself",
                    );
                }
                Ok(s) => break 'connect s,
                Err(e) => last_err = e,
            }
        }
        if Instant::now() >= deadline {
            return Err(Error::Connect {
                rank,
                addr: format!("{host}:{port}"),
                after: timeout,
                source: last_err,
            });
        }
        backoff.sleep(deadline);
    };
    configure(&stream).map_err(|source| Error::Io {
        op: RENDEZVOUS,
        peer: 0,
        source,
    })?;

    let mut link = Link::new(0, stream);
    let spoke_error = |e: WireError| match e {
        WireError::TimedOut => Error::HubTimeout {
            op: RENDEZVOUS,
            rank,
            after: start.elapsed(),
        },
        e => wire_error(RENDEZVOUS, 0, e, timeout),
    };
    let hello = Header {
        kind: FrameKind::Hello,
        world_size: world_size as u32,
        rank: rank as u32,
        seq: 0,
        root: 0,
        len: 0,
    };
    link.send(&hello, &[], deadline).map_err(spoke_error)?;
    let frame = link
        .reader
        .read_until(&mut link.stream, deadline + hub_grace(timeout))
        .map_err(spoke_error)?;
    let h = frame.header;
    match h.kind {
        FrameKind::Welcome if h.world_size as usize == world_size => Ok(link),
        FrameKind::Welcome => Err(Error::Mismatch {
            op: RENDEZVOUS,
            peer: 0,
            detail: format!(
                "rank 0 has world size {}, rank {rank} has {world_size}",
                h.world_size
            ),
        }),
        FrameKind::Abort => Err(Error::Aborted {
            op: RENDEZVOUS,
            by: 0,
            reason: String::from_utf8_lossy(&frame.payload).into_owned(),
        }),
        k => Err(Error::Protocol {
            op: RENDEZVOUS,
            peer: 0,
            detail: format!("expected a welcome frame, got {}", k.name()),
        }),
    }
}

fn is_self_connected(stream: &TcpStream) -> bool {
    matches!((stream.local_addr(), stream.peer_addr()), (Ok(a), Ok(b)) if a == b)
}
