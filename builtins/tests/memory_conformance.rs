//! One suite for every memory store: the same tests run against the in-memory store, the
//! SQLite store (in memory and in a file) and, with the feature `postgres`, the PostgreSQL
//! store on a real server (`scripts/services.sh` starts it; each test has a schema of its
//! own). What a store must do: keep threads and their messages in order (a turn saved again
//! in its place), replace a known message in place, refuse a message id of another thread or
//! resource without saving any of its batch, save a turn whole or not at all, keep a working
//! memory per scope key, and, through the agent's memory, never show one resource another's
//! threads.

mod services;

use futures::executor::block_on;
use processors_builtins::storage::SqliteStore;
use processors_runtime::agent::{Approval, ApprovalError};
use processors_runtime::memory::{
    MemoryError, MemoryStore, MessageEmbedding, PausedRunRecord, SimilarMessage, Thread,
    WorkingMemoryScope, working_memory_key,
};
use processors_runtime::message::{Message, Part, ToolCall};
use processors_runtime::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh database file in the temporary directory.
fn temp_db() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("processors-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}.db", N.fetch_add(1, Ordering::Relaxed)))
}

fn thread(id: &str, resource: &str) -> Thread {
    Thread {
        id: id.into(),
        resource_id: resource.into(),
        title: None,
        created_at: 1,
        updated_at: 1,
        metadata: None,
    }
}

fn message(id: &str, thread: &str, resource: &str, text: &str) -> Message {
    let mut m = Message::user(text);
    m.id = id.into();
    m.thread_id = Some(thread.into());
    m.resource_id = Some(resource.into());
    m
}

fn texts(ms: &[Message]) -> Vec<String> {
    ms.iter().map(Message::text).collect()
}

fn a_thread_round_trips_and_is_updated_in_place(store: &dyn MemoryStore) {
    assert_eq!(block_on(store.get_thread("t-1")).unwrap(), None);
    let mut t = thread("t-1", "ada");
    t.metadata = Some(serde_json::json!({"topic": "billing"}));
    block_on(store.save_thread(t.clone())).unwrap();
    assert_eq!(block_on(store.get_thread("t-1")).unwrap(), Some(t.clone()));
    t.title = Some("Invoices".into());
    t.updated_at = 9;
    block_on(store.save_thread(t.clone())).unwrap();
    assert_eq!(block_on(store.get_thread("t-1")).unwrap(), Some(t));
}

fn messages_keep_their_order_and_a_limit_keeps_the_last(store: &dyn MemoryStore) {
    let batch = |ids: &[&str]| -> Vec<Message> {
        ids.iter().map(|id| message(id, "t-1", "ada", id)).collect()
    };
    block_on(store.save_messages(batch(&["m1", "m2", "m3"]))).unwrap();
    block_on(store.save_messages(batch(&["m4", "m5"]))).unwrap();
    block_on(store.save_messages(vec![message("x1", "t-2", "ada", "x1")])).unwrap();
    let all = block_on(store.list_messages("t-1", None)).unwrap();
    assert_eq!(texts(&all), ["m1", "m2", "m3", "m4", "m5"]);
    let last = block_on(store.list_messages("t-1", Some(2))).unwrap();
    assert_eq!(texts(&last), ["m4", "m5"]);
    assert!(
        block_on(store.list_messages("t-3", None))
            .unwrap()
            .is_empty()
    );
}

fn saving_a_known_id_replaces_the_message_in_place(store: &dyn MemoryStore) {
    let ms = vec![
        message("m1", "t-1", "ada", "first"),
        message("m2", "t-1", "ada", "second"),
    ];
    block_on(store.save_messages(ms)).unwrap();
    block_on(store.save_messages(vec![message("m1", "t-1", "ada", "edited")])).unwrap();
    let all = block_on(store.list_messages("t-1", None)).unwrap();
    assert_eq!(texts(&all), ["edited", "second"]);
}

fn a_foreign_message_id_is_refused_and_nothing_of_its_batch_is_saved(store: &dyn MemoryStore) {
    block_on(store.save_messages(vec![message("m1", "t-1", "ada", "ada's")])).unwrap();
    let batch = vec![
        message("m2", "t-2", "bob", "bob's own"),
        message("m1", "t-2", "bob", "bob overwriting ada's"),
    ];
    let err = block_on(store.save_messages(batch)).unwrap_err();
    assert!(
        matches!(&err, MemoryError::ForeignMessage { id } if id == "m1"),
        "{err}"
    );
    assert!(
        block_on(store.list_messages("t-2", None))
            .unwrap()
            .is_empty()
    );
    let kept = block_on(store.list_messages("t-1", None)).unwrap();
    assert_eq!(texts(&kept), ["ada's"]);
    // The same id in the same thread of another resource is foreign too.
    let err = block_on(store.save_messages(vec![message("m1", "t-1", "bob", "x")])).unwrap_err();
    assert!(matches!(err, MemoryError::ForeignMessage { .. }));
}

/// A turn saved in two parts (a run paused for approval saves its input, the resumed run the
/// whole turn) is listed together, where its first part was, ahead of turns saved between.
fn a_turn_saved_again_stays_in_its_place_ahead_of_later_turns(store: &dyn MemoryStore) {
    let t = || thread("t-1", "ada");
    let turn = |ids: &[&str]| -> Vec<Message> {
        ids.iter().map(|id| message(id, "t-1", "ada", id)).collect()
    };
    block_on(store.save_turn(t(), turn(&["a1", "a2"]))).unwrap();
    block_on(store.save_turn(t(), turn(&["p1"]))).unwrap();
    block_on(store.save_turn(t(), turn(&["b1", "b2"]))).unwrap();
    block_on(store.save_turn(t(), turn(&["p1", "p2", "p3"]))).unwrap();
    block_on(store.save_turn(t(), turn(&["c1"]))).unwrap();
    block_on(store.save_messages(turn(&["d1"]))).unwrap();
    let all = block_on(store.list_messages("t-1", None)).unwrap();
    assert_eq!(
        texts(&all),
        ["a1", "a2", "p1", "p2", "p3", "b1", "b2", "c1", "d1"]
    );
    let last = block_on(store.list_messages("t-1", Some(6))).unwrap();
    assert_eq!(texts(&last), ["p2", "p3", "b1", "b2", "c1", "d1"]);
    let by_resource = block_on(store.list_messages_by_resource("ada")).unwrap();
    assert_eq!(texts(&by_resource), texts(&all));
}

fn a_turn_is_saved_whole_or_not_at_all(store: &dyn MemoryStore) {
    block_on(store.save_messages(vec![message("m1", "t-1", "ada", "ada's")])).unwrap();
    let turn = vec![
        message("m2", "t-2", "bob", "hello"),
        message("m1", "t-2", "bob", "taken id"),
    ];
    assert!(block_on(store.save_turn(thread("t-2", "bob"), turn)).is_err());
    assert_eq!(block_on(store.get_thread("t-2")).unwrap(), None);
    assert!(
        block_on(store.list_messages("t-2", None))
            .unwrap()
            .is_empty()
    );

    let turn = vec![
        message("m3", "t-2", "bob", "hello"),
        message("m4", "t-2", "bob", "hi bob"),
    ];
    block_on(store.save_turn(thread("t-2", "bob"), turn)).unwrap();
    assert!(block_on(store.get_thread("t-2")).unwrap().is_some());
    assert_eq!(
        texts(&block_on(store.list_messages("t-2", None)).unwrap()),
        ["hello", "hi bob"]
    );
}

fn a_resources_messages_span_its_threads_and_no_other_resources(store: &dyn MemoryStore) {
    block_on(store.save_messages(vec![
        message("a1", "t-1", "ada", "a1"),
        message("b1", "t-2", "bob", "b1"),
        message("a2", "t-3", "ada", "a2"),
    ]))
    .unwrap();
    let ada = block_on(store.list_messages_by_resource("ada")).unwrap();
    assert_eq!(texts(&ada), ["a1", "a2"]);
    let bob = block_on(store.list_messages_by_resource("bob")).unwrap();
    assert_eq!(texts(&bob), ["b1"]);
}

fn deleted_messages_are_gone(store: &dyn MemoryStore) {
    block_on(store.save_messages(vec![
        message("m1", "t-1", "ada", "m1"),
        message("m2", "t-1", "ada", "m2"),
        message("m3", "t-1", "ada", "m3"),
    ]))
    .unwrap();
    block_on(store.delete_messages(&["m1".to_owned(), "m3".to_owned(), "none".to_owned()]))
        .unwrap();
    assert_eq!(
        texts(&block_on(store.list_messages("t-1", None)).unwrap()),
        ["m2"]
    );
}

fn every_part_of_a_message_round_trips(store: &dyn MemoryStore) {
    let mut m = Message::new(
        Role::Assistant,
        vec![
            Part::Text {
                text: "Looking it up.".into(),
            },
            Part::Reasoning {
                text: "The user wants Oslo.".into(),
            },
            Part::ToolCall(ToolCall {
                tool_call_id: "call-1".into(),
                tool_name: "weather".into(),
                args: serde_json::json!({"city": "Oslo"}),
            }),
            Part::Data {
                name: "progress".into(),
                data: serde_json::json!(0.5),
            },
        ],
    );
    m.thread_id = Some("t-1".into());
    m.resource_id = Some("ada".into());
    m.metadata = Some(serde_json::json!({"source": "test", "n": [1, 2]}));
    block_on(store.save_messages(vec![m.clone()])).unwrap();
    assert_eq!(block_on(store.list_messages("t-1", None)).unwrap(), [m]);
}

fn bi_29_working_memory_round_trips_and_a_write_replaces_it(store: &dyn MemoryStore) {
    let ada = working_memory_key(WorkingMemoryScope::Resource, "ada", "t-1");
    assert_eq!(block_on(store.get_working_memory(&ada)).unwrap(), None);
    block_on(store.set_working_memory(&ada, "# Ada\n- likes: tea".into())).unwrap();
    assert_eq!(
        block_on(store.get_working_memory(&ada)).unwrap().as_deref(),
        Some("# Ada\n- likes: tea")
    );
    block_on(store.set_working_memory(&ada, "# Ada\n- likes: coffee 'now'".into())).unwrap();
    assert_eq!(
        block_on(store.get_working_memory(&ada)).unwrap().as_deref(),
        Some("# Ada\n- likes: coffee 'now'")
    );
    block_on(store.set_working_memory(&ada, String::new())).unwrap();
    assert_eq!(
        block_on(store.get_working_memory(&ada)).unwrap().as_deref(),
        Some("")
    );
}

fn bi_30_each_scope_key_has_its_own_working_memory(store: &dyn MemoryStore) {
    let keys = [
        working_memory_key(WorkingMemoryScope::Resource, "ada", "t-1"),
        working_memory_key(WorkingMemoryScope::Resource, "bob", "t-1"),
        working_memory_key(WorkingMemoryScope::Thread, "ada", "t-1"),
        working_memory_key(WorkingMemoryScope::Thread, "bob", "t-1"),
        working_memory_key(WorkingMemoryScope::Thread, "ada", "t-2"),
    ];
    for (i, key) in keys.iter().enumerate() {
        block_on(store.set_working_memory(key, format!("memory {i}"))).unwrap();
    }
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(
            block_on(store.get_working_memory(key)).unwrap(),
            Some(format!("memory {i}")),
            "{key}"
        );
    }
    assert_eq!(
        block_on(store.get_working_memory("resource:carol")).unwrap(),
        None
    );
}

fn embedding(id: &str, thread: &str, resource: &str, vector: &[f32]) -> MessageEmbedding {
    MessageEmbedding {
        message_id: id.into(),
        thread_id: thread.into(),
        resource_id: resource.into(),
        vector: vector.to_vec(),
    }
}

fn ids(found: &[SimilarMessage]) -> Vec<&str> {
    found.iter().map(|s| s.message_id.as_str()).collect()
}

fn bi_38_a_search_returns_a_resources_most_similar_messages_first(store: &dyn MemoryStore) {
    block_on(store.save_embeddings(vec![
        embedding("a1", "t-1", "ada", &[1.0, 0.0, 0.0]),
        embedding("a2", "t-1", "ada", &[0.0, 1.0, 0.0]),
        embedding("a3", "t-2", "ada", &[0.7, 0.7, 0.0]),
        embedding("a4", "t-2", "ada", &[0.0, 0.0, 1.0]),
        embedding("b1", "t-3", "bob", &[1.0, 0.0, 0.0]),
    ]))
    .unwrap();
    let found = block_on(store.search_embeddings("ada", &[0.9, 0.1, 0.0], 3)).unwrap();
    assert_eq!(ids(&found), ["a1", "a3", "a2"]);
    assert_eq!(found[1].thread_id, "t-2");
    assert!(found[0].score > found[1].score && found[1].score > found[2].score);
    assert!(
        (found[0].score - 0.993_884).abs() < 1e-4,
        "{}",
        found[0].score
    );
    // Bob's vectors are never Ada's results, however similar.
    let all = block_on(store.search_embeddings("ada", &[1.0, 0.0, 0.0], 10)).unwrap();
    assert_eq!(all.len(), 4);
    assert!(!ids(&all).contains(&"b1"));
    assert!(
        block_on(store.search_embeddings("carol", &[1.0, 0.0, 0.0], 10))
            .unwrap()
            .is_empty()
    );
    // Saving a known message's embedding again replaces it.
    block_on(store.save_embeddings(vec![embedding("a4", "t-2", "ada", &[1.0, 0.0, 0.0])])).unwrap();
    let found = block_on(store.search_embeddings("ada", &[1.0, 0.0, 0.0], 2)).unwrap();
    assert_eq!(ids(&found), ["a1", "a4"], "ties in saved order");
}

fn bi_39_an_embedding_of_another_resources_message_is_refused(store: &dyn MemoryStore) {
    block_on(store.save_embeddings(vec![embedding("a1", "t-1", "ada", &[1.0, 0.0])])).unwrap();
    let err = block_on(store.save_embeddings(vec![
        embedding("b1", "t-2", "bob", &[0.0, 1.0]),
        embedding("a1", "t-2", "bob", &[0.0, 1.0]),
    ]))
    .unwrap_err();
    assert!(
        matches!(&err, MemoryError::ForeignMessage { id } if id == "a1"),
        "{err}"
    );
    assert!(
        block_on(store.search_embeddings("bob", &[0.0, 1.0], 5))
            .unwrap()
            .is_empty()
    );
    let ada = block_on(store.search_embeddings("ada", &[0.0, 1.0], 5)).unwrap();
    assert_eq!(ids(&ada), ["a1"]);
    assert!(ada[0].score.abs() < 1e-6, "Ada's vector is unchanged");
}

fn memory_keeps_a_conversation_and_one_resource_never_sees_anothers(store: SharedStore) {
    let memory = Memory::shared(store.0.clone());
    let model = ScriptedModel::new([Turn::text("Hello Ada."), Turn::text("You are Ada.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(memory)
        .build()
        .unwrap();
    let as_ = |thread: &str, resource: &str| {
        GenerateOptions::new().request_context(RequestContext::new().with_thread(thread, resource))
    };
    block_on(agent.generate_with("I am Ada.", as_("t-1", "ada"))).unwrap();
    block_on(agent.generate_with("Who am I?", as_("t-1", "ada"))).unwrap();
    let second = &model.requests()[1].prompt;
    assert!(second.iter().any(|m| m.text() == "I am Ada."));
    assert!(second.iter().any(|m| m.text() == "Hello Ada."));

    // Bob names Ada's thread: refused, nothing read, nothing written.
    let err = block_on(agent.generate_with("Who am I?", as_("t-1", "bob"))).unwrap_err();
    assert!(
        err.to_string().contains("belongs to resource `ada`"),
        "{err}"
    );
    assert_eq!(
        model.requests().len(),
        2,
        "the model never saw Ada's thread for Bob"
    );
    assert_eq!(
        block_on(store.0.list_messages("t-1", None)).unwrap().len(),
        4
    );
    assert!(
        block_on(store.0.list_messages_by_resource("bob"))
            .unwrap()
            .is_empty()
    );
}

fn a_run_ended_by_a_trip_wire_saves_nothing(store: SharedStore) {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("secret plans")]))
        .memory(Memory::shared(store.0.clone()))
        .output(output_step_fn(
            "guard",
            |a: &mut OutputStepArgs<'_, ()>| -> Result<(), ProcessorError> {
                Err(a.abort().reason("no").into())
            },
        ))
        .build()
        .unwrap();
    let cx = RequestContext::new().with_thread("t-1", "ada");
    let r =
        block_on(agent.generate_with("hi", GenerateOptions::new().request_context(cx))).unwrap();
    assert!(r.tripwire.is_some());
    assert_eq!(block_on(store.0.get_thread("t-1")).unwrap(), None);
    assert!(
        block_on(store.0.list_messages("t-1", None))
            .unwrap()
            .is_empty()
    );
}

fn a_paused_run_is_kept_and_taken_once(store: &dyn MemoryStore) {
    let record = |data: &str| PausedRunRecord {
        run_id: "run-1".into(),
        thread_id: Some("t-1".into()),
        resource_id: None,
        expires_at: 1_700_000_000_000,
        data: data.into(),
    };
    assert_eq!(block_on(store.take_paused_run("run-1")).unwrap(), None);
    block_on(store.save_paused_run(record(r#"{"v": 1}"#))).unwrap();
    // Kept again under the same id: replaced.
    block_on(store.save_paused_run(record(r#"{"v": 2, "text": "it's \"quoted\""}"#))).unwrap();
    assert_eq!(
        block_on(store.take_paused_run("run-1")).unwrap(),
        Some(record(r#"{"v": 2, "text": "it's \"quoted\""}"#))
    );
    assert_eq!(block_on(store.take_paused_run("run-1")).unwrap(), None);
}

fn paused_runs_are_listed_by_thread_and_resource(store: &dyn MemoryStore) {
    let record =
        |run: &str, thread: Option<&str>, resource: Option<&str>, expires_at| PausedRunRecord {
            run_id: run.into(),
            thread_id: thread.map(Into::into),
            resource_id: resource.map(Into::into),
            expires_at,
            data: format!(r#"{{"run": "{run}"}}"#),
        };
    let runs = |thread, resource| -> Vec<String> {
        (block_on(store.list_paused_runs(thread, resource)).unwrap())
            .into_iter()
            .map(|r| r.run_id)
            .collect()
    };
    assert!(runs(None, None).is_empty());
    block_on(store.save_paused_run(record("run-b", Some("t-1"), Some("ada"), 20))).unwrap();
    block_on(store.save_paused_run(record("run-a", Some("t-2"), Some("ada"), 20))).unwrap();
    block_on(store.save_paused_run(record("run-c", Some("t-3"), Some("bob"), 10))).unwrap();
    block_on(store.save_paused_run(record("run-d", None, None, 30))).unwrap();
    // Oldest to expire first, then by run id.
    assert_eq!(runs(None, None), ["run-c", "run-a", "run-b", "run-d"]);
    assert_eq!(runs(None, Some("ada")), ["run-a", "run-b"]);
    assert_eq!(runs(Some("t-1"), None), ["run-b"]);
    assert_eq!(runs(Some("t-1"), Some("bob")), Vec::<String>::new());
    // Listed whole, and not taken.
    let listed = block_on(store.list_paused_runs(Some("t-3"), None)).unwrap();
    assert_eq!(listed, [record("run-c", Some("t-3"), Some("bob"), 10)]);
    assert_eq!(
        block_on(store.take_paused_run("run-c")).unwrap(),
        Some(record("run-c", Some("t-3"), Some("bob"), 10))
    );
    assert_eq!(runs(None, Some("bob")), Vec::<String>::new());
}

fn a_run_paused_for_approval_resumes_from_the_store_in_another_agent(store: SharedStore) {
    let refund = || {
        processors_runtime::tool::tool(
            "refund",
            "Refunds an order",
            serde_json::json!({"type": "object"}),
            |_| async { Ok(serde_json::json!("refunded")) },
        )
    };
    let agent = |model: ScriptedModel| {
        Agent::builder()
            .model(model)
            .memory(Memory::shared(store.0.clone()))
            .tool(refund())
            .output(tool_call_fn("ask", |_: &mut ToolCallArgs<'_, ()>| {
                ToolCallAction::approval("refunds move money")
            }))
            .build()
            .unwrap()
    };
    let first = agent(ScriptedModel::new([Turn::empty().tool_call(
        "call-1",
        "refund",
        serde_json::json!({"order": 7}),
    )]));
    let cx = RequestContext::new().with_thread("t-1", "ada");
    let paused =
        block_on(first.generate_with("Refund 7", GenerateOptions::new().request_context(cx)))
            .unwrap();
    assert_eq!(paused.finish_reason, FinishReason::AwaitingApproval);
    assert_eq!(
        texts(&block_on(store.0.list_messages("t-1", None)).unwrap()),
        ["Refund 7"],
        "the paused turn's input, in its place"
    );
    // Another agent on the same store, as another process would be, finds the run and the
    // call it waits on by the conversation, and answers it.
    let second = agent(ScriptedModel::new([Turn::text("Refunded.")]));
    let waiting = block_on(second.waiting_runs(Some("t-1"), None)).unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].run_id, paused.run_id);
    assert_eq!(waiting[0].resource_id.as_deref(), Some("ada"));
    let call = &waiting[0].requests[0];
    assert_eq!(
        (call.tool_name.as_str(), &call.args),
        ("refund", &serde_json::json!({"order": 7}))
    );
    assert!(
        block_on(second.waiting_runs(None, Some("bob")))
            .unwrap()
            .is_empty()
    );
    let answer = Approval::new(&waiting[0].run_id).approve(&call.tool_call_id);
    let done = block_on(second.resume(answer.clone())).unwrap();
    assert_eq!(done.text, "Refunded.");
    assert_eq!(
        texts(&block_on(store.0.list_messages("t-1", None)).unwrap()),
        ["Refund 7", "", "", "Refunded."]
    );
    assert!(matches!(
        block_on(first.resume(answer)),
        Err(AgentError::Approval(ApprovalError::Unknown { .. }))
    ));
}

/// A store behind the agent's memory.
struct SharedStore(std::sync::Arc<dyn MemoryStore>);

/// Nothing to set up: the store needs no runtime.
fn no_runtime() {}

macro_rules! conformance {
    ($($store:ident => $make:expr, within $cx:expr;)*) => {$(
        mod $store {
            use super::*;

            /// The store, or `None` when its server is down and may be skipped.
            fn store() -> Option<SharedStore> {
                let store: Option<_> = $make;
                Some(SharedStore(std::sync::Arc::new(store?)))
            }

            #[test]
            fn a_thread_round_trips_and_is_updated_in_place() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_thread_round_trips_and_is_updated_in_place(&*s.0);
            }
            #[test]
            fn messages_keep_their_order_and_a_limit_keeps_the_last() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::messages_keep_their_order_and_a_limit_keeps_the_last(&*s.0);
            }
            #[test]
            fn saving_a_known_id_replaces_the_message_in_place() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::saving_a_known_id_replaces_the_message_in_place(&*s.0);
            }
            #[test]
            fn a_foreign_message_id_is_refused_and_nothing_of_its_batch_is_saved() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_foreign_message_id_is_refused_and_nothing_of_its_batch_is_saved(&*s.0);
            }
            #[test]
            fn a_turn_saved_again_stays_in_its_place_ahead_of_later_turns() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_turn_saved_again_stays_in_its_place_ahead_of_later_turns(&*s.0);
            }
            #[test]
            fn a_turn_is_saved_whole_or_not_at_all() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_turn_is_saved_whole_or_not_at_all(&*s.0);
            }
            #[test]
            fn a_resources_messages_span_its_threads_and_no_other_resources() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_resources_messages_span_its_threads_and_no_other_resources(&*s.0);
            }
            #[test]
            fn deleted_messages_are_gone() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::deleted_messages_are_gone(&*s.0);
            }
            #[test]
            fn every_part_of_a_message_round_trips() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::every_part_of_a_message_round_trips(&*s.0);
            }
            #[test]
            fn bi_29_working_memory_round_trips_and_a_write_replaces_it() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::bi_29_working_memory_round_trips_and_a_write_replaces_it(&*s.0);
            }
            #[test]
            fn bi_30_each_scope_key_has_its_own_working_memory() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::bi_30_each_scope_key_has_its_own_working_memory(&*s.0);
            }
            #[test]
            fn bi_38_a_search_returns_a_resources_most_similar_messages_first() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::bi_38_a_search_returns_a_resources_most_similar_messages_first(&*s.0);
            }
            #[test]
            fn bi_39_an_embedding_of_another_resources_message_is_refused() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::bi_39_an_embedding_of_another_resources_message_is_refused(&*s.0);
            }
            #[test]
            fn memory_keeps_a_conversation_and_one_resource_never_sees_anothers() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::memory_keeps_a_conversation_and_one_resource_never_sees_anothers(s);
            }
            #[test]
            fn a_paused_run_is_kept_and_taken_once() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_paused_run_is_kept_and_taken_once(&*s.0);
            }
            #[test]
            fn paused_runs_are_listed_by_thread_and_resource() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::paused_runs_are_listed_by_thread_and_resource(&*s.0);
            }
            #[test]
            fn a_run_paused_for_approval_resumes_from_the_store_in_another_agent() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_run_paused_for_approval_resumes_from_the_store_in_another_agent(s);
            }
            #[test]
            fn a_run_ended_by_a_trip_wire_saves_nothing() {
                let _cx = $cx;
                let Some(s) = store() else { return };
                super::a_run_ended_by_a_trip_wire_saves_nothing(s);
            }
        }
    )*};
}

conformance! {
    in_memory => Some(InMemoryStore::new()), within no_runtime();
    sqlite_in_memory => Some(SqliteStore::in_memory().unwrap()), within no_runtime();
    sqlite_file => Some(SqliteStore::open(temp_db()).unwrap()), within no_runtime();
}

#[cfg(feature = "postgres")]
mod postgres_support {
    use super::services;
    use processors_builtins::storage::PostgresStore;
    use std::sync::LazyLock;

    /// The runtime the PostgreSQL client runs on; the tests' `block_on` calls run inside its
    /// context.
    pub static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    });

    pub fn within() -> tokio::runtime::EnterGuard<'static> {
        RUNTIME.enter()
    }

    /// A store in a schema of its own, on the tests' server.
    pub fn store() -> Option<PostgresStore> {
        let url = services::postgres_url()?;
        let store = futures::executor::block_on(
            PostgresStore::builder(url)
                .schema(services::unique("conformance"))
                .max_connections(4)
                .connect(),
        )
        .unwrap();
        Some(store)
    }
}

#[cfg(feature = "postgres")]
conformance! {
    postgres => postgres_support::store(), within postgres_support::within();
}
