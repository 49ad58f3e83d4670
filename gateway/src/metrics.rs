//! The gateway's metrics, in Prometheus' text format at `GET /metrics`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// The upper bounds of the latency histograms' buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// A histogram of durations.
#[derive(Default)]
struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    /// The sum, in microseconds.
    sum_micros: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            if secs <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    fn render(&self, name: &str, help: &str, out: &mut String) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            let n = count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {n}");
        }
        let count = self.count.load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

/// Counters by label set.
#[derive(Default)]
struct Counter(Mutex<BTreeMap<String, u64>>);

impl Counter {
    fn add(&self, labels: String) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry(labels).or_default() += 1;
    }

    fn render(&self, name: &str, help: &str, out: &mut String) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (labels, n) in map.iter() {
            let _ = writeln!(out, "{name}{{{labels}}} {n}");
        }
    }
}

/// A label value, escaped as the text format asks.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// What the gateway counts.
#[derive(Default)]
pub(crate) struct Metrics {
    requests: Counter,
    tripwires: Counter,
    shadowed: Counter,
    upstream_errors: Counter,
    timeouts: Counter,
    open_streams: AtomicI64,
    first_byte: Histogram,
    duration: Histogram,
}

impl Metrics {
    /// A request answered with `status`.
    pub(crate) fn request(&self, protocol: &str, model: &str, status: u16) {
        self.requests.add(format!(
            "protocol=\"{protocol}\",model=\"{}\",status=\"{status}\"",
            label(model)
        ));
    }

    /// A processor's refusal.
    pub(crate) fn tripwire(&self, model: &str, processor: &str) {
        self.tripwires.add(format!(
            "model=\"{}\",processor=\"{}\"",
            label(model),
            label(processor)
        ));
    }

    /// A decision a processor in shadow recorded instead of applying.
    pub(crate) fn shadow(&self, model: &str, processor: &str, action: &str) {
        self.shadowed.add(format!(
            "model=\"{}\",processor=\"{}\",action=\"{}\"",
            label(model),
            label(processor),
            label(action)
        ));
    }

    /// A call's failure: an upstream's, or the gateway's own timeout (counted apart).
    pub(crate) fn failed(&self, model: &str, e: &processors_runtime::model::ApiError) {
        match crate::call::is_timeout(e) {
            true => self.timeouts.add(format!("model=\"{}\"", label(model))),
            false => self.upstream_error(model, e.status),
        }
    }

    /// An upstream's failure.
    fn upstream_error(&self, model: &str, status: Option<u16>) {
        let status = status.map_or_else(|| "none".to_owned(), |s| s.to_string());
        self.upstream_errors
            .add(format!("model=\"{}\",status=\"{status}\"", label(model)));
    }

    /// The time from a request's arrival to its answer's first byte.
    pub(crate) fn first_byte(&self, d: Duration) {
        self.first_byte.observe(d);
    }

    /// The time from a request's arrival to its answer's end.
    pub(crate) fn duration(&self, d: Duration) {
        self.duration.observe(d);
    }

    /// A stream opened (`+1`) or closed (`-1`).
    pub(crate) fn streams(&self, delta: i64) {
        self.open_streams.fetch_add(delta, Ordering::Relaxed);
    }

    /// The streams open now.
    pub(crate) fn open_streams(&self) -> i64 {
        self.open_streams.load(Ordering::Relaxed)
    }

    /// Everything, in Prometheus' text format.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.requests.render(
            "gateway_requests_total",
            "Requests answered, by protocol, model alias and HTTP status.",
            &mut out,
        );
        self.tripwires.render(
            "gateway_tripwires_total",
            "Answers a processor refused, by model alias and processor.",
            &mut out,
        );
        self.shadowed.render(
            "gateway_shadow_decisions_total",
            "Decisions of processors in shadow, recorded instead of applied, by model alias, processor and action (block, retry, change, fail).",
            &mut out,
        );
        self.upstream_errors.render(
            "gateway_upstream_errors_total",
            "Upstream failures, by model alias and upstream status.",
            &mut out,
        );
        self.timeouts.render(
            "gateway_timeouts_total",
            "Requests that ran out of the gateway's time limit, by model alias.",
            &mut out,
        );
        let _ = writeln!(
            out,
            "# HELP gateway_open_streams Answers being streamed now.\n# TYPE gateway_open_streams gauge\ngateway_open_streams {}",
            self.open_streams()
        );
        self.first_byte.render(
            "gateway_first_byte_seconds",
            "Time from a request's arrival to its answer's first byte.",
            &mut out,
        );
        self.duration.render(
            "gateway_request_duration_seconds",
            "Time from a request's arrival to its answer's end.",
            &mut out,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_format_counts_and_buckets() {
        let m = Metrics::default();
        m.request("openai", "a\"b", 200);
        m.request("openai", "a\"b", 200);
        m.first_byte(Duration::from_millis(3));
        let text = m.render();
        assert!(
            text.contains(
                "gateway_requests_total{protocol=\"openai\",model=\"a\\\"b\",status=\"200\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains("gateway_first_byte_seconds_bucket{le=\"0.0025\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("gateway_first_byte_seconds_bucket{le=\"0.005\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("gateway_first_byte_seconds_count 1"),
            "{text}"
        );
    }
}
