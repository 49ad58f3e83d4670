//! When and how long to wait before calling a provider again.

use reqwest::header::{HeaderMap, RETRY_AFTER};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How a provider retries a call that failed with 408, 429, a 5xx status, a connection
/// failure or no response in time.
///
/// The wait before retry `n` (from 0) is the response's `Retry-After` (seconds or an HTTP
/// date; also `retry-after-ms`) when present, else `initial_backoff * 2^n`, at most
/// `max_backoff`. When the provider asks for a longer wait than `max_backoff`, the error is
/// returned at once instead.
///
/// ```
/// use processors_providers::RetryPolicy;
/// use std::time::Duration;
/// let policy = RetryPolicy { max_retries: 5, ..RetryPolicy::default() };
/// assert_eq!(policy.backoff(0), Duration::from_millis(500));
/// assert_eq!(policy.backoff(2), Duration::from_secs(2));
/// assert_eq!(RetryPolicy::none().max_retries, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 2).
    pub max_retries: u32,
    /// The first wait without `Retry-After` (default 500 ms); it doubles each retry.
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
    /// No retries: every failure is returned at once.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry `attempt` (from 0) when the provider did not say.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.initial_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
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
    let at = parse_http_date(value)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the Unix epoch of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the
/// form HTTP requires senders to use.
pub(crate) fn parse_http_date(text: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    let _weekday = words.next()?;
    let day: u64 = words.next()?.parse().ok()?;
    let month = match words.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = words.next()?.parse().ok()?;
    let mut clock = words.next()?.split(':').map(|n| n.parse::<u64>().ok());
    let (h, m, s) = (clock.next()??, clock.next()??, clock.next()??);
    let valid = (1..=31).contains(&day) && (1970..=9999).contains(&year);
    if words.next()? != "GMT" || !valid || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day as i64);
    u64::try_from(days)
        .ok()
        .map(|d| d * 86_400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn http_dates_parse_to_unix_seconds() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(1_835_438_400)
        );
        assert_eq!(parse_http_date("yesterday"), None);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49 GMT"), None);
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
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy {
            max_retries: 40,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        assert_eq!(p.backoff(0), Duration::from_millis(100));
        assert_eq!(p.backoff(3), Duration::from_millis(800));
        assert_eq!(p.backoff(4), Duration::from_secs(1));
        assert_eq!(p.backoff(39), Duration::from_secs(1));
    }
}
