//! The gateway's file: where it listens, its limits, its upstreams, the model aliases clients
//! name, the gateway keys and the policies (processor lists, read by `processors-config`).

use crate::keys::KeyHash;
use processors_config::{Diagnostic, LoadError, Loader};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The configuration the gateway runs when started without `--config`: a scripted model
/// answering offline under the alias `scripted`, with a policy that redacts e-mail addresses
/// and blocks secrets in prompts.
pub const DEFAULT_CONFIG: &str = include_str!("../default.toml");

/// A gateway's configuration, as read from its file.
///
/// ```
/// use processors_gateway::Config;
/// let config = Config::from_str("gateway.toml", processors_gateway::DEFAULT_CONFIG, None).unwrap();
/// assert!(config.models.contains_key("scripted"));
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// Where to listen, `127.0.0.1:8787` unless set (`--listen` overrides it).
    #[serde(default)]
    pub listen: Option<String>,
    /// The largest request body accepted, in bytes (1 MiB); a larger one is answered 413.
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    /// The longest a request may take, its stream included, in milliseconds (10 minutes).
    #[serde(default = "default_timeout")]
    pub request_timeout_ms: u64,
    /// How long open streams may go on after a shutdown was asked for, in milliseconds (10
    /// seconds); then they are cut.
    #[serde(default = "default_grace")]
    pub shutdown_grace_ms: u64,
    /// How many traces of requests that asked for one (`x-processors-trace: 1`) are kept
    /// for `GET /v1/traces/{id}` (64; 0 records none).
    #[serde(default = "default_traces")]
    pub traces: usize,
    /// The most spans and events one trace keeps (10,000); past them it counts what it did
    /// not keep, so a long answer recorded costs bounded memory.
    #[serde(default = "default_trace_entries")]
    pub trace_entries: usize,
    /// Cross-origin requests from browsers: refused unless origins are listed.
    #[serde(default)]
    pub cors: Option<Cors>,
    /// The upstreams, by name.
    #[serde(default)]
    pub upstreams: BTreeMap<String, Spanned<Upstream>>,
    /// The models clients name, by alias.
    #[serde(default)]
    pub models: BTreeMap<String, Spanned<Route>>,
    /// The gateway keys.
    #[serde(default)]
    pub keys: Vec<Spanned<Key>>,
    /// Conversations kept by thread (a request's `x-thread-id` header), each owned by the
    /// tenant of the key that started it; none when absent.
    #[serde(default)]
    pub memory: Option<Spanned<MemoryConfig>>,
    /// The policies, by name: each a table of `input`, `output` and `error` lists, read by
    /// [`Config::policy`].
    #[serde(default)]
    pub policies: BTreeMap<String, toml::Table>,
    /// The file's text, for the policies' errors.
    #[serde(skip)]
    source: Source,
}

#[derive(Debug, Clone, Default)]
struct Source {
    file: String,
    text: String,
    base: Option<PathBuf>,
}

/// Cross-origin access.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Cors {
    /// The origins allowed, like `https://app.example.com`.
    pub origins: Vec<String>,
}

/// Where conversations are kept.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct MemoryConfig {
    /// `in-memory` (this process only), `sqlite` (a file: `path`) or `postgres` (shared by
    /// processes: `url_env`; feature `postgres`).
    pub store: StoreKind,
    /// The SQLite file, relative to the config file's directory.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// The environment variable holding the PostgreSQL URL.
    #[serde(default)]
    pub url_env: Option<String>,
    /// The PostgreSQL schema (`processors` by default).
    #[serde(default)]
    pub schema: Option<String>,
    /// How many of a thread's last messages a call is given (40).
    #[serde(default)]
    pub last_messages: Option<usize>,
}

/// A memory store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum StoreKind {
    /// In this process.
    InMemory,
    /// An SQLite file.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// How an upstream is reached.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Upstream {
    /// `openai` (chat completions: OpenAI, vLLM, Ollama, …), `anthropic` (messages) or
    /// `scripted` (answers from `turns`, offline).
    pub protocol: Protocol,
    /// Its base URL; the protocol's public one when absent.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding its API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// How many times a failed call is tried again by the provider client (2); 0 passes the
    /// upstream's 429 and 5xx to the client at once.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// The answers of a scripted upstream, each a text or the deltas it streams.
    #[serde(default)]
    pub turns: Vec<ScriptedTurn>,
}

/// The protocol an upstream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Protocol {
    /// OpenAI's chat completions.
    Openai,
    /// Anthropic's messages.
    Anthropic,
    /// A scripted model, offline.
    Scripted,
}

/// One answer of a scripted upstream.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ScriptedTurn {
    /// The whole answer in one delta.
    Text(String),
    /// The answer's deltas.
    Deltas(Vec<String>),
}

/// A model alias clients name in `model`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Route {
    /// The upstream that answers.
    pub upstream: Spanned<String>,
    /// The upstream's id of the model; the alias when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// The policy applied to its calls (inside the policy of the caller's key).
    #[serde(default)]
    pub policy: Option<Spanned<String>>,
}

/// A gateway key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Key {
    /// Its name, in logs and metrics.
    pub name: String,
    /// The SHA-256 of the key, in hex (`processors-gateway hash-key KEY` prints it).
    pub sha256: KeyHash,
    /// The tenant its calls belong to (the memory's resource id); the name when absent.
    #[serde(default)]
    pub tenant: Option<String>,
    /// The policy applied to its calls, outside the model's own.
    #[serde(default)]
    pub policy: Option<Spanned<String>>,
    /// The aliases it may call; all when absent.
    #[serde(default)]
    pub models: Option<Vec<Spanned<String>>>,
    /// How many of its requests may run at once; more are answered 429.
    #[serde(default)]
    pub max_concurrent: Option<usize>,
}

fn default_max_body() -> usize {
    1 << 20
}

fn default_timeout() -> u64 {
    600_000
}

fn default_traces() -> usize {
    64
}

fn default_trace_entries() -> usize {
    10_000
}

fn default_grace() -> u64 {
    10_000
}

impl Config {
    /// The configuration of the file at `path`.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Config, LoadError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::from_str(&path.display().to_string(), &text, path.parent())
    }

    /// The configuration of `text`, named `file` in errors; relative paths in its policies
    /// are relative to `base`.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(file: &str, text: &str, base: Option<&Path>) -> Result<Config, LoadError> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |span| position(text, span.start));
            LoadError::Invalid(vec![Diagnostic {
                file: file.to_owned(),
                line,
                column,
                message: e.message().to_owned(),
            }])
        })?;
        config.source = Source {
            file: file.to_owned(),
            text: text.to_owned(),
            base: base.map(Path::to_owned),
        };
        Ok(config)
    }

    /// The lists of the policy `name`, built by `loader`.
    pub fn policy(
        &self,
        loader: &Loader,
        name: &str,
    ) -> Result<processors_config::Lists, LoadError> {
        loader.lists_in(
            &self.source.file,
            &self.source.text,
            &["policies", name],
            self.source.base.as_deref(),
        )
    }

    /// The directory relative paths are relative to.
    pub(crate) fn base(&self) -> Option<&Path> {
        self.source.base.as_deref()
    }

    /// The file's name, as given.
    pub fn file(&self) -> &str {
        &self.source.file
    }

    /// A mistake at `span` of the file.
    pub(crate) fn at(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> Diagnostic {
        let (line, column) = position(&self.source.text, span.start);
        Diagnostic {
            file: self.source.file.clone(),
            line,
            column,
            message: message.into(),
        }
    }
}

/// The line and column (from 1, in characters) of byte `at` of `text`.
pub(crate) fn position(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
