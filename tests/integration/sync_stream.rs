//! Stream hooks written as plain functions run without futures (the chain's sync path); they
//! keep every stream rule, alone and mixed with async hooks, on every dispatch path.

use crate::common;

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

// A long stream reaches the consumer in several batches, with the chain's states bound to
// their types across them: each batch must see what the one before left, and the hooks after
// the stream what the last one left.
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

/// Counts every chunk it is given, data parts included, in its state, and reports the count
/// at the end: a chunk that reached it without its state (still bound elsewhere) would fail
/// the hook and go uncounted.
struct CountAll(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Processor for CountAll {
    type State = usize;
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM.with(Hooks::OUTPUT_RESULT);
    const SYNC_HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    fn id(&self) -> &str {
        "count-all"
    }
    fn process_data_parts(&self) -> bool {
        true
    }
    async fn process_output_stream(
        &self,
        args: OutputStreamArgs<'_, usize>,
    ) -> Result<StreamAction, ProcessorError> {
        *args.state += 1;
        Ok(StreamAction::Pass)
    }
    async fn process_output_result(
        &self,
        args: OutputResultArgs<'_, usize>,
    ) -> Result<OutputOutcome, ProcessorError> {
        self.0
            .store(*args.state, std::sync::atomic::Ordering::SeqCst);
        Ok(OutputOutcome::Unchanged)
    }
}

impl OutputProcessor for CountAll {}

/// A model whose chunks come one at a time, as from a network (its stream makes the run wait
/// once before each chunk): ten text deltas, a data part from the model (a chunk for the
/// general path), ten more, and the finish.
fn trickle() -> StreamModel {
    let delta = |t: &str| ChunkKind::TextDelta {
        id: "t".into(),
        text: t.into(),
    };
    let mut chunks: Vec<ChunkKind> = (0..10).map(|_| delta("a")).collect();
    chunks.push(ChunkKind::Data {
        name: "progress".into(),
        data: json!({"half": true}),
        transient: true,
    });
    chunks.extend((0..10).map(|_| delta("b")));
    chunks.push(ChunkKind::Finish {
        finish_reason: FinishReason::Stop,
        usage: Usage::default(),
    });
    StreamModel::new(move || {
        let mut chunks = chunks.clone().into_iter();
        let mut ready = false;
        Box::pin(futures::stream::poll_fn(move |cx| {
            ready = !ready;
            if ready {
                cx.waker().wake_by_ref();
                return std::task::Poll::Pending;
            }
            std::task::Poll::Ready(chunks.next().map(Ok))
        }))
    })
}

// The chain's states are bound to their types after a few chunks and stay bound while the
// model makes the run wait; a chunk for the general path (the data part) finds them back in
// the request's map, and so do the hooks after the stream.
on_every_path!(sync_state_stays_whole_while_the_model_trickles, |path| {
    let counted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let agent = build_agent!(path, model: trickle(), output: [CountAll(counted.clone())]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(r.unwrap().text, "aaaaaaaaaabbbbbbbbbb");
    assert_eq!(
        types(&chunks)
            .iter()
            .filter(|t| *t == "data-progress")
            .count(),
        1
    );
    assert_eq!(
        counted.load(std::sync::atomic::Ordering::SeqCst),
        chunks.len()
    );
});

/// Forty deltas "a", then `marked`, then forty more: the mark comes long after the chain's
/// states are bound.
fn long_with(marked: &str) -> ScriptedModel {
    let mut deltas = vec!["a"; 40];
    deltas.push(marked);
    deltas.extend(vec!["a"; 40]);
    ScriptedModel::new([Turn::deltas(deltas)])
}

on_every_path!(sync_panic_on_a_bound_chunk_names_the_processor, |path| {
    let agent = build_agent!(path, model: long_with("boom"), output: [DropMarked, Explodes]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    let err = r.unwrap_err();
    assert!(
        matches!(&err, AgentError::Hook(HookError::Panicked { id, hook: Hook::OutputStream, .. }) if id == "explodes"),
        "{err}"
    );
    assert_eq!(deltas(&chunks), vec!["a"; 40]);
});

on_every_path!(sync_abort_on_a_bound_chunk_yields_one_tripwire, |path| {
    let agent = build_agent!(path, model: long_with("bad"), output: [BlockBad, Exclaim]);
    let (chunks, r) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), vec!["a!"; 40]);
    assert_eq!(types(&chunks).last().unwrap(), "tripwire");
    assert_eq!(r.unwrap().tripwire.unwrap().processor_id, "block-bad");
});

// A list given for the call is bound the same way as the agent's own.
#[tokio::test]
async fn a_call_s_own_list_keeps_its_states_whole_across_waits_and_panics_by_name() {
    let counted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let agent = agent! { model: trickle() };
    let list = DynPipeline::new()
        .with(CountAll(counted.clone()))
        .with(Exclaim);
    let options = GenerateOptions::new().output_processors(list);
    let (chunks, r) = collect(&agent, "x", options).await;
    assert_eq!(r.unwrap().text.len(), 40);
    assert_eq!(
        counted.load(std::sync::atomic::Ordering::SeqCst),
        chunks.len()
    );

    let list = DynPipeline::new().with(DropMarked).with(Explodes);
    let agent = agent! { model: long_with("boom") };
    let options = GenerateOptions::new().output_processors(list);
    let (chunks, r) = collect(&agent, "x", options).await;
    assert!(
        matches!(r, Err(AgentError::Hook(HookError::Panicked { ref id, .. })) if id == "explodes")
    );
    assert_eq!(deltas(&chunks), vec!["a"; 40]);
}

/// A model whose stream panics after ten deltas: a bug in the model, not in a processor. With
/// `waits`, it makes the run wait once before it panics, so that the panic comes on the first
/// poll of a pull.
fn panics_mid_stream(waits: bool) -> StreamModel {
    StreamModel::new(move || {
        let (mut sent, mut waited) = (0, !waits);
        Box::pin(futures::stream::poll_fn(move |cx| {
            if sent == 10 && !waited {
                waited = true;
                cx.waker().wake_by_ref();
                return std::task::Poll::Pending;
            }
            sent += 1;
            if sent > 10 {
                panic!("model bug");
            }
            std::task::Poll::Ready(Some(Ok(ChunkKind::TextDelta {
                id: "t".into(),
                text: "a".into(),
            })))
        }))
    })
}

// The chain's chunks are guarded against a processor's panic a pull at a time; a panic of the
// model's stream within that pull, after chunks went through the chain or before any did, is
// not a processor's, and unwinds as it would without the guard.
on_every_path!(a_model_s_panic_is_not_a_processor_s, |path| {
    use futures::FutureExt;
    for waits in [false, true] {
        let model = panics_mid_stream(waits);
        let agent = build_agent!(path, model: model, output: [DropMarked, Exclaim]);
        let run = std::panic::AssertUnwindSafe(collect(&*agent, "x", GenerateOptions::new()));
        let panic = run
            .catch_unwind()
            .await
            .expect_err("the model's panic unwinds");
        assert_eq!(
            panic.downcast_ref::<&str>(),
            Some(&"model bug"),
            "waits: {waits}"
        );
    }
});
