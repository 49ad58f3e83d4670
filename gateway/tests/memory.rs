//! Conversations kept by the gateway (`x-thread-id`), each owned by its key's tenant, and a
//! response cache in a policy, kept per tenant.

mod support;

use processors_gateway::KeyHash;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use support::*;

const OTHER_KEY: &str = "pgw-other-tenant";

/// The fake upstream's `text` scenario as `up`, with memory, for `KEY` (tenant `tests`) and
/// `OTHER_KEY` (tenant `other`).
fn config(upstream: &Upstream, policy: &str) -> String {
    let base = upstream_config(upstream, "openai", "text", "");
    let base = base.replace(
        "model = \"real-model\"\n",
        "model = \"real-model\"\npolicy = \"p\"\n",
    );
    format!(
        "[memory]\nstore = \"in-memory\"\n\n{base}\n[[keys]]\nname = \"other\"\nsha256 = \"{}\"\n\n[policies.p]\n{policy}\n",
        KeyHash::of(OTHER_KEY)
    )
}

fn ask(text: &str) -> Value {
    json!({ "model": "up", "messages": [{ "role": "user", "content": text }] })
}

fn sent_texts(upstream: &Upstream, call: usize) -> Vec<String> {
    let bodies = upstream.seen.bodies.lock().unwrap();
    bodies[call]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_thread_carries_a_conversation_across_requests() {
    let upstream = Upstream::start().await;
    let gw = start_with(&config(&upstream, ""), &env).await;
    let (status, body) = post_as(
        &gw,
        KEY,
        Some("t1"),
        "/v1/chat/completions",
        ask("My name is Ada."),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_as(
        &gw,
        KEY,
        Some("t1"),
        "/v1/chat/completions",
        ask("Who am I?"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        sent_texts(&upstream, 1),
        ["My name is Ada.", "Hello from upstream", "Who am I?"]
    );
    // Another thread starts afresh; a request without one is stateless.
    post_as(&gw, KEY, Some("t2"), "/v1/chat/completions", ask("Hi.")).await;
    assert_eq!(sent_texts(&upstream, 2), ["Hi."]);
    post_as(&gw, KEY, None, "/v1/chat/completions", ask("Hi.")).await;
    assert_eq!(sent_texts(&upstream, 3), ["Hi."]);
}

#[tokio::test]
async fn a_thread_belongs_to_its_tenant() {
    let upstream = Upstream::start().await;
    let gw = start_with(&config(&upstream, ""), &env).await;
    let (status, _) = post_as(
        &gw,
        KEY,
        Some("mine"),
        "/v1/chat/completions",
        ask("secret plans"),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = post_as(
        &gw,
        OTHER_KEY,
        Some("mine"),
        "/v1/chat/completions",
        ask("what were the plans?"),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("belongs to another tenant"), "{body}");
    assert_eq!(upstream.seen.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refused_answer_is_not_remembered() {
    let upstream = Upstream::start().await;
    // The upstream's answer says "upstream": blocked.
    let policy = "output = [{ processor = \"regex-filter\", rules = [{ name = \"up\", pattern = \"upstream\" }], strategy = \"block\" }]";
    let gw = start_with(&config(&upstream, policy), &env).await;
    let (status, body) = post_as(&gw, KEY, Some("t1"), "/v1/chat/completions", ask("first")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("content_filter"), "{body}");
    post_as(&gw, KEY, Some("t1"), "/v1/chat/completions", ask("second")).await;
    assert_eq!(sent_texts(&upstream, 1), ["second"]);
}

#[tokio::test]
async fn a_thread_without_memory_is_refused() {
    let gw = start(&scripted(r#"["hi"]"#, "")).await;
    let (status, body) = post_as(
        &gw,
        KEY,
        Some("t1"),
        "/v1/chat/completions",
        json!({
            "model": "scripted", "messages": [{ "role": "user", "content": "hi" }],
        }),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("keeps no conversations"), "{body}");
}

#[tokio::test]
async fn a_response_cache_in_a_policy_answers_again_per_tenant() {
    let upstream = Upstream::start().await;
    let cache = "input = [\"response-cache\"]\noutput = [\"response-cache\"]";
    let gw = start_with(&config(&upstream, cache), &env).await;
    for _ in 0..2 {
        let (status, body) = post_as(
            &gw,
            KEY,
            None,
            "/v1/chat/completions",
            ask("Capital of France?"),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("Hello from upstream"), "{body}");
    }
    assert_eq!(
        upstream.seen.calls.load(Ordering::SeqCst),
        1,
        "the second answer came from the cache"
    );
    // Another tenant's same question is its own.
    let (status, _) = post_as(
        &gw,
        OTHER_KEY,
        None,
        "/v1/chat/completions",
        ask("Capital of France?"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(upstream.seen.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_client_that_goes_away_leaves_nothing_saved() {
    let upstream = Upstream::start().await;
    let text = format!(
        "[memory]\nstore = \"in-memory\"\n\n[upstreams.stall]\nprotocol = \"openai\"\nbase_url = \"{}\"\nmax_retries = 0\n\n[upstreams.text]\nprotocol = \"openai\"\nbase_url = \"{}\"\nmax_retries = 0\n\n[models.stall]\nupstream = \"stall\"\n\n[models.up]\nupstream = \"text\"\n\n{}",
        upstream.base_url("openai", "stall"),
        upstream.base_url("openai", "text"),
        key_entry("")
    );
    let gw = start(&text).await;
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(KEY)
        .header("x-thread-id", "t1")
        .json(&json!({ "model": "stall", "stream": true, "messages": [{ "role": "user", "content": "left early" }] }))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    use futures::StreamExt;
    body.next().await.unwrap().unwrap();
    drop(body);
    let mut waited = 0;
    while upstream.seen.cancelled.load(Ordering::SeqCst) == 0 && waited < 100 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        waited += 1;
    }
    let (status, body) = post_as(&gw, KEY, Some("t1"), "/v1/chat/completions", ask("next")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        sent_texts(&upstream, 1),
        ["next"],
        "the abandoned turn was saved"
    );
}
