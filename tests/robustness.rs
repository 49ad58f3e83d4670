//! Bad input gets a clear error and loses nothing: panicking and misbehaving processors,
//! provider failures, dropped streams, storage failures.

mod common;

use common::*;
use futures::StreamExt;
use futures::future::BoxFuture;
use processors::memory::{MemoryError, Thread};
use processors::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn base(m: &ScriptedModel) -> processors::agent::AgentBuilder {
    Agent::builder().model(m.clone())
}

fn thread() -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "u"))
}

both!(
    panicking_stream_processor_ends_the_run_naming_it_and_saves_nothing,
    |path| {
        let store = InMemoryStore::new();
        let m = model_text(["a", "boom", "c"]);
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()), output: [
            Probe::new("explosive").stream(|a| {
                if a.chunk.text_delta() == Some("boom") { panic!("processor bug"); }
                Ok(StreamAction::Pass)
            }),
        ]);
        let (chunks, result) = collect(&*agent, "hi", thread()).await;
        let err = result.unwrap_err();
        assert!(
            matches!(&err, AgentError::Panicked { id, hook: Hook::OutputStream, message } if id == "explosive" && message == "processor bug"),
            "{err}"
        );
        assert_eq!(deltas(&chunks), ["a"]);
        assert_eq!(types(&chunks).last().unwrap(), "error");
        assert!(store.list_messages("t", None).await.unwrap().is_empty());
    }
);

both!(
    panicking_input_processor_is_reported_with_its_hook,
    |path| {
        let m = model_text(["a"]);
        let agent =
            build_agent!(path, model: m, input: [Probe::new("bad-input").input(|_| panic!("no"))]);
        let err = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "processor `bad-input` panicked in process_input: no; the run was stopped and nothing was saved"
        );
        assert_eq!(m.calls(), 0);
    }
);

both!(
    failing_non_stream_hook_ends_the_run_naming_the_processor,
    |path| {
        let m = model_text(["a"]);
        let agent = build_agent!(path, model: m, output: [Probe::new("strict").output_step(|_| Err(ProcessorError::msg("database down")))]);
        let err = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "processor `strict` failed in process_output_step: database down"
        );
    }
);

both!(
    returned_messages_with_duplicate_ids_are_an_invalid_result,
    |path| {
        let m = model_text(["a"]);
        let agent = build_agent!(path, model: m, input: [
            Probe::new("dup").input(|a| {
                let first = a.messages[0].clone();
                Ok(vec![first.clone(), first].into())
            }),
        ]);
        let err = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, AgentError::InvalidResult { id, hook: Hook::Input, .. } if id == "dup"),
            "{err}"
        );
        assert!(err.to_string().contains("twice"), "{err}");
    }
);

both!(
    a_system_set_with_a_user_message_is_an_invalid_result,
    |path| {
        let m = model_text(["a"]);
        let agent = build_agent!(path, model: m, input: [
            Probe::new("sys").input_step(|_| Ok(StepOverrides::new().system_messages(vec![Message::user("not system")]))),
        ]);
        let err = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, AgentError::InvalidResult { id, hook: Hook::InputStep, .. } if id == "sys"),
            "{err}"
        );
    }
);

both!(unknown_active_tool_is_an_invalid_result, |path| {
    let m = model_text(["a"]);
    let agent = build_agent!(path, model: m, tools: [echo_tool("a")], input: [
        Probe::new("tools").input_step(|_| Ok(StepOverrides::new().active_tools(["nope"]))),
    ]);
    let err = agent
        .generate_with("hi".into(), GenerateOptions::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`nope`"), "{err}");
});

/// State of a different type under the id `shared`.
struct OtherState;
impl Processor for OtherState {
    type State = u64;
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    fn id(&self) -> &str {
        "shared"
    }
}
impl OutputProcessor for OtherState {}

both!(one_id_with_two_state_types_is_refused, |path| {
    let m = model_text(["a"]);
    let agent = build_agent!(path, model: m, output: [Probe::new("shared"), OtherState]);
    let err = agent
        .generate_with("hi".into(), GenerateOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::StateConflict { ref id, .. } if id == "shared"),
        "{err}"
    );
    assert_eq!(m.calls(), 0);
});

/// A model whose stream records whether it was dropped.
struct Watched {
    dropped: Arc<AtomicBool>,
}

struct Guard(Arc<AtomicBool>);
impl Drop for Guard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl LanguageModel for Watched {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "watched"
    }
    fn stream(
        &self,
        _: processors::model::ModelRequest,
    ) -> BoxFuture<'_, Result<processors::model::ModelStream, ApiError>> {
        let guard = Guard(self.dropped.clone());
        let s = futures::stream::iter(0..).map(move |i| {
            let _keep = &guard;
            Ok(ChunkKind::TextDelta {
                id: "t".into(),
                text: format!("{i} "),
            })
        });
        Box::pin(async move { Ok(Box::pin(s) as processors::model::ModelStream) })
    }
}

#[tokio::test]
async fn dropping_the_stream_stops_the_run_and_saves_nothing() {
    let store = InMemoryStore::new();
    let dropped = Arc::new(AtomicBool::new(false));
    let agent = Agent::builder()
        .model(Watched {
            dropped: dropped.clone(),
        })
        .memory(Memory::new(store.clone()))
        .build()
        .unwrap();
    let mut stream = agent.stream_with("hi", thread());
    let mut seen = 0;
    while let Some(c) = stream.next().await {
        if c.text_delta().is_some() {
            seen += 1;
        }
        if seen == 3 {
            break;
        }
    }
    drop(stream);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the model stream was not dropped"
    );
    assert!(store.list_messages("t", None).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_model_error_mid_stream_ends_with_an_error_chunk() {
    let m = ScriptedModel::new([
        Turn::deltas(["a", "b"]).fail_mid_stream(ApiError::other("connection reset", true))
    ]);
    let agent = base(&m).build().unwrap();
    let (chunks, result) = collect(&agent, "hi", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["a", "b"]);
    assert_eq!(types(&chunks).last().unwrap(), "error");
    assert!(matches!(result.unwrap_err(), AgentError::Api(e) if e.message == "connection reset"));
}

#[tokio::test]
async fn a_model_stream_without_finish_is_an_error() {
    let m = ScriptedModel::new([Turn::empty()
        .chunk(ChunkKind::TextDelta {
            id: "t".into(),
            text: "x".into(),
        })
        .fail_mid_stream(ApiError::other("the provider's stream ended early", true))]);
    let agent = base(&m).build().unwrap();
    let err = agent.generate("hi").await.unwrap_err();
    assert!(err.to_string().contains("ended early"), "{err}");
}

#[tokio::test]
async fn unrecovered_api_error_is_returned_and_streams_an_error_chunk() {
    let m = ScriptedModel::new([Turn::error(ApiError::new(401, "bad key"))]);
    let agent = base(&m).build().unwrap();
    let (chunks, result) = collect(&agent, "hi", GenerateOptions::new()).await;
    assert_eq!(types(&chunks), ["start", "error"]);
    let err = result.unwrap_err();
    assert_eq!(err.to_string(), "model API error (status 401): bad key");
}

#[tokio::test]
async fn failing_and_unknown_tools_become_tool_errors_and_the_run_goes_on() {
    let m = ScriptedModel::new([
        Turn::empty()
            .tool_call("c1", "broken", json!({}))
            .tool_call("c2", "missing", json!({})),
        Turn::text("recovered"),
    ]);
    let broken = tool("broken", "fails", json!({}), |_| async {
        Err("disk full".into())
    });
    let agent = base(&m).tool(broken).build().unwrap();
    let (chunks, result) = collect(&agent, "hi", GenerateOptions::new()).await;
    let errors: Vec<_> = chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::ToolError { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        [
            "disk full",
            "the model called `missing`, which is not an available tool"
        ]
    );
    let r = result.unwrap();
    assert_eq!(r.text, "recovered");
    assert!(r.tool_results.iter().all(|t| t.is_error));
}

#[tokio::test]
async fn a_panicking_tool_is_a_tool_error() {
    let m = ScriptedModel::new([
        Turn::empty().tool_call("c1", "bad", json!({})),
        Turn::text("ok"),
    ]);
    let bad = tool("bad", "panics", json!({}), |_| async { panic!("tool bug") });
    let agent = base(&m).tool(bad).build().unwrap();
    let r = agent.generate("hi").await.unwrap();
    assert!(
        r.tool_results[0]
            .result
            .as_str()
            .unwrap()
            .contains("tool bug")
    );
}

/// A store whose writes fail.
#[derive(Clone, Default)]
struct FailingStore(InMemoryStore);

impl MemoryStore for FailingStore {
    fn get_thread<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
        self.0.get_thread(id)
    }
    fn save_thread(&self, t: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.0.save_thread(t)
    }
    fn list_messages<'a>(
        &'a self,
        id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.0.list_messages(id, limit)
    }
    fn list_messages_by_resource<'a>(
        &'a self,
        r: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.0.list_messages_by_resource(r)
    }
    fn save_messages(&self, _: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async { Err(MemoryError::Backend("disk is read-only".into())) })
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>> {
        self.0.delete_messages(ids)
    }
}

#[tokio::test]
async fn a_storage_failure_is_a_clear_error_naming_memory() {
    let m = ScriptedModel::new([Turn::text("a")]);
    let agent = base(&m)
        .memory(Memory::new(FailingStore::default()))
        .build()
        .unwrap();
    let err = agent.generate_with("hi", thread()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "processor `memory` failed in process_output_result: memory storage failed: disk is read-only"
    );
}

#[tokio::test]
async fn a_thread_of_another_resource_is_refused() {
    let store = InMemoryStore::new();
    let m = ScriptedModel::cycle([Turn::text("a")]);
    let agent = base(&m).memory(Memory::new(store.clone())).build().unwrap();
    agent.generate_with("mine", thread()).await.unwrap();
    let intruder = GenerateOptions::new()
        .request_context(RequestContext::new().with_thread("t", "someone-else"));
    let err = agent.generate_with("yours?", intruder).await.unwrap_err();
    assert!(err.to_string().contains("belongs to resource `u`"), "{err}");
    assert_eq!(m.calls(), 1, "no model call for the refused thread");
}

both!(
    on_violation_fires_for_blocks_and_warnings_and_survives_a_panicking_callback,
    |path| {
        let m = model_text(["fine", "iffy", "bad"]);
        let seen = Arc::new(AtomicUsize::new(0));
        let log = Log::new();
        let (s, l) = (seen.clone(), log.clone());
        let on_violation = move |v: &Violation| {
            l.push(format!("{:?} {} {}", v.kind, v.processor_id, v.reason));
            if s.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("callback bug");
            }
        };
        let agent = build_agent!(path, model: m, on_violation: on_violation, output: [
            Probe::new("mod").stream(|a| match a.chunk.text_delta() {
                Some("iffy") => Err(a.abort().reason("borderline").warn()),
                Some("bad") => Err(a.abort().reason("blocked").into()),
                _ => Ok(StreamAction::Pass),
            }),
        ]);
        let (chunks, _) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["fine", "iffy"]);
        assert_eq!(log.entries(), ["Warn mod borderline", "Block mod blocked"]);
    }
);

#[test]
fn builder_refuses_missing_model_and_misplaced_memory() {
    use processors::agent::BuildError;
    assert_eq!(
        Agent::builder().build().err(),
        Some(BuildError::MissingModel)
    );
    let m = ScriptedModel::new([]);
    let memory = Memory::new(InMemoryStore::new());
    let err = base(&m)
        .memory(memory.clone())
        .output(memory.clone())
        .output(Probe::new("late"))
        .build()
        .err();
    assert_eq!(err, Some(BuildError::MemoryNotLast));
    let err = base(&m).input(memory).build().err();
    assert_eq!(err, Some(BuildError::MemoryWithoutMemory("input")));
}

fn model_text<const N: usize>(d: [&str; N]) -> ScriptedModel {
    ScriptedModel::new([Turn::deltas(d)])
}

#[tokio::test]
async fn processor_lists_are_built_per_request_from_the_context() {
    let m = ScriptedModel::cycle([Turn::text("answer")]);
    let agent = Agent::builder()
        .model(m.clone())
        .output_from(|cx| match cx.value("tier").and_then(|v| v.as_str()) {
            Some("shout") => DynPipeline::new().with(Probe::new("upper").stream(upper)),
            _ => DynPipeline::new(),
        })
        .build()
        .unwrap();
    let with = |tier: &str| {
        GenerateOptions::new()
            .request_context(RequestContext::new().with_value("tier", json!(tier)))
    };
    assert_eq!(
        agent.generate_with("a", with("shout")).await.unwrap().text,
        "ANSWER"
    );
    assert_eq!(
        agent.generate_with("b", with("plain")).await.unwrap().text,
        "answer"
    );
    // A per-call list still wins over the built one.
    let per_call = with("shout").output_processors(DynPipeline::new());
    assert_eq!(
        agent.generate_with("c", per_call).await.unwrap().text,
        "answer"
    );
}

#[test]
fn agents_and_streams_move_across_threads() {
    fn send_sync<T: Send + Sync + Clone + 'static>() {}
    fn send<T: Send + 'static>() {}
    send_sync::<Agent>();
    send_sync::<Agent<(Probe,), (Probe, Probe), ()>>();
    send::<AgentStream>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_never_share_state() {
    let m = ScriptedModel::cycle([Turn::deltas(["a", "b", "c"])]).without_recording();
    let counted = Log::new();
    let c = counted.clone();
    let agent = Agent::builder()
        .model(m)
        .output_pipeline((Probe::new("count")
            .stream(|a| {
                if a.chunk.text_delta().is_some() {
                    *a.state = json!(a.state.as_u64().unwrap_or(0) + 1);
                }
                Ok(StreamAction::Pass)
            })
            .output_result(move |a| {
                c.push(a.state.to_string());
                Ok(().into())
            }),))
        .build()
        .unwrap();
    let runs: Vec<_> = (0..64)
        .map(|i| {
            let agent = agent.clone();
            tokio::spawn(async move {
                let mut stream = agent.stream(format!("run {i}"));
                while stream.next().await.is_some() {
                    tokio::task::yield_now().await;
                }
                stream.finish().await.unwrap().text
            })
        })
        .collect();
    for r in runs {
        assert_eq!(r.await.unwrap(), "abc");
    }
    let counts = counted.entries();
    assert_eq!(counts.len(), 64);
    assert!(counts.iter().all(|c| c == "3"), "{counts:?}");
}
