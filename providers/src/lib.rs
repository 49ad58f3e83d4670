//! HTTP model providers of the processors framework.
//!
//! Two protocols cover the common servers:
//!
//! - [`OpenAiCompatible`]: chat completions with server-sent events, as served by OpenAI,
//!   Ollama, vLLM, llama.cpp's server and LM Studio (pick one with the base URL);
//! - [`Anthropic`]: the messages API with server-sent events.
//!
//! Both implement [`LanguageModel`](processors_runtime::model::LanguageModel): they turn the
//! agent's request (messages, tools, tool choice, settings, `provider_options` merged into the
//! body) into the provider's JSON, and its event stream into text, reasoning and tool-call
//! chunks ending with one `finish` (a server that ignores `stream: true` and sends the whole
//! answer as JSON gives the same chunks). [`resolve`] builds one from an id such as
//! `"openai/gpt-4o-mini"` and the environment.
//!
//! Failures come back as [`ApiError`](processors_runtime::model::ApiError)s that say what
//! happened: a 4xx (other than 408 and 429) is returned at once and not retried, so the
//! agent's `process_api_error` processors can fix the request; 408, 429, 5xx and connection
//! failures are retried with exponential backoff and jitter ([`Backoff`]), honouring
//! `Retry-After`, as the [`RetryPolicy`] allows (`Retry-After` in seconds or as an HTTP date
//! in any of its three formats). [`Timeouts`] bound
//! the connection, the wait for the response headers, every silence of the stream and the
//! whole call, so a call never hangs, not even on a server that sends a byte at a time;
//! dropping the stream closes the connection. A line, an event or a whole JSON answer holds at
//! most 8 MiB, so memory stays bounded whatever the server sends. Calls run on the Tokio
//! runtime (as `#[tokio::main]` sets up).
//!
//! The API key goes only to the base URL: redirects are not followed (a 3xx is an error naming
//! its `Location`). It never shows: `Debug` prints `<redacted>` for it and for credential
//! headers, and an error that quotes it (a server echoing the request's headers) has it
//! replaced by `<redacted>`. The provider crate's README lists every rule.
//!
//! ```no_run
//! use processors_runtime::prelude::*;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Reads OPENAI_API_KEY (and OPENAI_BASE_URL, if set).
//! let model = processors_providers::resolve("openai/gpt-4o-mini")?;
//! let agent = Agent::builder()
//!     .instructions("You are terse.")
//!     .shared_model(model)
//!     .build()?;
//! let result = agent.generate("Say hello.").await?;
//! println!("{}", result.text);
//!
//! // Or explicitly, here a local Ollama server:
//! let local = processors_providers::OpenAiCompatible::builder("llama3.2")
//!     .base_url("http://localhost:11434/v1")
//!     .provider_name("ollama")
//!     .idle_timeout(std::time::Duration::from_secs(30))
//!     .build()?;
//! # let _ = local;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod __fuzz;
pub mod anthropic;
pub mod embeddings;
mod error;
mod json;
pub mod openai;
mod parts;
mod resolve;
mod retry;
pub mod sse;
mod transport;

pub use anthropic::{Anthropic, AnthropicBuilder};
pub use embeddings::{OpenAiEmbeddings, OpenAiEmbeddingsBuilder};
pub use openai::{OpenAiCompatible, OpenAiCompatibleBuilder};
pub use resolve::{KNOWN_PROVIDERS, KnownProvider, resolve, resolve_with_env};
pub use retry::RetryPolicy;
pub use transport::{ConfigError, Timeouts};

/// The waits between retries, shared with the built-ins' `StreamErrorRetry`.
pub use processors_runtime::model::{Backoff, Jitter};
