//! What the framework adds on top of HTTP: an OpenAI-compatible server on loopback, inside this
//! binary, streams chat-completion deltas over SSE; the bench consumes them through the bare
//! transport, the provider and full agents, and prints one JSON line per configuration (see
//! BENCHMARKS.md, "End to end through HTTP").
//!
//! Run with `cargo run --release --example bench_http` (`-- latency [N]` or
//! `-- throughput [N]` for one scenario).
//!
//! - `latency`: the server sends one delta every millisecond, N = 2,000 per run, and records
//!   when it wrote each one; the consumer records when each reached it. Consumed through the
//!   provider's `LanguageModel::stream` (`provider`), and through `agent.stream(..)` with K = 0
//!   and K = 5 output stream processors that count characters and pass every chunk (those of
//!   `bench stream`); three rounds of each, interleaved. Reports, per chunk, the time from the
//!   server's write to the consumer (`wire_*`), and for the agents the time from the provider
//!   yielding the chunk to the agent's consumer receiving it (`runner_*`): what the run adds.
//!   A chunk the run held back until later ones arrived would show as about a millisecond, and
//!   is counted (`held_until_next_arrival`: delivered after the provider yielded the next
//!   delta, which came at least half a pace later). After `[DONE]` the server keeps the
//!   connection open for [`HOLD`], as a server or proxy slow to end the body would; the time
//!   from its `[DONE]` to the consumer's end of stream is `end_after_done_*`.
//! - `throughput`: the server writes N = 100,000 deltas of 4-7 characters (a body rendered
//!   once) as fast as the client reads. Consumed as bare bytes over a socket (`socket`) and
//!   through reqwest (`reqwest`, the transport's limit), through the provider (`provider`: its
//!   SSE parser and decoder), and through agents with K = 0 and K = 5; and the same deltas in
//!   the Anthropic messages API's events through the Anthropic provider (`anthropic`, a
//!   larger body: MB/s are of its own). Reports MB/s of body, deltas per second, and the
//!   ratios of each median time to reqwest's and to the provider's, measured in interleaved
//!   rounds.

#[path = "../benches/support/mod.rs"]
mod support;

use futures::StreamExt;
use futures::future::BoxFuture;
use processors::agent::AnyAgent;
use processors::chunk::ChunkKind;
use processors::model::{ApiError, LanguageModel, ModelRequest, ModelStream};
use processors::prelude::*;
use processors::providers::{Anthropic, OpenAiCompatible};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};
use support::{Count0, Count1, Count2, Count3, Count4};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The interleaved rounds of the throughput scenario.
const ROUNDS: usize = 15;
/// The rounds of the latency scenario (each configuration sees N deltas per round).
const LATENCY_ROUNDS: usize = 3;
/// The pause between two deltas of the latency scenario.
const PACE: Duration = Duration::from_millis(1);
/// How long the latency server keeps the connection open after `[DONE]`.
const HOLD: Duration = Duration::from_millis(300);
/// The deltas of the throughput scenario, in turn: 4 to 7 characters, 5.6 on average.
const WORDS: [&str; 8] = [
    "the ", "quick ", "brown ", "foxes ", "jumped ", "over ", "lazy ", "dogs, ",
];

/// The clock the server and the consumer share: nanoseconds since the start.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn now_ns() -> u64 {
    EPOCH.elapsed().as_nanos() as u64
}

/// When each delta of a latency run was written by the server, yielded by the provider's
/// stream, and received by the consumer (nanoseconds since [`EPOCH`], 0 for not yet).
struct Stamps {
    written: Vec<AtomicU64>,
    yielded: Vec<AtomicU64>,
    received: Vec<AtomicU64>,
    /// When the server wrote the finish, the usage and `[DONE]`.
    done: AtomicU64,
}

impl Stamps {
    fn new(n: usize) -> Self {
        let zeros = || (0..n).map(|_| AtomicU64::new(0)).collect();
        Stamps {
            written: zeros(),
            yielded: zeros(),
            received: zeros(),
            done: AtomicU64::new(0),
        }
    }

    fn reset(&self) {
        for v in [&self.written, &self.yielded, &self.received] {
            v.iter().for_each(|t| t.store(0, Ordering::Relaxed));
        }
        self.done.store(0, Ordering::Relaxed);
    }
}

/// The text of delta `i` in the latency scenario: its number, six digits.
fn numbered(i: usize) -> String {
    format!("{i:06}")
}

/// The number a latency delta carries.
fn number_of(text: &str) -> usize {
    match text.parse() {
        Ok(i) => i,
        Err(_) => panic!("a latency delta that is not a number: {text:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The server: HTTP/1.1 on loopback, one thread per connection, the answer closed by the end of
// the connection (as a server without `content-length` or chunking does).

/// One SSE event of a chat completion stream.
fn event(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// A `chat.completion.chunk` event with this delta and finish reason.
fn chunk_event(delta: Value, finish_reason: Value) -> String {
    event(&json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "bench",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }],
    }))
}

/// The answer's status line and headers.
const HEADERS: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

/// What comes before the deltas: the headers and the role's delta.
fn head() -> String {
    let role = chunk_event(json!({ "role": "assistant", "content": "" }), Value::Null);
    format!("{HEADERS}{role}")
}

/// A delta's event.
fn delta_event(text: &str) -> String {
    chunk_event(json!({ "content": text }), Value::Null)
}

/// What comes after the deltas: the finish, the usage and `[DONE]`.
fn tail(deltas: usize) -> String {
    let finish = chunk_event(json!({}), json!("stop"));
    let usage = event(&json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": { "prompt_tokens": 1, "completion_tokens": deltas, "total_tokens": deltas + 1 },
    }));
    format!("{finish}{usage}data: [DONE]\n\n")
}

/// The throughput scenario's whole answer, headers included, and its text.
fn rendered(n: usize) -> (Vec<u8>, String) {
    let mut answer = head();
    let mut text = String::new();
    for word in WORDS.iter().cycle().take(n) {
        answer.push_str(&delta_event(word));
        text.push_str(word);
    }
    answer.push_str(&tail(n));
    (answer.into_bytes(), text)
}

/// The same answer in the Anthropic messages API's events, headers included.
fn rendered_anthropic(n: usize) -> Vec<u8> {
    let named = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut answer = String::from(HEADERS);
    answer.push_str(&named(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": "msg_bench", "type": "message", "role": "assistant", "model": "bench",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 1, "output_tokens": 1 },
        }}),
    ));
    answer.push_str(&named(
        "content_block_start",
        json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
    ));
    for word in WORDS.iter().cycle().take(n) {
        answer.push_str(&named(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": word } }),
        ));
    }
    answer.push_str(&named(
        "content_block_stop",
        json!({ "type": "content_block_stop", "index": 0 }),
    ));
    answer.push_str(&named(
        "message_delta",
        json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn", "stop_sequence": null }, "usage": { "output_tokens": n } }),
    ));
    answer.push_str(&named("message_stop", json!({ "type": "message_stop" })));
    answer.into_bytes()
}

/// The loopback server. `POST /fast/…` gets the pre-rendered answer in one write (`POST
/// /anthropic/…` the same answer in the Anthropic API's events);
/// `POST /paced/…` gets `stamps.written.len()` numbered deltas, one per [`PACE`], each
/// write's time recorded.
struct Server {
    fast: Vec<u8>,
    anthropic: Vec<u8>,
    stamps: Arc<Stamps>,
}

impl Server {
    /// Listens on a free port of 127.0.0.1; returns `http://127.0.0.1:PORT`.
    fn start(self) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let addr = listener.local_addr().expect("the port's address");
        let server = Arc::new(self);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let server = server.clone();
                std::thread::spawn(move || server.answer(conn));
            }
        });
        format!("http://{addr}")
    }

    fn answer(&self, mut conn: TcpStream) {
        let _ = conn.set_nodelay(true);
        let Some(path) = read_request(&mut conn) else {
            return;
        };
        // A client that goes away mid-answer ends the connection; nothing to report.
        let _ = if path.starts_with("/fast/") {
            conn.write_all(&self.fast)
        } else if path.starts_with("/anthropic/") {
            conn.write_all(&self.anthropic)
        } else {
            self.paced(&mut conn)
        };
    }

    fn paced(&self, conn: &mut TcpStream) -> std::io::Result<()> {
        let n = self.stamps.written.len();
        conn.write_all(head().as_bytes())?;
        let events: Vec<String> = (0..n).map(|i| delta_event(&numbered(i))).collect();
        let start = Instant::now();
        for (i, e) in events.iter().enumerate() {
            let due = start + PACE * (i as u32 + 1);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            self.stamps.written[i].store(now_ns(), Ordering::Relaxed);
            conn.write_all(e.as_bytes())?;
        }
        // Stamped before the write: the consumer may be done before this thread runs again.
        self.stamps.done.store(now_ns(), Ordering::Relaxed);
        conn.write_all(tail(n).as_bytes())?;
        // The body ends when the connection closes: not yet.
        std::thread::sleep(HOLD);
        Ok(())
    }
}

/// Reads a request whole (headers, then `content-length` bytes of body, so that closing the
/// connection afterwards resets nothing); returns its path.
fn read_request(conn: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let got = conn.read(&mut piece).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&piece[..got]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut left = (end + length).saturating_sub(buf.len());
    while left > 0 {
        let got = conn.read(&mut piece).ok().filter(|&n| n > 0)?;
        left = left.saturating_sub(got);
    }
    head.split_whitespace().nth(1).map(str::to_owned)
}

// ---------------------------------------------------------------------------------------------
// The consumers.

/// The provider for the server at `base`, answering from `route` (`fast` or `paced`); no
/// retries, so that a failure shows.
fn provider(base: &str, route: &str) -> OpenAiCompatible {
    match OpenAiCompatible::builder("bench")
        .base_url(format!("{base}/{route}/v1"))
        .max_retries(0)
        .build()
    {
        Ok(m) => m,
        Err(e) => panic!("the provider does not build: {e}"),
    }
}

/// The Anthropic provider for the server at `base`; no retries.
fn anthropic(base: &str) -> Anthropic {
    match Anthropic::builder("bench")
        .base_url(format!("{base}/anthropic"))
        .api_key("bench")
        .max_retries(0)
        .build()
    {
        Ok(m) => m,
        Err(e) => panic!("the provider does not build: {e}"),
    }
}

/// The provider, with the time each latency delta left its stream recorded.
struct Stamped {
    inner: OpenAiCompatible,
    stamps: Arc<Stamps>,
}

impl LanguageModel for Stamped {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let stamps = self.stamps.clone();
        let call = self.inner.stream(request);
        Box::pin(async move {
            let stream = call.await?.inspect(move |item| {
                if let Ok(ChunkKind::TextDelta { text, .. }) = item {
                    stamps.yielded[number_of(text)].store(now_ns(), Ordering::Relaxed);
                }
            });
            Ok(stream.boxed())
        })
    }
}

/// An agent on `model` with `k` (0 or 5) output processors whose stream hooks count the
/// characters and pass every chunk (benches/support's, as in `bench stream`).
fn agent<M: LanguageModel>(model: M, k: usize) -> Arc<dyn AnyAgent> {
    match k {
        0 => Arc::new(processors::agent! { model: model }),
        5 => Arc::new(processors::agent! {
            model: model,
            output: [Count0, Count1, Count2, Count3, Count4],
        }),
        _ => panic!("no agent with k = {k}; the scenarios use 0 and 5"),
    }
}

/// Streams the model's answer to its end; calls `each` with every text delta. Returns the
/// number of deltas.
async fn through_model(model: &dyn LanguageModel, mut each: impl FnMut(&str)) -> usize {
    let mut stream = match model.stream(ModelRequest::default()).await {
        Ok(s) => s,
        Err(e) => panic!("the call failed: {e}"),
    };
    let mut deltas = 0;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ChunkKind::TextDelta { text, .. }) => {
                each(&text);
                deltas += 1;
            }
            Ok(_) => {}
            Err(e) => panic!("the stream failed: {e}"),
        }
    }
    deltas
}

/// Streams the agent's answer to its end through `agent.stream(..)`; calls `each` with every
/// text delta, checks the result and what the `k` counting processors counted. Returns the
/// number of deltas.
async fn through_agent(agent: &dyn AnyAgent, k: usize, mut each: impl FnMut(&str)) -> usize {
    let mut stream = agent.stream_with("go".into(), GenerateOptions::default());
    let (mut deltas, mut chars) = (0, 0);
    while let Some(chunk) = stream.next().await {
        if let Some(text) = chunk.text_delta() {
            each(text);
            deltas += 1;
            chars += text.chars().count();
        }
    }
    match stream.finish().await {
        Ok(r) => assert_eq!(r.text.chars().count(), chars, "the result has every delta"),
        Err(e) => panic!("the run failed: {e}"),
    }
    assert_eq!(
        support::take_counted(),
        k * chars,
        "every processor saw every delta"
    );
    deltas
}

/// A single-threaded Tokio runtime for the consumers (the server has its own threads).
fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("no runtime: {e}"),
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The `q` quantile of sorted nanoseconds, in microseconds.
fn quantile_us(sorted: &[u64], q: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * q).round() as usize;
    round(sorted[at] as f64 / 1e3, 1)
}

// ---------------------------------------------------------------------------------------------
// The scenarios.

fn latency(n: usize) {
    let stamps = Arc::new(Stamps::new(n));
    let base = Server {
        fast: Vec::new(),
        anthropic: Vec::new(),
        stamps: stamps.clone(),
    }
    .start();
    let stamped = || {
        Arc::new(Stamped {
            inner: provider(&base, "paced"),
            stamps: stamps.clone(),
        })
    };
    let bare = stamped();
    // The provider alone, then agents with K processors.
    let configs: [Option<(usize, Arc<dyn AnyAgent>)>; 3] = [
        None,
        Some((0, agent(stamped(), 0))),
        Some((5, agent(stamped(), 5))),
    ];
    let rt = runtime();
    // Per configuration: write → consumer, and provider → consumer, per delta of every round.
    let mut wire: Vec<Vec<u64>> = vec![Vec::new(); configs.len()];
    let mut runner: Vec<Vec<u64>> = vec![Vec::new(); configs.len()];
    // Per configuration: deltas that reached the consumer only after the provider had yielded
    // the next one, although that one arrived at least half a pace later.
    let mut held = vec![0usize; configs.len()];
    // Per configuration: the server's `[DONE]` to the consumer's end of stream, per round.
    let mut ends: Vec<Vec<u64>> = vec![Vec::new(); configs.len()];
    for _ in 0..LATENCY_ROUNDS {
        for (i, c) in configs.iter().enumerate() {
            stamps.reset();
            let record = |text: &str| {
                stamps.received[number_of(text)].store(now_ns(), Ordering::Relaxed);
            };
            let got = rt.block_on(async {
                match c {
                    None => through_model(&*bare, record).await,
                    Some((k, a)) => through_agent(&**a, *k, record).await,
                }
            });
            ends[i].push(now_ns().saturating_sub(stamps.done.load(Ordering::Relaxed)));
            assert_eq!(got, n, "every delta arrived");
            let at = |v: &[AtomicU64], d: usize| v[d].load(Ordering::Relaxed);
            for d in 0..n {
                let (received, yielded) = (at(&stamps.received, d), at(&stamps.yielded, d));
                wire[i].push(received.saturating_sub(at(&stamps.written, d)));
                runner[i].push(received.saturating_sub(yielded));
                if d + 1 < n {
                    let next = at(&stamps.yielded, d + 1);
                    let apart = next.saturating_sub(yielded) >= PACE.as_nanos() as u64 / 2;
                    held[i] += usize::from(apart && received > next);
                }
            }
        }
    }
    let p50s: Vec<f64> = wire
        .iter_mut()
        .map(|w| {
            w.sort_unstable();
            quantile_us(w, 0.5)
        })
        .collect();
    let p99s: Vec<f64> = wire.iter().map(|w| quantile_us(w, 0.99)).collect();
    for (i, c) in configs.iter().enumerate() {
        let r = &mut runner[i];
        r.sort_unstable();
        ends[i].sort_unstable();
        println!(
            "{}",
            json!({
                "scenario": "latency",
                "config": if c.is_some() { "agent" } else { "provider" },
                "k": c.as_ref().map(|(k, _)| k),
                "deltas": wire[i].len(),
                "pace_us": PACE.as_micros() as u64,
                "wire_p50_us": p50s[i],
                "wire_p99_us": p99s[i],
                "wire_max_us": quantile_us(&wire[i], 1.0),
                "added_p50_us": round(p50s[i] - p50s[0], 1),
                "added_p99_us": round(p99s[i] - p99s[0], 1),
                "runner_p50_us": quantile_us(r, 0.5),
                "runner_p99_us": quantile_us(r, 0.99),
                "runner_max_us": quantile_us(r, 1.0),
                "held_until_next_arrival": held[i],
                "end_after_done_p50_us": quantile_us(&ends[i], 0.5),
                "end_after_done_max_us": quantile_us(&ends[i], 1.0),
            })
        );
    }
}

/// A throughput configuration: one run, returning the deltas it saw.
type Job<'a> = Box<dyn FnMut() -> usize + 'a>;

/// One run through `model`, reporting its deltas; `expect` checks the characters that arrived.
fn model_job<'a>(
    rt: &'a tokio::runtime::Runtime,
    model: &'a dyn LanguageModel,
    expect: &'a dyn Fn(usize),
) -> Job<'a> {
    Box::new(move || {
        rt.block_on(async {
            let mut chars = 0;
            let deltas = through_model(model, |t| chars += t.len()).await;
            expect(chars);
            deltas
        })
    })
}

/// One run through `agent` (with `k` counting processors), as [`model_job`].
fn agent_job<'a>(
    rt: &'a tokio::runtime::Runtime,
    agent: &'a dyn AnyAgent,
    k: usize,
    expect: &'a dyn Fn(usize),
) -> Job<'a> {
    Box::new(move || {
        rt.block_on(async {
            let mut chars = 0;
            let deltas = through_agent(agent, k, |t| chars += t.len()).await;
            expect(chars);
            deltas
        })
    })
}

fn throughput(n: usize) {
    let (fast, text) = rendered(n);
    let answer_bytes = fast.len();
    let anthropic_answer = rendered_anthropic(n);
    let anthropic_bytes = anthropic_answer.len();
    let base = Server {
        fast,
        anthropic: anthropic_answer,
        stamps: Arc::new(Stamps::new(0)),
    }
    .start();
    let addr = base.trim_start_matches("http://").to_owned();
    let url = format!("{base}/fast/v1/chat/completions");
    let rt = runtime();
    let model = provider(&base, "fast");
    let anthropic_model = anthropic(&base);
    let agents = [
        agent(provider(&base, "fast"), 0),
        agent(provider(&base, "fast"), 5),
    ];
    // Built after the providers, which install the TLS crypto provider reqwest asks for.
    let client = match reqwest::Client::builder().no_proxy().build() {
        Ok(c) => c,
        Err(e) => panic!("no HTTP client: {e}"),
    };
    let expect_text = |got: usize| assert_eq!(got, text.len(), "the whole text arrived");
    let names = [
        ("socket", None),
        ("reqwest", None),
        ("provider", None),
        ("agent", Some(0)),
        ("agent", Some(5)),
        ("anthropic", None),
    ];
    let mut jobs: Vec<Job<'_>> = vec![
        Box::new(|| {
            rt.block_on(async {
                let mut conn = match tokio::net::TcpStream::connect(&addr).await {
                    Ok(c) => c,
                    Err(e) => panic!("no connection: {e}"),
                };
                let request = "POST /fast/v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-length: 0\r\n\r\n";
                if let Err(e) = conn.write_all(request.as_bytes()).await {
                    panic!("the request was not sent: {e}");
                }
                let mut buf = vec![0u8; 64 * 1024];
                let mut got = 0;
                loop {
                    match conn.read(&mut buf).await {
                        Ok(0) => break,
                        Ok(read) => got += read,
                        Err(e) => panic!("the socket failed: {e}"),
                    }
                }
                assert_eq!(got, answer_bytes, "the whole answer arrived");
                n
            })
        }),
        Box::new(|| {
            rt.block_on(async {
                let mut response = match client.post(&url).body("{}").send().await {
                    Ok(r) => r,
                    Err(e) => panic!("the request failed: {e}"),
                };
                let mut got = 0;
                loop {
                    match response.chunk().await {
                        Ok(Some(piece)) => got += piece.len(),
                        Ok(None) => break,
                        Err(e) => panic!("the body failed: {e}"),
                    }
                }
                assert_eq!(got, answer_bytes - HEADERS.len(), "the whole body arrived");
                n
            })
        }),
        model_job(&rt, &model, &expect_text),
        agent_job(&rt, &*agents[0], 0, &expect_text),
        agent_job(&rt, &*agents[1], 5, &expect_text),
        model_job(&rt, &anthropic_model, &expect_text),
    ];
    for job in jobs.iter_mut() {
        assert_eq!(job(), n, "every delta arrived");
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(ROUNDS); jobs.len()];
    for _ in 0..ROUNDS {
        for (job, t) in jobs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            job();
            t.push(start.elapsed());
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|t| {
            t.sort();
            t[t.len() / 2].as_secs_f64()
        })
        .collect();
    for ((name, k), secs) in names.iter().zip(&medians) {
        // Every configuration reads the OpenAI answer but the Anthropic provider.
        let answer_bytes = match *name {
            "anthropic" => anthropic_bytes,
            _ => answer_bytes,
        };
        println!(
            "{}",
            json!({
                "scenario": "throughput",
                "config": name,
                "k": k,
                "deltas": n,
                "answer_bytes": answer_bytes,
                "text_bytes": text.len(),
                "rounds": ROUNDS,
                "median_ms": round(secs * 1e3, 2),
                "mb_per_sec": round(answer_bytes as f64 / secs / 1e6, 1),
                "deltas_per_sec": round(n as f64 / secs, 0),
                "ns_per_delta": round(secs * 1e9 / n as f64, 1),
                "ratio_to_reqwest": round(secs / medians[1], 3),
                "ratio_to_provider": round(secs / medians[2], 3),
            })
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next();
    let mut n = |default: usize| match args.next().map(|a| a.parse::<usize>()) {
        None => default,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("N is a positive number");
            std::process::exit(2);
        }
    };
    LazyLock::force(&EPOCH);
    match which.as_deref() {
        None => {
            latency(2_000);
            throughput(100_000);
        }
        Some("latency") => latency(n(2_000)),
        Some("throughput") => throughput(n(100_000)),
        Some(other) => {
            eprintln!("unknown scenario `{other}`; use `latency [N]`, `throughput [N]` or nothing");
            std::process::exit(2);
        }
    }
}
