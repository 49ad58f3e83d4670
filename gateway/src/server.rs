//! The HTTP server: authentication, limits, the two protocols' endpoints, the model list,
//! metrics and graceful shutdown.

use crate::anthropic::{self, MessagesRequest};
use crate::build::{Caller, Routes, Target};
use crate::call::{self, Answer, Event, Refusal};
use crate::config::{Config, Protocol};
use crate::keys::KeyHash;
use crate::metrics::Metrics;
use crate::openai::{self, ChatRequest};
use crate::traces::{Dispatched, TRACE_HEADER, TRACE_ID_HEADER, Trace, Traces};
use crate::wire::{ClientError, Kind};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::{Bytes, BytesMut};
use futures::future::Either;
use futures::stream::BoxStream;
use futures::{Future, StreamExt};
use processors_config::{LoadError, Loader};
use processors_runtime::RequestContext;
use processors_runtime::message::new_id;
use processors_runtime::model::ModelRequest;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::sync::OwnedSemaphorePermit;
use tracing::instrument::WithSubscriber;

/// The gateway: its routes, keys, limits and metrics. [`Gateway::router`] is its HTTP
/// service, [`Gateway::serve`] runs it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use processors_gateway::{Config, Gateway};
/// let mut config = Config::from_str("gateway.toml", processors_gateway::DEFAULT_CONFIG, None)?;
/// let key = config.add_development_key()?;
/// let gateway = Gateway::new(&config).await?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let address = listener.local_addr()?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = tokio::spawn(gateway.serve(listener, async { let _ = stopped.await; }));
/// // … clients call http://{address}/v1/chat/completions with `Authorization: Bearer {key}` …
/// # let _ = (address, key);
/// let _ = stop.send(());
/// server.await??;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    routes: Routes,
    max_body: usize,
    timeout_ms: u64,
    grace: Duration,
    cors: Option<tower_http::cors::CorsLayer>,
    metrics: Arc<Metrics>,
    traces: Traces,
    /// Set when the shutdown's grace is over: the answers still open end.
    cut: tokio::sync::watch::Sender<bool>,
}

impl Gateway {
    /// The gateway of `config`, with every built-in processor, upstream keys read from the
    /// process's environment.
    pub async fn new(config: &Config) -> Result<Gateway, LoadError> {
        Gateway::with(config, &Loader::new(), &|name| std::env::var(name).ok()).await
    }

    /// The gateway of `config`, its policies loaded by `loader` (your processors too), its
    /// upstream keys read through `env`.
    pub async fn with(
        config: &Config,
        loader: &Loader,
        env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
    ) -> Result<Gateway, LoadError> {
        let metrics = Arc::new(Metrics::default());
        let routes = crate::build::routes(config, loader, env, &metrics).await?;
        let cors = match &config.cors {
            None => None,
            Some(cors) => Some(cors_layer(config, &cors.origins)?),
        };
        Ok(Gateway {
            inner: Arc::new(Inner {
                routes,
                max_body: config.max_body_bytes,
                timeout_ms: config.request_timeout_ms,
                grace: Duration::from_millis(config.shutdown_grace_ms),
                cors,
                metrics,
                traces: Traces::new(config.traces, config.trace_entries),
                cut: tokio::sync::watch::Sender::new(false),
            }),
        })
    }

    /// The HTTP service: `POST /v1/chat/completions`, `POST /v1/messages`, `GET /v1/models`,
    /// `GET /metrics` and `GET /healthz`.
    pub fn router(&self) -> Router {
        let router = Router::new()
            .route("/v1/chat/completions", post(endpoint::<OpenAi>))
            .route("/v1/messages", post(endpoint::<AnthropicMessages>))
            .route("/v1/models", get(models))
            .route("/v1/traces/{id}", get(trace_page))
            .route("/metrics", get(metrics))
            .route("/healthz", get(|| async { "ok" }))
            .fallback(not_found)
            .with_state(self.clone());
        match &self.inner.cors {
            None => router,
            Some(cors) => router.layer(cors.clone()),
        }
    }

    /// Serves on `listener` until `shutdown` resolves; then lets the open answers finish
    /// for the configured grace (`shutdown_grace_ms`), and cuts those still open.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let asked = Arc::new(tokio::sync::Notify::new());
        let signal = {
            let asked = asked.clone();
            async move {
                shutdown.await;
                asked.notify_one();
            }
        };
        let grace = self.inner.grace;
        let inner = self.inner.clone();
        // Each event is written as it comes: without TCP_NODELAY, a stream's last small
        // writes would wait for the client's delayed acknowledgement (40 ms on Linux).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!("cannot set TCP_NODELAY on a connection: {e}");
            }
        });
        let server = axum::serve(listener, self.router())
            .with_graceful_shutdown(signal)
            .into_future();
        tokio::pin!(server);
        tokio::select! {
            served = &mut server => return served,
            () = async { asked.notified().await; tokio::time::sleep(grace).await } => {}
        }
        tracing::warn!(
            open_streams = inner.metrics.open_streams(),
            "the shutdown's grace is over: the answers still open are cut"
        );
        // Each open answer ends with an error event; their connections then close, and the
        // server with them.
        inner.cut.send_replace(true);
        match tokio::time::timeout(Duration::from_secs(1), server).await {
            Ok(served) => served,
            Err(_) => Ok(()),
        }
    }

    /// The trace a request asks for, when the gateway keeps traces.
    fn trace(&self, headers: &HeaderMap) -> Option<Trace> {
        let asked = headers
            .get(TRACE_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| matches!(v.trim(), "1" | "true"));
        // Only a key's own requests are recorded: a request without a valid key is not.
        let allowed = asked && self.inner.traces.on() && self.authenticate(headers).is_ok();
        allowed.then(|| {
            let key = KeyHash::of(presented_key(headers).unwrap_or(""));
            Trace::new(key, self.inner.traces.max_entries)
        })
    }

    fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<Caller>, ClientError> {
        let Some(key) = presented_key(headers) else {
            return Err(ClientError::new(
                401,
                Kind::Authentication,
                "no gateway key: send it as `Authorization: Bearer KEY` or `x-api-key: KEY`",
            ));
        };
        self.inner
            .routes
            .callers
            .get(&KeyHash::of(key))
            .cloned()
            .ok_or_else(|| {
                ClientError::new(401, Kind::Authentication, "the gateway key is not valid")
            })
    }
}

impl Gateway {
    /// The model `alias` names for `caller`: 404 for no such alias, 403 for one the key may
    /// not call.
    fn target(&self, caller: &Caller, alias: &str) -> Result<Target, ClientError> {
        if let Some(target) = caller.models.get(alias) {
            return Ok(target.clone());
        }
        if self.inner.routes.aliases.iter().any(|a| a == alias) {
            return Err(ClientError::new(
                403,
                Kind::Permission,
                format!("the key `{}` may not call the model `{alias}`", caller.name),
            ));
        }
        let theirs: Vec<&str> = caller.models.keys().map(String::as_str).collect();
        Err(ClientError {
            code: Some("model_not_found".into()),
            ..ClientError::new(
                404,
                Kind::NotFound,
                format!(
                    "there is no model `{alias}`; this key may call: {}",
                    theirs.join(", ")
                ),
            )
        })
    }
}

impl Caller {
    /// One of the key's slots for a request (none to take when it has no limit), or 429.
    fn slot(&self) -> Result<Option<OwnedSemaphorePermit>, ClientError> {
        let Some(limit) = &self.limit else {
            return Ok(None);
        };
        limit.clone().try_acquire_owned().map(Some).map_err(|_| {
            ClientError::new(
                429,
                Kind::RateLimit,
                format!(
                    "the key `{}` has {} requests running, its limit; try again when one has finished",
                    self.name, self.max_concurrent
                ),
            )
        })
    }
}

/// The header that names a conversation's thread.
pub(crate) const THREAD_HEADER: &str = "x-thread-id";

impl Gateway {
    /// The request context of a call: the caller's tenant as the resource, and the thread the
    /// request names, once it is known to be the tenant's.
    async fn context(
        &self,
        headers: &HeaderMap,
        caller: &Caller,
    ) -> Result<RequestContext, ClientError> {
        let Some(value) = headers.get(THREAD_HEADER) else {
            return Ok(RequestContext::new().with_resource(caller.tenant.clone()));
        };
        let thread = value
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.len() <= 256)
            .ok_or_else(|| {
                ClientError::invalid(
                    THREAD_HEADER,
                    "`x-thread-id` is a thread's id: 1 to 256 visible ASCII characters",
                )
            })?;
        let Some(memory) = &self.inner.routes.memory else {
            return Err(ClientError::invalid(
                THREAD_HEADER,
                "this gateway keeps no conversations: remove the `x-thread-id` header, or give the gateway a `[memory]` table",
            ));
        };
        match memory.store().get_thread(thread).await {
            Ok(Some(t)) if t.resource_id != caller.tenant => Err(ClientError::new(
                403,
                Kind::Permission,
                format!("the thread `{thread}` belongs to another tenant"),
            )),
            Ok(_) => Ok(RequestContext::new().with_thread(thread, caller.tenant.clone())),
            Err(e) => Err(ClientError::new(
                500,
                Kind::Api,
                format!("the gateway's memory store failed: {e}"),
            )),
        }
    }
}

/// The CORS layer of `origins` (`*` for any): the requests' own headers allowed (the SDKs
/// send several of their own), the trace id exposed.
fn cors_layer(
    config: &Config,
    origins: &[String],
) -> Result<tower_http::cors::CorsLayer, LoadError> {
    use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        let mut values = Vec::new();
        for origin in origins {
            let value = HeaderValue::from_str(origin).map_err(|_| {
                LoadError::Invalid(vec![processors_config::Diagnostic {
                    file: config.file().to_owned(),
                    line: 1,
                    column: 1,
                    message: format!("the CORS origin `{origin}` is not a header value"),
                }])
            })?;
            values.push(value);
        }
        AllowOrigin::list(values)
    };
    Ok(CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers([header::HeaderName::from_static(TRACE_ID_HEADER)]))
}

/// What differs between the two protocols.
trait Dialect: 'static {
    const NAME: &'static str;
    /// The protocol an upstream must speak to receive the fields the gateway does not read.
    const PROTOCOL: Protocol;
    type Request: DeserializeOwned + Send;
    fn model(request: &Self::Request) -> &str;
    fn streams(request: &Self::Request) -> bool;
    /// The request for the model, and what the stream's writer needs to know of it.
    /// `pass_on`: the upstream speaks this protocol, and gets the fields the gateway passes on.
    fn read(request: Self::Request, pass_on: bool) -> Result<(ModelRequest, bool), ClientError>;
    fn id() -> String;
    fn error_body(e: &ClientError) -> Value;
    fn answer(id: &str, model: &str, answer: &Answer) -> Value;
    fn stream(
        id: String,
        model: String,
        flag: bool,
        events: BoxStream<'static, Event>,
    ) -> BoxStream<'static, Bytes>;
}

struct OpenAi;

impl Dialect for OpenAi {
    const NAME: &'static str = "openai";
    const PROTOCOL: Protocol = Protocol::Openai;
    type Request = ChatRequest;
    fn model(request: &ChatRequest) -> &str {
        &request.model
    }
    fn streams(request: &ChatRequest) -> bool {
        request.stream
    }
    fn read(request: ChatRequest, pass_on: bool) -> Result<(ModelRequest, bool), ClientError> {
        let usage = request.include_usage();
        Ok((request.into_model_request(pass_on)?, usage))
    }
    fn id() -> String {
        new_id("chatcmpl")
    }
    fn error_body(e: &ClientError) -> Value {
        openai::error_body(e)
    }
    fn answer(id: &str, model: &str, answer: &Answer) -> Value {
        openai::completion(id, model, unix_now(), answer)
    }
    fn stream(
        id: String,
        model: String,
        usage: bool,
        events: BoxStream<'static, Event>,
    ) -> BoxStream<'static, Bytes> {
        openai::chunks(id, model, unix_now(), usage, events)
    }
}

struct AnthropicMessages;

impl Dialect for AnthropicMessages {
    const NAME: &'static str = "anthropic";
    const PROTOCOL: Protocol = Protocol::Anthropic;
    type Request = MessagesRequest;
    fn model(request: &MessagesRequest) -> &str {
        &request.model
    }
    fn streams(request: &MessagesRequest) -> bool {
        request.stream
    }
    fn read(request: MessagesRequest, pass_on: bool) -> Result<(ModelRequest, bool), ClientError> {
        Ok((request.into_model_request(pass_on)?, false))
    }
    fn id() -> String {
        new_id("msg")
    }
    fn error_body(e: &ClientError) -> Value {
        anthropic::error_body(e)
    }
    fn answer(id: &str, model: &str, answer: &Answer) -> Value {
        anthropic::message(id, model, answer)
    }
    fn stream(
        id: String,
        model: String,
        _: bool,
        events: BoxStream<'static, Event>,
    ) -> BoxStream<'static, Bytes> {
        anthropic::events(id, model, events)
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An error response in the protocol `D`.
fn error<D: Dialect>(e: &ClientError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = json_response(status, &D::error_body(e));
    if let Some(ms) = e.retry_after_ms {
        let headers = response.headers_mut();
        headers.insert("retry-after-ms", HeaderValue::from(ms));
        headers.insert(header::RETRY_AFTER, HeaderValue::from(ms.div_ceil(1000)));
    }
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// Reads a body of at most `limit` bytes.
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ClientError> {
    let too_large = || {
        ClientError::new(
            413,
            Kind::TooLarge,
            format!("the request body is larger than the gateway's limit of {limit} bytes"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut stream = body.into_data_stream();
    let mut out = BytesMut::new();
    while let Some(piece) = stream.next().await {
        let piece = piece.map_err(|e| {
            ClientError::new(
                400,
                Kind::InvalidRequest,
                format!("the request body could not be read: {e}"),
            )
        })?;
        if out.len() + piece.len() > limit {
            return Err(too_large());
        }
        out.extend_from_slice(&piece);
    }
    Ok(out.freeze())
}

/// What a request holds while its answer streams: its key's slot and its place in the
/// metrics, given back when the answer ends or the client goes away.
struct InFlight {
    gateway: Arc<Inner>,
    _permit: Option<OwnedSemaphorePermit>,
    arrived: Instant,
    /// The request's trace, kept once the answer ended.
    trace: Option<Trace>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gateway.metrics.streams(-1);
        self.gateway.metrics.duration(self.arrived.elapsed());
        if let Some(trace) = self.trace.take() {
            self.gateway.traces.keep(trace);
        }
    }
}

async fn endpoint<D: Dialect>(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let arrived = Instant::now();
    let inner = gateway.inner.clone();
    // The request's span: the wrapped model's call and its processors' spans are inside it.
    let span = tracing::info_span!(
        "gateway.request",
        protocol = D::NAME,
        model = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    let mut trace = gateway.trace(&headers);
    let trace_id = trace.as_ref().map(|t| t.id.clone());
    let dispatch = trace.as_ref().map(Trace::dispatch);
    let answered = answer::<D>(&gateway, &headers, body, arrived, &mut trace);
    let answered = tracing::Instrument::instrument(answered, span.clone());
    let answered = match dispatch {
        Some(dispatch) => Either::Left(answered.with_subscriber(dispatch)),
        None => Either::Right(answered),
    };
    let (alias, mut response) = match answered.await {
        Ok(done) => done,
        Err((alias, e)) => (alias, error::<D>(&e)),
    };
    // A trace the stream did not take ends with the answer.
    if let Some(trace) = trace {
        inner.traces.keep(trace);
    }
    if let Some(value) = trace_id.and_then(|id| HeaderValue::from_str(&id).ok()) {
        response.headers_mut().insert(TRACE_ID_HEADER, value);
    }
    let status = response.status().as_u16();
    // Only the aliases the gateway serves are labels: the names clients send are theirs.
    let alias = alias.filter(|a| inner.routes.aliases.contains(a));
    span.record("model", alias.as_deref().unwrap_or("-"));
    span.record("status", status);
    inner
        .metrics
        .request(D::NAME, alias.as_deref().unwrap_or("-"), status);
    response
}

/// The answer to one request, or the error to send (with the alias, once known).
async fn answer<D: Dialect>(
    gateway: &Gateway,
    headers: &HeaderMap,
    body: Body,
    arrived: Instant,
    trace: &mut Option<Trace>,
) -> Result<(Option<String>, Response), (Option<String>, ClientError)> {
    let inner = &gateway.inner;
    let caller = gateway.authenticate(headers).map_err(|e| (None, e))?;
    // The key's slot is taken before its body is read, and the request's time runs from its
    // arrival: a body that trickles in holds one slot, for the limit at most.
    let permit = caller.slot().map_err(|e| (None, e))?;
    let deadline =
        tokio::time::Instant::from_std(arrived) + Duration::from_millis(inner.timeout_ms);
    let bytes =
        match tokio::time::timeout_at(deadline, read_body(headers, body, inner.max_body)).await {
            Ok(read) => read.map_err(|e| (None, e))?,
            Err(_) => {
                return Err((
                    None,
                    ClientError::upstream(&call::timed_out(inner.timeout_ms)),
                ));
            }
        };
    let request: D::Request = serde_json::from_slice(&bytes).map_err(|e| {
        (
            None,
            ClientError::new(
                400,
                Kind::InvalidRequest,
                format!("the request body is not a valid request: {e}"),
            ),
        )
    })?;
    let alias = D::model(&request).to_owned();
    let fail = |e| (Some(alias.clone()), e);
    let Target { model, protocol } = gateway.target(&caller, &alias).map_err(fail)?;
    let streams = D::streams(&request);
    let (request, flag) = D::read(request, protocol == D::PROTOCOL).map_err(fail)?;
    let context = gateway.context(headers, &caller).await.map_err(fail)?;
    tracing::debug!(key = %caller.name, tenant = %caller.tenant, model = %alias, streams, "request");
    let bounds = call::Bounds {
        deadline,
        limit_ms: inner.timeout_ms,
        cut: inner.cut.subscribe(),
    };
    let opened = match call::open(model, request, context, bounds).await {
        Ok(opened) => opened,
        Err(Refusal::Tripwire(tw)) => {
            inner.metrics.tripwire(&alias, &tw.processor_id);
            return Err(fail(ClientError::refused(&tw)));
        }
        Err(Refusal::Failed(e)) => {
            inner.metrics.failed(&alias, &e);
            return Err(fail(ClientError::upstream(&e)));
        }
    };
    inner.metrics.first_byte(arrived.elapsed());
    let id = D::id();
    if !streams {
        let answer = Answer::gather(opened).await.map_err(|e| {
            inner.metrics.failed(&alias, &e);
            fail(ClientError::upstream(&e))
        })?;
        if let Some(tw) = &answer.refused {
            inner.metrics.tripwire(&alias, &tw.processor_id);
        }
        inner.metrics.duration(arrived.elapsed());
        drop(permit);
        return Ok((
            Some(alias.clone()),
            json_response(StatusCode::OK, &D::answer(&id, &alias, &answer)),
        ));
    }
    inner.metrics.streams(1);
    let in_flight = InFlight {
        gateway: inner.clone(),
        _permit: permit,
        arrived,
        trace: trace.take(),
    };
    Ok((
        Some(alias.clone()),
        streamed::<D>(in_flight, opened, id, alias, flag),
    ))
}

/// The answer as a stream of server-sent events in `D`'s protocol; `in_flight` goes when it
/// ends or the client goes away.
fn streamed<D: Dialect>(
    in_flight: InFlight,
    opened: call::Opened,
    id: String,
    alias: String,
    flag: bool,
) -> Response {
    let dispatch = in_flight.trace.as_ref().map(Trace::dispatch);
    let metrics_alias = alias.clone();
    let counted = opened.events().inspect(move |event| {
        let inner = &in_flight.gateway;
        match event {
            Event::Refused(tw) => inner.metrics.tripwire(&metrics_alias, &tw.processor_id),
            Event::Failed(e) => inner.metrics.failed(&metrics_alias, e),
            _ => {}
        }
    });
    // A traced request's stream is polled under its recorder: the call's spans are there.
    let events = match dispatch {
        Some(dispatch) => Dispatched::new(counted.boxed(), dispatch).boxed(),
        None => counted.boxed(),
    };
    let body = D::stream(id, alias, flag, events).map(Ok::<_, std::convert::Infallible>);
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// `GET /v1/models`: the aliases the key may call, in OpenAI's shape, or in Anthropic's when
/// the request says `anthropic-version`.
async fn models(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    let anthropic = headers.contains_key("anthropic-version");
    let caller = match gateway.authenticate(&headers) {
        Ok(caller) => caller,
        Err(e) if anthropic => return error::<AnthropicMessages>(&e),
        Err(e) => return error::<OpenAi>(&e),
    };
    let aliases: Vec<&String> = caller.models.keys().collect();
    let body = if anthropic {
        json!({
            "data": aliases.iter().map(|a| json!({
                "type": "model", "id": a, "display_name": a, "created_at": "1970-01-01T00:00:00Z",
            })).collect::<Vec<_>>(),
            "has_more": false,
            "first_id": aliases.first(),
            "last_id": aliases.last(),
        })
    } else {
        json!({
            "object": "list",
            "data": aliases.iter().map(|a| json!({
                "id": a, "object": "model", "created": 0, "owned_by": "processors-gateway",
            })).collect::<Vec<_>>(),
        })
    };
    json_response(StatusCode::OK, &body)
}

/// The key a request presents: `Authorization: Bearer KEY` or `x-api-key: KEY`.
fn presented_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// `GET /v1/traces/{id}`: the run page of a request recorded on demand, to the key that asked
/// (`?format=json` for the timeline as JSON).
async fn trace_page(
    State(gateway): State<Gateway>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = gateway.authenticate(&headers) {
        return error::<OpenAi>(&e);
    }
    let key = KeyHash::of(presented_key(&headers).unwrap_or(""));
    let Some(timeline) = gateway.inner.traces.get(&id, &key) else {
        return error::<OpenAi>(&ClientError::new(
            404,
            Kind::NotFound,
            format!(
                "there is no trace `{id}` of this key; traces are kept for the last requests that asked with `x-processors-trace: 1`"
            ),
        ));
    };
    if uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "format=json"))
    {
        return json_response(StatusCode::OK, &timeline.to_json());
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        timeline.to_html(),
    )
        .into_response()
}

/// `GET /metrics`, in Prometheus' text format.
async fn metrics(State(gateway): State<Gateway>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        )],
        gateway.inner.metrics.render(),
    )
        .into_response()
}

async fn not_found() -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &openai::error_body(&ClientError::new(
            404,
            Kind::NotFound,
            "no such endpoint; the gateway serves POST /v1/chat/completions, POST /v1/messages and GET /v1/models",
        )),
    )
}

impl Config {
    /// Adds a new random key named `development`, with access to every model, and returns
    /// it: for a gateway whose file configures no key (every request needs one).
    pub fn add_development_key(&mut self) -> Result<String, crate::keys::RandomError> {
        let key = crate::keys::development_key()?;
        self.keys.push(toml::Spanned::new(
            0..0,
            crate::config::Key {
                name: "development".into(),
                sha256: KeyHash::of(&key),
                tenant: None,
                policy: None,
                models: None,
                max_concurrent: None,
            },
        ));
        Ok(key)
    }
}
