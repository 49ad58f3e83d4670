//! Bad input gets a clear error and loses nothing: panicking and misbehaving processors,
//! provider failures, dropped streams, storage failures.

use crate::common;

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

on_every_path!(
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
            matches!(&err, AgentError::Hook(HookError::Panicked { id, hook: Hook::OutputStream, message }) if id == "explosive" && message == "processor bug"),
            "{err}"
        );
        assert_eq!(deltas(&chunks), ["a"]);
        assert_eq!(types(&chunks).last().unwrap(), "error");
        assert!(store.list_messages("t", None).await.unwrap().is_empty());
    }
);

on_every_path!(
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

on_every_path!(
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

on_every_path!(
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
            matches!(&err, AgentError::Hook(HookError::InvalidResult { id, hook: Hook::Input, .. }) if id == "dup"),
            "{err}"
        );
        assert!(err.to_string().contains("twice"), "{err}");
    }
);

on_every_path!(
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
            matches!(&err, AgentError::Hook(HookError::InvalidResult { id, hook: Hook::InputStep, .. }) if id == "sys"),
            "{err}"
        );
    }
);

on_every_path!(unknown_active_tool_is_an_invalid_result, |path| {
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

on_every_path!(one_id_with_two_state_types_is_refused, |path| {
    let m = model_text(["a"]);
    let agent = build_agent!(path, model: m, output: [Probe::new("shared"), OtherState]);
    // Every call is refused, not only the first.
    for _ in 0..2 {
        let err = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, AgentError::Hook(HookError::StateConflict { ref id, .. }) if id == "shared"),
            "{err}"
        );
    }
    assert_eq!(m.calls(), 0);
});

/// Sets its flag when dropped: held by a model's stream, says whether the stream was.
struct Guard(Arc<AtomicBool>);
impl Drop for Guard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A model whose endless stream records whether it was dropped.
fn watched(dropped: &Arc<AtomicBool>) -> StreamModel {
    let dropped = dropped.clone();
    StreamModel::new(move || {
        let guard = Guard(dropped.clone());
        Box::pin(futures::stream::iter(0..).map(move |i: u64| {
            let _keep = &guard;
            Ok(ChunkKind::TextDelta {
                id: "t".into(),
                text: format!("{i} "),
            })
        }))
    })
}

#[tokio::test]
async fn dropping_the_stream_stops_the_run_and_saves_nothing() {
    let dropped = Arc::new(AtomicBool::new(false));
    let agent = Agent::builder().model(watched(&dropped)).build().unwrap();
    let mut stream = agent.stream("hi");
    let mut seen = 0;
    while let Some(c) = stream.next().await {
        seen += usize::from(c.text_delta().is_some());
        if seen == 3 {
            break;
        }
    }
    drop(stream);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the model stream was not dropped"
    );
}

#[tokio::test]
async fn a_stream_dropped_before_its_end_saves_nothing_while_a_finished_one_saves() {
    let store = InMemoryStore::new();
    let m = ScriptedModel::cycle([Turn::repeated("word ", 500)]);
    let agent = Agent::builder()
        .model(m)
        .memory(Memory::new(store.clone()))
        .build()
        .unwrap();
    let mut stream = agent.stream_with("first", thread());
    for _ in 0..5 {
        stream.next().await;
    }
    drop(stream);
    assert!(
        store.list_messages("t", None).await.unwrap().is_empty(),
        "a dropped run saved"
    );
    let finished = agent
        .stream_with("second", thread())
        .finish()
        .await
        .unwrap();
    assert_eq!(finished.text.len(), 2500);
    assert_eq!(
        store.list_messages("t", None).await.unwrap().len(),
        2,
        "a finished run saves"
    );
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

/// A model whose stream ends without a `finish` chunk.
struct Unfinished;

impl LanguageModel for Unfinished {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "unfinished"
    }
    fn stream(
        &self,
        _: processors::model::ModelRequest,
    ) -> BoxFuture<'_, Result<processors::model::ModelStream, ApiError>> {
        let s = futures::stream::iter([Ok(ChunkKind::TextDelta {
            id: "t".into(),
            text: "x".into(),
        })]);
        Box::pin(async move { Ok(Box::pin(s) as processors::model::ModelStream) })
    }
}

#[tokio::test]
async fn a_model_stream_without_finish_is_an_error() {
    let agent = Agent::builder().model(Unfinished).build().unwrap();
    let (chunks, result) = collect(&agent, "hi", GenerateOptions::new()).await;
    let err = result.unwrap_err();
    assert!(
        err.to_string().contains("ended without a finish chunk"),
        "{err}"
    );
    assert_eq!(types(&chunks).last().unwrap(), "error");
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

/// An in-memory store whose message writes fail, or take a while.
#[derive(Clone)]
struct TestStore {
    inner: InMemoryStore,
    on_save: OnSave,
}

#[derive(Clone, Copy)]
enum OnSave {
    Fail,
    Wait(std::time::Duration),
}

impl TestStore {
    fn new(on_save: OnSave) -> Self {
        TestStore {
            inner: InMemoryStore::new(),
            on_save,
        }
    }
}

impl MemoryStore for TestStore {
    fn get_thread<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
        self.inner.get_thread(id)
    }
    fn save_thread(&self, t: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.inner.save_thread(t)
    }
    fn list_messages<'a>(
        &'a self,
        id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.inner.list_messages(id, limit)
    }
    fn list_messages_by_resource<'a>(
        &'a self,
        r: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.inner.list_messages_by_resource(r)
    }
    fn save_messages(&self, ms: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async move {
            match self.on_save {
                OnSave::Fail => Err(MemoryError::Backend("disk is read-only".into())),
                OnSave::Wait(d) => {
                    tokio::time::sleep(d).await;
                    self.inner.save_messages(ms).await
                }
            }
        })
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>> {
        self.inner.delete_messages(ids)
    }
}

#[tokio::test]
async fn a_storage_failure_is_a_clear_error_naming_memory() {
    let m = ScriptedModel::new([Turn::text("a")]);
    let agent = base(&m)
        .memory(Memory::new(TestStore::new(OnSave::Fail)))
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

on_every_path!(
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

#[test]
fn builder_recognises_memory_behind_a_pointer() {
    use processors::agent::BuildError;
    static MEMORY: std::sync::LazyLock<Memory> =
        std::sync::LazyLock::new(|| Memory::new(InMemoryStore::new()));
    let m = ScriptedModel::new([]);
    let memory = Memory::new(InMemoryStore::new());
    let err = base(&m)
        .memory(memory.clone())
        .output(Arc::new(memory.clone()))
        .output(Probe::new("late"))
        .build()
        .err();
    assert_eq!(err, Some(BuildError::MemoryNotLast));
    let err = base(&m).input(Arc::new(memory)).build().err();
    assert_eq!(err, Some(BuildError::MemoryWithoutMemory("input")));
    let err = base(&m).input_ref(boxed(&*MEMORY)).build().err();
    assert_eq!(err, Some(BuildError::MemoryWithoutMemory("input")));
}

/// A processor with only `process_output_result`.
struct OutputOnly(&'static str);

impl Processor for OutputOnly {
    type State = ();
    const HOOKS: Hooks = Hooks::OUTPUT_RESULT;
    fn id(&self) -> &str {
        self.0
    }
}
impl OutputProcessor for OutputOnly {}

#[test]
fn builder_refuses_a_processor_in_a_list_it_has_no_hook_for() {
    use processors::agent::BuildError;
    let m = ScriptedModel::new([]);
    let err = base(&m).input_ref(boxed(OutputOnly("late"))).build().err();
    assert!(
        matches!(&err, Some(BuildError::Misplaced { id, list: "input", .. }) if id == "late"),
        "{err:?}"
    );
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("it belongs in `output`"), "{message}");
    let err = base(&m).error_ref(boxed(OutputOnly("late"))).build().err();
    assert!(
        matches!(err, Some(BuildError::Misplaced { list: "error", .. })),
        "{err:?}"
    );
    assert!(
        base(&m)
            .output_ref(boxed(OutputOnly("late")))
            .build()
            .is_ok()
    );
}

#[tokio::test]
async fn a_per_call_list_with_a_misplaced_processor_fails_the_run_before_the_model() {
    use processors::agent::BuildError;
    let m = ScriptedModel::new([Turn::text("never")]);
    let agent = base(&m).build().unwrap();
    let options = GenerateOptions::new().input_processors(DynPipeline::new().with(OutputOnly("o")));
    let err = agent.generate_with("hi", options).await.unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::Config(BuildError::Misplaced { list: "input", .. })
        ),
        "{err}"
    );
    assert_eq!(m.calls(), 0);
}

#[tokio::test]
async fn a_processor_of_the_user_with_the_id_memory_is_not_taken_for_memory() {
    let m = ScriptedModel::new([Turn::text("answer")]);
    let log = Log::new();
    let l = log.clone();
    let agent = base(&m)
        .output(Probe::new("memory").stream(upper))
        .output(Probe::new("after").output_result(move |_| {
            l.push("after ran");
            Ok(OutputOutcome::Unchanged)
        }))
        .build()
        .expect("a user processor named `memory` needs no agent memory");
    assert_eq!(agent.generate("hi").await.unwrap().text, "ANSWER");
    assert_eq!(log.entries(), ["after ran"]);
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

on_every_path!(
    a_written_chunk_starts_after_its_writer_and_cannot_loop,
    |path| {
        let m = ScriptedModel::new([Turn::text("hi").chunk(ChunkKind::Data {
            name: "seed".into(),
            data: json!(0),
            transient: true,
        })]);
        let log = Log::new();
        let (l1, l2) = (log.clone(), log.clone());
        let agent = build_agent!(path, model: m, output: [
            Probe::new("before").data_parts().stream(move |a| {
                if let ChunkKind::Data { name, .. } = &a.chunk.kind {
                    l1.push(format!("before saw {name}"));
                }
                Ok(StreamAction::Pass)
            }),
            // Writes one chunk for every data chunk it sees: its own would loop forever.
            Probe::new("echo").data_parts().stream(|a| {
                if let ChunkKind::Data { name, .. } = &a.chunk.kind {
                    a.writer.write_transient(format!("echo-{name}"), json!(1));
                }
                Ok(StreamAction::Pass)
            }),
            Probe::new("after").data_parts().stream(move |a| {
                if let ChunkKind::Data { name, .. } = &a.chunk.kind {
                    l2.push(format!("after saw {name}"));
                }
                Ok(StreamAction::Pass)
            }),
        ]);
        let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
        assert!(r.is_ok());
        assert_eq!(
            log.entries(),
            ["before saw seed", "after saw seed", "after saw echo-seed"]
        );
        assert_eq!(chunks.iter().filter(|c| c.is_data()).count(), 2);
    }
);

on_every_path!(
    a_warning_is_reported_even_when_a_later_processor_aborts_the_chunk,
    |path| {
        let m = ScriptedModel::new([Turn::text("bad")]);
        let log = Log::new();
        let l = log.clone();
        let on_violation = move |v: &Violation| l.push(format!("{:?} {}", v.kind, v.processor_id));
        let agent = build_agent!(path, model: m, on_violation: on_violation, output: [
            Probe::new("warner").stream(|a| match a.chunk.text_delta() {
                Some(_) => Err(a.abort().reason("iffy").warn()),
                None => Ok(StreamAction::Pass),
            }),
            Probe::new("blocker").stream(|a| match a.chunk.text_delta() {
                Some(_) => Err(a.abort().reason("bad").into()),
                None => Ok(StreamAction::Pass),
            }),
        ]);
        generate(&*agent, "x").await;
        assert_eq!(log.entries(), ["Warn warner", "Block blocker"]);
    }
);

on_every_path!(a_cache_of_delivered_chunks_replays_redacted_text, |path| {
    let m = ScriptedModel::cycle([Turn::text("my secret")]);
    let cache: Arc<std::sync::Mutex<Option<LlmResponse>>> = Arc::default();
    let (read, write) = (cache.clone(), cache.clone());
    let agent = build_agent!(path, model: m, input: [
        Probe::new("cache-read").llm_request(move |_| {
            Ok(match read.lock().unwrap().clone() {
                Some(hit) => LlmRequestAction::Respond(hit),
                None => LlmRequestAction::Continue,
            })
        }),
    ], output: [
        Probe::new("redact").stream(|a| Ok(match a.chunk.text_delta() {
            Some(t) => a.chunk.clone().map_text(|_| t.replace("secret", "[x]")).into(),
            None => StreamAction::Pass,
        })),
        Probe::new("cache-write").llm_response(move |a| {
            if !a.from_cache {
                *write.lock().unwrap() = Some(a.delivered.clone());
            }
            Ok(())
        }),
    ]);
    assert_eq!(generate(&*agent, "a").await.text, "my [x]");
    let (chunks, r) = collect(&*agent, "b", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["my [x]"]);
    assert_eq!(r.unwrap().text, "my [x]");
    assert_eq!(m.calls(), 1, "the second answer came from the cache");
});

/// A tool that writes a data chunk before answering.
struct Progress;

impl Tool for Progress {
    fn name(&self) -> &str {
        "progress"
    }
    fn description(&self) -> &str {
        "Reports progress"
    }
    fn parameters(&self) -> &serde_json::Value {
        static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| json!({"type": "object"}))
    }
    fn execute<'a>(
        &'a self,
        _: serde_json::Value,
        mut cx: processors::tool::ToolContext<'a>,
    ) -> BoxFuture<'a, Result<serde_json::Value, processors::BoxError>> {
        cx.writer.write("progress", json!({"done": 100}));
        cx.writer.write_transient("spinner", json!(1));
        Box::pin(async { Ok(json!("ok")) })
    }
}

#[tokio::test]
async fn data_written_by_tools_is_streamed_and_saved_with_the_results() {
    let store = InMemoryStore::new();
    let m = ScriptedModel::new([
        Turn::empty().tool_call("c1", "progress", json!({})),
        Turn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(m)
        .tool(Arc::new(Progress))
        .memory(Memory::new(store.clone()))
        .build()
        .unwrap();
    let (chunks, r) = collect(&agent, "go", thread()).await;
    r.unwrap();
    assert_eq!(chunks.iter().filter(|c| c.is_data()).count(), 2);
    let saved = store.list_messages("t", None).await.unwrap();
    let tool_msg = saved.iter().find(|m| m.role == Role::Tool).unwrap();
    let names: Vec<_> = tool_msg
        .content
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Data { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["progress"]);
}

on_every_path!(feedback_ends_once_a_step_is_accepted, |path| {
    let m = ScriptedModel::new([
        Turn::text("bad"),
        Turn::empty().tool_call("c1", "weather", json!({})),
        Turn::text("final"),
    ]);
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], max_processor_retries: 2, output: [
        Probe::new("judge").output_step(|a| {
            if a.text == "bad" {
                return Err(a.abort().reason("no").retry(true).into());
            }
            Ok(().into())
        }),
    ]);
    generate(&*agent, "x").await;
    let reqs = m.requests();
    let feedback = |i: usize| {
        texts_of(&reqs[i].prompt, Role::System)
            .iter()
            .any(|t| t.contains("[Processor Feedback]"))
    };
    assert!(feedback(1), "the retry carries the feedback");
    assert!(!feedback(2), "the step after the accepted one does not");
});

on_every_path!(
    an_input_step_retry_does_not_apply_earlier_edits_twice,
    |path| {
        let m = ScriptedModel::new([Turn::text("ok")]);
        let agent = build_agent!(path, model: m, max_processor_retries: 1, input: [
            Probe::new("context").input_step(|a| {
                let mut ms = a.messages.clone();
                ms.push(Message::user("context note"));
                Ok(StepOverrides::new().messages(ms))
            }),
            Probe::new("once").input_step(|a| {
                if a.retry_count == 0 {
                    return Err(a.abort().reason("again").retry(true).into());
                }
                Ok(().into())
            }),
        ]);
        generate(&*agent, "x").await;
        assert_eq!(
            texts_of(&m.requests()[0].prompt, Role::User),
            ["x", "context note"]
        );
    }
);

on_every_path!(
    a_tool_calls_finish_at_the_step_limit_skips_stream_processors,
    |path| {
        let m = ScriptedModel::new([Turn::empty().tool_call("c1", "weather", json!({}))]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], max_steps: 1, output: [
            Probe::new("finishes").stream(move |a| {
                if let ChunkKind::Finish { finish_reason, .. } | ChunkKind::StepFinish { finish_reason, .. } = &a.chunk.kind {
                    l.push(format!("{finish_reason:?}"));
                }
                Ok(StreamAction::Pass)
            }),
        ]);
        let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
        assert_eq!(r.unwrap().finish_reason, FinishReason::ToolCalls);
        assert_eq!(types(&chunks).last().unwrap(), "finish");
        // The tool step's step-finish goes through; the run's finish does not.
        assert_eq!(log.entries(), ["ToolCalls"]);
    }
);

#[tokio::test]
async fn a_step_limit_of_zero_is_refused() {
    let m = ScriptedModel::new([Turn::text("x")]);
    assert_eq!(
        Agent::builder().model(m.clone()).max_steps(0).build().err(),
        Some(processors::agent::BuildError::ZeroMaxSteps)
    );
    let agent = Agent::builder().model(m.clone()).build().unwrap();
    let err = agent
        .generate_with("x", GenerateOptions::new().max_steps(0))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Config(_)), "{err}");
    assert_eq!(m.calls(), 0);
}

#[tokio::test]
async fn a_message_id_of_another_thread_is_refused_not_overwritten() {
    let store = InMemoryStore::new();
    let m = ScriptedModel::cycle([Turn::text("answer")]);
    let agent = Agent::builder()
        .model(m)
        .memory(Memory::new(store.clone()))
        .build()
        .unwrap();
    let victim =
        GenerateOptions::new().request_context(RequestContext::new().with_thread("a", "alice"));
    agent
        .generate_with(Message::user("alice's secret").with_id("m-1"), victim)
        .await
        .unwrap();
    let intruder =
        GenerateOptions::new().request_context(RequestContext::new().with_thread("b", "mallory"));
    let err = agent
        .generate_with(Message::user("overwritten").with_id("m-1"), intruder)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("already belongs to another thread"),
        "{err}"
    );
    let kept = store.list_messages("a", None).await.unwrap();
    assert_eq!(kept[0].text(), "alice's secret");
}

#[test]
fn usage_from_a_provider_never_overflows() {
    let mut u = Usage {
        input_tokens: u64::MAX,
        output_tokens: 1,
        total_tokens: u64::MAX,
    };
    u += Usage {
        input_tokens: 5,
        output_tokens: 1,
        total_tokens: 5,
    };
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.total_tokens),
        (u64::MAX, 2, u64::MAX)
    );
}

/// A model that streams "a", then waits for a signal before "b".
struct Gated {
    gate: std::sync::Mutex<Option<futures::channel::oneshot::Receiver<()>>>,
}

impl LanguageModel for Gated {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "gated"
    }
    fn stream(
        &self,
        _: processors::model::ModelRequest,
    ) -> BoxFuture<'_, Result<processors::model::ModelStream, ApiError>> {
        let gate = self.gate.lock().unwrap().take();
        let delta = |t: &str| {
            Ok(ChunkKind::TextDelta {
                id: "t".into(),
                text: t.into(),
            })
        };
        let first = futures::stream::iter([delta("a")]);
        let second = futures::stream::once(async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
            delta("b")
        });
        let end = futures::stream::iter([Ok(ChunkKind::Finish {
            finish_reason: FinishReason::Stop,
            usage: Usage::default(),
        })]);
        let s = first.chain(second).chain(end);
        Box::pin(async move { Ok(Box::pin(s) as processors::model::ModelStream) })
    }
}

#[processor(output_stream)]
fn pass_through(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

#[tokio::test]
async fn chunks_reach_the_consumer_while_the_model_waits() {
    let (open, gate) = futures::channel::oneshot::channel();
    let agent = agent! {
        model: Gated { gate: std::sync::Mutex::new(Some(gate)) },
        output: [PassThrough],
    };
    let mut stream = agent.stream("x");
    let mut open = Some(open);
    let mut seen = Vec::new();
    let run = async {
        while let Some(c) = stream.next().await {
            if let Some(t) = c.text_delta() {
                seen.push(t.to_owned());
                // "a" arrived while the model is still waiting: let it go on.
                if let Some(open) = open.take() {
                    let _ = open.send(());
                }
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), run)
        .await
        .expect("the first chunk was held back until the model went on");
    assert_eq!(seen, ["a", "b"]);
}

on_every_path!(
    the_turn_is_saved_before_the_client_sees_the_finish,
    |path| {
        let store = TestStore::new(OnSave::Wait(std::time::Duration::from_millis(20)));
        let m = ScriptedModel::new([Turn::deltas(["saved ", "answer"])]);
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()));
        let options =
            GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "u"));
        let mut stream = agent.stream_with("hi".into(), options);
        while let Some(chunk) = stream.next().await {
            if matches!(chunk.kind, ChunkKind::Finish { .. }) {
                break;
            }
        }
        // The client stops reading at the finish and goes away.
        drop(stream);
        let saved = store.inner.list_messages("t", None).await.unwrap();
        let texts: Vec<String> = saved.iter().map(Message::text).collect();
        assert_eq!(texts, ["hi", "saved answer"]);
    }
);

/// Records how many times `save_messages` is called.
#[derive(Clone, Default)]
struct CountingStore {
    inner: InMemoryStore,
    saves: Arc<std::sync::atomic::AtomicUsize>,
}

impl MemoryStore for CountingStore {
    fn get_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
        self.inner.get_thread(thread_id)
    }
    fn save_thread(&self, thread: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.inner.save_thread(thread)
    }
    fn list_messages<'a>(
        &'a self,
        thread_id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.inner.list_messages(thread_id, limit)
    }
    fn list_messages_by_resource<'a>(
        &'a self,
        resource_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.inner.list_messages_by_resource(resource_id)
    }
    fn save_messages(&self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.saves.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.save_messages(messages)
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>> {
        self.inner.delete_messages(ids)
    }
}

#[tokio::test]
async fn memory_behind_an_arc_in_a_list_is_the_agents_memory_and_saves_once() {
    let store = CountingStore::default();
    let shared = Arc::new(Memory::new(store.clone()));
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("one"), Turn::text("two")]),
        memory: Arc::clone(&shared),
        output: [Probe::new("tail"), shared],
    };
    agent.generate_with("first", thread()).await.unwrap();
    assert_eq!(
        store.saves.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the turn is saved by the memory in the list alone"
    );
    agent.generate_with("second", thread()).await.unwrap();
    assert_eq!(store.inner.list_messages("t", None).await.unwrap().len(), 4);
}
