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

/// A collector on loopback that keeps the body of every request and answers 200, closing the
/// connection.
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
                // One request per connection: the exporter's next export (the batch exporter
                // may send a run's spans in two) comes on a new one, which the loop accepts.
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
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

/// Runs `f` under the exporter's subscriber, one test at a time. `tracing` caches whether a
/// callsite is enabled once for the whole process; with each test's subscriber scoped to its
/// own thread, two tests running at once could leave a span of one unrecorded (the model
/// call's, one run in about ten). Serialised, and with the cache rebuilt under the
/// subscriber, every callsite asks this one.
fn traced<T>(otel: &Otel, f: impl FnOnce() -> T) -> T {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    tracing::subscriber::with_default(otel.subscriber(), || {
        tracing::callsite::rebuild_interest_cache();
        f()
    })
}

fn has(haystack: &[u8], needle: &str) -> bool {
    find(haystack, needle.as_bytes())
}

fn find(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether the export holds a span named `name`: the OTLP protobuf encodes a span's name as
/// field 5, length-delimited (tag byte 0x2a, then the length), which no attribute value
/// containing the same text matches.
fn has_span(body: &[u8], name: &str) -> bool {
    let len = u8::try_from(name.len()).expect("a short name");
    let mut encoded = vec![0x2a, len];
    encoded.extend_from_slice(name.as_bytes());
    find(body, &encoded)
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
    let result = traced(&otel, || futures::executor::block_on(agent.generate("hi"))).unwrap();
    assert_eq!(result.text, "SUNNY TODAY");
    otel.shutdown().unwrap();

    let (requests, body) = collector.received();
    assert!(
        requests.iter().all(|l| l.starts_with("POST /v1/traces")),
        "{requests:?}"
    );
    for span in ["agent.run", "agent.step", "chat gpt-test", "processor"] {
        assert!(has_span(&body, span), "no span `{span}` was exported");
    }
    for name in [
        "weather-desk",
        "forecaster",
        "process_output_result",
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.response.finish_reasons",
    ] {
        assert!(has(&body, name), "`{name}` was not exported");
    }
}

#[test]
fn the_conversations_text_never_leaves_the_process_only_what_processors_did_to_it() {
    let collector = Collector::start();
    let otel = Otel::http(&collector.url, "key-desk").unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "your key is ",
            "sk-live-4242",
            " keep it",
        ])]))
        .output(Probe::new("redact").stream(|a| {
            Ok(match a.chunk.text_delta() {
                Some(t) if t.starts_with("sk-") => {
                    a.chunk.clone().map_text(|_| "[key]".to_owned()).into()
                }
                _ => StreamAction::Pass,
            })
        }))
        .build()
        .unwrap();
    let result = traced(&otel, || {
        futures::executor::block_on(agent.generate("my key?"))
    })
    .unwrap();
    assert_eq!(result.text, "your key is [key] keep it");
    otel.shutdown().unwrap();

    let (_, body) = collector.received();
    // The stream summary says what the processor did...
    assert!(has(&body, "stream hook calls of the step"));
    assert!(has(&body, "redact"));
    // ...and no chunk event carried the text through, before or after redaction.
    for text in ["sk-live-4242", "your key is", "keep it"] {
        assert!(!has(&body, text), "`{text}` was exported");
    }
}
