//! The scenarios shared by the criterion suite (`benches/pipeline.rs`) and the JSON bench
//! binary (`examples/bench.rs`): pass-through input processors, character-counting output
//! stream processors, agents with K of each on both dispatch paths, and three hand-written
//! yardsticks: the bare loop over the model's stream, a `Stream` adapter that does the
//! agent's per-chunk work, and a `generate()` call's contract (`generate_adapter`).

#![allow(dead_code)] // each harness uses part of it

use futures::StreamExt;
use processors::agent::AnyAgent;
use processors::model::ModelRequest;
use processors::prelude::*;
use processors::processor::{ProcessorRef, boxed};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The text of every streamed delta (four characters).
pub const DELTA: &str = "abcd";

/// The processor counts of the scenarios.
pub const KS: [usize; 4] = [0, 1, 5, 10];

/// What the counting processors report at the end of a run: the sum of their counts.
static COUNTED: AtomicUsize = AtomicUsize::new(0);

/// Takes (and resets) what the counting processors reported.
pub fn take_counted() -> usize {
    COUNTED.swap(0, Ordering::Relaxed)
}

/// One pass-through input processor and one counting output processor per position, each
/// with its own id (an agent's list may not hold two processors with one id).
macro_rules! positions {
    ($($pass:ident $pass_id:tt $count:ident $count_id:tt;)*) => {
        $(
            /// Returns the input unchanged.
            pub struct $pass;

            #[processor(id = $pass_id)]
            impl $pass {
                fn process_input(&self) {}
            }

            /// Counts the characters of streamed text in its per-request state and passes
            /// every chunk on; reports the count at the end of the run.
            pub struct $count;

            #[processor(id = $count_id)]
            impl $count {
                fn process_output_stream(&self, chunk: &Chunk, state: &mut usize) -> StreamAction {
                    if let Some(t) = chunk.text_delta() {
                        *state += t.chars().count();
                    }
                    StreamAction::Pass
                }

                fn process_output_result(&self, state: &mut usize) {
                    COUNTED.fetch_add(*state, Ordering::Relaxed);
                }
            }
        )*

        /// The first `k` pass-through processors, boxed.
        fn dyn_inputs(k: usize) -> Vec<ProcessorRef> {
            let all: Vec<ProcessorRef> = vec![$(boxed($pass)),*];
            all.into_iter().take(k).collect()
        }

        /// The first `k` counting processors, boxed.
        fn dyn_outputs(k: usize) -> Vec<ProcessorRef> {
            let all: Vec<ProcessorRef> = vec![$(boxed($count)),*];
            all.into_iter().take(k).collect()
        }
    };
}

positions! {
    Pass0 "pass-0" Count0 "count-0";
    Pass1 "pass-1" Count1 "count-1";
    Pass2 "pass-2" Count2 "count-2";
    Pass3 "pass-3" Count3 "count-3";
    Pass4 "pass-4" Count4 "count-4";
    Pass5 "pass-5" Count5 "count-5";
    Pass6 "pass-6" Count6 "count-6";
    Pass7 "pass-7" Count7 "count-7";
    Pass8 "pass-8" Count8 "count-8";
    Pass9 "pass-9" Count9 "count-9";
}

/// An agent declared with `agent!`: tuple pipelines, statically dispatched.
macro_rules! static_agent {
    ($model:expr $(; $pass:ident $count:ident)*) => {
        Arc::new(processors::agent! {
            model: $model,
            input: [$($pass),*],
            output: [$($count),*],
        }) as Arc<dyn AnyAgent>
    };
}

/// How the processor lists are dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// Tuples declared with `agent!`.
    Static,
    /// `DynPipeline`s built at run time.
    Dynamic,
}

impl Dispatch {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Dispatch::Static => "static",
            Dispatch::Dynamic => "dynamic",
        }
    }
}

/// The model of every scenario: the same turn on every call, nothing recorded.
pub fn model(turn: Turn) -> ScriptedModel {
    ScriptedModel::cycle([turn]).without_recording()
}

/// An agent with `k` pass-through input processors and `k` counting output processors.
pub fn agent(dispatch: Dispatch, k: usize, turn: Turn) -> Arc<dyn AnyAgent> {
    let m = model(turn);
    match dispatch {
        Dispatch::Static => match k {
            0 => static_agent!(m),
            1 => static_agent!(m; Pass0 Count0),
            5 => {
                static_agent!(m; Pass0 Count0; Pass1 Count1; Pass2 Count2; Pass3 Count3; Pass4 Count4)
            }
            10 => {
                static_agent!(m; Pass0 Count0; Pass1 Count1; Pass2 Count2; Pass3 Count3; Pass4 Count4;
                Pass5 Count5; Pass6 Count6; Pass7 Count7; Pass8 Count8; Pass9 Count9)
            }
            _ => panic!("no static agent with k = {k}; the scenarios use {KS:?}"),
        },
        Dispatch::Dynamic => {
            assert!(k <= 10, "at most 10 processors per list");
            let mut b = Agent::builder().model(m);
            for p in dyn_inputs(k) {
                b = b.input_ref(p);
            }
            for p in dyn_outputs(k) {
                b = b.output_ref(p);
            }
            match b.build() {
                Ok(a) => Arc::new(a),
                Err(e) => panic!("the dynamic agent does not build: {e}"),
            }
        }
    }
}

/// The model of every scenario wrapped with `k` pass-through input processors and `k`
/// counting output processors (`Processed`), as a shared model.
pub fn wrapped(dispatch: Dispatch, k: usize, turn: Turn) -> Arc<dyn LanguageModel> {
    let m = model(turn);
    macro_rules! tuples {
        ($($pass:ident $count:ident),*) => {
            Arc::new(
                m.with_processors()
                    .input_pipeline(($($pass,)*))
                    .output_pipeline(($($count,)*))
                    .build()
                    .expect("the wrapped model builds"),
            )
        };
    }
    match dispatch {
        Dispatch::Static => match k {
            0 => tuples!(),
            1 => tuples!(Pass0 Count0),
            5 => tuples!(Pass0 Count0, Pass1 Count1, Pass2 Count2, Pass3 Count3, Pass4 Count4),
            10 => tuples!(Pass0 Count0, Pass1 Count1, Pass2 Count2, Pass3 Count3, Pass4 Count4,
                Pass5 Count5, Pass6 Count6, Pass7 Count7, Pass8 Count8, Pass9 Count9),
            _ => panic!("no static wrapped model with k = {k}; the scenarios use {KS:?}"),
        },
        Dispatch::Dynamic => {
            let mut b = m.with_processors();
            for p in dyn_inputs(k) {
                b = b.input_ref(p);
            }
            for p in dyn_outputs(k) {
                b = b.output_ref(p);
            }
            Arc::new(b.build().expect("the wrapped model builds"))
        }
    }
}

/// Streams one call of a wrapped model; returns the number of chunks received and checks
/// that the caller got every character. (The counting processors report at the end of a
/// run, which a model call is not: their work per chunk is done, their report is not.)
pub async fn run_wrapped(model: &dyn LanguageModel, chars: usize) -> usize {
    let request = ModelRequest {
        prompt: vec![Message::user("go")],
        ..ModelRequest::default()
    };
    let mut stream = match model.stream(request).await {
        Ok(s) => s,
        Err(e) => panic!("the wrapped model failed: {e}"),
    };
    let (mut chunks, mut received) = (0usize, 0usize);
    while let Some(item) = stream.next().await {
        let Ok(kind) = item else {
            panic!("the wrapped model's stream failed")
        };
        if let ChunkKind::TextDelta { text, .. } = &kind {
            received += text.len();
        }
        black_box(&kind);
        chunks += 1;
    }
    assert_eq!(received, chars, "the caller got every character");
    chunks
}

/// Streams one run through `agent.stream(..)` + `StreamExt::next`; returns the number of
/// chunks received and checks that every counting processor saw every character.
pub async fn run_stream(agent: &dyn AnyAgent, k: usize, chars: usize) -> usize {
    let mut stream = agent.stream_with("go".into(), GenerateOptions::default());
    let mut chunks = 0usize;
    while let Some(chunk) = stream.next().await {
        black_box(&chunk);
        chunks += 1;
    }
    let result = match stream.finish().await {
        Ok(r) => r,
        Err(e) => panic!("the run failed: {e}"),
    };
    assert_eq!(result.text.len(), chars, "the client got every character");
    assert_eq!(
        take_counted(),
        k * chars,
        "every processor counted every character"
    );
    chunks
}

/// One `generate()` call; checks its text.
pub async fn run_generate(agent: &dyn AnyAgent, k: usize, chars: usize) {
    let result = match agent
        .generate_with("go".into(), GenerateOptions::default())
        .await
    {
        Ok(r) => r,
        Err(e) => panic!("the call failed: {e}"),
    };
    assert_eq!(result.text.len(), chars);
    assert_eq!(take_counted(), k * chars);
}

/// The same work without the pipeline: the model's stream consumed by a plain loop that
/// counts the characters of text deltas once per counting processor (`k`, at least once).
pub async fn baseline(model: &ScriptedModel, k: usize, chars: usize) -> usize {
    let mut stream = match model.stream(ModelRequest::default()).await {
        Ok(s) => s,
        Err(e) => panic!("the model rejected the request: {e}"),
    };
    let mut counts = [0usize; 10];
    let counters = k.clamp(1, counts.len());
    let mut chunks = 0usize;
    while let Some(item) = stream.next().await {
        let Ok(kind) = item else {
            panic!("the scripted stream failed")
        };
        if let ChunkKind::TextDelta { text, .. } = &kind {
            for c in &mut counts[..counters] {
                *c += black_box(text.as_str()).chars().count();
            }
        }
        black_box(&kind);
        chunks += 1;
    }
    assert!(counts[..counters].iter().all(|&c| c == chars));
    chunks
}

/// The contract of a `generate()` call written by hand, with no processor machinery: the
/// yardstick of the call's fixed costs (what any implementation pays), as [`adapter`] is of
/// the stream's per-chunk ones. It makes what a call's result holds and what the run needs
/// on the way: the input message (an id and a time, as `"go".into()` makes it for an agent),
/// the run's id, the prompt (a copy of the conversation, which the model request owns), the
/// answer's text (counted `k` times, at least once, as the baseline counts it), the answer
/// as a message with an id and a time, its step, and the result with the response messages.
pub async fn generate_adapter(model: &ScriptedModel, k: usize, chars: usize) -> GenerateResult {
    let conversation = vec![Message::user("go")];
    let run_id = processors::message::new_id("run");
    let request = ModelRequest {
        prompt: conversation.clone(),
        ..ModelRequest::default()
    };
    let mut stream = match model.stream(request).await {
        Ok(s) => s,
        Err(e) => panic!("the model rejected the request: {e}"),
    };
    let mut counts = [0usize; 10];
    let counters = k.clamp(1, counts.len());
    let mut text = String::new();
    let (mut finish_reason, mut usage) = (FinishReason::Stop, Usage::default());
    while let Some(item) = stream.next().await {
        match item {
            Ok(ChunkKind::TextDelta { text: t, .. }) => {
                for c in &mut counts[..counters] {
                    *c += black_box(t.as_str()).chars().count();
                }
                text.push_str(&t);
            }
            Ok(ChunkKind::Finish {
                finish_reason: r,
                usage: u,
            }) => (finish_reason, usage) = (r, u),
            Ok(_) => {}
            Err(e) => panic!("the scripted stream failed: {e}"),
        }
    }
    drop(stream);
    assert!(counts[..counters].iter().all(|&c| c == chars));
    let text = Text::from(text);
    let answer = Message::assistant(text.clone());
    drop(conversation);
    GenerateResult {
        run_id,
        text: text.clone(),
        steps: vec![StepResult {
            step_number: 0,
            text,
            finish_reason,
            usage,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            tripwire: None,
        }],
        finish_reason,
        usage,
        processor_usage: Default::default(),
        shadowed: Vec::new(),
        tool_calls: Vec::new(),
        tool_results: Vec::new(),
        tripwire: None,
        response_messages: vec![answer],
        warnings: Vec::new(),
        pending_approvals: Vec::new(),
    }
}

/// [`generate_adapter`] as the bench times it: the result checked, then dropped.
pub async fn run_generate_adapter(model: &ScriptedModel, k: usize, chars: usize) {
    let result = generate_adapter(model, k, chars).await;
    assert_eq!(result.text.len(), chars);
}

/// The run id the adapter stamps on its chunks, as long as an agent's.
const ADAPTER_RUN_ID: &str = "run-0123456789abcdefgh";

/// The agent's per-chunk work written by hand: the model's stream through a `StreamExt::map`
/// that wraps each model chunk in a [`Chunk`] with the run's id, counts the characters of a
/// text delta once per counting processor (`k`, at least once) from the `&Chunk`, and keeps
/// the answer's text, consumed with `StreamExt::next`. What a user without the framework would
/// write for the same stream; returns the number of chunks received.
pub async fn adapter(model: &ScriptedModel, k: usize, chars: usize) -> usize {
    let stream = match model.stream(ModelRequest::default()).await {
        Ok(s) => s,
        Err(e) => panic!("the model rejected the request: {e}"),
    };
    let run_id = processors::chunk::RunId::from(ADAPTER_RUN_ID);
    let mut counts = [0usize; 10];
    let counters = k.clamp(1, counts.len());
    let mut text = String::new();
    let mut chunks = 0usize;
    let mut through = stream.map(|item| {
        let Ok(kind) = item else {
            panic!("the scripted stream failed")
        };
        let chunk = Chunk::new(run_id.clone(), kind);
        if let Some(t) = chunk.text_delta() {
            for c in &mut counts[..counters] {
                *c += black_box(t).chars().count();
            }
            text.push_str(t);
        }
        chunk
    });
    while let Some(chunk) = through.next().await {
        black_box(&chunk);
        chunks += 1;
    }
    drop(through);
    assert_eq!(text.len(), chars, "the adapter kept every character");
    assert!(counts[..counters].iter().all(|&c| c == chars));
    chunks
}
