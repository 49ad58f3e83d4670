//! `SemanticRecall` on an agent, with the deterministic `HashEmbedder`: similar earlier
//! messages of the resource come back with their neighbours, never another resource's.

use crate::loopback;

use futures::executor::block_on;
use processors_builtins::semantic_recall::{Embedder, HashEmbedder, SemanticRecall};
use processors_runtime::memory::cosine_similarity;
use processors_runtime::prelude::*;
use serde_json::json;

fn as_(thread: &str, resource: &str) -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread(thread, resource))
}

fn prompt(model: &ScriptedModel, i: usize) -> Vec<String> {
    model.requests()[i]
        .prompt
        .iter()
        .map(Message::text)
        .collect()
}

fn agent(store: &InMemoryStore, model: &ScriptedModel, recall: SemanticRecall) -> Agent {
    Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()).last_messages(Some(2)))
        .input(recall.clone())
        .output(recall)
        .build()
        .unwrap()
}

#[test]
fn bi_40_the_hash_embedder_is_deterministic_and_normalised() {
    let e = HashEmbedder::new(64);
    let texts = vec![
        "Blue is my colour".to_owned(),
        "blue IS my colour!".to_owned(),
    ];
    let v = block_on(e.embed(&texts)).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0], v[1], "case and punctuation aside, the same words");
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-6);
    let other = e.vector("the weather in Oslo");
    assert!(cosine_similarity(&v[0], &other) < 0.5);
    assert_eq!(e.vector(""), vec![0.0; 64]);
}

#[test]
fn bi_41_similar_messages_of_other_threads_come_back_with_their_neighbours() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::responder(|_, i| Turn::text(format!("answer {i}")));
    let recall = SemanticRecall::new(store.clone(), HashEmbedder::new(512))
        .top_k(1)
        .neighbours(1);
    let agent = agent(&store, &model, recall);
    block_on(agent.generate_with("I keep bees in the garden.", as_("t-1", "ada"))).unwrap();
    block_on(agent.generate_with("My favourite colour is teal.", as_("t-1", "ada"))).unwrap();
    block_on(agent.generate_with("Trains leave at noon.", as_("t-1", "ada"))).unwrap();
    // Bob says something closer still; it must never reach Ada.
    block_on(agent.generate_with("What is my favourite colour? teal", as_("t-9", "bob"))).unwrap();

    block_on(agent.generate_with("What is my favourite colour?", as_("t-2", "ada"))).unwrap();
    assert_eq!(
        prompt(&model, 4),
        [
            "answer 0",
            "My favourite colour is teal.",
            "answer 1",
            "What is my favourite colour?"
        ]
    );
}

#[test]
fn bi_42_messages_already_in_the_history_window_are_not_added_again() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::responder(|_, i| Turn::text(format!("answer {i}")));
    let recall = SemanticRecall::new(store.clone(), HashEmbedder::new(512))
        .top_k(1)
        .neighbours(0);
    let agent = agent(&store, &model, recall);
    block_on(agent.generate_with("My favourite colour is teal.", as_("t-1", "ada"))).unwrap();
    block_on(agent.generate_with("Bees live in the garden.", as_("t-1", "ada"))).unwrap();
    // The window holds the last two messages: the bees turn. The colour is recalled before it.
    block_on(agent.generate_with("Which colour do I like, teal?", as_("t-1", "ada"))).unwrap();
    assert_eq!(
        prompt(&model, 2),
        [
            "My favourite colour is teal.",
            "Bees live in the garden.",
            "answer 1",
            "Which colour do I like, teal?"
        ]
    );
    // The best match, the last question, is in the window: the next best is recalled.
    block_on(agent.generate_with("Which colour, teal?", as_("t-1", "ada"))).unwrap();
    assert_eq!(
        prompt(&model, 3),
        [
            "My favourite colour is teal.",
            "Which colour do I like, teal?",
            "answer 2",
            "Which colour, teal?"
        ]
    );
}

#[test]
fn bi_43_the_turns_text_messages_are_indexed_and_tool_calls_are_not() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::new([
        Turn::empty().tool_call("c1", "clock", json!({})),
        Turn::text("It is noon."),
    ]);
    let clock = tool(
        "clock",
        "The time.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("12:00")) },
    );
    let recall = SemanticRecall::new(store.clone(), HashEmbedder::new(64));
    let agent = Agent::builder()
        .model(model.clone())
        .tool(clock)
        .input(recall.clone())
        .output(recall)
        .build()
        .unwrap();
    block_on(agent.generate_with("What time is it?", as_("t-1", "ada"))).unwrap();
    let e = HashEmbedder::new(64);
    let found = block_on(store.search_embeddings("ada", &e.vector("noon"), 10)).unwrap();
    assert_eq!(found.len(), 2, "the question and the answer; {found:?}");
    assert!(
        (found[0].score - cosine_similarity(&e.vector("noon"), &e.vector("It is noon."))).abs()
            < 1e-6
    );
    assert_eq!(found[0].thread_id, "t-1");
}

/// An OpenAI-compatible embeddings server on loopback that embeds each input with
/// `HashEmbedder`, as a real model would with its own vectors.
async fn embeddings_server() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    let e = HashEmbedder::new(512);
    let (url, bodies) = loopback::serve(move |body| {
        let data: Vec<_> = body["input"]
            .as_array()?
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"index": i, "embedding": e.vector(t.as_str().unwrap_or(""))}))
            .collect();
        Some(loopback::json_reply(
            &json!({"data": data, "usage": {"prompt_tokens": 3}}),
        ))
    })
    .await;
    (format!("{url}/v1"), bodies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bi_41_recall_through_an_openai_compatible_embeddings_api() {
    let (url, served) = embeddings_server().await;
    let embedder = processors_providers::OpenAiEmbeddings::builder("text-embedding-3-small")
        .base_url(url)
        .api_key("sk-test")
        .build()
        .unwrap();
    let store = InMemoryStore::new();
    let model = ScriptedModel::responder(|_, i| Turn::text(format!("answer {i}")));
    let recall = SemanticRecall::new(store.clone(), embedder)
        .top_k(1)
        .neighbours(0);
    let agent = agent(&store, &model, recall);
    agent
        .generate_with("I keep bees in the garden.", as_("t-1", "ada"))
        .await
        .unwrap();
    agent
        .generate_with("Trains leave at noon.", as_("t-1", "ada"))
        .await
        .unwrap();
    agent
        .generate_with("Where do I keep bees?", as_("t-2", "ada"))
        .await
        .unwrap();
    let third = prompt(&model, 2);
    assert_eq!(
        third,
        ["I keep bees in the garden.", "Where do I keep bees?"]
    );
    assert!(served.lock().unwrap().len() >= 3);
}
