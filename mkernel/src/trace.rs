//! Event traces of fused calls: where a call's time goes (when compute ends, when each
//! communication claim waited and became ready, when tail CTAs started), read from
//! `%globaltimer` stamps the kernel writes into a device buffer.
//!
//! Off unless a [`TraceBuffer`] is passed to [`crate::Communicator::gemm_allreduce_traced`];
//! `mkernel bench gemm-allreduce --trace` prints a [`TraceSummary`] per rank and shape and
//! writes the events as JSON. Times are per GPU (one clock per GPU; ranks' clocks are not
//! aligned), in microseconds from the first event of the call.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};
use mkernel_kernels::gemm_allreduce::TraceTarget;
use mkernel_kernels::params::{FusedTraceEvent, FusedTraceHeader};
use serde::Serialize;

use crate::error::{invalid, DriverContext, Result};

/// Tiles one claim takes: a [`TraceKind::Claim`] at tile t covers t..t + CLAIM_TILES
/// (fewer at the end).
pub const CLAIM_TILES: u32 = mkernel_kernels::gemm_allreduce::ONE_SHOT_CLAIM_TILES;

/// What an event marks (`mk::TraceKind` in `ops/gemm_allreduce.cuh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TraceKind {
    /// A CTA started; `tile` is its role: 0 compute, 1 communication, 2 tail.
    CtaStart,
    /// A compute CTA published `tile`.
    TileStored,
    /// A communication producer claimed [`CLAIM_TILES`] tiles from `tile` on.
    Claim,
    /// ... and saw and fenced their flags.
    ClaimReady,
    /// A communication CTA finished its role; `tile` holds the items it moved.
    CommDone,
    /// A CTA reached the epoch hand-over.
    CtaEnd,
    /// Epilogue path: a compute CTA added the peer's copy of `tile` into `out`.
    PeerAdded,
    /// Epilogue path: a compute CTA's consumers staged `tile` (its GEMM is done); the
    /// storer starts the copy to the peer, published at [`Self::TileStored`].
    TileStaged,
    /// Split last wave: a slice of `tile` finished its K blocks (before its fp32 slot write).
    SliceComputed,
    /// ... wrote its slot and counted itself in at the tile's counter, not last.
    SliceCounted,
    /// ... counted itself in last: it sums the tile's slots and stages the tile.
    SliceLast,
    /// Epilogue path: the storer warp issued every store of `tile`'s copy to the peer
    /// (between [`Self::TileStaged`] and [`Self::CopyFenced`]).
    CopyIssued,
    /// ... and every lane's system-scope fence after those stores returned; then the
    /// storer waits for its TMA store into `out` and publishes ([`Self::TileStored`]).
    CopyFenced,
}

impl TraceKind {
    fn from_raw(k: u32) -> Option<Self> {
        Some(match k {
            1 => Self::CtaStart,
            2 => Self::TileStored,
            3 => Self::Claim,
            4 => Self::ClaimReady,
            5 => Self::CommDone,
            6 => Self::CtaEnd,
            7 => Self::PeerAdded,
            8 => Self::TileStaged,
            9 => Self::SliceComputed,
            10 => Self::SliceCounted,
            11 => Self::SliceLast,
            12 => Self::CopyIssued,
            13 => Self::CopyFenced,
            _ => return None,
        })
    }
}

/// Shortest span of a CTA's events that [`TraceSummary::sm_clock_mhz`] uses: %globaltimer
/// may advance in steps of about a microsecond, so a short span's rate is noise.
const MIN_CLOCK_SPAN_US: f64 = 20.0;

/// u64 words of one `FusedTraceEvent` (the header is one word).
const EVENT_WORDS: usize = std::mem::size_of::<FusedTraceEvent>() / 8;
const _: () = assert!(std::mem::size_of::<FusedTraceEvent>() == 8 * EVENT_WORDS && std::mem::size_of::<FusedTraceHeader>() == 8);

/// One event, time relative to the call's first event.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TraceEvent {
    /// Microseconds since the call's first event.
    pub t_us: f64,
    /// The CTA (block index) that recorded it.
    pub cta: u32,
    /// The tile, or what [`TraceKind`] says.
    pub tile: u32,
    /// What it marks.
    pub kind: TraceKind,
    /// The SM's cycle counter when it was recorded (`%clock`, low 32 bits): with
    /// [`Self::t_us`], the SM clock rate a CTA ran at ([`TraceSummary::sm_clock_mhz`]).
    pub sm_clock: u32,
}

/// A device buffer for the events of one fused call on one rank.
pub struct TraceBuffer {
    buf: CudaSlice<u64>,
    capacity: u32,
    /// The stream of the last traced call (`read` waits for it).
    armed: Option<Arc<CudaStream>>,
}

impl TraceBuffer {
    /// A buffer for up to `capacity` events (24 bytes each) on `stream`'s GPU; a call
    /// records 2 per CTA (3 per communication or tail CTA) and, per tile, 5 on the
    /// epilogue path ([`TraceKind::TileStaged`], [`TraceKind::CopyIssued`],
    /// [`TraceKind::CopyFenced`], [`TraceKind::TileStored`], [`TraceKind::PeerAdded`];
    /// its tiles span two 64x128 units or more, except edge tiles), else 1 plus, on the
    /// paths that claim tiles, 2 per claim of [`CLAIM_TILES`] tiles, plus 2 per slice of a
    /// split last wave (one per fp32 slot of the split scratch): 4 per 64x128 unit of output plus a few
    /// thousand (for the CTAs and one more event per edge tile) covers any call. Events past `capacity` are dropped
    /// and counted ([`FusedTrace::dropped`]).
    ///
    /// Errors: `capacity` 0 or above 2^26; allocation failure.
    pub fn new(stream: &Arc<CudaStream>, capacity: u32) -> Result<Self> {
        if capacity == 0 || capacity > 1 << 26 {
            return Err(invalid("capacity", format!("must be 1..=2^26 events, got {capacity}")));
        }
        let buf = stream.alloc_zeros::<u64>(TraceTarget::bytes(capacity) / 8).call("cuMemAlloc")?;
        Ok(Self { buf, capacity, armed: None })
    }

    /// Events the buffer holds.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The GPU the buffer is on.
    pub fn ordinal(&self) -> usize {
        self.buf.ordinal()
    }

    /// Zeroes the buffer on `stream` (ordered before the traced launch) and says where
    /// the kernel writes.
    pub(crate) fn arm(&mut self, stream: &Arc<CudaStream>) -> Result<TraceTarget> {
        stream.memset_zeros(&mut self.buf).call("cuMemsetD8Async")?;
        let (ptr, _guard) = self.buf.device_ptr_mut(stream);
        // The guard records the buffer's write before the kernel is launched; `read`
        // orders itself after this stream instead (the traced call is enqueued on it).
        self.armed = Some(stream.clone());
        Ok(TraceTarget { ptr, capacity: self.capacity })
    }

    /// Copies the events back (waits for `stream`, and for the stream of the last traced
    /// call when that is another one), sorted by time.
    ///
    /// Errors: driver errors; an event kind this version does not know.
    pub fn read(&self, stream: &Arc<CudaStream>) -> Result<FusedTrace> {
        if let Some(armed) = self.armed.as_ref().filter(|a| !Arc::ptr_eq(a, stream)) {
            stream.join(armed).call("cuStreamWaitEvent")?;
        }
        let words = stream.clone_dtoh(&self.buf).call("cuMemcpyDtoH")?;
        FusedTrace::parse(&words, self.capacity)
    }
}

/// The events of one fused call on one rank.
#[derive(Debug, Clone, Serialize)]
pub struct FusedTrace {
    /// Events in time order.
    pub events: Vec<TraceEvent>,
    /// Events the buffer had no room for.
    pub dropped: u32,
}

/// Where one call's time went, from its trace (microseconds from its first event).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TraceSummary {
    /// The last compute CTA published its last tile (on the epilogue path: once its
    /// copy to the peer was written).
    pub compute_end_us: f64,
    /// The last CTA reached the epoch hand-over.
    pub end_us: f64,
    /// The first tail CTA started (None: no tail CTAs).
    pub first_tail_start_us: Option<f64>,
    /// Tail CTAs that started.
    pub tail_ctas: u32,
    /// Claims taken by tail CTAs.
    pub tail_claims: u32,
    /// Claims taken by dedicated communication CTAs.
    pub dedicated_claims: u32,
    /// Claims taken after compute ended.
    pub claims_after_compute: u32,
    /// Median time from a claim to its flags being ready, tail CTAs.
    pub tail_claim_wait_us: f64,
    /// Median claim wait of the dedicated communication CTAs.
    pub dedicated_claim_wait_us: f64,
    /// Epilogue path: tiles whose peer copy was added into `out`.
    pub peer_adds: u32,
    /// Epilogue path: median time from a tile's publication to the peer's copy of it
    /// being added (the wait for the peer, then a local load and reduce-add).
    pub peer_add_wait_us: f64,
    /// Epilogue path: the last tile staged (the GEMM's end on this rank).
    pub last_staged_us: f64,
    /// Epilogue path: median time from a tile being staged to its publication (the
    /// paced or, for a CTA's last tile, full-speed copy to the peer and its fence), over
    /// the tiles copied (a reduce-scatter copies those that meet the peer's rows).
    pub copy_us: f64,
    /// Epilogue path, the tiles copied at full speed (each CTA's last tile, or with a
    /// split last wave the tiles its last slices staged, since every whole tile is then
    /// paced; medians over those tiles, 0 when the kernel records no
    /// [`TraceKind::CopyIssued`] events): from staged to the copy's stores issued, ...
    pub last_copy_issue_us: f64,
    /// ... from issued to every lane's system-scope fence returned, ...
    pub last_copy_fence_us: f64,
    /// ... and from fenced to published (the wait for the TMA store into `out`, then
    /// the release of the peer's flag).
    pub last_copy_publish_us: f64,
    /// Median over CTAs of the SM clock rate between a CTA's first and last event, in
    /// MHz (cycles of `%clock` per microsecond of `%globaltimer`); 0 when no CTA's events
    /// span 20 us. Kernels of one round run at about the same clocks (power
    /// management reacts over milliseconds), so this tells a slower tile rate at lower
    /// clocks from one at more cycles per tile.
    pub sm_clock_mhz: f64,
    /// Events the buffer had no room for.
    pub dropped: u32,
}

impl FusedTrace {
    /// Events from a trace buffer's contents as u64 words, sorted by time.
    fn parse(words: &[u64], capacity: u32) -> Result<Self> {
        // `FusedTraceHeader` is word 0 (count in the low half); event i is words 1 + 3i..:
        // t_ns, then cta | tile << 32, then kind | sm_clock << 32 (`FusedTraceEvent`'s layout).
        let count = words.first().map_or(0, |&w| w as u32);
        let mut raw = Vec::with_capacity(count.min(capacity) as usize);
        for (i, e) in words.get(1..).unwrap_or_default().chunks_exact(EVENT_WORDS).take(count.min(capacity) as usize).enumerate() {
            let kind_raw = e[2] as u32;
            let kind = TraceKind::from_raw(kind_raw)
                .ok_or_else(|| invalid("trace", format!("event {i} has unknown kind {kind_raw}")))?;
            raw.push((e[0], e[1] as u32, (e[1] >> 32) as u32, kind, (e[2] >> 32) as u32));
        }
        raw.sort_by_key(|e| e.0);
        let t0 = raw.first().map_or(0, |e| e.0);
        let events = raw
            .into_iter()
            .map(|(t, cta, tile, kind, sm_clock)| TraceEvent { t_us: (t - t0) as f64 / 1e3, cta, tile, kind, sm_clock })
            .collect();
        Ok(FusedTrace { events, dropped: count.saturating_sub(capacity) })
    }

    /// For every `to` event whose tile also has a `from` event: the microseconds between
    /// them (the epilogue path's per-tile steps).
    fn per_tile_gaps(&self, from: TraceKind, to: TraceKind) -> Vec<f64> {
        let start: std::collections::HashMap<u32, f64> = self.events.iter().filter(|e| e.kind == from).map(|e| (e.tile, e.t_us)).collect();
        self.events.iter().filter(|e| e.kind == to).filter_map(|e| start.get(&e.tile).map(|t| e.t_us - t)).collect()
    }

    /// The summary of [`TraceSummary`].
    pub fn summary(&self) -> TraceSummary {
        let mut role = std::collections::HashMap::new();
        let mut first_tail: Option<f64> = None;
        for e in self.events.iter().filter(|e| e.kind == TraceKind::CtaStart) {
            role.insert(e.cta, e.tile);
            if e.tile == 2 {
                first_tail = Some(first_tail.map_or(e.t_us, |t: f64| t.min(e.t_us)));
            }
        }
        let compute_end = self.events.iter().filter(|e| e.kind == TraceKind::TileStored).map(|e| e.t_us).fold(0.0, f64::max);
        let end = self.events.iter().map(|e| e.t_us).fold(0.0, f64::max);
        // Pair each claim with the next ClaimReady of the same CTA and first tile.
        let mut open = std::collections::HashMap::new();
        let (mut tail_waits, mut dedicated_waits) = (Vec::new(), Vec::new());
        let (mut tail_claims, mut dedicated_claims, mut after) = (0, 0, 0);
        for e in &self.events {
            match e.kind {
                TraceKind::Claim => {
                    open.insert((e.cta, e.tile), e.t_us);
                    if role.get(&e.cta) == Some(&2) {
                        tail_claims += 1;
                    } else {
                        dedicated_claims += 1;
                    }
                    if e.t_us > compute_end {
                        after += 1;
                    }
                }
                TraceKind::ClaimReady => {
                    if let Some(t) = open.remove(&(e.cta, e.tile)) {
                        if role.get(&e.cta) == Some(&2) { tail_waits.push(e.t_us - t) } else { dedicated_waits.push(e.t_us - t) }
                    }
                }
                _ => {}
            }
        }
        // Per CTA: its first and last event (time order), for the SM clock rate.
        let mut span: std::collections::HashMap<u32, (&TraceEvent, &TraceEvent)> = std::collections::HashMap::new();
        for e in &self.events {
            span.entry(e.cta).and_modify(|s| s.1 = e).or_insert((e, e));
        }
        let mut mhz: Vec<f64> = span
            .values()
            .filter(|(a, b)| b.t_us - a.t_us >= MIN_CLOCK_SPAN_US)
            .map(|(a, b)| b.sm_clock.wrapping_sub(a.sm_clock) as f64 / (b.t_us - a.t_us))
            .collect();
        let mut add_waits = self.per_tile_gaps(TraceKind::TileStored, TraceKind::PeerAdded);
        // Each CTA's last staged tile, and the gaps between its copy's events.
        let mut last_tile: std::collections::HashMap<u32, (f64, u32)> = std::collections::HashMap::new();
        for e in self.events.iter().filter(|e| e.kind == TraceKind::TileStaged) {
            let l = last_tile.entry(e.cta).or_insert((e.t_us, e.tile));
            if e.t_us >= l.0 {
                *l = (e.t_us, e.tile);
            }
        }
        // (a split last wave paces every whole tile: then only the last slices' tiles go
        // at full speed)
        let slice_last: Vec<u32> = self.events.iter().filter(|e| e.kind == TraceKind::SliceLast).map(|e| e.tile).collect();
        let full_speed: Vec<u32> = if slice_last.is_empty() { last_tile.values().map(|&(_, t)| t).collect() } else { slice_last };
        let at = |kind: TraceKind| -> std::collections::HashMap<u32, f64> { self.events.iter().filter(|e| e.kind == kind).map(|e| (e.tile, e.t_us)).collect() };
        let (staged, issued, fenced, stored) = (at(TraceKind::TileStaged), at(TraceKind::CopyIssued), at(TraceKind::CopyFenced), at(TraceKind::TileStored));
        let last_gaps = |from: &std::collections::HashMap<u32, f64>, to: &std::collections::HashMap<u32, f64>| -> Vec<f64> {
            full_speed.iter().filter_map(|t| Some(to.get(t)? - from.get(t)?)).collect()
        };
        let (mut issue, mut fence, mut publish) = (last_gaps(&staged, &issued), last_gaps(&issued, &fenced), last_gaps(&fenced, &stored));
        // (the tiles copied to the peer, where the kernel records copy events: all on an
        // all-reduce, those that meet the peer's rows on a reduce-scatter, whose other tiles
        // are published with nothing copied)
        let mut copies = if issued.is_empty() {
            self.per_tile_gaps(TraceKind::TileStaged, TraceKind::TileStored)
        } else {
            issued.keys().filter_map(|t| Some(stored.get(t)? - staged.get(t)?)).collect()
        };
        TraceSummary {
            last_staged_us: self.events.iter().filter(|e| e.kind == TraceKind::TileStaged).map(|e| e.t_us).fold(0.0, f64::max),
            copy_us: median(&mut copies),
            last_copy_issue_us: median(&mut issue),
            last_copy_fence_us: median(&mut fence),
            last_copy_publish_us: median(&mut publish),
            peer_adds: self.events.iter().filter(|e| e.kind == TraceKind::PeerAdded).count() as u32,
            peer_add_wait_us: median(&mut add_waits),
            compute_end_us: compute_end,
            end_us: end,
            first_tail_start_us: first_tail,
            tail_ctas: role.values().filter(|&&r| r == 2).count() as u32,
            tail_claims,
            dedicated_claims,
            claims_after_compute: after,
            tail_claim_wait_us: median(&mut tail_waits),
            dedicated_claim_wait_us: median(&mut dedicated_waits),
            sm_clock_mhz: median(&mut mhz),
            dropped: self.dropped,
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

impl std::fmt::Display for TraceSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "compute ends {:.1} us, call ends {:.1} us (tail {:.1} us); ",
            self.compute_end_us,
            self.end_us,
            self.end_us - self.compute_end_us
        )?;
        if self.peer_adds > 0 {
            // Epilogue path: no communication CTAs, no claims.
            write!(
                f,
                "last tile staged {:.1} us, copy to the peer median {:.1} us; {} peer tiles added, median {:.1} us after the own tile was published",
                self.last_staged_us, self.copy_us, self.peer_adds, self.peer_add_wait_us
            )?;
            if self.last_copy_issue_us + self.last_copy_fence_us + self.last_copy_publish_us > 0.0 {
                write!(
                    f,
                    "; a CTA's last copy: stores issued in {:.1} us, fenced {:.1} us later, published {:.1} us after that",
                    self.last_copy_issue_us, self.last_copy_fence_us, self.last_copy_publish_us
                )?;
            }
        } else {
            match self.first_tail_start_us {
                Some(t) => write!(f, "{} tail CTAs from {t:.1} us, ", self.tail_ctas)?,
                None => write!(f, "no tail CTAs, ")?,
            }
            write!(
                f,
                "claims {} dedicated + {} tail ({} after compute), median claim wait {:.1} us dedicated / {:.1} us tail",
                self.dedicated_claims, self.tail_claims, self.claims_after_compute, self.dedicated_claim_wait_us, self.tail_claim_wait_us
            )?;
        }
        if self.sm_clock_mhz > 0.0 {
            write!(f, "; SM clock ~{:.0} MHz", self.sm_clock_mhz)?;
        }
        if self.dropped > 0 {
            write!(f, "; {} events dropped", self.dropped)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t_us: f64, cta: u32, tile: u32, kind: TraceKind) -> TraceEvent {
        TraceEvent { t_us, cta, tile, kind, sm_clock: 0 }
    }

    #[test]
    fn summary_separates_compute_tail_and_claim_waits() {
        // CTA 0 computes tiles 0 and 1; CTA 1 communicates; CTA 2 is a tail CTA.
        let t = FusedTrace {
            events: vec![
                ev(0.0, 0, 0, TraceKind::CtaStart),
                ev(0.5, 1, 1, TraceKind::CtaStart),
                ev(1.0, 1, 0, TraceKind::Claim),
                ev(10.0, 0, 0, TraceKind::TileStored),
                ev(11.0, 1, 0, TraceKind::ClaimReady),
                ev(20.0, 0, 1, TraceKind::TileStored),
                ev(21.0, 0, 0, TraceKind::CtaEnd),
                ev(22.0, 2, 2, TraceKind::CtaStart),
                ev(23.0, 2, 1, TraceKind::Claim),
                ev(25.0, 2, 1, TraceKind::ClaimReady),
                ev(30.0, 2, 4, TraceKind::CommDone),
                ev(31.0, 2, 0, TraceKind::CtaEnd),
            ],
            dropped: 0,
        };
        let s = t.summary();
        assert_eq!(s.compute_end_us, 20.0);
        assert_eq!(s.end_us, 31.0);
        assert_eq!(s.first_tail_start_us, Some(22.0));
        assert_eq!((s.tail_ctas, s.tail_claims, s.dedicated_claims, s.claims_after_compute), (1, 1, 1, 1));
        assert_eq!((s.dedicated_claim_wait_us, s.tail_claim_wait_us), (10.0, 2.0));
        let text = s.to_string();
        assert!(text.contains("tail 11.0 us") && text.contains("1 tail CTAs from 22.0 us"), "{text}");
    }

    #[test]
    fn buffer_words_parse_in_time_order_and_count_dropped_events() {
        let cap = 2;
        // count 3 (one dropped); event 0 at 5 us: claim of tile 9 by CTA 4; event 1 at
        // 2 us: CTA 7 starts as a tail CTA; a stale third slot past the capacity.
        // The claim's SM clock (the kind word's high half) is 123.
        let words = [3, 7000, 4 | (9 << 32), 3 | (123 << 32), 2000, 7 | (2 << 32), 1, 0, 0, 0];
        let t = FusedTrace::parse(&words, cap).unwrap();
        assert_eq!(t.dropped, 1);
        let claim = TraceEvent { sm_clock: 123, ..ev(5.0, 4, 9, TraceKind::Claim) };
        assert_eq!(t.events, vec![ev(0.0, 7, 2, TraceKind::CtaStart), claim]);
        let bad = [1, 0, 0, 14];
        assert!(FusedTrace::parse(&bad, cap).unwrap_err().to_string().contains("unknown kind 14"));
        assert!(FusedTrace::parse(&[0], cap).unwrap().events.is_empty());
    }

    #[test]
    fn epilogue_summary_reports_the_peer_add_wait() {
        // Two compute CTAs; tile 0 staged at 7 us, published at 10 us and its peer copy
        // added at 14 us, tile 1 at 11, 12 and 20 us.
        let t = FusedTrace {
            events: vec![
                ev(0.0, 0, 0, TraceKind::CtaStart),
                ev(0.0, 1, 0, TraceKind::CtaStart),
                ev(7.0, 0, 0, TraceKind::TileStaged),
                ev(11.0, 1, 1, TraceKind::TileStaged),
                ev(10.0, 0, 0, TraceKind::TileStored),
                ev(12.0, 1, 1, TraceKind::TileStored),
                ev(14.0, 0, 0, TraceKind::PeerAdded),
                ev(20.0, 1, 1, TraceKind::PeerAdded),
                ev(21.0, 0, 0, TraceKind::CtaEnd),
                ev(22.0, 1, 0, TraceKind::CtaEnd),
            ],
            dropped: 0,
        };
        let s = t.summary();
        assert_eq!((s.peer_adds, s.compute_end_us, s.end_us, s.dedicated_claims + s.tail_claims), (2, 12.0, 22.0, 0));
        assert_eq!(s.peer_add_wait_us, 8.0); // the upper median of {4, 8}
        assert_eq!((s.last_staged_us, s.copy_us), (11.0, 3.0)); // copies {3, 1}
        let text = s.to_string();
        assert!(text.contains("2 peer tiles added") && text.contains("last tile staged 11.0 us") && !text.contains("claims"), "{text}");
        // (no copy events: no split of the last copy)
        assert_eq!((s.last_copy_issue_us, s.last_copy_fence_us, s.last_copy_publish_us), (0.0, 0.0, 0.0));
        assert!(!text.contains("last copy"), "{text}");
        // A reduce-scatter copies only the tiles that meet the peer's rows (copy events):
        // the copy median is theirs, not the published-at-once tiles'.
        let mut rs = t.clone();
        rs.events.push(ev(11.5, 1, 1, TraceKind::CopyIssued));
        assert_eq!(rs.summary().copy_us, 1.0); // tile 1's {1}, not the upper median 3 of {3, 1}
    }

    #[test]
    fn epilogue_summary_splits_each_ctas_last_copy() {
        // CTA 0 stages tile 0 at 10 us (paced: its copy is not the CTA's last) and tile 2
        // at 40 us; CTA 1 stages tile 1 at 41 us. Last copies: tile 2 issued after 2 us,
        // fenced 5 us later, published 1 us after; tile 1: 4, 7 and 3 us.
        let t = FusedTrace {
            events: vec![
                ev(0.0, 0, 0, TraceKind::CtaStart),
                ev(0.0, 1, 0, TraceKind::CtaStart),
                ev(10.0, 0, 0, TraceKind::TileStaged),
                ev(30.0, 0, 0, TraceKind::CopyIssued),
                ev(31.0, 0, 0, TraceKind::CopyFenced),
                ev(31.5, 0, 0, TraceKind::TileStored),
                ev(40.0, 0, 2, TraceKind::TileStaged),
                ev(42.0, 0, 2, TraceKind::CopyIssued),
                ev(47.0, 0, 2, TraceKind::CopyFenced),
                ev(48.0, 0, 2, TraceKind::TileStored),
                ev(41.0, 1, 1, TraceKind::TileStaged),
                ev(45.0, 1, 1, TraceKind::CopyIssued),
                ev(52.0, 1, 1, TraceKind::CopyFenced),
                ev(55.0, 1, 1, TraceKind::TileStored),
                ev(50.0, 0, 0, TraceKind::PeerAdded),
                ev(56.0, 0, 2, TraceKind::PeerAdded),
                ev(58.0, 1, 1, TraceKind::PeerAdded),
            ],
            dropped: 0,
        };
        let s = t.summary();
        // (medians of two: the upper one)
        assert_eq!((s.last_copy_issue_us, s.last_copy_fence_us, s.last_copy_publish_us), (4.0, 7.0, 3.0));
        let text = s.to_string();
        assert!(text.contains("last copy: stores issued in 4.0 us, fenced 7.0 us later, published 3.0 us after that"), "{text}");
        // A split last wave: only the tile a last slice staged counts (tile 1 here; CTA
        // 0's tile 2 was paced).
        let mut split = t.clone();
        split.events.push(ev(40.5, 1, 1, TraceKind::SliceLast));
        let s = split.summary();
        assert_eq!((s.last_copy_issue_us, s.last_copy_fence_us, s.last_copy_publish_us), (4.0, 7.0, 3.0));
        split.events.retain(|e| e.kind != TraceKind::SliceLast);
        split.events.push(ev(39.5, 0, 2, TraceKind::SliceLast));
        let s = split.summary();
        assert_eq!((s.last_copy_issue_us, s.last_copy_fence_us, s.last_copy_publish_us), (2.0, 5.0, 1.0));
    }

    #[test]
    fn sm_clock_is_the_median_cta_rate_across_a_counter_wrap() {
        // CTA 0: 1980 cycles per us over 100 us, across the 32-bit wrap; CTA 1: 1500 per
        // us over 40 us; CTA 2: 1800 per us over 50 us; CTA 3 spans 10 us (too short).
        let at = |t_us: f64, cta: u32, clock: u32| TraceEvent { sm_clock: clock, ..ev(t_us, cta, 0, TraceKind::TileStaged) };
        let start = u32::MAX - 90_000;
        let t = FusedTrace {
            events: vec![
                at(0.0, 0, start),
                at(10.0, 1, 0),
                at(10.0, 2, 100),
                at(20.0, 3, 0),
                at(30.0, 3, 9_900),
                at(50.0, 1, 60_000),
                at(60.0, 2, 90_100),
                at(100.0, 0, start.wrapping_add(198_000)),
            ],
            dropped: 0,
        };
        let s = t.summary();
        assert!((s.sm_clock_mhz - 1800.0).abs() < 1e-9, "{}", s.sm_clock_mhz);
        assert!(s.to_string().contains("SM clock ~1800 MHz"), "{s}");
        assert_eq!(FusedTrace { events: vec![at(0.0, 0, 5)], dropped: 0 }.summary().sm_clock_mhz, 0.0);
    }

    #[test]
    fn unknown_kinds_are_refused() {
        assert_eq!(TraceKind::from_raw(0), None);
        assert_eq!(TraceKind::from_raw(14), None);
        assert_eq!(TraceKind::from_raw(12), Some(TraceKind::CopyIssued));
        assert_eq!(TraceKind::from_raw(13), Some(TraceKind::CopyFenced));
        assert_eq!(TraceKind::from_raw(7), Some(TraceKind::PeerAdded));
        assert_eq!(TraceKind::from_raw(8), Some(TraceKind::TileStaged));
        assert_eq!(TraceKind::from_raw(9), Some(TraceKind::SliceComputed));
        assert_eq!(TraceKind::from_raw(10), Some(TraceKind::SliceCounted));
        assert_eq!(TraceKind::from_raw(11), Some(TraceKind::SliceLast));
        assert_eq!(TraceKind::from_raw(3), Some(TraceKind::Claim));
    }
}
