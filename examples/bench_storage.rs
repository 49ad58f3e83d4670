//! What storage costs a run: saving a turn and loading a thread's history on SQLite (and
//! PostgreSQL with the feature `postgres`), and an agent's call answered by the response
//! cache against one that misses (in memory, and Redis with the feature `redis`). Prints one
//! JSON line per measurement, medians over interleaved rounds.
//!
//! ```text
//! cargo run --release --example bench_storage
//! bash scripts/services.sh && cargo run --release --example bench_storage --features postgres,redis
//! ```

use processors::builtins::response_cache::{Cache, CacheControl, InMemoryCache, ResponseCache};
use processors::builtins::storage::SqliteStore;
use processors::memory::{MemoryStore, Thread};
use processors::prelude::*;
use std::sync::Arc;
#[cfg(feature = "redis")]
use std::time::Duration;
use std::time::Instant;

const TURNS: usize = 400;
const ROUNDS: usize = 9;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn turn(thread: &str, n: usize) -> (Thread, Vec<Message>) {
    let thread = Thread {
        id: thread.to_owned(),
        resource_id: "bench".to_owned(),
        title: None,
        created_at: 1,
        updated_at: 1,
        metadata: None,
    };
    let mut q = Message::user(format!("question {n}: what is the status of order A-{n}?"));
    let mut a = Message::assistant(format!(
        "Order A-{n} shipped yesterday and should arrive within two working days."
    ));
    for m in [&mut q, &mut a] {
        m.thread_id = Some(thread.id.clone());
        m.resource_id = Some("bench".to_owned());
    }
    (thread, vec![q, a])
}

/// Median microseconds per saved turn and per history load (the last 40 messages).
async fn store_costs(store: &dyn MemoryStore, label: &str) {
    let (mut save, mut load) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let thread = format!("bench-{label}-{round}-{}", std::process::id());
        let started = Instant::now();
        for n in 0..TURNS {
            let (t, ms) = turn(&thread, n);
            store.save_turn(t, ms).await.unwrap();
        }
        save.push(started.elapsed().as_secs_f64() * 1e6 / TURNS as f64);
        let started = Instant::now();
        for _ in 0..TURNS {
            let h = store.list_messages(&thread, Some(40)).await.unwrap();
            assert_eq!(h.len(), 40);
        }
        load.push(started.elapsed().as_secs_f64() * 1e6 / TURNS as f64);
    }
    println!(
        "{{\"bench\":\"store\",\"store\":\"{label}\",\"save_turn_us\":{:.1},\"load_last_40_us\":{:.1}}}",
        median(save),
        median(load)
    );
}

/// Median microseconds per `generate()` answered by the cache, and per call that misses
/// (the model answers, and the answer is stored), on the scripted model.
async fn cache_costs(cache: Arc<dyn Cache>, label: &str) {
    let rc = ResponseCache::shared(cache).namespace(format!("bench-{}", std::process::id()));
    let agent = Agent::builder()
        .model(ScriptedModel::responder(|_, _| {
            Turn::deltas(["Order A-17 ", "shipped ", "yesterday."])
        }))
        .input(rc.clone())
        .output(rc)
        .build()
        .unwrap();
    let (mut hit, mut miss) = (Vec::new(), Vec::new());
    agent.generate("status of A-17?").await.unwrap();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..TURNS {
            agent.generate("status of A-17?").await.unwrap();
        }
        hit.push(started.elapsed().as_secs_f64() * 1e6 / TURNS as f64);
        let started = Instant::now();
        for _ in 0..TURNS {
            let bust = GenerateOptions::new()
                .request_context(RequestContext::new().with(CacheControl::new().bust(true)));
            agent.generate_with("status of A-17?", bust).await.unwrap();
        }
        miss.push(started.elapsed().as_secs_f64() * 1e6 / TURNS as f64);
    }
    let none = Agent::builder()
        .model(ScriptedModel::responder(|_, _| {
            Turn::deltas(["Order A-17 ", "shipped ", "yesterday."])
        }))
        .build()
        .unwrap();
    let mut bare = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..TURNS {
            none.generate("status of A-17?").await.unwrap();
        }
        bare.push(started.elapsed().as_secs_f64() * 1e6 / TURNS as f64);
    }
    println!(
        "{{\"bench\":\"response-cache\",\"cache\":\"{label}\",\"hit_us\":{:.1},\"miss_and_store_us\":{:.1},\"no_cache_us\":{:.1}}}",
        median(hit),
        median(miss),
        median(bare)
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("processors-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sqlite = SqliteStore::open(dir.join("bench.db")).unwrap();
        store_costs(&sqlite, "sqlite-file").await;
        store_costs(&InMemoryStore::new(), "in-memory").await;
        #[cfg(feature = "postgres")]
        {
            let url = std::env::var("PROCESSORS_POSTGRES_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:55432/processors".into());
            let pg = processors::builtins::storage::PostgresStore::builder(url)
                .schema(format!("bench_{}", std::process::id()))
                .connect()
                .await
                .unwrap();
            store_costs(&pg, "postgres-loopback").await;
        }
        cache_costs(Arc::new(InMemoryCache::new()), "in-memory").await;
        #[cfg(feature = "redis")]
        {
            let url = std::env::var("PROCESSORS_REDIS_URL")
                .unwrap_or_else(|_| "redis://127.0.0.1:56379/".into());
            let redis = processors::builtins::response_cache::RedisCache::builder(url)
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap();
            cache_costs(Arc::new(redis), "redis-loopback").await;
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
