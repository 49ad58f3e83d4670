//! The real `OpenAiCompatible` and `Anthropic` clients against a server that misbehaves: resets,
//! stalls, rate limits, overloads, error events, truncated and endless bodies, a byte at a
//! time, broken HTTP and TLS. Each case checks that the call ends within its timeouts with the
//! right error class, that retries are bounded (connections counted at the server), and, through
//! an agent, that a retried answer reaches the client once.

mod common;

use common::*;
use futures::StreamExt;
use processors_providers::{Anthropic, OpenAiCompatible, RetryPolicy, Timeouts};
use processors_runtime::chunk::{ChunkKind, FinishReason};
use processors_runtime::message::Message;
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest};
use processors_runtime::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The two protocols, each with the events of its answers.
#[derive(Debug, Clone, Copy)]
enum Api {
    OpenAi,
    Anthropic,
}

const APIS: [Api; 2] = [Api::OpenAi, Api::Anthropic];

impl Api {
    fn model_at(
        self,
        base: &str,
        timeouts: Timeouts,
        retry: RetryPolicy,
    ) -> Arc<dyn LanguageModel> {
        match self {
            Api::OpenAi => Arc::new(
                OpenAiCompatible::builder("test-model")
                    .base_url(format!("{base}/v1"))
                    .api_key("sk-test")
                    .timeouts(timeouts)
                    .retry(retry)
                    .build()
                    .unwrap(),
            ),
            Api::Anthropic => Arc::new(
                Anthropic::builder("claude-test")
                    .base_url(base)
                    .api_key("sk-ant-test")
                    .timeouts(timeouts)
                    .retry(retry)
                    .build()
                    .unwrap(),
            ),
        }
    }

    /// The model on `server`, with the fixture's short timeouts and two quick retries.
    fn model(self, server: &Server) -> Arc<dyn LanguageModel> {
        self.model_at(&server.url(""), fast_timeouts(), fast_retry())
    }

    /// The events before the first text, then one text delta: the start of an answer.
    fn partial(self, text: &str) -> String {
        match self {
            Api::OpenAi => data_events(&[
                json!({ "choices": [{ "index": 0, "delta": { "role": "assistant", "content": "" }, "finish_reason": null }] }),
                json!({ "choices": [{ "index": 0, "delta": { "content": text }, "finish_reason": null }] }),
            ]),
            Api::Anthropic => anthropic_events(&[
                json!({ "type": "message_start", "message": { "id": "msg_1", "type": "message", "role": "assistant",
                    "content": [], "model": "claude-test", "usage": { "input_tokens": 3, "output_tokens": 1 } } }),
                json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
                json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": text } }),
            ]),
        }
    }

    /// A whole answer of these text pieces.
    fn answer(self, pieces: &[&str]) -> String {
        let (first, rest) = pieces.split_first().expect("at least one piece");
        let mut body = self.partial(first);
        match self {
            Api::OpenAi => {
                let mut events: Vec<Value> = rest
                    .iter()
                    .map(|p| json!({ "choices": [{ "index": 0, "delta": { "content": p }, "finish_reason": null }] }))
                    .collect();
                events.push(
                    json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }),
                );
                body += &data_events(&events);
                body += "data: [DONE]\n\n";
            }
            Api::Anthropic => {
                let mut events: Vec<Value> = rest
                    .iter()
                    .map(|p| json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": p } }))
                    .collect();
                events.push(json!({ "type": "content_block_stop", "index": 0 }));
                events.push(json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" }, "usage": { "output_tokens": 4 } }));
                events.push(json!({ "type": "message_stop" }));
                body += &anthropic_events(&events);
            }
        }
        body
    }

    /// The provider's overload error as an event of the stream.
    fn overload_event(self) -> String {
        match self {
            Api::OpenAi => data_events(&[
                json!({ "error": { "message": "The server is overloaded", "type": "server_error" } }),
            ]),
            Api::Anthropic => anthropic_events(&[
                json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
            ]),
        }
    }
}

/// Named events, as the messages API sends them.
fn anthropic_events(items: &[Value]) -> String {
    items
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

fn request() -> ModelRequest {
    ModelRequest {
        prompt: vec![Message::user("hi")],
        ..ModelRequest::default()
    }
}

/// Fails the test when `work` takes longer than `bound`: nothing here may hang.
async fn bounded<T>(bound: Duration, work: impl Future<Output = T>) -> T {
    tokio::time::timeout(bound, work)
        .await
        .unwrap_or_else(|_| panic!("hung: still running after {bound:?}"))
}

/// The error a call ends with, before or after its stream started, and the text before it.
async fn failure(model: &dyn LanguageModel) -> (String, ApiError) {
    match model.stream(request()).await {
        Err(e) => (String::new(), e),
        Ok(stream) => {
            let (chunks, e) = collect_error(stream).await;
            (text_of(&chunks), e)
        }
    }
}

/// Asks for another model call after any retryable provider error, as a recovery processor
/// would.
struct RetryRetryable;

impl Processor for RetryRetryable {
    type State = ();
    const HOOKS: Hooks = Hooks::API_ERROR;

    fn id(&self) -> &str {
        "retry-retryable"
    }

    async fn process_api_error(
        &self,
        args: ApiErrorArgs<'_, ()>,
    ) -> Result<ApiErrorAction, ProcessorError> {
        Ok(if args.error.retryable {
            ApiErrorAction::Retry
        } else {
            ApiErrorAction::Unhandled
        })
    }
}

impl ErrorProcessor for RetryRetryable {}

/// What a client of the agent's stream sees.
struct Seen {
    /// Every text delta, in order.
    all_text: String,
    /// The text a client shows with `AnswerText` (a retried attempt's text taken back).
    shown: String,
    /// The `step-finish` reasons, in order.
    step_reasons: Vec<FinishReason>,
    result: Result<GenerateResult, AgentError>,
}

/// Streams one run of an agent over `model`, retrying retryable provider errors when asked.
async fn stream_agent(model: Arc<dyn LanguageModel>, retry: bool) -> Seen {
    let builder = Agent::builder().shared_model(model);
    let agent = if retry {
        builder.error(RetryRetryable).build().unwrap()
    } else {
        builder.build().unwrap()
    };
    let mut stream = agent.stream("hi");
    let (mut all_text, mut shown) = (String::new(), AnswerText::new());
    let mut step_reasons = Vec::new();
    while let Some(chunk) = stream.next().await {
        shown.apply(&chunk);
        match &chunk.kind {
            ChunkKind::TextDelta { text, .. } => all_text.push_str(text),
            ChunkKind::StepFinish { finish_reason, .. } => step_reasons.push(*finish_reason),
            _ => {}
        }
    }
    Seen {
        all_text,
        shown: shown.into_string(),
        step_reasons,
        result: stream.finish().await,
    }
}

// ---------------------------------------------------------------------------------------------
// Faults after part of the answer arrived: the provider reports them and does not call again
// (the text already went out); the agent's error processors may.

/// A fault that strikes after the text "Hel" of an answer.
#[derive(Debug, Clone, Copy)]
enum MidStream {
    /// A TCP reset.
    Reset,
    /// Silence longer than the idle timeout.
    Stall,
    /// An overload error event.
    ErrorEvent,
    /// A chunk of the chunked body whose size is not hexadecimal.
    BadChunk,
}

const MID_STREAM: [MidStream; 4] = [
    MidStream::Reset,
    MidStream::Stall,
    MidStream::ErrorEvent,
    MidStream::BadChunk,
];

impl MidStream {
    fn reply(self, api: Api) -> Reply {
        let partial = api.partial("Hel");
        match self {
            MidStream::Reset => Reply::Reset(partial),
            MidStream::Stall => Reply::Hang(partial),
            MidStream::ErrorEvent => Reply::Events(partial + &api.overload_event()),
            MidStream::BadChunk => Reply::Raw(format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{partial}\r\nzz\r\nlo\r\n",
                partial.len()
            )),
        }
    }

    /// The start of the error's message.
    fn message(self) -> &'static str {
        match self {
            MidStream::Reset | MidStream::BadChunk => "the connection failed while streaming",
            MidStream::Stall => "no data for 200ms",
            MidStream::ErrorEvent => "the provider reported an error mid-stream",
        }
    }
}

#[tokio::test]
async fn faults_mid_stream_keep_the_text_so_far_and_end_with_one_retryable_error_without_a_retry() {
    bounded(Duration::from_secs(30), async {
        for api in APIS {
            for fault in MID_STREAM {
                let server = Server::start([fault.reply(api), fault.reply(api)]).await;
                let (text, e) = failure(&*api.model(&server)).await;
                let case = format!("{api:?} {fault:?}: {e:?}");
                assert_eq!(text, "Hel", "{case}");
                assert!(e.message.starts_with(fault.message()), "{case}");
                assert!(e.retryable, "{case}");
                assert_eq!(e.status, None, "{case}");
                assert_eq!(server.accepted(), 1, "{case}: the text went out, no retry");
                assert!(server.all_closed(Duration::from_secs(2)).await, "{case}");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn faults_mid_stream_through_an_agent_that_retries_show_the_answer_once() {
    bounded(Duration::from_secs(30), async {
        for api in APIS {
            for fault in MID_STREAM {
                let server =
                    Server::start([fault.reply(api), Reply::Events(api.answer(&["Hello", "!"]))])
                        .await;
                let seen = stream_agent(api.model(&server), true).await;
                let case = format!("{api:?} {fault:?}");
                let result = seen.result.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(result.text, "Hello!", "{case}");
                assert_eq!(seen.shown, "Hello!", "{case}");
                assert_eq!(
                    seen.all_text, "HelHello!",
                    "{case}: the partial text went out before the fault, then the retried step says `retry`"
                );
                assert_eq!(
                    seen.step_reasons,
                    [FinishReason::Retry, FinishReason::Stop],
                    "{case}"
                );
                let saved: Vec<String> = result.response_messages.iter().map(Message::text).collect();
                assert_eq!(saved, ["Hello!"], "{case}: the partial answer is not kept");
                assert_eq!(server.accepted(), 2, "{case}");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn faults_mid_stream_through_an_agent_without_recovery_fail_the_run_with_the_api_error() {
    bounded(Duration::from_secs(30), async {
        for api in APIS {
            for fault in MID_STREAM {
                let server = Server::start([fault.reply(api)]).await;
                let seen = stream_agent(api.model(&server), false).await;
                let case = format!("{api:?} {fault:?}");
                match seen.result {
                    Err(AgentError::Api(e)) => {
                        assert!(e.retryable, "{case}: {e}");
                        assert!(e.message.starts_with(fault.message()), "{case}: {e}");
                    }
                    other => panic!("{case}: {other:?}"),
                }
                assert_eq!(server.accepted(), 1, "{case}");
            }
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Refused calls: retried as the policy says, the answer after them delivered once.

#[tokio::test]
async fn server_errors_and_overload_are_retried_twice_then_returned_with_their_status() {
    bounded(Duration::from_secs(30), async {
        for api in APIS {
            for status in [500, 502, 503, 529] {
                let error = || Reply::json_error(status, json!({ "error": { "message": "busy" } }));
                let server = Server::start([error(), error(), error(), error()]).await;
                let (_, e) = failure(&*api.model(&server)).await;
                assert_eq!(e.status, Some(status), "{api:?}");
                assert!(e.retryable, "{api:?} {status}");
                assert_eq!(
                    server.accepted(),
                    3,
                    "{api:?} {status}: one call, two retries"
                );
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_server_that_cannot_do_the_request_is_not_asked_again() {
    bounded(Duration::from_secs(30), async {
        for api in APIS {
            for status in [501, 505, 511] {
                let error = || Reply::json_error(status, json!({ "error": { "message": "no" } }));
                let server = Server::start([error(), error(), error()]).await;
                let (_, e) = failure(&*api.model(&server)).await;
                assert_eq!(e.status, Some(status), "{api:?}");
                assert!(!e.retryable, "{api:?} {status}");
                assert_eq!(server.accepted(), 1, "{api:?} {status}: no retry");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn an_answer_after_refused_calls_reaches_the_agents_client_once() {
    bounded(Duration::from_secs(30), async {
        for api in APIS {
            let server = Server::start([
                Reply::json_error(503, json!({ "error": { "message": "busy" } })),
                Reply::json_error(529, json!({ "error": { "message": "overloaded" } })),
                Reply::Events(api.answer(&["Hello", "!"])),
            ])
            .await;
            let seen = stream_agent(api.model(&server), false).await;
            assert_eq!(seen.result.unwrap().text, "Hello!", "{api:?}");
            assert_eq!(seen.all_text, "Hello!", "{api:?}");
            assert_eq!(server.accepted(), 3, "{api:?}");
        }
    })
    .await;
}

/// A policy whose longest wait leaves room for a `Retry-After` of a few seconds.
fn patient_retry() -> RetryPolicy {
    fast_retry().max_backoff(Duration::from_secs(5))
}

/// A 429 asking to wait with `retry_after`, then an answer; how long the call took.
async fn rate_limited_then_answered(api: Api, retry_after: &str) -> Duration {
    let server = Server::start([
        Reply::json_error(429, json!({ "error": { "message": "slow down" } }))
            .header("retry-after", retry_after),
        Reply::Events(api.answer(&["ok"])),
    ])
    .await;
    let model = api.model_at(&server.url(""), fast_timeouts(), patient_retry());
    let started = Instant::now();
    let stream = model.stream(request()).await.unwrap();
    assert_eq!(text_of(&collect_ok(stream).await), "ok");
    assert_eq!(server.accepted(), 2);
    started.elapsed()
}

#[tokio::test]
async fn retry_after_in_seconds_is_waited_for() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let took = rate_limited_then_answered(api, "1").await;
            assert!(took >= Duration::from_secs(1), "{api:?}: {took:?}");
        }
    })
    .await;
}

/// `at` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{weekday}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        months[month as usize - 1],
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[test]
fn http_dates_are_formatted_as_imf_fixdates() {
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(784_111_777)),
        "Sun, 06 Nov 1994 08:49:37 GMT"
    );
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_waited_for_until_that_time() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let due = SystemTime::now() + Duration::from_secs(2);
            let at = http_date(due);
            let took = rate_limited_then_answered(api, &at).await;
            // The retry waited until the date (whole seconds: `due` rounded down).
            let whole = due.duration_since(UNIX_EPOCH).unwrap().as_secs();
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
            assert!(now.as_secs() >= whole, "{api:?} {at}: retried before it");
            assert!(took < Duration::from_secs(4), "{api:?} {at}: {took:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn retry_after_as_a_past_http_date_retries_at_once_and_a_far_one_returns_the_error() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let took = rate_limited_then_answered(api, "Sun, 06 Nov 1994 08:49:37 GMT").await;
            assert!(took < Duration::from_secs(1), "{api:?}: {took:?}");

            let at = http_date(SystemTime::now() + Duration::from_secs(3600));
            let server = Server::start([Reply::json_error(
                429,
                json!({ "error": { "message": "slow down" } }),
            )
            .header("retry-after", &at)])
            .await;
            let (_, e) = failure(&*api.model(&server)).await;
            assert_eq!(e.status, Some(429));
            assert!(
                e.message.contains("longer than the retry policy allows"),
                "{e}"
            );
            assert_eq!(server.accepted(), 1, "{api:?}");
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Truncated and endless bodies.

/// The start of a whole JSON answer (a server that ignores `stream: true`), cut short.
fn cut_json(api: Api) -> String {
    match api {
        Api::OpenAi => r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel"#,
        Api::Anthropic => r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hel"#,
    }
    .to_owned()
}

#[tokio::test]
async fn json_answer_cut_by_the_connection_closing_is_retried_as_a_cut_connection() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            // No length: the body ends where the connection closes, in the middle of the JSON.
            let cut = || {
                Reply::Raw(format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{}",
                    cut_json(api)
                ))
            };
            let server = Server::start([cut(), cut(), cut()]).await;
            let (_, e) = failure(&*api.model(&server)).await;
            assert!(e.message.contains("ended in the middle of the document"), "{api:?}: {e}");
            assert!(e.retryable, "{api:?}");
            assert_eq!(e.status, None);
            assert!(e.body.unwrap().ends_with("Hel"));
            assert_eq!(server.accepted(), 3, "{api:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn json_answer_shorter_than_its_content_length_is_retried_as_a_cut_connection() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let short = || {
                let body = cut_json(api);
                Reply::Raw(format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len() + 100
                ))
            };
            let server = Server::start([short(), short(), short()]).await;
            let (_, e) = failure(&*api.model(&server)).await;
            assert!(
                e.message.starts_with("the connection failed while streaming"),
                "{api:?}: {e}"
            );
            assert!(e.retryable);
            assert_eq!(server.accepted(), 3, "{api:?}");
        }
    })
    .await;
}

const LIMIT: usize = processors_providers::sse::DEFAULT_MAX_EVENT_BYTES;

#[tokio::test]
async fn an_event_line_that_never_ends_stops_at_the_event_limit_and_is_not_retried() {
    bounded(Duration::from_secs(60), async {
        for api in APIS {
            let server = Server::start([Reply::Endless {
                content_type: "text/event-stream",
                start: "data: ".to_owned(),
                fill: b'a',
            }])
            .await;
            let (_, e) = failure(&*api.model(&server)).await;
            assert!(
                e.message.contains(&format!("exceeded {LIMIT} bytes")),
                "{api:?}: {e}"
            );
            assert!(!e.retryable);
            assert_eq!(server.accepted(), 1);
            assert!(server.all_closed(Duration::from_secs(5)).await, "{api:?}");
            // The client read past the limit, then stopped: the server's writes then failed.
            let sent = server.sent();
            assert!(sent > LIMIT, "{api:?}: {sent}");
            assert!(sent < 4 * LIMIT, "{api:?}: {sent}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_json_answer_that_never_ends_stops_at_the_answer_limit_and_is_not_retried() {
    bounded(Duration::from_secs(60), async {
        for api in APIS {
            let server = Server::start([Reply::Endless {
                content_type: "application/json",
                start: cut_json(api),
                fill: b'a',
            }])
            .await;
            let (_, e) = failure(&*api.model(&server)).await;
            assert!(
                e.message
                    .contains(&format!("larger than the limit of {LIMIT} bytes")),
                "{api:?}: {e}"
            );
            assert!(!e.retryable);
            assert!(e.body.unwrap().len() <= 2048 + '…'.len_utf8());
            assert_eq!(server.accepted(), 1);
            assert!(server.all_closed(Duration::from_secs(5)).await, "{api:?}");
            let sent = server.sent();
            assert!(sent > LIMIT && sent < 4 * LIMIT, "{api:?}: {sent}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_byte_at_a_time_forever_ends_at_the_total_timeout() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            // Each byte comes well within the idle timeout (800 ms, wide enough for a loaded
            // machine); none completes an event.
            let server = Server::start([Reply::Drip {
                start: api.partial("Hel"),
                byte: b'a',
                every: Duration::from_millis(50),
            }])
            .await;
            let timeouts = fast_timeouts()
                .idle(Duration::from_millis(800))
                .total(Duration::from_secs(2));
            let model = api.model_at(&server.url(""), timeouts, fast_retry());
            let started = Instant::now();
            let (text, e) = failure(&*model).await;
            let took = started.elapsed();
            assert_eq!(text, "Hel");
            assert_eq!(
                e.message,
                "the call took longer than its total timeout of 2s; the answer was abandoned"
            );
            assert!(e.retryable);
            assert!(
                took >= Duration::from_secs(2) && took < Duration::from_secs(4),
                "{took:?}"
            );
            assert!(
                server.sent() >= 10,
                "the server kept dripping: {}",
                server.sent()
            );
            assert_eq!(server.accepted(), 1);
            assert!(server.all_closed(Duration::from_secs(2)).await);
        }
    })
    .await;
}

#[tokio::test]
async fn the_total_timeout_covers_retries_and_their_waits() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let silent = std::iter::repeat_n(Reply::Silent, 10);
            let server = Server::start(silent).await;
            let timeouts = fast_timeouts()
                .first_byte(Duration::from_millis(400))
                .total(Duration::from_secs(1));
            let retry = fast_retry().max_retries(10);
            let model = api.model_at(&server.url(""), timeouts, retry);
            let started = Instant::now();
            let (_, e) = failure(&*model).await;
            let took = started.elapsed();
            // Without the total timeout, ten silent attempts would take over 4 s.
            assert!(took < Duration::from_millis(2500), "{api:?}: {took:?}");
            assert!(e.retryable);
            assert!(server.accepted() <= 3, "{api:?}: {}", server.accepted());
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Broken HTTP and TLS.

#[tokio::test]
async fn a_garbage_status_line_is_an_answer_not_in_http_and_is_not_retried() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let garbage = || Reply::Raw("SSH-2.0-OpenSSH_9.6\r\n\r\n".to_owned());
            let server = Server::start([garbage(), garbage(), garbage()]).await;
            let (_, e) = failure(&*api.model(&server)).await;
            assert!(
                e.message.starts_with("the request to http://127.0.0.1"),
                "{e}"
            );
            assert!(e.message.contains("was not answered in HTTP"), "{e}");
            assert!(e.message.contains("invalid HTTP"), "{e}");
            assert!(!e.retryable);
            assert_eq!(e.status, None);
            assert_eq!(server.accepted(), 1);
        }
    })
    .await;
}

#[tokio::test]
async fn https_to_a_plain_http_server_is_a_tls_error_that_is_not_retried() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let plain = || {
                Reply::Early(
                    "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_owned(),
                )
            };
            let server = Server::start([plain(), plain(), plain()]).await;
            let base = server.url("").replace("http://", "https://");
            let model = api.model_at(&base, fast_timeouts(), fast_retry());
            let (_, e) = failure(&*model).await;
            assert!(
                e.message
                    .starts_with("the TLS handshake with https://127.0.0.1"),
                "{e}"
            );
            assert!(e.message.contains("`http://` base URL"), "{e}");
            assert!(!e.retryable);
            assert_eq!(server.accepted(), 1, "{api:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn https_to_a_listener_that_closes_at_once_is_a_retryable_connection_failure() {
    bounded(Duration::from_secs(20), async {
        for api in APIS {
            let close = || Reply::Early(String::new());
            let server = Server::start([close(), close(), close()]).await;
            let base = server.url("").replace("http://", "https://");
            let model = api.model_at(&base, fast_timeouts(), fast_retry());
            let (_, e) = failure(&*model).await;
            assert!(e.message.contains("https://127.0.0.1"), "{e}");
            assert!(e.retryable, "{e}");
            assert_eq!(server.accepted(), 3, "{api:?}");
        }
    })
    .await;
}
