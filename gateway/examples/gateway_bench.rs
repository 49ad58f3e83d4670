//! What the gateway adds to a streamed call, measured side by side in one run:
//!
//! ```text
//! cargo run --release -p processors-gateway --example gateway_bench                 # the gateway alone
//! cargo run --release -p processors-gateway --example gateway_bench -- --litellm "$(bash scripts/litellm-venv.sh)"
//! ```
//!
//! A fast upstream (a process of its own that streams a 20-chunk chat completion at once) is
//! called directly, through a gateway with no processors, through one with five (regex
//! redaction, a token limit, unicode normalising and two processors of this file), and, with
//! `--litellm PATH` (the `litellm` command of a virtualenv with `litellm[proxy]`, which
//! `scripts/litellm-venv.sh` installs from PyPI), through LiteLLM's proxy with no guardrail. Each runs 1, 64 and 512 concurrent streams for a
//! few seconds. For each: requests per second, the time to the first byte and to the end (p50,
//! p99), and what the gateway adds over the direct call. Then the same concurrencies on answers
//! streamed as a model streams them (20 deltas 5 ms apart, each stamped with the time it was
//! sent): how long each delta takes to arrive, directly and through the gateways, below their
//! capacity. Last, the gateway's memory after 1,000 and 10,000 more requests. The table goes to stdout, the figures to
//! `target/gateway-bench.json`.
//!
//! `bench upstream` and `bench serve CONFIG` are the processes the run starts.

use futures::StreamExt;
use processors_config::{Loader, Registry};
use processors_gateway::{Config, Gateway, KeyHash};
use processors_runtime::prelude::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KEY: &str = "pgw-bench-key";
const CHUNKS: usize = 20;
const SECONDS: u64 = 4;
/// The time between two deltas of a paced answer.
const PACE_MS: u64 = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match args.first().map(String::as_str) {
        Some("upstream") => runtime.block_on(upstream()),
        Some("serve") => runtime.block_on(serve(&args[1])),
        _ => {
            let litellm = args
                .iter()
                .position(|a| a == "--litellm")
                .and_then(|i| args.get(i + 1).cloned());
            runtime.block_on(run(litellm))
        }
    }
}

/// The upstream: every chat completion is the same 20 deltas, streamed at once.
async fn upstream() -> Result<(), Box<dyn std::error::Error>> {
    let mut body = String::new();
    for i in 0..CHUNKS {
        let delta = json!({ "content": format!("word{i} ") });
        body.push_str(&format!(
            "data: {}\n\n",
            json!({ "id": "c", "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] })
        ));
    }
    body.push_str(&format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({ "id": "c", "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }),
        json!({ "id": "c", "choices": [], "usage": { "prompt_tokens": 9, "completion_tokens": 20, "total_tokens": 29 } })
    ));
    let body = bytes::Bytes::from(body);
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(move || {
                let body = body.clone();
                async move { ([("content-type", "text/event-stream")], body) }
            }),
        )
        .route("/paced/v1/chat/completions", axum::routing::post(paced));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}", listener.local_addr()?);
    // Each delta is sent as it is written, as a model server sends it.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}

/// A streamed answer as a model gives one: 20 deltas 5 ms apart, each the time it was sent
/// (`t` and microseconds since the epoch), so a reader can tell how long each took to arrive.
async fn paced() -> axum::response::Response {
    use axum::response::IntoResponse;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    tokio::spawn(async move {
        for _ in 0..CHUNKS {
            tokio::time::sleep(Duration::from_millis(PACE_MS)).await;
            let delta = json!({ "content": format!("t{} ", micros_now()) });
            let event = json!({ "id": "c", "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] });
            if tx.send(Ok(format!("data: {event}\n\n"))).await.is_err() {
                return;
            }
        }
        let end =
            json!({ "id": "c", "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] });
        let _ = tx
            .send(Ok(format!("data: {end}\n\ndata: [DONE]\n\n")))
            .await;
    });
    let mut rx = rx;
    let body = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    (
        [("content-type", "text/event-stream")],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}

/// Microseconds since the Unix epoch.
fn micros_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Counts the text that streams through it (one of the two processors of this file).
struct CountChars;

impl Processor for CountChars {
    type State = usize;
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    fn id(&self) -> &str {
        "count-chars"
    }
    async fn process_output_stream(
        &self,
        a: OutputStreamArgs<'_, usize>,
    ) -> Result<StreamAction, ProcessorError> {
        if let Some(t) = a.chunk.text_delta() {
            *a.state += t.len();
        }
        Ok(StreamAction::Pass)
    }
}

/// Refuses a prompt that names a forbidden word (the other).
struct Forbid;

impl Processor for Forbid {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    fn id(&self) -> &str {
        "forbid"
    }
    async fn process_input(&self, a: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        if a.messages.iter().any(|m| m.text().contains("forbidden")) {
            return Err(a.abort().reason("a forbidden word").into());
        }
        Ok(InputOutcome::Unchanged)
    }
}

/// The options of this file's processors: none.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

/// A gateway with this file's two processors registered.
async fn serve(config: &str) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_path(config)?;
    let registry = Registry::new()
        .register_with("count-chars", |_: NoOptions| Ok::<_, String>(CountChars))
        .register_with("forbid", |_: NoOptions| Ok::<_, String>(Forbid));
    let gateway = Gateway::with(&config, &Loader::new().registry(registry), &|_| None).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}", listener.local_addr()?);
    gateway.serve(listener, std::future::pending()).await?;
    Ok(())
}

/// A child process, killed when dropped, and the URL it printed.
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

impl Process {
    fn start(mut command: Command, marker: &str) -> Result<Process, Box<dyn std::error::Error>> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(i) = line.find(marker) {
                        break line[i + marker.len()..].trim().to_owned();
                    }
                }
                _ => return Err("the process exited before it listened".into()),
            }
        };
        // Keep draining its output so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Ok(Process { child, url })
    }

    /// Starts a server that prints nothing useful, and waits until `url` answers `health`
    /// (three minutes at most).
    async fn start_and_wait(
        mut command: Command,
        url: &str,
        health: &str,
    ) -> Result<Process, Box<dyn std::error::Error>> {
        let log = std::fs::File::create("target/gateway-bench/server.log")?;
        let child = command.stdout(log.try_clone()?).stderr(log).spawn()?;
        let process = Process {
            child,
            url: url.to_owned(),
        };
        let client = reqwest::Client::new();
        let until = Instant::now() + Duration::from_secs(180);
        while Instant::now() < until {
            if let Ok(r) = client.get(format!("{url}{health}")).send().await
                && r.status().is_success()
            {
                return Ok(process);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(format!(
            "{url} did not answer within three minutes; see target/gateway-bench/server.log"
        )
        .into())
    }

    /// Its resident memory and peak, in KiB (Linux).
    fn memory(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }
}

fn gateway_config(upstream: &str, policy: &str) -> String {
    format!(
        "request_timeout_ms = 60000\n\n[upstreams.up]\nprotocol = \"openai\"\nbase_url = \"{upstream}/v1\"\nmax_retries = 0\n\n[upstreams.paced]\nprotocol = \"openai\"\nbase_url = \"{upstream}/paced/v1\"\nmax_retries = 0\n\n[models.bench]\nupstream = \"up\"\nmodel = \"fake\"\npolicy = \"p\"\n\n[models.paced]\nupstream = \"paced\"\nmodel = \"fake\"\npolicy = \"p\"\n\n[[keys]]\nname = \"bench\"\nsha256 = \"{}\"\n\n[policies.p]\n{policy}\n",
        KeyHash::of(KEY)
    )
}

const FIVE: &str = r#"input = ["unicode-normalizer", { processor = "token-limiter", limit = 100000, tokenizer = "estimate" }, "forbid"]
output = [{ processor = "regex-filter", presets = ["pii"] }, "count-chars"]"#;

/// One request's times.
struct Sample {
    first_byte: Duration,
    total: Duration,
}

/// Streams `model`'s answers from `url`: `concurrency` clients, each sending one request
/// after another for `seconds`; `read` makes a sample of each response (given when its
/// request was sent), or none when it failed.
async fn closed_loop<T, F, Fut>(
    url: &str,
    concurrency: usize,
    seconds: u64,
    model: &str,
    read: F,
) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Instant, reqwest::Response) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Option<T>> + Send,
{
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("a client");
    let body = json!({
        "model": model,
        "stream": true,
        "messages": [{ "role": "user", "content": "Say twenty words." }],
    })
    .to_string();
    let end = Instant::now() + Duration::from_secs(seconds);
    let workers = (0..concurrency).map(|_| {
        let (client, body, url, read) =
            (client.clone(), body.clone(), url.to_owned(), read.clone());
        tokio::spawn(async move {
            let mut samples = Vec::new();
            while Instant::now() < end {
                let started = Instant::now();
                let response = client
                    .post(&url)
                    .bearer_auth(KEY)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await;
                let Ok(response) = response else { continue };
                samples.extend(read(started, response).await);
            }
            samples
        })
    });
    let mut all = Vec::new();
    for worker in futures::future::join_all(workers).await {
        all.extend(worker.unwrap_or_default());
    }
    all
}

/// Times each answer's first byte and end, under load.
async fn load(url: &str, concurrency: usize, seconds: u64, model: &str) -> Vec<Sample> {
    closed_loop(
        url,
        concurrency,
        seconds,
        model,
        |started, response| async move {
            let mut stream = response.bytes_stream();
            let mut first_byte = None;
            while let Some(piece) = stream.next().await {
                piece.ok()?;
                first_byte.get_or_insert_with(|| started.elapsed());
            }
            Some(Sample {
                first_byte: first_byte?,
                total: started.elapsed(),
            })
        },
    )
    .await
}

/// The latencies of paced answers' deltas: of each first delta, and of every delta.
#[derive(Default)]
struct Latencies {
    first: Vec<Duration>,
    every: Vec<Duration>,
}

/// Streams paced answers, `concurrency` at a time, for `seconds`, timing each delta from
/// its sending to its arrival.
async fn paced_load(url: &str, concurrency: usize, seconds: u64, model: &str) -> Latencies {
    let answers = closed_loop(url, concurrency, seconds, model, |_, response| async move {
        let mut out = Latencies::default();
        let mut stream = response.bytes_stream();
        let mut pending = String::new();
        while let Some(Ok(piece)) = stream.next().await {
            let now = micros_now();
            pending.push_str(&String::from_utf8_lossy(&piece));
            while let Some(at) = pending.find("\n\n") {
                let event: String = pending.drain(..at + 2).collect();
                for sent in sent_times(&event) {
                    let latency = Duration::from_micros(now.saturating_sub(sent));
                    if out.first.is_empty() {
                        out.first.push(latency);
                    }
                    out.every.push(latency);
                }
            }
        }
        Some(out)
    })
    .await;
    let mut all = Latencies::default();
    for answer in answers {
        all.first.extend(answer.first);
        all.every.extend(answer.every);
    }
    all
}

/// The sending times a paced answer's event carries (`t` and microseconds).
fn sent_times(event: &str) -> Vec<u64> {
    event
        .split('t')
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (digits.len() >= 15).then(|| digits.parse().ok()).flatten()
        })
        .collect()
}

fn percentile(values: &mut [Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort_unstable();
    let i = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[i]
}

/// One target's figures at one concurrency.
struct Figures {
    rps: f64,
    first_p50: Duration,
    first_p99: Duration,
    total_p50: Duration,
    total_p99: Duration,
}

fn figures(samples: &[Sample], seconds: u64) -> Figures {
    let mut first: Vec<Duration> = samples.iter().map(|s| s.first_byte).collect();
    let mut total: Vec<Duration> = samples.iter().map(|s| s.total).collect();
    Figures {
        rps: samples.len() as f64 / seconds as f64,
        first_p50: percentile(&mut first, 0.5),
        first_p99: percentile(&mut first, 0.99),
        total_p50: percentile(&mut total, 0.5),
        total_p99: percentile(&mut total, 0.99),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn run(litellm: Option<String>) -> Result<(), Box<dyn std::error::Error>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let me = std::env::current_exe()?;
    let dir = std::path::PathBuf::from("target/gateway-bench");
    std::fs::create_dir_all(&dir)?;
    let upstream = Process::start(
        {
            let mut c = Command::new(&me);
            c.arg("upstream");
            c
        },
        "listening on ",
    )?;
    let mut targets: Vec<(&str, Process, &str)> = Vec::new();
    for (name, policy) in [
        ("gateway, no processors", ""),
        ("gateway, five processors", FIVE),
    ] {
        let file = dir.join(format!("{}.toml", name.len()));
        std::fs::write(&file, gateway_config(&upstream.url, policy))?;
        let mut c = Command::new(&me);
        c.arg("serve").arg(&file);
        targets.push((name, Process::start(c, "listening on ")?, "bench"));
    }
    if let Some(litellm) = &litellm {
        let file = dir.join("litellm.yaml");
        std::fs::write(
            &file,
            format!(
                "model_list:\n  - model_name: bench\n    litellm_params:\n      model: openai/fake\n      api_base: {}/v1\n      api_key: none\n",
                upstream.url
            ),
        )?;
        let port = 18000 + (std::process::id() % 1000);
        let mut c = Command::new(litellm);
        c.arg("--config")
            .arg(&file)
            .args(["--port", &port.to_string(), "--num_workers", "1"])
            .env("LITELLM_MASTER_KEY", KEY)
            .env("LITELLM_LOG", "ERROR")
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
        let url = format!("http://127.0.0.1:{port}");
        let process = Process::start_and_wait(c, &url, "/health/liveliness").await?;
        targets.push(("LiteLLM proxy, no guardrail", process, "bench"));
    }
    // Warm every target up.
    for (_, process, model) in &targets {
        load(&format!("{}/v1/chat/completions", process.url), 4, 1, model).await;
    }
    let mut json_rows = Vec::new();
    println!(
        "| target | streams | req/s | first byte p50 / p99 (ms) | end p50 / p99 (ms) | added first byte p50 / p99 (ms) |"
    );
    println!("|---|---|---|---|---|---|");
    for concurrency in [1, 64, 512] {
        let direct = figures(
            &load(
                &format!("{}/v1/chat/completions", upstream.url),
                concurrency,
                SECONDS,
                "fake",
            )
            .await,
            SECONDS,
        );
        let mut rows = vec![("upstream, direct", direct)];
        for (name, process, model) in &targets {
            let url = format!("{}/v1/chat/completions", process.url);
            rows.push((
                name,
                figures(&load(&url, concurrency, SECONDS, model).await, SECONDS),
            ));
        }
        let base = (rows[0].1.first_p50, rows[0].1.first_p99);
        for (name, f) in &rows {
            let added = (ms(f.first_p50) - ms(base.0), ms(f.first_p99) - ms(base.1));
            println!(
                "| {name} | {concurrency} | {:.0} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} |",
                f.rps,
                ms(f.first_p50),
                ms(f.first_p99),
                ms(f.total_p50),
                ms(f.total_p99),
                added.0,
                added.1
            );
            json_rows.push(json!({
                "target": name, "streams": concurrency, "rps": f.rps,
                "first_byte_ms": { "p50": ms(f.first_p50), "p99": ms(f.first_p99) },
                "end_ms": { "p50": ms(f.total_p50), "p99": ms(f.total_p99) },
                "added_first_byte_ms": { "p50": added.0, "p99": added.1 },
            }));
        }
    }
    // Latency under answers streamed as a model streams them: what each delta's way
    // through the gateway adds, below its capacity.
    println!();
    println!(
        "| target | streams | first delta p50 / p99 (ms) | every delta p50 / p99 (ms) | added: first delta p50 / p99, every delta p50 / p99 (ms) |"
    );
    println!("|---|---|---|---|---|");
    let mut paced_rows = Vec::new();
    for concurrency in [1, 64, 512] {
        let direct = paced_load(
            &format!("{}/paced/v1/chat/completions", upstream.url),
            concurrency,
            SECONDS,
            "fake",
        )
        .await;
        let mut rows = vec![("upstream, direct".to_owned(), direct)];
        for (name, process, _) in &targets[..2] {
            let url = format!("{}/v1/chat/completions", process.url);
            rows.push((
                (*name).to_owned(),
                paced_load(&url, concurrency, SECONDS, "paced").await,
            ));
        }
        let mut stats = Vec::new();
        for (name, mut l) in rows {
            let f = [
                percentile(&mut l.first, 0.5),
                percentile(&mut l.first, 0.99),
                percentile(&mut l.every, 0.5),
                percentile(&mut l.every, 0.99),
            ];
            stats.push((name, f));
        }
        let base = stats[0].1;
        for (name, f) in &stats {
            let added: Vec<f64> = f.iter().zip(base).map(|(a, b)| ms(*a) - ms(b)).collect();
            println!(
                "| {name} | {concurrency} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3}, {:.3} / {:.3} |",
                ms(f[0]),
                ms(f[1]),
                ms(f[2]),
                ms(f[3]),
                added[0],
                added[1],
                added[2],
                added[3]
            );
            paced_rows.push(json!({
                "target": name, "streams": concurrency,
                "first_delta_ms": { "p50": ms(f[0]), "p99": ms(f[1]) },
                "every_delta_ms": { "p50": ms(f[2]), "p99": ms(f[3]) },
                "added_ms": { "first_p50": added[0], "first_p99": added[1], "every_p50": added[2], "every_p99": added[3] },
            }));
        }
    }
    // Memory across 10,000 requests, through the gateway with five processors.
    let (_, five, model) = &targets[1];
    let url = format!("{}/v1/chat/completions", five.url);
    let mut memory = Vec::new();
    let mut done = 0usize;
    for goal in [1_000usize, 10_000] {
        while done < goal {
            done += requests(&url, 64, goal - done, model).await;
        }
        if let Some((rss, peak)) = five.memory() {
            println!(
                "gateway with five processors after {done} more requests: {rss} KiB resident, peak {peak} KiB"
            );
            memory.push(json!({ "requests": done, "rss_kib": rss, "peak_kib": peak }));
        }
    }
    let out = json!({
        "chunks": CHUNKS, "seconds": SECONDS, "pace_ms": PACE_MS,
        "rows": json_rows, "paced": paced_rows, "memory": memory,
    });
    std::fs::write(
        "target/gateway-bench.json",
        serde_json::to_string_pretty(&out)?,
    )?;
    println!("figures written to target/gateway-bench.json");
    drop(upstream);
    Ok(())
}

/// Sends `count` streamed requests, `concurrency` at a time; returns how many completed.
async fn requests(url: &str, concurrency: usize, count: usize, model: &str) -> usize {
    let client = reqwest::Client::new();
    let body: Value = json!({
        "model": model, "stream": true,
        "messages": [{ "role": "user", "content": "Say twenty words." }],
    });
    futures::stream::iter(0..count)
        .map(|_| {
            let client = client.clone();
            let body = body.clone();
            async move {
                let Ok(response) = client.post(url).bearer_auth(KEY).json(&body).send().await
                else {
                    return 0;
                };
                usize::from(response.bytes().await.is_ok())
            }
        })
        .buffer_unordered(concurrency)
        .fold(0, |n, ok| async move { n + ok })
        .await
}
