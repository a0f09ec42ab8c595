//! The wall clock, on the timeline.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::Timestamp;

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn wall_clock_ms() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as Timestamp)
        .unwrap_or(0)
}

/// Milliseconds since the Unix epoch, rounded up: no instant already past (a statement's
/// `now()`, in microseconds) is later than it.
pub fn wall_clock_ms_rounded_up() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros().div_ceil(1_000) as Timestamp)
        .unwrap_or(0)
}
