//! The binary's `--otlp URL` (feature `otel`): every request's spans reach an OTLP/HTTP
//! collector, the conversation's text does not. Run with
//! `cargo test -p processors-gateway --features otel --test otel`.
#![cfg(feature = "otel")]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use support::client;

/// A collector on loopback that keeps every request's body and answers 200.
fn collector() -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            kept.lock().unwrap().extend_from_slice(&body);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (url, bodies)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_s_spans_reach_the_collector_without_the_conversation() {
    let (url, bodies) = collector();
    let mut child = Command::new(env!("CARGO_BIN_EXE_processors-gateway"))
        .args(["--listen", "127.0.0.1:0", "--otlp", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut key = String::new();
    let address = loop {
        let line = lines
            .next()
            .expect("the gateway prints where it listens")
            .unwrap();
        if let Some(k) = line.split("development key: ").nth(1) {
            key = k.trim().to_owned();
        }
        if let Some(a) = line.strip_prefix("listening on ") {
            break a.to_owned();
        }
    };
    let answer = client()
        .post(format!("{address}/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&serde_json::json!({
            "model": "scripted", "stream": true,
            "messages": [{ "role": "user", "content": "Who can help?" }],
        }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(answer.contains("[EMAIL]"), "{answer}");
    // SIGTERM: the gateway stops and sends what it buffered.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exited = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(exited.success(), "{exited}");
    let bodies = bodies.lock().unwrap();
    for name in [
        "gateway.request",
        "processed.call",
        "chat",
        "processor",
        "regex-filter",
        "processors-gateway",
    ] {
        assert!(contains(&bodies, name), "`{name}` was not exported");
    }
    assert!(
        !contains(&bodies, "help@acme.example"),
        "the answer's text left the process"
    );
    assert!(
        !contains(&bodies, "Who can help?"),
        "the prompt left the process"
    );
}
