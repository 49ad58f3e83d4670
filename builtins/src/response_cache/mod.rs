//! [`ResponseCache`]: answers a model call that was made before from a cache, skipping the
//! model, and stores what the client got.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::response_cache::{InMemoryCache, ResponseCache};
//! use processors::prelude::*;
//!
//! let cache = ResponseCache::new(InMemoryCache::new());
//! let model = ScriptedModel::new([Turn::text("Paris.")]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(cache.clone()) // looks the call up
//!     .output(cache) // stores the answer once the run succeeded
//!     .build()?;
//! assert_eq!(agent.generate("Capital of France?").await?.text, "Paris.");
//! assert_eq!(agent.generate("Capital of France?").await?.text, "Paris.");
//! assert_eq!(model.calls(), 1, "the second answer came from the cache");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Where it goes
//!
//! In both lists, as one processor (clones share their configuration): in `input` it looks
//! each model call up in `process_llm_request`, after the input processors before it have
//! shaped the prompt (put it last); in `output` it keeps each step's answer
//! (`process_llm_response`) and writes the answers of accepted steps once the run has
//! succeeded (`process_output_result`). A run that ends in a trip wire or fails writes
//! nothing, and neither does a step a processor rejected, so a bad answer is never replayed.
//!
//! # The key
//!
//! SHA-256 of what changes the model's answer at this step: the step number (each step of a
//! tool loop is cached on its own), the model's provider and id, the prompt as it is about to
//! be sent (after memory and the input processors; each message's role and parts, not its id
//! or time, which differ in every run), the tools offered, the tool choice, the
//! sampling settings and the provider options, plus the scope and the cache's
//! [`namespace`](ResponseCache::namespace), and the [`KeyParts`] processors before it put in
//! the request context. The scope is the request's resource id unless set: two tenants never
//! share an entry.
//!
//! A processor that changes the prompt in a way the key cannot see adds a part: the
//! [`Anonymizer`](crate::Anonymizer) adds a digest of the values it replaced, so that two
//! requests whose prompts read alike (`Reply to [EMAIL_1]`) but whose values differ never
//! share an answer, which holds the values as their caller got them.
//!
//! # Per call
//!
//! A [`CacheControl`] in the request context overrides the key or the scope, sets the time to
//! live, or busts the entry (skips the lookup and writes the new answer):
//!
//! ```
//! use processors::builtins::response_cache::CacheControl;
//! use processors::prelude::*;
//! let cx = RequestContext::new().with(CacheControl::new().bust(true));
//! ```
//!
//! # What a hit replays
//!
//! The chunks the client got the first time, after the stream processors: text that an
//! output processor redacted is stored redacted, and a hit streams it as it was (stream
//! processors do not run on replayed chunks). `generate()` and `stream()` replay alike.
//!
//! # When the cache fails
//!
//! A backend that errors (Redis down, a corrupt entry) is a miss with a warning
//! (`on_violation` hears it); a failed write is a warning too. The run never fails for it.

mod memory;
#[cfg(feature = "redis")]
mod redis;

pub use memory::InMemoryCache;
#[cfg(feature = "redis")]
pub use redis::{RedisCache, RedisCacheBuilder};

use futures::future::BoxFuture;
use processors_macros::processor;
use processors_runtime::chunk::{ChunkKind, FinishReason};
use processors_runtime::context::RequestContext;
use processors_runtime::model::{LanguageModel, ModelRequest};
use processors_runtime::processor::{LlmRequestAction, LlmResponse};
use processors_runtime::step::RunSummary;
use processors_runtime::{Abort, BoxError, ProcessorError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What a cache backend fails with.
pub type CacheError = BoxError;

/// Where [`ResponseCache`] keeps its entries: any key-value store with expiry.
pub trait Cache: Send + Sync + 'static {
    /// The value under `key`, unless missing or expired.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>>;
    /// Stores `value` under `key`, for `ttl` (or until evicted, with `None`).
    fn set<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>>;
}

/// Per-call settings of [`ResponseCache`], put in the request context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheControl {
    key: Option<String>,
    scope: Option<String>,
    bust: bool,
    ttl: Option<Duration>,
    skip: bool,
}

impl CacheControl {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses this key instead of the derived one (each step appends its number).
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Uses this scope instead of the request's resource id (`"global"` shares entries
    /// between every resource: only for answers that are the same for everyone).
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Skips the lookup and stores the new answer (a "refresh" button).
    pub fn bust(mut self, bust: bool) -> Self {
        self.bust = bust;
        self
    }

    /// Keeps the new answer this long instead of the cache's time to live.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Neither looks up nor stores anything for this call.
    pub fn skip(mut self, skip: bool) -> Self {
        self.skip = skip;
        self
    }
}

/// What processors add to the cache's key for a request, by processor id: what they changed
/// in the prompt that the prompt no longer shows (see [the module](self#the-key)).
///
/// ```
/// use processors::builtins::response_cache::KeyParts;
/// use processors::prelude::*;
///
/// let mut cx = RequestContext::new();
/// KeyParts::add(&mut cx, "my-processor", "v2");
/// assert_eq!(cx.get::<KeyParts>().unwrap().get("my-processor"), Some("v2"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyParts(std::collections::BTreeMap<String, String>);

impl KeyParts {
    /// Sets the part of processor `id` in the request context `cx`.
    pub fn add(cx: &mut RequestContext, id: &str, part: impl Into<String>) {
        let mut parts = cx.get::<KeyParts>().cloned().unwrap_or_default();
        parts.0.insert(id.to_owned(), part.into());
        cx.insert(parts);
    }

    /// The part of processor `id`.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.0.get(id).map(String::as_str)
    }
}

/// Answers a model call from a cache when the same call was answered before; see
/// [the module](self).
#[derive(Clone)]
pub struct ResponseCache {
    inner: Arc<Inner>,
}

struct Inner {
    cache: Arc<dyn Cache>,
    ttl: Option<Duration>,
    namespace: String,
}

impl fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseCache")
            .field("ttl", &self.inner.ttl)
            .field("namespace", &self.inner.namespace)
            .finish_non_exhaustive()
    }
}

/// The per-request state of a [`ResponseCache`]: the key of each step looked up, and the
/// answers waiting for the run to succeed.
#[derive(Default)]
pub struct ResponseCacheState {
    /// Per step: its key and time to live, when the step is to be stored.
    keys: BTreeMap<u32, (String, Option<Duration>)>,
    /// Per step: the answer to store once the run succeeded.
    pending: BTreeMap<u32, Vec<ChunkKind>>,
    hits: u32,
    misses: u32,
}

impl ResponseCacheState {
    /// How many model calls of this request the cache answered.
    pub fn hits(&self) -> u32 {
        self.hits
    }

    /// How many it looked up and did not find.
    pub fn misses(&self) -> u32 {
        self.misses
    }
}

impl fmt::Debug for ResponseCacheState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseCacheState")
            .field("hits", &self.hits)
            .field("misses", &self.misses)
            .field("pending", &self.pending.len())
            .finish()
    }
}

/// A stored answer.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// The format's version.
    v: u32,
    chunks: Vec<ChunkKind>,
}

const ENTRY_VERSION: u32 = 1;

impl ResponseCache {
    /// A response cache over `cache`, entries kept until the backend evicts them.
    pub fn new(cache: impl Cache) -> Self {
        Self::shared(Arc::new(cache))
    }

    /// A response cache over a shared backend.
    pub fn shared(cache: Arc<dyn Cache>) -> Self {
        ResponseCache {
            inner: Arc::new(Inner {
                cache,
                ttl: None,
                namespace: String::new(),
            }),
        }
    }

    /// How long entries live (default: until the backend evicts them).
    pub fn ttl(self, ttl: Duration) -> Self {
        self.with(|i| i.ttl = Some(ttl))
    }

    /// Keeps this agent's entries apart from other agents' on a shared backend (part of every
    /// key; the agent's name is a good choice).
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        self.with(|i| i.namespace = namespace)
    }

    fn with(self, f: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            cache: Arc::clone(&self.inner.cache),
            ttl: self.inner.ttl,
            namespace: self.inner.namespace.clone(),
        };
        f(&mut inner);
        ResponseCache {
            inner: Arc::new(inner),
        }
    }

    /// The key of a call.
    fn key(
        &self,
        control: Option<&CacheControl>,
        cx: &RequestContext,
        step: u32,
        request: &ModelRequest,
        model: &dyn LanguageModel,
    ) -> String {
        let scope = control
            .and_then(|c| c.scope.as_deref())
            .or(cx.resource_id())
            .unwrap_or("");
        // The processors' parts come last; without any, the key is what it always was.
        let parts = cx.get::<KeyParts>().filter(|p| !p.0.is_empty());
        let with_parts = |mut key: Value| {
            if let (Some(parts), Some(items)) = (parts, key.as_array_mut()) {
                items.push(json!(parts.0));
            }
            hashed(&key)
        };
        if let Some(key) = control.and_then(|c| c.key.as_deref()) {
            return with_parts(json!(["key", self.inner.namespace, scope, key, step]));
        }
        // A message's id and time differ in every run: the prompt is keyed by what the model
        // reads of it, each message's role and parts.
        let prompt: Vec<_> = request
            .prompt
            .iter()
            .map(|m| json!([m.role, m.content]))
            .collect();
        with_parts(json!([
            "request",
            self.inner.namespace,
            scope,
            step,
            model.provider(),
            model.model_id(),
            prompt,
            request.tools,
            request.tool_choice,
            request.settings,
            request.provider_options,
        ]))
    }
}

/// The cache key of a JSON value: `processors:response:` and its SHA-256, in hex.
fn hashed(value: &serde_json::Value) -> String {
    use std::fmt::Write;
    let digest = Sha256::digest(value.to_string().as_bytes());
    let mut key = String::with_capacity(20 + 64);
    key.push_str("processors:response:");
    for b in digest {
        let _ = write!(key, "{b:02x}");
    }
    key
}

/// A warning that the cache failed; the run goes on.
fn outage(what: &str, e: &dyn std::error::Error) -> ProcessorError {
    Abort::new()
        .reason(format!("the response cache failed to {what}: {e}"))
        .warn()
}

#[processor(crate = processors_runtime, id = "response-cache")]
impl ResponseCache {
    /// Looks the call up; a hit answers it.
    async fn process_llm_request(
        &self,
        step: processors_runtime::processor::extract::StepNumber,
        request: &ModelRequest,
        model: &dyn LanguageModel,
        cx: &RequestContext,
        state: &mut ResponseCacheState,
    ) -> Result<LlmRequestAction, ProcessorError> {
        let control = cx.get::<CacheControl>();
        if control.is_some_and(|c| c.skip) {
            return Ok(LlmRequestAction::Continue);
        }
        let step = step.0;
        let key = self.key(control, cx, step, request, model);
        let ttl = control.and_then(|c| c.ttl).or(self.inner.ttl);
        state.keys.insert(step, (key.clone(), ttl));
        if control.is_some_and(|c| c.bust) {
            return Ok(LlmRequestAction::Continue);
        }
        let found = match self.inner.cache.get(&key).await {
            Ok(found) => found,
            Err(e) => return Err(outage("look the call up", &*e)),
        };
        let Some(bytes) = found else {
            state.misses += 1;
            return Ok(LlmRequestAction::Continue);
        };
        match serde_json::from_slice::<Entry>(&bytes) {
            Ok(entry) if entry.v == ENTRY_VERSION && finished(&entry.chunks) => {
                state.hits += 1;
                // Replayed: nothing to store for this step.
                state.keys.remove(&step);
                Ok(LlmRequestAction::Respond(LlmResponse {
                    chunks: entry.chunks,
                }))
            }
            Ok(_) => {
                state.misses += 1;
                Ok(LlmRequestAction::Continue)
            }
            Err(e) => {
                state.misses += 1;
                Err(outage("read an entry", &e))
            }
        }
    }

    /// Keeps the step's answer, as the client got it, until the run succeeds.
    fn process_llm_response(
        &self,
        step: processors_runtime::processor::extract::StepNumber,
        delivered: processors_runtime::processor::extract::Delivered<'_>,
        from_cache: processors_runtime::processor::extract::FromCache,
        state: &mut ResponseCacheState,
    ) {
        if from_cache.0 || !state.keys.contains_key(&step.0) || !finished(&delivered.0.chunks) {
            return;
        }
        state.pending.insert(step.0, delivered.0.chunks.clone());
    }

    /// Stores the answers of the steps that were accepted.
    async fn process_output_result(
        &self,
        result: &RunSummary,
        state: &mut ResponseCacheState,
    ) -> Result<(), ProcessorError> {
        let pending = std::mem::take(&mut state.pending);
        let mut failed = None;
        for (step, chunks) in pending {
            let accepted = result.steps.iter().any(|s| {
                s.step_number == step
                    && s.tripwire.is_none()
                    && !matches!(
                        s.finish_reason,
                        FinishReason::Retry | FinishReason::Tripwire | FinishReason::Error
                    )
            });
            let Some((key, ttl)) = state.keys.get(&step).filter(|_| accepted) else {
                continue;
            };
            let entry = Entry {
                v: ENTRY_VERSION,
                chunks,
            };
            let bytes =
                serde_json::to_vec(&entry).map_err(|e| ProcessorError::Failed(Box::new(e)))?;
            if let Err(e) = self.inner.cache.set(key, bytes, *ttl).await {
                failed.get_or_insert(e);
            }
        }
        match failed {
            Some(e) => Err(outage("store an answer", &*e)),
            None => Ok(()),
        }
    }
}

/// Whether an answer ended with a `finish` that is not an error.
fn finished(chunks: &[ChunkKind]) -> bool {
    matches!(
        chunks.last(),
        Some(ChunkKind::Finish { finish_reason, .. }) if *finish_reason != FinishReason::Error
    )
}
