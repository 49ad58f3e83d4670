//! The HTTP side shared by the providers: the client, timeouts, retries, and the driver that
//! turns a response body into a [`ModelStream`] through the [SSE parser](crate::sse).
//!
//! A server that ignores `stream: true` and answers with one JSON document is understood too:
//! the decoder turns the whole answer into the events that would have streamed it.

use crate::error;
use crate::retry::{self, RetryPolicy};
use crate::sse::{DEFAULT_MAX_EVENT_BYTES, SseEvent, SseParser};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use processors_runtime::chunk::ChunkKind;
use processors_runtime::model::{ApiError, ModelStream};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::collections::VecDeque;
use std::time::Duration;

/// How long a provider waits at each stage of a call.
///
/// ```
/// use processors_providers::Timeouts;
/// use std::time::Duration;
/// let t = Timeouts { idle: Duration::from_secs(30), ..Timeouts::default() };
/// assert_eq!(t.connect, Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// To open the TCP (and TLS) connection (default 10 s).
    pub connect: Duration,
    /// From sending the request to the response's headers (default 120 s).
    pub first_byte: Duration,
    /// Between two pieces of the response body (default 120 s); the stream then fails with
    /// a retryable "no data for …" error.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(120),
        }
    }
}

/// Settings every HTTP provider has; its builder fills them in.
#[derive(Debug, Clone)]
pub(crate) struct HttpConfig {
    pub base_url: String,
    pub api_key: Option<String>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    pub headers: Vec<(String, String)>,
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

        /// The API key.
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.http.api_key = Some(key.into());
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

        /// An extra header sent with every request.
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
}

impl Transport {
    /// A client for `config`, sending `headers` (such as the authentication) on every call.
    pub(crate) fn new(
        config: &HttpConfig,
        headers: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers.into_iter().chain(config.headers.iter().cloned()) {
            let bad = || ConfigError::InvalidHeader(name.clone());
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad())?;
            if header == reqwest::header::AUTHORIZATION || header.as_str() == "x-api-key" {
                value.set_sensitive(true);
            }
            map.insert(header, value);
        }
        // reqwest takes the process's default TLS crypto provider: ring, unless the
        // application installed one of its own before (then that one is kept).
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .user_agent(concat!("processors-providers/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        Ok(Transport {
            client,
            headers: map,
            timeouts: config.timeouts,
            retry: config.retry,
        })
    }

    /// Posts `body` to `url` and streams the answer's events through `decoder`; a whole JSON
    /// answer gives the chunks its stream would have given.
    ///
    /// Retryable failures (408, 429, 5xx, connection failures, no headers in time, an error
    /// object with a success status that says so) are retried per the policy; other statuses
    /// come back at once as non-retryable errors.
    pub(crate) async fn stream<D: Decoder>(
        &self,
        url: &str,
        body: &Value,
        decoder: D,
    ) -> Result<ModelStream, ApiError> {
        let body = encode(body)?;
        let answer = self
            .retrying(url, || self.attempt::<D>(url, body.clone()))
            .await?;
        Ok(match answer {
            Answer::Events(body) => drive(body, decoder, self.timeouts.idle),
            Answer::Whole(events) => replay(decoder, events),
        })
    }

    /// Posts `body` to `url` and reads the JSON answer whole (at most 16 MiB), with the same
    /// retries, timeouts and error classification as [`stream`](Self::stream).
    pub(crate) async fn json(&self, url: &str, body: &Value) -> Result<Value, ApiError> {
        let body = encode(body)?;
        self.retrying(url, || self.attempt_json(url, body.clone()))
            .await
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retry policy says stop.
    async fn retrying<T, F>(&self, url: &str, mut attempt: impl FnMut() -> F) -> Result<T, ApiError>
    where
        F: Future<Output = Result<T, (ApiError, Option<Duration>)>>,
    {
        let mut tried = 0u32;
        loop {
            let (error, asked) = match attempt().await {
                Ok(answer) => return Ok(answer),
                Err(failure) => failure,
            };
            if !error.retryable || tried >= self.retry.max_retries {
                return Err(error);
            }
            let wait = asked.unwrap_or_else(|| self.retry.backoff(tried));
            if wait > self.retry.max_backoff {
                let mut error = error;
                error.message.push_str(&format!(
                    " (the provider asked to retry after {}, longer than the retry policy allows)",
                    error::seconds(wait)
                ));
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
    ) -> Result<reqwest::Response, (ApiError, Option<Duration>)> {
        let request = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body)
            .send();
        let response = match tokio::time::timeout(self.timeouts.first_byte, request).await {
            Err(_) => {
                let message = format!(
                    "no response from {url} within {}",
                    error::seconds(self.timeouts.first_byte)
                );
                return Err((ApiError::other(message, true), None));
            }
            Ok(Err(e)) => return Err((error::from_transport(&e, url), None)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let asked = retry::retry_after(response.headers());
        let content_type = content_type(&response);
        let text = read_limited(response, self.timeouts.idle).await;
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
    ) -> Result<Value, (ApiError, Option<Duration>)> {
        let response = self.send(url, body, "application/json").await?;
        let asked = retry::retry_after(response.headers());
        let mut stream: Body = response.bytes_stream().boxed();
        let mut bytes = Vec::new();
        let whole = fill(
            &mut stream,
            &mut bytes,
            MAX_ANSWER_BYTES,
            self.timeouts.idle,
            |_| false,
        )
        .await
        .map_err(|e| (e, asked))?;
        let text = String::from_utf8_lossy(&bytes);
        if !whole {
            return Err((
                error::protocol(
                    format_args!("a JSON answer larger than the limit of {MAX_ANSWER_BYTES} bytes"),
                    &text,
                ),
                None,
            ));
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            (
                error::protocol(
                    format_args!("a JSON answer that does not parse ({e})"),
                    &text,
                ),
                None,
            )
        })?;
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
    ) -> Result<Answer, (ApiError, Option<Duration>)> {
        let response = self.send(url, body, "text/event-stream").await?;
        let asked = retry::retry_after(response.headers());
        let content_type = content_type(&response);
        self.accept::<D>(response, content_type.as_deref())
            .await
            .map_err(|e| (e, asked))
    }

    /// Tells an event stream from a whole JSON answer by the content type, or, without one,
    /// by the first byte that is not whitespace (a JSON answer starts with `{`, an event stream
    /// never does), and reads a JSON answer whole.
    async fn accept<D: Decoder>(
        &self,
        response: reqwest::Response,
        content_type: Option<&str>,
    ) -> Result<Answer, ApiError> {
        let idle = self.timeouts.idle;
        let mut body: Body = response.bytes_stream().boxed();
        let mut head = Vec::new();
        let json = match content_type {
            Some(c) => c.contains("json"),
            None => {
                let started = |b: &[u8]| b.iter().any(|c| !c.is_ascii_whitespace());
                fill(&mut body, &mut head, MAX_ANSWER_BYTES, idle, started).await?;
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
        if !fill(&mut body, &mut head, MAX_ANSWER_BYTES, idle, |_| false).await? {
            let start = String::from_utf8_lossy(&head[..error::MAX_KEPT_BODY]);
            return Err(error::protocol(
                format_args!("a JSON answer larger than the limit of {MAX_ANSWER_BYTES} bytes"),
                &start,
            ));
        }
        let text = String::from_utf8_lossy(&head);
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            error::protocol(
                format_args!("a JSON answer that does not parse ({e})"),
                &text,
            )
        })?;
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

/// The body as text, at most 64 KiB of it, giving up on a body that stalls for `idle`; what
/// arrived before a failure is kept.
async fn read_limited(response: reqwest::Response, idle: Duration) -> String {
    let mut bytes = Vec::new();
    let _ = fill(
        &mut response.bytes_stream().boxed(),
        &mut bytes,
        64 * 1024,
        idle,
        |_| false,
    )
    .await;
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Appends the pieces of `body` to `buf` until `enough(buf)` or `buf` holds more than `limit`
/// bytes (`Ok(false)`), or to the end of the body (`Ok(true)`); fails when a piece takes
/// longer than `idle` or the connection fails.
async fn fill(
    body: &mut Body,
    buf: &mut Vec<u8>,
    limit: usize,
    idle: Duration,
    enough: impl Fn(&[u8]) -> bool,
) -> Result<bool, ApiError> {
    while buf.len() <= limit && !enough(buf) {
        match tokio::time::timeout(idle, body.next()).await {
            Err(_) => return Err(error::idle_timeout(idle)),
            Ok(Some(Err(e))) => return Err(error::mid_stream(&e)),
            Ok(Some(Ok(piece))) => buf.extend_from_slice(&piece),
            Ok(None) => return Ok(true),
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

struct Driver<D> {
    body: Body,
    events: EventDecoder<D>,
    out: VecDeque<ChunkKind>,
    idle: Duration,
    phase: Phase,
}

/// Reads `body` as an event stream through `decoder`: chunks as they come, then the end, or
/// one error (after the chunks before it) and the end. Dropping the stream drops the body,
/// which closes the connection.
pub(crate) fn drive<D: Decoder>(body: Body, decoder: D, idle: Duration) -> ModelStream {
    let driver = Driver {
        body,
        events: EventDecoder::new(decoder),
        out: VecDeque::new(),
        idle,
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
                    let rest = async { while let Some(Ok(_)) = self.body.next().await {} };
                    let _ = tokio::time::timeout(DRAIN.min(self.idle), rest).await;
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
        let finished = match tokio::time::timeout(self.idle, self.body.next()).await {
            Err(_) => Err(error::idle_timeout(self.idle)),
            Ok(Some(Err(e))) => Err(error::mid_stream(&e)),
            Ok(Some(Ok(bytes))) => self.events.feed(&bytes, &mut self.out),
            Ok(None) => self.events.end(&mut self.out).map(|()| true),
        };
        match finished {
            Ok(false) => {}
            Ok(true) => self.phase = Phase::Draining,
            Err(e) => self.stop(Phase::Failed(e)),
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
