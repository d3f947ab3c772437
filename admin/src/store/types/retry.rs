//! A job's retry backoff (`jobwheel_job_retry`, or the admin's `--retry-backoff*` flags): how
//! long a failed run waits before the fail monitor retries it, fixed or doubling per attempt up
//! to a ceiling, with optional jitter so that runs that failed together do not retry together.

use std::fmt;
use std::str::FromStr;

/// The longest wait a backoff may name: a day (a longer wait is a schedule, not a backoff).
pub const RETRY_BACKOFF_MAX_SECS: u32 = 86_400;

/// The ceiling of an exponential backoff that names none: an hour, or the base if longer.
pub const DEFAULT_CEILING_SECS: u32 = 3_600;

/// Which rule a backoff broke; callers name the field in their own words (form field or flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackoffError {
    /// The base wait is not 0 to [`RETRY_BACKOFF_MAX_SECS`].
    Base,
    /// The ceiling is not 0 to [`RETRY_BACKOFF_MAX_SECS`].
    Ceiling,
    /// An exponential backoff's ceiling is below its base.
    CeilingBelowBase,
    /// The jitter is not 0 to 100 (percent).
    Jitter,
}

/// How the wait grows from one retry to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackoffStrategy {
    /// The same wait before every retry.
    Fixed,
    /// The base wait before the first retry, doubled before each further one, up to the ceiling.
    Exponential,
}

impl BackoffStrategy {
    /// The stored and wire name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Fixed => "FIXED",
            Self::Exponential => "EXPONENTIAL",
        }
    }
}

impl fmt::Display for BackoffStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackoffStrategy {
    type Err = ();

    /// Case-insensitive; an unknown name (a newer admin's, in a shared database) is an error the
    /// caller decides on.
    fn from_str(s: &str) -> Result<Self, ()> {
        if s.eq_ignore_ascii_case("FIXED") {
            Ok(Self::Fixed)
        } else if s.eq_ignore_ascii_case("EXPONENTIAL") {
            Ok(Self::Exponential)
        } else {
            Err(())
        }
    }
}

/// A retry backoff. `base_secs = 0` retries at the fail monitor's next pass, as upstream does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBackoff {
    pub strategy: BackoffStrategy,
    /// The wait before the first retry, seconds.
    pub base_secs: u32,
    /// The longest wait, seconds (exponential; a fixed backoff stores its base here).
    pub max_secs: u32,
    /// Up to this percentage (0–100) of each wait is taken off at random.
    pub jitter_pct: u8,
}

impl RetryBackoff {
    /// No wait: upstream's behaviour.
    pub const NONE: Self = Self::fixed(0);

    /// The same `secs` before every retry, no jitter.
    pub const fn fixed(secs: u32) -> Self {
        Self { strategy: BackoffStrategy::Fixed, base_secs: secs, max_secs: secs, jitter_pct: 0 }
    }

    /// A backoff from what a user gave, checked in this order: base, ceiling, jitter. A fixed
    /// backoff keeps its base as its ceiling (any `max_secs` is ignored); an exponential one
    /// without `max_secs` gets [`DEFAULT_CEILING_SECS`] (or its base, if longer).
    pub fn checked(
        strategy: BackoffStrategy,
        base_secs: i64,
        max_secs: Option<i64>,
        jitter_pct: i64,
    ) -> Result<Self, BackoffError> {
        let secs = |value: i64, error| {
            u32::try_from(value).ok().filter(|s| *s <= RETRY_BACKOFF_MAX_SECS).ok_or(error)
        };
        let base_secs = secs(base_secs, BackoffError::Base)?;
        let max_secs = match (strategy, max_secs) {
            (BackoffStrategy::Fixed, _) => base_secs,
            (BackoffStrategy::Exponential, None) => DEFAULT_CEILING_SECS.max(base_secs),
            (BackoffStrategy::Exponential, Some(max)) => {
                let max = secs(max, BackoffError::Ceiling)?;
                if max < base_secs {
                    return Err(BackoffError::CeilingBelowBase);
                }
                max
            }
        };
        let jitter_pct = u8::try_from(jitter_pct).ok().filter(|p| *p <= 100).ok_or(BackoffError::Jitter)?;
        Ok(Self { strategy, base_secs, max_secs, jitter_pct })
    }

    /// The wait before retry number `attempt` (0 for the first retry of a job), milliseconds,
    /// without jitter: `base`, or `base × 2^attempt` capped at `max_secs` when exponential.
    pub fn ceiling_ms(&self, attempt: u32) -> i64 {
        let base = i64::from(self.base_secs) * 1000;
        match self.strategy {
            BackoffStrategy::Fixed => base,
            BackoffStrategy::Exponential => {
                let max = i64::from(self.max_secs.max(self.base_secs)) * 1000;
                // 2^attempt overflows i64 past 62; any shift that large is past the ceiling.
                base.checked_mul(1_i64.checked_shl(attempt.min(62)).unwrap_or(i64::MAX))
                    .map_or(max, |w| w.min(max))
            }
        }
    }

    /// The wait before retry number `attempt`, milliseconds, with jitter: `unit` in `[0, 1)`
    /// takes off up to `jitter_pct` % of [`ceiling_ms`](Self::ceiling_ms), so the result lies in
    /// `[ceiling × (1 − jitter), ceiling]` and never above the ceiling.
    pub fn wait_ms(&self, attempt: u32, unit: f64) -> i64 {
        let ceiling = self.ceiling_ms(attempt);
        let share = f64::from(self.jitter_pct.min(100)) / 100.0 * unit.clamp(0.0, 1.0);
        // Waits are at most a day in ms, far below 2^53: exact as f64, and the share of one
        // converts back without loss that matters.
        let off = (ceiling as f64 * share) as i64;
        ceiling - off.clamp(0, ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_up_to_the_ceiling() {
        let b = RetryBackoff {
            strategy: BackoffStrategy::Exponential,
            base_secs: 10,
            max_secs: 60,
            jitter_pct: 0,
        };
        let waits: Vec<i64> = (0..5).map(|n| b.ceiling_ms(n)).collect();
        assert_eq!(waits, [10_000, 20_000, 40_000, 60_000, 60_000]);
        assert_eq!(b.ceiling_ms(u32::MAX), 60_000, "no overflow");
        assert_eq!(RetryBackoff::fixed(7).ceiling_ms(9), 7_000);
    }

    #[test]
    fn jitter_stays_within_its_share_below_the_ceiling() {
        let b =
            RetryBackoff { strategy: BackoffStrategy::Fixed, base_secs: 100, max_secs: 100, jitter_pct: 20 };
        assert_eq!(b.wait_ms(0, 0.0), 100_000);
        assert_eq!(b.wait_ms(0, 0.5), 90_000);
        assert!(b.wait_ms(0, 0.999_999) > 80_000);
        assert_eq!(b.wait_ms(0, 7.0), 80_000, "out-of-range draws are clamped");
    }
}
