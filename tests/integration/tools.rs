//! The tools' behaviours of `docs/semantics.md` (67-74, "Tools"): `process_tool_call` before
//! each call, failed calls in `process_tool_result`, and the model's copy of a result, each on
//! the three paths (tuples, `DynPipeline`, `agent!`).

use crate::common;

use common::*;
use processors::agent::{Approval, ApprovalError};
use processors::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn model(turns: impl IntoIterator<Item = Turn>) -> ScriptedModel {
    ScriptedModel::new(turns)
}

/// A model that calls `weather` for Oslo, then `weather` for Rome, in one step, then answers.
fn two_calls() -> ScriptedModel {
    model([
        Turn::empty()
            .tool_call("call-1", "weather", json!({"city": "Oslo"}))
            .tool_call("call-2", "weather", json!({"city": "Rome"})),
        Turn::text("done"),
    ])
}

/// A tool that counts its runs and echoes its arguments.
fn counted(name: &str, runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
    let runs = runs.clone();
    tool(
        name,
        "Counts its runs",
        json!({"type": "object"}),
        move |args| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"ok": true, "echo": args}))
            }
        },
    )
}

/// The tool message the model read in its `n`th request.
fn tool_message(m: &ScriptedModel, n: usize) -> Vec<ToolResult> {
    m.requests()[n]
        .prompt
        .iter()
        .filter(|msg| msg.role == Role::Tool)
        .flat_map(|msg| msg.content.parts.iter())
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

on_every_path!(
    b67_tool_call_rewrites_chain_and_are_what_runs_and_is_recorded,
    |path| {
        let m = two_calls();
        let log = Log::new();
        let (first, second) = (log.clone(), log.clone());
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [
            Probe::new("upper").tool_call(move |a| {
                first.push(format!("upper saw {}", a.tool_call.args["city"]));
                let city = a.tool_call.args["city"].as_str().unwrap().to_uppercase();
                Ok(ToolCallAction::Rewrite(json!({"city": city})))
            }),
            Probe::new("after").tool_call(move |a| {
                second.push(format!(
                    "after saw {} of step {} ({:?})",
                    a.tool_call.args["city"],
                    a.step_number,
                    a.tool.map(|t| t.name().to_owned())
                ));
                Ok(ToolCallAction::Continue)
            }),
        ]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(
            log.entries(),
            [
                "upper saw \"Oslo\"",
                "after saw \"OSLO\" of step 0 (Some(\"weather\"))",
                "upper saw \"Rome\"",
                "after saw \"ROME\" of step 0 (Some(\"weather\"))",
            ]
        );
        // What ran, what the step and the result record, what the history keeps.
        assert_eq!(r.tool_results[0].result["echo"], json!({"city": "OSLO"}));
        assert_eq!(r.tool_calls[1].args, json!({"city": "ROME"}));
        assert_eq!(r.steps[0].tool_calls[0].args, json!({"city": "OSLO"}));
        let recorded: Vec<Value> = m.requests()[1]
            .prompt
            .iter()
            .flat_map(|msg| msg.content.parts.iter())
            .filter_map(|p| match p {
                Part::ToolCall(c) => Some(c.args.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(recorded, [json!({"city": "OSLO"}), json!({"city": "ROME"})]);
    }
);

on_every_path!(
    b68_an_answer_in_the_tools_place_skips_the_tool_and_the_processors_after,
    |path| {
        let m = two_calls();
        let runs = Arc::new(AtomicUsize::new(0));
        let later = Arc::new(AtomicUsize::new(0));
        let asked = later.clone();
        let agent = build_agent!(path, model: m, tools: [counted("weather", &runs)], output: [
            Probe::new("cache").tool_call(|a| {
                Ok(match a.tool_call.args["city"].as_str() {
                    Some("Oslo") => ToolCallAction::Respond(json!({"cached": "Oslo"})),
                    _ => ToolCallAction::Continue,
                })
            }),
            Probe::new("later").tool_call(move |_| {
                asked.fetch_add(1, Ordering::SeqCst);
                Ok(ToolCallAction::Continue)
            }),
            Probe::new("results").tool_result(|a| {
                let mut v = a.result.clone();
                v["seen"] = json!(true);
                Ok(ToolResultAction::Replace(v))
            }),
        ]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "only Rome's call ran");
        assert_eq!(
            later.load(Ordering::SeqCst),
            1,
            "only Rome's call reached `later`"
        );
        assert_eq!(
            r.tool_results[0].result,
            json!({"cached": "Oslo", "seen": true})
        );
        assert!(!r.tool_results[0].is_error);
        assert_eq!(tool_message(&m, 1)[0].result, r.tool_results[0].result);
    }
);

on_every_path!(
    b69_a_refused_call_is_the_tools_error_and_the_loop_goes_on,
    |path| {
        let m = two_calls();
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = build_agent!(path, model: m, tools: [counted("weather", &runs)], output: [
            Probe::new("no-rome").tool_call(|a| {
                Ok(match a.tool_call.args["city"].as_str() {
                    Some("Rome") => ToolCallAction::Refuse("Rome is out of scope".into()),
                    _ => ToolCallAction::Continue,
                })
            }),
        ]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        let r = r.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(r.text, "done", "the model was called again");
        assert!(r.tool_results[1].is_error);
        assert_eq!(r.tool_results[1].result, json!("Rome is out of scope"));
        assert!(chunks.iter().any(|c| matches!(
            &c.kind,
            ChunkKind::ToolError { tool_call_id, error, .. }
                if tool_call_id == "call-2" && error == "Rome is out of scope"
        )));
        let read = tool_message(&m, 1);
        assert!(read[1].is_error);
        assert_eq!(read[1].result, json!("Rome is out of scope"));
    }
);

on_every_path!(b70_an_abort_before_a_call_stops_the_run, |path| {
    let m = two_calls();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = build_agent!(path, model: m, tools: [counted("weather", &runs)], output: [
        Probe::new("stop-rome").tool_call(|a| match a.tool_call.args["city"].as_str() {
            Some("Rome") => Err(a.abort().reason("no travel to Rome").into()),
            _ => Ok(ToolCallAction::Continue),
        }),
    ]);
    let r = generate(&*agent, "hi").await;
    let tw = r.tripwire.expect("a trip wire");
    assert_eq!(tw.processor_id, "stop-rome");
    assert_eq!(tw.reason, "no travel to Rome");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no call of the step ran");
    assert_eq!(m.calls(), 1);
    assert_eq!(r.steps[0].finish_reason, FinishReason::Tripwire);
    assert_eq!(r.steps[0].tool_calls.len(), 2);
});

on_every_path!(
    b71_an_abort_with_retry_before_a_call_asks_for_the_step_again,
    |path| {
        let m = model([
            Turn::empty().tool_call("call-1", "weather", json!({"city": "Rome"})),
            Turn::empty().tool_call("call-2", "weather", json!({"city": "Oslo"})),
            Turn::text("done"),
        ]);
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = build_agent!(path, model: m, tools: [counted("weather", &runs)], max_processor_retries: 1, output: [
            Probe::new("oslo-only").tool_call(|a| match a.tool_call.args["city"].as_str() {
                Some("Oslo") => Ok(ToolCallAction::Continue),
                _ => Err(a.abort().reason("only Oslo").retry(true).into()),
            }),
        ]);
        let r = generate(&*agent, "hi").await;
        assert!(r.tripwire.is_none());
        assert_eq!(r.text, "done");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(r.steps[0].tripwire.as_ref().unwrap().reason, "only Oslo");
        assert_eq!(r.steps[0].finish_reason, FinishReason::Retry);
        // The rejected call left no trace in the history; the feedback reached the model.
        let prompt = &m.requests()[1].prompt;
        assert!(
            !prompt
                .iter()
                .flat_map(|msg| msg.content.parts.iter())
                .any(|p| matches!(p, Part::ToolCall(c) if c.tool_call_id == "call-1"))
        );
        assert!(prompt.iter().any(|msg| msg.text().contains("only Oslo")));
    }
);

on_every_path!(b72_failed_calls_reach_process_tool_result, |path| {
    let m = model([
        Turn::empty()
            .tool_call("call-1", "broken", json!({}))
            .tool_call("call-2", "missing", json!({}))
            .tool_call("call-3", "weather", json!({})),
        Turn::text("done"),
    ]);
    let broken = tool("broken", "Fails", json!({"type": "object"}), |_| async {
        Err::<Value, _>("disk full at /srv/secret-path".into())
    });
    let log = Log::new();
    let seen = log.clone();
    let agent = build_agent!(path, model: m, tools: [broken, echo_tool("weather")], output: [
        Probe::new("scrub-errors").tool_result(move |a| {
            seen.push(format!("{} is_error={}", a.tool_call.tool_name, a.is_error));
            Ok(match a.is_error {
                true => ToolResultAction::Replace(json!("the tool failed")),
                false => ToolResultAction::Keep,
            })
        }),
    ]);
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    let r = r.unwrap();
    assert_eq!(
        log.entries(),
        [
            "broken is_error=true",
            "missing is_error=true",
            "weather is_error=false"
        ]
    );
    assert_eq!(r.tool_results[0].result, json!("the tool failed"));
    assert!(r.tool_results[0].is_error && r.tool_results[1].is_error);
    // The changed error is what streams and what the model reads.
    assert!(!chunks.iter().any(|c| matches!(
        &c.kind,
        ChunkKind::ToolError { error, .. } if error.contains("secret-path")
    )));
    assert_eq!(tool_message(&m, 1)[0].result, json!("the tool failed"));
});

on_every_path!(
    b73_the_model_reads_its_copy_and_the_history_keeps_the_result,
    |path| {
        let m = model([
            Turn::empty().tool_call("call-1", "weather", json!({"city": "Oslo"})),
            Turn::text("done"),
        ]);
        let store = InMemoryStore::new();
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], memory: Memory::new(store.clone()), output: [
            Probe::new("short").tool_result(|_| Ok(ToolResultAction::ForModel(json!("(cut)")))),
        ]);
        let options =
            GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "u"));
        let (_, r) = collect(&*agent, "hi", options).await;
        let r = r.unwrap();
        let whole = json!({"ok": true, "echo": {"city": "Oslo"}});
        assert_eq!(r.tool_results[0].result, whole);
        assert_eq!(r.tool_results[0].model_output, Some(json!("(cut)")));
        assert_eq!(tool_message(&m, 1)[0].result, json!("(cut)"));
        assert_eq!(tool_message(&m, 1)[0].model_output, None);
        // The history keeps both: the next run's model still reads the copy.
        let saved = store.list_messages("t", None).await.unwrap();
        let kept = saved
            .iter()
            .flat_map(|msg| msg.content.parts.iter())
            .find_map(|p| match p {
                Part::ToolResult(r) => Some(r.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(kept.result, whole);
        assert_eq!(kept.for_model(), &json!("(cut)"));
    }
);

on_every_path!(
    b74_a_replacement_drops_an_earlier_copy_for_the_model,
    |path| {
        let m = model([
            Turn::empty().tool_call("call-1", "weather", json!({"city": "Oslo"})),
            Turn::text("done"),
        ]);
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [
            Probe::new("cut").tool_result(|_| Ok(ToolResultAction::ForModel(json!("cut: sk-123")))),
            Probe::new("redact").tool_result(|a| {
                assert_eq!(a.model_output, Some(&json!("cut: sk-123")));
                Ok(ToolResultAction::Replace(json!("redacted")))
            }),
        ]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(r.tool_results[0].result, json!("redacted"));
        assert_eq!(r.tool_results[0].model_output, None);
        assert_eq!(tool_message(&m, 1)[0].result, json!("redacted"));
    }
);

// ---------------------------------------------------------------------------------------------
// Approvals

/// Asks for approval of every call of `refund`.
fn ask_for_refunds() -> Probe {
    Probe::new("ask-first").tool_call(|a| {
        Ok(match a.tool_call.tool_name.as_str() {
            "refund" => ToolCallAction::approval("refunds move money"),
            _ => ToolCallAction::Continue,
        })
    })
}

/// A model that refunds order 7 and checks the weather in one step, then answers.
fn refund_turns() -> ScriptedModel {
    model([
        Turn::empty()
            .tool_call("call-1", "refund", json!({"order": 7}))
            .tool_call("call-2", "weather", json!({"city": "Oslo"})),
        Turn::text("Refunded."),
    ])
}

/// A model that refunds orders 7, 8 and 9 and checks the weather in one step, then answers.
fn three_refunds_and_the_weather() -> ScriptedModel {
    model([
        Turn::empty()
            .tool_call("call-1", "refund", json!({"order": 7}))
            .tool_call("call-2", "refund", json!({"order": 8}))
            .tool_call("call-3", "refund", json!({"order": 9}))
            .tool_call("call-4", "weather", json!({"city": "Oslo"})),
        Turn::text("Two refunded."),
    ])
}

fn thread() -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "u"))
}

on_every_path!(
    b75_a_call_that_needs_approval_pauses_the_run_before_any_tool_runs,
    |path| {
        let m = refund_turns();
        let (refunds, weather) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let store = InMemoryStore::new();
        let agent = build_agent!(path, model: m, tools: [counted("refund", &refunds), counted("weather", &weather)], memory: Memory::new(store.clone()), output: [ask_for_refunds()]);
        let (chunks, r) = collect(&*agent, "Refund order 7", thread()).await;
        let r = r.unwrap();
        assert_eq!(r.finish_reason, FinishReason::AwaitingApproval);
        assert!(r.tripwire.is_none());
        assert_eq!(refunds.load(Ordering::SeqCst), 0);
        assert_eq!(weather.load(Ordering::SeqCst), 0, "no call of the step ran");
        assert_eq!(m.calls(), 1);
        assert_eq!(r.pending_approvals.len(), 1);
        let request = &r.pending_approvals[0];
        assert_eq!(
            (
                request.run_id.as_str(),
                request.tool_call_id.as_str(),
                request.tool_name.as_str(),
                request.processor_id.as_str(),
                request.reason.as_str()
            ),
            (
                r.run_id.as_str(),
                "call-1",
                "refund",
                "ask-first",
                "refunds move money"
            )
        );
        assert_eq!(request.args, json!({"order": 7}));
        let tail: Vec<String> = types(&chunks).into_iter().rev().take(2).collect();
        assert_eq!(tail, ["finish", "tool-approval-request"]);
        assert!(matches!(
            chunks.last().unwrap().kind,
            ChunkKind::Finish {
                finish_reason: FinishReason::AwaitingApproval,
                ..
            }
        ));
        let saved = store.list_messages("t", None).await.unwrap();
        let saved: Vec<(Role, String)> = saved.iter().map(|m| (m.role, m.text())).collect();
        assert_eq!(
            saved,
            [(Role::User, "Refund order 7".to_owned())],
            "the paused turn's input keeps its place; its answer waits for the resumed run"
        );
    }
);

on_every_path!(
    b116_a_resumed_turn_is_saved_in_its_place_ahead_of_turns_that_came_later,
    |path| {
        let m = model([
            Turn::empty().tool_call("call-1", "refund", json!({"order": 7})),
            Turn::text("Sunny in Oslo."),
            Turn::text("Refunded."),
        ]);
        let store = InMemoryStore::new();
        let agent = build_agent!(path, model: m, tools: [echo_tool("refund")], memory: Memory::new(store.clone()), output: [ask_for_refunds()]);
        let paused = agent
            .generate_with("Refund order 7".into(), thread())
            .await
            .unwrap();
        assert_eq!(paused.finish_reason, FinishReason::AwaitingApproval);
        let later = agent
            .generate_with("And the weather?".into(), thread())
            .await
            .unwrap();
        assert_eq!(later.text, "Sunny in Oslo.");
        let read: Vec<String> = m.requests()[1].prompt.iter().map(|p| p.text()).collect();
        assert!(
            read.contains(&"Refund order 7".to_owned()),
            "a later turn reads the waiting question: {read:?}"
        );
        let resumed = agent
            .resume_with(
                Approval::new(&paused.run_id).approve("call-1"),
                GenerateOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(resumed.text, "Refunded.");
        let saved = store.list_messages("t", None).await.unwrap();
        let saved: Vec<(Role, String)> = saved.iter().map(|m| (m.role, m.text())).collect();
        let roles: Vec<Role> = saved.iter().map(|(r, _)| *r).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::User,
                Role::Assistant
            ],
            "{saved:?}"
        );
        let texts: Vec<&str> = saved.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            [texts[0], texts[3], texts[4], texts[5]],
            [
                "Refund order 7",
                "Refunded.",
                "And the weather?",
                "Sunny in Oslo."
            ]
        );
    }
);

on_every_path!(
    b76_a_resumed_run_runs_the_calls_as_decided_and_goes_on,
    |path| {
        let m = three_refunds_and_the_weather();
        let (refunds, weather) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let store = InMemoryStore::new();
        let agent = build_agent!(path, model: m, tools: [counted("refund", &refunds), counted("weather", &weather)], memory: Memory::new(store.clone()), output: [ask_for_refunds()]);
        let paused = agent
            .generate_with("Refund 7, 8 and 9".into(), thread())
            .await
            .unwrap();
        assert_eq!(paused.pending_approvals.len(), 3);
        let answer = Approval::new(&paused.run_id)
            .approve("call-1")
            .approve_with("call-2", json!({"order": 80}))
            .deny("call-3", "order 9 was never paid");
        let (chunks, r) = {
            let mut stream = agent.resume_stream_with(answer, GenerateOptions::new());
            let mut chunks = Vec::new();
            while let Some(c) = futures::StreamExt::next(&mut stream).await {
                chunks.push(c);
            }
            (chunks, stream.finish().await.unwrap())
        };
        assert_eq!(r.run_id, paused.run_id, "the same run");
        assert_eq!(r.text, "Two refunded.");
        assert_eq!(r.finish_reason, FinishReason::Stop);
        assert_eq!(refunds.load(Ordering::SeqCst), 2);
        assert_eq!(weather.load(Ordering::SeqCst), 1);
        assert_eq!(types(&chunks)[0], "start");
        assert_eq!(r.steps.len(), 2);
        assert_eq!(r.steps[0].tool_calls[1].args, json!({"order": 80}));
        let results = &r.steps[0].tool_results;
        assert_eq!(results[1].result["echo"], json!({"order": 80}));
        assert!(results[2].is_error);
        assert_eq!(results[2].result, json!("order 9 was never paid"));
        // The model read the decisions; the turn is saved once, whole, with the thread of
        // the paused run.
        let read = tool_message(&m, 1);
        assert_eq!(read.len(), 4);
        let saved = store.list_messages("t", None).await.unwrap();
        assert_eq!(
            saved.len(),
            4,
            "input, answer with calls, tool results, answer"
        );
        assert!(saved.iter().any(|msg| msg.content.parts.iter().any(
            |p| matches!(p, Part::ToolCall(c) if c.tool_call_id == "call-2" && c.args == json!({"order": 80}))
        )));
    }
);

on_every_path!(
    b114_a_resumed_run_streams_tool_call_resumed_before_each_approved_calls_result,
    |path| {
        let m = three_refunds_and_the_weather();
        let agent = build_agent!(path, model: m, tools: [echo_tool("refund"), echo_tool("weather")], output: [ask_for_refunds()]);
        let paused = agent
            .generate_with("Refund 7, 8 and 9".into(), thread())
            .await
            .unwrap();
        let answer = Approval::new(&paused.run_id)
            .approve("call-1")
            .approve_with("call-2", json!({"order": 80}))
            .deny("call-3", "order 9 was never paid");
        let mut stream = agent.resume_stream_with(answer, GenerateOptions::new());
        let mut tools = Vec::new();
        while let Some(c) = futures::StreamExt::next(&mut stream).await {
            match c.kind {
                ChunkKind::ToolCallResumed(call) => {
                    tools.push(format!("resumed {} {}", call.tool_call_id, call.args));
                }
                ChunkKind::ToolResult(r) => tools.push(format!("result {}", r.tool_call_id)),
                ChunkKind::ToolError { tool_call_id, .. } => {
                    tools.push(format!("error {tool_call_id}"));
                }
                _ => {}
            }
        }
        stream.finish().await.unwrap();
        // The approved calls, with the arguments they run with; not the denied call, nor the
        // call let through before the pause.
        assert_eq!(
            tools,
            [
                r#"resumed call-1 {"order":7}"#,
                "result call-1",
                r#"resumed call-2 {"order":80}"#,
                "result call-2",
                "error call-3",
                "result call-4",
            ]
        );
    }
);

on_every_path!(b77_a_paused_run_is_resumed_once, |path| {
    let m = refund_turns();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = build_agent!(path, model: m, tools: [counted("refund", &runs), echo_tool("weather")], output: [ask_for_refunds()]);
    let paused = generate(&*agent, "Refund order 7").await;
    let answer = Approval::new(&paused.run_id).approve("call-1");
    let (first, second) = futures::join!(
        agent.resume_with(answer.clone(), GenerateOptions::new()),
        agent.resume_with(answer.clone(), GenerateOptions::new()),
    );
    let (won, lost) = match first.is_ok() {
        true => (first, second),
        false => (second, first),
    };
    assert_eq!(won.unwrap().text, "Refunded.");
    assert!(matches!(
        lost,
        Err(AgentError::Approval(ApprovalError::Unknown { .. }))
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let again = agent.resume_with(answer, GenerateOptions::new()).await;
    assert!(again.unwrap_err().to_string().contains("resumed already"));
});

on_every_path!(
    b78_an_answer_that_misses_or_names_the_wrong_call_keeps_the_run,
    |path| {
        let m = refund_turns();
        let agent = build_agent!(path, model: m, tools: [echo_tool("refund"), echo_tool("weather")], output: [ask_for_refunds()]);
        let paused = generate(&*agent, "Refund order 7").await;
        let run = paused.run_id.clone();
        let missing = agent
            .resume_with(Approval::new(&run), GenerateOptions::new())
            .await
            .unwrap_err();
        assert!(matches!(
            &missing,
            AgentError::Approval(ApprovalError::Undecided { tool_call_id, .. }) if tool_call_id == "call-1"
        ));
        let wrong = agent
            .resume_with(
                Approval::new(&run).approve("call-1").approve("call-2"),
                GenerateOptions::new(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            wrong.to_string(),
            format!(
                "the answer to run `{run}` decides the call `call-2`, which does not wait for approval; it waits for: call-1"
            )
        );
        let unknown = agent
            .resume_with(
                Approval::new("run-unknown").approve("call-1"),
                GenerateOptions::new(),
            )
            .await;
        assert!(matches!(
            unknown,
            Err(AgentError::Approval(ApprovalError::Unknown { .. }))
        ));
        let done = agent
            .resume_with(
                Approval::new(&run).approve("call-1"),
                GenerateOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(done.text, "Refunded.");
    }
);

#[tokio::test]
async fn b79_a_paused_run_expires_after_the_agents_approval_timeout() {
    let agent = Agent::builder()
        .model(refund_turns())
        .tool(echo_tool("refund"))
        .tool(echo_tool("weather"))
        .output(ask_for_refunds())
        .approval_timeout(std::time::Duration::ZERO)
        .build()
        .unwrap();
    let paused = agent.generate("Refund order 7").await.unwrap();
    let expired = agent
        .resume(Approval::new(&paused.run_id).approve("call-1"))
        .await;
    assert!(matches!(
        expired,
        Err(AgentError::Approval(ApprovalError::Expired { .. }))
    ));
    // An expired run is gone.
    let again = agent
        .resume(Approval::new(&paused.run_id).approve("call-1"))
        .await;
    assert!(matches!(
        again,
        Err(AgentError::Approval(ApprovalError::Unknown { .. }))
    ));
}

#[tokio::test]
async fn b113_waiting_runs_lists_a_conversations_paused_runs_with_their_calls() {
    let store = InMemoryStore::new();
    // Agents on one store, as processes would be: each run pauses on its first turn.
    let agent = |name: &str, timeout: std::time::Duration, turns: ScriptedModel| {
        Agent::builder()
            .name(name)
            .model(turns)
            .memory(Memory::new(store.clone()))
            .tool(echo_tool("refund"))
            .tool(echo_tool("weather"))
            .output(ask_for_refunds())
            .approval_timeout(timeout)
            .build()
            .unwrap()
    };
    let day = std::time::Duration::from_secs(86_400);
    let in_thread = |t: &str, r: &str| {
        GenerateOptions::new().request_context(RequestContext::new().with_thread(t, r))
    };
    let pause = |name: &str, timeout, t: &str| {
        let agent = agent(name, timeout, refund_turns());
        let options = in_thread(t, "ann");
        async move { agent.generate_with("Refund 7", options).await.unwrap() }
    };
    let first = pause("support", day, "t-1").await;
    let second = pause("support", day, "t-2").await;
    // A run of another agent on the store, and one that already expired.
    pause("billing", day, "t-1").await;
    pause("support", std::time::Duration::ZERO, "t-1").await;
    assert_eq!(second.finish_reason, FinishReason::AwaitingApproval);

    let support = agent("support", day, model([Turn::text("Refunded.")]));
    let waiting = support.waiting_runs(None, Some("ann")).await.unwrap();
    let runs: Vec<&str> = waiting.iter().map(|w| w.run_id.as_str()).collect();
    assert_eq!(runs, [first.run_id.as_str(), second.run_id.as_str()]);
    let in_t1 = support.waiting_runs(Some("t-1"), None).await.unwrap();
    assert_eq!(in_t1.len(), 1);
    let run = &in_t1[0];
    assert_eq!(
        (run.thread_id.as_deref(), run.resource_id.as_deref()),
        (Some("t-1"), Some("ann"))
    );
    // Only the call that waits: the weather call was let through.
    assert_eq!(run.requests.len(), 1);
    assert_eq!(run.requests[0], first.pending_approvals[0]);
    assert!(
        support
            .waiting_runs(None, Some("bob"))
            .await
            .unwrap()
            .is_empty()
    );

    // Listing takes nothing: the listed run is answered, and is then no longer listed.
    let answer = Approval::new(&run.run_id).approve(&run.requests[0].tool_call_id);
    let done = support.resume(answer).await.unwrap();
    assert_eq!(done.text, "Refunded.");
    let left = support.waiting_runs(None, None).await.unwrap();
    let left: Vec<&str> = left.iter().map(|w| w.run_id.as_str()).collect();
    assert_eq!(left, [second.run_id.as_str()]);
}

/// A store that keeps no paused runs (the default of `MemoryStore`'s approval methods).
#[derive(Clone, Default)]
struct NoPauses(InMemoryStore);

impl processors::memory::MemoryStore for NoPauses {
    fn get_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<processors::memory::Thread>, processors::memory::MemoryError>,
    > {
        self.0.get_thread(thread_id)
    }
    fn save_thread(
        &self,
        thread: processors::memory::Thread,
    ) -> futures::future::BoxFuture<'_, Result<(), processors::memory::MemoryError>> {
        self.0.save_thread(thread)
    }
    fn list_messages<'a>(
        &'a self,
        thread_id: &'a str,
        limit: Option<usize>,
    ) -> futures::future::BoxFuture<'a, Result<Vec<Message>, processors::memory::MemoryError>> {
        self.0.list_messages(thread_id, limit)
    }
    fn list_messages_by_resource<'a>(
        &'a self,
        resource_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<Message>, processors::memory::MemoryError>> {
        self.0.list_messages_by_resource(resource_id)
    }
    fn save_messages(
        &self,
        messages: Vec<Message>,
    ) -> futures::future::BoxFuture<'_, Result<(), processors::memory::MemoryError>> {
        self.0.save_messages(messages)
    }
    fn delete_messages<'a>(
        &'a self,
        ids: &'a [String],
    ) -> futures::future::BoxFuture<'a, Result<(), processors::memory::MemoryError>> {
        self.0.delete_messages(ids)
    }
}

on_every_path!(
    b80_a_store_that_cannot_keep_the_paused_run_fails_the_run,
    |path| {
        let m = refund_turns();
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = build_agent!(path, model: m, tools: [counted("refund", &runs), echo_tool("weather")], memory: Memory::new(NoPauses::default()), output: [ask_for_refunds()]);
        let (chunks, r) = collect(&*agent, "Refund order 7", thread()).await;
        let error = r.unwrap_err();
        assert!(matches!(
            error,
            AgentError::Approval(ApprovalError::Store { .. })
        ));
        assert!(error.to_string().contains("does not keep paused runs"));
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        assert!(
            matches!(&chunks.last().unwrap().kind, ChunkKind::Error { message } if message.contains("does not keep paused runs"))
        );
        assert!(
            !chunks
                .iter()
                .any(|c| matches!(c.kind, ChunkKind::ToolApprovalRequest(_))),
            "no request for a run that cannot be resumed"
        );
        // Nor can a store that keeps none resume one: the failure is the store's, typed.
        let resumed = agent
            .resume_with(
                Approval::new("run-1").approve("call-1"),
                GenerateOptions::new(),
            )
            .await;
        assert!(matches!(
            resumed,
            Err(AgentError::Approval(ApprovalError::Store { .. }))
        ));
    }
);

// ---------------------------------------------------------------------------------------------
// Inside workflows

on_every_path!(
    b81_inside_a_workflow_tool_calls_chain_branch_and_decide,
    |path| {
        let m = two_calls();
        let runs = Arc::new(AtomicUsize::new(0));
        let log = Log::new();
        let after = log.clone();
        let flow = Workflow::new("gate")
            .then(Probe::new("upper").tool_call(|a| {
                let city = a.tool_call.args["city"].as_str().unwrap().to_uppercase();
                Ok(ToolCallAction::Rewrite(json!({"city": city})))
            }))
            .branch(
                |input| matches!(input, WorkflowInput::ToolCall(c) if c.args["city"] == "ROME"),
                Probe::new("no-rome").tool_call(|_| Ok(ToolCallAction::Refuse("not Rome".into()))),
            )
            .then(Probe::new("tag").tool_call(|a| {
                let mut args = a.tool_call.args.clone();
                args["tagged"] = json!(true);
                Ok(ToolCallAction::Rewrite(args))
            }));
        let agent = build_agent!(path, model: m, tools: [counted("weather", &runs)], output: [
            flow,
            Probe::new("after").tool_call(move |a| {
                after.push(a.tool_call.args.to_string());
                Ok(ToolCallAction::Continue)
            }),
        ]);
        let r = generate(&*agent, "hi").await;
        // Oslo: rewritten twice inside, seen so after; Rome: refused inside, so `tag` and
        // `after` never saw it.
        assert_eq!(log.entries(), [r#"{"city":"OSLO","tagged":true}"#]);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            r.tool_calls[0].args,
            json!({"city": "OSLO", "tagged": true})
        );
        assert_eq!(r.tool_results[1].result, json!("not Rome"));
        assert!(r.tool_results[1].is_error);
    }
);

on_every_path!(
    b82_inside_a_workflow_a_tool_result_copy_for_the_model_comes_out,
    |path| {
        let m = model([
            Turn::empty().tool_call("call-1", "weather", json!({"city": "Oslo"})),
            Turn::text("done"),
        ]);
        let flow = Workflow::new("results")
            .then(
                Probe::new("redact").tool_result(|_| Ok(ToolResultAction::Replace(json!("kept")))),
            )
            .then(Probe::new("cut").tool_result(|_| Ok(ToolResultAction::ForModel(json!("read")))));
        let agent = build_agent!(path, model: m, tools: [echo_tool("weather")], output: [flow]);
        let r = generate(&*agent, "hi").await;
        assert_eq!(r.tool_results[0].result, json!("kept"));
        assert_eq!(r.tool_results[0].model_output, Some(json!("read")));
        assert_eq!(tool_message(&m, 1)[0].result, json!("read"));
    }
);

on_every_path!(
    b83_an_approval_asked_inside_a_workflow_pauses_the_run,
    |path| {
        let m = refund_turns();
        let flow = Workflow::new("gate").then(ask_for_refunds());
        let agent = build_agent!(path, model: m, tools: [echo_tool("refund"), echo_tool("weather")], output: [flow]);
        let paused = generate(&*agent, "Refund order 7").await;
        assert_eq!(paused.finish_reason, FinishReason::AwaitingApproval);
        assert_eq!(
            paused.pending_approvals[0].processor_id, "ask-first",
            "the processor inside that asked"
        );
        let done = agent
            .resume_with(
                Approval::new(&paused.run_id).approve("call-1"),
                GenerateOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(done.text, "Refunded.");
    }
);
