//! [`SemanticRecall`]: brings back earlier messages of the resource that resemble the new
//! one, from any of its threads, with the messages around them.
//!
//! - **Recall** (`process_input`): the new user message is embedded, the store is searched for
//!   the `top_k` most similar earlier messages of the request's resource
//!   ([`MemoryStore::search_embeddings`]), and each is added with `neighbours` messages of its
//!   thread on either side, as remembered context before the history the agent's memory loaded.
//!   Messages already in the conversation (the loaded history window) are not added twice; tool
//!   calls and results are left out, so the prompt never holds a call without its result.
//! - **Indexing** (`process_output_result`): the turn's user and assistant messages with text
//!   are embedded in one batch and their embeddings saved, so later runs can recall them.
//!
//! It has an input hook and an output hook: place it in both lists (a clone in each). The
//! thread and resource come from the request context; without them it does nothing.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::semantic_recall::{HashEmbedder, SemanticRecall};
//! use processors::prelude::*;
//!
//! let store = InMemoryStore::new();
//! let recall = SemanticRecall::new(store.clone(), HashEmbedder::new(256)).top_k(1).neighbours(0);
//! let model = ScriptedModel::new([Turn::text("Noted."), Turn::text("ok"), Turn::text("Blue.")]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .memory(Memory::new(store.clone()))
//!     .input(recall.clone())
//!     .output(recall)
//!     .build()?;
//! let as_ = |thread| GenerateOptions::new().request_context(RequestContext::new().with_thread(thread, "ada"));
//! agent.generate_with("My favourite colour is blue.", as_("t-1")).await?;
//! agent.generate_with("The weather is nice today.", as_("t-2")).await?;
//! // A new thread: its history is empty, but the similar message comes back.
//! agent.generate_with("What is my favourite colour?", as_("t-3")).await?;
//! let prompt: Vec<String> = model.requests()[2].prompt.iter().map(Message::text).collect();
//! assert_eq!(prompt, ["My favourite colour is blue.", "What is my favourite colour?"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use futures::future::BoxFuture;
use processors_macros::processor;
use processors_runtime::BoxError;
use processors_runtime::context::RequestContext;
use processors_runtime::memory::{MemoryStore, MessageEmbedding};
use processors_runtime::message::{Message, MessageList, MessageSource, Part, Role};
use processors_runtime::processor::ProcessorError;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Turns texts into vectors: an embedding model (`processors_providers::OpenAiEmbeddings` is
/// one, for OpenAI-compatible embeddings APIs; [`HashEmbedder`] another, for tests).
pub use processors_runtime::model::Embedder;

/// A deterministic embedder for tests and examples: a hashed bag of lower-case words,
/// normalised to length 1. Texts that share words are similar; no model is called.
#[derive(Debug, Clone, Copy)]
pub struct HashEmbedder {
    dimensions: usize,
}

impl HashEmbedder {
    /// Vectors of `dimensions` numbers (at least 1).
    pub fn new(dimensions: usize) -> Self {
        HashEmbedder {
            dimensions: dimensions.max(1),
        }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dimensions];
        let words = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty());
        for word in words {
            // FNV-1a: the same in every process and version.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in word.to_lowercase().bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            let i = usize::try_from(h % self.dimensions as u64).unwrap_or(0);
            v[i] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Embedder for HashEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, BoxError>> {
        let vectors = texts.iter().map(|t| self.vector(t)).collect();
        Box::pin(async move { Ok(vectors) })
    }
}

/// Recalls earlier messages similar to the new one; see the [module docs](self).
#[derive(Clone)]
pub struct SemanticRecall {
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    top_k: usize,
    neighbours: usize,
}

impl std::fmt::Debug for SemanticRecall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticRecall")
            .field("top_k", &self.top_k)
            .field("neighbours", &self.neighbours)
            .finish()
    }
}

impl SemanticRecall {
    /// Recall over `store` (usually the store of the agent's memory) with `embedder`: the 3
    /// most similar messages, each with 1 message on either side.
    pub fn new(store: impl MemoryStore, embedder: impl Embedder) -> Self {
        Self::shared(Arc::new(store), Arc::new(embedder))
    }

    /// Recall over a shared store and embedder.
    pub fn shared(store: Arc<dyn MemoryStore>, embedder: Arc<dyn Embedder>) -> Self {
        SemanticRecall {
            store,
            embedder,
            top_k: 3,
            neighbours: 1,
        }
    }

    /// How many similar messages to recall.
    pub fn top_k(mut self, n: usize) -> Self {
        self.top_k = n;
        self
    }

    /// How many messages of its thread to add on either side of each recalled message.
    pub fn neighbours(mut self, n: usize) -> Self {
        self.neighbours = n;
        self
    }

    async fn embed_one(&self, text: String) -> Result<Vec<f32>, ProcessorError> {
        let mut vectors = self
            .embedder
            .embed(&[text])
            .await
            .map_err(embedding_failed)?;
        match vectors.pop() {
            Some(v) if vectors.is_empty() => Ok(v),
            _ => Err(ProcessorError::msg(
                "the embedder returned other than one vector for one text",
            )),
        }
    }
}

fn embedding_failed(e: BoxError) -> ProcessorError {
    ProcessorError::msg(format!("the embedder failed: {e}"))
}

/// Whether a message can be recalled or indexed: a user or assistant message with text and
/// no tool call.
fn recallable(m: &Message) -> bool {
    matches!(m.role, Role::User | Role::Assistant)
        && !m
            .content
            .parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall(_)))
        && !m.text().trim().is_empty()
}

#[processor(crate = processors_runtime, id = "semantic-recall")]
impl SemanticRecall {
    /// Adds the earlier messages most similar to the new user message, with their neighbours.
    async fn process_input(
        &self,
        list: &mut MessageList,
        cx: &RequestContext,
    ) -> Result<(), ProcessorError> {
        let Some(resource) = cx.resource_id() else {
            return Ok(());
        };
        if self.top_k == 0 {
            return Ok(());
        }
        let Some(query) = list
            .input()
            .filter(|m| m.role == Role::User)
            .map(Message::text)
            .filter(|t| !t.trim().is_empty())
            .last()
        else {
            return Ok(());
        };
        let vector = self.embed_one(query).await?;
        // Enough that `top_k` remain once those already in the conversation are set aside.
        let present: HashSet<String> = list.all().map(|m| m.id.clone()).collect();
        let found = self
            .store
            .search_embeddings(resource, &vector, self.top_k + present.len())
            .await?;
        let found: Vec<_> = found
            .into_iter()
            .filter(|f| !present.contains(&f.message_id))
            .take(self.top_k)
            .collect();
        if found.is_empty() {
            return Ok(());
        }
        // Each hit with its neighbours, per thread in the thread's order; threads in the order
        // of their best hit.
        let mut threads: Vec<(String, Vec<Message>, HashSet<usize>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for hit in &found {
            let slot = match index.get(&hit.thread_id) {
                Some(&i) => i,
                None => {
                    let messages: Vec<Message> = self
                        .store
                        .list_messages(&hit.thread_id, None)
                        .await?
                        .into_iter()
                        .filter(|m| m.resource_id.as_deref() == Some(resource))
                        .filter(recallable)
                        .collect();
                    threads.push((hit.thread_id.clone(), messages, HashSet::new()));
                    index.insert(hit.thread_id.clone(), threads.len() - 1);
                    threads.len() - 1
                }
            };
            let (_, messages, keep) = &mut threads[slot];
            if let Some(at) = messages.iter().position(|m| m.id == hit.message_id) {
                let from = at.saturating_sub(self.neighbours);
                let to = (at + self.neighbours).min(messages.len() - 1);
                keep.extend(from..=to);
            }
        }
        let recalled: Vec<Message> = threads
            .into_iter()
            .flat_map(|(_, messages, keep)| {
                messages
                    .into_iter()
                    .enumerate()
                    .filter(move |(i, _)| keep.contains(i))
                    .map(|(_, m)| m)
            })
            .filter(|m| !present.contains(&m.id))
            .collect();
        if recalled.is_empty() {
            return Ok(());
        }
        // Before the history already loaded: what is recalled is older.
        let history: Vec<String> = list.remembered().map(|m| m.id.clone()).collect();
        let history_ids: Vec<&str> = history.iter().map(String::as_str).collect();
        let history = list.remove(&history_ids);
        list.add_remembered(recalled.into_iter().chain(history));
        Ok(())
    }

    /// Embeds the turn's user and assistant messages and saves their embeddings.
    async fn process_output_result(
        &self,
        list: &MessageList,
        cx: &RequestContext,
    ) -> Result<(), ProcessorError> {
        let (Some(thread), Some(resource)) = (cx.thread_id(), cx.resource_id()) else {
            return Ok(());
        };
        let turn: Vec<&Message> = list
            .view(MessageSource::Input)
            .chain(list.view(MessageSource::Response))
            .filter(|m| recallable(m))
            .collect();
        if turn.is_empty() {
            return Ok(());
        }
        let texts: Vec<String> = turn.iter().map(|m| m.text()).collect();
        let vectors = self
            .embedder
            .embed(&texts)
            .await
            .map_err(embedding_failed)?;
        if vectors.len() != texts.len() {
            return Err(ProcessorError::msg(format!(
                "the embedder returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        let embeddings = turn
            .iter()
            .zip(vectors)
            .map(|(m, vector)| MessageEmbedding {
                message_id: m.id.clone(),
                thread_id: thread.to_owned(),
                resource_id: resource.to_owned(),
                vector,
            })
            .collect();
        self.store.save_embeddings(embeddings).await?;
        Ok(())
    }
}
