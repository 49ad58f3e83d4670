//! The numbered behaviours of `docs/semantics.md` (tests `bNN_…`), each run on the
//! statically dispatched agent (tuples), the dynamically dispatched one (`DynPipeline`) and the
//! one `agent!` declares. The workflows' behaviours (58-64) are in `tests/workflows.rs`.

use crate::common;

use common::*;
use processors::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn model(turns: impl IntoIterator<Item = Turn>) -> ScriptedModel {
    ScriptedModel::new(turns)
}

fn tool_then_text(text: &str) -> [Turn; 2] {
    [
        Turn::empty().tool_call("call-1", "weather", json!({"city": "Oslo"})),
        Turn::text(text),
    ]
}

// ---------------------------------------------------------------------------------------------
// Input side

on_every_path!(b05_two_input_processors_append_in_order, |path| {
    let m = model([Turn::text("ok")]);
    let append = |id: &'static str| {
        Probe::new(id).input(move |a| {
            let mut ms = a.messages.clone();
            ms.push(Message::user(format!("{id}'s")));
            Ok(ms.into())
        })
    };
    let agent = build_agent!(path, model: m, input: [append("first"), append("second")]);
    generate(&*agent, "original").await;
    let prompt = &m.requests()[0].prompt;
    assert_eq!(
        texts_of(prompt, Role::User),
        ["original", "first's", "second's"]
    );
});

/// Records when its async `process_input` starts and ends, sleeping in between.
struct Sleeper {
    id: &'static str,
    log: Log,
}

impl Processor for Sleeper {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    fn id(&self) -> &str {
        self.id
    }
    async fn process_input(&self, _: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        self.log.push(format!("{} start", self.id));
        tokio::time::sleep(Duration::from_millis(15)).await;
        self.log.push(format!("{} end", self.id));
        Ok(InputOutcome::Unchanged)
    }
}
impl InputProcessor for Sleeper {}

on_every_path!(b06_async_processors_never_overlap, |path| {
    let m = model([Turn::text("ok")]);
    let log = Log::new();
    let agent = build_agent!(path, model: m, input: [
        Sleeper { id: "a", log: log.clone() },
        Sleeper { id: "b", log: log.clone() },
    ]);
    generate(&*agent, "hi").await;
    assert_eq!(log.entries(), ["a start", "a end", "b start", "b end"]);
});

on_every_path!(b20_abort_in_input_stops_the_chain, |path| {
    let m = model([Turn::text("ok")]);
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, input: [
        Probe::new("guard").input(|a| Err(a.abort().reason("blocked").into())),
        Probe::new("later").input(move |_| { l.push("later called"); Ok(().into()) }),
    ]);
    let (chunks, result) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let result = result.unwrap();
    assert!(
        log.entries().is_empty(),
        "later processor ran: {:?}",
        log.entries()
    );
    assert_eq!(result.tripwire.unwrap().processor_id, "guard");
    assert_eq!(m.calls(), 0);
    assert_eq!(types(&chunks), ["tripwire"]);
});

on_every_path!(b21_abort_without_reason_names_the_processor, |path| {
    let m = model([Turn::text("ok")]);
    let agent = build_agent!(path, model: m, input: [
        Probe::new("quiet-guard").input(|a| Err(a.abort().into())),
    ]);
    let tw = generate(&*agent, "hi").await.tripwire.unwrap();
    assert_eq!(tw.reason, "Tripwire triggered by quiet-guard");
    assert_eq!(tw.processor_id, "quiet-guard");
});

/// An input processor that implements `process_input` but declares only
/// `process_input_step`.
struct OnlyInputStep {
    log: Log,
}

impl Processor for OnlyInputStep {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT_STEP;
    fn id(&self) -> &str {
        "only-input-step"
    }
    async fn process_input(&self, _: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        self.log.push("skipped processor called");
        Ok(InputOutcome::Unchanged)
    }
}

impl InputProcessor for OnlyInputStep {}

on_every_path!(b07_processor_without_the_hook_is_skipped, |path| {
    let m = model([Turn::text("ok")]);
    let log = Log::new();
    let (l1, l2) = (log.clone(), log.clone());
    let agent = build_agent!(path, model: m, input: [
        Probe::new("a").input(move |_| { l1.push("a"); Ok(().into()) }),
        OnlyInputStep { log: log.clone() },
        Probe::new("b").input(move |_| { l2.push("b"); Ok(().into()) }),
    ]);
    generate(&*agent, "hi").await;
    assert_eq!(log.entries(), ["a", "b"]);
});

on_every_path!(
    b01_process_input_sees_only_new_input_and_system_apart,
    |path| {
        let store = InMemoryStore::new();
        let m = model([Turn::text("first answer"), Turn::text("second answer")]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()), input: [
            Probe::new("look").input(move |a| {
                l.push(format!(
                    "messages={:?} system={:?} list={}",
                    a.messages.iter().map(Message::text).collect::<Vec<_>>(),
                    a.system_messages.iter().map(Message::text).collect::<Vec<_>>(),
                    a.message_list.len(),
                ));
                Ok(().into())
            }),
        ]);
        let opts = || {
            GenerateOptions::new().request_context(RequestContext::new().with_thread("t1", "u1"))
        };
        agent.generate_with("first".into(), opts()).await.unwrap();
        agent.generate_with("second".into(), opts()).await.unwrap();
        assert_eq!(
            log.entries()[1],
            r#"messages=["second"] system=["You are a test."] list=3"#
        );
    }
);

on_every_path!(b10_returned_system_messages_replace_untagged_ones, |path| {
    let m = model([Turn::text("ok")]);
    let agent = build_agent!(path, model: m, input: [
        Probe::new("sys").input(|a| {
            let mut messages = a.messages.clone();
            messages.push(Message::system("added from the message set"));
            Ok(InputOutcome::MessagesAndSystem {
                messages,
                system: vec![Message::system("replaced instructions")],
            })
        }),
    ]);
    generate(&*agent, "hi").await;
    let prompt = &m.requests()[0].prompt;
    assert_eq!(
        texts_of(prompt, Role::System),
        ["replaced instructions", "added from the message set"]
    );
    assert_eq!(texts_of(prompt, Role::User), ["hi"]);
});

on_every_path!(b02_input_once_input_step_every_call_and_growing, |path| {
    let m = model(tool_then_text("sunny"));
    let log = Log::new();
    let (l1, l2) = (log.clone(), log.clone());
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], input: [
        Probe::new("p")
            .input(move |a| { l1.push(format!("input {}", a.messages.len())); Ok(().into()) })
            .input_step(move |a| {
                l2.push(format!("step {} sees {}", a.step_number, a.messages.len()));
                Ok(().into())
            }),
    ]);
    let r = generate(&*agent, "weather?").await;
    assert_eq!(r.text, "sunny");
    assert_eq!(log.entries(), ["input 1", "step 0 sees 1", "step 1 sees 3"]);
});

on_every_path!(b12_input_step_results_chain, |path| {
    let m = model([Turn::text("from the first model")]);
    let m2 = ScriptedModel::new([Turn::text("from the chosen model")]).named("chosen");
    let chosen: Arc<dyn LanguageModel> = Arc::new(m2.clone());
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, input: [
        Probe::new("choose").input_step(move |_| {
            Ok(StepOverrides::new()
                .model(chosen.clone())
                .tool_choice(ToolChoice::None)
                .provider_options(json!({"cache": true}))
                .model_settings(processors::model::ModelSettings { temperature: Some(0.2), ..Default::default() }))
        }),
        Probe::new("see").input_step(move |a| {
            l.push(format!(
                "{} {:?} {} {:?}",
                a.config.model.model_id(),
                a.config.tool_choice,
                a.config.provider_options,
                a.config.model_settings.temperature,
            ));
            Ok(().into())
        }),
    ]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(log.entries(), [r#"chosen None {"cache":true} Some(0.2)"#]);
    assert_eq!(r.text, "from the chosen model");
    assert_eq!((m.calls(), m2.calls()), (0, 1));
    let req = &m2.requests()[0];
    assert_eq!(req.tool_choice, ToolChoice::None);
    assert_eq!(req.provider_options, json!({"cache": true}));
    assert_eq!(req.settings.temperature, Some(0.2));
});

on_every_path!(
    b13_empty_result_changes_nothing_partial_changes_what_it_names,
    |path| {
        let m = model([Turn::text("ok")]);
        let agent = build_agent!(
            path,
            model: m, tools: [echo_tool("a")],
            input: [
                Probe::new("options").input_step(|_| Ok(StepOverrides::new().provider_options(json!({"base": 1})))),
                Probe::new("empty").input_step(|_| Ok(StepOverrides::new())),
                Probe::new("partial").input_step(|_| Ok(StepOverrides::new().tool_choice(ToolChoice::Required))),
            ]
        );
        generate(&*agent, "hi").await;
        let req = &m.requests()[0];
        assert_eq!(req.tool_choice, ToolChoice::Required);
        assert_eq!(req.provider_options, json!({"base": 1}));
        assert_eq!(req.tools.len(), 1);
        assert_eq!(texts_of(&req.prompt, Role::System), ["You are a test."]);
        assert_eq!(texts_of(&req.prompt, Role::User), ["hi"]);
    }
);

on_every_path!(
    b14_returned_tools_replace_the_set_and_active_tools_filter,
    |path| {
        let m = model([Turn::text("one"), Turn::text("two")]);
        let only_c = echo_tool("c");
        let agent = build_agent!(path, model: m, tools: [echo_tool("a"), echo_tool("b")], input: [
            Probe::new("tools").input_step(move |a| {
                Ok(match a.request_context.value("mode").and_then(Value::as_str) {
                    Some("replace") => StepOverrides::new().tools(vec![only_c.clone()]),
                    _ => StepOverrides::new().active_tools(["a"]),
                })
            }),
        ]);
        let with = |mode: &str| {
            GenerateOptions::new()
                .request_context(RequestContext::new().with_value("mode", json!(mode)))
        };
        agent
            .generate_with("x".into(), with("replace"))
            .await
            .unwrap();
        agent
            .generate_with("x".into(), with("filter"))
            .await
            .unwrap();
        let names = |i: usize| {
            m.requests()[i]
                .tools
                .iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(0), ["c"]);
        assert_eq!(names(1), ["a"]);
    }
);

on_every_path!(b15_step_system_message_lasts_one_step, |path| {
    let m = model(tool_then_text("done"));
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], input: [
        Probe::new("sys").input_step(|a| {
            if a.step_number == 0 {
                a.message_list.add_system(Message::system("only for step 0"), None);
            }
            Ok(().into())
        }),
    ]);
    generate(&*agent, "hi").await;
    let reqs = m.requests();
    assert_eq!(
        texts_of(&reqs[0].prompt, Role::System),
        ["You are a test.", "only for step 0"]
    );
    assert_eq!(texts_of(&reqs[1].prompt, Role::System), ["You are a test."]);
});

on_every_path!(b03_input_step_sees_the_steps_so_far, |path| {
    let m = model(tool_then_text("done"));
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], input: [
        Probe::new("steps").input_step(move |a| { l.push(format!("{}:{}", a.step_number, a.steps.len())); Ok(().into()) }),
    ]);
    generate(&*agent, "hi").await;
    assert_eq!(log.entries(), ["0:0", "1:1"]);
});

on_every_path!(
    b16_prepare_step_runs_after_input_processors_as_prepare_step,
    |path| {
        let m = model([Turn::text("ok"), Turn::text("ok")]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, input: [
            Probe::new("input").input_step(move |_| { l.push("input processor"); Ok(().into()) }),
        ]);
        let l = log.clone();
        let prepare = PrepareStep::new(move |info| {
            l.push(format!("prepare-step {}", info.step_number));
            async { Ok(StepOverrides::new()) }
        });
        agent
            .generate_with("hi".into(), GenerateOptions::new().prepare_step(prepare))
            .await
            .unwrap();
        assert_eq!(log.entries(), ["input processor", "prepare-step 0"]);

        let aborting = PrepareStep::new(|_| async { Err(Abort::new().reason("no").into()) });
        let r = agent
            .generate_with("hi".into(), GenerateOptions::new().prepare_step(aborting))
            .await
            .unwrap();
        assert_eq!(r.tripwire.unwrap().processor_id, "prepare-step");
    }
);

// ---------------------------------------------------------------------------------------------
// Stream side

on_every_path!(
    b29_upper_filter_last_chain_and_dropped_chunks_skip_later,
    |path| {
        let m = model([Turn::deltas(["hello", "drop"])]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, output: [
            Probe::new("upper").stream(upper),
            Probe::new("filter").stream(|a| Ok(if a.chunk.text_delta() == Some("DROP") { StreamAction::Drop } else { StreamAction::Pass })),
            Probe::new("last").stream(move |a| {
                Ok(match a.chunk.text_delta() {
                    Some(t) => {
                        l.push(t.to_owned());
                        a.chunk.clone().map_text(|t| format!("{t}!")).into()
                    }
                    None => StreamAction::Pass,
                })
            }),
        ]);
        let (chunks, result) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["HELLO!"]);
        assert_eq!(log.entries(), ["HELLO"]);
        assert_eq!(result.unwrap().text, "HELLO!");
    }
);

on_every_path!(
    b31_held_back_chunks_are_emitted_from_stream_history,
    |path| {
        let m = model([Turn::deltas(["Hel", "lo", " world."])]);
        let agent = build_agent!(path, model: m, output: [
            Probe::new("sentences").history().stream(|a| {
                let Some(t) = a.chunk.text_delta() else { return Ok(StreamAction::Pass) };
                if !t.contains('.') {
                    return Ok(StreamAction::Drop);
                }
                let all: String = a.stream_history.iter().filter_map(Chunk::text_delta).collect();
                Ok(a.chunk.clone().map_text(|_| all).into())
            }),
        ]);
        let (chunks, _) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["Hello world."]);
    }
);

on_every_path!(b33_accumulated_text_check_blocks_the_third_chunk, |path| {
    let m = model([Turn::deltas(["a", "b", "c", "d"])]);
    let agent = build_agent!(path, model: m, output: [
        Probe::new("length").stream(|a| {
            if let Some(t) = a.chunk.text_delta() {
                let seen = format!("{}{t}", a.state.as_str().unwrap_or(""));
                *a.state = Value::String(seen.clone());
                if seen.len() >= 3 {
                    return Err(a.abort().reason("too long").into());
                }
            }
            Ok(StreamAction::Pass)
        }),
    ]);
    let (chunks, result) = collect(&*agent, "hi", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["a", "b"]);
    assert_eq!(types(&chunks).last().unwrap(), "tripwire");
    assert_eq!(result.unwrap().tripwire.unwrap().reason, "too long");
});

on_every_path!(
    b25_state_persists_per_processor_and_is_fresh_per_run,
    |path| {
        let m = ScriptedModel::cycle([Turn::deltas(["a", "b", "c"])]);
        let log = Log::new();
        let (l1, l2) = (log.clone(), log.clone());
        let agent = build_agent!(path, model: m, output: [
            Probe::new("counter")
                .stream(|a| {
                    if a.chunk.text_delta().is_some() {
                        *a.state = json!(a.state.as_u64().unwrap_or(0) + 1);
                    }
                    Ok(StreamAction::Pass)
                })
                .output_result(move |a| { l1.push(format!("counted {}", a.state)); Ok(().into()) }),
            Probe::new("other").stream(move |a| {
                if !a.state.is_null() {
                    l2.push("other saw state");
                }
                Ok(StreamAction::Pass)
            }),
        ]);
        generate(&*agent, "one").await;
        generate(&*agent, "two").await;
        assert_eq!(log.entries(), ["counted 3", "counted 3"]);
    }
);

on_every_path!(b30_dropped_chunks_vanish_order_kept_finish_passes, |path| {
    let m = model([Turn::deltas(["a", "x1", "b", "x2", "c"])]);
    let agent = build_agent!(path, model: m, output: [
        Probe::new("drop-x").stream(|a| Ok(match a.chunk.text_delta() {
            Some(t) if t.starts_with('x') => StreamAction::Drop,
            _ => StreamAction::Pass,
        })),
    ]);
    let (chunks, result) = collect(&*agent, "hi", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["a", "b", "c"]);
    assert_eq!(types(&chunks).last().unwrap(), "finish");
    assert_eq!(result.unwrap().text, "abc");
});

on_every_path!(b34_stream_abort_yields_one_tripwire_and_closes, |path| {
    let m = model([Turn::deltas(["fine", "bad", "never"])]);
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, output: [
        Probe::new("guard").stream(|a| {
            if a.chunk.text_delta() == Some("bad") {
                return Err(a.abort().reason("bad word").retry(true).metadata(json!({"word": "bad"})).into());
            }
            Ok(StreamAction::Pass)
        }),
        Probe::new("after").stream(move |a| {
            if let Some(t) = a.chunk.text_delta() { l.push(t.to_owned()); }
            Ok(StreamAction::Pass)
        }),
    ]);
    let (chunks, result) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let trips: Vec<_> = chunks
        .iter()
        .filter(|c| matches!(c.kind, ChunkKind::Tripwire(_)))
        .collect();
    assert_eq!(trips.len(), 1);
    assert_eq!(chunks.last().unwrap(), trips[0]);
    let ChunkKind::Tripwire(tw) = &trips[0].kind else {
        unreachable!()
    };
    assert_eq!(
        (
            tw.reason.as_str(),
            tw.retry,
            tw.metadata.clone(),
            tw.processor_id.as_str()
        ),
        ("bad word", true, Some(json!({"word": "bad"})), "guard")
    );
    assert_eq!(deltas(&chunks), ["fine"]);
    assert_eq!(log.entries(), ["fine"]);
    let r = result.unwrap();
    assert_eq!(r.finish_reason, FinishReason::Other);
    let json = serde_json::to_value(trips[0]).unwrap();
    assert_eq!(json["type"], "tripwire");
    assert_eq!(json["payload"]["processorId"], "guard");
});

on_every_path!(
    b35_failing_stream_processor_passes_the_original_chunk,
    |path| {
        let m = model([Turn::deltas(["a", "b", "c"])]);
        let agent = build_agent!(path, model: m, output: [
            Probe::new("flaky").stream(|a| {
                if a.chunk.text_delta() == Some("b") {
                    return Err(ProcessorError::msg("cannot handle b"));
                }
                upper(a)
            }),
            Probe::new("bang").stream(|a| Ok(match a.chunk.text_delta() {
                Some(_) => a.chunk.clone().map_text(|t| format!("{t}!")).into(),
                None => StreamAction::Pass,
            })),
        ]);
        let (chunks, result) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["A!", "b", "C!"]);
        assert!(result.is_ok());
    }
);

fn data(name: &str, value: Value, transient: bool) -> ChunkKind {
    ChunkKind::Data {
        name: name.into(),
        data: value,
        transient,
    }
}

on_every_path!(b36_data_chunks_reach_only_opted_in_processors, |path| {
    let m = model([Turn::text("hello")
        .chunk(data("progress", json!(1), false))
        .chunk(data("secret", json!("s"), false))
        .chunk(data("preview", json!("p"), true))]);
    let log = Log::new();
    let (l1, l2) = (log.clone(), log.clone());
    let agent = build_agent!(path, model: m, output: [
        Probe::new("plain").stream(move |a| {
            if a.chunk.is_data() { l1.push("plain saw data"); }
            Ok(StreamAction::Pass)
        }),
        Probe::new("writer").stream(|a| {
            if matches!(a.chunk.kind, ChunkKind::TextStart { .. }) {
                a.writer.write("written", json!("by a processor"));
            }
            Ok(StreamAction::Pass)
        }),
        Probe::new("data").data_parts().stream(move |a| {
            Ok(match &a.chunk.kind {
                ChunkKind::Data { name, .. } => {
                    l2.push(format!("data saw {name}"));
                    match name.as_str() {
                        "secret" => StreamAction::Drop,
                        "progress" => {
                            let mut c = a.chunk.clone();
                            c.kind = data("progress", json!(2), false);
                            c.into()
                        }
                        _ => StreamAction::Pass,
                    }
                }
                _ => StreamAction::Pass,
            })
        }),
    ]);
    let (chunks, result) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let seen: Vec<_> = chunks
        .iter()
        .filter(|c| c.is_data())
        .map(|c| serde_json::to_value(c).unwrap())
        .collect();
    assert_eq!(
        seen.iter()
            .map(|v| v["type"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["data-progress", "data-preview", "data-written"]
    );
    assert_eq!(seen[0]["payload"]["data"], 2);
    assert_eq!(
        log.entries(),
        [
            "data saw progress",
            "data saw secret",
            "data saw preview",
            "data saw written"
        ]
    );
    let r = result.unwrap();
    let parts = &r.response_messages[0].content.parts;
    let names: Vec<_> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Data { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        ["progress", "written"],
        "transient data is not persisted"
    );
});

on_every_path!(b36_opted_in_processor_can_abort_on_data, |path| {
    let m = model([Turn::text("hello").chunk(data("bad", json!(0), false))]);
    let agent = build_agent!(path, model: m, output: [
        Probe::new("data-guard").data_parts().stream(|a| {
            if a.chunk.is_data() { return Err(a.abort().reason("bad data").into()); }
            Ok(StreamAction::Pass)
        }),
    ]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.tripwire.unwrap().processor_id, "data-guard");
});

on_every_path!(
    b37_the_tool_step_finishes_after_its_results_and_stream_processors_see_it,
    |path| {
        let m = model(tool_then_text("done"));
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [
            Probe::new("finishes").stream(move |a| {
                if let ChunkKind::StepFinish { finish_reason, .. } | ChunkKind::Finish { finish_reason, .. } = &a.chunk.kind {
                    l.push(format!("{} {:?}", a.chunk.kind.type_name(), finish_reason));
                }
                Ok(StreamAction::Pass)
            }),
        ]);
        let (chunks, _) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(
            log.entries(),
            ["step-finish ToolCalls", "step-finish Stop", "finish Stop"]
        );
        let types = types(&chunks);
        let order: Vec<&str> = types
            .iter()
            .map(String::as_str)
            .filter(|t| {
                matches!(
                    *t,
                    "step-start" | "tool-call" | "tool-result" | "step-finish" | "finish"
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                "step-start",
                "tool-call",
                "tool-result",
                "step-finish",
                "step-start",
                "step-finish",
                "finish"
            ]
        );
    }
);

on_every_path!(b39_stream_processors_read_remembered_messages, |path| {
    let store = InMemoryStore::new();
    let m = model([Turn::text("one"), Turn::text("two")]);
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()), output: [
        Probe::new("reader").stream(move |a| {
            if matches!(a.chunk.kind, ChunkKind::Start) {
                l.push(format!("remembered {}", a.message_list.remembered().count()));
            }
            Ok(StreamAction::Pass)
        }),
    ]);
    let opts =
        || GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "u"));
    agent.generate_with("first".into(), opts()).await.unwrap();
    agent.generate_with("second".into(), opts()).await.unwrap();
    assert_eq!(log.entries(), ["remembered 0", "remembered 2"]);
});

// ---------------------------------------------------------------------------------------------
// Steps, retries, errors

fn reject_bad(retry: bool) -> Probe {
    Probe::new("judge").output_step(move |a| {
        if a.text.contains("bad") {
            return Err(a
                .abort()
                .reason("it was bad")
                .retry(retry)
                .metadata(json!({"score": 0}))
                .into());
        }
        Ok(().into())
    })
}

on_every_path!(b22_output_step_abort_without_retry, |path| {
    let m = model([Turn::text("bad answer")]);
    let agent = build_agent!(path, model: m, output: [reject_bad(false)]);
    let r = generate(&*agent, "hi").await;
    let tw = r.tripwire.clone().unwrap();
    assert_eq!(
        (tw.reason.as_str(), tw.metadata, tw.processor_id.as_str()),
        ("it was bad", Some(json!({"score": 0})), "judge")
    );
    assert_eq!(r.finish_reason, FinishReason::Other);
    assert_eq!(r.text, "");
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].finish_reason, FinishReason::Tripwire);
});

on_every_path!(b40_retry_with_feedback_then_accept, |path| {
    let m = model([Turn::text("bad answer"), Turn::text("good answer")]);
    let agent = build_agent!(path, model: m, max_processor_retries: 3, output: [reject_bad(true)]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(m.calls(), 2);
    let second = &m.requests()[1].prompt;
    assert!(texts_of(second, Role::System).contains(
        &"[Processor Feedback] Your previous response was not accepted: it was bad. Please try again with the feedback in mind.".to_owned()
    ));
    assert!(!second.iter().any(|msg| msg.text().contains("bad answer")));
    assert_eq!(r.text, "good answer");
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.steps[0].tripwire.as_ref().unwrap().reason, "it was bad");
    assert_eq!(r.steps[0].text, "");
    assert!(r.steps[1].tripwire.is_none());
    assert!(r.tripwire.is_none());
});

on_every_path!(
    b41_retry_count_counts_consecutive_retries_and_resets,
    |path| {
        let m = model([
            Turn::text("bad 1"),
            Turn::text("bad 2"),
            Turn::text("good").tool_call("c1", "weather", json!({})),
            Turn::text("final"),
        ]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], max_processor_retries: 5, output: [
            Probe::new("judge").output_step(move |a| {
                l.push(a.retry_count.to_string());
                if a.text.contains("bad") {
                    return Err(a.abort().reason("bad").retry(true).into());
                }
                Ok(().into())
            }),
        ]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(log.entries(), ["0", "1", "2", "0"]);
        assert_eq!(r.text, "goodfinal");
    }
);

on_every_path!(
    b43_retries_run_out_and_the_result_carries_the_tripwire,
    |path| {
        let m = ScriptedModel::cycle([Turn::text("bad")]);
        let agent =
            build_agent!(path, model: m, max_processor_retries: 2, output: [reject_bad(true)]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(m.calls(), 3);
        assert_eq!(r.tripwire.unwrap().reason, "it was bad");
        assert_eq!(r.steps.len(), 3);
    }
);

on_every_path!(
    b44_retry_without_a_limit_is_an_abort_with_a_warning,
    |path| {
        let m = ScriptedModel::cycle([Turn::text("bad")]);
        let agent = build_agent!(path, model: m, output: [reject_bad(true)]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(m.calls(), 1);
        assert!(r.tripwire.is_some());
        assert_eq!(r.warnings.len(), 1);
        assert!(
            r.warnings[0].contains("max_processor_retries is not set"),
            "{:?}",
            r.warnings
        );
    }
);

on_every_path!(b45_retry_from_input_step_reruns_the_step, |path| {
    let m = model([Turn::text("ok")]);
    let agent = build_agent!(path, model: m, max_processor_retries: 2, input: [
        Probe::new("pre").input_step(|a| {
            if a.retry_count == 0 {
                return Err(a.abort().reason("ask again").retry(true).into());
            }
            Ok(().into())
        }),
    ]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(m.calls(), 1);
    assert_eq!(r.text, "ok");
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.steps[0].tripwire.as_ref().unwrap().processor_id, "pre");
    assert!(
        texts_of(&m.requests()[0].prompt, Role::System)
            .iter()
            .any(|t| t.contains("ask again"))
    );
});

on_every_path!(b46_retries_do_not_consume_max_steps, |path| {
    let m = model([Turn::text("bad"), Turn::text("good")]);
    let agent = build_agent!(path, model: m, max_processor_retries: 2, max_steps: 1, output: [reject_bad(true)]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.text, "good");
    assert_eq!(m.calls(), 2);
});

fn rejecting(calls_ok_after: usize) -> ScriptedModel {
    ScriptedModel::responder(move |_, i| {
        if i < calls_ok_after {
            Turn::error(ApiError::new(400, "prompt too long"))
        } else {
            Turn::text("fixed")
        }
    })
}

on_every_path!(b51_api_error_processor_fixes_and_retries, |path| {
    let m = rejecting(1);
    let agent = build_agent!(path, model: m, error: [
        Probe::new("trim").api_error(|a| {
            assert_eq!(a.error.status, Some(400));
            a.message_list.add_system(Message::system("be short"), Some("fix"));
            Ok(ApiErrorAction::Retry)
        }),
    ]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.text, "fixed");
    assert_eq!(m.calls(), 2);
    assert!(texts_of(&m.requests()[1].prompt, Role::System).contains(&"be short".to_owned()));
});

async fn calls_until_api_error(
    agent: &dyn AnyAgent,
    m: &ScriptedModel,
    options: GenerateOptions,
) -> usize {
    let err = agent.generate_with("hi".into(), options).await.unwrap_err();
    assert!(
        matches!(err, AgentError::Api(ref e) if e.status == Some(400)),
        "{err}"
    );
    m.calls()
}

on_every_path!(b51_api_error_retry_limits, |path| {
    let always = || Probe::new("always").api_error(|_| Ok(ApiErrorAction::Retry));
    let m = rejecting(usize::MAX);
    let agent = build_agent!(path, model: m, error: [always()]);
    assert_eq!(
        calls_until_api_error(&*agent, &m, GenerateOptions::new()).await,
        4,
        "default limit 3"
    );
    let m = rejecting(usize::MAX);
    let agent = build_agent!(path, model: m, error: [always()]);
    let zero = GenerateOptions::new().max_processor_retries(0);
    assert_eq!(calls_until_api_error(&*agent, &m, zero).await, 1, "limit 0");
    let m = rejecting(usize::MAX);
    let agent = build_agent!(path, model: m, max_processor_retries: 6, error: [always()]);
    assert_eq!(
        calls_until_api_error(&*agent, &m, GenerateOptions::new()).await,
        7,
        "limit 6"
    );
});

on_every_path!(b47_per_call_max_processor_retries_wins, |path| {
    let m = ScriptedModel::cycle([Turn::text("bad")]);
    let agent = build_agent!(path, model: m, max_processor_retries: 1, output: [reject_bad(true)]);
    agent
        .generate_with("hi".into(), GenerateOptions::new().max_processor_retries(3))
        .await
        .unwrap();
    assert_eq!(m.calls(), 4);
});

on_every_path!(b23_input_step_abort_after_a_tool_step, |path| {
    let m = model(tool_then_text("never"));
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], input: [
        Probe::new("budget").input_step(|a| {
            if a.step_number == 1 { return Err(a.abort().reason("budget spent").into()); }
            Ok(().into())
        }),
    ]);
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let r = r.unwrap();
    assert_eq!(r.finish_reason, FinishReason::Other);
    assert_eq!(r.tripwire.unwrap().reason, "budget spent");
    assert_eq!(types(&chunks).last().unwrap(), "tripwire");
    assert_eq!(
        types(&chunks).iter().filter(|t| *t == "tripwire").count(),
        1
    );
    assert_eq!(m.calls(), 1);
});

// ---------------------------------------------------------------------------------------------
// Request/response hooks

on_every_path!(b17_llm_request_rewrites_only_this_call, |path| {
    let store = InMemoryStore::new();
    let m = model(tool_then_text("done"));
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], memory: Memory::new(store.clone()), input: [
        Probe::new("shout").llm_request(|a| {
            if a.step_number != 0 { return Ok(LlmRequestAction::Continue); }
            let prompt = a.request.prompt.iter().cloned().map(|mut msg| {
                if msg.role == Role::User { let t = msg.text().to_uppercase(); msg.set_text(t); }
                msg
            }).collect();
            Ok(LlmRequestAction::Prompt(prompt))
        }),
    ]);
    let opts = GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "u"));
    agent
        .generate_with("quiet please".into(), opts)
        .await
        .unwrap();
    let reqs = m.requests();
    assert_eq!(texts_of(&reqs[0].prompt, Role::User), ["QUIET PLEASE"]);
    assert_eq!(texts_of(&reqs[1].prompt, Role::User), ["quiet please"]);
    let saved = store.list_messages("t", None).await.unwrap();
    assert_eq!(saved[0].text(), "quiet please");
});

on_every_path!(b18_llm_request_response_short_circuits_the_model, |path| {
    let m = model([Turn::text("from the model")]);
    let log = Log::new();
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    let cached = LlmResponse {
        chunks: vec![
            ChunkKind::TextStart { id: "t".into() },
            ChunkKind::TextDelta {
                id: "t".into(),
                text: "from the cache".into(),
            },
            ChunkKind::TextEnd { id: "t".into() },
            ChunkKind::Finish {
                finish_reason: FinishReason::Stop,
                usage: Usage::default(),
            },
        ],
    };
    let agent = build_agent!(path, model: m,
        input: [
            Probe::new("cache").llm_request(move |_| Ok(LlmRequestAction::Respond(cached.clone()))),
            Probe::new("after").llm_request(move |_| { l1.push("later llm_request ran"); Ok(().into()) }),
        ],
        output: [
            Probe::new("stream")
                .stream(move |a| { if a.chunk.text_delta().is_some() { l2.push("stream saw text"); } Ok(StreamAction::Pass) })
                .llm_response(move |a| { l3.push(format!("from_cache={}", a.from_cache)); Ok(()) }),
        ]
    );
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    assert_eq!(m.calls(), 0);
    assert!(m.requests().is_empty());
    assert_eq!(deltas(&chunks), ["from the cache"]);
    assert_eq!(r.unwrap().text, "from the cache");
    assert_eq!(log.entries(), ["later llm_request ran", "from_cache=true"]);
});

on_every_path!(b19_tool_result_changed_before_history, |path| {
    let m = model(tool_then_text("done"));
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [
        Probe::new("scrub").tool_result(|a| {
            assert_eq!(a.result["ok"], true);
            Ok(Some(json!({"scrubbed": a.tool_call.tool_name})).into())
        }),
    ]);
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let result_chunk = chunks
        .iter()
        .find_map(|c| match &c.kind {
            ChunkKind::ToolResult(r) => Some(r.result.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(result_chunk, json!({"scrubbed": "weather"}));
    assert_eq!(
        r.unwrap().tool_results[0].result,
        json!({"scrubbed": "weather"})
    );
    let tool_msg = m.requests()[1]
        .prompt
        .iter()
        .find(|msg| msg.role == Role::Tool)
        .cloned()
        .unwrap();
    assert!(
        matches!(&tool_msg.content.parts[0], Part::ToolResult(ToolResult { result, .. }) if *result == json!({"scrubbed": "weather"}))
    );
});

// ---------------------------------------------------------------------------------------------
// Memory and persistence

fn thread() -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread("thread-1", "user-1"))
}

on_every_path!(b54_memory_loads_first_and_saves_last, |path| {
    let store = InMemoryStore::new();
    let m = model([Turn::text("one"), Turn::text("two")]);
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()),
        input: [Probe::new("in").input(move |a| { l.push(format!("remembered {}", a.message_list.remembered().count())); Ok(().into()) })],
        output: [Probe::new("out").output_result(|a| {
            let mut ms = a.messages.clone();
            for msg in ms.iter_mut().filter(|msg| msg.role == Role::Assistant) {
                let t = format!("{} [checked]", msg.text());
                msg.set_text(t);
            }
            Ok(ms.into())
        })]
    );
    agent.generate_with("first".into(), thread()).await.unwrap();
    agent
        .generate_with("second".into(), thread())
        .await
        .unwrap();
    assert_eq!(log.entries(), ["remembered 0", "remembered 2"]);
    let saved: Vec<_> = store
        .list_messages("thread-1", None)
        .await
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(saved, ["first", "one [checked]", "second", "two [checked]"]);
});

on_every_path!(b55_redacted_output_streams_and_is_saved, |path| {
    let store = InMemoryStore::new();
    let m = model([Turn::deltas(["my secret ", "is out"])]);
    let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()), output: [
        Probe::new("redact").stream(|a| Ok(match a.chunk.text_delta() {
            Some(t) if t.contains("secret") => a.chunk.clone().map_text(|t| t.replace("secret", "[redacted]")).into(),
            _ => StreamAction::Pass,
        })),
    ]);
    let (chunks, _) = collect(&*agent, "hi", thread()).await;
    assert_eq!(deltas(&chunks).concat(), "my [redacted] is out");
    let saved = store.list_messages("thread-1", None).await.unwrap();
    assert_eq!(saved[1].text(), "my [redacted] is out");
});

on_every_path!(b56_tripwire_saves_nothing_of_the_turn, |path| {
    for place in ["input", "stream", "output_step", "output_result"] {
        let store = InMemoryStore::new();
        let m = ScriptedModel::cycle([Turn::text("answer")]);
        let trip = move |cx: &RequestContext| cx.value("trip").is_some();
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()),
            input: [Probe::new("in").input(move |a| {
                if place == "input" && trip(a.request_context) { return Err(a.abort().into()); }
                Ok(().into())
            })],
            output: [Probe::new("out")
                .stream(move |a| {
                    if place == "stream" && trip(a.request_context) && a.chunk.text_delta().is_some() { return Err(a.abort().into()); }
                    Ok(StreamAction::Pass)
                })
                .output_step(move |a| {
                    if place == "output_step" && trip(a.request_context) { return Err(a.abort().into()); }
                    Ok(().into())
                })
                .output_result(move |a| {
                    if place == "output_result" && trip(a.request_context) { return Err(a.abort().into()); }
                    Ok(().into())
                })]
        );
        agent.generate_with("kept".into(), thread()).await.unwrap();
        let tripping = GenerateOptions::new().request_context(
            RequestContext::new()
                .with_thread("thread-1", "user-1")
                .with_value("trip", json!(true)),
        );
        let r = agent
            .generate_with("dropped".into(), tripping)
            .await
            .unwrap();
        assert!(r.tripwire.is_some(), "{place}");
        let saved: Vec<_> = store
            .list_messages("thread-1", None)
            .await
            .unwrap()
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(saved, ["kept", "answer"], "{place}");
    }
});

on_every_path!(
    b09_per_call_lists_replace_the_agents_and_memory_still_runs,
    |path| {
        let store = InMemoryStore::new();
        let m = ScriptedModel::cycle([Turn::text("answer")]);
        let log = Log::new();
        let (l1, l2) = (log.clone(), log.clone());
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()), output: [
            Probe::new("agent-list").output_result(move |_| { l1.push("agent's processor"); Ok(().into()) }),
        ]);
        let per_call =
            DynPipeline::new().with(Probe::new("call-list").stream(upper).output_result(
                move |_| {
                    l2.push("per-call processor");
                    Ok(().into())
                },
            ));
        let r = agent
            .generate_with("hi".into(), thread().output_processors(per_call))
            .await
            .unwrap();
        assert_eq!(r.text, "ANSWER");
        assert_eq!(log.entries(), ["per-call processor"]);
        let saved: Vec<_> = store
            .list_messages("thread-1", None)
            .await
            .unwrap()
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(saved, ["hi", "ANSWER"]);
    }
);

on_every_path!(b26_processors_with_one_id_share_state, |path| {
    let m = model([Turn::deltas(["a", "b"]), Turn::deltas(["a", "b"])]);
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, output: [
        Probe::new("same").stream(|a| {
            if a.chunk.text_delta().is_some() { *a.state = json!(a.state.as_u64().unwrap_or(0) + 1); }
            Ok(StreamAction::Pass)
        }),
        Probe::new("same").stream(move |a| {
            if a.chunk.text_delta().is_some() { l.push(a.state.to_string()); }
            Ok(StreamAction::Pass)
        }),
    ]);
    generate(&*agent, "hi").await;
    assert_eq!(log.entries(), ["1", "2"]);
    // A second call shares the same way, from a fresh state.
    generate(&*agent, "again").await;
    assert_eq!(log.entries(), ["1", "2", "1", "2"]);
});

on_every_path!(b42_each_attempt_carries_one_feedback_message, |path| {
    let m = model([Turn::text("one"), Turn::text("two"), Turn::text("three")]);
    let guard = Probe::new("guard").output_step(|a| {
        let reason = format!("attempt {} rejected", a.retry_count);
        Err(a.abort().reason(reason).retry(true).into())
    });
    let agent = build_agent!(path, model: m, max_processor_retries: 2, output: [guard]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(m.calls(), 3);
    let feedback = |call: usize| -> Vec<String> {
        texts_of(&m.requests()[call].prompt, Role::System)
            .into_iter()
            .filter(|t| t.starts_with("[Processor Feedback]"))
            .collect()
    };
    assert_eq!(feedback(0).len(), 0);
    assert_eq!(feedback(1).len(), 1);
    assert!(feedback(1)[0].contains("attempt 0 rejected"));
    assert_eq!(feedback(2).len(), 1, "{:?}", feedback(2));
    assert!(feedback(2)[0].contains("attempt 1 rejected"));
    assert_eq!(
        r.tripwire.map(|t| t.reason).as_deref(),
        Some("attempt 2 rejected")
    );
});

on_every_path!(
    b38_a_dropped_tool_call_is_neither_run_nor_recorded,
    |path| {
        let m = model(tool_then_text("no tool needed"));
        let ran = Arc::new(AtomicUsize::new(0));
        let r2 = ran.clone();
        let counting = tool(
            "weather",
            "Counts its calls",
            json!({"type": "object"}),
            move |_| {
                let r = r2.clone();
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    Ok(json!("sunny"))
                }
            },
        );
        let agent = build_agent!(path, model: m, tools: [counting], output: [
            Probe::new("no-tools").stream(|a| Ok(match &a.chunk.kind {
                ChunkKind::ToolCall(_) => StreamAction::Drop,
                _ => StreamAction::Pass,
            })),
        ]);
        let (chunks, r) = collect(&*agent, "weather?", GenerateOptions::new()).await;
        let r = r.unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0, "the dropped call ran");
        assert!(!chunks.iter().any(|c| matches!(
            c.kind,
            ChunkKind::ToolCall(_) | ChunkKind::ToolResult(_) | ChunkKind::ToolError { .. }
        )));
        assert!(r.tool_calls.is_empty() && r.tool_results.is_empty());
        assert!(r.steps.iter().all(|s| s.tool_calls.is_empty()));
        assert!(
            !r.response_messages
                .iter()
                .any(|m| m.tool_calls().next().is_some())
        );
        assert_eq!(r.text, "no tool needed");
    }
);

on_every_path!(
    b57_the_memory_window_never_begins_with_an_orphan_tool_result,
    |path| {
        let store = InMemoryStore::new();
        let mut turns = tool_then_text("sunny").to_vec();
        turns.push(Turn::text("again"));
        let m = model(turns);
        let memory = Memory::new(store.clone()).last_messages(Some(2));
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], memory: memory);
        agent
            .generate_with("weather?".into(), thread())
            .await
            .unwrap();
        // Saved: user, assistant (call), tool (result), assistant (text); the last two fit the
        // window, and the first of them is a result whose call fell out.
        agent
            .generate_with("and now?".into(), thread())
            .await
            .unwrap();
        let roles: Vec<Role> = m.requests()[2]
            .prompt
            .iter()
            .filter(|msg| msg.role != Role::System)
            .map(|msg| msg.role)
            .collect();
        assert_eq!(roles, [Role::Assistant, Role::User]);
    }
);

on_every_path!(
    b11_a_message_returned_as_system_moves_to_the_system_set,
    |path| {
        let store = InMemoryStore::new();
        let m = model([Turn::text("ok")]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()), input: [
            Probe::new("promote").input(|a| {
                let mut ms = a.messages.clone();
                let mut rule = ms.remove(0);
                rule.role = Role::System;
                ms.insert(0, rule);
                Ok(ms.into())
            }),
            Probe::new("look").input(move |a| {
                l.push(format!(
                    "messages={:?} system={:?}",
                    a.messages.iter().map(Message::text).collect::<Vec<_>>(),
                    a.system_messages.iter().map(Message::text).collect::<Vec<_>>(),
                ));
                Ok(().into())
            }),
        ]);
        let input = vec![
            Message::user("Always answer in French."),
            Message::user("hello"),
        ];
        agent.generate_with(input.into(), thread()).await.unwrap();
        assert_eq!(
            log.entries(),
            [r#"messages=["hello"] system=["You are a test.", "Always answer in French."]"#]
        );
        let saved = store.list_messages("thread-1", None).await.unwrap();
        assert!(
            saved.iter().all(|msg| msg.role != Role::System),
            "{saved:?}"
        );
        assert_eq!(
            saved.iter().map(Message::text).collect::<Vec<_>>(),
            ["hello", "ok"]
        );
    }
);

/// The `step-finish` chunks of a stream, as `(reason, retry)`.
fn step_finishes(chunks: &[Chunk]) -> Vec<(FinishReason, Option<StepRetry>)> {
    chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::StepFinish {
                finish_reason,
                retry,
                ..
            } => Some((*finish_reason, retry.as_deref().cloned())),
            _ => None,
        })
        .collect()
}

on_every_path!(b48_a_rejected_attempt_finishes_with_reason_retry, |path| {
    let m = model([Turn::text("bad answer"), Turn::text("good answer")]);
    let log = Log::new();
    let l = log.clone();
    let guard = reject_bad(true);
    let agent = build_agent!(path, model: m, max_processor_retries: 3, output: [
        Probe::new("steps").output_step(move |a| {
            l.push(format!("step {} retry {}", a.step_number, a.retry_count));
            Ok(().into())
        }),
        guard,
    ]);
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let r = r.unwrap();
    // The client learns the shown text was rejected, after it streamed and before the next
    // attempt starts.
    let finishes = step_finishes(&chunks);
    assert_eq!(finishes.len(), 2);
    let (reason, retry) = &finishes[0];
    assert_eq!(*reason, FinishReason::Retry);
    let retry = retry.as_ref().expect("retry details");
    assert_eq!(retry.reason, "it was bad");
    assert_eq!(retry.retry_count, 1);
    assert!(
        retry
            .feedback
            .as_deref()
            .unwrap_or("")
            .starts_with("[Processor Feedback]")
    );
    assert_eq!(finishes[1], (FinishReason::Stop, None));
    let order: Vec<String> = types(&chunks)
        .into_iter()
        .filter(|t| t.starts_with("step-"))
        .collect();
    assert_eq!(
        order,
        ["step-start", "step-finish", "step-start", "step-finish"]
    );
    // Each model call is a step of its own; retries still do not count against max_steps.
    assert_eq!(log.entries(), ["step 0 retry 0", "step 1 retry 1"]);
    let steps: Vec<(u32, FinishReason)> = r
        .steps
        .iter()
        .map(|s| (s.step_number, s.finish_reason))
        .collect();
    assert_eq!(steps, [(0, FinishReason::Retry), (1, FinishReason::Stop)]);
    assert_eq!(
        r.steps[0].tripwire.as_ref().map(|t| t.reason.as_str()),
        Some("it was bad")
    );
});

on_every_path!(b52_an_api_error_retry_is_a_step_of_its_own, |path| {
    let m = rejecting(1);
    let agent = build_agent!(path, model: m, error: [
        Probe::new("again").api_error(|_| Ok(ApiErrorAction::Retry)),
    ]);
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let r = r.unwrap();
    assert_eq!(r.text, "fixed");
    let order: Vec<String> = types(&chunks)
        .into_iter()
        .filter(|t| t.starts_with("step-") || t == "finish")
        .collect();
    assert_eq!(
        order,
        [
            "step-start",
            "step-finish",
            "step-start",
            "step-finish",
            "finish"
        ]
    );
    let finishes = step_finishes(&chunks);
    assert_eq!(finishes[0].0, FinishReason::Retry);
    let retry = finishes[0].1.as_ref().expect("retry details");
    assert_eq!(retry.processor_id, "again");
    assert_eq!(retry.retry_count, 1);
    let steps: Vec<(u32, FinishReason)> = r
        .steps
        .iter()
        .map(|s| (s.step_number, s.finish_reason))
        .collect();
    assert_eq!(steps, [(0, FinishReason::Retry), (1, FinishReason::Stop)]);
});

on_every_path!(
    b49_data_written_at_the_start_survives_a_rejected_first_step,
    |path| {
        let store = InMemoryStore::new();
        let m = model([Turn::text("bad answer"), Turn::text("good answer")]);
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()), max_processor_retries: 2, output: [
            Probe::new("tagger").stream(|a| {
                if matches!(a.chunk.kind, ChunkKind::Start) {
                    a.writer.write("session", json!({"id": 7}));
                }
                Ok(StreamAction::Pass)
            }),
            reject_bad(true),
        ]);
        let r = agent.generate_with("hi".into(), thread()).await.unwrap();
        let data = |ms: &[Message]| -> Vec<Value> {
            ms.iter()
                .flat_map(|m| &m.content.parts)
                .filter_map(|p| match p {
                    Part::Data { name, data } if name == "session" => Some(data.clone()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(data(&r.response_messages), [json!({"id": 7})]);
        let saved = store.list_messages("thread-1", None).await.unwrap();
        assert_eq!(data(&saved), [json!({"id": 7})]);
        assert_eq!(r.text, "good answer");
    }
);

on_every_path!(b04_output_step_sees_the_step_usage_and_the_runs, |path| {
    let m = model(tool_then_text("done").map(|t| t.usage(10, 2)));
    let log = Log::new();
    let l = log.clone();
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [
        Probe::new("usage").output_step(move |a| {
            l.push(format!("{} {}", a.usage.total_tokens, a.run_usage.total_tokens));
            Ok(().into())
        }),
    ]);
    generate(&*agent, "hi").await;
    assert_eq!(log.entries(), ["12 12", "12 24"]);
});

on_every_path!(
    b53_a_failure_mid_stream_goes_to_the_error_processors,
    |path| {
        let m = model([
            Turn::deltas(["half ", "an answ"])
                .fail_mid_stream(ApiError::other("connection reset", true)),
            Turn::text("a whole answer"),
        ]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, error: [
            Probe::new("stream-retry").api_error(move |a| {
                l.push(format!("{} retry {}", a.error.message, a.retry_count));
                Ok(if a.error.retryable { ApiErrorAction::Retry } else { ApiErrorAction::Unhandled })
            }),
        ]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        let r = r.unwrap();
        assert_eq!(log.entries(), ["connection reset retry 0"]);
        assert_eq!(m.calls(), 2);
        // The client saw the partial text, then learns that attempt was dropped.
        assert_eq!(deltas(&chunks), ["half ", "an answ", "a whole answer"]);
        let finishes = step_finishes(&chunks);
        assert_eq!(finishes[0].0, FinishReason::Retry);
        assert_eq!(
            finishes[0].1.as_ref().map(|r| r.processor_id.as_str()),
            Some("stream-retry")
        );
        assert!(!types(&chunks).contains(&"error".to_owned()));
        // The partial step is rolled back: not in the result, nor in the next prompt.
        assert_eq!(r.text, "a whole answer");
        assert!(
            !m.requests()[1]
                .prompt
                .iter()
                .any(|msg| msg.text().contains("half"))
        );
        let steps: Vec<FinishReason> = r.steps.iter().map(|s| s.finish_reason).collect();
        assert_eq!(steps, [FinishReason::Retry, FinishReason::Stop]);
    }
);

on_every_path!(
    b50_a_clients_answer_text_shows_the_answer_once_however_many_attempts,
    |path| {
        // An attempt cut mid-stream and retried by an error processor, then an answer
        // rejected by an output-step processor and asked for again, then the answer.
        let m = model([
            Turn::deltas(["half ", "an answ"])
                .fail_mid_stream(ApiError::other("connection reset", true)),
            Turn::deltas(["a bad ", "answer"]),
            Turn::deltas(["a good ", "answer"]),
        ]);
        let agent = build_agent!(path, model: m, max_processor_retries: 2,
            output: [reject_bad(true)],
            error: [Probe::new("stream-retry").api_error(|_| Ok(ApiErrorAction::Retry))]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        let mut answer = AnswerText::new();
        let changes: Vec<TextChange> = chunks.iter().map(|c| answer.apply(c)).collect();
        // Naively appended, the attempts would all show.
        assert_eq!(
            deltas(&chunks).concat(),
            "half an answa bad answera good answer"
        );
        assert_eq!(answer.as_str(), "a good answer");
        assert_eq!(answer.as_str(), r.unwrap().text);
        let taken: Vec<usize> = changes
            .iter()
            .filter_map(|c| match c {
                TextChange::TakenBack { bytes } => Some(*bytes),
                _ => None,
            })
            .collect();
        assert_eq!(taken, ["half an answ".len(), "a bad answer".len()]);
        // Every delta was appended, as it came.
        let appended = changes
            .iter()
            .filter(|c| matches!(c, TextChange::Appended(_)))
            .count();
        assert_eq!(appended, deltas(&chunks).len());
    }
);

/// Holds text back until a sentence ends, redacting keys across deltas; flushes what it holds on
/// the text part's end.
fn sentence_redactor() -> Probe {
    Probe::new("sentences").stream(|a| {
        let held = a.state.as_str().unwrap_or("").to_owned();
        let redact = |t: &str| {
            t.split(' ')
                .map(|w| if w.starts_with("sk-") { "[key]" } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        };
        match &a.chunk.kind {
            ChunkKind::TextDelta { text, .. } => {
                let all = held + text;
                match all.rfind('.') {
                    Some(end) => {
                        *a.state = json!(&all[end + 1..]);
                        let sentence = format!("{}.", redact(&all[..end]));
                        Ok(a.chunk.clone().map_text(|_| sentence).into())
                    }
                    None => {
                        *a.state = json!(all);
                        Ok(StreamAction::Drop)
                    }
                }
            }
            ChunkKind::TextEnd { id } if !held.is_empty() => {
                *a.state = json!("");
                let rest = Chunk::new(
                    a.chunk.run_id.clone(),
                    ChunkKind::TextDelta {
                        id: id.clone(),
                        text: redact(&held),
                    },
                );
                Ok(vec![rest, a.chunk.clone()].into())
            }
            _ => Ok(StreamAction::Pass),
        }
    })
}

on_every_path!(
    b32_a_stream_processor_holds_chunks_back_and_emits_several,
    |path| {
        let m = model([Turn::deltas([
            "My key is sk-",
            "12345. Tha",
            "nks a",
            " lot",
        ])]);
        let log = Log::new();
        let l = log.clone();
        let agent = build_agent!(path, model: m, output: [
            sentence_redactor(),
            Probe::new("after").stream(move |a| {
                if let Some(t) = a.chunk.text_delta() {
                    l.push(t.to_owned());
                }
                Ok(StreamAction::Pass)
            }),
        ]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["My key is [key].", " Thanks a lot"]);
        // Each emitted chunk goes through the processors after the one that emitted it.
        assert_eq!(log.entries(), ["My key is [key].", " Thanks a lot"]);
        let r = r.unwrap();
        assert_eq!(r.text, "My key is [key]. Thanks a lot");
        let order: Vec<String> = types(&chunks)
            .into_iter()
            .filter(|t| t.starts_with("text-"))
            .collect();
        assert_eq!(
            order,
            ["text-start", "text-delta", "text-delta", "text-end"]
        );
    }
);

/// What an input processor found, for the processors after it.
#[derive(Debug, Clone, PartialEq)]
struct Detected(&'static str);

on_every_path!(
    b27_a_processor_passes_a_value_to_later_ones_through_the_request_context,
    |path| {
        let m = model([Turn::text("bonjour"), Turn::text("salut")]);
        let log = Log::new();
        let (l0, l1, l2) = (log.clone(), log.clone(), log.clone());
        let agent = build_agent!(path, model: m,
            input: [Probe::new("detect").input(move |a| {
                l0.push(format!("input sees {:?}", a.request_context.get::<Detected>()));
                a.request_context.insert(Detected("fr"));
                a.request_context.set_value("checked", json!(true));
                Ok(().into())
            })],
            output: [
                Probe::new("stream").stream(move |a| {
                    if a.chunk.text_delta().is_some() {
                        l1.push(format!("stream sees {:?}", a.request_context.get::<Detected>()));
                    }
                    Ok(StreamAction::Pass)
                }),
                Probe::new("result").output_result(move |a| {
                    l2.push(format!("result sees {:?}", a.request_context.value("checked")));
                    Ok(OutputOutcome::Unchanged)
                }),
            ]
        );
        generate(&*agent, "salut").await;
        // Each request starts from the caller's context.
        generate(&*agent, "encore").await;
        let once = [
            "input sees None",
            r#"stream sees Some(Detected("fr"))"#,
            "result sees Some(Bool(true))",
        ];
        assert_eq!(log.entries(), [once, once].concat());
    }
);

on_every_path!(b08_processors_from_closures, |path| {
    let m = model([
        Turn::deltas(["a", "b"])
            .tool_call("c1", "weather", json!({}))
            .finish(FinishReason::ToolCalls),
        Turn::text("done"),
    ]);
    let log = Log::new();
    let (l1, l2) = (log.clone(), log.clone());
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")],
        input: [input_fn("tag", |a: &mut InputArgs<'_, ()>| {
            let mut ms = a.messages.clone();
            let t = format!("{} [tagged]", ms[0].text());
            ms[0].set_text(t);
            ms
        })],
        output: [
            output_stream_fn("count", |a: &mut OutputStreamArgs<'_, usize>| {
                if a.chunk.text_delta().is_some() {
                    *a.state += 1;
                    return a.chunk.clone().map_text(|t| t.to_uppercase()).into();
                }
                StreamAction::Pass
            }),
            tool_result_fn("scrub", |_: &mut ToolResultArgs<'_, ()>| Some(json!("scrubbed"))),
            output_result_fn("report", move |a: &mut OutputResultArgs<'_, ()>| {
                l1.push(format!("result {}", a.result.text));
            }),
            output_step_fn("steps", move |a: &mut OutputStepArgs<'_, ()>| -> Result<(), ProcessorError> {
                l2.push(format!("step {}", a.step_number));
                Ok(())
            }),
        ]
    );
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.text, "ABDONE");
    assert_eq!(r.tool_results[0].result, json!("scrubbed"));
    assert_eq!(log.entries(), ["step 0", "step 1", "result ABDONE"]);
    assert!(
        m.requests()[0]
            .prompt
            .iter()
            .any(|msg| msg.text() == "hi [tagged]")
    );
});

on_every_path!(
    b28_processors_own_usage_is_reported_per_processor_apart_from_the_models,
    |path| {
        let turn = || Turn::deltas(["a", "b"]).usage(10, 2);
        let m = model([turn(), turn()]);
        let flow = Workflow::new("fan-out").parallel(
            [
                boxed(Probe::new("kept")),
                boxed(Probe::new("unselected").input(|a| {
                    a.request_context
                        .record_usage("unselected", Usage::new(7, 0));
                    Ok(InputOutcome::Unchanged)
                })),
            ],
            0,
        );
        let agent = build_agent!(path, model: m, input: [
            Probe::new("judge").input(|a| {
                a.request_context.record_usage("judge", Usage::new(100, 10));
                Ok(InputOutcome::Unchanged)
            }),
            flow,
        ], output: [
            Probe::new("judge").stream(|a| {
                if a.chunk.text_delta().is_some() {
                    a.request_context.record_usage("judge", Usage::new(1, 1));
                }
                Ok(StreamAction::Pass)
            }),
        ]);
        // One context for two runs: each run reports its own.
        let cx = RequestContext::new();
        for _ in 0..2 {
            let options = GenerateOptions::new().request_context(cx.clone());
            let r = agent.generate_with("hi".into(), options).await.unwrap();
            assert_eq!(r.usage, Usage::new(10, 2), "the model's usage alone");
            assert_eq!(
                r.processor_usage.into_iter().collect::<Vec<_>>(),
                [
                    ("judge".to_owned(), Usage::new(102, 12)),
                    ("unselected".to_owned(), Usage::new(7, 0)),
                ]
            );
        }
    }
);

on_every_path!(
    b28_a_run_ended_by_a_trip_wire_reports_what_processors_used,
    |path| {
        let m = model([Turn::text("never")]);
        let agent = build_agent!(path, model: m, input: [
            Probe::new("guard").input(|a| {
                a.request_context.record_usage("guard", Usage::new(50, 5));
                Err(a.abort().reason("blocked").into())
            }),
        ]);
        let r = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap();
        assert!(r.tripwire.is_some());
        assert_eq!(r.processor_usage["guard"], Usage::new(50, 5));
    }
);

on_every_path!(
    b24_a_warning_reported_beside_a_result_reaches_on_violation,
    |path| {
        let m = model([Turn::deltas(["a", "b"])]);
        let seen = Log::new();
        let log = seen.clone();
        let warn = |id: &str, why: &str| TripWire {
            reason: why.to_owned(),
            retry: false,
            metadata: None,
            processor_id: id.to_owned(),
        };
        let agent = build_agent!(path, model: m, on_violation: move |v: &Violation| {
            log.push(format!("{:?} {} {}", v.kind, v.processor_id, v.reason));
        }, output: [
            Probe::new("upper").stream(move |a| {
                if a.chunk.text_delta() == Some("a") {
                    a.request_context.report_warning(warn("upper", "first delta"));
                }
                upper(a)
            }),
            Probe::new("tidy").output_result(move |a| {
                a.request_context.report_warning(warn("tidy", "kept as it was"));
                let mut ms = a.messages.clone();
                for m in &mut ms {
                    let t = format!("{}!", m.text());
                    m.set_text(t);
                }
                Ok(ms.into())
            }),
        ]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(r.text, "AB!", "both results applied");
        assert_eq!(
            seen.entries(),
            ["Warn upper first delta", "Warn tidy kept as it was"]
        );
    }
);

// ---------------------------------------------------------------------------------------------
// Warnings a run gives

on_every_path!(
    b84_memory_without_a_thread_warns_and_saves_nothing,
    |path| {
        let store = InMemoryStore::new();
        let m = model([Turn::text("one"), Turn::text("two")]);
        let agent = build_agent!(path, model: m, memory: Memory::new(store.clone()));
        let r = generate(&*agent, "hi").await;
        assert_eq!(
            r.warnings,
            [
                "the agent has memory, but the call names no thread and resource (`RequestContext::with_thread`), so nothing is loaded or saved"
            ]
        );
        assert!(
            store
                .list_messages_by_resource("user-1")
                .await
                .unwrap()
                .is_empty()
        );
        // With a thread, no warning.
        let r = agent.generate_with("hi".into(), thread()).await.unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
);

/// Holds text deltas and `text-end` until a chunk `release` says, then lets them through
/// before it.
fn hold_until(release: fn(&ChunkKind) -> bool) -> Probe {
    Probe::new("hold").stream(move |a| {
        let mut held = a
            .state
            .as_array_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let action = match &a.chunk.kind {
            ChunkKind::TextDelta { .. } | ChunkKind::TextEnd { .. } => {
                held.push(serde_json::to_value(a.chunk).unwrap());
                StreamAction::Drop
            }
            kind if release(kind) => {
                let mut out: Vec<Chunk> = std::mem::take(&mut held)
                    .into_iter()
                    .map(|v| serde_json::from_value(v).unwrap())
                    .collect();
                out.push(a.chunk.clone());
                StreamAction::Many(out)
            }
            _ => StreamAction::Pass,
        };
        *a.state = Value::Array(held);
        Ok(action)
    })
}

on_every_path!(
    b32_text_held_until_the_step_or_the_run_ends_is_kept_as_it_reached_the_client,
    |path| {
        let releases: [fn(&ChunkKind) -> bool; 2] = [
            |k| matches!(k, ChunkKind::StepFinish { .. }),
            |k| matches!(k, ChunkKind::Finish { .. }),
        ];
        for (at_step_end, release) in [true, false].into_iter().zip(releases) {
            let m = model([
                Turn::deltas(["Let me ", "check."]).tool_call("call-1", "weather", json!({})),
                Turn::deltas(["Hel", "lo"]),
            ]);
            let store = InMemoryStore::new();
            let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], memory: Memory::new(store.clone()), output: [hold_until(release)]);
            let (chunks, r) = collect(&*agent, "hi", thread()).await;
            let r = r.unwrap();
            assert_eq!(deltas(&chunks).concat(), "Let me check.Hello");
            assert_eq!(r.text, "Let me check.Hello", "what the client read");
            let steps: Vec<&str> = r.steps.iter().map(|s| s.text.as_str()).collect();
            let saved = store.list_messages("thread-1", None).await.unwrap();
            let said: Vec<String> = saved
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .map(Message::text)
                .collect();
            match at_step_end {
                // Released at each step's end: each step keeps its own.
                true => {
                    assert_eq!(steps, ["Let me check.", "Hello"]);
                    assert_eq!(said, ["Let me check.", "Hello"]);
                }
                // Released at the run's end: all of it with the last answer.
                false => {
                    assert_eq!(steps, ["", "Let me check.Hello"]);
                    assert_eq!(said, ["", "Let me check.Hello"]);
                }
            }
        }
    }
);
