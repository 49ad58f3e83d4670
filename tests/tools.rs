//! The tools' behaviours of `docs/semantics.md` (67-74, "Tools"): `process_tool_call` before
//! each call, failed calls in `process_tool_result`, and the model's copy of a result, each on
//! the three paths (tuples, `DynPipeline`, `agent!`).

mod common;

use common::*;
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
