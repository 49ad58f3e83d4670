//! OpenTelemetry export (feature `otel`): a run's spans reach an OTLP/HTTP collector with the
//! GenAI attribute names. Run with `cargo test --features otel --test otel`.
#![cfg(feature = "otel")]

mod common;

use common::*;
use processors::otel::Otel;
use processors::prelude::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// Each request's first line and body.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A collector on loopback that keeps the body of every request and answers 200.
struct Collector {
    url: String,
    bodies: Received,
}

impl Collector {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let bodies: Received = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
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
                kept.lock()
                    .unwrap()
                    .push((request_line.trim().to_owned(), body));
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                );
            }
        });
        Collector { url, bodies }
    }

    /// Every body received, concatenated.
    fn received(&self) -> (Vec<String>, Vec<u8>) {
        let bodies = self.bodies.lock().unwrap();
        let lines = bodies.iter().map(|(l, _)| l.clone()).collect();
        let all = bodies.iter().flat_map(|(_, b)| b.clone()).collect();
        (lines, all)
    }
}

fn has(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_runs_spans_reach_the_collector_with_genai_attributes() {
    let collector = Collector::start();
    let otel = Otel::http(&collector.url, "weather-desk").unwrap();
    let agent = Agent::builder()
        .name("forecaster")
        .model(
            ScriptedModel::new([Turn::deltas(["sunny", " today"]).usage(12, 3)]).named("gpt-test"),
        )
        .output(Probe::new("upper").stream(upper))
        .build()
        .unwrap();
    let result = tracing::subscriber::with_default(otel.subscriber(), || {
        futures::executor::block_on(agent.generate("hi"))
    })
    .unwrap();
    assert_eq!(result.text, "SUNNY TODAY");
    otel.shutdown().unwrap();

    let (requests, body) = collector.received();
    assert!(
        requests.iter().all(|l| l.starts_with("POST /v1/traces")),
        "{requests:?}"
    );
    for name in [
        "agent.run",
        "agent.step",
        "chat",
        "processor",
        "weather-desk",
        "forecaster",
        "gen_ai.operation.name",
        "gen_ai.request.model",
        "gpt-test",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.response.finish_reasons",
    ] {
        assert!(has(&body, name), "`{name}` was not exported");
    }
}
