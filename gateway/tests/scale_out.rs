//! Two gateway processes behind one address space, sharing PostgreSQL (conversations) and
//! Redis (cached answers): a conversation started on one continues on the other, and an
//! answer cached by one is a hit on the other. The servers are those of
//! `scripts/services.sh`, started by the test when they are down.
#![cfg(all(feature = "postgres", feature = "redis"))]

#[path = "../../builtins/tests/services/mod.rs"]
mod services;
mod support;

use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use support::*;

/// A gateway process of the crate's binary, killed when dropped.
struct Process {
    child: Child,
    url: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(config: &std::path::Path, pg: &str, redis: &str) -> Process {
    let mut child = Command::new(env!("CARGO_BIN_EXE_processors-gateway"))
        .args(["--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .env("PGW_POSTGRES_URL", pg)
        .env("PGW_REDIS_URL", redis)
        .env("UPSTREAM_KEY", UPSTREAM_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the gateway's binary starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(url) = line.strip_prefix("listening on ") {
                    break url.to_owned();
                }
            }
            _ => panic!("the gateway exited before listening"),
        }
    };
    Process { child, url }
}

async fn post(process: &Process, thread: Option<&str>, text: &str) -> (u16, String) {
    let mut request = client()
        .post(format!("{}/v1/chat/completions", process.url))
        .bearer_auth(KEY)
        .json(&json!({ "model": "up", "messages": [{ "role": "user", "content": text }] }));
    if let Some(thread) = thread {
        request = request.header("x-thread-id", thread);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_conversations_and_cached_answers() {
    let (Some(pg), Some(redis)) = (services::postgres_url(), services::redis_url()) else {
        return;
    };
    let upstream = Upstream::start().await;
    let schema = services::unique("gateway");
    let namespace = services::unique("gateway");
    let text = format!(
        "[memory]\nstore = \"postgres\"\nurl_env = \"PGW_POSTGRES_URL\"\nschema = \"{schema}\"\n\n{}\n[policies.p]\ninput = [{{ processor = \"response-cache\", redis_url_env = \"PGW_REDIS_URL\", namespace = \"{namespace}\" }}]\noutput = [\"response-cache\"]\n",
        upstream_config(&upstream, "openai", "text", "").replace(
            "model = \"real-model\"\n",
            "model = \"real-model\"\npolicy = \"p\"\n"
        )
    );
    let dir = std::env::temp_dir().join(services::unique("gateway-scale-out"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("gateway.toml");
    std::fs::write(&config, text).unwrap();
    let (a, b) = tokio::task::spawn_blocking(move || {
        (spawn(&config, &pg, &redis), spawn(&config, &pg, &redis))
    })
    .await
    .unwrap();

    // A conversation begun on one process goes on through the other.
    let thread = services::unique("thread");
    let (status, body) = post(&a, Some(&thread), "My name is Ada.").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(&b, Some(&thread), "Who am I?").await;
    assert_eq!(status, 200, "{body}");
    let sent = upstream.seen.bodies.lock().unwrap()[1]["messages"].clone();
    let texts: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        texts,
        ["My name is Ada.", "Hello from upstream", "Who am I?"]
    );

    // An answer one process cached is the other's hit.
    let calls = upstream.seen.calls.load(Ordering::SeqCst);
    let (status, first) = post(&a, None, "Capital of France?").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(upstream.seen.calls.load(Ordering::SeqCst), calls + 1);
    let (status, second) = post(&b, None, "Capital of France?").await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        upstream.seen.calls.load(Ordering::SeqCst),
        calls + 1,
        "the other process answered from the cache"
    );
    assert!(second.contains("Hello from upstream"), "{second}");
}
