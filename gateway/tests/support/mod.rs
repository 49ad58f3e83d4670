//! A gateway on loopback for a test, a fake upstream that speaks OpenAI's and Anthropic's
//! protocols, and a client.
#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use processors_gateway::{Config, Gateway, KeyHash};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The key every test config gives its callers.
pub const KEY: &str = "pgw-test-key";

/// The `[[keys]]` entry of `KEY`.
pub fn key_entry(extra: &str) -> String {
    format!(
        "[[keys]]\nname = \"tests\"\nsha256 = \"{}\"\n{extra}\n",
        KeyHash::of(KEY)
    )
}

/// A gateway serving on loopback until dropped.
pub struct Running {
    pub address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Running {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Asks for a shutdown; the server's task ends when its grace is over.
    pub fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

/// Starts the gateway of `text` (upstream keys read through `env`).
pub async fn start_with(
    text: &str,
    env: &(dyn Fn(&str) -> Option<String> + Send + Sync),
) -> Running {
    let config = Config::from_str("gateway.toml", text, None).expect("the test's config loads");
    let gateway = Gateway::with(&config, &processors_config::Loader::new(), env)
        .await
        .expect("the test's gateway builds");
    serve(gateway).await
}

/// Starts the gateway of `text`.
pub async fn start(text: &str) -> Running {
    start_with(text, &|_| None).await
}

/// Serves `gateway` on loopback.
pub async fn serve(gateway: Gateway) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(gateway.serve(listener, async {
        let _ = stopped.await;
    }));
    Running {
        address,
        stop: Some(stop),
        server: Some(server),
    }
}

/// A scripted upstream answering `turns` (a TOML array), as the alias `scripted` under
/// the policy `policy` (a TOML table body), with `KEY`.
pub fn scripted(turns: &str, policy: &str) -> String {
    format!(
        "[upstreams.offline]\nprotocol = \"scripted\"\nturns = {turns}\n\n[models.scripted]\nupstream = \"offline\"\npolicy = \"p\"\n\n{}\n[policies.p]\n{policy}\n",
        key_entry("")
    )
}

/// An HTTP client (plain HTTP; the TLS crypto the providers' client uses is installed, as
/// reqwest without its own provider asks).
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// POSTs `body` to `path` with `KEY`, returning the status and the body's text.
pub async fn post_json(gw: &Running, path: &str, body: Value) -> (u16, String) {
    post_as(gw, KEY, None, path, body).await
}

/// POSTs `body` to `path` with `key`, in the thread `thread` when given.
pub async fn post_as(
    gw: &Running,
    key: &str,
    thread: Option<&str>,
    path: &str,
    body: Value,
) -> (u16, String) {
    let mut request = client().post(gw.url(path)).bearer_auth(key).json(&body);
    if let Some(thread) = thread {
        request = request.header("x-thread-id", thread);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The `data:` payloads of a server-sent event stream.
pub fn data_lines(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// The events of an Anthropic stream: (name, data).
pub fn named_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or("")
                .to_owned();
            let data = e
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .map(|d| serde_json::from_str(d).unwrap())
                .unwrap_or(Value::Null);
            (name, data)
        })
        .collect()
}

/// The text of an OpenAI stream's deltas, and its last finish reason.
pub fn openai_text(body: &str) -> (String, Option<String>) {
    let mut text = String::new();
    let mut finish = None;
    for data in data_lines(body) {
        if data == "[DONE]" {
            continue;
        }
        let v: Value = serde_json::from_str(&data).unwrap();
        if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
            text.push_str(t);
        }
        if let Some(f) = v["choices"][0]["finish_reason"].as_str() {
            finish = Some(f.to_owned());
        }
    }
    (text, finish)
}

/// What the fake upstream saw and did.
#[derive(Default)]
pub struct Seen {
    /// The `authorization` (or `x-api-key`) header of each request.
    pub keys: Mutex<Vec<String>>,
    /// The bodies of the requests.
    pub bodies: Mutex<Vec<Value>>,
    /// Streams whose reader went away before they ended.
    pub cancelled: AtomicUsize,
    /// Requests received.
    pub calls: AtomicUsize,
}

/// A fake upstream on loopback. Under `/openai/{scenario}/chat/completions` and
/// `/anthropic/{scenario}/v1/messages`, the scenario says what it answers:
/// `text` (a streamed text), `tool` (a tool call), `status-N` (an error with status N, whose
/// body quotes the request's key; a 429 or 503 with `Retry-After: 7`), `stall` (one delta, then silence until the reader goes),
/// `reset` (one delta, then the connection cut).
pub struct Upstream {
    pub address: SocketAddr,
    pub seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Upstream {
    pub async fn start() -> Upstream {
        let seen = Arc::new(Seen::default());
        let app = Router::new()
            .route("/openai/{scenario}/chat/completions", post(openai))
            .route("/anthropic/{scenario}/v1/messages", post(anthropic))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Upstream {
            address,
            seen,
            task,
        }
    }

    /// The base URL of a scenario for `protocol`.
    pub fn base_url(&self, protocol: &str, scenario: &str) -> String {
        format!("http://{}/{protocol}/{scenario}", self.address)
    }
}

fn record(seen: &Seen, headers: &HeaderMap, body: &str) -> String {
    seen.calls.fetch_add(1, Ordering::SeqCst);
    let key = headers
        .get(header::AUTHORIZATION)
        .or_else(|| headers.get("x-api-key"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    seen.keys.lock().unwrap().push(key.clone());
    if let Ok(v) = serde_json::from_str(body) {
        seen.bodies.lock().unwrap().push(v);
    }
    key
}

fn sse(events: Vec<String>) -> Response {
    let body: String = events.concat();
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from(body),
    )
        .into_response()
}

/// A stream that sends `first`, then nothing, and counts a cancellation when its reader
/// goes away.
fn stalled(first: String, seen: Arc<Seen>) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    tokio::spawn(async move {
        let _ = tx.send(Ok(first)).await;
        tx.closed().await;
        seen.cancelled.fetch_add(1, Ordering::SeqCst);
    });
    let body = tokio_stream(rx);
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}

/// A stream that sends `first`, then fails: the connection is cut mid-body.
fn reset(first: String) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    tokio::spawn(async move {
        let _ = tx.send(Ok(first)).await;
        // The first delta reaches the reader before the cut.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let _ = tx.send(Err(reset)).await;
    });
    let body = tokio_stream(rx);
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}

fn tokio_stream(
    mut rx: tokio::sync::mpsc::Receiver<Result<String, std::io::Error>>,
) -> impl futures::Stream<Item = Result<String, std::io::Error>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// An error answer; a 429 or 503 asks to wait 7 s before calling again (`Retry-After`).
fn error_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if matches!(status.as_u16(), 429 | 503) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("7"));
    }
    response
}

fn error_status(scenario: &str) -> Option<StatusCode> {
    scenario
        .strip_prefix("status-")
        .and_then(|s| s.parse().ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
}

async fn openai(
    State(seen): State<Arc<Seen>>,
    Path(scenario): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let key = record(&seen, &headers, &body);
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c1\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    if let Some(status) = error_status(&scenario) {
        let body = format!(
            "{{\"error\":{{\"message\":\"refused the request with {key}\",\"type\":\"server_error\"}}}}"
        );
        return error_response(status, body);
    }
    match scenario.as_str() {
        "text" => sse(vec![
            chunk("{\"role\":\"assistant\",\"content\":\"Hello \"}", "null"),
            chunk("{\"content\":\"from upstream\"}", "null"),
            chunk("{}", "\"stop\""),
            "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}\n\n".into(),
            "data: [DONE]\n\n".into(),
        ]),
        "tool" => sse(vec![
            chunk(
                "{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"weather\",\"arguments\":\"\"}}]}",
                "null",
            ),
            chunk(
                "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]}",
                "null",
            ),
            chunk(
                "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}]}",
                "null",
            ),
            chunk("{}", "\"tool_calls\""),
            "data: [DONE]\n\n".into(),
        ]),
        "stall" => stalled(chunk("{\"content\":\"Thinking\"}", "null"), seen),
        "reset" => reset(chunk("{\"content\":\"Half an \"}", "null")),
        _ => (StatusCode::NOT_FOUND, "no such scenario").into_response(),
    }
}

async fn anthropic(
    State(seen): State<Arc<Seen>>,
    Path(scenario): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let key = record(&seen, &headers, &body);
    if let Some(status) = error_status(&scenario) {
        let body = format!(
            "{{\"type\":\"error\",\"error\":{{\"type\":\"api_error\",\"message\":\"refused the request with {key}\"}}}}"
        );
        return error_response(status, body);
    }
    let event = |name: &str, data: &str| format!("event: {name}\ndata: {data}\n\n");
    match scenario.as_str() {
        "text" => sse(vec![
            event(
                "message_start",
                "{\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}",
            ),
            event(
                "content_block_start",
                "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
            ),
            event(
                "content_block_delta",
                "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello from \"}}",
            ),
            event(
                "content_block_delta",
                "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Claude\"}}",
            ),
            event(
                "content_block_stop",
                "{\"type\":\"content_block_stop\",\"index\":0}",
            ),
            event(
                "message_delta",
                "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}",
            ),
            event("message_stop", "{\"type\":\"message_stop\"}"),
        ]),
        _ => (StatusCode::NOT_FOUND, "no such scenario").into_response(),
    }
}

/// A config with `KEY`, routing the alias `up` to the fake upstream's `scenario` of
/// `protocol`, its key read from `UPSTREAM_KEY`, tried once.
pub fn upstream_config(upstream: &Upstream, protocol: &str, scenario: &str, extra: &str) -> String {
    format!(
        "{extra}\n[upstreams.fake]\nprotocol = \"{protocol}\"\nbase_url = \"{}\"\napi_key_env = \"UPSTREAM_KEY\"\nmax_retries = 0\n\n[models.up]\nupstream = \"fake\"\nmodel = \"real-model\"\n\n{}",
        upstream.base_url(protocol, scenario),
        key_entry("")
    )
}

/// The upstream key the tests' environment holds.
pub const UPSTREAM_KEY: &str = "sk-upstream-secret-0123456789";

pub fn env(name: &str) -> Option<String> {
    (name == "UPSTREAM_KEY").then(|| UPSTREAM_KEY.to_owned())
}
