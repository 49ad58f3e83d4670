//! Helpers shared by the built-ins' tests.
#![allow(dead_code)]

use futures::StreamExt;
use futures::executor::block_on;
use processors_runtime::prelude::*;
use std::sync::{Arc, Mutex};

/// Streams a run to its end: the chunks the client got, and the result.
pub fn stream<I: Pipeline, O: Pipeline, E: Pipeline>(
    agent: &Agent<I, O, E>,
    input: &str,
    options: GenerateOptions,
) -> (Vec<Chunk>, Result<GenerateResult, AgentError>) {
    block_on(async {
        let mut s = agent.stream_with(input, options);
        let mut chunks = Vec::new();
        while let Some(c) = s.next().await {
            chunks.push(c);
        }
        (chunks, s.finish().await)
    })
}

/// The text deltas, in order.
pub fn deltas(chunks: &[Chunk]) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|c| c.text_delta().map(str::to_owned))
        .collect()
}

/// The chunk types, in order.
pub fn types(chunks: &[Chunk]) -> Vec<String> {
    chunks
        .iter()
        .map(|c| c.kind.type_name().into_owned())
        .collect()
}

/// A run's trip wire chunk, if any.
pub fn tripwire(chunks: &[Chunk]) -> Option<&TripWire> {
    chunks.iter().find_map(|c| match &c.kind {
        ChunkKind::Tripwire(tw) => Some(tw),
        _ => None,
    })
}

/// Options with a memory thread.
pub fn thread() -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread("thread-1", "user-1"))
}

/// What a memory store saved for the test thread.
pub fn saved(store: &InMemoryStore) -> Vec<Message> {
    block_on(store.list_messages("thread-1", None)).unwrap_or_default()
}

/// Collects the violations an agent reports.
#[derive(Clone, Default)]
pub struct Violations(Arc<Mutex<Vec<Violation>>>);

impl Violations {
    pub fn new() -> Self {
        Self::default()
    }

    /// The callback to give the agent.
    pub fn hook(&self) -> impl Fn(&Violation) + Send + Sync + 'static {
        let log = self.0.clone();
        move |v| {
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(v.clone())
        }
    }

    pub fn all(&self) -> Vec<Violation> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A fresh directory under the system's temp dir, by its canonical path.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "processors-builtins-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}
