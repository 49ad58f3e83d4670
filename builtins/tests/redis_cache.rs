//! `ResponseCache` over Redis, on a real server (`scripts/services.sh` starts it): two
//! processes' caches share answers, entries expire in Redis, and a Redis that goes down in the
//! middle of a conversation is a miss with a warning, then is used again once it is back.
#![cfg(feature = "redis")]

mod services;

use processors_builtins::response_cache::{CacheControl, RedisCache, ResponseCache};
use processors_runtime::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Answers the n-th call (from 0) with "answer n".
fn counting_model() -> ScriptedModel {
    ScriptedModel::responder(|_, i| Turn::text(format!("answer {i}")))
}

fn agent(
    cache: &ResponseCache,
    model: &ScriptedModel,
) -> Agent<DynPipeline, DynPipeline, DynPipeline> {
    Agent::builder()
        .model(model.clone())
        .input(cache.clone())
        .output(cache.clone())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_answers_through_redis_and_entries_expire_there() {
    let Some(url) = services::redis_url() else {
        return;
    };
    let namespace = services::unique("shared");
    // Two caches, as two processes would have, on one server.
    let first = ResponseCache::new(RedisCache::new(&url).unwrap()).namespace(&namespace);
    let second = ResponseCache::new(RedisCache::new(&url).unwrap())
        .namespace(&namespace)
        .ttl(Duration::from_secs(3600));
    let model = counting_model();
    let (a, b) = (agent(&first, &model), agent(&second, &model));
    assert_eq!(
        a.generate("Capital of France?").await.unwrap().text,
        "answer 0"
    );
    assert_eq!(
        b.generate("Capital of France?").await.unwrap().text,
        "answer 0"
    );
    assert_eq!(model.calls(), 1);

    // A time to live of zero takes the entry out of Redis.
    let options = GenerateOptions::new().request_context(
        RequestContext::new().with(CacheControl::new().bust(true).ttl(Duration::ZERO)),
    );
    assert_eq!(
        b.generate_with("Capital of France?", options)
            .await
            .unwrap()
            .text,
        "answer 1"
    );
    assert_eq!(
        a.generate("Capital of France?").await.unwrap().text,
        "answer 2"
    );
    // The second cache's hour is Redis's own expiry.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    b.generate("Capital of Spain?").await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("processors:response:*")
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut ttls = Vec::new();
    for k in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&k)
            .query_async(&mut conn)
            .await
            .unwrap();
        ttls.push(ttl);
    }
    assert!(
        ttls.iter().any(|t| (3_500_000..=3_600_000).contains(t)),
        "an entry with an hour to live: {ttls:?}"
    );
}

/// A Redis server of this test's own, which it can stop and start again.
struct OwnRedis {
    port: u16,
    dir: std::path::PathBuf,
}

impl OwnRedis {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(services::unique("redis"));
        std::fs::create_dir_all(&dir).unwrap();
        let own = OwnRedis { port, dir };
        own.up();
        own
    }

    fn up(&self) {
        let ok = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
            .arg("--dir")
            .arg(&self.dir)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not start on {}", self.port);
    }

    fn down(&self) {
        let _ = std::process::Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "shutdown", "nosave"])
            .status();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not stop");
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.down();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_going_down_mid_conversation_is_a_miss_with_a_warning_and_it_is_used_again_once_back()
{
    // The shared server's script installs redis-server when it is missing.
    if services::redis_url().is_none() {
        return;
    }
    let redis = OwnRedis::start();
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let seen = warnings.clone();
    let cache = ResponseCache::new(
        RedisCache::builder(redis.url())
            .timeout(Duration::from_millis(300))
            .build()
            .unwrap(),
    );
    let model = counting_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(cache.clone())
        .output(cache)
        .on_violation(move |v: &Violation| seen.lock().unwrap().push(v.reason.clone()))
        .build()
        .unwrap();
    assert_eq!(agent.generate("hi").await.unwrap().text, "answer 0");
    assert_eq!(agent.generate("hi").await.unwrap().text, "answer 0");

    redis.down();
    let started = std::time::Instant::now();
    let r = agent.generate("hi").await.unwrap();
    assert_eq!(r.text, "answer 1", "a miss: the model answered");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the run did not wait on the dead server: {:?}",
        started.elapsed()
    );
    {
        let warnings = warnings.lock().unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("the response cache failed to look the call up"));
        assert!(warnings[1].starts_with("the response cache failed to store an answer"));
    }

    // Back (empty: nothing was kept on disk): the cache fills and answers again.
    redis.up();
    let mut answered = None;
    for _ in 0..20 {
        let before = warnings.lock().unwrap().len();
        let r = agent.generate("hello").await.unwrap();
        if warnings.lock().unwrap().len() == before {
            answered = Some(r.text);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stored = answered.expect("the cache reconnected");
    assert_eq!(agent.generate("hello").await.unwrap().text, stored);
}
