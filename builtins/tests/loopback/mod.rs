//! HTTP servers on 127.0.0.1 for the tests that go through the real provider clients.
#![allow(dead_code)]

use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A server answering each connection with the next of `replies` (raw HTTP responses) and
/// recording the JSON bodies it received; its base URL and the bodies.
pub async fn server(replies: Vec<String>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let mut replies = replies.into_iter();
    serve(move |_| replies.next()).await
}

/// A server answering each request with what `answer` makes of its JSON body (no more
/// connections once it gives `None`); its base URL and the bodies it received.
pub async fn serve(
    mut answer: impl FnMut(&Value) -> Option<String> + Send + 'static,
) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let recorded = bodies.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = read_body(&mut socket).await.unwrap_or(Value::Null);
            let Some(reply) = answer(&body) else { break };
            recorded.lock().unwrap().push(body);
            let _ = socket.write_all(reply.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    (url, bodies)
}

/// The JSON body of one HTTP/1.1 request.
pub async fn read_body(socket: &mut TcpStream) -> Option<Value> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let n = socket.read(&mut piece).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&piece[..n]);
            }
            return serde_json::from_slice(&buf[end + 4..end + 4 + length]).ok();
        }
        let n = socket.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&piece[..n]);
    }
}

/// A 200 with this JSON body.
pub fn json_reply(body: &Value) -> String {
    let body = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}
