//! Bounded waiting. Every wait in mkernel's host code has a deadline and, on timeout,
//! says what it waited for (operation, rank, peer, expected and observed values).

use std::time::{Duration, Instant};

use crate::error::TransportError;

/// A point in time after which a wait gives up.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: Instant,
    end: Instant,
}

impl Deadline {
    /// A deadline `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        let start = Instant::now();
        Deadline {
            start,
            end: start + timeout,
        }
    }

    /// `true` once the deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.end
    }

    /// Milliseconds since the deadline was created.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The timeout error for this deadline; `what` names the wait.
    pub fn timeout(&self, what: String) -> TransportError {
        TransportError::Timeout {
            what,
            waited_ms: self.elapsed_ms(),
        }
    }
}

/// Calls `step` until it returns `Ok(true)`, an error, or `deadline` passes.
///
/// `step` should make progress itself (e.g. poll a transport) and report whether the
/// condition holds. On timeout, returns [`TransportError::Timeout`] with `what()`'s
/// description, evaluated only then (so it can print the observed values).
pub fn wait_until(
    deadline: &Deadline,
    what: impl Fn() -> String,
    mut step: impl FnMut() -> Result<bool, TransportError>,
) -> Result<(), TransportError> {
    let mut spins: u32 = 0;
    loop {
        if step()? {
            return Ok(());
        }
        if deadline.expired() {
            return Err(deadline.timeout(what()));
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) {
            std::thread::yield_now();
        }
    }
}
