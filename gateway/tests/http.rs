//! The gateway over HTTP: both protocols, streamed and not, refusals, upstream errors, keys,
//! limits, metrics and shutdown.

mod support;

use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::*;

const PII: &str = "output = [{ processor = \"regex-filter\", presets = [\"pii\"] }]";
const SECRETS: &str =
    "input = [{ processor = \"regex-filter\", presets = [\"secrets\"], strategy = \"block\" }]";

fn chat(content: &str, stream: bool) -> Value {
    json!({
        "model": "scripted",
        "stream": stream,
        "messages": [{ "role": "user", "content": content }],
    })
}

fn messages(content: &str, stream: bool) -> Value {
    json!({
        "model": "scripted",
        "max_tokens": 100,
        "stream": stream,
        "messages": [{ "role": "user", "content": content }],
    })
}

#[tokio::test]
async fn an_openai_answer_comes_through_the_policy() {
    let gw = start(&scripted(
        r#"[["Write to ", "jane@example.com", "."]]"#,
        PII,
    ))
    .await;
    let (status, body) = post_json(&gw, "/v1/chat/completions", chat("Who can help?", false)).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "scripted");
    assert_eq!(v["choices"][0]["message"]["content"], "Write to [EMAIL].");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn an_openai_stream_is_redacted_as_it_streams_and_ends_with_done() {
    let gw = start(&scripted(
        r#"[["Write to ", "jane@example.com", "."]]"#,
        PII,
    ))
    .await;
    let mut request = chat("Who can help?", true);
    request["stream_options"] = json!({ "include_usage": true });
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 200, "{body}");
    let (text, finish) = openai_text(&body);
    assert_eq!(text, "Write to [EMAIL].");
    assert_eq!(finish.as_deref(), Some("stop"));
    let data = data_lines(&body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["total_tokens"].is_u64(), "{usage}");
    assert!(!body.contains("jane@example.com"));
}

#[tokio::test]
async fn an_anthropic_answer_and_stream_come_through_the_policy() {
    let gw = start(&scripted(
        r#"[["Write to ", "jane@example.com", "."]]"#,
        PII,
    ))
    .await;
    let (status, body) = post_json(&gw, "/v1/messages", messages("Who can help?", false)).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0]["text"], "Write to [EMAIL].");
    assert_eq!(v["stop_reason"], "end_turn");

    let (status, body) = post_json(&gw, "/v1/messages", messages("Who can help?", true)).await;
    assert_eq!(status, 200, "{body}");
    let events = named_events(&body);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(
        &names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    let text: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Write to [EMAIL].");
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn a_refusal_before_the_answer_is_an_error_in_each_protocol() {
    let gw = start(&scripted(r#"["never sent"]"#, SECRETS)).await;
    let secret = "my key is sk-abcdefghijklmnopqrstuvwxyz0123456789";
    for stream in [false, true] {
        let (status, body) = post_json(&gw, "/v1/chat/completions", chat(secret, stream)).await;
        assert_eq!(status, 400, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["code"], "content_filter");
        assert_eq!(
            v["error"]["message"],
            "blocked by regex-filter: the input contains text matching the `openai-api-key` rule"
        );

        let (status, body) = post_json(&gw, "/v1/messages", messages(secret, stream)).await;
        assert_eq!(status, 400, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("blocked by regex-filter")
        );
    }
}

/// An output guard that blocks e-mail addresses: the answer's first words stream, then the
/// address is refused.
const BLOCK_PII: &str =
    "output = [{ processor = \"regex-filter\", presets = [\"pii\"], strategy = \"block\" }]";
const LEAKY: &str = r#"[["The answer is long enough to stream. ", "Then ", "it says jane@example.com", " and more."]]"#;

#[tokio::test]
async fn a_refusal_during_an_openai_stream_ends_it_with_content_filter() {
    let gw = start(&scripted(LEAKY, BLOCK_PII)).await;
    let (status, body) = post_json(&gw, "/v1/chat/completions", chat("hi", true)).await;
    assert_eq!(status, 200, "{body}");
    let (text, finish) = openai_text(&body);
    assert!(text.starts_with("The answer is long enough"), "{text}");
    assert!(!body.contains("jane@example.com"), "{body}");
    assert_eq!(finish.as_deref(), Some("content_filter"));
    let data = data_lines(&body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let last: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(
        last["choices"][0]["content_filter"]["processor"],
        "regex-filter"
    );

    // Not streamed: the text that passed, and the same finish reason.
    let (status, body) = post_json(&gw, "/v1/chat/completions", chat("hi", false)).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "content_filter");
    assert!(!body.contains("jane@example.com"));
}

#[tokio::test]
async fn a_refusal_during_an_anthropic_stream_ends_it_with_stop_reason_refusal() {
    let gw = start(&scripted(LEAKY, BLOCK_PII)).await;
    let (status, body) = post_json(&gw, "/v1/messages", messages("hi", true)).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("jane@example.com"), "{body}");
    let events = named_events(&body);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"content_block_delta"), "{names:?}");
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    assert_eq!(
        events[events.len() - 2].1["delta"]["stop_reason"],
        "refusal"
    );
}

#[tokio::test]
async fn keys_are_required_and_checked() {
    let gw = start(&scripted(r#"["hi"]"#, PII)).await;
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .json(&chat("hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let v: Value = response.json().await.unwrap();
    assert_eq!(v["error"]["type"], "authentication_error");

    let response = client()
        .post(gw.url("/v1/messages"))
        .header("x-api-key", "pgw-wrong")
        .json(&messages("hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let v: Value = response.json().await.unwrap();
    assert_eq!(v["error"]["type"], "authentication_error");
    assert_eq!(v["error"]["message"], "the gateway key is not valid");

    // Anthropic's clients send `x-api-key`; it works on both endpoints.
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .header("x-api-key", KEY)
        .json(&chat("hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn an_oversized_body_is_413_and_a_malformed_one_400() {
    let text = format!("max_body_bytes = 1000\n{}", scripted(r#"["hi"]"#, PII));
    let gw = start(&text).await;
    let (status, body) =
        post_json(&gw, "/v1/chat/completions", chat(&"x".repeat(2000), false)).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("limit of 1000 bytes"), "{body}");

    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .body("{\"model\": \"scripted\", \"messages\": 3}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let v: Value = response.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a valid request"),
        "{v}"
    );
}

#[tokio::test]
async fn an_unknown_model_is_404_and_a_forbidden_one_403() {
    let text = format!(
        "[upstreams.offline]\nprotocol = \"scripted\"\nturns = [\"hi\"]\n\n[models.open]\nupstream = \"offline\"\n\n[models.closed]\nupstream = \"offline\"\n\n{}",
        key_entry("models = [\"open\"]")
    );
    let gw = start(&text).await;
    let mut request = chat("hi", false);
    request["model"] = json!("closed");
    let (status, body) = post_json(&gw, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 403, "{body}");
    request["model"] = json!("nope");
    let (status, body) = post_json(&gw, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("this key may call: open"), "{body}");
    request["model"] = json!("open");
    let (status, _) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 200);

    let models: Value = client()
        .get(gw.url("/v1/models"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        models["data"],
        json!([{ "id": "open", "object": "model", "created": 0, "owned_by": "processors-gateway" }])
    );
}

#[tokio::test]
async fn a_keys_policy_runs_outside_the_models_own() {
    // The model's policy redacts addresses; the key's blocks secrets in prompts.
    let text = format!(
        "[upstreams.offline]\nprotocol = \"scripted\"\nturns = [\"mail jane@example.com\"]\n\n[models.scripted]\nupstream = \"offline\"\npolicy = \"model\"\n\n{}\n[policies.model]\n{PII}\n\n[policies.key]\n{SECRETS}\n",
        key_entry("policy = \"key\"")
    );
    let gw = start(&text).await;
    let (status, body) = post_json(&gw, "/v1/chat/completions", chat("hello", false)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("mail [EMAIL]"), "{body}");
    let secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789";
    let (status, body) = post_json(&gw, "/v1/chat/completions", chat(secret, false)).await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn a_real_openai_upstream_streams_tool_calls_to_both_protocols() {
    let upstream = Upstream::start().await;
    let gw = start_with(&upstream_config(&upstream, "openai", "tool", ""), &env).await;
    let tools = json!([{ "type": "function", "function": { "name": "weather", "parameters": { "type": "object" } } }]);
    let mut request = chat("weather in Paris?", true);
    request["model"] = json!("up");
    request["tools"] = tools;
    let (status, body) = post_json(&gw, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 200, "{body}");
    let calls: Vec<Value> = data_lines(&body)
        .iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .filter(|v| v["choices"][0]["delta"]["tool_calls"].is_array())
        .collect();
    assert_eq!(calls.len(), 1, "{body}");
    let call = &calls[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["id"], "call_1");
    assert_eq!(call["function"]["name"], "weather");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({ "city": "Paris" })
    );
    assert_eq!(openai_text(&body).1.as_deref(), Some("tool_calls"));

    // The upstream got the tools, the real model id and its own key.
    let sent = upstream.seen.bodies.lock().unwrap()[0].clone();
    assert_eq!(sent["model"], "real-model");
    assert_eq!(sent["tools"][0]["function"]["name"], "weather");
    assert_eq!(
        upstream.seen.keys.lock().unwrap()[0],
        format!("Bearer {UPSTREAM_KEY}")
    );

    request["stream"] = json!(false);
    let (_, body) = post_json(&gw, "/v1/chat/completions", request).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "weather"
    );
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");

    // An Anthropic client gets a `tool_use` block from the same upstream.
    let mut request = messages("weather in Paris?", false);
    request["model"] = json!("up");
    request["tools"] = json!([{ "name": "weather", "input_schema": { "type": "object" } }]);
    let (status, body) = post_json(&gw, "/v1/messages", request).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["content"][0]["type"], "tool_use");
    assert_eq!(v["content"][0]["input"], json!({ "city": "Paris" }));
    assert_eq!(v["stop_reason"], "tool_use");
}

#[tokio::test]
async fn tool_results_go_back_to_the_upstream_with_their_calls() {
    let upstream = Upstream::start().await;
    let gw = start_with(&upstream_config(&upstream, "openai", "text", ""), &env).await;
    let request = json!({
        "model": "up",
        "messages": [
            { "role": "user", "content": "weather in Paris?" },
            { "role": "assistant", "content": null, "tool_calls": [{ "id": "call_1", "type": "function", "function": { "name": "weather", "arguments": "{\"city\":\"Paris\"}" } }] },
            { "role": "tool", "tool_call_id": "call_1", "content": "21 degrees" },
        ],
    });
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 200, "{body}");
    let sent = upstream.seen.bodies.lock().unwrap()[0].clone();
    let m = &sent["messages"];
    assert_eq!(m[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(m[2]["role"], "tool");
    assert_eq!(m[2]["tool_call_id"], "call_1");
    assert_eq!(m[2]["content"], "21 degrees");
}

#[tokio::test]
async fn an_openai_client_reaches_an_anthropic_upstream() {
    let upstream = Upstream::start().await;
    let gw = start_with(&upstream_config(&upstream, "anthropic", "text", ""), &env).await;
    let mut request = chat("hi", false);
    request["model"] = json!("up");
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "Hello from Claude");
    assert_eq!(v["usage"]["completion_tokens"], 4);
    assert_eq!(upstream.seen.keys.lock().unwrap()[0], UPSTREAM_KEY);
}

#[tokio::test]
async fn upstream_errors_keep_their_class_and_never_show_the_upstream_key() {
    let upstream = Upstream::start().await;
    for (scenario, expected) in [
        ("status-429", 429),
        ("status-500", 502),
        ("status-503", 503),
        ("status-400", 400),
        ("status-401", 502),
    ] {
        let gw = start_with(&upstream_config(&upstream, "openai", scenario, ""), &env).await;
        for stream in [false, true] {
            let mut request = chat("hi", stream);
            request["model"] = json!("up");
            let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
            assert_eq!(status, expected, "{scenario}: {body}");
            assert!(
                !body.contains(UPSTREAM_KEY),
                "{scenario} shows the upstream key: {body}"
            );
            let v: Value = serde_json::from_str(&body).unwrap();
            assert!(
                v["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("upstream error"),
                "{body}"
            );
        }
    }
    // No server at all.
    let text = format!(
        "[upstreams.gone]\nprotocol = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmax_retries = 0\n\n[models.up]\nupstream = \"gone\"\n\n{}",
        key_entry("")
    );
    let gw = start(&text).await;
    let mut request = chat("hi", false);
    request["model"] = json!("up");
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 502, "{body}");
}

/// The SDKs wait as long as a 429 or 503 says before retrying: the upstream's wait reaches
/// the client, in both protocols, as `Retry-After` and `retry-after-ms`.
#[tokio::test]
async fn an_upstreams_retry_after_reaches_the_client() {
    let upstream = Upstream::start().await;
    for (protocol, path) in [
        ("openai", "/v1/chat/completions"),
        ("anthropic", "/v1/messages"),
    ] {
        for scenario in ["status-429", "status-503"] {
            let gw = start_with(&upstream_config(&upstream, protocol, scenario, ""), &env).await;
            for stream in [false, true] {
                let mut request = if path == "/v1/messages" {
                    messages("hi", stream)
                } else {
                    chat("hi", stream)
                };
                request["model"] = json!("up");
                let response = client()
                    .post(gw.url(path))
                    .bearer_auth(KEY)
                    .json(&request)
                    .send()
                    .await
                    .unwrap();
                let header = |name: &str| {
                    let value = response.headers().get(name);
                    value.map(|v| v.to_str().unwrap().to_owned())
                };
                assert_eq!(
                    response.status().as_u16(),
                    scenario[7..].parse::<u16>().unwrap()
                );
                assert_eq!(
                    header("retry-after").as_deref(),
                    Some("7"),
                    "{protocol} {scenario}"
                );
                assert_eq!(header("retry-after-ms").as_deref(), Some("7000"));
            }
        }
    }
    // An error the upstream did not ask to wait after says nothing of a wait.
    let gw = start_with(
        &upstream_config(&upstream, "openai", "status-500", ""),
        &env,
    )
    .await;
    let mut request = chat("hi", false);
    request["model"] = json!("up");
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 502);
    assert!(response.headers().get("retry-after").is_none());
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_upstream_call_and_frees_its_slot() {
    let upstream = Upstream::start().await;
    let text = upstream_config(&upstream, "openai", "stall", "");
    let text = text.replace("name = \"tests\"", "name = \"tests\"\nmax_concurrent = 1");
    let gw = start_with(&text, &env).await;
    let mut request = chat("hi", true);
    request["model"] = json!("up");
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    use futures::StreamExt;
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("data: "));

    // The key's one slot is taken.
    let (status, busy) = post_json(&gw, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 429, "{busy}");
    assert!(busy.contains("its limit"), "{busy}");

    drop(body);
    let mut waited = 0;
    while upstream.seen.cancelled.load(Ordering::SeqCst) == 0 && waited < 100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += 1;
    }
    assert_eq!(
        upstream.seen.cancelled.load(Ordering::SeqCst),
        1,
        "the upstream call was not cancelled"
    );
    let metrics = client()
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("gateway_open_streams 0"), "{metrics}");
    // The slot is free again: this call gets its answer's start.
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_request_past_its_time_limit_ends_with_a_timeout() {
    let upstream = Upstream::start().await;
    let gw = start_with(
        &upstream_config(&upstream, "openai", "stall", "request_timeout_ms = 300"),
        &env,
    )
    .await;
    let mut request = chat("hi", true);
    request["model"] = json!("up");
    let (status, body) = post_json(&gw, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 200, "{body}");
    let data = data_lines(&body);
    let last: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(last["error"]["type"], "api_error", "{body}");
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 300 ms"),
        "{body}"
    );
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));

    request["stream"] = json!(false);
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 504, "{body}");
}

#[tokio::test]
async fn a_shutdown_lets_open_streams_finish_within_the_grace() {
    let upstream = Upstream::start().await;
    let text = upstream_config(&upstream, "openai", "stall", "shutdown_grace_ms = 300");
    let mut gw = start_with(&text, &env).await;
    let mut request = chat("hi", true);
    request["model"] = json!("up");
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    gw.shut_down();
    let server = gw.server.take().unwrap();
    // The open stream holds the server past the signal, for the grace and no longer: then
    // it ends with an error event, and the server stops.
    let started = std::time::Instant::now();
    let body = tokio::time::timeout(Duration::from_secs(5), response.text())
        .await
        .expect("the open stream was cut")
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "the stream was cut before the grace ended"
    );
    let data = data_lines(&body);
    let last: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shut down"),
        "{body}"
    );
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let ended = tokio::time::timeout(Duration::from_secs(5), server).await;
    assert!(ended.is_ok(), "the server outlived its grace");
    assert_eq!(
        upstream.seen.cancelled.load(Ordering::SeqCst),
        1,
        "the upstream call was cancelled"
    );
    // New connections are refused once the server stopped.
    assert!(client().get(gw.url("/healthz")).send().await.is_err());
}

#[tokio::test]
async fn cors_is_off_unless_configured() {
    let gw = start(&scripted(r#"["hi"]"#, PII)).await;
    let preflight = |gw: &Running| {
        client()
            .request(reqwest::Method::OPTIONS, gw.url("/v1/chat/completions"))
            .header("origin", "https://app.example")
            .header("access-control-request-method", "POST")
            .send()
    };
    let response = preflight(&gw).await.unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );

    let text = format!(
        "cors = {{ origins = [\"https://app.example\"] }}\n{}",
        scripted(r#"["hi"]"#, PII)
    );
    let gw = start(&text).await;
    let response = preflight(&gw).await.unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example"
    );
}

#[tokio::test]
async fn metrics_count_requests_and_refusals() {
    let gw = start(&scripted(r#"["hi"]"#, SECRETS)).await;
    post_json(&gw, "/v1/chat/completions", chat("hello", false)).await;
    post_json(
        &gw,
        "/v1/chat/completions",
        chat("sk-abcdefghijklmnopqrstuvwxyz0123456789", false),
    )
    .await;
    let metrics = client()
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "gateway_requests_total{protocol=\"openai\",model=\"scripted\",status=\"200\"} 1"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "gateway_requests_total{protocol=\"openai\",model=\"scripted\",status=\"400\"} 1"
        ),
        "{metrics}"
    );
    assert!(
        metrics
            .contains("gateway_tripwires_total{model=\"scripted\",processor=\"regex-filter\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("gateway_first_byte_seconds_count 1"),
        "{metrics}"
    );
}

/// A policy's guard in shadow lets the request through and is counted by what it would have
/// done.
#[tokio::test]
async fn a_guard_in_shadow_answers_and_counts_its_decisions() {
    let shadowed = SECRETS.replace(
        "strategy = \"block\"",
        "strategy = \"block\", shadow = true",
    );
    let gw = start(&scripted(r#"["hi"]"#, &shadowed)).await;
    let (status, body) = post_json(
        &gw,
        "/v1/chat/completions",
        chat("sk-abcdefghijklmnopqrstuvwxyz0123456789", false),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"hi\""), "{body}");
    let metrics = client()
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "gateway_shadow_decisions_total{model=\"scripted\",processor=\"regex-filter\",action=\"block\"} 1"
        ),
        "{metrics}"
    );
    assert!(!metrics.contains("gateway_tripwires_total{"), "{metrics}");
}

/// A long answer recorded keeps `trace_entries` spans and events and counts the rest.
#[tokio::test]
async fn a_trace_keeps_at_most_trace_entries() {
    let words: Vec<String> = (0..200).map(|i| format!("\"w{i} \"")).collect();
    let turns = format!("[[{}]]", words.join(", "));
    let text = format!("trace_entries = 50\n{}", scripted(&turns, PII));
    let gw = start(&text).await;
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .header("x-processors-trace", "1")
        .json(&chat("Talk.", true))
        .send()
        .await
        .unwrap();
    let id = response.headers()["x-processors-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = response.text().await.unwrap();
    assert_eq!(
        openai_text(&body).0.matches(' ').count(),
        200,
        "the answer is whole"
    );
    let json: Value = client()
        .get(gw.url(&format!("/v1/traces/{id}?format=json")))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(json["entries"].as_array().unwrap().len(), 50);
    assert!(
        json["dropped"].as_u64().unwrap() > 150,
        "{}",
        json["dropped"]
    );
}

#[tokio::test]
async fn a_request_that_asks_for_its_trace_gets_its_run_page() {
    let text = format!(
        "{}\n[[keys]]\nname = \"other\"\nsha256 = \"{}\"\n",
        scripted(r#"[["Write to ", "jane@example.com", "."]]"#, PII),
        processors_gateway::KeyHash::of("pgw-someone-else")
    );
    let gw = start(&text).await;
    for stream in [false, true] {
        let response = client()
            .post(gw.url("/v1/chat/completions"))
            .bearer_auth(KEY)
            .header("x-processors-trace", "1")
            .json(&chat("Who can help?", stream))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let id = response.headers()["x-processors-trace-id"]
            .to_str()
            .unwrap()
            .to_owned();
        // The stream's trace is kept once the stream ended.
        response.text().await.unwrap();
        let page = client()
            .get(gw.url(&format!("/v1/traces/{id}")))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
        let page = page.text().await.unwrap();
        assert!(
            page.contains("<h1>Model call <code>scripted</code>"),
            "{page}"
        );
        assert!(
            page.contains("<code>regex-filter</code>"),
            "the policy's processor is on the page"
        );
        let json: Value = client()
            .get(gw.url(&format!("/v1/traces/{id}?format=json")))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(json.to_string().contains("processed.call"), "{json}");
        // Another key does not see it.
        let other = client()
            .get(gw.url(&format!("/v1/traces/{id}")))
            .bearer_auth("pgw-someone-else")
            .send()
            .await
            .unwrap();
        assert_eq!(other.status(), 404);
    }
    // A request that does not ask is not recorded.
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .json(&chat("hi", false))
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("x-processors-trace-id").is_none());
}

#[tokio::test]
async fn an_upstream_that_resets_mid_stream_ends_the_answer_with_an_error() {
    let upstream = Upstream::start().await;
    let gw = start_with(&upstream_config(&upstream, "openai", "reset", ""), &env).await;
    let mut request = chat("hi", true);
    request["model"] = json!("up");
    let (status, body) = post_json(&gw, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(openai_text(&body).0, "Half an ");
    let data = data_lines(&body);
    let last: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(last["error"]["type"], "api_error", "{body}");
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    request["stream"] = json!(false);
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 502, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams_all_end_and_leave_nothing_behind() {
    // The gateway runs on a runtime of its own, whose tasks are the server's alone.
    let text = scripted(r#"[["Write to ", "jane@example.com", "."]]"#, PII);
    let (ready, started) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        runtime.block_on(async move {
            let gw = start(&text).await;
            ready.send((gw.url(""), handle)).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let (base, server) = tokio::task::spawn_blocking(move || started.recv().unwrap())
        .await
        .unwrap();
    let metrics = server.metrics();
    // No connection is kept for another request: each closes once its answer ended.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    // The server's idle count, once it served a first request (its serve loop has started
    // what it keeps running) and that request's connection closed.
    client.get(format!("{base}/healthz")).send().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = metrics.num_alive_tasks();
    let streams = (0..1000).map(|_| {
        let client = client.clone();
        let url = format!("{base}/v1/chat/completions");
        tokio::spawn(async move {
            let response = client
                .post(url)
                .bearer_auth(KEY)
                .json(&chat("Who can help?", true))
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        })
    });
    for stream in futures::future::join_all(streams).await {
        let (status, body) = stream.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            openai_text(&body),
            ("Write to [EMAIL].".to_owned(), Some("stop".to_owned()))
        );
        assert!(body.ends_with("data: [DONE]\n\n"));
    }
    // The server's tasks for the connections end.
    drop(client);
    let mut waited = 0;
    while metrics.num_alive_tasks() > idle && waited < 500 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += 1;
    }
    assert!(
        metrics.num_alive_tasks() <= idle,
        "{} tasks alive, {idle} before",
        metrics.num_alive_tasks()
    );
    let text = support::client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("gateway_open_streams 0"), "{text}");
    assert!(
        text.contains(
            "gateway_requests_total{protocol=\"openai\",model=\"scripted\",status=\"200\"} 1000"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn fields_the_gateway_does_not_read_pass_on_only_when_they_may() {
    let upstream = Upstream::start().await;
    let gw = start_with(&upstream_config(&upstream, "openai", "text", ""), &env).await;
    let mut request = chat("hi", false);
    request["model"] = json!("up");
    request["response_format"] = json!({ "type": "json_object" });
    request["max_completion_tokens"] = json!(50);
    request["user"] = json!("u-1");
    let (status, body) = post_json(&gw, "/v1/chat/completions", request.clone()).await;
    assert_eq!(status, 200, "{body}");
    let sent = upstream.seen.bodies.lock().unwrap()[0].clone();
    assert_eq!(sent["response_format"], json!({ "type": "json_object" }));
    assert_eq!(sent["max_completion_tokens"], 50);
    assert!(sent.get("max_tokens").is_none(), "{sent}");
    assert_eq!(sent["user"], "u-1");

    // A field that would carry text past the policies is refused by name.
    let mut carrying = request.clone();
    carrying["prediction"] = json!({ "type": "content", "content": "sk-secret" });
    let (status, body) = post_json(&gw, "/v1/chat/completions", carrying).await;
    assert_eq!(status, 400, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["param"], "prediction");

    // To an upstream of the other protocol, a field that would be lost is refused.
    let other = Upstream::start().await;
    let gw = start_with(&upstream_config(&other, "anthropic", "text", ""), &env).await;
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("speaks OpenAI's protocol only"), "{body}");
}

#[tokio::test]
async fn tool_arguments_that_are_not_json_are_refused() {
    let gw = start(&scripted(r#"["hi"]"#, PII)).await;
    let request = json!({
        "model": "scripted",
        "messages": [
            { "role": "assistant", "tool_calls": [{ "id": "c1", "type": "function", "function": { "name": "f", "arguments": "{not json" } }] },
            { "role": "tool", "tool_call_id": "c1", "content": "x" },
        ],
    });
    let (status, body) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("messages[0].tool_calls[0].function.arguments"),
        "{body}"
    );
}

#[tokio::test]
async fn what_clients_name_is_a_metrics_label_only_when_it_is_an_alias() {
    let gw = start(&scripted(r#"["hi"]"#, PII)).await;
    let mut request = chat("hi", false);
    request["model"] = json!("made-up-name-1234");
    let (status, _) = post_json(&gw, "/v1/chat/completions", request).await;
    assert_eq!(status, 404);
    let metrics = client()
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!metrics.contains("made-up-name-1234"), "{metrics}");
    assert!(
        metrics.contains("model=\"-\",status=\"404\"} 1"),
        "{metrics}"
    );
    // A request without a valid key is never traced.
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth("pgw-wrong")
        .header("x-processors-trace", "1")
        .json(&chat("hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.headers().get("x-processors-trace-id").is_none());
}
