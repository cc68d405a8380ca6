//! Bootstrap wire format: a fixed 40-byte little-endian header, then `len` payload bytes.
//!
//! ```text
//! offset size field
//!      0    4 magic          b"MKTB"
//!      4    2 version        PROTOCOL_VERSION
//!      6    1 kind           FrameKind
//!      7    1 reserved       0
//!      8    4 world_size     sender's world size
//!     12    4 rank           sender's rank
//!     16    8 seq            collective sequence number (0 for hello/welcome)
//!     24    4 root           broadcast root, else 0
//!     28    4 reserved       0
//!     32    8 len            payload bytes that follow
//! ```
//!
//! Magic, version, world size and rank stay at these offsets in every protocol version,
//! so a peer of another version is still reported by rank.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// First four bytes of every frame.
pub(crate) const MAGIC: [u8; 4] = *b"MKTB";
/// Bumped on any incompatible change of the header or of a payload encoding.
pub(crate) const PROTOCOL_VERSION: u16 = 1;
/// Size of the fixed header.
pub(crate) const HEADER_LEN: usize = 40;
/// Largest payload accepted in one frame. The bootstrap carries handles and addresses,
/// not tensors; this bound also stops a corrupt length from allocating without limit.
pub(crate) const MAX_PAYLOAD_BYTES: u64 = 1 << 30;

/// What a frame is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FrameKind {
    /// Rank > 0 -> rank 0, first frame on a connection.
    Hello = 1,
    /// Rank 0 -> rank > 0, once every rank has said hello.
    Welcome = 2,
    /// Contribution to (to rank 0) or result of (from rank 0) an all-gather.
    AllGather = 3,
    /// Arrival at (to rank 0) or release from (from rank 0) a barrier.
    Barrier = 4,
    /// Contribution to or result of a broadcast; `root` in the header.
    Broadcast = 5,
    /// The sender failed; the payload is its error message (UTF-8).
    Abort = 6,
}

impl FrameKind {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Hello,
            2 => Self::Welcome,
            3 => Self::AllGather,
            4 => Self::Barrier,
            5 => Self::Broadcast,
            6 => Self::Abort,
            _ => return None,
        })
    }

    /// Name used in error messages, matching the public method names.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Hello => "hello",
            Self::Welcome => "welcome",
            Self::AllGather => "all_gather",
            Self::Barrier => "barrier",
            Self::Broadcast => "broadcast",
            Self::Abort => "abort",
        }
    }
}

/// Decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: FrameKind,
    pub world_size: u32,
    pub rank: u32,
    pub seq: u64,
    pub root: u32,
    pub len: u64,
}

/// Why a header could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// Not an mkernel bootstrap peer at all.
    BadMagic([u8; 4]),
    /// An mkernel peer speaking another protocol version.
    Version { version: u16, rank: u32 },
    /// Unknown frame kind.
    Kind { kind: u8, rank: u32 },
    /// Payload longer than [`MAX_PAYLOAD_BYTES`].
    TooLong { len: u64, rank: u32 },
}

impl HeaderError {
    /// The sender's rank, when the header got far enough to carry one.
    pub(crate) fn rank(&self) -> Option<u32> {
        match self {
            Self::BadMagic(_) => None,
            Self::Version { rank, .. } | Self::Kind { rank, .. } | Self::TooLong { rank, .. } => {
                Some(*rank)
            }
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Self::BadMagic(m) => format!("bad magic {m:02x?} (expected {MAGIC:02x?}; not an mkernel bootstrap peer)"),
            Self::Version { version, .. } => format!(
                "protocol version {version}, this rank speaks {PROTOCOL_VERSION} (are all ranks running the same mkernel build?)"
            ),
            Self::Kind { kind, .. } => format!("unknown frame kind {kind}"),
            Self::TooLong { len, .. } => format!("payload of {len} bytes exceeds the limit of {MAX_PAYLOAD_BYTES} bytes"),
        }
    }
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        b[6] = self.kind as u8;
        b[8..12].copy_from_slice(&self.world_size.to_le_bytes());
        b[12..16].copy_from_slice(&self.rank.to_le_bytes());
        b[16..24].copy_from_slice(&self.seq.to_le_bytes());
        b[24..28].copy_from_slice(&self.root.to_le_bytes());
        b[32..40].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; HEADER_LEN]) -> Result<Self, HeaderError> {
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| (u64::from(u32_at(o + 4)) << 32) | u64::from(u32_at(o));
        let magic = [b[0], b[1], b[2], b[3]];
        if magic != MAGIC {
            return Err(HeaderError::BadMagic(magic));
        }
        let rank = u32_at(12);
        let version = u16_at(4);
        if version != PROTOCOL_VERSION {
            return Err(HeaderError::Version { version, rank });
        }
        let kind = FrameKind::from_u8(b[6]).ok_or(HeaderError::Kind { kind: b[6], rank })?;
        let len = u64_at(32);
        if len > MAX_PAYLOAD_BYTES {
            return Err(HeaderError::TooLong { len, rank });
        }
        Ok(Header {
            kind,
            world_size: u32_at(8),
            rank,
            seq: u64_at(16),
            root: u32_at(24),
            len,
        })
    }
}

/// One complete frame.
#[derive(Debug)]
pub(crate) struct Frame {
    pub header: Header,
    pub payload: Vec<u8>,
}

/// Why reading or writing a frame failed.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The peer closed the connection (EOF, reset, broken pipe).
    Closed,
    /// The deadline passed first.
    TimedOut,
    /// The bytes received are not a valid header.
    Header(HeaderError),
    /// Any other socket error.
    Io(io::Error),
}

fn classify(e: io::Error) -> WireError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => WireError::Closed,
        _ => WireError::Io(e),
    }
}

/// Reassembles frames from a non-blocking stream across calls, so a wait can poll many
/// peers and stop at a deadline without losing a half-received frame.
#[derive(Debug)]
pub(crate) struct FrameReader {
    header: [u8; HEADER_LEN],
    header_have: usize,
    parsed: Option<Header>,
    payload: Vec<u8>,
    payload_have: usize,
}

impl Default for FrameReader {
    fn default() -> Self {
        Self {
            header: [0; HEADER_LEN],
            header_have: 0,
            parsed: None,
            payload: Vec::new(),
            payload_have: 0,
        }
    }
}

impl FrameReader {
    /// Reads whatever is available without blocking. `Ok(Some)` once a frame is
    /// complete, `Ok(None)` when the socket has no more bytes for now.
    pub(crate) fn poll(&mut self, stream: &mut impl Read) -> Result<Option<Frame>, WireError> {
        loop {
            let header = match self.parsed {
                Some(h) => h,
                None => {
                    if self.header_have < HEADER_LEN {
                        match stream.read(&mut self.header[self.header_have..]) {
                            Ok(0) => return Err(WireError::Closed),
                            Ok(n) => self.header_have += n,
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(classify(e)),
                        }
                        continue;
                    }
                    let h = Header::decode(&self.header).map_err(WireError::Header)?;
                    // `len <= MAX_PAYLOAD_BYTES` (1 GiB) was checked by `decode`.
                    self.payload = vec![0; h.len as usize];
                    self.payload_have = 0;
                    self.parsed = Some(h);
                    h
                }
            };
            if self.payload_have < self.payload.len() {
                match stream.read(&mut self.payload[self.payload_have..]) {
                    Ok(0) => return Err(WireError::Closed),
                    Ok(n) => self.payload_have += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(classify(e)),
                }
                continue;
            }
            let payload = std::mem::take(&mut self.payload);
            self.header_have = 0;
            self.parsed = None;
            self.payload_have = 0;
            return Ok(Some(Frame { header, payload }));
        }
    }

    /// Waits (polling with backoff) for one complete frame until `deadline`.
    pub(crate) fn read_until(
        &mut self,
        stream: &mut TcpStream,
        deadline: Instant,
    ) -> Result<Frame, WireError> {
        let mut backoff = Backoff::new();
        loop {
            if let Some(frame) = self.poll(stream)? {
                return Ok(frame);
            }
            if Instant::now() >= deadline {
                return Err(WireError::TimedOut);
            }
            backoff.sleep(deadline);
        }
    }
}

/// Writes `header` and `payload` to a non-blocking stream, retrying until `deadline`.
/// A `TimedOut` or `Io` error may leave a partial frame on the wire.
pub(crate) fn write_frame(
    stream: &mut TcpStream,
    header: &Header,
    payload: &[u8],
    deadline: Instant,
) -> Result<(), WireError> {
    write_all_until(stream, &header.encode(), deadline)?;
    write_all_until(stream, payload, deadline)
}

fn write_all_until(
    stream: &mut TcpStream,
    mut buf: &[u8],
    deadline: Instant,
) -> Result<(), WireError> {
    let mut backoff = Backoff::new();
    while !buf.is_empty() {
        match stream.write(buf) {
            Ok(0) => return Err(WireError::Closed),
            Ok(n) => {
                buf = &buf[n..];
                backoff = Backoff::new();
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(WireError::TimedOut);
                }
                backoff.sleep(deadline);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(classify(e)),
        }
    }
    Ok(())
}

/// Exponential sleep between polls: starts at 20 us (a bootstrap barrier stays well
/// under a millisecond when every rank is ready) and doubles up to a cap (2 ms by
/// default, so idle waits cost little CPU).
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self::with_cap(Duration::from_millis(2))
    }

    pub(crate) fn with_cap(cap: Duration) -> Self {
        Self {
            next: Duration::from_micros(20),
            cap,
        }
    }

    /// Sleeps for the current step (never past `deadline`) and doubles the step.
    pub(crate) fn sleep(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(self.next.min(left));
        self.next = (self.next * 2).min(self.cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            kind: FrameKind::Broadcast,
            world_size: 7,
            rank: 3,
            seq: 0x0102_0304_0506_0708,
            root: 5,
            len: 11,
        }
    }

    #[test]
    fn header_round_trips_at_the_documented_offsets() {
        let h = header();
        let b = h.encode();
        assert_eq!(&b[0..4], b"MKTB");
        assert_eq!(u16::from_le_bytes([b[4], b[5]]), PROTOCOL_VERSION);
        assert_eq!(b[6], FrameKind::Broadcast as u8);
        assert_eq!(&b[8..12], &7u32.to_le_bytes());
        assert_eq!(&b[12..16], &3u32.to_le_bytes());
        assert_eq!(&b[16..24], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(&b[24..28], &5u32.to_le_bytes());
        assert_eq!(&b[32..40], &11u64.to_le_bytes());
        assert_eq!(Header::decode(&b), Ok(h));
    }

    #[test]
    fn bad_headers_are_named() {
        let mut b = header().encode();
        b[0] = b'X';
        assert!(matches!(Header::decode(&b), Err(HeaderError::BadMagic(_))));

        let mut b = header().encode();
        b[4] = 99;
        assert_eq!(
            Header::decode(&b),
            Err(HeaderError::Version {
                version: 99,
                rank: 3
            })
        );

        let mut b = header().encode();
        b[6] = 42;
        assert_eq!(
            Header::decode(&b),
            Err(HeaderError::Kind { kind: 42, rank: 3 })
        );

        let b = Header {
            len: MAX_PAYLOAD_BYTES + 1,
            ..header()
        }
        .encode();
        assert!(matches!(
            Header::decode(&b),
            Err(HeaderError::TooLong { .. })
        ));
    }

    /// A reader that hands out at most `step` bytes per call and then `WouldBlock`s
    /// every other call, to exercise reassembly across polls.
    struct Trickle {
        data: Vec<u8>,
        pos: usize,
        step: usize,
        block_next: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.block_next {
                self.block_next = false;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.block_next = true;
            let n = self.step.min(buf.len()).min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    #[test]
    fn reader_reassembles_frames_split_anywhere() {
        let payloads: [&[u8]; 3] = [b"hello world", b"", b"x"];
        let mut data = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            let h = Header {
                seq: i as u64,
                len: p.len() as u64,
                ..header()
            };
            data.extend_from_slice(&h.encode());
            data.extend_from_slice(p);
        }
        for step in [1, 3, 7, 40, 1000] {
            let mut src = Trickle {
                data: data.clone(),
                pos: 0,
                step,
                block_next: false,
            };
            let mut reader = FrameReader::default();
            let mut got = Vec::new();
            while got.len() < payloads.len() {
                if let Some(f) = reader.poll(&mut src).unwrap() {
                    got.push(f);
                }
            }
            for (i, f) in got.iter().enumerate() {
                assert_eq!(f.header.seq, i as u64, "step {step}");
                assert_eq!(f.payload, payloads[i], "step {step}");
            }
            assert!(matches!(
                reader.poll(&mut src),
                Ok(None) | Err(WireError::Closed)
            ));
        }
    }

    #[test]
    fn eof_mid_frame_is_closed() {
        let mut data = header().encode().to_vec();
        data.extend_from_slice(b"abc"); // 3 of 11 payload bytes
        let mut reader = FrameReader::default();
        let mut src = io::Cursor::new(data);
        assert!(matches!(reader.poll(&mut src), Err(WireError::Closed)));
    }
}
