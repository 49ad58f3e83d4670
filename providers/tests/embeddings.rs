//! The OpenAI-compatible embeddings client against a server on loopback: the request it
//! sends, vectors in input order, a rate limit retried, a 400 returned at once, and answers
//! that are not embeddings refused.

mod common;

use common::*;
use processors_providers::OpenAiEmbeddings;
use serde_json::json;

fn client(server: &Server) -> OpenAiEmbeddings {
    OpenAiEmbeddings::builder("text-embedding-3-small")
        .base_url(server.url("/v1"))
        .api_key("sk-test")
        .timeouts(fast_timeouts())
        .retry(fast_retry())
        .dimensions(3)
        .build()
        .unwrap()
}

fn texts(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn texts_are_sent_as_one_request_and_vectors_come_back_in_their_order() {
    let server = Server::start([Reply::json(json!({
        "object": "list",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 1.0, 0.0]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 0.0, 0.0]},
        ],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 4, "total_tokens": 4}
    }))])
    .await;
    let (vectors, usage) = client(&server)
        .embed(&texts(&["first", "second"]))
        .await
        .unwrap();
    assert_eq!(vectors, [vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]]);
    assert_eq!(usage.input_tokens, 4);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/embeddings");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        sent.body,
        json!({
            "model": "text-embedding-3-small",
            "input": ["first", "second"],
            "encoding_format": "float",
            "dimensions": 3
        })
    );
}

#[tokio::test]
async fn a_rate_limit_is_retried_and_a_bad_request_is_returned_at_once() {
    let server = Server::start([
        Reply::json_error(429, json!({"error": {"message": "Rate limit reached"}}))
            .header("retry-after", "0"),
        Reply::json(json!({"data": [{"index": 0, "embedding": [0.5]}]})),
        Reply::json_error(
            400,
            json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}),
        ),
    ])
    .await;
    let c = client(&server);
    let (vectors, _) = c.embed(&texts(&["hi"])).await.unwrap();
    assert_eq!(vectors, [vec![0.5]]);
    let err = c.embed(&texts(&["a very long text"])).await.unwrap_err();
    assert_eq!(err.status, Some(400));
    assert!(!err.retryable);
    assert!(
        err.message.contains("maximum context length"),
        "{}",
        err.message
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_answer_that_is_not_embeddings_is_an_error_not_a_short_list() {
    let server = Server::start([
        Reply::json(json!({"data": [{"index": 0, "embedding": [1.0]}]})),
        Reply::untyped("not json"),
    ])
    .await;
    let c = client(&server);
    let err = c.embed(&texts(&["one", "two"])).await.unwrap_err();
    assert!(
        err.message.contains("with 1 vectors for 2 texts"),
        "{}",
        err.message
    );
    let err = c.embed(&texts(&["one"])).await.unwrap_err();
    assert!(err.message.contains("does not parse"), "{}", err.message);
    // No call for no text.
    assert!(c.embed(&[]).await.unwrap().0.is_empty());
    assert_eq!(server.requests().len(), 2);
}
