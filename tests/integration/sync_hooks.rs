//! Hooks besides the stream hook written as plain functions are called without a future
//! (`SYNC_HOOKS`); they keep every rule of a hook call: results applied, warnings reported,
//! aborts and failures halting, panics caught and named, on every dispatch path.

use processors::prelude::*;
use processors::processor::{InputArgs, OutputResultArgs, ProcessorRef, boxed};
use std::sync::Arc;

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

/// An input hook whose future waits once before it is ready, listed in `SYNC_HOOKS` (as a
/// hook that never waits) when `SYNC`.
struct WaitsOnce<const SYNC: bool>;

impl<const SYNC: bool> Processor for WaitsOnce<SYNC> {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;
    const SYNC_HOOKS: Hooks = if SYNC { Hooks::INPUT } else { Hooks::NONE };
    fn id(&self) -> &str {
        "waits-once"
    }
    async fn process_input(&self, _: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        tokio::task::yield_now().await;
        Ok(InputOutcome::Unchanged)
    }
}
impl<const SYNC: bool> InputProcessor for WaitsOnce<SYNC> {}

/// A hook that `SYNC_HOOKS` lists is polled once where it is called, not awaited: one whose
/// future waits after all fails with an error that says so, behind `dyn` and behind a shared
/// pointer (which passes `SYNC_HOOKS` on) alike; the same hook not listed is awaited.
#[tokio::test]
async fn a_hook_listed_in_sync_hooks_is_polled_once_where_it_is_called() {
    for listed in [boxed(Arc::new(WaitsOnce::<true>)), boxed(WaitsOnce::<true>)] {
        let agent = Agent::builder()
            .model(ScriptedModel::new([Turn::text("ok")]))
            .input_ref(listed)
            .build()
            .unwrap();
        let err = agent.generate("hi").await.unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(&err, AgentError::Hook(HookError::Failed { id, hook: Hook::Input, .. }) if id == "waits-once"),
            "{text}"
        );
        assert!(text.contains("`SYNC_HOOKS`"), "{text}");
    }
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("ok")]))
        .input(WaitsOnce::<false>)
        .build()
        .unwrap();
    assert_eq!(agent.generate("hi").await.unwrap().text, "ok");
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
