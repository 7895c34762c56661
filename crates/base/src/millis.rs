//! Time as drydock reports and stores it: whole milliseconds in a `u64`, a duration that does
//! not fit (centuries) saturating instead of wrapping round.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `duration` in whole milliseconds.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Milliseconds since the Unix epoch (0 for a time before it).
pub fn unix_millis(time: SystemTime) -> u64 {
    millis(time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_saturate_and_times_before_the_epoch_are_zero() {
        assert_eq!(millis(Duration::from_micros(2_999)), 2);
        assert_eq!(millis(Duration::MAX), u64::MAX);
        assert_eq!(unix_millis(UNIX_EPOCH + Duration::from_secs(3)), 3_000);
        assert_eq!(unix_millis(UNIX_EPOCH - Duration::from_secs(3)), 0);
    }
}
