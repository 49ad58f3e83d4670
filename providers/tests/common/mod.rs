//! A tiny scripted HTTP/1.1 server on 127.0.0.1 for the provider tests, and helpers.
#![allow(dead_code)]

use futures::StreamExt;
use processors_providers::{RetryPolicy, Timeouts};
use processors_runtime::chunk::ChunkKind;
use processors_runtime::model::{ApiError, ModelStream};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The timeouts the tests use: a short idle timeout, so a hang shows up as a fast failure,
/// and room for a loaded machine to answer on loopback.
pub fn fast_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(1),
        first_byte: Duration::from_secs(1),
        idle: Duration::from_millis(200),
    }
}

/// Two retries, 10 ms apart.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_secs(1),
    }
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

/// A server answering connections with scripted replies, in order.
pub struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    closed: tokio::sync::Mutex<mpsc::UnboundedReceiver<usize>>,
}

impl Server {
    /// Starts a server on 127.0.0.1 with a free port. It stops with the test's runtime.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies: Arc<Mutex<VecDeque<Reply>>> =
            Arc::new(Mutex::new(replies.into_iter().collect()));
        let (closed_tx, closed_rx) = mpsc::unbounded_channel();
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut index = 0;
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies.lock().unwrap().pop_front();
                let recorded = recorded.clone();
                let closed_tx = closed_tx.clone();
                tokio::spawn(serve(socket, index, reply, recorded, closed_tx));
                index += 1;
            }
        });
        Server {
            port,
            requests,
            closed: tokio::sync::Mutex::new(closed_rx),
        }
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
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
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
    };
    let _ = socket.shutdown().await;
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
