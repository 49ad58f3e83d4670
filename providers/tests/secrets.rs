//! A known API key never shows: not in `Debug` output, not in errors (even when the server
//! echoes the request's headers back), not in trace events; and it goes only to the base URL
//! (a redirect is not followed).

mod common;

use common::*;
use futures::StreamExt;
use processors_providers::{
    Anthropic, OpenAiCompatible, OpenAiEmbeddings, RetryPolicy, Timeouts, resolve_with_env,
};
use processors_runtime::message::Message;
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest};
use processors_runtime::prelude::*;
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

const KEY: &str = "sk-test-KNOWN-SECRET-1234";

/// Fails when `text` holds the key.
fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(KEY), "the key shows in {what}: {text}");
}

/// Every trace event and span of the test binary, at every level, as text.
fn traces() -> Arc<Mutex<Vec<u8>>> {
    static TRACES: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    TRACES
        .get_or_init(|| {
            let buffer = Arc::new(Mutex::new(Vec::new()));
            let writer = Buffer(buffer.clone());
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
                .with_writer(move || writer.clone())
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
            buffer
        })
        .clone()
}

#[derive(Clone)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn openai(base: &str) -> OpenAiCompatible {
    OpenAiCompatible::builder("m")
        .base_url(format!("{base}/v1"))
        .api_key(KEY)
        .timeouts(fast_timeouts())
        .retry(fast_retry())
        .build()
        .unwrap()
}

fn anthropic(base: &str) -> Anthropic {
    Anthropic::builder("claude")
        .base_url(base)
        .api_key(KEY)
        .timeouts(fast_timeouts())
        .retry(fast_retry())
        .build()
        .unwrap()
}

fn request() -> ModelRequest {
    ModelRequest {
        prompt: vec![Message::user("hi")],
        ..ModelRequest::default()
    }
}

/// The error a call ends with, before or after its stream started.
async fn failure(model: &dyn LanguageModel) -> ApiError {
    match model.stream(request()).await {
        Err(e) => e,
        Ok(stream) => collect_error(stream).await.1,
    }
}

/// Fails when the error shows the key anywhere: message, body, `Display`, `Debug`.
fn assert_error_clean(what: &str, e: &ApiError) {
    assert_clean(what, &e.to_string());
    assert_clean(what, &format!("{e:?}"));
}

#[test]
fn debug_output_of_every_builder_and_provider_redacts_the_key_and_credential_headers() {
    let openai = OpenAiCompatible::builder("m")
        .api_key(KEY)
        .header("api-key", KEY)
        .header("x-goog-api-key", KEY)
        .header("x-auth-token", format!("Bearer {KEY}"))
        .header("x-request-source", "tests");
    let anthropic = Anthropic::builder("claude")
        .api_key(KEY)
        .header("cookie", format!("session={KEY}"));
    let embeddings = OpenAiEmbeddings::builder("e").api_key(KEY);
    let shown = [
        format!("{openai:?}"),
        format!("{:?}", openai.clone().build().unwrap()),
        format!("{anthropic:?}"),
        format!("{:?}", anthropic.clone().build().unwrap()),
        format!("{embeddings:?}"),
        format!("{:?}", embeddings.clone().build().unwrap()),
        format!("{:#?}", openai.clone().build().unwrap()),
        format!("{:?}", Timeouts::default()),
        format!("{:?}", RetryPolicy::default()),
    ];
    for text in &shown {
        assert_clean("Debug output", text);
    }
    assert!(shown[0].contains("<redacted>"), "{}", shown[0]);
    assert!(
        shown[0].contains("x-request-source") && shown[0].contains("tests"),
        "other headers still show: {}",
        shown[0]
    );
}

/// Every error class, the server quoting the key back in each, through both providers and
/// the embeddings client; then through an agent that retries. Neither the errors nor a trace
/// event at any level shows the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_traces_never_show_the_key_even_when_the_server_echoes_it() {
    let traces = traces();
    let quoted = format!("invalid key {KEY}");
    let openai_faults = vec![
        Reply::Echo(400),
        Reply::Echo(401),
        Reply::Echo(500),
        Reply::Echo(502),
        Reply::Echo(503),
        Reply::json(json!({ "error": { "message": quoted, "type": "server_error" } })),
        Reply::json(json!({ "error": { "message": quoted, "type": "server_error" } })),
        Reply::json(json!({ "error": { "message": quoted, "type": "server_error" } })),
        Reply::Events(format!(
            "data: {{\"choices\": [{{\"delta\": {{\"content\": \"x\"}}}}]}}\n\ndata: {{\"error\": {{\"message\": \"{quoted}\", \"code\": 401}}}}\n\n"
        )),
        Reply::Events(format!("data: not json {KEY}\n\n")),
        Reply::json_error(307, json!({}))
            .header("location", &format!("http://elsewhere.invalid/?key={KEY}")),
    ];
    let anthropic_faults = vec![
        Reply::Echo(400),
        Reply::Echo(529),
        Reply::Echo(529),
        Reply::Echo(529),
        Reply::Events(format!(
            "event: error\ndata: {{\"type\": \"error\", \"error\": {{\"type\": \"authentication_error\", \"message\": \"{quoted}\"}}}}\n\n"
        )),
        Reply::Events(format!("event: message_start\ndata: {{{KEY}\n\n")),
    ];
    let mut errors = Vec::new();
    let server = Server::start(openai_faults).await;
    let model = openai(&server.url(""));
    // 400, 401, 500 × 3 (exhausted), then the 200 error objects × 3 (exhausted), a stream
    // error event, bad event data, a redirect.
    for _ in 0..7 {
        errors.push(failure(&model).await);
    }
    assert_eq!(server.accepted(), 11);
    let server = Server::start(anthropic_faults).await;
    let model = anthropic(&server.url(""));
    for _ in 0..4 {
        errors.push(failure(&model).await);
    }
    assert_eq!(server.accepted(), 6);

    let server = Server::start([Reply::Echo(400), Reply::Echo(500), Reply::Echo(500)]).await;
    let embeddings = OpenAiEmbeddings::builder("e")
        .base_url(server.url("/v1"))
        .api_key(KEY)
        .timeouts(fast_timeouts())
        .retry(fast_retry().max_retries(1))
        .build()
        .unwrap();
    for _ in 0..2 {
        errors.push(embeddings.embed(&["a".to_owned()]).await.unwrap_err());
    }

    // Nothing listens here: a connection failure, retried.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    errors.push(failure(&openai(&closed)).await);

    for e in &errors {
        assert_error_clean("an error", e);
    }
    let redacted = errors
        .iter()
        .filter(|e| format!("{e:?}").contains("<redacted>"))
        .count();
    assert_eq!(
        redacted,
        errors.len() - 1,
        "each error but the connection failure quoted the key: {errors:#?}"
    );

    // Through an agent: its error processors, its retry of the call and the run's spans see
    // the error too.
    let server = Server::start([Reply::Echo(401), Reply::Echo(401)]).await;
    let retry_once = api_error_fn("retry-once", |a: &mut ApiErrorArgs<'_, ()>| {
        if a.retry_count == 0 {
            ApiErrorAction::Retry
        } else {
            ApiErrorAction::Unhandled
        }
    });
    let agent = Agent::builder()
        .model(openai(&server.url("")))
        .error(retry_once)
        .build()
        .unwrap();
    let mut stream = agent.stream("hi");
    while stream.next().await.is_some() {}
    let e = stream.finish().await.unwrap_err();
    assert_clean("the agent's error", &format!("{e} {e:?}"));

    let traces = String::from_utf8_lossy(&traces.lock().unwrap()).into_owned();
    assert!(
        traces.contains("retrying the provider call"),
        "the provider's retries were traced:\n{traces}"
    );
    assert!(
        traces.contains("retrying the model call after an API error"),
        "the agent's retry was traced:\n{traces}"
    );
    assert!(traces.contains("<redacted>"), "the errors were traced");
    assert_clean("the traces", &traces);
}

#[tokio::test]
async fn a_redirect_to_another_server_is_not_followed_and_names_its_target() {
    let other = Server::start([Reply::Events(String::new()), Reply::Events(String::new())]).await;
    let target = other.url("/v1/steal");
    let redirect = || Reply::json_error(307, json!({})).header("location", &target);
    let server = Server::start([redirect(), redirect()]).await;
    let errors = [
        failure(&openai(&server.url(""))).await,
        failure(&anthropic(&server.url(""))).await,
    ];
    for e in &errors {
        assert_eq!(e.status, Some(307));
        assert!(!e.retryable);
        assert!(
            e.message.contains(&format!("redirecting to {target}")) || e.message.contains(&target),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("redirects are not followed"),
            "{}",
            e.message
        );
    }
    assert_eq!(server.accepted(), 2, "not retried");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(other.accepted(), 0, "the other server got no request");
    assert!(
        other
            .requests()
            .iter()
            .all(|r| r.header("authorization").is_none() && r.header("x-api-key").is_none())
    );
}

#[tokio::test]
async fn a_base_url_from_the_environment_is_used_as_given_and_gets_the_key() {
    let server = Server::start([Reply::Echo(400)]).await;
    let base = server.url("/proxy/v1");
    let env = |name: &str| match name {
        "OPENAI_API_KEY" => Some(KEY.to_owned()),
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    };
    let model = resolve_with_env("openai/m", env).unwrap();
    let e = failure(&*model).await;
    assert_error_clean("the error", &e);
    let requests = server.requests();
    assert_eq!(requests[0].path, "/proxy/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}
