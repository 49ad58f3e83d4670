//! When and how long to wait before calling a provider again.

use crate::Backoff;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use std::time::{Duration, SystemTime};

/// How a provider retries a call that failed with 408, 429, a 5xx status, a connection
/// failure or no response in time.
///
/// The wait before retry `n` (from 0) is the response's `Retry-After` (seconds, or an HTTP
/// date in any of the three formats RFC 9110 asks a recipient to accept; also
/// `retry-after-ms`) when present, else the policy's [`Backoff`]: `initial_backoff * 2^n`, at
/// most `max_backoff`, with [equal jitter](crate::Jitter::Equal) (a random wait between half
/// and all of it, so that clients that failed together do not retry together). When the
/// provider asks for a longer wait than `max_backoff`, the error is returned at once instead.
///
/// ```
/// use processors_providers::RetryPolicy;
/// use std::time::Duration;
/// let policy = RetryPolicy::default().max_retries(5);
/// assert_eq!(policy.max_retries, 5);
/// assert_eq!(policy.backoff().ceiling(0), Duration::from_millis(500));
/// assert_eq!(policy.backoff().ceiling(2), Duration::from_secs(2));
/// let wait = policy.backoff().delay(2);
/// assert!(wait >= Duration::from_secs(1) && wait <= Duration::from_secs(2));
/// assert_eq!(RetryPolicy::none().max_retries, 0);
/// ```
///
/// Made from [`RetryPolicy::default`] (or [`none`](RetryPolicy::none)) and its setters, so
/// that a setting added in a later release does not break the code that sets the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 2).
    pub max_retries: u32,
    /// The first wait without `Retry-After` before jitter (default 500 ms); it doubles each
    /// retry.
    pub initial_backoff: Duration,
    /// The longest wait (default 60 s).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Sets [`max_retries`](RetryPolicy::max_retries).
    #[must_use]
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets [`initial_backoff`](RetryPolicy::initial_backoff).
    #[must_use]
    pub fn initial_backoff(mut self, wait: Duration) -> Self {
        self.initial_backoff = wait;
        self
    }

    /// Sets [`max_backoff`](RetryPolicy::max_backoff).
    #[must_use]
    pub fn max_backoff(mut self, wait: Duration) -> Self {
        self.max_backoff = wait;
        self
    }

    /// No retries: every failure is returned at once.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The waits when the provider does not say: exponential from `initial_backoff` to
    /// `max_backoff`, with equal jitter.
    pub fn backoff(&self) -> Backoff {
        Backoff::exponential(self.initial_backoff, self.max_backoff)
    }
}

/// The wait a response asks for in `retry-after-ms` or `Retry-After`, if any.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(wait) = text("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
    {
        return Some(wait);
    }
    let value = text(RETRY_AFTER.as_str())?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Some(wait) = value
        .parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
    {
        return Some(wait);
    }
    // IMF-fixdate, RFC 850 and asctime, as RFC 9110 (section 5.6.7) asks a recipient to read.
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    /// RFC 9110 (section 5.6.7): a recipient reads all three formats of an HTTP date.
    #[test]
    fn retry_after_reads_the_three_http_date_formats() {
        let in_a_minute = SystemTime::now() + Duration::from_secs(60);
        let fixdate = httpdate::fmt_http_date(in_a_minute);
        // `Sun, 06 Nov 1994 08:49:37 GMT` as RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`)
        // and asctime (`Sun Nov  6 08:49:37 1994`).
        let mut words = fixdate.split([' ', ',']).filter(|w| !w.is_empty());
        let (weekday, day, month, year, time) = (
            words.next().unwrap(),
            words.next().unwrap(),
            words.next().unwrap(),
            words.next().unwrap(),
            words.next().unwrap(),
        );
        let long_weekday = match weekday {
            "Mon" => "Monday",
            "Tue" => "Tuesday",
            "Wed" => "Wednesday",
            "Thu" => "Thursday",
            "Fri" => "Friday",
            "Sat" => "Saturday",
            _ => "Sunday",
        };
        let rfc850 = format!("{long_weekday}, {day}-{month}-{} {time} GMT", &year[2..]);
        let day_number: u32 = day.parse().unwrap();
        let asctime = format!("{weekday} {month} {day_number:>2} {time} {year}");
        for date in [fixdate.clone(), rfc850, asctime] {
            let mut h = HeaderMap::new();
            h.insert(RETRY_AFTER, HeaderValue::from_str(&date).unwrap());
            let wait = retry_after(&h).unwrap_or_else(|| panic!("{date:?} not read"));
            assert!(
                wait > Duration::from_secs(50) && wait <= Duration::from_secs(60),
                "{date:?}: {wait:?}"
            );
        }
        let mut h = HeaderMap::new();
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sunday, 06-Nov-94 08:49:37 GMT"),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a past date: at once"
        );
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sun Nov  6 08:49:37 1994"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_past_dates() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn absurd_retry_after_values_are_ignored_not_a_panic() {
        let mut h = HeaderMap::new();
        h.insert("retry-after-ms", HeaderValue::from_static("1e300"));
        h.insert(RETRY_AFTER, HeaderValue::from_static("-5"));
        assert_eq!(retry_after(&h), None);
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sun, 06 Nov 99999999999 08:49:37 GMT"),
        );
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("1e300"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn the_policy_backs_off_exponentially_with_equal_jitter() {
        let p = RetryPolicy {
            max_retries: 40,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        assert_eq!(p.backoff().ceiling(0), Duration::from_millis(100));
        assert_eq!(p.backoff().ceiling(3), Duration::from_millis(800));
        assert_eq!(p.backoff().ceiling(39), Duration::from_secs(1));
        for _ in 0..50 {
            let wait = p.backoff().delay(3);
            assert!(wait >= Duration::from_millis(400) && wait <= Duration::from_millis(800));
        }
    }
}
