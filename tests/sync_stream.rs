//! Stream hooks written as plain functions run without futures (the chain's sync path); they
//! keep every stream rule, alone and mixed with async hooks, on every dispatch path.

mod common;

use common::*;
use processors::prelude::*;
use serde_json::json;

#[processor(output_stream)]
fn upper_case(chunk: &Chunk) -> StreamAction {
    match chunk.text_delta() {
        Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
        None => StreamAction::Pass,
    }
}

#[processor(output_stream)]
fn drop_marked(chunk: &Chunk) -> StreamAction {
    if chunk.text_delta() == Some("DROP") {
        StreamAction::Drop
    } else {
        StreamAction::Pass
    }
}

/// Appends "!" and counts what it saw in its state, reported at the end.
#[processor(output_stream)]
fn exclaim(chunk: &Chunk, state: &mut Vec<String>) -> StreamAction {
    match chunk.text_delta() {
        Some(t) => {
            state.push(t.to_owned());
            chunk.clone().map_text(|t| format!("{t}!")).into()
        }
        None => StreamAction::Pass,
    }
}

#[processor(output_stream)]
fn block_bad(chunk: &Chunk, abort: Abort) -> Result<StreamAction, ProcessorError> {
    if chunk.text_delta() == Some("bad") {
        return Err(abort
            .reason("bad word")
            .metadata(json!({"w": "bad"}))
            .into());
    }
    Ok(StreamAction::Pass)
}

#[processor(output_stream)]
fn fails_on_b(chunk: &Chunk) -> Result<StreamAction, ProcessorError> {
    if chunk.text_delta() == Some("b") {
        return Err(ProcessorError::msg("cannot handle b"));
    }
    Ok(StreamAction::Pass)
}

#[processor(output_stream)]
fn explodes(chunk: &Chunk) -> StreamAction {
    if chunk.text_delta() == Some("boom") {
        panic!("sync processor bug");
    }
    StreamAction::Pass
}

fn model<const N: usize>(deltas: [&str; N]) -> ScriptedModel {
    ScriptedModel::new([Turn::deltas(deltas)])
}

on_every_path!(sync_chain_changes_drops_and_keeps_state, |path| {
    let m = model(["hello", "drop"]);
    let agent = build_agent!(path, model: m, output: [UpperCase, DropMarked, Exclaim]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["HELLO!"]);
    assert_eq!(r.unwrap().text, "HELLO!");
});

on_every_path!(sync_abort_yields_one_tripwire, |path| {
    let m = model(["ok", "bad", "never"]);
    let agent = build_agent!(path, model: m, output: [BlockBad, Exclaim]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["ok!"]);
    assert_eq!(types(&chunks).last().unwrap(), "tripwire");
    let tw = r.unwrap().tripwire.unwrap();
    assert_eq!(
        (tw.processor_id.as_str(), tw.metadata),
        ("block-bad", Some(json!({"w": "bad"})))
    );
});

on_every_path!(sync_failure_passes_the_original_chunk, |path| {
    let m = model(["a", "b", "c"]);
    let agent = build_agent!(path, model: m, output: [FailsOnB, Exclaim]);
    let (chunks, _) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["a!", "b", "c!"]);
});

on_every_path!(sync_panic_is_caught_and_names_the_processor, |path| {
    let m = model(["a", "boom"]);
    let agent = build_agent!(path, model: m, output: [Explodes, Exclaim]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    let err = r.unwrap_err();
    assert!(
        matches!(&err, AgentError::Hook(HookError::Panicked { id, hook: Hook::OutputStream, .. }) if id == "explodes"),
        "{err}"
    );
    assert_eq!(deltas(&chunks), ["a!"]);
});

on_every_path!(sync_panic_names_the_processor_after_others, |path| {
    let m = model(["a", "b", "boom"]);
    let agent = build_agent!(path, model: m, output: [DropMarked, Explodes]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    let err = r.unwrap_err();
    assert!(
        matches!(&err, AgentError::Hook(HookError::Panicked { id, hook: Hook::OutputStream, .. }) if id == "explodes"),
        "{err}"
    );
    assert_eq!(deltas(&chunks), ["a", "b"]);
});

on_every_path!(sync_and_async_hooks_mix_in_one_chain, |path| {
    let m = model(["hello", "drop"]);
    let agent = build_agent!(path, model: m, output: [
        Probe::new("async-upper").stream(upper),
        DropMarked,
        Exclaim,
    ]);
    let (chunks, _) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["HELLO!"]);
});

/// Counts text deltas in a state that its input hook starts and its result hook reports: one
/// state for the three hooks.
struct Tally(std::sync::Arc<std::sync::atomic::AtomicUsize>);

#[processor(id = "tally")]
impl Tally {
    fn process_input(&self, state: &mut usize) {
        *state = 1_000;
    }

    fn process_output_stream(&self, chunk: &Chunk, state: &mut usize) -> StreamAction {
        if chunk.text_delta().is_some() {
            *state += 1;
        }
        StreamAction::Pass
    }

    fn process_output_result(&self, state: &mut usize) {
        self.0.store(*state, std::sync::atomic::Ordering::SeqCst);
    }
}

// A long stream reaches the consumer in several batches, and a static chain's states are
// bound to their types once per batch: each batch must see what the one before left, and
// the hooks after the stream what the last one left.
on_every_path!(sync_state_lasts_across_batches_and_hooks, |path| {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let m = ScriptedModel::new([Turn::repeated("a", 200)]);
    let agent = build_agent!(path, model: m,
        input: [Tally(seen.clone())],
        output: [Exclaim, Tally(seen.clone())]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), vec!["a!"; 200]);
    assert_eq!(r.unwrap().text.len(), 400);
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1_200);
});
