//! A model wrapped with processors (`processors::model::Processed`): the behaviours of
//! `docs/semantics.md`, "Around a bare model" (85-97), each on two paths: tuples of
//! processors (static dispatch) and `DynPipeline`s.

use crate::common;

use common::{Log, Probe, upper};
use futures::StreamExt;
use processors::model::{LanguageModelExt, ModelRequest, ToolSpec};
use processors::prelude::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Which dispatch path a test runs on.
#[derive(Debug, Clone, Copy)]
enum Path {
    Static,
    Dynamic,
}

/// `$model` wrapped with the lists given, over `$path`, as a shared model.
macro_rules! wrap {
    ($path:expr, $m:expr
        $(, max_api_retries: $r:literal)?
        $(, on_violation: $v:expr)?
        $(, input: [$($i:expr),* $(,)?])?
        $(, output: [$($o:expr),* $(,)?])?
        $(, error: [$($e:expr),* $(,)?])? $(,)?) => {{
        let model: Arc<dyn LanguageModel> = match $path {
            Path::Static => Arc::new(
                $m.clone()
                    .with_processors()
                    $(.max_api_retries($r))?
                    $(.on_violation($v))?
                    .input_pipeline(( $($($i,)*)? ))
                    .output_pipeline(( $($($o,)*)? ))
                    .error_pipeline(( $($($e,)*)? ))
                    .build()
                    .expect("a valid wrapped model"),
            ),
            Path::Dynamic => Arc::new(
                $m.clone()
                    .with_processors()
                    $(.max_api_retries($r))?
                    $(.on_violation($v))?
                    .input_pipeline(DynPipeline::new() $($(.with($i))*)?)
                    .output_pipeline(DynPipeline::new() $($(.with($o))*)?)
                    .error_pipeline(DynPipeline::new() $($(.with($e))*)?)
                    .build()
                    .expect("a valid wrapped model"),
            ),
        };
        model
    }};
}

/// Runs a test body once per path.
macro_rules! on_both_paths {
    ($name:ident, |$path:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test]
            async fn static_path() {
                let $path = Path::Static;
                $body
            }
            #[tokio::test]
            async fn dynamic_path() {
                let $path = Path::Dynamic;
                $body
            }
        }
    };
}

/// A request with a system message and a user message.
fn request(user: &str) -> ModelRequest {
    ModelRequest {
        prompt: vec![Message::system("You are a test."), Message::user(user)],
        ..Default::default()
    }
}

/// Every chunk of a call, or its error.
async fn call(
    model: &dyn LanguageModel,
    request: ModelRequest,
) -> Result<Vec<ChunkKind>, ApiError> {
    let mut stream = model.stream(request).await?;
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        chunks.push(item?);
    }
    Ok(chunks)
}

/// Every chunk of a call made on behalf of a run with the context `cx`, or its error.
async fn call_in(
    model: &dyn LanguageModel,
    request: ModelRequest,
    cx: &RequestContext,
) -> Result<Vec<ChunkKind>, ApiError> {
    let mut stream = model.stream_with_context(request, cx).await?;
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        chunks.push(item?);
    }
    Ok(chunks)
}

/// The text of a call's chunks.
fn text(chunks: &[ChunkKind]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            ChunkKind::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The `type` of each chunk.
fn types(chunks: &[ChunkKind]) -> Vec<String> {
    chunks.iter().map(|c| c.type_name().into_owned()).collect()
}

/// A stream processor that holds every text delta back and lets the text out at the step's
/// end, in one delta.
fn holder() -> Probe {
    Probe::new("holder").stream(|a| {
        let state = a.state.as_str().unwrap_or_default().to_owned();
        Ok(match &a.chunk.kind {
            ChunkKind::TextDelta { text, .. } => {
                *a.state = Value::String(state + text);
                StreamAction::Drop
            }
            ChunkKind::StepFinish { .. } if !state.is_empty() => {
                let held = ChunkKind::TextDelta {
                    id: Arc::from("held"),
                    text: state,
                };
                let released = Chunk::new(a.chunk.run_id.clone(), held);
                StreamAction::Many(vec![released, a.chunk.clone()])
            }
            _ => StreamAction::Pass,
        })
    })
}

on_both_paths!(b85_the_input_hooks_run_on_the_prompt, |path| {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let seen = Log::new();
    let (on_input, on_request) = (seen.clone(), seen.clone());
    let shout = Probe::new("shout")
        .input(move |a| {
            let system: Vec<String> = a.system_messages.iter().map(Message::text).collect();
            on_input.push(format!("system: {}", system.join("|")));
            let mut messages = a.messages.clone();
            for m in &mut messages {
                m.set_text(m.text().to_uppercase());
            }
            Ok(InputOutcome::Messages(messages))
        })
        .input_step(|_| Ok(StepOverrides::default().tool_choice(ToolChoice::Required)))
        .llm_request(move |a| {
            let texts: Vec<String> = a.request.prompt.iter().map(Message::text).collect();
            on_request.push(format!("prompt: {}", texts.join("|")));
            Ok(LlmRequestAction::Continue)
        });
    let wrapped = wrap!(path, model, input: [shout]);
    let mut req = request("hello");
    req.tools = vec![ToolSpec {
        name: "lookup".into(),
        description: "Looks up".into(),
        parameters: json!({ "type": "object" }),
    }];
    req.settings.temperature = Some(0.5);
    let chunks = call(&*wrapped, req).await.expect("the call succeeds");
    assert_eq!(text(&chunks), "ok");
    assert_eq!(
        seen.entries(),
        ["system: You are a test.", "prompt: You are a test.|HELLO"]
    );
    let sent = &model.requests()[0];
    assert_eq!(sent.prompt[0].role, Role::System);
    assert_eq!(sent.prompt[1].text(), "HELLO");
    assert_eq!(sent.tools.len(), 1);
    assert_eq!(sent.tools[0].name, "lookup");
    assert_eq!(sent.tool_choice, ToolChoice::Required);
    assert_eq!(sent.settings.temperature, Some(0.5));
});

on_both_paths!(b86_stream_processors_see_the_chunks_and_the_end, |path| {
    let model = ScriptedModel::new([Turn::deltas(["a", "b", "c"]).usage(3, 4)]);
    let upper = Probe::new("upper").stream(upper);
    let wrapped = wrap!(path, model, output: [holder(), upper]);
    let chunks = call(&*wrapped, request("hi"))
        .await
        .expect("the call succeeds");
    assert_eq!(text(&chunks), "ABC");
    // Model chunks only: no run or step boundaries, one `finish` at the end.
    assert_eq!(
        types(&chunks),
        ["text-start", "text-end", "text-delta", "finish"]
    );
    match chunks.last() {
        Some(ChunkKind::Finish {
            finish_reason,
            usage,
        }) => {
            assert_eq!(*finish_reason, FinishReason::Stop);
            assert_eq!((usage.input_tokens, usage.output_tokens), (3, 4));
        }
        other => panic!("expected a finish, got {other:?}"),
    }
});

on_both_paths!(
    b86_a_dropped_finish_is_still_the_streams_last_chunk,
    |path| {
        let model = ScriptedModel::new([Turn::text("x")]);
        let no_finish = Probe::new("no-finish").stream(|a| {
            Ok(match a.chunk.kind {
                ChunkKind::Finish { .. } => StreamAction::Drop,
                _ => StreamAction::Pass,
            })
        });
        let wrapped = wrap!(path, model, output: [no_finish]);
        let chunks = call(&*wrapped, request("hi"))
            .await
            .expect("the call succeeds");
        assert_eq!(types(&chunks).last().map(String::as_str), Some("finish"));
        assert_eq!(types(&chunks).iter().filter(|t| *t == "finish").count(), 1);
    }
);

on_both_paths!(b87_an_abort_ends_the_call_with_a_tripwire_chunk, |path| {
    let model = ScriptedModel::new([Turn::deltas(["fine ", "secret", " more"])]);
    let guard = Probe::new("guard").stream(|a| match a.chunk.text_delta() {
        Some(t) if t.contains("secret") => Err(a.abort().reason("a secret").into()),
        _ => Ok(StreamAction::Pass),
    });
    let violations = Arc::new(Mutex::new(Vec::new()));
    let record = violations.clone();
    let wrapped = wrap!(path, model,
        on_violation: move |v: &Violation| record.lock().unwrap().push(v.processor_id.clone()),
        output: [guard]);
    let chunks = call(&*wrapped, request("hi")).await.expect("the call ends");
    assert_eq!(text(&chunks), "fine ");
    let n = chunks.len();
    match &chunks[n - 2] {
        ChunkKind::Tripwire(tw) => {
            assert_eq!(
                (tw.processor_id.as_str(), tw.reason.as_str()),
                ("guard", "a secret")
            );
        }
        other => panic!("expected a tripwire, got {other:?}"),
    }
    assert!(matches!(
        chunks[n - 1],
        ChunkKind::Finish {
            finish_reason: FinishReason::Other,
            ..
        }
    ));
    assert_eq!(*violations.lock().unwrap(), ["guard"]);
});

on_both_paths!(b87_an_input_abort_never_calls_the_model, |path| {
    let model = ScriptedModel::new([Turn::text("never")]);
    let guard = Probe::new("guard").input(|a| Err(a.abort().reason("no").into()));
    let wrapped = wrap!(path, model, input: [guard]);
    let chunks = call(&*wrapped, request("hi")).await.expect("the call ends");
    assert_eq!(types(&chunks), ["tripwire", "finish"]);
    assert_eq!(model.calls(), 0);
});

on_both_paths!(
    b87_in_an_agent_the_wrapped_models_abort_is_the_runs,
    |path| {
        let model = ScriptedModel::new([Turn::deltas(["ok ", "secret"])]);
        let guard = Probe::new("guard").stream(|a| match a.chunk.text_delta() {
            Some(t) if t.contains("secret") => Err(a.abort().reason("a secret").into()),
            _ => Ok(StreamAction::Pass),
        });
        let wrapped = wrap!(path, model, output: [guard]);
        let memory = Memory::new(InMemoryStore::new());
        let agent = Agent::builder()
            .shared_model(wrapped)
            .memory(memory.clone())
            .build()
            .unwrap();
        let cx = RequestContext::new().with_thread("t1", "u1");
        let result = agent
            .generate_with("hi", GenerateOptions::default().request_context(cx))
            .await
            .expect("the run ends");
        let tw = result.tripwire.expect("the run ended with the trip wire");
        assert_eq!(
            (tw.processor_id.as_str(), tw.reason.as_str()),
            ("guard", "a secret")
        );
        assert_eq!(result.finish_reason, FinishReason::Other);
        assert_eq!(result.text, "");
        // A run that ended in a trip wire saves nothing.
        let saved = memory.store().list_messages("t1", None).await.unwrap();
        assert!(saved.is_empty(), "{saved:?}");
    }
);

on_both_paths!(
    b88_a_provider_error_is_retried_when_a_processor_asks,
    |path| {
        let model = ScriptedModel::new([
            Turn::error(ApiError::new(400, "prompt too long")),
            Turn::text("short enough"),
        ]);
        let seen = Log::new();
        let log = seen.clone();
        let fix = Probe::new("fix").api_error(move |a| {
            log.push(format!("{} after {}", a.error.message, a.retry_count));
            Ok(ApiErrorAction::Retry)
        });
        let wrapped = wrap!(path, model, error: [fix]);
        let chunks = call(&*wrapped, request("hi"))
            .await
            .expect("the retry succeeds");
        assert_eq!(text(&chunks), "short enough");
        assert_eq!(model.calls(), 2);
        assert_eq!(seen.entries(), ["prompt too long after 0"]);
        // Only model chunks: the retried call leaves no trace in the stream.
        assert_eq!(
            types(&chunks),
            ["text-start", "text-delta", "text-end", "finish"]
        );
    }
);

on_both_paths!(
    b88_an_unrecovered_provider_error_is_the_calls_error,
    |path| {
        let model = ScriptedModel::new([
            Turn::error(ApiError::new(400, "bad request")),
            Turn::error(ApiError::new(400, "still bad")),
        ]);
        let fix = Probe::new("fix").api_error(|_| Ok(ApiErrorAction::Retry));
        let wrapped = wrap!(path, model, max_api_retries: 1, error: [fix]);
        match wrapped.stream(request("hi")).await {
            Err(e) => assert_eq!((e.status, e.message.as_str()), (Some(400), "still bad")),
            Ok(_) => panic!("expected the provider's error"),
        }
        assert_eq!(model.calls(), 2);
        // Without a processor that handles it, the first error is the call's, as the bare
        // model's would be.
        let model = ScriptedModel::new([Turn::error(ApiError::new(429, "slow down"))]);
        let wrapped = wrap!(path, model, output: [Probe::new("upper").stream(upper)]);
        match wrapped.stream(request("hi")).await {
            Err(e) => assert_eq!((e.status, e.retryable), (Some(429), true)),
            Ok(_) => panic!("expected the provider's error"),
        }
    }
);

on_both_paths!(b89_a_response_from_llm_request_replaces_the_call, |path| {
    let model = ScriptedModel::new([Turn::text("from the model")]);
    let seen = Log::new();
    let log = seen.clone();
    let cache = Probe::new("cache")
        .llm_request(|_| {
            let id: Arc<str> = Arc::from("t");
            Ok(LlmRequestAction::Respond(LlmResponse {
                chunks: vec![
                    ChunkKind::TextStart { id: id.clone() },
                    ChunkKind::TextDelta {
                        id: id.clone(),
                        text: "cached".into(),
                    },
                    ChunkKind::TextEnd { id },
                    ChunkKind::Finish {
                        finish_reason: FinishReason::Stop,
                        usage: Usage::default(),
                    },
                ],
            }))
        })
        .llm_response(move |a| {
            log.push(format!("from_cache: {}", a.from_cache));
            Ok(())
        });
    let upper = Probe::new("upper").stream(upper);
    let wrapped = wrap!(path, model, input: [cache.clone()], output: [cache, upper]);
    let chunks = call(&*wrapped, request("hi"))
        .await
        .expect("the call succeeds");
    // Replayed chunks pass no stream processor.
    assert_eq!(text(&chunks), "cached");
    assert_eq!(model.calls(), 0);
    assert_eq!(seen.entries(), ["from_cache: true"]);
});

on_both_paths!(b90_a_panicking_hook_is_an_error_naming_it, |path| {
    let model = ScriptedModel::new([Turn::text("never")]);
    let broken = Probe::new("broken").input(|_| panic!("boom"));
    let wrapped = wrap!(path, model, input: [broken]);
    match wrapped.stream(request("hi")).await {
        Err(e) => {
            assert!(!e.retryable);
            assert_eq!(e.status, None);
            assert!(
                e.message
                    .contains("processor `broken` panicked in process_input: boom"),
                "{e}"
            );
        }
        Ok(_) => panic!("expected the processor's failure"),
    }
    assert_eq!(model.calls(), 0);
});

on_both_paths!(b91_state_is_per_call_and_shared_by_hooks, |path| {
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let seen = Log::new();
    let log = seen.clone();
    let counter = Probe::new("counter")
        .input(|a| {
            let n = a.state.as_u64().unwrap_or(0);
            *a.state = json!(n + 1);
            Ok(InputOutcome::Unchanged)
        })
        .stream(move |a| {
            if let ChunkKind::Finish { .. } = a.chunk.kind {
                log.push(a.state.to_string());
            }
            Ok(StreamAction::Pass)
        });
    let wrapped = wrap!(path, model, input: [counter.clone()], output: [counter]);
    for _ in 0..2 {
        call(&*wrapped, request("hi"))
            .await
            .expect("the call succeeds");
    }
    assert_eq!(seen.entries(), ["1", "1"]);
});

on_both_paths!(b92_tool_calls_go_back_to_the_caller, |path| {
    let model = ScriptedModel::new([
        Turn::empty().tool_call("call-1", "echo", json!({ "x": 1 })),
        Turn::text("done"),
    ]);
    let upper = Probe::new("upper").stream(upper);
    let wrapped = wrap!(path, model, output: [upper]);
    let agent = Agent::builder()
        .shared_model(wrapped)
        .tool(common::echo_tool("echo"))
        .build()
        .unwrap();
    let result = agent.generate("go").await.expect("the run succeeds");
    assert_eq!(result.text, "DONE");
    assert_eq!(result.tool_results.len(), 1);
    assert_eq!(result.tool_results[0].result["echo"], json!({ "x": 1 }));
    // The second call's prompt carries the tool's result, the caller's tools were offered.
    let second = &model.requests()[1];
    assert_eq!(second.tools[0].name, "echo");
    assert!(second.prompt.iter().any(|m| m.role == Role::Tool));
});

on_both_paths!(b93_wrapped_models_compose, |path| {
    let model = ScriptedModel::new([Turn::deltas(["a", "b"])]);
    let order = Log::new();
    let (inner_log, outer_log) = (order.clone(), order.clone());
    let inner = Probe::new("inner").input(move |_| {
        inner_log.push("inner input");
        Ok(InputOutcome::Unchanged)
    });
    let outer = Probe::new("outer").input(move |_| {
        outer_log.push("outer input");
        Ok(InputOutcome::Unchanged)
    });
    let tag = |id: &'static str| {
        Probe::new(id).stream(move |a| {
            Ok(match a.chunk.text_delta() {
                Some(t) => a.chunk.clone().map_text(|_| format!("{t}{id}")).into(),
                None => StreamAction::Pass,
            })
        })
    };
    let once = wrap!(path, model, input: [inner], output: [tag("1")]);
    let twice = wrap!(path, once, input: [outer], output: [tag("2")]);
    let chunks = call(&*twice, request("hi"))
        .await
        .expect("the call succeeds");
    // The outer wrapper's input processors first; the inner's stream processors first.
    assert_eq!(order.entries(), ["outer input", "inner input"]);
    assert_eq!(text(&chunks), "a12b12");
});

on_both_paths!(
    b95_a_wrapped_models_processors_see_the_callers_context,
    |path| {
        let model = ScriptedModel::new([Turn::text("a"), Turn::text("b")]);
        let seen = Log::new();
        let log = seen.clone();
        let probe = Probe::new("probe").input(move |a| {
            let cx = &mut *a.request_context;
            log.push(format!(
                "{:?} {:?} {:?}",
                cx.thread_id(),
                cx.resource_id(),
                cx.value("tier")
            ));
            cx.set_value("tier", json!("changed in the call"));
            Ok(InputOutcome::Unchanged)
        });
        let once = wrap!(path, model, input: [probe]);
        // Through a wrapper around it too.
        let twice = wrap!(path, once, input: [Probe::new("outer")]);
        let agent = Agent::builder().shared_model(twice).build().unwrap();
        let cx = RequestContext::new()
            .with_thread("t1", "u1")
            .with_value("tier", json!("gold"));
        let result = agent
            .generate_with("hi", GenerateOptions::default().request_context(cx))
            .await
            .expect("the run ends");
        assert_eq!(result.text, "a");
        // Called bare, the context is empty.
        call(&*once, request("hi")).await.expect("the call ends");
        assert_eq!(
            seen.entries(),
            [
                "Some(\"t1\") Some(\"u1\") Some(String(\"gold\"))",
                "None None None"
            ]
        );
    }
);

on_both_paths!(
    b96_a_wrapped_model_with_memory_remembers_its_threads,
    |path| {
        let model = ScriptedModel::new([
            Turn::text("Hello Ada."),
            Turn::deltas(["ok ", "secret"]),
            Turn::text("You are Ada."),
            Turn::text("Hi."),
        ]);
        let memory = Memory::new(InMemoryStore::new());
        let guard = Probe::new("guard").stream(|a| match a.chunk.text_delta() {
            Some(t) if t.contains("secret") => Err(a.abort().reason("a secret").into()),
            _ => Ok(StreamAction::Pass),
        });
        let wrapped: Arc<dyn LanguageModel> = match path {
            Path::Static => Arc::new(
                model
                    .clone()
                    .with_processors()
                    .memory(memory.clone())
                    .output_pipeline((guard,))
                    .build()
                    .unwrap(),
            ),
            Path::Dynamic => Arc::new(
                model
                    .clone()
                    .with_processors()
                    .memory(memory.clone())
                    .output(guard)
                    .build()
                    .unwrap(),
            ),
        };
        let cx = RequestContext::new().with_thread("t1", "u1");
        let first = call_in(&*wrapped, request("My name is Ada."), &cx).await;
        assert_eq!(text(&first.unwrap()), "Hello Ada.");
        // An aborted call saves nothing.
        let aborted = call_in(&*wrapped, request("And?"), &cx).await.unwrap();
        assert!(types(&aborted).contains(&"tripwire".to_owned()));
        let third = call_in(&*wrapped, request("Who am I?"), &cx).await;
        assert_eq!(text(&third.unwrap()), "You are Ada.");
        // The third call's prompt held the first exchange, not the aborted one.
        let prompt: Vec<String> = model.requests()[2]
            .prompt
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(
            prompt,
            [
                "You are a test.",
                "My name is Ada.",
                "Hello Ada.",
                "Who am I?"
            ]
        );
        let saved = memory.store().list_messages("t1", None).await.unwrap();
        assert_eq!(saved.len(), 4);
        // A call without a thread neither loads nor saves.
        let before = memory
            .store()
            .list_messages_by_resource("u1")
            .await
            .unwrap()
            .len();
        let bare = call(&*wrapped, request("hi")).await;
        assert_eq!(text(&bare.unwrap()), "Hi.");
        assert_eq!(
            memory
                .store()
                .list_messages_by_resource("u1")
                .await
                .unwrap()
                .len(),
            before
        );
    }
);

on_both_paths!(
    b97_output_result_runs_at_the_end_of_a_wrapped_call,
    |path| {
        use processors::builtins::response_cache::{InMemoryCache, ResponseCache};
        let model = ScriptedModel::new([Turn::text("Paris."), Turn::text("never")]);
        let cache = ResponseCache::new(InMemoryCache::new());
        let wrapped = wrap!(path, model, input: [cache.clone()], output: [cache.clone()]);
        let first = call(&*wrapped, request("Capital of France?")).await;
        let second = call(&*wrapped, request("Capital of France?")).await;
        assert_eq!(text(&first.unwrap()), "Paris.");
        assert_eq!(text(&second.unwrap()), "Paris.");
        assert_eq!(model.calls(), 1, "the second answer came from the cache");

        // An abort there ends the call with a trip wire, after the answer streamed.
        let model = ScriptedModel::new([Turn::text("done")]);
        let late = Probe::new("late").output_result(|a| Err(a.abort().reason("too late").into()));
        let wrapped = wrap!(path, model, output: [late]);
        let chunks = call(&*wrapped, request("hi")).await.unwrap();
        assert_eq!(text(&chunks), "done");
        assert_eq!(
            &types(&chunks)[types(&chunks).len() - 2..],
            ["tripwire", "finish"]
        );
    }
);

/// A processor none of whose hooks runs around a model call is refused.
#[test]
fn b94_a_processor_that_would_never_run_is_refused() {
    let judge = output_step_fn("judge", |_: &mut OutputStepArgs<'_, ()>| ());
    let built = ScriptedModel::new([Turn::text("x")])
        .with_processors()
        .output(judge)
        .build();
    match built {
        Err(e) => assert_eq!(
            e.to_string(),
            "processor `judge` has no hook that runs around a model call (its hooks: \
             {\"process_output_step\"}); a wrapped model runs process_input, process_input_step, \
             process_llm_request, process_output_stream, process_llm_response, \
             process_output_result and process_api_error: give it to an agent instead"
        ),
        Ok(_) => panic!("expected the processor to be refused"),
    }
}
