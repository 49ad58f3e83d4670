//! Soak: 10,000 agent runs, 64 at a time, with memory in SQLite, through the real
//! OpenAI-compatible client and a loopback server that answers about 5 % of its connections
//! with a fault (500, 429, a reset mid-stream, an error event, a stall past the idle timeout).
//!
//! Afterwards: every run completed or failed with a provider error of a known class; every
//! completed turn is saved exactly once and no failed one at all; the tasks, the connections
//! and the heap (counted by this binary's allocator) are back where they were before.
//!
//! It takes about 20 s in a debug build; `--nocapture` prints its figures:
//!
//! ```sh
//! cargo test --test soak -- --nocapture
//! ```

#[path = "../providers/tests/common/mod.rs"]
mod loopback;

use loopback::{Reply, Server};
use processors::builtins::storage::SqliteStore;
use processors::prelude::*;
use processors::providers::{OpenAiCompatible, RetryPolicy, Timeouts};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` with the caller's arguments; only a counter
// is updated besides.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, so by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`, and `new_size` is the caller's to get right.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ANSWER: &str = "Hello from the soak server.";

/// The faults the server injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    ServerError,
    RateLimited,
    Reset,
    ErrorEvent,
    Stall,
}

/// The fault for connection `n`: about one connection in twenty, spread by a hash.
fn fault(n: usize) -> Option<Fault> {
    // splitmix64
    let mut z = (n as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    if z % 100 >= 5 {
        return None;
    }
    Some(
        [
            Fault::ServerError,
            Fault::RateLimited,
            Fault::Reset,
            Fault::ErrorEvent,
            Fault::Stall,
        ][(z >> 32) as usize % 5],
    )
}

fn event(delta: serde_json::Value) -> String {
    format!(
        "data: {}\n\n",
        json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] })
    )
}

fn partial() -> String {
    event(json!({ "role": "assistant", "content": "" })) + &event(json!({ "content": "Hello" }))
}

fn reply(n: usize) -> Reply {
    match fault(n) {
        None => Reply::Events(
            partial()
                + &event(json!({ "content": " from the soak server." }))
                + &format!(
                    "data: {}\n\ndata: [DONE]\n\n",
                    json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] })
                ),
        ),
        Some(Fault::ServerError) => {
            Reply::json_error(500, json!({ "error": { "message": "boom" } }))
        }
        Some(Fault::RateLimited) => {
            Reply::json_error(429, json!({ "error": { "message": "slow down" } }))
                .header("retry-after", "0")
        }
        Some(Fault::Reset) => Reply::Reset(partial()),
        Some(Fault::ErrorEvent) => Reply::Events(
            partial()
                + &format!(
                    "data: {}\n\n",
                    json!({ "error": { "message": "overloaded", "type": "server_error" } })
                ),
        ),
        Some(Fault::Stall) => Reply::Hang(partial()),
    }
}

/// How a run ended, by the class of its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Outcome {
    Completed,
    ServerError,
    RateLimited,
    ConnectionFailed,
    ErrorEvent,
    Stalled,
}

/// The class of a provider error, by the start of its message as the providers word it.
fn class(e: &processors::model::ApiError) -> Option<Outcome> {
    let starts = |p: &str| e.message.starts_with(p);
    Some(
        if starts("internal server error") && e.status == Some(500) {
            Outcome::ServerError
        } else if starts("rate limited") && e.status == Some(429) {
            Outcome::RateLimited
        } else if starts("the connection failed while streaming") {
            Outcome::ConnectionFailed
        } else if starts("the provider reported an error mid-stream") {
            Outcome::ErrorEvent
        } else if starts("no data for") {
            Outcome::Stalled
        } else {
            return None;
        },
    )
}

/// Waits up to 10 s for `done`.
async fn settle(done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

async fn soak(runs: usize, concurrency: usize) {
    let server = Server::start_with(|n| Some(reply(n))).await;
    server.forget_requests();
    let path =
        std::env::temp_dir().join(format!("processors-soak-{}-{runs}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = SqliteStore::open(&path).unwrap();
    let model = OpenAiCompatible::builder("soak")
        .base_url(server.url("/v1"))
        .timeouts(
            Timeouts::default()
                .connect(Duration::from_secs(5))
                .first_byte(Duration::from_secs(10))
                .idle(Duration::from_millis(500))
                .total(Duration::from_secs(30)),
        )
        .retry(
            RetryPolicy::default()
                .max_retries(1)
                .initial_backoff(Duration::from_millis(5))
                .max_backoff(Duration::from_secs(1)),
        )
        .build()
        .unwrap();
    let agent = Arc::new(
        Agent::builder()
            .instructions("Be brief.")
            .model(model)
            .memory(Memory::new(store.clone()))
            .build()
            .unwrap(),
    );
    let run_all = |prefix: &'static str, runs: usize| {
        let agent = agent.clone();
        async move {
            let next = Arc::new(AtomicUsize::new(0));
            let workers: Vec<_> = (0..concurrency)
                .map(|_| {
                    let (agent, next) = (agent.clone(), next.clone());
                    tokio::spawn(async move {
                        let mut outcomes = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= runs {
                                return outcomes;
                            }
                            let cx =
                                RequestContext::new().with_thread(format!("{prefix}{i}"), "soak");
                            let options = GenerateOptions::new().request_context(cx);
                            let outcome = match agent.generate_with("hello", options).await {
                                Ok(result) => {
                                    assert_eq!(result.text, ANSWER, "run {i}");
                                    Outcome::Completed
                                }
                                Err(AgentError::Api(e)) => class(&e)
                                    .unwrap_or_else(|| panic!("run {i}: an unknown error: {e:?}")),
                                Err(e) => panic!("run {i}: not a provider error: {e:?}"),
                            };
                            outcomes.push((i, outcome));
                        }
                    })
                })
                .collect();
            let mut outcomes = vec![None; runs];
            for worker in workers {
                for (i, outcome) in worker.await.unwrap() {
                    outcomes[i] = Some(outcome);
                }
            }
            outcomes.into_iter().map(Option::unwrap).collect::<Vec<_>>()
        }
    };
    let metrics = tokio::runtime::Handle::current().metrics();

    // Warm up: the client, SQLite's statements and the runtime's buffers reach their size.
    run_all("warm-", 2 * concurrency).await;
    assert!(settle(|| server.open() == 0).await);
    let tasks_before = metrics.num_alive_tasks();
    let live_before = LIVE.load(Ordering::SeqCst);
    let accepted_before = server.accepted();

    let started = Instant::now();
    let outcomes = run_all("run-", runs).await;
    let took = started.elapsed();

    let connections = server.accepted() - accepted_before;
    let closed = settle(|| server.open() == 0).await;
    let tasks_settled = settle(|| metrics.num_alive_tasks() <= tasks_before).await;
    let tasks_after = metrics.num_alive_tasks();
    // The outcomes are this test's, not the runs'.
    let live_after = LIVE.load(Ordering::SeqCst)
        - (outcomes.capacity() * std::mem::size_of::<Outcome>()) as isize;
    let faults = (accepted_before..server.accepted()).filter_map(fault).fold(
        std::collections::BTreeMap::new(),
        |mut m, f| {
            *m.entry(format!("{f:?}")).or_insert(0) += 1;
            m
        },
    );
    let mut counts = std::collections::BTreeMap::new();
    for o in &outcomes {
        *counts.entry(*o).or_insert(0usize) += 1;
    }
    eprintln!(
        "soak: {runs} runs, {concurrency} at a time, in {took:.1?} ({:.0} runs/s); {connections} connections; faults injected {faults:?}; outcomes {counts:?}; tasks {tasks_before} -> {tasks_after}; open connections after: {}; live heap {live_before} -> {live_after} bytes ({:+})",
        runs as f64 / took.as_secs_f64(),
        server.open(),
        live_after - live_before,
    );

    // Every completed turn saved exactly once (its user message and the answer), no failed one.
    for (i, outcome) in outcomes.iter().enumerate() {
        let thread = format!("run-{i}");
        let messages = store.list_messages(&thread, None).await.unwrap();
        if *outcome == Outcome::Completed {
            let saved: Vec<(Role, String)> = messages.iter().map(|m| (m.role, m.text())).collect();
            assert_eq!(
                saved,
                [
                    (Role::User, "hello".to_owned()),
                    (Role::Assistant, ANSWER.to_owned())
                ],
                "run {i}"
            );
        } else {
            assert!(
                messages.is_empty(),
                "run {i} failed ({outcome:?}) yet saved {messages:?}"
            );
            assert!(
                store.get_thread(&thread).await.unwrap().is_none(),
                "run {i} failed ({outcome:?}) yet saved its thread"
            );
        }
    }
    assert!(
        counts.get(&Outcome::Completed).copied().unwrap_or(0) > runs * 9 / 10,
        "{counts:?}"
    );
    assert!(counts.len() > 2, "the faults made runs fail: {counts:?}");
    assert!(closed, "{} connections still open", server.open());
    assert!(
        tasks_settled,
        "tasks: {tasks_before} before, {tasks_after} after"
    );
    let slack = 256 * 1024;
    assert!(
        live_after - live_before < slack,
        "the heap grew by {} bytes",
        live_after - live_before
    );

    drop(agent);
    drop(store);
    let _ = std::fs::remove_file(&path);
    for suffix in ["-wal", "-shm"] {
        let mut side = path.clone().into_os_string();
        side.push(suffix);
        let _ = std::fs::remove_file(side);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_runs_with_faults_lose_nothing_and_leak_nothing() {
    soak(10_000, 64).await;
}
