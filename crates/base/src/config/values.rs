//! A setting's number read as what it counts: a duration of at most ten years, a size that
//! fits, a positive count, each refused with its key named.

use std::time::Duration;

use super::ConfigError;

/// Seconds in a day.
const DAY_S: u64 = 24 * 3600;
pub(super) const SECOND: Duration = Duration::from_secs(1);
pub(super) const MILLISECOND: Duration = Duration::from_millis(1);
pub(super) const DAY: Duration = Duration::from_secs(DAY_S);

/// The longest any setting may make drydock wait or keep something: past it, a deadline on
/// the clock could overflow.
const LONGEST: Duration = Duration::from_secs(10 * 366 * DAY_S);

/// A setting of `value` `unit`s, from 1 to [`LONGEST`].
pub(super) fn duration(
    value: u64,
    unit: Duration,
    key: &'static str,
) -> Result<Duration, ConfigError> {
    duration_from_zero(positive(value, key)?, unit, key)
}

/// A setting of `value` `unit`s, from 0 to [`LONGEST`].
pub(super) fn duration_from_zero(
    value: u64,
    unit: Duration,
    key: &'static str,
) -> Result<Duration, ConfigError> {
    let most = LONGEST.as_millis() / unit.as_millis();
    u32::try_from(value)
        .ok()
        .and_then(|value| unit.checked_mul(value))
        .filter(|wanted| *wanted <= LONGEST)
        .ok_or_else(|| {
            ConfigError::Invalid(format!(
                "{key} is {value}: that is too large (at most {most}, ten years)"
            ))
        })
}

/// `value` counted in `unit`s (days, MiB) as the smaller unit (seconds, bytes); a value whose
/// count does not fit a u64 is refused rather than wrapped round to a small one.
pub(super) fn scaled(value: u64, unit: u64, key: &'static str) -> Result<u64, ConfigError> {
    value
        .checked_mul(unit)
        .ok_or_else(|| ConfigError::Invalid(format!("{key} is {value}: that is too large")))
}

pub(super) fn positive<T: PartialEq + Default>(
    value: T,
    key: &'static str,
) -> Result<T, ConfigError> {
    if value == T::default() {
        Err(ConfigError::Zero(key))
    } else {
        Ok(value)
    }
}
