//! Memory: where conversations are kept between runs, and the processor that loads and saves
//! them.

mod in_memory;

pub use in_memory::InMemoryStore;

use crate::error::BoxError;
use crate::message::{Message, MessageSource};
use crate::processor::ProcessorError;
use crate::processor::{
    Hooks, InputArgs, InputOutcome, InputProcessor, OutputOutcome, OutputProcessor,
    OutputResultArgs, Processor,
};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A conversation thread, owned by one resource (a user, a tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// Its id.
    pub id: String,
    /// The resource that owns it.
    pub resource_id: String,
    /// An optional title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Milliseconds since the Unix epoch.
    pub updated_at: u64,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// What a store can fail with.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The thread belongs to another resource; nothing was read or written.
    #[error(
        "thread `{thread_id}` belongs to resource `{owner}`, not `{requested}`; use a thread id of that resource"
    )]
    ForeignThread {
        /// The thread.
        thread_id: String,
        /// Its owner.
        owner: String,
        /// The resource that asked.
        requested: String,
    },
    /// A message to save has the id of a message of another thread or resource; nothing was
    /// saved.
    #[error(
        "message `{id}` already belongs to another thread or resource; a message keeps its id within its thread only"
    )]
    ForeignMessage {
        /// The message's id.
        id: String,
    },
    /// The backend failed (connection, disk, corrupt data).
    #[error("memory storage failed: {0}")]
    Backend(#[source] BoxError),
}

/// Storage for threads and their messages. Async and fallible, so that databases fit.
///
/// [`Memory`] loads and saves through it; [`InMemoryStore`] is the store for tests and
/// short-lived agents. A store of your own, here a map and a vector behind a lock:
///
/// ```
/// # futures::executor::block_on(async {
/// use futures::FutureExt;
/// use futures::future::{BoxFuture, ready};
/// use processors_runtime::memory::{MemoryError, MemoryStore, Thread};
/// use processors_runtime::prelude::*;
/// use std::collections::HashMap;
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Clone, Default)]
/// struct VecStore(Arc<Mutex<(HashMap<String, Thread>, Vec<Message>)>>);
///
/// impl MemoryStore for VecStore {
///     fn get_thread<'a>(
///         &'a self,
///         thread_id: &'a str,
///     ) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
///         ready(Ok(self.0.lock().unwrap().0.get(thread_id).cloned())).boxed()
///     }
///
///     fn save_thread(&self, thread: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
///         self.0.lock().unwrap().0.insert(thread.id.clone(), thread);
///         ready(Ok(())).boxed()
///     }
///
///     fn list_messages<'a>(
///         &'a self,
///         thread_id: &'a str,
///         limit: Option<usize>,
///     ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
///         let data = self.0.lock().unwrap();
///         let all: Vec<Message> = data.1.iter()
///             .filter(|m| m.thread_id.as_deref() == Some(thread_id))
///             .cloned()
///             .collect();
///         let skip = limit.map_or(0, |n| all.len().saturating_sub(n));
///         ready(Ok(all[skip..].to_vec())).boxed()
///     }
///
///     fn list_messages_by_resource<'a>(
///         &'a self,
///         resource_id: &'a str,
///     ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
///         let data = self.0.lock().unwrap();
///         let all = data.1.iter()
///             .filter(|m| m.resource_id.as_deref() == Some(resource_id))
///             .cloned()
///             .collect();
///         ready(Ok(all)).boxed()
///     }
///
///     fn save_messages(&self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
///         let mut data = self.0.lock().unwrap();
///         // All or nothing: refuse the batch before writing any of it.
///         let foreign = messages.iter().find(|m| {
///             data.1.iter().any(|x| {
///                 x.id == m.id && (x.thread_id != m.thread_id || x.resource_id != m.resource_id)
///             })
///         });
///         if let Some(m) = foreign {
///             return ready(Err(MemoryError::ForeignMessage { id: m.id.clone() })).boxed();
///         }
///         for m in messages {
///             match data.1.iter_mut().find(|x| x.id == m.id) {
///                 Some(slot) => *slot = m,
///                 None => data.1.push(m),
///             }
///         }
///         ready(Ok(())).boxed()
///     }
///
///     fn delete_messages<'a>(
///         &'a self,
///         ids: &'a [String],
///     ) -> BoxFuture<'a, Result<(), MemoryError>> {
///         self.0.lock().unwrap().1.retain(|m| !ids.contains(&m.id));
///         ready(Ok(())).boxed()
///     }
/// }
///
/// let store = VecStore::default();
/// let model = ScriptedModel::new([Turn::text("Hello, Ada."), Turn::text("You are Ada.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .memory(Memory::new(store.clone()))
///     .build()
///     .unwrap();
/// // Memory works on the thread the request context names.
/// let ada = || {
///     GenerateOptions::new().request_context(RequestContext::new().with_thread("t-1", "ada"))
/// };
/// agent.generate_with("I am Ada.", ada()).await.unwrap();
/// agent.generate_with("Who am I?", ada()).await.unwrap();
///
/// // The second call's prompt starts with the first turn, loaded from the store.
/// let prompt: Vec<String> = model.requests()[1].prompt.iter().map(Message::text).collect();
/// assert_eq!(prompt, ["I am Ada.", "Hello, Ada.", "Who am I?"]);
/// assert_eq!(store.0.lock().unwrap().1.len(), 4);
/// # });
/// ```
pub trait MemoryStore: Send + Sync + 'static {
    /// The thread with this id.
    fn get_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>>;
    /// Creates or updates a thread.
    fn save_thread(&self, thread: Thread) -> BoxFuture<'_, Result<(), MemoryError>>;
    /// The last `limit` messages of a thread (all with `None`), in the thread's order: as they
    /// were first saved, a turn's messages together (see [`save_turn`](Self::save_turn)).
    fn list_messages<'a>(
        &'a self,
        thread_id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>>;
    /// Every message of a resource, across its threads, in the order of
    /// [`list_messages`](Self::list_messages).
    fn list_messages_by_resource<'a>(
        &'a self,
        resource_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>>;
    /// Saves messages (each carries its thread and resource ids); a known id of the same thread
    /// and resource is replaced, one of another is refused with
    /// [`MemoryError::ForeignMessage`]. All or nothing.
    fn save_messages(&self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>>;
    /// Saves a run's turn: creates or updates its thread and saves its messages, as
    /// [`save_thread`](Self::save_thread) and [`save_messages`](Self::save_messages) do,
    /// with one rule of order: a turn's messages stay together. When some of them were saved
    /// before (a run paused for approval saves its input when it pauses), the new ones are
    /// listed right after the turn's messages already saved, ahead of the turns saved since;
    /// a turn none of whose messages is known is listed last. A store that can should do
    /// both at once, so that a failure leaves neither.
    ///
    /// The default does one, then the other, with `save_messages`' order: a store that
    /// lists in the order messages were first saved lists a resumed turn's answer after the
    /// turns saved while it waited. The stores of this crate and of `processors-builtins`
    /// keep the rule.
    fn save_turn(
        &self,
        thread: Thread,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async move {
            self.save_thread(thread).await?;
            self.save_messages(messages).await
        })
    }
    /// Deletes messages by id.
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>>;
    /// The working memory kept under `scope_key` (a resource's or a thread's scratchpad, see
    /// [`working_memory_key`]), or `None` when nothing was kept yet.
    ///
    /// The default keeps none: it fails with [`MemoryError::Backend`] saying so, as
    /// [`set_working_memory`](Self::set_working_memory) does. A store that keeps working
    /// memory implements both.
    fn get_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, MemoryError>> {
        let _ = scope_key;
        Box::pin(async { Err(no_working_memory()) })
    }
    /// Replaces the working memory kept under `scope_key` with `text`.
    ///
    /// The default keeps none and fails; see
    /// [`get_working_memory`](Self::get_working_memory).
    fn set_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
        text: String,
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        let _ = (scope_key, text);
        Box::pin(async { Err(no_working_memory()) })
    }
    /// Saves embeddings of messages, for semantic recall; a known message id's embedding is
    /// replaced, one of another thread or resource refused with
    /// [`MemoryError::ForeignMessage`]. All or nothing.
    ///
    /// The default keeps none and fails with [`MemoryError::Backend`] saying so, as
    /// [`search_embeddings`](Self::search_embeddings) does.
    fn save_embeddings(
        &self,
        embeddings: Vec<MessageEmbedding>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        let _ = embeddings;
        Box::pin(async { Err(no_embeddings()) })
    }
    /// The `top_k` messages of `resource_id` whose embeddings are the most similar to `query`
    /// (cosine similarity), most similar first; ties in the order they were first saved.
    /// Messages of other resources are never returned.
    ///
    /// The default keeps none and fails; see [`save_embeddings`](Self::save_embeddings).
    fn search_embeddings<'a>(
        &'a self,
        resource_id: &'a str,
        query: &'a [f32],
        top_k: usize,
    ) -> BoxFuture<'a, Result<Vec<SimilarMessage>, MemoryError>> {
        let _ = (resource_id, query, top_k);
        Box::pin(async { Err(no_embeddings()) })
    }

    /// Keeps a paused run (a run whose tool calls wait for approval) under its run id,
    /// replacing one kept under the same id.
    ///
    /// The default keeps none and fails with [`MemoryError::Backend`] saying so, as
    /// [`take_paused_run`](Self::take_paused_run) does.
    fn save_paused_run(&self, record: PausedRunRecord) -> BoxFuture<'_, Result<(), MemoryError>> {
        let _ = record;
        Box::pin(async { Err(no_paused_runs()) })
    }

    /// Takes the paused run kept under `run_id`: returns it and removes it, at once, so that
    /// of two callers taking the same run one gets it and the other `None`. An expired record
    /// is returned too (the caller tells it from its `expires_at`).
    fn take_paused_run<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRunRecord>, MemoryError>> {
        let _ = run_id;
        Box::pin(async { Err(no_paused_runs()) })
    }

    /// The paused runs kept for `thread_id` and `resource_id` (each `None` matches every one),
    /// expired ones too, oldest to expire first, then by run id. Nothing is taken.
    ///
    /// The default keeps none and fails, as [`take_paused_run`](Self::take_paused_run) does.
    fn list_paused_runs<'a>(
        &'a self,
        thread_id: Option<&'a str>,
        resource_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRunRecord>, MemoryError>> {
        let _ = (thread_id, resource_id);
        Box::pin(async { Err(no_paused_runs()) })
    }
}

/// Sorts paused runs as [`MemoryStore::list_paused_runs`] returns them: oldest to expire
/// first, then by run id.
pub fn sort_paused_runs(records: &mut [PausedRunRecord]) {
    records.sort_by(|a, b| (a.expires_at, &a.run_id).cmp(&(b.expires_at, &b.run_id)));
}

/// Whether a paused run belongs to `thread_id` and `resource_id` (each `None` matches every
/// one): the filter of [`MemoryStore::list_paused_runs`].
pub fn paused_run_matches(
    record: &PausedRunRecord,
    thread_id: Option<&str>,
    resource_id: Option<&str>,
) -> bool {
    thread_id.is_none_or(|t| record.thread_id.as_deref() == Some(t))
        && resource_id.is_none_or(|r| record.resource_id.as_deref() == Some(r))
}

/// What a store that keeps no paused runs fails with.
fn no_paused_runs() -> MemoryError {
    MemoryError::Backend(
        "this memory store does not keep paused runs (tool calls waiting for approval); \
         implement `MemoryStore::save_paused_run`, `take_paused_run` and `list_paused_runs`, \
         or use a store that \
         does (`InMemoryStore`, `SqliteStore`, `PostgresStore`)"
            .into(),
    )
}

/// A paused run as a store keeps it: its id, its thread and resource (to list a
/// conversation's waiting runs), when it expires, and its state as JSON (opaque to the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausedRunRecord {
    /// The run's id.
    pub run_id: String,
    /// The run's thread, when it had one.
    pub thread_id: Option<String>,
    /// The run's resource, when it had one.
    pub resource_id: Option<String>,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_at: u64,
    /// The run's state, as JSON.
    pub data: String,
}

/// What a store that keeps no embeddings fails with.
fn no_embeddings() -> MemoryError {
    MemoryError::Backend(
        "this memory store does not keep message embeddings; implement \
         `MemoryStore::save_embeddings` and `search_embeddings`, or use a store that does \
         (`InMemoryStore`, `SqliteStore`, `PostgresStore`)"
            .into(),
    )
}

/// The embedding of a saved message, for semantic recall.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageEmbedding {
    /// The message's id.
    pub message_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Its resource.
    pub resource_id: String,
    /// The embedding.
    pub vector: Vec<f32>,
}

/// A message found by [`MemoryStore::search_embeddings`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimilarMessage {
    /// The message's id.
    pub message_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Its cosine similarity to the query, from -1 to 1.
    pub score: f32,
}

/// The cosine similarity of two vectors (0 when either is zero or their lengths differ).
///
/// ```
/// use processors_runtime::memory::cosine_similarity;
/// assert!((cosine_similarity(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
/// assert_eq!(cosine_similarity(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
/// assert_eq!(cosine_similarity(&[1.0], &[1.0, 0.0]), 0.0);
/// ```
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// The `top_k` most similar of `(message id, thread id, vector)` candidates in saved order,
/// most similar first (a stable sort: ties keep their order). For stores that search by brute
/// force.
pub fn top_k_similar<'a>(
    candidates: impl IntoIterator<Item = (&'a str, &'a str, &'a [f32])>,
    query: &[f32],
    top_k: usize,
) -> Vec<SimilarMessage> {
    let mut scored: Vec<SimilarMessage> = candidates
        .into_iter()
        .map(|(id, thread, v)| SimilarMessage {
            message_id: id.to_owned(),
            thread_id: thread.to_owned(),
            score: cosine_similarity(query, v),
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    scored.truncate(top_k);
    scored
}

/// What a store that keeps no working memory fails with.
fn no_working_memory() -> MemoryError {
    MemoryError::Backend(
        "this memory store does not keep working memory; implement \
         `MemoryStore::get_working_memory` and `set_working_memory`, or use a store that does \
         (`InMemoryStore`, `SqliteStore`, `PostgresStore`)"
            .into(),
    )
}

/// Whose working memory a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkingMemoryScope {
    /// One scratchpad per resource (a user, a tenant), shared by all of its threads.
    #[default]
    Resource,
    /// One scratchpad per thread.
    Thread,
}

/// The key a resource's or a thread's working memory is stored under.
///
/// Keys of different resources never collide, whatever their ids contain: a thread's key
/// names its resource too, so two resources' threads of the same id have two scratchpads.
///
/// ```
/// use processors_runtime::memory::{WorkingMemoryScope, working_memory_key};
/// let ada = working_memory_key(WorkingMemoryScope::Resource, "ada", "t-1");
/// assert_eq!(ada, "resource:ada");
/// assert_eq!(ada, working_memory_key(WorkingMemoryScope::Resource, "ada", "t-2"));
/// let t1 = working_memory_key(WorkingMemoryScope::Thread, "ada", "t-1");
/// assert_ne!(t1, working_memory_key(WorkingMemoryScope::Thread, "bob", "t-1"));
/// ```
pub fn working_memory_key(scope: WorkingMemoryScope, resource_id: &str, thread_id: &str) -> String {
    match scope {
        WorkingMemoryScope::Resource => format!("resource:{resource_id}"),
        // The resource's length first: no id can end one part and begin the other.
        WorkingMemoryScope::Thread => {
            format!("thread:{}:{resource_id}:{thread_id}", resource_id.len())
        }
    }
}

/// The id of the memory processor.
pub const MEMORY_ID: &str = "memory";

/// Whether a processor is the agent's memory (by type: a processor of the user's may be
/// named `memory`).
pub(crate) fn is_memory(p: &dyn crate::processor::DynProcessor) -> bool {
    p.dyn_type_id() == std::any::TypeId::of::<Memory>()
}

/// Conversation memory: loads a thread's history before the user's input processors and saves
/// the turn after the user's output processors.
///
/// The thread and resource come from the request context
/// ([`RequestContext::with_thread`](crate::RequestContext::with_thread)); without them memory
/// does nothing. A run that ends in a trip wire saves nothing.
///
/// Where it keeps them is its [`MemoryStore`]:
///
/// - in the process: `Memory::new(InMemoryStore::new())`;
/// - in a SQLite file, across restarts: `Memory::sqlite("agent.db")`, a method of
///   `processors::builtins::storage::SqliteMemory`, which `use processors::prelude::*;`
///   brings in (feature `sqlite`, on by default);
/// - in PostgreSQL, shared by several processes:
///   `Memory::new(PostgresStore::builder(url).connect().await?)`, with
///   `processors::builtins::storage::PostgresStore` (feature `postgres`).
#[derive(Clone)]
pub struct Memory {
    store: Arc<dyn MemoryStore>,
    last_messages: Option<usize>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("last_messages", &self.last_messages)
            .finish()
    }
}

impl Memory {
    /// Memory over a store, loading the last 40 messages.
    pub fn new(store: impl MemoryStore) -> Self {
        Self::shared(Arc::new(store))
    }

    /// Memory over a shared store.
    pub fn shared(store: Arc<dyn MemoryStore>) -> Self {
        Memory {
            store,
            last_messages: Some(40),
        }
    }

    /// How many recent messages to load (`None`: all).
    pub fn last_messages(mut self, n: Option<usize>) -> Self {
        self.last_messages = n;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    async fn owned_thread(
        &self,
        thread_id: &str,
        resource_id: &str,
    ) -> Result<Option<Thread>, MemoryError> {
        let thread = self.store.get_thread(thread_id).await?;
        if let Some(t) = &thread
            && t.resource_id != resource_id
        {
            return Err(MemoryError::ForeignThread {
                thread_id: thread_id.to_owned(),
                owner: t.resource_id.clone(),
                requested: resource_id.to_owned(),
            });
        }
        Ok(thread)
    }
}

/// What the `memory:` key of `agent!` and [`AgentBuilder::memory`](crate::agent::AgentBuilder::memory)
/// take: a [`Memory`], or a pointer to one (it is a handle: the copy shares the store).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not memory",
    label = "not a `Memory`",
    note = "memory is a `Memory` over a store, like `Memory::new(InMemoryStore::new())`, or an `Arc<Memory>` of one"
)]
pub trait IntoMemory {
    /// The memory.
    fn into_memory(self) -> Memory;
}

// Through `MemoryHandle`: an impl whose type is a parameter is not listed by the compiler
// when a value is not memory, so its report stays the message above.
#[diagnostic::do_not_recommend]
impl<T: MemoryHandle> IntoMemory for T {
    fn into_memory(self) -> Memory {
        self.memory()
    }
}

/// A value that holds a [`Memory`].
#[doc(hidden)]
pub trait MemoryHandle {
    /// The memory.
    fn memory(self) -> Memory;
}

impl MemoryHandle for Memory {
    fn memory(self) -> Memory {
        self
    }
}

impl MemoryHandle for Arc<Memory> {
    fn memory(self) -> Memory {
        Arc::unwrap_or_clone(self)
    }
}

impl MemoryHandle for &Memory {
    fn memory(self) -> Memory {
        self.clone()
    }
}

impl Processor for Memory {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT.with(Hooks::OUTPUT_RESULT);
    const STATIC_ID: Option<&'static str> = Some(MEMORY_ID);

    fn id(&self) -> &str {
        MEMORY_ID
    }

    async fn process_input(&self, args: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        let (Some(thread_id), Some(resource_id)) = (
            args.request_context.thread_id(),
            args.request_context.resource_id(),
        ) else {
            return Ok(InputOutcome::Unchanged);
        };
        if self.owned_thread(thread_id, resource_id).await?.is_none() {
            return Ok(InputOutcome::Unchanged);
        }
        let history = self
            .store
            .list_messages(thread_id, self.last_messages)
            .await?;
        args.message_list.add_remembered(pair_safe(history));
        Ok(InputOutcome::Unchanged)
    }

    async fn process_output_result(
        &self,
        args: OutputResultArgs<'_, ()>,
    ) -> Result<OutputOutcome, ProcessorError> {
        self.save_turn_of(args.request_context, args.message_list)
            .await?;
        Ok(OutputOutcome::Unchanged)
    }
}

impl Memory {
    /// Saves a run's turn: the input and the response of `list` (as the processors left
    /// them), to the context's thread, created for its resource when new. Nothing for a
    /// context without a thread and a resource.
    pub(crate) async fn save_turn_of(
        &self,
        cx: &crate::context::RequestContext,
        list: &crate::message::MessageList,
    ) -> Result<(), MemoryError> {
        self.save_of(cx, list, &[MessageSource::Input, MessageSource::Response])
            .await
    }

    /// Saves the input of a run that pauses for approval, so that its turn keeps its place
    /// in the thread: the resumed run saves the rest of the turn with it
    /// ([`MemoryStore::save_turn`]). Its answer so far is not saved: the output processors
    /// that would check it before memory have not run.
    pub(crate) async fn save_paused_input(
        &self,
        cx: &crate::context::RequestContext,
        list: &crate::message::MessageList,
    ) -> Result<(), MemoryError> {
        self.save_of(cx, list, &[MessageSource::Input]).await
    }

    /// Saves the messages of `sources` of `list` as a turn of the context's thread.
    async fn save_of(
        &self,
        cx: &crate::context::RequestContext,
        list: &crate::message::MessageList,
        sources: &[MessageSource],
    ) -> Result<(), MemoryError> {
        let (Some(thread_id), Some(resource_id)) = (cx.thread_id(), cx.resource_id()) else {
            return Ok(());
        };
        let now = crate::message::now_millis();
        let thread = match self.owned_thread(thread_id, resource_id).await? {
            Some(mut t) => {
                t.updated_at = now;
                t
            }
            None => Thread {
                id: thread_id.to_owned(),
                resource_id: resource_id.to_owned(),
                title: None,
                created_at: now,
                updated_at: now,
                metadata: None,
            },
        };
        let turn: Vec<Message> = sources
            .iter()
            .flat_map(|source| list.view(*source))
            .map(|m| {
                let mut m = m.clone();
                m.thread_id = Some(thread_id.to_owned());
                m.resource_id = Some(resource_id.to_owned());
                m
            })
            .collect();
        self.store.save_turn(thread, turn).await
    }
}

/// The window without tool results whose calls fell out of it: a window of recent messages
/// may begin with one, and providers refuse a prompt that does.
fn pair_safe(mut history: Vec<Message>) -> Vec<Message> {
    let orphans = history
        .iter()
        .take_while(|m| m.role == crate::message::Role::Tool)
        .count();
    history.drain(..orphans);
    history
}

#[diagnostic::do_not_recommend]
impl InputProcessor for Memory {}
#[diagnostic::do_not_recommend]
impl OutputProcessor for Memory {}

impl crate::processor::known::Known for Memory {
    const HOOKS: Hooks = <Memory as Processor>::HOOKS;
    const STATIC_ID: Option<&'static str> = <Memory as Processor>::STATIC_ID;
}
