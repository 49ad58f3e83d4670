//! `OpenAiCompatible` against a scripted server on 127.0.0.1.

mod common;

use common::*;
use processors_providers::{OpenAiCompatible, RetryPolicy};
use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
use processors_runtime::message::{Message, Role};
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest};
use processors_runtime::prelude::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn model(server: &Server) -> OpenAiCompatible {
    OpenAiCompatible::builder("test-model")
        .base_url(server.url("/v1"))
        .api_key("sk-test")
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

fn delta(delta: Value) -> Value {
    json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] })
}

fn finish(reason: &str) -> Value {
    json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": reason }] })
}

fn usage(prompt: u64, completion: u64) -> Value {
    json!({ "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion } })
}

/// A complete text answer, ending with usage and `[DONE]`.
fn text_answer(pieces: &[&str]) -> String {
    let mut events = vec![delta(json!({ "role": "assistant", "content": "" }))];
    events.extend(pieces.iter().map(|p| delta(json!({ "content": p }))));
    events.push(finish("stop"));
    events.push(usage(11, 4));
    data_events(&events) + "data: [DONE]\n\n"
}

/// A tool call streamed in pieces, ending with `[DONE]`.
fn tool_call_answer(id: &str, name: &str, args: &[&str]) -> String {
    let mut events = vec![delta(json!({ "tool_calls": [
        { "index": 0, "id": id, "type": "function", "function": { "name": name, "arguments": "" } }
    ] }))];
    events.extend(
        args.iter().map(|a| {
            delta(json!({ "tool_calls": [{ "index": 0, "function": { "arguments": a } }] }))
        }),
    );
    events.push(finish("tool_calls"));
    data_events(&events) + "data: [DONE]\n\n"
}

async fn stream_error(server: &Server) -> (Vec<ChunkKind>, ApiError) {
    let stream = model(server).stream(request("hi")).await.unwrap();
    collect_error(stream).await
}

#[tokio::test]
async fn streams_text_with_one_start_and_end_and_reports_usage() {
    let server = Server::start([Reply::Events(text_answer(&["Hel", "lo", "!"]))]).await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    let chunks = collect_ok(stream).await;
    assert_eq!(
        kinds(&chunks),
        [
            "text-start",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-end",
            "finish"
        ]
    );
    assert_eq!(text_of(&chunks), "Hello!");
    assert_eq!(
        chunks.last(),
        Some(&ChunkKind::Finish {
            finish_reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 11,
                output_tokens: 4,
                total_tokens: 15
            },
        })
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"], json!({ "include_usage": true }));
    assert_eq!(
        r.body["messages"],
        json!([{ "role": "system", "content": "be brief" }, { "role": "user", "content": "hi" }])
    );
}

#[tokio::test]
async fn events_cut_at_every_few_bytes_still_decode() {
    let body = text_answer(&["a", "é", "€"]).replace("\n\n", "\r\n\r\n");
    let pieces: Vec<Vec<u8>> = body.as_bytes().chunks(3).map(<[u8]>::to_vec).collect();
    let server = Server::start([Reply::Pieces(pieces, Duration::from_millis(1))]).await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    assert_eq!(text_of(&collect_ok(stream).await), "aé€");
}

#[tokio::test]
async fn tool_call_round_trip_through_the_agent_sends_the_result_back() {
    let server = Server::start([
        Reply::Events(tool_call_answer(
            "call_1",
            "weather",
            &["{\"ci", "ty\": \"Os", "lo\"}"],
        )),
        Reply::Events(text_answer(&["It is ", "sunny in Oslo."])),
    ])
    .await;
    let weather = tool(
        "weather",
        "Current weather for a city",
        json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
        |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
    );
    let agent = Agent::builder()
        .instructions("Answer with the tool.")
        .model(model(&server))
        .tool(weather)
        .build()
        .unwrap();
    let result = agent.generate("Weather in Oslo?").await.unwrap();
    assert_eq!(result.text, "It is sunny in Oslo.");
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(result.tool_calls[0].args, json!({ "city": "Oslo" }));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(first["tools"][0]["function"]["name"], "weather");
    assert_eq!(first["tool_choice"], "auto");
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let call = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant's tool call is sent back");
    assert_eq!(call["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Oslo\"}"
    );
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    assert_eq!(result["tool_call_id"], "call_1");
    let content: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({ "city": "Oslo", "sky": "sunny" }));
}

/// Rewrites the user's messages after a 400 and asks for a retry.
struct RewriteOnBadRequest {
    seen: Arc<Mutex<Vec<ApiError>>>,
}

impl Processor for RewriteOnBadRequest {
    type State = ();
    const HOOKS: Hooks = Hooks::API_ERROR;

    fn id(&self) -> &str {
        "rewrite-on-bad-request"
    }

    async fn process_api_error(
        &self,
        args: ApiErrorArgs<'_, ()>,
    ) -> Result<ApiErrorAction, ProcessorError> {
        self.seen.lock().unwrap().push(args.error.clone());
        if args.error.status != Some(400) {
            return Ok(ApiErrorAction::Unhandled);
        }
        let users: Vec<Message> = args
            .message_list
            .all()
            .filter(|m| m.role == Role::User)
            .cloned()
            .collect();
        for mut m in users {
            m.set_text("a shorter question");
            args.message_list.replace(m);
        }
        Ok(ApiErrorAction::Retry)
    }
}

impl ErrorProcessor for RewriteOnBadRequest {}

#[tokio::test]
async fn bad_request_is_not_retried_by_the_provider_and_an_error_processor_fixes_it() {
    let server = Server::start([
        Reply::json_error(
            400,
            json!({ "error": { "message": "This model's maximum context length is 8 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded" } }),
        ),
        Reply::Events(text_answer(&["Short answer."])),
    ])
    .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(model(&server))
        .error(RewriteOnBadRequest { seen: seen.clone() })
        .build()
        .unwrap();
    let result = agent.generate("a very long question").await.unwrap();
    assert_eq!(result.text, "Short answer.");

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].status, Some(400));
    assert!(!seen[0].retryable);
    assert_eq!(
        seen[0].message,
        "bad request: This model's maximum context length is 8 tokens. (invalid_request_error)"
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the provider itself does not retry a 400"
    );
    assert_eq!(
        requests[0].body["messages"][0]["content"],
        "a very long question"
    );
    assert_eq!(
        requests[1].body["messages"][0]["content"],
        "a shorter question"
    );
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_retry_after_delay() {
    let server = Server::start([
        Reply::json_error(429, json!({ "error": { "message": "Rate limit reached" } }))
            .header("retry-after", "0"),
        Reply::Events(text_answer(&["ok"])),
    ])
    .await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    assert_eq!(text_of(&collect_ok(stream).await), "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_longer_than_the_policy_allows_returns_the_error_at_once() {
    let server =
        Server::start([
            Reply::json_error(429, json!({ "error": { "message": "slow down" } }))
                .header("retry-after", "3600"),
        ])
        .await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(e.status, Some(429));
    assert!(e.retryable);
    assert!(e.message.contains("slow down"), "{}", e.message);
    assert!(e.message.contains("retry after 3600s"), "{}", e.message);
    // The wait goes with the error, for the caller's own caller.
    assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(3600)));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_returned_when_retries_run_out() {
    let error = || {
        Reply::json_error(
            500,
            json!({ "error": { "message": "The server had an error" } }),
        )
    };
    let server = Server::start([error(), error(), error()]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(e.status, Some(500));
    assert!(e.retryable);
    assert_eq!(e.message, "internal server error: The server had an error");
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

#[tokio::test]
async fn unauthorized_is_returned_at_once_with_a_hint() {
    let server = Server::start([Reply::json_error(
        401,
        json!({ "error": { "message": "Incorrect API key provided", "type": "invalid_request_error" } }),
    )])
    .await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(e.status, Some(401));
    assert!(!e.retryable);
    assert!(
        e.message
            .starts_with("unauthorized (check the API key): Incorrect API key"),
        "{}",
        e.message
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn html_error_page_is_named_and_its_body_kept_truncated() {
    let page = format!(
        "<!DOCTYPE html><html><head><title>500 Internal Server Error</title></head><body>{}</body></html>",
        "<p>stack trace</p>".repeat(500)
    );
    let html = || Reply::Status {
        status: 500,
        headers: Vec::new(),
        content_type: "text/html",
        body: page.clone(),
    };
    let server = Server::start([html(), html(), html()]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(e.status, Some(500));
    assert!(e.message.contains("HTML page"), "{}", e.message);
    assert!(
        e.message.contains("500 Internal Server Error"),
        "{}",
        e.message
    );
    let body = e.body.unwrap();
    assert!(body.starts_with("<!DOCTYPE html>"));
    assert!(body.len() < page.len(), "the body is truncated");
}

#[tokio::test]
async fn empty_error_body_says_it_was_empty() {
    let empty = || Reply::Status {
        status: 503,
        headers: Vec::new(),
        content_type: "text/plain",
        body: String::new(),
    };
    let server = Server::start([empty(), empty(), empty()]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(
        e.message,
        "service unavailable: the response body was empty"
    );
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
    assert!(e.retryable);
}

#[tokio::test]
async fn stream_cut_mid_event_keeps_the_text_so_far_then_fails() {
    let full = text_answer(&["Hello", " world"]);
    let cut = &full[..full.find("world").unwrap()];
    let server = Server::start([Reply::Events(cut.to_owned())]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hello");
    assert!(
        e.message
            .starts_with("stream ended before the provider finished"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn non_json_event_data_is_a_clear_error() {
    let body = data_events(&[delta(json!({ "content": "Hi" }))]) + "data: {not json\n\n";
    let server = Server::start([Reply::Events(body)]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hi");
    assert!(
        e.message
            .starts_with("the provider sent event data that is not JSON"),
        "{}",
        e.message
    );
    assert_eq!(e.body.as_deref(), Some("{not json"));
    assert!(!e.retryable);
}

#[tokio::test]
async fn malformed_lines_and_comments_are_skipped() {
    let body = format!(
        ": keep-alive\nnonsense line\nevent: whatever\n{}",
        text_answer(&["ok"])
    );
    let server = Server::start([Reply::Events(body)]).await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    assert_eq!(text_of(&collect_ok(stream).await), "ok");
}

#[tokio::test]
async fn invalid_json_in_tool_call_arguments_is_a_clear_error() {
    let server = Server::start([Reply::Events(tool_call_answer(
        "call_9",
        "weather",
        &["{\"city\": Oslo}"],
    ))])
    .await;
    let (chunks, e) = stream_error(&server).await;
    assert!(kinds(&chunks).contains(&"tool-call-delta".to_owned()));
    assert!(
        e.message.starts_with(
            "the provider sent invalid JSON arguments for tool call `call_9` of `weather`"
        ),
        "{}",
        e.message
    );
    assert_eq!(e.body.as_deref(), Some("{\"city\": Oslo}"));
}

#[tokio::test]
async fn tool_calls_stream_deltas_then_one_complete_call() {
    let server = Server::start([Reply::Events(tool_call_answer(
        "call_2",
        "sum",
        &["{\"a\":", "1}"],
    ))])
    .await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    let chunks = collect_ok(stream).await;
    assert_eq!(
        kinds(&chunks),
        ["tool-call-delta", "tool-call-delta", "tool-call", "finish"]
    );
    assert_eq!(
        chunks[2],
        ChunkKind::ToolCall(ToolCall {
            tool_call_id: "call_2".into(),
            tool_name: "sum".into(),
            args: json!({ "a": 1 })
        })
    );
    assert!(matches!(
        chunks[3],
        ChunkKind::Finish {
            finish_reason: FinishReason::ToolCalls,
            ..
        }
    ));
}

#[tokio::test]
async fn body_that_never_ends_fails_with_the_idle_timeout() {
    let start = data_events(&[delta(json!({ "content": "Hel" }))]);
    let server = Server::start([Reply::Hang(start)]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hel");
    assert!(e.message.starts_with("no data for 200ms"), "{}", e.message);
    assert!(e.retryable);
}

#[tokio::test]
async fn a_body_left_open_after_done_ends_the_stream_and_its_connection_is_closed_after() {
    // `[DONE]`, then nothing: no end of the body until the client closes. The stream ends at
    // `[DONE]` (the rest of the body is read in the background, briefly, then dropped).
    let server = Server::start([Reply::Hang(text_answer(&["Hello", "!"]))]).await;
    let chunks = collect_ok(model(&server).stream(request("hi")).await.unwrap()).await;
    assert_eq!(text_of(&chunks), "Hello!");
    assert!(matches!(chunks.last(), Some(ChunkKind::Finish { .. })));
    assert!(
        server.all_closed(Duration::from_secs(2)).await,
        "the connection is closed, not kept reading"
    );
}

#[tokio::test]
async fn no_response_headers_in_time_is_a_retryable_timeout() {
    let server = Server::start([Reply::Silent, Reply::Silent, Reply::Silent]).await;
    let model = OpenAiCompatible::builder("m")
        .base_url(server.url("/v1"))
        .timeouts(fast_timeouts())
        .first_byte_timeout(Duration::from_millis(300))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let e = model.stream(request("hi")).await.err().unwrap();
    assert!(e.message.starts_with("no response from"), "{}", e.message);
    assert!(e.message.ends_with("within 300ms"), "{}", e.message);
    assert!(e.retryable);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let start = data_events(&[delta(json!({ "content": "Hel" }))]);
    let server = Server::start([Reply::Hang(start)]).await;
    let model = OpenAiCompatible::builder("m")
        .base_url(server.url("/v1"))
        .idle_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut stream = model.stream(request("hi")).await.unwrap();
    use futures::StreamExt;
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, ChunkKind::TextStart { .. }));
    drop(stream);
    assert_eq!(
        server.client_closed().await,
        Some(0),
        "the server saw the connection close"
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = OpenAiCompatible::builder("m")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .timeouts(fast_timeouts())
        .retry(fast_retry())
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let e = model.stream(request("hi")).await.err().unwrap();
    assert!(
        e.message
            .starts_with("could not connect to http://127.0.0.1"),
        "{}",
        e.message
    );
    assert!(e.retryable);
    assert_eq!(e.status, None);
    assert!(
        started.elapsed() >= Duration::from_millis(15),
        "two backoffs of 10 and 20 ms, with equal jitter at least half of each"
    );
}

/// A whole `chat.completion`, as a server that ignores `stream: true` sends it.
fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{ "index": 0, "message": message, "finish_reason": finish_reason }],
        "usage": { "prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15 },
    })
}

async fn chunks_of(reply: Reply) -> Vec<ChunkKind> {
    let server = Server::start([reply]).await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    collect_ok(stream).await
}

#[tokio::test]
async fn json_completion_gives_the_chunks_its_stream_would_give() {
    let streamed = data_events(&[
        delta(json!({ "role": "assistant", "content": "" })),
        delta(json!({ "reasoning_content": "Greet back." })),
        delta(json!({ "content": "Hello!" })),
        finish("stop"),
        usage(11, 4),
    ]) + "data: [DONE]\n\n";
    let whole = completion(
        json!({ "role": "assistant", "content": "Hello!", "reasoning_content": "Greet back." }),
        "stop",
    );
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
            "finish"
        ]
    );
    assert_eq!(
        chunks.last(),
        Some(&ChunkKind::Finish {
            finish_reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 11,
                output_tokens: 4,
                total_tokens: 15
            },
        })
    );
    assert_eq!(chunks, chunks_of(Reply::Events(streamed)).await);
}

#[tokio::test]
async fn json_completion_with_tool_calls_gives_parsed_calls() {
    let whole = completion(
        json!({ "role": "assistant", "content": null, "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":\"Oslo\"}" } },
            { "id": "call_2", "type": "function", "function": { "name": "now", "arguments": "" } },
        ] }),
        "tool_calls",
    );
    let chunks = chunks_of(Reply::json(whole)).await;
    assert_eq!(
        kinds(&chunks),
        ["tool-call-delta", "tool-call", "tool-call", "finish"]
    );
    assert_eq!(
        chunks[1],
        ChunkKind::ToolCall(ToolCall {
            tool_call_id: "call_1".into(),
            tool_name: "weather".into(),
            args: json!({ "city": "Oslo" })
        })
    );
    assert_eq!(
        chunks[2],
        ChunkKind::ToolCall(ToolCall {
            tool_call_id: "call_2".into(),
            tool_name: "now".into(),
            args: json!({})
        })
    );
    assert!(matches!(
        chunks[3],
        ChunkKind::Finish {
            finish_reason: FinishReason::ToolCalls,
            usage: Usage {
                total_tokens: 15,
                ..
            }
        }
    ));
}

#[tokio::test]
async fn json_completion_without_a_content_type_is_recognised_by_its_first_byte() {
    let whole = completion(json!({ "role": "assistant", "content": "Hi" }), "stop");
    let chunks = chunks_of(Reply::untyped(&format!("\r\n  {whole}"))).await;
    assert_eq!(text_of(&chunks), "Hi");
    assert_eq!(kinds(&chunks).last().map(String::as_str), Some("finish"));
}

#[tokio::test]
async fn event_stream_without_a_content_type_still_streams() {
    let chunks = chunks_of(Reply::untyped(&text_answer(&["Hel", "lo"]))).await;
    assert_eq!(text_of(&chunks), "Hello");
}

#[tokio::test]
async fn json_error_object_with_a_success_status_is_classified_and_retried() {
    let server = Server::start([
        Reply::json(
            json!({ "error": { "message": "upstream busy", "type": null, "code": "503" } }),
        ),
        Reply::json(completion(
            json!({ "role": "assistant", "content": "ok" }),
            "stop",
        )),
    ])
    .await;
    let stream = model(&server).stream(request("hi")).await.unwrap();
    assert_eq!(text_of(&collect_ok(stream).await), "ok");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn json_error_object_with_a_success_status_that_blames_the_request_is_returned_at_once() {
    let server = Server::start([Reply::json(
        json!({ "error": { "message": "Unknown parameter: 'foo'.", "type": "invalid_request_error", "code": null } }),
    )])
    .await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(
        e.message,
        "the provider reported an error instead of an answer: Unknown parameter: 'foo'. (invalid_request_error)"
    );
    assert!(!e.retryable);
    assert_eq!(e.status, None);
    assert!(e.body.unwrap().contains("Unknown parameter"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn json_that_is_neither_a_completion_nor_an_error_is_explained() {
    let body = json!({ "id": "x", "choices": [] });
    let server = Server::start([Reply::json(body.clone())]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert_eq!(
        e.message,
        "the provider sent a JSON answer that is neither a chat completion nor an error object"
    );
    assert!(!e.retryable);
    assert_eq!(e.body, Some(body.to_string()));
}

#[tokio::test]
async fn json_answer_that_does_not_parse_is_a_clear_error() {
    let server = Server::start([Reply::Status {
        status: 200,
        headers: Vec::new(),
        content_type: "application/json",
        body: "{\"choices\": [".to_owned(),
    }])
    .await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert!(
        e.message
            .starts_with("the provider sent a JSON answer that does not parse"),
        "{}",
        e.message
    );
    assert!(!e.retryable);
}

#[tokio::test]
async fn json_answer_larger_than_an_event_may_be_is_refused() {
    let text = "a".repeat(processors_providers::sse::DEFAULT_MAX_EVENT_BYTES);
    let whole = completion(json!({ "role": "assistant", "content": text }), "stop");
    let server = Server::start([Reply::json(whole)]).await;
    let e = model(&server).stream(request("hi")).await.err().unwrap();
    assert!(
        e.message
            .starts_with("the provider sent a JSON answer larger than the limit of 8388608 bytes"),
        "{}",
        e.message
    );
    assert!(!e.retryable);
    assert!(e.body.unwrap().starts_with("{"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn error_event_mid_stream_is_reported() {
    let body = data_events(&[
        delta(json!({ "content": "Hi" })),
        json!({ "error": { "message": "The server is overloaded", "type": "server_error" } }),
    ]);
    let server = Server::start([Reply::Events(body)]).await;
    let (_, e) = stream_error(&server).await;
    assert!(
        e.message.contains("The server is overloaded"),
        "{}",
        e.message
    );
    assert!(e.retryable);
}

/// The error a stream ends with when, after some text, the server sends this error object.
async fn error_after_text(error: Value) -> ApiError {
    let body = data_events(&[delta(json!({ "content": "Hi" })), json!({ "error": error })]);
    let server = Server::start([Reply::Events(body)]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hi");
    e
}

#[tokio::test]
async fn error_event_with_a_null_type_and_a_5xx_code_is_retryable_with_that_status() {
    let e = error_after_text(
        json!({ "message": "upstream connect error", "type": null, "code": "500" }),
    )
    .await;
    assert!(e.retryable);
    assert_eq!(e.status, Some(500));
    assert_eq!(
        e.message,
        "the provider reported an error mid-stream: upstream connect error (500)"
    );
}

#[tokio::test]
async fn error_event_with_a_numeric_overload_code_is_retryable_with_that_status() {
    for code in [429, 500, 502, 503, 529] {
        let e = error_after_text(json!({ "message": "busy", "type": null, "code": code })).await;
        assert!(e.retryable, "{code}");
        assert_eq!(e.status, Some(code), "{code}");
    }
}

#[tokio::test]
async fn error_event_with_a_rate_limit_or_overload_code_is_retryable() {
    for error in [
        json!({ "message": "slow down", "type": null, "code": "rate_limit_exceeded" }),
        json!({ "message": "slow down", "type": "tokens", "code": "rate_limit_exceeded" }),
        json!({ "message": "busy", "code": "overloaded" }),
    ] {
        let e = error_after_text(error.clone()).await;
        assert!(e.retryable, "{error}");
        assert_eq!(e.status, None, "{error}");
    }
}

#[tokio::test]
async fn error_event_with_a_4xx_code_is_not_retryable() {
    for code in [json!("400"), json!(413)] {
        let e =
            error_after_text(json!({ "message": "too long", "type": null, "code": code })).await;
        assert!(!e.retryable, "{code}");
        assert!(e.status.is_some_and(|s| (400..500).contains(&s)), "{code}");
    }
}

#[tokio::test]
async fn connection_left_open_after_done_still_ends_the_stream() {
    let server = Server::start([Reply::Hang(text_answer(&["done"]))]).await;
    let model = OpenAiCompatible::builder("m")
        .base_url(server.url("/v1"))
        .idle_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let stream = model.stream(request("hi")).await.unwrap();
    assert_eq!(text_of(&collect_ok(stream).await), "done");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(server.client_closed().await, Some(0));
}

#[tokio::test]
async fn chunked_body_cut_mid_chunk_is_a_retryable_connection_error() {
    let event = data_events(&[delta(json!({ "content": "Hi" }))]);
    let raw = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n40\r\ndata: {{\"cho",
        event.len()
    );
    let server = Server::start([Reply::Raw(raw)]).await;
    let (chunks, e) = stream_error(&server).await;
    assert_eq!(text_of(&chunks), "Hi");
    assert!(
        e.message
            .starts_with("the connection failed while streaming: "),
        "{}",
        e.message
    );
    assert!(e.retryable);
}

// Found by the `openai_stream` fuzz target (fuzz/).

#[tokio::test]
async fn huge_token_counts_saturate_instead_of_overflowing() {
    let events = [
        delta(json!({ "content": "hi" })),
        finish("stop"),
        json!({ "choices": [], "usage": { "prompt_tokens": u64::MAX, "completion_tokens": 1 } }),
    ];
    let body = data_events(&events) + "data: [DONE]\n\n";
    let server = Server::start([Reply::Events(body)]).await;
    let chunks = collect_ok(model(&server).stream(request("hi")).await.unwrap()).await;
    assert_eq!(
        chunks.last(),
        Some(&ChunkKind::Finish {
            finish_reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: u64::MAX,
                output_tokens: 1,
                total_tokens: u64::MAX
            },
        })
    );
}

#[tokio::test]
async fn a_tool_call_keeps_the_id_its_first_delta_named() {
    let call = |id: Option<&str>, args: &str| {
        let mut piece = json!({ "index": 0, "function": { "arguments": args } });
        if let Some(id) = id {
            piece["id"] = json!(id);
        }
        delta(json!({ "tool_calls": [piece] }))
    };
    let events = [
        call(None, "{\"x\":"),
        call(Some("call_late"), "1}"),
        finish("tool_calls"),
    ];
    let body = data_events(&events) + "data: [DONE]\n\n";
    let server = Server::start([Reply::Events(body)]).await;
    let chunks = collect_ok(model(&server).stream(request("hi")).await.unwrap()).await;
    let ids: Vec<&str> = chunks
        .iter()
        .filter_map(|c| match c {
            ChunkKind::ToolCallDelta { tool_call_id, .. } => Some(tool_call_id.as_str()),
            ChunkKind::ToolCall(call) => Some(call.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call-0", "call-0", "call-0"]);
}

#[tokio::test]
async fn two_tool_calls_with_one_id_are_a_protocol_error() {
    let events = [delta(json!({ "tool_calls": [
        { "index": 0, "id": "call_1", "function": { "name": "a", "arguments": "{}" } },
        { "index": 1, "id": "call_1", "function": { "name": "b", "arguments": "{}" } },
    ] }))];
    let body = data_events(&events) + "data: [DONE]\n\n";
    let server = Server::start([Reply::Events(body)]).await;
    let (chunks, error) = stream_error(&server).await;
    assert!(
        !chunks.iter().any(|c| matches!(c, ChunkKind::ToolCall(_))),
        "{chunks:?}"
    );
    assert!(
        error
            .message
            .contains("two tool calls with the id `call_1`"),
        "{}",
        error.message
    );
    assert!(!error.retryable);
}
