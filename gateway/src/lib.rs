//! A guardrails gateway: an OpenAI- and Anthropic-compatible HTTP server that runs the
//! processors framework's pipelines around every model call, for clients in any language.
//!
//! - `POST /v1/chat/completions` (OpenAI's chat completions) and `POST /v1/messages`
//!   (Anthropic's messages), streamed or not, tools included, each answered through the
//!   model alias the request names;
//! - `GET /v1/models`: the aliases the caller's key may use;
//! - `GET /metrics` (Prometheus' text format) and `GET /healthz`.
//!
//! A [`Config`] (a TOML file) declares the upstreams (OpenAI-compatible servers, Anthropic,
//! or a scripted model offline), the model aliases clients name, the gateway keys (kept as
//! SHA-256 digests) and the policies: processor lists in the format of `processors-config`,
//! applied to an alias's calls and, outside them, to a key's. A processor's refusal before
//! the answer begins is an error in the client's protocol (400, code `content_filter`); one
//! during the stream ends it as the protocol allows (`finish_reason: "content_filter"`,
//! `stop_reason: "refusal"`). Upstream errors keep their status class, and the upstreams'
//! keys never leave the gateway.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use processors_gateway::{Config, Gateway, KeyHash};
//! let file = format!(r#"
//! [upstreams.offline]
//! protocol = "scripted"
//! turns = [["Write to ", "jane@example.com", "."]]
//!
//! [models.assistant]
//! upstream = "offline"
//! policy = "pii"
//!
//! [[keys]]
//! name = "web"
//! sha256 = "{}"
//!
//! [policies.pii]
//! output = [{{ processor = "regex-filter", presets = ["pii"] }}]
//! "#, KeyHash::of("pgw-web-key"));
//! let gateway = Gateway::new(&Config::from_str("gateway.toml", &file, None)?).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}/v1/chat/completions", listener.local_addr()?);
//! let server = tokio::spawn(gateway.serve(listener, std::future::pending()));
//! # let _ = url; server.abort();
//! // POST {url} with `Authorization: Bearer pgw-web-key` and
//! // {"model": "assistant", "messages": [{"role": "user", "content": "Who can help?"}]}
//! // answers "Write to [EMAIL]."
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod anthropic;
mod build;
mod call;
mod config;
mod keys;
mod metrics;
mod openai;
mod server;
mod traces;
mod wire;

pub use config::{
    Config, Cors, DEFAULT_CONFIG, Key, MemoryConfig, Protocol, Route, ScriptedTurn, StoreKind,
    Upstream,
};
pub use keys::{BadKeyHash, KeyHash, RandomError, development_key};
pub use server::Gateway;
