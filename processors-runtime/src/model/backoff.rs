//! [`Backoff`]: exponential waits with jitter, the one implementation that the providers'
//! retries (`RetryPolicy`) and the built-ins' `StreamErrorRetry` share.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

/// How much of a wait is left to chance, so that clients that failed together do not all
/// retry at the same moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Jitter {
    /// The wait as computed, every time.
    None,
    /// A random wait between half the computed wait and all of it (the default): spread out,
    /// yet never much shorter than asked.
    #[default]
    Equal,
    /// A random wait between zero and the computed wait: the widest spread.
    Full,
}

/// The wait before each retry: `initial` before the first, doubling each retry, at most `max`,
/// with [`Jitter`] applied.
///
/// ```
/// use processors_runtime::model::{Backoff, Jitter};
/// use std::time::Duration;
///
/// let backoff = Backoff::exponential(Duration::from_millis(100), Duration::from_millis(300))
///     .jitter(Jitter::None);
/// assert_eq!(backoff.delay(0), Duration::from_millis(100));
/// assert_eq!(backoff.delay(1), Duration::from_millis(200));
/// assert_eq!(backoff.delay(5), Duration::from_millis(300));
///
/// // With the default jitter, between half and all of the exponential wait.
/// let jittered = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(60));
/// let wait = jittered.delay(2);
/// assert!(wait >= Duration::from_secs(2) && wait <= Duration::from_secs(4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    jitter: Jitter,
}

impl Backoff {
    /// `initial` before the first retry, doubling each retry, at most `max`, with
    /// [`Jitter::Equal`]. A `max` below `initial` caps every wait at `max`.
    pub const fn exponential(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            jitter: Jitter::Equal,
        }
    }

    /// The same wait before every retry, without jitter.
    pub const fn fixed(wait: Duration) -> Backoff {
        Backoff {
            initial: wait,
            max: wait,
            jitter: Jitter::None,
        }
    }

    /// The same backoff with another [`Jitter`].
    #[must_use]
    pub const fn jitter(self, jitter: Jitter) -> Backoff {
        Backoff { jitter, ..self }
    }

    /// The first wait.
    pub const fn initial(&self) -> Duration {
        self.initial
    }

    /// The longest wait.
    pub const fn max(&self) -> Duration {
        self.max
    }

    /// Whether every wait is zero (a zero `initial` or `max`): retries come at once.
    pub fn is_zero(&self) -> bool {
        self.initial.is_zero() || self.max.is_zero()
    }

    /// The wait before retry `attempt` (from 0) before jitter: `initial * 2^attempt`, at most
    /// `max`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.initial
            .checked_mul(factor)
            .unwrap_or(self.max)
            .min(self.max)
    }

    /// The wait before retry `attempt` (from 0), jitter drawn at random.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.delay_with(attempt, random_unit())
    }

    /// The wait before retry `attempt` with the jitter's chance fixed: `unit` in `[0, 1]` (0
    /// the shortest wait the jitter allows, 1 the longest; values outside are clamped).
    ///
    /// ```
    /// use processors_runtime::model::{Backoff, Jitter};
    /// use std::time::Duration;
    /// let b = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(8));
    /// assert_eq!(b.delay_with(1, 0.0), Duration::from_secs(1));
    /// assert_eq!(b.delay_with(1, 1.0), Duration::from_secs(2));
    /// assert_eq!(b.jitter(Jitter::Full).delay_with(1, 0.0), Duration::ZERO);
    /// ```
    pub fn delay_with(&self, attempt: u32, unit: f64) -> Duration {
        let ceiling = self.ceiling(attempt);
        let unit = if unit.is_nan() {
            1.0
        } else {
            unit.clamp(0.0, 1.0)
        };
        match self.jitter {
            Jitter::None => ceiling,
            Jitter::Equal => ceiling / 2 + (ceiling - ceiling / 2).mul_f64(unit),
            Jitter::Full => ceiling.mul_f64(unit),
        }
    }
}

/// A random number in `[0, 1)`: the standard library's per-process random hash keys, fresh
/// for each call (each `RandomState::new` on a thread takes the next key).
fn random_unit() -> f64 {
    let bits = RandomState::new().hash_one(0u8);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_doubles_and_is_capped_without_overflow() {
        let b = Backoff::exponential(Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(b.ceiling(0), Duration::from_millis(100));
        assert_eq!(b.ceiling(3), Duration::from_millis(800));
        assert_eq!(b.ceiling(4), Duration::from_secs(1));
        assert_eq!(b.ceiling(u32::MAX), Duration::from_secs(1));
        let huge = Backoff::exponential(Duration::MAX, Duration::MAX);
        assert_eq!(huge.ceiling(40), Duration::MAX);
        assert_eq!(
            Backoff::fixed(Duration::from_secs(3)).delay(9),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn jitter_stays_within_its_range_and_varies() {
        let equal = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(60));
        let full = equal.jitter(Jitter::Full);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let e = equal.delay(3);
            assert!(
                e >= Duration::from_secs(4) && e <= Duration::from_secs(8),
                "{e:?}"
            );
            let f = full.delay(3);
            assert!(f <= Duration::from_secs(8), "{f:?}");
            seen.insert(e);
        }
        assert!(seen.len() > 100, "random waits, not one: {}", seen.len());
        assert_eq!(equal.delay_with(3, f64::NAN), Duration::from_secs(8));
        assert_eq!(equal.delay_with(3, -4.0), Duration::from_secs(4));
    }

    #[test]
    fn random_units_are_in_range() {
        for _ in 0..1000 {
            let u = random_unit();
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }
}
