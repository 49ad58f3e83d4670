//! Hooks besides the stream hook written as plain functions are called without a future
//! (`SYNC_HOOKS`); they keep every rule of a hook call: results applied, warnings reported,
//! aborts and failures halting, panics caught and named, on every dispatch path.

mod common;

use processors::prelude::*;
use processors::processor::{InputArgs, OutputResultArgs, ProcessorRef, boxed};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Upper-cases the input.
#[processor(input)]
fn shout(messages: Vec<Message>) -> Vec<Message> {
    messages
        .into_iter()
        .map(|mut m| {
            m.set_text(m.text().to_uppercase());
            m
        })
        .collect()
}

/// Panics on an input of "boom".
#[processor(input)]
fn explodes_on_boom(messages: Vec<Message>) {
    if messages.iter().any(|m| m.text() == "boom") {
        panic!("sync input bug");
    }
}

/// Aborts on an answer longer than 5 characters.
#[processor(output_result)]
fn at_most_five(summary: &RunSummary, abort: Abort) -> Result<(), ProcessorError> {
    if summary.text.chars().count() > 5 {
        return Err(abort.reason("too long").into());
    }
    Ok(())
}

/// Warns (and so changes nothing) on every answer.
#[processor(output_result)]
fn always_warns(abort: Abort) -> Result<(), ProcessorError> {
    Err(abort.reason("noted").warn())
}

fn model(answer: &str) -> ScriptedModel {
    ScriptedModel::new([Turn::text(answer)])
}

on_every_path!(a_plain_input_hook_changes_the_input, |path| {
    let m = model("ok");
    let agent = build_agent!(path, model: m.clone(), input: [Shout]);
    let r = agent
        .generate_with("hello".into(), GenerateOptions::new())
        .await;
    assert_eq!(r.unwrap().text, "ok");
    assert_eq!(m.requests()[0].prompt.last().unwrap().text(), "HELLO");
});

on_every_path!(a_plain_hook_that_panics_is_caught_and_named, |path| {
    // After `Shout`, the input is "BOOM": nothing panics.
    let agent = build_agent!(path, model: model("ok"), input: [Shout, ExplodesOnBoom]);
    let r = agent
        .generate_with("boom".into(), GenerateOptions::new())
        .await;
    assert_eq!(r.unwrap().text, "ok");
    let agent = build_agent!(path, model: model("ok"), input: [ExplodesOnBoom, Shout]);
    let err = agent
        .generate_with("boom".into(), GenerateOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::Hook(HookError::Panicked { id, hook: Hook::Input, message })
            if id == "explodes-on-boom" && message.contains("sync input bug")),
        "{err}"
    );
});

on_every_path!(a_plain_hook_aborts_and_warns, |path| {
    let agent = build_agent!(path, model: model("too long an answer"), output: [AtMostFive]);
    let r = agent
        .generate_with("x".into(), GenerateOptions::new())
        .await;
    let tripwire = r.unwrap().tripwire.expect("the answer was too long");
    assert_eq!(tripwire.reason, "too long");
    assert_eq!(tripwire.processor_id, "at-most-five");

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let agent = build_agent!(path, model: model("fine"), on_violation: move |v: &Violation| {
        log.lock().unwrap().push(format!("{:?} {} {}", v.kind, v.processor_id, v.reason));
    }, output: [AlwaysWarns]);
    let r = agent
        .generate_with("x".into(), GenerateOptions::new())
        .await
        .unwrap();
    assert!(r.tripwire.is_none());
    assert_eq!(r.text, "fine");
    assert_eq!(*seen.lock().unwrap(), ["Warn always-warns noted"]);
});

/// A hand-written processor whose input hook has both forms, telling which one ran.
#[derive(Default)]
struct BothForms {
    now: AtomicUsize,
    waited: AtomicUsize,
}

impl Processor for BothForms {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    const SYNC_HOOKS: Hooks = Hooks::INPUT;
    fn id(&self) -> &str {
        "both-forms"
    }
    async fn process_input(&self, _: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        self.waited.fetch_add(1, Ordering::Relaxed);
        Ok(InputOutcome::Unchanged)
    }
    fn __process_input_now(&self, _: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        self.now.fetch_add(1, Ordering::Relaxed);
        Ok(InputOutcome::Unchanged)
    }
}
impl InputProcessor for BothForms {}

/// Names the input hook in `SYNC_HOOKS` without implementing its `_now` method.
struct ClaimsSync;

impl Processor for ClaimsSync {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    const SYNC_HOOKS: Hooks = Hooks::INPUT;
    fn id(&self) -> &str {
        "claims-sync"
    }
}
impl InputProcessor for ClaimsSync {}

#[tokio::test]
async fn a_hook_that_sync_hooks_names_is_called_without_its_future() {
    let p = Arc::new(BothForms::default());
    // Behind `dyn`, and behind a shared pointer, which passes `SYNC_HOOKS` on.
    let shared: ProcessorRef = boxed(p.clone());
    let agent = Agent::builder()
        .model(ScriptedModel::cycle([Turn::text("ok")]))
        .input_ref(shared)
        .build()
        .unwrap();
    for _ in 0..3 {
        agent.generate("hi").await.unwrap();
    }
    assert_eq!(p.now.load(Ordering::Relaxed), 3);
    assert_eq!(p.waited.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn sync_hooks_without_the_method_is_a_clear_failure() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("ok")]))
        .input(ClaimsSync)
        .build()
        .unwrap();
    let err = agent.generate("hi").await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, AgentError::Hook(HookError::Failed { id, hook: Hook::Input, .. }) if id == "claims-sync"),
        "{text}"
    );
    assert!(
        std::error::Error::source(&err)
            .map(|s| s.to_string())
            .unwrap_or_default()
            .contains("`SYNC_HOOKS`")
            || text.contains("`SYNC_HOOKS`"),
        "{text}"
    );
}

#[tokio::test]
async fn closure_processors_are_called_without_their_future() {
    let trim = input_fn("trim", |a: &mut InputArgs<'_, usize>| {
        *a.state += 1;
        a.messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.set_text(m.text().trim().to_owned());
                m
            })
            .collect::<Vec<_>>()
    });
    let trim: ProcessorRef = boxed(trim);
    assert!(trim.dyn_sync_hooks().contains(Hook::Input));
    let explodes: ProcessorRef = boxed(output_result_fn(
        "explodes",
        |_: &mut OutputResultArgs<'_, ()>| -> OutputOutcome { panic!("closure bug") },
    ));
    assert!(explodes.dyn_sync_hooks().contains(Hook::OutputResult));
    let m = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(m.clone())
        .input_ref(trim)
        .output_ref(explodes)
        .build()
        .unwrap();
    let err = agent.generate("  hi  ").await.unwrap_err();
    assert_eq!(m.requests()[0].prompt.last().unwrap().text(), "hi");
    assert!(
        matches!(&err, AgentError::Hook(HookError::Panicked { id, hook: Hook::OutputResult, .. }) if id == "explodes"),
        "{err}"
    );
}
