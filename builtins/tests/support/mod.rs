//! What the built-ins' agent tests share: the same agent built both ways, and ways to run it.
#![allow(dead_code, unused_macros)]

use futures::StreamExt;
use processors_runtime::prelude::*;
use std::sync::{Arc, Mutex};

/// What `on_violation` saw.
pub type Violations = Arc<Mutex<Vec<Violation>>>;

/// An `on_violation` callback that records into `log`.
pub fn recorder(log: &Violations) -> impl Fn(&Violation) + Send + Sync + 'static {
    let log = log.clone();
    move |v: &Violation| log.lock().unwrap().push(v.clone())
}

/// The same agent twice, each on its own model from `$model` (evaluated once per agent):
/// built with `Agent::builder()` (dynamic lists) and declared with `agent!` (static lists).
/// Yields `[(path, agent, model)]`.
macro_rules! agents {
    (
        model: $m:expr
        $(, tools: [$($t:expr),* $(,)?])?
        $(, memory: $mem:expr)?
        $(, max_steps: $s:expr)?
        $(, max_processor_retries: $r:literal)?
        $(, on_violation: $v:expr)?
        $(, input: [$($i:expr),* $(,)?])?
        $(, output: [$($o:expr),* $(,)?])?
        $(,)?
    ) => {{
        let model = $m;
        let built = processors_runtime::Agent::builder().model(model.clone());
        $($(let built = built.tool($t);)*)?
        $(let built = built.memory($mem);)?
        $(let built = built.max_steps($s);)?
        $(let built = built.max_processor_retries($r);)?
        $(let built = built.on_violation($v);)?
        $($(let built = built.input($i);)*)?
        $($(let built = built.output($o);)*)?
        let built: Box<dyn processors_runtime::prelude::AnyAgent> = Box::new(built.build().unwrap());
        let declared_model = $m;
        let declared: Box<dyn processors_runtime::prelude::AnyAgent> =
            Box::new(processors_macros::agent! {
                crate: processors_runtime,
                model: declared_model.clone(),
                $(tools: [$($t),*],)?
                $(memory: $mem,)?
                $(max_steps: $s,)?
                $(max_processor_retries: $r,)?
                $(on_violation: $v,)?
                $(input: [$($i),*],)?
                $(output: [$($o),*],)?
            });
        [("builder", built, model), ("agent!", declared, declared_model)]
    }};
}
pub(crate) use agents;

/// Runs `agent` on `input` to its end.
pub fn generate(
    agent: &dyn AnyAgent,
    input: impl Into<processors_runtime::agent::AgentInput>,
) -> GenerateResult {
    generate_with(agent, input, GenerateOptions::new())
}

/// Runs `agent` on `input` with options to its end.
pub fn generate_with(
    agent: &dyn AnyAgent,
    input: impl Into<processors_runtime::agent::AgentInput>,
    options: GenerateOptions,
) -> GenerateResult {
    futures::executor::block_on(agent.generate_with(input.into(), options)).unwrap()
}

/// Streams `agent` on `input`: the chunks the client gets, and the result.
pub fn stream(
    agent: &dyn AnyAgent,
    input: impl Into<processors_runtime::agent::AgentInput>,
) -> (Vec<Chunk>, GenerateResult) {
    futures::executor::block_on(async {
        let mut s = agent.stream_with(input.into(), GenerateOptions::new());
        let mut chunks = Vec::new();
        while let Some(c) = s.next().await {
            chunks.push(c);
        }
        (chunks, s.finish().await.unwrap())
    })
}

/// The text of the messages of `role` in a prompt.
pub fn texts(prompt: &[Message], role: Role) -> Vec<String> {
    prompt
        .iter()
        .filter(|m| m.role == role)
        .map(Message::text)
        .collect()
}

/// The streamed text.
pub fn streamed_text(chunks: &[Chunk]) -> String {
    chunks.iter().filter_map(Chunk::text_delta).collect()
}

/// The finish reasons of the streamed `step-finish` chunks, then the `finish` chunk's.
pub fn finish_reasons(chunks: &[Chunk]) -> Vec<FinishReason> {
    chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::StepFinish { finish_reason, .. }
            | ChunkKind::Finish { finish_reason, .. } => Some(*finish_reason),
            _ => None,
        })
        .collect()
}

/// The trip wire chunk of a stream.
pub fn tripwire(chunks: &[Chunk]) -> Option<&TripWire> {
    chunks.iter().find_map(|c| match &c.kind {
        ChunkKind::Tripwire(tw) => Some(tw),
        _ => None,
    })
}
