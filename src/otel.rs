//! OpenTelemetry export of a run's spans over OTLP/HTTP (cargo feature `otel`).
//!
//! The run's spans (`agent.run`, `agent.step`, `chat`, `processor`, `tool`) already carry the
//! GenAI semantic conventions' attribute names for model calls and token usage
//! (`gen_ai.request.model`, `gen_ai.usage.input_tokens`, …); this module sends them to an
//! OpenTelemetry collector.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use processors::otel::Otel;
//! let otel = Otel::http("http://localhost:4318/v1/traces", "support-desk")?;
//! tracing::subscriber::set_global_default(otel.subscriber())?;
//! // ... run agents ...
//! otel.shutdown()?; // sends what is still buffered
//! # Ok(())
//! # }
//! ```
//!
//! To keep a subscriber of your own, add [`Otel::layer`] to it instead.
//!
//! What leaves the process: spans and their attributes (ids, hooks, outcomes, durations,
//! models, token counts) and the per-step stream summaries (counts and times per processor).
//! The text of the conversation does not: the per-chunk events (target `processors::chunks`,
//! which carry each delta as it was before and after each processor, so before redaction)
//! are filtered out of the export, and with them the cost of measuring every chunk.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// The target of the per-chunk events: they carry the text, unredacted.
const CHUNK_TARGET: &str = "processors::chunks";

/// What setting up or flushing the export can fail with.
#[derive(Debug)]
pub struct OtelError(String);

impl std::fmt::Display for OtelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenTelemetry export: {}", self.0)
    }
}

impl std::error::Error for OtelError {}

/// An OTLP/HTTP export of spans, batched on a thread of its own.
#[derive(Debug, Clone)]
pub struct Otel {
    provider: SdkTracerProvider,
}

impl Otel {
    /// Exports to `endpoint` (a collector's traces URL, such as
    /// `http://localhost:4318/v1/traces`) as the service `service`.
    pub fn http(endpoint: &str, service: &str) -> Result<Self, OtelError> {
        // The exporter's HTTP client takes the process's default TLS crypto provider: ring,
        // unless the application installed one of its own before.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let exporter = SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .build()
            .map_err(|e| OtelError(e.to_string()))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name(service.to_owned())
                    .build(),
            )
            .build();
        Ok(Otel { provider })
    }

    /// The `tracing` layer that exports spans, to add to a subscriber of your own. It leaves
    /// out the per-chunk events (target `processors::chunks`), which carry the conversation's
    /// text before redaction.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("processors"))
            .with_filter(filter_fn(|meta| meta.target() != CHUNK_TARGET))
    }

    /// A subscriber that exports spans and does nothing else.
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + use<> {
        tracing_subscriber::registry().with(self.layer())
    }

    /// Sends the spans buffered so far.
    pub fn flush(&self) -> Result<(), OtelError> {
        self.provider
            .force_flush()
            .map_err(|e| OtelError(e.to_string()))
    }

    /// Sends what is buffered and stops exporting.
    pub fn shutdown(&self) -> Result<(), OtelError> {
        self.provider
            .shutdown()
            .map_err(|e| OtelError(e.to_string()))
    }
}
