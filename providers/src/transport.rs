//! The HTTP side shared by the providers: the client, timeouts, retries, and the driver that
//! turns a response body into a [`ModelStream`] through the [SSE parser](crate::sse).
//!
//! A server that ignores `stream: true` and answers with one JSON document is understood too:
//! the decoder turns the whole answer into the events that would have streamed it.

use crate::error;
use crate::retry::{self, RetryPolicy};
use crate::sse::{DEFAULT_MAX_EVENT_BYTES, SseEvent, SseParser};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use processors_runtime::chunk::ChunkKind;
use processors_runtime::model::{ApiError, ModelStream};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a provider waits at each stage of a call.
///
/// `idle` starts again with every piece of the body, so a server that trickles a byte at a
/// time never trips it; `total` bounds the whole call whatever the server does.
///
/// ```
/// use processors_providers::Timeouts;
/// use std::time::Duration;
/// let t = Timeouts::default().idle(Duration::from_secs(30));
/// assert_eq!(t.idle, Duration::from_secs(30));
/// assert_eq!(t.connect, Duration::from_secs(10));
/// assert_eq!(t.total, Duration::from_secs(600));
/// ```
///
/// Made from [`Timeouts::default`] and its setters, so that a limit added in a later release
/// does not break the code that sets the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// To open the TCP (and TLS) connection (default 10 s).
    pub connect: Duration,
    /// From sending the request to the response's headers (default 120 s).
    pub first_byte: Duration,
    /// Between two pieces of the response body (default 120 s); the stream then fails with
    /// a retryable "no data for …" error.
    pub idle: Duration,
    /// The whole call, from the first request to the end of the answer, retries and their
    /// waits included (default 10 min, as OpenAI's and Anthropic's own SDKs allow a request);
    /// the call then fails with a retryable "the call took longer than …" error.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(120),
            total: Duration::from_secs(600),
        }
    }
}

impl Timeouts {
    /// Sets [`connect`](Timeouts::connect).
    #[must_use]
    pub fn connect(mut self, limit: Duration) -> Self {
        self.connect = limit;
        self
    }

    /// Sets [`first_byte`](Timeouts::first_byte).
    #[must_use]
    pub fn first_byte(mut self, limit: Duration) -> Self {
        self.first_byte = limit;
        self
    }

    /// Sets [`idle`](Timeouts::idle).
    #[must_use]
    pub fn idle(mut self, limit: Duration) -> Self {
        self.idle = limit;
        self
    }

    /// Sets [`total`](Timeouts::total).
    #[must_use]
    pub fn total(mut self, limit: Duration) -> Self {
        self.total = limit;
        self
    }
}

/// An API key or another credential: kept, sent, never shown (`Debug` prints `<redacted>`).
#[derive(Clone)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(value: String) -> Self {
        Secret(value)
    }

    /// The value, to send.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

/// What takes the place of a credential in messages and kept bodies.
pub(crate) const REDACTED: &str = "<redacted>";

/// Whether a header carries a credential, by its name: `Authorization`, `x-api-key`,
/// Azure's `api-key`, cookies, and any name that says auth, key, token, secret or password.
pub(crate) fn is_sensitive(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "password", "cookie"]
        .iter()
        .any(|word| name.contains(word))
}

/// Settings every HTTP provider has; its builder fills them in.
#[derive(Clone)]
pub(crate) struct HttpConfig {
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let value = if is_sensitive(name) { REDACTED } else { value };
                (name.as_str(), value)
            })
            .collect();
        f.debug_struct("HttpConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .field("headers", &headers)
            .finish()
    }
}

impl HttpConfig {
    pub(crate) fn new(base_url: &str) -> Self {
        HttpConfig {
            base_url: base_url.to_owned(),
            api_key: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            headers: Vec::new(),
        }
    }

    /// `base_url` joined with `path`, with exactly one slash between them.
    pub(crate) fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }
}

/// The setters every provider builder shares.
macro_rules! http_builder_methods {
    () => {
        /// The API's base URL.
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.http.base_url = url.into();
            self
        }

        /// The API key. It is sent only to the base URL (redirects are not followed) and
        /// never shown: `Debug` prints `<redacted>`, and an error whose text quotes it has it
        /// replaced by `<redacted>`.
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.http.api_key = Some($crate::transport::Secret::new(key.into()));
            self
        }

        /// All timeouts at once.
        pub fn timeouts(mut self, timeouts: $crate::Timeouts) -> Self {
            self.http.timeouts = timeouts;
            self
        }

        /// How long opening a connection may take.
        pub fn connect_timeout(mut self, d: std::time::Duration) -> Self {
            self.http.timeouts.connect = d;
            self
        }

        /// How long to wait for the response's headers.
        pub fn first_byte_timeout(mut self, d: std::time::Duration) -> Self {
            self.http.timeouts.first_byte = d;
            self
        }

        /// How long the response body may stay silent.
        pub fn idle_timeout(mut self, d: std::time::Duration) -> Self {
            self.http.timeouts.idle = d;
            self
        }

        /// How long the whole call may take, retries included (default 10 min).
        pub fn total_timeout(mut self, d: std::time::Duration) -> Self {
            self.http.timeouts.total = d;
            self
        }

        /// The retry policy.
        pub fn retry(mut self, policy: $crate::RetryPolicy) -> Self {
            self.http.retry = policy;
            self
        }

        /// How many times a retryable failure is retried (default 2).
        pub fn max_retries(mut self, n: u32) -> Self {
            self.http.retry.max_retries = n;
            self
        }

        /// An extra header sent with every request. A header whose name says auth, key,
        /// token, secret, password or cookie is treated as the API key is: never shown.
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.http.headers.push((name.into(), value.into()));
            self
        }
    };
}
pub(crate) use http_builder_methods;

/// Why a provider could not be built or resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The provider needs an API key and none was given.
    #[error(
        "no API key for the `{provider}` provider: set the {env_var} environment variable or pass `.api_key(...)` to the builder"
    )]
    MissingApiKey {
        /// The provider.
        provider: String,
        /// The variable it is read from.
        env_var: String,
    },
    /// The model id is not `provider/model`.
    #[error("invalid model id `{0}`: expected `provider/model`, such as `openai/gpt-4o-mini`")]
    InvalidModelId(String),
    /// The provider part of the model id is not known.
    #[error("unknown provider `{provider}` in `{id}`; known providers: {known}")]
    UnknownProvider {
        /// The provider asked for.
        provider: String,
        /// The whole model id.
        id: String,
        /// The known providers, comma separated.
        known: String,
    },
    /// A header name or value, or the API key, cannot be sent in HTTP.
    #[error("invalid header `{0}`: header names and values must be visible ASCII")]
    InvalidHeader(String),
    /// The HTTP client could not be created.
    #[error("could not create the HTTP client: {0}")]
    Client(String),
}

/// One protocol's reading of the event stream.
pub(crate) trait Decoder: Send + 'static {
    /// The protocol's whole answer, as messages name it ("a chat completion").
    const ANSWER: &'static str;

    /// Handles one event, pushing the chunks it yields; `Ok(true)` when the provider
    /// finished (the driver then stops reading).
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<ChunkKind>) -> Result<bool, ApiError>;

    /// The data of the events that would have streamed `answer`, a whole answer the provider
    /// sent as one JSON document, ending with the provider's end of stream; `None` when
    /// `answer` is not one.
    fn answer_events(answer: &Value) -> Option<Vec<String>>;
}

/// The largest whole JSON answer read: as much as one event of a stream may hold.
const MAX_ANSWER_BYTES: usize = DEFAULT_MAX_EVENT_BYTES;

/// What a success response holds.
enum Answer {
    /// An event stream, not read yet.
    Events(Body),
    /// A whole answer sent as one JSON document, as the data of the events that stream it.
    Whole(Vec<String>),
}

/// An HTTP client with its timeouts, retry policy and fixed headers.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    headers: HeaderMap,
    timeouts: Timeouts,
    retry: RetryPolicy,
    secrets: Secrets,
}

/// The credentials a transport sends, to take out of the errors that quote them (a server
/// that echoes the request's headers in its error body).
#[derive(Clone, Default)]
struct Secrets(Arc<[Secret]>);

/// The shortest value scrubbed out of errors. A shorter one is no secret worth the name (real
/// keys and tokens are dozens of characters), and replacing it everywhere would take it out of
/// ordinary words: a one-letter "key" would turn "chunk" into "chun<redacted>".
pub(crate) const MIN_SECRET_LEN: usize = 8;

impl Secrets {
    /// The API key, and the values of the sensitive headers with and without their scheme
    /// (`Bearer …`); longest first, so a value is replaced whole before a part of it.
    fn of<'a>(
        api_key: Option<&Secret>,
        headers: impl Iterator<Item = &'a (String, String)>,
    ) -> Self {
        let mut values: Vec<&str> = api_key.map(Secret::expose).into_iter().collect();
        for (_, value) in headers.filter(|(name, _)| is_sensitive(name)) {
            values.push(value);
            values.extend(value.split_once(' ').map(|(_, token)| token.trim()));
        }
        values.retain(|v| v.len() >= MIN_SECRET_LEN);
        values.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        values.dedup();
        Secrets(
            values
                .into_iter()
                .map(|v| Secret::new(v.to_owned()))
                .collect(),
        )
    }

    /// `error` with every credential in its message and body replaced by `<redacted>`.
    fn scrub(&self, mut error: ApiError) -> ApiError {
        for secret in self.0.iter().map(Secret::expose) {
            if error.message.contains(secret) {
                error.message = error.message.replace(secret, REDACTED);
            }
            if let Some(body) = error.body.as_mut().filter(|b| b.contains(secret)) {
                *body = body.replace(secret, REDACTED);
            }
        }
        error
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} redacted", self.0.len())
    }
}

/// The time limits of one call: each piece of the answer within the idle timeout, the whole
/// call within the total one.
#[derive(Debug, Clone, Copy)]
struct Clock {
    idle: Duration,
    total: Duration,
    deadline: Instant,
}

impl Clock {
    fn start(timeouts: &Timeouts) -> Self {
        let now = Instant::now();
        // A total too large to add is no limit: a century stands for it.
        let deadline = now
            .checked_add(timeouts.total)
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
        Clock {
            idle: timeouts.idle,
            total: timeouts.total,
            deadline,
        }
    }

    /// What is left of the call.
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// `work`, or the error of the limit it runs into first: `limit` (whose error `late`
    /// gives), or the end of the call.
    async fn within<T>(
        &self,
        limit: Duration,
        late: impl FnOnce() -> ApiError,
        work: impl Future<Output = T>,
    ) -> Result<T, ApiError> {
        let left = self.left();
        match tokio::time::timeout(limit.min(left), work).await {
            Ok(done) => Ok(done),
            Err(_) if left <= limit => Err(error::total_timeout(self.total)),
            Err(_) => Err(late()),
        }
    }

    /// The next piece of `body`; fails when it takes longer than the idle timeout or than
    /// what is left of the call, or when the connection fails.
    async fn next_piece(&self, body: &mut Body) -> Result<Option<Bytes>, ApiError> {
        let idle = self.idle;
        match self
            .within(idle, || error::idle_timeout(idle), body.next())
            .await?
        {
            Some(Ok(piece)) => Ok(Some(piece)),
            Some(Err(e)) => Err(error::mid_stream(&e)),
            None => Ok(None),
        }
    }
}

impl Transport {
    /// A client for `config`, sending `headers` (such as the authentication) on every call.
    pub(crate) fn new(
        config: &HttpConfig,
        headers: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let headers: Vec<(String, String)> = headers
            .into_iter()
            .chain(config.headers.iter().cloned())
            .collect();
        let mut map = HeaderMap::new();
        for (name, value) in &headers {
            let bad = || ConfigError::InvalidHeader(name.clone());
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let mut value = HeaderValue::from_str(value).map_err(|_| bad())?;
            value.set_sensitive(is_sensitive(name));
            map.insert(header, value);
        }
        // reqwest takes the process's default TLS crypto provider: ring, unless the
        // application installed one of its own before (then that one is kept).
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        // Redirects are not followed: the key would go to wherever the server points,
        // another host included (reqwest keeps `x-api-key` across hosts). A redirect is an
        // error that names its target.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.timeouts.connect)
            .user_agent(concat!("processors-providers/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        Ok(Transport {
            client,
            headers: map,
            timeouts: config.timeouts,
            retry: config.retry,
            secrets: Secrets::of(config.api_key.as_ref(), headers.iter()),
        })
    }

    /// Posts `body` to `url` and streams the answer's events through `decoder`; a whole JSON
    /// answer gives the chunks its stream would have given.
    ///
    /// Retryable failures (408, 429, 5xx, connection failures, no headers in time, an error
    /// object with a success status that says so) are retried per the policy; other statuses
    /// come back at once as non-retryable errors. Every error, the stream's too, has the
    /// credentials it quotes redacted.
    pub(crate) async fn stream<D: Decoder>(
        &self,
        url: &str,
        body: &Value,
        decoder: D,
    ) -> Result<ModelStream, ApiError> {
        let body = encode(body)?;
        let clock = Clock::start(&self.timeouts);
        let answer = self
            .retrying(url, clock, || self.attempt::<D>(url, body.clone(), clock))
            .await?;
        Ok(match answer {
            Answer::Events(body) => drive(body, decoder, clock, self.secrets.clone()),
            Answer::Whole(events) => replay(decoder, events),
        })
    }

    /// Posts `body` to `url` and reads the JSON answer whole (at most 8 MiB), with the same
    /// retries, timeouts and error classification as [`stream`](Self::stream).
    pub(crate) async fn json(&self, url: &str, body: &Value) -> Result<Value, ApiError> {
        let body = encode(body)?;
        let clock = Clock::start(&self.timeouts);
        self.retrying(url, clock, || self.attempt_json(url, body.clone(), clock))
            .await
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retry policy or the call's
    /// total timeout says stop.
    async fn retrying<T, F>(
        &self,
        url: &str,
        clock: Clock,
        mut attempt: impl FnMut() -> F,
    ) -> Result<T, ApiError>
    where
        F: Future<Output = Result<T, (ApiError, Option<Duration>)>>,
    {
        let mut tried = 0u32;
        loop {
            let (error, asked) = match attempt().await {
                Ok(answer) => return Ok(answer),
                Err((error, asked)) => (self.secrets.scrub(error), asked),
            };
            // The wait the provider asked for goes with the error to whoever calls next.
            let error = match asked {
                Some(wait) => error.with_retry_after(wait),
                None => error,
            };
            if !error.retryable || tried >= self.retry.max_retries {
                return Err(error);
            }
            let wait = asked.unwrap_or_else(|| self.retry.backoff().delay(tried));
            let refused = if wait > self.retry.max_backoff {
                Some(format!(
                    "the provider asked to retry after {}, longer than the retry policy allows",
                    error::seconds(wait)
                ))
            } else if wait >= clock.left() {
                Some(format!(
                    "not retried: the call's total timeout of {} ends before the retry",
                    error::seconds(clock.total)
                ))
            } else {
                None
            };
            if let Some(refused) = refused {
                let mut error = error;
                error.message.push_str(&format!(" ({refused})"));
                return Err(error);
            }
            tried += 1;
            tracing::debug!(
                url,
                attempt = tried,
                wait_ms = wait.as_millis() as u64,
                error = %error,
                "retrying the provider call"
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// Sends one request: the response, or the error with the wait the provider asked for.
    async fn send(
        &self,
        url: &str,
        body: Bytes,
        accept: &'static str,
        clock: Clock,
    ) -> Result<reqwest::Response, (ApiError, Option<Duration>)> {
        let request = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body)
            .send();
        let first_byte = self.timeouts.first_byte;
        let no_answer = || {
            let message = format!(
                "no response from {url} within {}",
                error::seconds(first_byte)
            );
            ApiError::other(message, true)
        };
        let response = match clock.within(first_byte, no_answer, request).await {
            Err(e) => return Err((e, None)),
            Ok(Err(e)) => return Err((error::from_transport(&e, url), None)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status.is_redirection() {
            let location = response
                .headers()
                .get(LOCATION)
                .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
            return Err((
                error::redirect(status.as_u16(), url, location.as_deref()),
                None,
            ));
        }
        let asked = retry::retry_after(response.headers());
        let content_type = content_type(&response);
        let text = read_limited(response, clock).await;
        Err((
            error::from_response(status.as_u16(), content_type.as_deref(), &text),
            asked,
        ))
    }

    /// One request whose answer is a JSON document.
    async fn attempt_json(
        &self,
        url: &str,
        body: Bytes,
        clock: Clock,
    ) -> Result<Value, (ApiError, Option<Duration>)> {
        let response = self.send(url, body, "application/json", clock).await?;
        let asked = retry::retry_after(response.headers());
        let framed = framed(&response);
        let mut stream: Body = response.bytes_stream().boxed();
        let mut bytes = Vec::new();
        let whole = fill(&mut stream, &mut bytes, MAX_ANSWER_BYTES, clock, |_| false)
            .await
            .map_err(|e| (e, asked))?;
        if !whole {
            return Err((too_large(&bytes), None));
        }
        let text = String::from_utf8_lossy(&bytes);
        let value = parse_answer(&text, framed).map_err(|e| (e, None))?;
        if error::is_error_object(&value) {
            return Err((error::in_answer(&value, &text), asked));
        }
        Ok(value)
    }

    /// One request: what a success response holds, or the error with the wait the provider
    /// asked for.
    async fn attempt<D: Decoder>(
        &self,
        url: &str,
        body: Bytes,
        clock: Clock,
    ) -> Result<Answer, (ApiError, Option<Duration>)> {
        let response = self.send(url, body, "text/event-stream", clock).await?;
        let asked = retry::retry_after(response.headers());
        let content_type = content_type(&response);
        accept::<D>(response, content_type.as_deref(), clock)
            .await
            .map_err(|e| (e, asked))
    }
}

/// Tells an event stream from a whole JSON answer by the content type, or, without one,
/// by the first byte that is not whitespace (a JSON answer starts with `{`, an event stream
/// never does), and reads a JSON answer whole.
async fn accept<D: Decoder>(
    response: reqwest::Response,
    content_type: Option<&str>,
    clock: Clock,
) -> Result<Answer, ApiError> {
    let framed = framed(&response);
    let mut body: Body = response.bytes_stream().boxed();
    let mut head = Vec::new();
    let json = match content_type {
        Some(c) => c.contains("json"),
        None => {
            let started = |b: &[u8]| b.iter().any(|c| !c.is_ascii_whitespace());
            fill(&mut body, &mut head, MAX_ANSWER_BYTES, clock, started).await?;
            head.trim_ascii_start().starts_with(b"{")
        }
    };
    if !json {
        if !head.is_empty() {
            let head = futures::stream::once(async { Ok(Bytes::from(head)) });
            body = head.chain(body).boxed();
        }
        return Ok(Answer::Events(body));
    }
    if !fill(&mut body, &mut head, MAX_ANSWER_BYTES, clock, |_| false).await? {
        return Err(too_large(&head));
    }
    let text = String::from_utf8_lossy(&head);
    let value = parse_answer(&text, framed)?;
    if error::is_error_object(&value) {
        return Err(error::in_answer(&value, &text));
    }
    D::answer_events(&value).map(Answer::Whole).ok_or_else(|| {
        error::protocol(
            format_args!(
                "a JSON answer that is neither {} nor an error object",
                D::ANSWER
            ),
            &text,
        )
    })
}

/// Whether the response says where its body ends (a `Content-Length`, or chunks): then
/// HTTP itself reports a body cut short, and one that arrived whole is what the server meant.
fn framed(response: &reqwest::Response) -> bool {
    response.content_length().is_some()
        || response
            .headers()
            .get(reqwest::header::TRANSFER_ENCODING)
            .is_some_and(|t| t.as_bytes().eq_ignore_ascii_case(b"chunked"))
}

/// A whole JSON answer. One that stops in the middle of the document, in a body that ends
/// where the connection closes (not `framed`), was cut short: worth another try, unlike a
/// document that is wrong.
fn parse_answer(text: &str, framed: bool) -> Result<Value, ApiError> {
    serde_json::from_str(text).map_err(|e| {
        if e.is_eof() && !framed {
            let mut cut = ApiError::other(
                format!("the provider's JSON answer ended in the middle of the document ({e}); the connection closed too early"),
                true,
            );
            cut.body = Some(error::truncate(text, error::MAX_KEPT_BODY));
            cut
        } else {
            error::protocol(
                format_args!("a JSON answer that does not parse ({e})"),
                text,
            )
        }
    })
}

/// The error for a JSON answer past the limit, quoting its start.
fn too_large(bytes: &[u8]) -> ApiError {
    let start = String::from_utf8_lossy(&bytes[..bytes.len().min(error::MAX_KEPT_BODY)]);
    error::protocol(
        format_args!(
            "a JSON answer larger than the limit of {MAX_ANSWER_BYTES} bytes (more than {} bytes arrived)",
            bytes.len()
        ),
        &start,
    )
}

/// The request body's bytes.
fn encode(body: &Value) -> Result<Bytes, ApiError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| ApiError::other(format!("could not encode the request: {e}"), false))
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
}

/// The body as text, at most 64 KiB of it, giving up on a body that stalls past the clock's
/// limits; what arrived before a failure is kept.
async fn read_limited(response: reqwest::Response, clock: Clock) -> String {
    let mut bytes = Vec::new();
    let mut body = response.bytes_stream().boxed();
    let _ = fill(&mut body, &mut bytes, 64 * 1024, clock, |_| false).await;
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Appends the pieces of `body` to `buf` until `enough(buf)` or `buf` holds more than `limit`
/// bytes (`Ok(false)`), or to the end of the body (`Ok(true)`); fails when a piece takes
/// longer than the clock allows or the connection fails.
async fn fill(
    body: &mut Body,
    buf: &mut Vec<u8>,
    limit: usize,
    clock: Clock,
    enough: impl Fn(&[u8]) -> bool,
) -> Result<bool, ApiError> {
    while buf.len() <= limit && !enough(buf) {
        match clock.next_piece(body).await? {
            Some(piece) => buf.extend_from_slice(&piece),
            None => return Ok(true),
        }
    }
    Ok(false)
}

/// The chunks of a whole answer: the data of its events decoded as a stream's would be.
fn replay<D: Decoder>(decoder: D, events: Vec<String>) -> ModelStream {
    futures::stream::iter(replayed(decoder, events)).boxed()
}

/// What [`replay`] streams: the chunks of the events, then the error that ended them, if one
/// did (a missing end of stream is one).
pub(crate) fn replayed<D: Decoder>(
    mut decoder: D,
    events: Vec<String>,
) -> impl Iterator<Item = Result<ChunkKind, ApiError>> {
    let mut out = VecDeque::new();
    let mut end = Some(error::cut_short());
    for data in events {
        let event = SseEvent {
            data,
            ..SseEvent::default()
        };
        match decoder.event(event, &mut out) {
            Ok(false) => continue,
            Ok(true) => end = None,
            Err(e) => end = Some(e),
        }
        break;
    }
    out.into_iter().map(Ok).chain(end.map(Err))
}

type Body = BoxStream<'static, reqwest::Result<Bytes>>;

enum Phase {
    Reading,
    /// The provider finished; what is left of the body is read briefly, so a keep-alive
    /// connection can be reused.
    Draining,
    Failed(ApiError),
    Done,
}

/// How long the rest of a finished response may take to arrive before the connection is
/// dropped instead of reused.
const DRAIN: Duration = Duration::from_millis(100);

/// Reads what is left of a finished response's body (usually the end of its chunked
/// encoding), so that its connection can be reused, without making the stream wait for it:
/// what has already arrived is read at once, the rest in a task of its own for at most
/// `limit`, after which the body is dropped and the connection closed.
fn drain(mut body: Body, limit: Duration) {
    // Bounded: a server that keeps sending after `[DONE]` does not hold the consumer's poll.
    for _ in 0..16 {
        match body.next().now_or_never() {
            // Pending: the rest is read in the background.
            None => break,
            Some(Some(Ok(_))) => {}
            // Ended, or failed: nothing to wait for.
            Some(None | Some(Err(_))) => return,
        }
    }
    let rest = async move { while let Some(Ok(_)) = body.next().await {} };
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        // The deadline counts from now, not from when the task first runs.
        let deadline = tokio::time::Instant::now() + limit;
        runtime.spawn(async move {
            let _ = tokio::time::timeout_at(deadline, rest).await;
        });
    }
}

struct Driver<D> {
    body: Body,
    events: EventDecoder<D>,
    out: VecDeque<ChunkKind>,
    clock: Clock,
    secrets: Secrets,
    phase: Phase,
}

/// Reads `body` as an event stream through `decoder`: chunks as they come, then the end, or
/// one error (after the chunks before it, its quoted credentials redacted) and the end.
/// Dropping the stream drops the body, which closes the connection.
fn drive<D: Decoder>(body: Body, decoder: D, clock: Clock, secrets: Secrets) -> ModelStream {
    let driver = Driver {
        body,
        events: EventDecoder::new(decoder),
        out: VecDeque::new(),
        clock,
        secrets,
        phase: Phase::Reading,
    };
    futures::stream::unfold(driver, |mut d| async move {
        let item = d.next().await?;
        Some((item, d))
    })
    .boxed()
}

impl<D: Decoder> Driver<D> {
    async fn next(&mut self) -> Option<Result<ChunkKind, ApiError>> {
        loop {
            if let Some(chunk) = self.out.pop_front() {
                return Some(Ok(chunk));
            }
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Failed(e) => return Some(Err(e)),
                Phase::Draining => {
                    drain(
                        std::mem::replace(&mut self.body, futures::stream::empty().boxed()),
                        DRAIN.min(self.clock.idle),
                    );
                    self.stop(Phase::Done);
                    return None;
                }
                Phase::Reading => self.phase = Phase::Reading,
            }
            self.read().await;
        }
    }

    /// Reads one piece of the body and decodes the events it completes.
    async fn read(&mut self) {
        let finished = match self.clock.next_piece(&mut self.body).await {
            Err(e) => Err(e),
            Ok(Some(bytes)) => self.events.feed(&bytes, &mut self.out),
            Ok(None) => self.events.end(&mut self.out).map(|()| true),
        };
        match finished {
            Ok(false) => {}
            Ok(true) => self.phase = Phase::Draining,
            Err(e) => {
                let e = self.secrets.scrub(e);
                self.stop(Phase::Failed(e));
            }
        }
    }

    /// Stops reading and lets the connection go.
    fn stop(&mut self, phase: Phase) {
        self.phase = phase;
        self.body = futures::stream::empty().boxed();
    }
}

/// The synchronous half of the driver: the bytes of an event stream in, the decoder's chunks
/// out.
#[derive(Debug)]
pub(crate) struct EventDecoder<D> {
    parser: SseParser,
    decoder: D,
}

impl<D: Decoder> EventDecoder<D> {
    pub(crate) fn new(decoder: D) -> Self {
        EventDecoder {
            parser: SseParser::new(),
            decoder,
        }
    }

    /// Parses the next piece of the body and decodes the events it completes; `Ok(true)` once
    /// the provider finished (what follows is not read).
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        out: &mut VecDeque<ChunkKind>,
    ) -> Result<bool, ApiError> {
        self.parser
            .feed(bytes)
            .map_err(|e| error::protocol(format_args!("a malformed event stream: {e}"), ""))?;
        while let Some(event) = self.parser.next_event() {
            if self.decoder.event(event, out)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The end of the body: decodes the unterminated last event, if there is one; fails unless
    /// the provider finished with it.
    pub(crate) fn end(&mut self, out: &mut VecDeque<ChunkKind>) -> Result<(), ApiError> {
        let Some(event) = self.parser.finish() else {
            return Err(error::cut_short());
        };
        // An unterminated last event that does not decode was cut by the disconnection.
        match self.decoder.event(event, out) {
            Ok(true) => Ok(()),
            Ok(false) => Err(error::cut_short()),
            Err(e) => {
                let mut cut = error::cut_short();
                cut.body = e.body;
                Err(cut)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_total_timeout_too_large_to_add_is_no_limit_not_a_panic() {
        let timeouts = Timeouts {
            total: Duration::MAX,
            ..Timeouts::default()
        };
        let clock = Clock::start(&timeouts);
        assert!(clock.left() > Duration::from_secs(50 * 365 * 86_400));
    }

    #[test]
    fn credential_headers_are_known_by_their_names() {
        for name in [
            "Authorization",
            "x-api-key",
            "api-key",
            "X-Auth-Token",
            "Cookie",
        ] {
            assert!(is_sensitive(name), "{name}");
        }
        for name in ["anthropic-version", "OpenAI-Organization", "user-agent"] {
            assert!(!is_sensitive(name), "{name}");
        }
    }

    #[test]
    fn scrubbing_replaces_the_key_with_and_without_its_scheme() {
        let key = Secret::new("sk-live-1".to_owned());
        let headers = [("authorization".to_owned(), "Bearer tok-2-abc".to_owned())];
        let secrets = Secrets::of(Some(&key), headers.iter());
        let error = ApiError::other("saw Bearer tok-2-abc and tok-2-abc and sk-live-1", false)
            .with_body("sk-live-1 tok-2-abc");
        let error = secrets.scrub(error);
        assert_eq!(
            error.message,
            "saw <redacted> and <redacted> and <redacted>"
        );
        assert_eq!(error.body.as_deref(), Some("<redacted> <redacted>"));
        assert_eq!(format!("{secrets:?}"), "3 redacted");
    }

    #[test]
    fn a_value_too_short_to_be_a_secret_is_not_scrubbed_out_of_words() {
        let key = Secret::new("k".to_owned());
        let headers = [("x-api-key".to_owned(), "short12".to_owned())];
        let secrets = Secrets::of(Some(&key), headers.iter());
        let error = secrets.scrub(ApiError::other("the chunk was not parsed: short12", false));
        assert_eq!(error.message, "the chunk was not parsed: short12");
        assert_eq!(format!("{secrets:?}"), "0 redacted");
    }
}
