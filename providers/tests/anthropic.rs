//! `Anthropic` against a scripted server on 127.0.0.1.

mod common;

use common::*;
use processors_providers::{Anthropic, ConfigError};
use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
use processors_runtime::message::{Message, Role};
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest};
use processors_runtime::prelude::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn model(server: &Server) -> Anthropic {
    Anthropic::builder("claude-test")
        .base_url(server.url(""))
        .api_key("sk-ant-test")
        .timeouts(fast_timeouts())
        .retry(fast_retry())
        .build()
        .unwrap()
}

fn request(text: &str) -> ModelRequest {
    ModelRequest {
        prompt: vec![Message::system("be brief"), Message::user(text)],
        ..ModelRequest::default()
    }
}

/// Named events, as the messages API sends them.
fn events(items: &[Value]) -> String {
    items
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

fn message_start(input_tokens: u64) -> Value {
    json!({ "type": "message_start", "message": { "id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "model": "claude-test", "stop_reason": null,
        "usage": { "input_tokens": input_tokens, "output_tokens": 1 } } })
}

fn block_start(index: u64, block: Value) -> Value {
    json!({ "type": "content_block_start", "index": index, "content_block": block })
}

fn block_delta(index: u64, delta: Value) -> Value {
    json!({ "type": "content_block_delta", "index": index, "delta": delta })
}

fn block_stop(index: u64) -> Value {
    json!({ "type": "content_block_stop", "index": index })
}

fn message_end(reason: &str, output_tokens: u64) -> [Value; 2] {
    [
        json!({ "type": "message_delta", "delta": { "stop_reason": reason, "stop_sequence": null },
            "usage": { "output_tokens": output_tokens } }),
        json!({ "type": "message_stop" }),
    ]
}

fn text_answer(pieces: &[&str]) -> String {
    let mut items = vec![
        message_start(20),
        block_start(0, json!({ "type": "text", "text": "" })),
        json!({ "type": "ping" }),
    ];
    items.extend(
        pieces
            .iter()
            .map(|p| block_delta(0, json!({ "type": "text_delta", "text": p }))),
    );
    items.push(block_stop(0));
    items.extend(message_end("end_turn", 6));
    events(&items)
}

fn tool_use_answer(id: &str, name: &str, json_pieces: &[&str]) -> String {
    let mut items = vec![
        message_start(30),
        block_start(0, json!({ "type": "text", "text": "" })),
        block_delta(0, json!({ "type": "text_delta", "text": "Let me check." })),
        block_stop(0),
        block_start(
            1,
            json!({ "type": "tool_use", "id": id, "name": name, "input": {} }),
        ),
    ];
    items.extend(
        json_pieces
            .iter()
            .map(|p| block_delta(1, json!({ "type": "input_json_delta", "partial_json": p }))),
    );
    items.push(block_stop(1));
    items.extend(message_end("tool_use", 12));
    events(&items)
}

async fn stream_error(server: &Server) -> (Vec<ChunkKind>, ApiError) {
    let stream = model(server).stream(request("hi")).await.unwrap();
    collect_error(stream).await
}

#[tokio::test]
async fn streams_thinking_and_text_and_reports_usage() {
    let items = [
        message_start(25),
        block_start(0, json!({ "type": "thinking", "thinking": "" })),
        block_delta(
            0,
            json!({ "type": "thinking_delta", "thinking": "Greet back." }),
        ),
        block_delta(0, json!({ "type": "signature_delta", "signature": "c2ln" })),
        block_stop(0),
        block_start(1, json!({ "type": "text", "text": "" })),
        block_delta(1, json!({ "type": "text_delta", "text": "Hello" })),
        json!({ "type": "ping" }),
        block_delta(1, json!({ "type": "text_delta", "text": " there" })),
        block_stop(1),
    ];
    let body = events(&items) + &events(&message_end("end_turn", 9));
    let server = Server::start([Reply::Events(body)]).await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    let chunks = collect_ok(stream).await;
    assert_eq!(
        kinds(&chunks),
        [
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish"
        ]
    );
    assert_eq!(text_of(&chunks), "Hello there");
    assert_eq!(
        chunks.last(),
        Some(&ChunkKind::Finish {
            finish_reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 25,
                output_tokens: 9,
                total_tokens: 34
            },
        })
    );
    let r = &server.requests()[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.body["model"], "claude-test");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["max_tokens"], 4096);
    assert_eq!(r.body["system"], "be brief");
    assert_eq!(
        r.body["messages"],
        json!([{ "role": "user", "content": [{ "type": "text", "text": "hi" }] }])
    );
}

#[tokio::test]
async fn tool_use_round_trip_through_the_agent_sends_the_result_back() {
    let server = Server::start([
        Reply::Events(tool_use_answer(
            "toolu_1",
            "weather",
            &["{\"city\"", ": \"Oslo\"}"],
        )),
        Reply::Events(text_answer(&["Sunny ", "in Oslo."])),
    ])
    .await;
    let weather = tool(
        "weather",
        "Current weather for a city",
        json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
        |args| async move {
            Ok(json!(format!(
                "sunny in {}",
                args["city"].as_str().unwrap_or("?")
            )))
        },
    );
    let agent = Agent::builder()
        .instructions("Use the tool.")
        .model(model(&server))
        .tool(weather)
        .build()
        .unwrap();
    let result = agent.generate("Weather in Oslo?").await.unwrap();
    assert_eq!(
        result.text, "Let me check.Sunny in Oslo.",
        "the text of both steps"
    );
    assert_eq!(result.tool_calls[0].args, json!({ "city": "Oslo" }));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["tools"][0]["name"], "weather");
    assert_eq!(requests[0].body["tool_choice"], json!({ "type": "auto" }));
    assert_eq!(requests[1].body["system"], "Use the tool.");
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages.len(),
        3,
        "user, assistant with tool_use, user with tool_result"
    );
    assert_eq!(
        messages[1]["content"],
        json!([
            { "type": "text", "text": "Let me check." },
            { "type": "tool_use", "id": "toolu_1", "name": "weather", "input": { "city": "Oslo" } },
        ])
    );
    assert_eq!(
        messages[2],
        json!({ "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in Oslo" }
        ] })
    );
}

/// Drops the oldest user message after a 400 and asks for a retry.
struct DropOldestOnBadRequest {
    seen: Arc<Mutex<Vec<ApiError>>>,
}

impl Processor for DropOldestOnBadRequest {
    type State = ();
    const HOOKS: Hooks = Hooks::API_ERROR;

    fn id(&self) -> &str {
        "drop-oldest-on-bad-request"
    }

    async fn process_api_error(
        &self,
        args: ApiErrorArgs<'_, ()>,
    ) -> Result<ApiErrorAction, ProcessorError> {
        self.seen.lock().unwrap().push(args.error.clone());
        if args.error.status != Some(400) {
            return Ok(ApiErrorAction::Unhandled);
        }
        let oldest = args
            .message_list
            .all()
            .find(|m| m.role == Role::User)
            .map(|m| m.id.clone());
        if let Some(id) = oldest {
            args.message_list.remove(&[id.as_str()]);
        }
        Ok(ApiErrorAction::Retry)
    }
}

impl ErrorProcessor for DropOldestOnBadRequest {}

#[tokio::test]
async fn bad_request_is_not_retried_by_the_provider_and_an_error_processor_fixes_it() {
    let server = Server::start([
        Reply::json_error(
            400,
            json!({ "type": "error", "error": { "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum" } }),
        ),
        Reply::Events(text_answer(&["Done."])),
    ])
    .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(model(&server))
        .error(DropOldestOnBadRequest { seen: seen.clone() })
        .build()
        .unwrap();
    let input = vec![
        Message::user("old, huge context"),
        Message::user("the question"),
    ];
    let result = agent.generate(input).await.unwrap();
    assert_eq!(result.text, "Done.");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].message,
        "bad request: prompt is too long: 210000 tokens > 200000 maximum (invalid_request_error)"
    );
    assert!(!seen[0].retryable);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body["messages"],
        json!([{ "role": "user", "content": [{ "type": "text", "text": "the question" }] }])
    );
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_retry_after_delay() {
    let server = Server::start([
        Reply::json_error(
            429,
            json!({ "type": "error", "error": { "type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit" } }),
        )
        .header("retry-after", "0"),
        Reply::Events(text_answer(&["ok"])),
    ])
    .await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    assert_eq!(text_of(&collect_ok(stream).await), "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_errors_are_retried_then_returned_when_retries_run_out() {
    let overloaded = || {
        Reply::json_error(
            529,
            json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
        )
    };
    let server = Server::start([overloaded(), overloaded(), overloaded()]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(e.status, Some(529));
    assert!(e.retryable);
    assert_eq!(e.message, "overloaded: Overloaded (overloaded_error)");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn server_errors_with_html_pages_are_exhausted_and_explained() {
    let html = || Reply::Status {
        status: 500,
        headers: Vec::new(),
        content_type: "text/html; charset=utf-8",
        body: "<html><head><title>Oops</title></head><body>down</body></html>".to_owned(),
    };
    let server = Server::start([html(), html(), html()]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(e.status, Some(500));
    assert!(e.message.contains("HTML page (\"Oops\")"), "{}", e.message);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn error_event_mid_stream_is_a_retryable_error() {
    let body = events(&[
        message_start(5),
        block_start(0, json!({ "type": "text", "text": "" })),
        block_delta(0, json!({ "type": "text_delta", "text": "Hel" })),
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
    ]);
    let server = Server::start([Reply::Events(body)]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hel");
    assert_eq!(
        e.message,
        "the provider reported an error mid-stream: Overloaded (overloaded_error)"
    );
    assert!(e.retryable);
}

#[tokio::test]
async fn error_event_with_a_null_type_is_classified_by_its_code() {
    let body = events(&[message_start(5)])
        + &events(&[
            json!({ "type": "error", "error": { "type": null, "message": "Overloaded", "code": 529 } }),
        ]);
    let server = Server::start([Reply::Events(body)]).await;
    let (_, e) = stream_error(&server).await;
    assert_eq!(
        e.message,
        "the provider reported an error mid-stream: Overloaded (529)"
    );
    assert_eq!(e.status, Some(529));
    assert!(e.retryable);
}

#[tokio::test]
async fn error_data_without_a_type_or_an_event_name_is_still_an_error() {
    let body = events(&[message_start(5)])
        + &data_events(&[
            json!({ "error": { "message": "slow down", "code": "rate_limit_exceeded" } }),
        ]);
    let server = Server::start([Reply::Events(body)]).await;
    let (_, e) = stream_error(&server).await;
    assert_eq!(
        e.message,
        "the provider reported an error mid-stream: slow down (rate_limit_exceeded)"
    );
    assert!(e.retryable);
}

#[tokio::test]
async fn error_event_with_a_4xx_code_is_not_retryable() {
    let body =
        "event: error\ndata: {\"error\":{\"type\":null,\"message\":\"bad\",\"code\":\"400\"}}\n\n";
    let server = Server::start([Reply::Events(events(&[message_start(5)]) + body)]).await;
    let (_, e) = stream_error(&server).await;
    assert_eq!(e.status, Some(400));
    assert!(!e.retryable);
}

async fn chunks_of(reply: Reply) -> Vec<ChunkKind> {
    let server = Server::start([reply]).await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    collect_ok(stream).await
}

#[tokio::test]
async fn json_message_gives_the_chunks_its_stream_would_give() {
    let streamed = events(&[
        message_start(25),
        block_start(0, json!({ "type": "thinking", "thinking": "" })),
        block_delta(
            0,
            json!({ "type": "thinking_delta", "thinking": "Look it up." }),
        ),
        block_stop(0),
        block_start(1, json!({ "type": "text", "text": "" })),
        block_delta(1, json!({ "type": "text_delta", "text": "Let me check." })),
        block_stop(1),
        block_start(
            2,
            json!({ "type": "tool_use", "id": "toolu_1", "name": "weather", "input": {} }),
        ),
        block_delta(
            2,
            json!({ "type": "input_json_delta", "partial_json": "{\"city\":\"Oslo\"}" }),
        ),
        block_stop(2),
    ]) + &events(&message_end("tool_use", 12));
    let whole = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            { "type": "thinking", "thinking": "Look it up.", "signature": "c2ln" },
            { "type": "text", "text": "Let me check." },
            { "type": "tool_use", "id": "toolu_1", "name": "weather", "input": { "city": "Oslo" } },
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": { "input_tokens": 25, "output_tokens": 12 },
    });
    let chunks = chunks_of(Reply::json(whole)).await;
    assert_eq!(
        kinds(&chunks),
        [
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "text-start",
            "text-delta",
            "text-end",
            "tool-call-delta",
            "tool-call",
            "finish"
        ]
    );
    assert_eq!(
        chunks[7],
        ChunkKind::ToolCall(ToolCall {
            tool_call_id: "toolu_1".into(),
            tool_name: "weather".into(),
            args: json!({ "city": "Oslo" })
        })
    );
    assert_eq!(
        chunks.last(),
        Some(&ChunkKind::Finish {
            finish_reason: FinishReason::ToolCalls,
            usage: Usage {
                input_tokens: 25,
                output_tokens: 12,
                total_tokens: 37
            },
        })
    );
    assert_eq!(chunks, chunks_of(Reply::Events(streamed)).await);
}

#[tokio::test]
async fn json_error_with_a_success_status_is_classified_and_retried() {
    let overloaded = || {
        Reply::json(
            json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
        )
    };
    let server = Server::start([overloaded(), overloaded(), overloaded()]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(
        e.message,
        "the provider reported an error instead of an answer: Overloaded (overloaded_error)"
    );
    assert!(e.retryable);
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

#[tokio::test]
async fn json_that_is_neither_a_message_nor_an_error_is_explained() {
    let server = Server::start([Reply::json(
        json!({ "type": "completion", "completion": "Hi" }),
    )])
    .await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(
        e.message,
        "the provider sent a JSON answer that is neither a message nor an error object"
    );
    assert!(!e.retryable);
}

#[tokio::test]
async fn stream_cut_before_message_stop_keeps_the_text_then_fails() {
    let full = text_answer(&["Hello", " world"]);
    let cut = &full[..full.find("message_delta").unwrap()];
    let server = Server::start([Reply::Events(cut.to_owned())]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hello world");
    assert!(
        e.message
            .starts_with("stream ended before the provider finished"),
        "{}",
        e.message
    );
    assert!(e.retryable);
}

#[tokio::test]
async fn empty_event_stream_is_a_stream_that_ended_too_early() {
    let server = Server::start([Reply::Events(String::new())]).await;
    let (chunks, e) = stream_error(&server).await;
    assert!(chunks.is_empty());
    assert!(
        e.message
            .starts_with("stream ended before the provider finished"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn non_json_event_data_is_a_clear_error() {
    let body = events(&[message_start(1)]) + "event: content_block_start\ndata: <html>\n\n";
    let server = Server::start([Reply::Events(body)]).await;
    let (_, e) = stream_error(&server).await;
    assert!(
        e.message
            .starts_with("the provider sent event data that is not JSON"),
        "{}",
        e.message
    );
    assert_eq!(e.body.as_deref(), Some("<html>"));
}

#[tokio::test]
async fn delta_for_a_block_never_started_is_a_clear_error() {
    let body = events(&[
        message_start(1),
        block_delta(3, json!({ "type": "text_delta", "text": "x" })),
    ]);
    let server = Server::start([Reply::Events(body)]).await;
    let (_, e) = stream_error(&server).await;
    assert!(
        e.message
            .contains("content block 3, which was never started"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn invalid_json_in_tool_input_is_a_clear_error() {
    let server = Server::start([Reply::Events(tool_use_answer(
        "toolu_2",
        "weather",
        &["{\"city\": ", "Oslo"],
    ))])
    .await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Let me check.");
    assert!(
        e.message.starts_with(
            "the provider sent invalid JSON arguments for tool call `toolu_2` of `weather`"
        ),
        "{}",
        e.message
    );
    assert_eq!(e.body.as_deref(), Some("{\"city\": Oslo"));
}

#[tokio::test]
async fn tool_use_streams_deltas_then_one_complete_call() {
    let server = Server::start([Reply::Events(tool_use_answer(
        "toolu_3",
        "sum",
        &["", "{\"a\": 1", "}"],
    ))])
    .await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    let chunks = collect_ok(stream).await;
    let calls: Vec<_> = chunks
        .iter()
        .filter(|c| matches!(c, ChunkKind::ToolCall(ToolCall { .. })))
        .collect();
    assert_eq!(
        calls,
        [&ChunkKind::ToolCall(ToolCall {
            tool_call_id: "toolu_3".into(),
            tool_name: "sum".into(),
            args: json!({ "a": 1 })
        })]
    );
    assert!(matches!(
        chunks.last(),
        Some(ChunkKind::Finish {
            finish_reason: FinishReason::ToolCalls,
            usage: Usage {
                input_tokens: 30,
                output_tokens: 12,
                total_tokens: 42
            }
        })
    ));
}

#[tokio::test]
async fn body_that_never_ends_fails_with_the_idle_timeout() {
    let start = events(&[message_start(1), json!({ "type": "ping" })]);
    let server = Server::start([Reply::Hang(start)]).await;
    let (chunks, e) = stream_error(&server).await;
    assert!(chunks.is_empty());
    assert!(e.message.starts_with("no data for 200ms"), "{}", e.message);
    assert!(e.retryable);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let start = events(&[
        message_start(1),
        block_start(0, json!({ "type": "text", "text": "" })),
    ]);
    let server = Server::start([Reply::Hang(start)]).await;
    let model = Anthropic::builder("claude-test")
        .base_url(server.url(""))
        .api_key("k")
        .idle_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut stream = model.stream(request("hi")).await.unwrap();
    use futures::StreamExt;
    assert!(matches!(
        stream.next().await,
        Some(Ok(ChunkKind::TextStart { .. }))
    ));
    drop(stream);
    assert_eq!(
        server.client_closed().await,
        Some(0),
        "the server saw the connection close"
    );
}

#[test]
fn building_without_a_key_says_how_to_set_one() {
    let e = Anthropic::builder("claude-test").build().unwrap_err();
    assert_eq!(
        e,
        ConfigError::MissingApiKey {
            provider: "anthropic".into(),
            env_var: "ANTHROPIC_API_KEY".into()
        }
    );
}

#[tokio::test]
async fn stream_cut_inside_an_event_fails_as_cut_not_as_bad_json() {
    let full = text_answer(&["Hello", " world"]);
    let cut = &full[..full.find(" world").unwrap()];
    let server = Server::start([Reply::Events(cut.to_owned())]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hello");
    assert!(
        e.message
            .starts_with("stream ended before the provider finished"),
        "{}",
        e.message
    );
    assert!(
        e.body.unwrap().ends_with("\"text\":\""),
        "the partial event is kept"
    );
}

// Found by the `anthropic_stream` fuzz target (fuzz/).

#[tokio::test]
async fn huge_token_counts_saturate_instead_of_overflowing() {
    let mut items = vec![
        message_start(u64::MAX),
        block_start(0, json!({ "type": "text", "text": "hi" })),
        block_stop(0),
    ];
    items.extend(message_end("end_turn", 7));
    let server = Server::start([Reply::Events(events(&items))]).await;
    let chunks = collect_ok(model(&server).stream(request("hi")).await.unwrap()).await;
    assert_eq!(
        chunks.last(),
        Some(&ChunkKind::Finish {
            finish_reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: u64::MAX,
                output_tokens: 7,
                total_tokens: u64::MAX
            },
        })
    );
}

#[tokio::test]
async fn a_content_block_started_twice_is_a_protocol_error() {
    let mut items = vec![
        message_start(1),
        block_start(0, json!({ "type": "text", "text": "a" })),
        block_start(0, json!({ "type": "text", "text": "b" })),
        block_stop(0),
    ];
    items.extend(message_end("end_turn", 1));
    let server = Server::start([Reply::Events(events(&items))]).await;
    let (chunks, error) = stream_error(&server).await;
    assert_eq!(kinds(&chunks), ["text-start", "text-delta"]);
    assert!(
        error.message.contains("second start of content block 0"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn two_tool_calls_with_one_id_are_a_protocol_error() {
    let tool = |index: u64| {
        block_start(
            index,
            json!({ "type": "tool_use", "id": "toolu_1", "name": "f", "input": {} }),
        )
    };
    let mut items = vec![
        message_start(1),
        tool(0),
        block_stop(0),
        tool(1),
        block_stop(1),
    ];
    items.extend(message_end("tool_use", 1));
    let server = Server::start([Reply::Events(events(&items))]).await;
    let (chunks, error) = stream_error(&server).await;
    assert_eq!(kinds(&chunks), ["tool-call"]);
    assert!(
        error
            .message
            .contains("two tool calls with the id `toolu_1`"),
        "{}",
        error.message
    );
}
