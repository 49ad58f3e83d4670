//! A tiny scripted HTTP/1.1 server on 127.0.0.1 for the provider tests, and helpers.
//!
//! Besides well-formed answers it injects faults: a reset mid-stream, a stall, a body that
//! never ends, a byte at a time, bytes before the request was read; and it counts the
//! connections it accepted, those the client has not closed yet, and the bytes it sent.
#![allow(dead_code)]

use futures::StreamExt;
use processors_providers::{RetryPolicy, Timeouts};
use processors_runtime::chunk::ChunkKind;
use processors_runtime::model::{ApiError, ModelStream};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The timeouts the tests use: a short idle timeout, so a hang shows up as a fast failure,
/// and room for a loaded machine to answer on loopback.
pub fn fast_timeouts() -> Timeouts {
    Timeouts::default()
        .connect(Duration::from_secs(1))
        .first_byte(Duration::from_secs(1))
        .idle(Duration::from_millis(200))
}

/// Two retries, 10 ms apart.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(2)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_secs(1))
}

/// What the server answers to one connection.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with `text/event-stream` and this body, then the connection closes.
    Events(String),
    /// 200 with `text/event-stream`, the body in these pieces with a pause between them.
    Pieces(Vec<Vec<u8>>, Duration),
    /// This status, extra headers, content type and body, then the connection closes.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        content_type: &'static str,
        body: String,
    },
    /// 200 `text/event-stream` headers and these bytes, then silence until the client closes.
    Hang(String),
    /// Reads the request and never answers.
    Silent,
    /// These exact bytes (status line and headers included), then the connection closes.
    Raw(String),
    /// 200 `text/event-stream` headers and these bytes, then a TCP reset (`SO_LINGER` 0).
    Reset(String),
    /// 200 with this content type and `start`, then `fill` bytes without end, as fast as the
    /// client reads them, until it closes (or a minute passes).
    Endless {
        content_type: &'static str,
        start: String,
        fill: u8,
    },
    /// 200 `text/event-stream` headers and `start`, then one `byte` every `every` until the
    /// client closes (a slowloris answer).
    Drip {
        start: String,
        byte: u8,
        every: Duration,
    },
    /// These bytes as soon as the connection opens, before any request is read, then the
    /// connection closes; empty, it closes at once.
    Early(String),
    /// This status with a JSON error whose message quotes every header of the request.
    Echo(u16),
}

impl Reply {
    /// A JSON error with this status.
    pub fn json_error(status: u16, body: Value) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    /// 200 with `application/json` and this body, as a server that ignores `stream: true`
    /// answers.
    pub fn json(body: Value) -> Reply {
        Reply::json_error(200, body)
    }

    /// 200 without a `content-type` header, with this body.
    pub fn untyped(body: &str) -> Reply {
        Reply::Raw(format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ))
    }

    /// The same reply with an extra header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server counts.
#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicUsize,
    open: AtomicUsize,
    sent: AtomicUsize,
    /// Requests are not kept (a long test would pile them up).
    forget: AtomicBool,
}

/// Counts a connection open until dropped.
struct Open(Arc<Counters>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A server answering connections with scripted replies, in order.
pub struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    closed: tokio::sync::Mutex<mpsc::UnboundedReceiver<usize>>,
    counters: Arc<Counters>,
}

impl Server {
    /// Starts a server on 127.0.0.1 with a free port, answering the connections with
    /// `replies` in order (then with a 500). It stops with the test's runtime.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Server {
        let replies: Mutex<VecDeque<Reply>> = Mutex::new(replies.into_iter().collect());
        Server::start_with(move |_| replies.lock().unwrap().pop_front()).await
    }

    /// Starts a server answering connection `n` (from 0) with `script(n)`.
    pub async fn start_with(
        script: impl Fn(usize) -> Option<Reply> + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let counters = Arc::new(Counters::default());
        let (closed_tx, closed_rx) = mpsc::unbounded_channel();
        let recorded = requests.clone();
        let counted = counters.clone();
        tokio::spawn(async move {
            let mut index = 0;
            while let Ok((socket, _)) = listener.accept().await {
                counted.accepted.fetch_add(1, Ordering::SeqCst);
                counted.open.fetch_add(1, Ordering::SeqCst);
                let open = Open(counted.clone());
                let reply = script(index);
                let recorded = recorded.clone();
                let closed_tx = closed_tx.clone();
                tokio::spawn(async move {
                    let _open = open;
                    serve(socket, index, reply, recorded, closed_tx, &_open.0).await;
                });
                index += 1;
            }
        });
        Server {
            port,
            requests,
            closed: tokio::sync::Mutex::new(closed_rx),
            counters,
        }
    }

    /// Stops keeping the requests received (for tests that make thousands).
    pub fn forget_requests(&self) {
        self.counters.forget.store(true, Ordering::SeqCst);
    }

    /// The connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.counters.accepted.load(Ordering::SeqCst)
    }

    /// The connections accepted and not closed yet (the server keeps each until the client
    /// closes it, at most 10 s after its answer).
    pub fn open(&self) -> usize {
        self.counters.open.load(Ordering::SeqCst)
    }

    /// The body bytes sent by [`Reply::Endless`] and [`Reply::Drip`] answers so far.
    pub fn sent(&self) -> usize {
        self.counters.sent.load(Ordering::SeqCst)
    }

    /// Waits up to `within` for every connection to be closed; whether they all were.
    pub async fn all_closed(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while self.open() > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until the client closes a connection left open by a [`Reply::Hang`]; returns
    /// the connection's index, or `None` if that does not happen within 2 s.
    pub async fn client_closed(&self) -> Option<usize> {
        let mut rx = self.closed.lock().await;
        tokio::time::timeout(Duration::from_secs(2), rx.recv())
            .await
            .ok()
            .flatten()
    }
}

async fn serve(
    mut socket: TcpStream,
    index: usize,
    reply: Option<Reply>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    closed: mpsc::UnboundedSender<usize>,
    counters: &Counters,
) {
    if let Some(Reply::Early(bytes)) = &reply {
        let _ = socket.write_all(bytes.as_bytes()).await;
        let _ = socket.shutdown().await;
        return;
    }
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let echoed = request
        .headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}"))
        .collect::<Vec<_>>()
        .join("; ");
    if !counters.forget.load(Ordering::SeqCst) {
        recorded.lock().unwrap().push(request);
    }
    let reply = reply.unwrap_or_else(|| Reply::Status {
        status: 500,
        headers: Vec::new(),
        content_type: "text/plain",
        body: "the test server has no reply scripted for this request".to_owned(),
    });
    let head = |status: u16, content_type: &str, extra: &[(String, String)]| {
        let mut head = format!(
            "HTTP/1.1 {status} Status\r\ncontent-type: {content_type}\r\nconnection: close\r\n"
        );
        for (n, v) in extra {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head + "\r\n"
    };
    let _ = match reply {
        Reply::Events(body) => {
            let text = head(200, "text/event-stream", &[]) + &body;
            socket.write_all(text.as_bytes()).await
        }
        Reply::Pieces(pieces, pause) => {
            let mut result = socket
                .write_all(head(200, "text/event-stream", &[]).as_bytes())
                .await;
            for piece in pieces {
                if result.is_err() {
                    break;
                }
                tokio::time::sleep(pause).await;
                result = socket.write_all(&piece).await;
            }
            result
        }
        Reply::Status {
            status,
            headers,
            content_type,
            body,
        } => {
            let mut headers = headers;
            headers.push(("content-length".to_owned(), body.len().to_string()));
            let text = head(status, content_type, &headers) + &body;
            socket.write_all(text.as_bytes()).await
        }
        Reply::Echo(status) => {
            let body = serde_json::json!({
                "error": { "message": format!("refused a request with {echoed}"), "type": "echo" }
            })
            .to_string();
            let length = [("content-length".to_owned(), body.len().to_string())];
            let text = head(status, "application/json", &length) + &body;
            socket.write_all(text.as_bytes()).await
        }
        Reply::Hang(start) => {
            let text = head(200, "text/event-stream", &[]) + &start;
            if socket.write_all(text.as_bytes()).await.is_ok() {
                let mut buf = [0u8; 256];
                // Wait for the client to close (a read of 0 bytes or an error).
                loop {
                    match tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buf)).await
                    {
                        Ok(Ok(0)) | Ok(Err(_)) => {
                            let _ = closed.send(index);
                            break;
                        }
                        Ok(Ok(_)) => {}
                        Err(_) => break,
                    }
                }
            }
            Ok(())
        }
        Reply::Raw(bytes) => socket.write_all(bytes.as_bytes()).await,
        Reply::Silent => {
            let mut buf = [0u8; 256];
            let _ = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buf)).await;
            Ok(())
        }
        Reply::Reset(start) => {
            let text = head(200, "text/event-stream", &[]) + &start;
            let _ = socket.write_all(text.as_bytes()).await;
            let _ = socket.flush().await;
            // Let the bytes reach the client before the reset discards what is unsent.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = socket.set_zero_linger();
            return;
        }
        Reply::Endless {
            content_type,
            start,
            fill,
        } => {
            let text = head(200, content_type, &[]) + &start;
            let mut result = socket.write_all(text.as_bytes()).await;
            let block = vec![fill; 64 * 1024];
            let until = tokio::time::Instant::now() + Duration::from_secs(60);
            while result.is_ok() && tokio::time::Instant::now() < until {
                result = socket.write_all(&block).await;
                if result.is_ok() {
                    counters.sent.fetch_add(block.len(), Ordering::SeqCst);
                }
            }
            result
        }
        Reply::Drip { start, byte, every } => {
            let text = head(200, "text/event-stream", &[]) + &start;
            let mut result = socket.write_all(text.as_bytes()).await;
            let until = tokio::time::Instant::now() + Duration::from_secs(60);
            while result.is_ok() && tokio::time::Instant::now() < until {
                tokio::time::sleep(every).await;
                result = socket.write_all(&[byte]).await;
                if result.is_ok() {
                    counters.sent.fetch_add(1, Ordering::SeqCst);
                }
            }
            result
        }
        Reply::Early(_) => unreachable!("answered before the request was read"),
    };
    let _ = socket.shutdown().await;
    // The connection counts as open until the client closes its side.
    let mut buf = [0u8; 256];
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(n) = socket.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    let header_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&piece[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..header_end + length]).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// An event stream of `data:` events.
pub fn data_events<'a>(events: impl IntoIterator<Item = &'a Value>) -> String {
    events
        .into_iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect()
}

/// Every item of a model stream; fails the test if it takes over 5 s (a hang).
pub async fn collect(stream: ModelStream) -> Vec<Result<ChunkKind, ApiError>> {
    tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>())
        .await
        .expect("the model stream hung")
}

/// The items before the error, and the error, of a stream expected to fail.
pub async fn collect_error(stream: ModelStream) -> (Vec<ChunkKind>, ApiError) {
    let items = collect(stream).await;
    let mut chunks = Vec::new();
    for item in items {
        match item {
            Ok(c) => chunks.push(c),
            Err(e) => return (chunks, e),
        }
    }
    panic!("the stream ended without an error; chunks: {chunks:?}");
}

/// The chunks of a stream expected to succeed.
pub async fn collect_ok(stream: ModelStream) -> Vec<ChunkKind> {
    collect(stream)
        .await
        .into_iter()
        .map(|i| i.unwrap_or_else(|e| panic!("unexpected stream error: {e}")))
        .collect()
}

/// The concatenated text deltas.
pub fn text_of(chunks: &[ChunkKind]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            ChunkKind::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The chunks' type names.
pub fn kinds(chunks: &[ChunkKind]) -> Vec<String> {
    chunks.iter().map(|c| c.type_name().into_owned()).collect()
}
