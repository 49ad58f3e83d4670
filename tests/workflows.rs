//! Behaviours 58-66 of `docs/semantics.md`: a workflow of processors behaves as one processor,
//! on every dispatch path, for every hook.

mod common;

use common::*;
use processors::agent::BuildError;
use processors::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn model(turns: impl IntoIterator<Item = Turn>) -> ScriptedModel {
    ScriptedModel::new(turns)
}

fn suffix(id: &str, s: &'static str) -> Probe {
    Probe::new(id).input(move |a| {
        let mut ms = a.messages.clone();
        for m in &mut ms {
            let t = format!("{}{s}", m.text());
            m.set_text(t);
        }
        Ok(ms.into())
    })
}

on_every_path!(b58_sequence_runs_in_order_and_stream_steps_chain, |path| {
    let m = model([Turn::deltas(["hello", "drop"])]);
    let flow = Workflow::new("stream-flow")
        .then(Probe::new("upper").stream(upper))
        .then(Probe::new("filter").stream(|a| {
            Ok(if a.chunk.text_delta() == Some("DROP") {
                StreamAction::Drop
            } else {
                StreamAction::Pass
            })
        }))
        .then(Probe::new("bang").stream(|a| {
            Ok(match a.chunk.text_delta() {
                Some(_) => a.chunk.clone().map_text(|t| format!("{t}!")).into(),
                None => StreamAction::Pass,
            })
        }));
    let agent = build_agent!(path, model: m, output: [flow]);
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["HELLO!"]);
    assert_eq!(r.unwrap().text, "HELLO!");
});

on_every_path!(b58_parallel_keeps_the_selected_branch, |path| {
    let m = model([Turn::text("ok")]);
    let log = Log::new();
    let l = log.clone();
    let flow = Workflow::new("fan-out")
        .then(suffix("first", " [seq]"))
        .parallel(
            [
                boxed(suffix("left", " [left]").input(move |a| {
                    l.push(format!("left saw {}", a.messages[0].text()));
                    Ok(().into())
                })),
                boxed(suffix("right", " [right]")),
            ],
            1,
        )
        .map(|mut ms| {
            ms.push(Message::user("mapped"));
            ms
        });
    let agent = build_agent!(path, model: m, input: [flow]);
    generate(&*agent, "q").await;
    assert_eq!(
        texts_of(&m.requests()[0].prompt, Role::User),
        ["q [seq] [right]", "mapped"]
    );
    assert_eq!(
        log.entries(),
        ["left saw q [seq]"],
        "the unselected branch ran on the same input"
    );
});

on_every_path!(b58_condition_branch_runs_the_first_match, |path| {
    let m = ScriptedModel::cycle([Turn::text("ok")]);
    let long = |input: &WorkflowInput<'_>| matches!(input, WorkflowInput::Messages(ms) if ms[0].text().len() > 5);
    let flow = Workflow::new("router")
        .branch(long, suffix("long", " [long]"))
        .branch(|_| true, suffix("short", " [short]"));
    let agent = build_agent!(path, model: m, input: [flow]);
    generate(&*agent, "a long question").await;
    generate(&*agent, "hi").await;
    let reqs = m.requests();
    assert_eq!(
        texts_of(&reqs[0].prompt, Role::User),
        ["a long question [long]"]
    );
    assert_eq!(texts_of(&reqs[1].prompt, Role::User), ["hi [short]"]);
});

on_every_path!(b58_tripwire_inside_bubbles_out_with_the_inner_id, |path| {
    let m = model([Turn::text("bad"), Turn::text("good")]);
    let flow =
        Workflow::new("guards")
            .then(Probe::new("noop"))
            .then(Probe::new("judge").output_step(|a| {
                if a.text == "bad" {
                    return Err(a
                        .abort()
                        .reason("not good")
                        .retry(true)
                        .metadata(json!({"k": 1}))
                        .into());
                }
                Ok(().into())
            }));
    let agent = build_agent!(path, model: m, max_processor_retries: 1, output: [flow]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.text, "good");
    let tw = r.steps[0].tripwire.clone().unwrap();
    assert_eq!(
        (tw.processor_id.as_str(), tw.retry, tw.metadata),
        ("judge", true, Some(json!({"k": 1})))
    );
});

on_every_path!(
    b58_stream_abort_inside_a_workflow_names_the_inner_processor,
    |path| {
        let m = model([Turn::deltas(["a", "b"])]);
        let flow = Workflow::new("stream-guards").then(Probe::new("block-b").stream(|a| {
            if a.chunk.text_delta() == Some("b") {
                return Err(a.abort().into());
            }
            Ok(StreamAction::Pass)
        }));
        let agent = build_agent!(path, model: m, output: [flow]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["a"]);
        let tw = r.unwrap().tripwire.unwrap();
        assert_eq!(tw.processor_id, "block-b");
        assert_eq!(tw.reason, "Tripwire triggered by block-b");
    }
);

on_every_path!(
    b58_inner_state_is_kept_per_processor_for_the_request,
    |path| {
        let m = ScriptedModel::cycle([Turn::deltas(["a", "b", "c"])]);
        let log = Log::new();
        let l = log.clone();
        let flow = Workflow::new("count-flow").then(
            Probe::new("count")
                .stream(|a| {
                    if a.chunk.text_delta().is_some() {
                        *a.state = json!(a.state.as_u64().unwrap_or(0) + 1);
                    }
                    Ok(StreamAction::Pass)
                })
                .output_result(move |a| {
                    l.push(a.state.to_string());
                    Ok(().into())
                }),
        );
        let agent = build_agent!(path, model: m, output: [flow]);
        generate(&*agent, "one").await;
        generate(&*agent, "two").await;
        assert_eq!(log.entries(), ["3", "3"]);
    }
);

on_every_path!(b58_direct_list_edits_inside_a_workflow_stand, |path| {
    let m = model([Turn::text("ok")]);
    let flow = Workflow::new("notes").then(Probe::new("note").input(|a| {
        a.message_list
            .add_system(Message::system("added directly"), None);
        Ok(().into())
    }));
    let agent = build_agent!(path, model: m, input: [flow]);
    generate(&*agent, "q").await;
    assert!(texts_of(&m.requests()[0].prompt, Role::System).contains(&"added directly".to_owned()));
});

on_every_path!(b58_inner_stream_processors_keep_their_history, |path| {
    let m = model([Turn::deltas(["Hel", "lo", " world."])]);
    let flow = Workflow::new("sentences").then(Probe::new("hold").history().stream(|a| {
        let Some(t) = a.chunk.text_delta() else {
            return Ok(StreamAction::Pass);
        };
        if !t.contains('.') {
            return Ok(StreamAction::Drop);
        }
        let all: String = a
            .stream_history
            .iter()
            .filter_map(Chunk::text_delta)
            .collect();
        Ok(a.chunk.clone().map_text(|_| all).into())
    }));
    let agent = build_agent!(path, model: m, output: [flow]);
    let (chunks, _) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["Hello world."]);
});

on_every_path!(
    b58_a_warning_inside_a_workflow_keeps_the_earlier_steps_changes,
    |path| {
        let m = model([Turn::deltas(["hello"])]);
        let log = Log::new();
        let l = log.clone();
        let on_violation = move |v: &Violation| {
            l.push(format!("{:?} {} {}", v.kind, v.processor_id, v.reason));
        };
        let flow = Workflow::new("guarded")
            .then(Probe::new("upper").stream(upper))
            .then(Probe::new("watch").stream(|a| match a.chunk.text_delta() {
                Some(_) => Err(a.abort().reason("looks odd").warn()),
                None => Ok(StreamAction::Pass),
            }))
            .then(Probe::new("bang").stream(|a| {
                Ok(match a.chunk.text_delta() {
                    Some(_) => a.chunk.clone().map_text(|t| format!("{t}!")).into(),
                    None => StreamAction::Pass,
                })
            }));
        let agent = build_agent!(path, model: m, on_violation: on_violation, output: [flow]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["HELLO!"]);
        assert_eq!(r.unwrap().text, "HELLO!");
        assert_eq!(log.entries(), ["Warn watch looks odd"]);
    }
);

on_every_path!(
    b58_a_warning_inside_a_workflow_message_hook_is_reported_and_the_workflow_goes_on,
    |path| {
        let m = model([Turn::text("ok")]);
        let log = Log::new();
        let l = log.clone();
        let on_violation = move |v: &Violation| l.push(format!("{:?} {}", v.kind, v.processor_id));
        let flow = Workflow::new("input-flow")
            .then(suffix("first", " [1]"))
            .then(Probe::new("watch").input(|a| Err(a.abort().reason("hm").warn())))
            .then(suffix("second", " [2]"));
        let agent = build_agent!(path, model: m.clone(), on_violation: on_violation, input: [flow]);
        generate(&*agent, "hi").await;
        assert_eq!(log.entries(), ["Warn watch"]);
        let prompt = &m.requests()[0].prompt;
        assert_eq!(
            prompt.last().map(Message::text).as_deref(),
            Some("hi [1] [2]")
        );
    }
);

// ---------------------------------------------------------------------------------------------
// Every hook inside a workflow

fn tool_then_text(text: &str) -> [Turn; 2] {
    [
        Turn::empty().tool_call("call-1", "weather", json!({"city": "Oslo"})),
        Turn::text(text),
    ]
}

on_every_path!(b59_input_step_inside_a_workflow_chains_settings, |path| {
    let m = model([Turn::text("from the first model")]);
    let chosen = ScriptedModel::new([Turn::text("from the chosen model")]).named("chosen");
    let chosen_ref: Arc<dyn LanguageModel> = Arc::new(chosen.clone());
    let log = Log::new();
    let l = log.clone();
    let flow = Workflow::new("step-settings")
        .then(Probe::new("choose").input_step(move |_| {
            Ok(StepOverrides::new()
                .model(chosen_ref.clone())
                .tool_choice(ToolChoice::None))
        }))
        .then(Probe::new("see").input_step(move |a| {
            l.push(format!(
                "{} {:?}",
                a.config.model.model_id(),
                a.config.tool_choice
            ));
            a.message_list
                .add_system(Message::system("from inside"), Some("flow"));
            Ok(().into())
        }));
    let agent = build_agent!(path, model: m, input: [flow]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(
        log.entries(),
        ["chosen None"],
        "the second saw the first's settings"
    );
    assert_eq!(r.text, "from the chosen model");
    assert_eq!((m.calls(), chosen.calls()), (0, 1));
    let req = &chosen.requests()[0];
    assert_eq!(req.tool_choice, ToolChoice::None);
    assert!(texts_of(&req.prompt, Role::System).contains(&"from inside".to_owned()));
});

on_every_path!(
    b59_a_retry_asked_from_a_workflows_input_step_reruns_it,
    |path| {
        let m = model([Turn::text("ok")]);
        let flow = Workflow::new("gate").then(Probe::new("once").input_step(|a| {
            if a.retry_count == 0 {
                return Err(a.abort().reason("again").retry(true).into());
            }
            Ok(().into())
        }));
        let agent = build_agent!(path, model: m, max_processor_retries: 1, input: [flow]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(r.text, "ok");
        assert_eq!(
            m.calls(),
            1,
            "the retry re-ran the step's input hooks, not the model"
        );
    }
);

on_every_path!(b60_llm_request_and_response_inside_a_workflow, |path| {
    let m = model([Turn::text("from the model")]);
    let log = Log::new();
    let (l1, l2) = (log.clone(), log.clone());
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
    let input = Workflow::new("cache-in")
        .then(
            Probe::new("cache").llm_request(move |_| Ok(LlmRequestAction::Respond(cached.clone()))),
        )
        .then(Probe::new("after").llm_request(move |_| {
            l1.push("later llm_request ran");
            Ok(().into())
        }));
    let output = Workflow::new("cache-out").then(Probe::new("seen").llm_response(move |a| {
        l2.push(format!("from_cache={}", a.from_cache));
        Ok(())
    }));
    let agent = build_agent!(path, model: m, input: [input], output: [output]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.text, "from the cache");
    assert_eq!(
        m.calls(),
        0,
        "the workflow's answer short-circuited the model"
    );
    assert_eq!(log.entries(), ["later llm_request ran", "from_cache=true"]);
});

on_every_path!(b60_llm_request_prompt_rewrite_inside_a_workflow, |path| {
    let m = model([Turn::text("ok")]);
    let flow = Workflow::new("rewrite").then(Probe::new("shorten").llm_request(|a| {
        let mut prompt = a.request.prompt.clone();
        prompt.retain(|msg| msg.role != Role::System);
        Ok(LlmRequestAction::Prompt(prompt))
    }));
    let agent = build_agent!(path, model: m, input: [flow]);
    generate(&*agent, "hi").await;
    assert!(texts_of(&m.requests()[0].prompt, Role::System).is_empty());
});

on_every_path!(
    b60_llm_request_whole_request_rewrite_inside_a_workflow,
    |path| {
        let m = model([Turn::text("ok")]);
        // The first step replaces the request (its tools), the second its prompt: the model gets
        // both changes.
        let flow = Workflow::new("rewrite")
            .then(Probe::new("no-tools").llm_request(|a| {
                let mut request = a.request.clone();
                request.tools.clear();
                request.provider_options = json!({ "rewritten": true });
                Ok(LlmRequestAction::Request(Box::new(request)))
            }))
            .then(Probe::new("shorten").llm_request(|a| {
                let mut prompt = a.request.prompt.clone();
                prompt.retain(|msg| msg.role != Role::System);
                Ok(LlmRequestAction::Prompt(prompt))
            }));
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], input: [flow]);
        generate(&*agent, "hi").await;
        let sent = &m.requests()[0];
        assert!(sent.tools.is_empty());
        assert_eq!(sent.provider_options, json!({ "rewritten": true }));
        assert!(texts_of(&sent.prompt, Role::System).is_empty());
    }
);

on_every_path!(
    b61_tool_result_inside_a_workflow_chains_and_branches,
    |path| {
        let m = model(tool_then_text("done"));
        let flow = Workflow::new("scrub")
        .then(Probe::new("tag").tool_result(|a| {
            Ok(Some(json!({"tagged": a.tool_call.tool_name, "was": a.result["ok"]})).into())
        }))
        .branch(
            |input| matches!(input, WorkflowInput::ToolResult { call, .. } if call.tool_name == "weather"),
            Probe::new("weather-only").tool_result(|a| {
                let mut v = a.result.clone();
                v["checked"] = json!(true);
                Ok(Some(v).into())
            }),
        );
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [flow]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(
            r.tool_results[0].result,
            json!({"tagged": "weather", "was": true, "checked": true})
        );
    }
);

fn rejecting(calls_ok_after: usize) -> ScriptedModel {
    ScriptedModel::responder(move |_, i| {
        if i < calls_ok_after {
            Turn::error(ApiError::new(400, "prompt too long"))
        } else {
            Turn::text("fixed")
        }
    })
}

on_every_path!(b62_api_error_inside_a_workflow_retries, |path| {
    let m = rejecting(1);
    let log = Log::new();
    let l = log.clone();
    let flow = Workflow::new("recover")
        .branch(
            |input| matches!(input, WorkflowInput::Error(e) if e.status == Some(429)),
            Probe::new("rate-limit").api_error(move |_| {
                l.push("rate-limit asked");
                Ok(ApiErrorAction::Retry)
            }),
        )
        .then(Probe::new("trim").api_error(|a| {
            a.message_list
                .add_system(Message::system("be short"), Some("fix"));
            Ok(ApiErrorAction::Retry)
        }))
        .then(Probe::new("never").api_error(|_| panic!("asked after a retry was chosen")));
    let agent = build_agent!(path, model: m, error: [flow]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.text, "fixed");
    assert_eq!(m.calls(), 2);
    assert!(
        log.entries().is_empty(),
        "the 429 branch's condition did not hold"
    );
    assert!(texts_of(&m.requests()[1].prompt, Role::System).contains(&"be short".to_owned()));
});

// ---------------------------------------------------------------------------------------------
// A workflow's hooks and placement

fn hooks_of<P: Processor>(_: &P) -> Hooks {
    P::HOOKS
}

/// A processor with `process_output_result` alone.
struct ResultOnly;

impl Processor for ResultOnly {
    type State = ();
    const HOOKS: Hooks = Hooks::OUTPUT_RESULT;
    fn id(&self) -> &str {
        "result-only"
    }
}
impl OutputProcessor for ResultOnly {}

#[test]
fn b63_a_workflows_hooks_are_its_processors() {
    let flow = Workflow::new("out").then(ResultOnly);
    assert_eq!(flow.hooks(), Hooks::OUTPUT_RESULT);
    assert_eq!(hooks_of(&flow), Hooks::OUTPUT_RESULT, "known from its type");
    let erased = flow.clone().erased();
    assert_eq!(
        (hooks_of(&erased), erased.hooks()),
        (Hooks::ALL, Hooks::OUTPUT_RESULT)
    );
    let branches = Workflow::new("b").parallel((ResultOnly, Probe::new("p")), 0);
    assert_eq!(hooks_of(&branches), Hooks::ALL.with(Hooks::OUTPUT_RESULT));
    let refs = Workflow::new("r").parallel([boxed(ResultOnly)], 0);
    assert_eq!(
        (hooks_of(&refs), refs.hooks()),
        (Hooks::ALL, Hooks::OUTPUT_RESULT)
    );
    assert_eq!(boxed(flow.clone()).dyn_hooks(), Hooks::OUTPUT_RESULT);
    let err = Agent::builder()
        .model(ScriptedModel::new([]))
        .input(flow.clone())
        .build()
        .err();
    assert!(
        matches!(&err, Some(BuildError::Misplaced { id, list: "input", .. }) if id == "out"),
        "{err:?}"
    );
    let err = Agent::builder()
        .model(ScriptedModel::new([]))
        .error(flow)
        .build()
        .err();
    assert!(matches!(
        err,
        Some(BuildError::Misplaced { list: "error", .. })
    ));
}

#[tokio::test]
async fn b63_a_misplaced_workflow_known_at_run_time_fails_the_call_with_a_clear_error() {
    // Erased, its steps are known at run time only; typed, `agent!` refuses it at compile
    // time (tests/ui/fail/agent_workflow_in_a_list_of_no_step.rs).
    let flow = Workflow::new("out").then(ResultOnly).erased();
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("never")]),
        input: [flow],
    };
    let err = agent.generate("hi").await.unwrap_err();
    assert!(
        matches!(&err, AgentError::Config(BuildError::Misplaced { id, .. }) if id == "out"),
        "{err}"
    );
    assert!(err.to_string().contains("out"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Parallel branches

/// An input processor that awaits between counting itself in and out, recording how many ran
/// at once.
struct Overlap {
    id: &'static str,
    in_flight: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Processor for Overlap {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    fn id(&self) -> &str {
        self.id
    }
    async fn process_input(&self, _: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(InputOutcome::Unchanged)
    }
}
impl InputProcessor for Overlap {}

async fn most_at_once(concurrency: Option<usize>) -> usize {
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let branch = |id| {
        boxed(Overlap {
            id,
            in_flight: in_flight.clone(),
            most: most.clone(),
        })
    };
    let mut flow = Workflow::new("fan-out").parallel([branch("a"), branch("b"), branch("c")], 0);
    if let Some(n) = concurrency {
        flow = flow.concurrency(n);
    }
    let agent = agent! { model: ScriptedModel::new([Turn::text("ok")]), input: [flow] };
    agent.generate("hi").await.unwrap();
    most.load(Ordering::SeqCst)
}

#[tokio::test]
async fn b64_parallel_branches_run_concurrently_within_the_bound() {
    assert_eq!(most_at_once(None).await, 3);
    assert_eq!(most_at_once(Some(2)).await, 2);
    assert_eq!(most_at_once(Some(1)).await, 1);
}

on_every_path!(b64_parallel_keeps_the_selected_branchs_copy_alone, |path| {
    let m = model(tool_then_text("done"));
    let flow = Workflow::new("fan-out").parallel(
        [
            boxed(Probe::new("left").tool_result(|_| Ok(json!("left").into()))),
            boxed(
                Probe::new("right")
                    .tool_result(|a| Ok(json!({"from": "right", "saw": a.result["ok"]}).into())),
            ),
        ],
        1,
    );
    let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [flow]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(
        r.tool_results[0].result,
        json!({"from": "right", "saw": true}),
        "the right branch saw the original result, not the left's"
    );
});

on_every_path!(
    b64_an_abort_in_an_unselected_branch_aborts_with_its_id,
    |path| {
        let m = model([Turn::text("ok")]);
        let flow = Workflow::new("fan-out").parallel(
            [
                boxed(Probe::new("keep")),
                boxed(Probe::new("guard").input(|a| Err(a.abort().reason("blocked").into()))),
            ],
            0,
        );
        let agent = build_agent!(path, model: m, input: [flow]);
        let r = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap();
        let tw = r.tripwire.expect("a trip wire");
        assert_eq!(
            (tw.processor_id.as_str(), tw.reason.as_str()),
            ("guard", "blocked")
        );
        assert_eq!(m.calls(), 0);
    }
);

on_every_path!(
    b64_on_the_stream_an_unselected_branch_adds_no_chunk_of_its_own,
    |path| {
        let m = model([Turn::deltas(["a", "b"])]);
        // Each branch doubles the delta and writes a data part; only "kept" is selected.
        let branch = |id: &'static str| {
            boxed(Probe::new(id).stream(move |a| {
                let Some(t) = a.chunk.text_delta() else {
                    return Ok(StreamAction::Pass);
                };
                a.writer.write(id, json!(t));
                let tag = |n: u8| a.chunk.clone().map_text(|t| format!("{t}:{id}{n}"));
                Ok(StreamAction::Many(vec![tag(1), tag(2)]))
            }))
        };
        let flow = Workflow::new("fan-out").parallel([branch("lost"), branch("kept")], 1);
        let agent = build_agent!(path, model: m, output: [flow]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(
            deltas(&chunks),
            ["a:kept1", "a:kept2", "b:kept1", "b:kept2"]
        );
        let written: Vec<_> = chunks
            .iter()
            .filter(|c| c.is_data())
            .map(|c| serde_json::to_value(c).unwrap()["type"].clone())
            .collect();
        assert_eq!(written, [json!("data-kept"), json!("data-kept")]);
        assert_eq!(r.unwrap().text, "a:kept1a:kept2b:kept1b:kept2");
    }
);

on_every_path!(
    b60_data_chunks_reach_only_the_opted_in_processors_inside_a_workflow,
    |path| {
        let m = model([Turn::text("hello").chunk(ChunkKind::Data {
            name: "progress".into(),
            data: json!(1),
            transient: false,
        })]);
        let log = Log::new();
        let (l1, l2) = (log.clone(), log.clone());
        let flow = Workflow::new("flow")
            .then(Probe::new("plain").stream(move |a| {
                if a.chunk.is_data() {
                    l1.push("plain saw data");
                }
                Ok(StreamAction::Pass)
            }))
            .then(Probe::new("data").data_parts().stream(move |a| {
                if a.chunk.is_data() {
                    l2.push("data saw data");
                    let mut c = a.chunk.clone();
                    c.kind = ChunkKind::Data {
                        name: "progress".into(),
                        data: json!(2),
                        transient: false,
                    };
                    return Ok(c.into());
                }
                Ok(StreamAction::Pass)
            }));
        let agent = build_agent!(path, model: m, output: [flow]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(r.unwrap().text, "hello");
        assert_eq!(log.entries(), ["data saw data"]);
        let data: Vec<_> = chunks
            .iter()
            .filter(|c| c.is_data())
            .map(|c| serde_json::to_value(c).unwrap()["payload"]["data"].clone())
            .collect();
        assert_eq!(data, [json!(2)]);
    }
);

on_every_path!(
    b59_inside_a_workflow_process_input_sees_the_list_as_the_processors_before_left_it,
    |path| {
        let m = model([Turn::text("ok")]);
        let log = Log::new();
        let l = log.clone();
        let flow = Workflow::new("flow")
            .then(suffix("first", " [first]"))
            .then(Probe::new("reader").input(move |a| {
                let listed: Vec<_> = a.message_list.input().map(|m| m.text()).collect();
                l.push(format!("list: {}", listed.join("|")));
                Ok(InputOutcome::Unchanged)
            }));
        let agent = build_agent!(path, model: m, input: [flow]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(r.text, "ok");
        assert_eq!(log.entries(), ["list: hi [first]"]);
    }
);

on_every_path!(
    b59_an_invalid_result_inside_a_workflow_names_the_inner_processor,
    |path| {
        let m = model([Turn::text("ok")]);
        let flow = Workflow::new("flow").then(Probe::new("dup").input(|a| {
            let first = a.messages[0].clone();
            Ok(vec![first.clone(), first].into())
        }));
        let agent = build_agent!(path, model: m, input: [flow]);
        let err = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap_err();
        // The workflow failed, because the processor inside it returned an invalid result.
        let AgentError::Hook(HookError::Failed { id, source, .. }) = &err else {
            panic!("{err}");
        };
        assert_eq!(id, "flow");
        assert!(
            matches!(source.downcast_ref::<HookError>(), Some(HookError::InvalidResult { id, hook: Hook::Input, .. }) if id == "dup"),
            "{err}"
        );
    }
);

/// An input hook whose future waits once, listed in `SYNC_HOOKS` as a hook that never waits.
struct ClaimsNeverToWait;

impl Processor for ClaimsNeverToWait {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    const SYNC_HOOKS: Hooks = Hooks::INPUT;
    fn id(&self) -> &str {
        "claims-never-to-wait"
    }
    async fn process_input(&self, _: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        tokio::task::yield_now().await;
        Ok(InputOutcome::Unchanged)
    }
}
impl InputProcessor for ClaimsNeverToWait {}

on_every_path!(
    b65_inside_a_workflow_a_hook_that_never_waits_is_called_in_place_as_in_a_list,
    |path| {
        // Polled once where it is called, not awaited: its future waited, which is an error
        // that names `SYNC_HOOKS`, inside the workflow as in a list.
        let flow = Workflow::new("flow").then(ClaimsNeverToWait);
        let agent = build_agent!(path, model: model([Turn::text("ok")]), input: [flow]);
        let err = agent
            .generate_with("hi".into(), GenerateOptions::new())
            .await
            .unwrap_err();
        let AgentError::Hook(HookError::Failed { id, source, .. }) = &err else {
            panic!("{err}");
        };
        assert_eq!(id, "flow");
        let inner = source.downcast_ref::<HookError>();
        assert!(
            matches!(inner, Some(HookError::Failed { id, hook: Hook::Input, source }) if id == "claims-never-to-wait" && source.to_string().contains("`SYNC_HOOKS`")),
            "{inner:?}"
        );
    }
);

/// Records how many messages its input hook was given; it does not read them.
struct CountsGivenMessages(Log);

impl Processor for CountsGivenMessages {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    const READS_MESSAGES: Hooks = Hooks::NONE;
    fn id(&self) -> &str {
        "counts-given-messages"
    }
    async fn process_input(&self, a: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        let listed = a.message_list.input().count();
        self.0
            .push(format!("given {}, listed {listed}", a.messages.len()));
        Ok(InputOutcome::Unchanged)
    }
}
impl InputProcessor for CountsGivenMessages {}

on_every_path!(
    b65_inside_a_workflow_a_processor_that_does_not_read_the_messages_gets_no_copy,
    |path| {
        let log = Log::new();
        let flow = Workflow::new("flow").then(CountsGivenMessages(log.clone()));
        let agent = build_agent!(path, model: model([Turn::text("ok")]), input: [flow]);
        generate(&*agent, "hi").await;
        assert_eq!(log.entries(), ["given 0, listed 1"]);
    }
);

on_every_path!(
    b66_inside_a_workflow_output_result_sees_the_summary_as_the_processors_before_left_it,
    |path| {
        let log = Log::new();
        let l = log.clone();
        let flow = Workflow::new("flow")
            .then(Probe::new("sign").output_result(|a| {
                let mut ms = a.messages.clone();
                let t = format!("{} (signed)", ms[0].text());
                ms[0].set_text(t);
                Ok(ms.into())
            }))
            .then(Probe::new("reader").output_result(move |a| {
                l.push(a.result.text.to_string());
                Ok(OutputOutcome::Unchanged)
            }));
        let agent = build_agent!(path, model: model([Turn::text("ok")]), output: [flow]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(log.entries(), ["ok (signed)"]);
        assert_eq!(r.text, "ok (signed)");
    }
);
