//! `LoopDetection` on an agent: tool-call and answer loops end the run or are steered, from
//! either list.

use crate::support;

use processors_builtins::loop_detection::{LoopDetection, LoopStrategy};
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::*;

const STEERED: &str = "going round in circles";

/// A tool that counts its runs.
fn fetch(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
    let runs = runs.clone();
    tool(
        "fetch",
        "Fetches a page.",
        json!({ "type": "object" }),
        move |_| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!("<html></html>")) }
        },
    )
}

/// Fetches the same page until a steering message tells it to stop (or forever, `stubborn`).
fn looping(stubborn: bool) -> ScriptedModel {
    ScriptedModel::responder(move |request, i| {
        let steered = request
            .prompt
            .iter()
            .any(|m| m.role == Role::System && m.text().contains(STEERED));
        match steered && !stubborn {
            true => Turn::text("Here is the summary."),
            false => Turn::empty().tool_call(format!("c{i}"), "fetch", json!({ "url": "a" })),
        }
    })
}

fn steering() -> LoopDetection {
    LoopDetection::builder()
        .strategy(LoopStrategy::Steer)
        .build()
        .unwrap()
}

fn steering_messages(request: &processors_runtime::model::ModelRequest) -> usize {
    request
        .prompt
        .iter()
        .filter(|m| m.role == Role::System && m.text().contains(STEERED))
        .count()
}

#[test]
fn in_output_a_loop_ends_the_run_before_the_repeated_call_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    for (path, agent, model) in agents!(
        model: looping(true),
        tools: [fetch(&runs)],
        max_steps: 10,
        output: [LoopDetection::new()],
    ) {
        runs.store(0, Ordering::SeqCst);
        let result = generate(&*agent, "summarise");
        let tw = result.tripwire.expect("a trip wire");
        assert_eq!(tw.processor_id, "loop-detection");
        assert_eq!(
            tw.reason,
            "the model called `fetch` with the same arguments 3 times"
        );
        let meta = tw.metadata.unwrap();
        assert_eq!(meta["kind"], "tool-call");
        assert_eq!(meta["args"], json!({ "url": "a" }));
        assert_eq!(model.calls(), 3, "{path}");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "{path}: the third call never ran"
        );
    }
}

#[test]
fn in_output_steering_reaches_the_next_step_only() {
    let runs = Arc::new(AtomicUsize::new(0));
    let log: Violations = Arc::default();
    for (path, agent, model) in agents!(
        model: looping(false),
        tools: [fetch(&runs)],
        max_steps: 10,
        on_violation: recorder(&log),
        output: [steering()],
    ) {
        log.lock().unwrap().clear();
        let result = generate(&*agent, "summarise");
        assert_eq!(result.text, "Here is the summary.", "{path}");
        assert!(result.tripwire.is_none());
        let steered: Vec<usize> = model.requests().iter().map(steering_messages).collect();
        assert_eq!(steered, [0, 0, 0, 1], "{path}");
        let violations = log.lock().unwrap().clone();
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].kind, ViolationKind::Warn);
        assert!(violations[0].reason.ends_with("steering the model"));
    }
}

#[test]
fn a_loop_that_goes_on_after_steering_ends_the_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    for (path, agent, model) in agents!(
        model: looping(true),
        tools: [fetch(&runs)],
        max_steps: 10,
        output: [steering()],
    ) {
        let result = generate(&*agent, "summarise");
        let tw = result.tripwire.expect("a trip wire");
        assert_eq!(
            tw.reason,
            "the model called `fetch` with the same arguments 4 times (still looping after 1 steering message)",
            "{path}"
        );
        assert_eq!(tw.metadata.unwrap()["steered"], 1);
        assert_eq!(model.calls(), 4);
    }
}

#[test]
fn in_input_a_loop_is_found_before_the_next_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    for (path, agent, model) in agents!(
        model: looping(true),
        tools: [fetch(&runs)],
        max_steps: 10,
        input: [LoopDetection::new()],
    ) {
        runs.store(0, Ordering::SeqCst);
        let result = generate(&*agent, "summarise");
        assert!(result.tripwire.is_some(), "{path}");
        assert_eq!(model.calls(), 3, "{path}: no fourth call");
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }
    for (path, agent, model) in agents!(
        model: looping(false),
        tools: [fetch(&runs)],
        max_steps: 10,
        input: [steering()],
    ) {
        let result = generate(&*agent, "summarise");
        assert_eq!(result.text, "Here is the summary.", "{path}");
        let steered: Vec<usize> = model.requests().iter().map(steering_messages).collect();
        assert_eq!(
            steered,
            [0, 0, 0, 1],
            "{path}: the message is part of that call"
        );
    }
}

#[test]
fn in_both_lists_a_loop_is_steered_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let log: Violations = Arc::default();
    let detector = steering();
    for (path, agent, model) in agents!(
        model: looping(false),
        tools: [fetch(&runs)],
        max_steps: 10,
        on_violation: recorder(&log),
        input: [detector.clone()],
        output: [detector.clone()],
    ) {
        log.lock().unwrap().clear();
        let result = generate(&*agent, "summarise");
        assert_eq!(result.text, "Here is the summary.", "{path}");
        let steered: Vec<usize> = model.requests().iter().map(steering_messages).collect();
        assert_eq!(steered, [0, 0, 0, 1], "{path}");
        assert_eq!(log.lock().unwrap().len(), 1, "{path}: one warning");
    }
}

#[test]
fn repeated_answers_are_a_loop() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = || {
        ScriptedModel::responder(|_, i| {
            Turn::text("Let me look at the next page.").tool_call(
                format!("c{i}"),
                "fetch",
                json!({ "url": i }),
            )
        })
    };
    for (path, agent, model) in agents!(
        model: model(),
        tools: [fetch(&runs)],
        max_steps: 10,
        output: [LoopDetection::new()],
    ) {
        let result = generate(&*agent, "read everything");
        let tw = result.tripwire.expect("a trip wire");
        assert_eq!(
            tw.reason, "the model gave 3 near-identical answers in a row",
            "{path}"
        );
        assert_eq!(tw.metadata.unwrap()["kind"], "answer");
        assert_eq!(model.calls(), 3);
    }
}

#[test]
fn a_steering_message_lasts_one_step() {
    let runs = Arc::new(AtomicUsize::new(0));
    // Fetches page "a" three times, then page "b" once, then answers.
    let model = || {
        ScriptedModel::responder(|_, i| match i {
            0..=2 => Turn::empty().tool_call(format!("c{i}"), "fetch", json!({ "url": "a" })),
            3 => Turn::empty().tool_call("c3", "fetch", json!({ "url": "b" })),
            _ => Turn::text("done"),
        })
    };
    for (path, agent, model) in agents!(
        model: model(),
        tools: [fetch(&runs)],
        max_steps: 10,
        output: [steering()],
    ) {
        assert_eq!(generate(&*agent, "go").text, "done", "{path}");
        let steered: Vec<usize> = model.requests().iter().map(steering_messages).collect();
        assert_eq!(steered, [0, 0, 0, 1, 0], "{path}");
    }
}
