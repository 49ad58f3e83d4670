//! [`ChatRecording`]: each run's input, model calls, steps and final messages, recorded to a
//! [`RecordingSink`] (a JSON-lines file, the memory store, or a list in memory); and [`Recording::replay`],
//! which feeds a recorded run through another pipeline with the model's recorded answers (no
//! model call) and reports what the new processors changed.
//!
//! This is how a new guard is tried on yesterday's traffic: record the runs in production,
//! then replay each recording through an agent with the new guard, and read the changes.
//!
//! # Recording
//!
//! Put the recorder in `output`, where it sees each model call (`process_llm_response`: the
//! request as sent and the model's chunks as it produced them) and the end of the run
//! (`process_output_result`), when it writes the [`Recording`]. Put the same recorder first in
//! `input` too (after memory) to record the input as the caller gave it, and memory's
//! history; in `output` alone the input is recorded as the input processors left it
//! ([`Recording::input_as_given`] says which). A run that ends in a trip wire, or fails,
//! writes no recording. A recording that cannot be written is a warning (handed to
//! `on_violation`), never the run's failure.
//!
//! # Replaying
//!
//! An agent built with a [`ReplayModel`] and the recordings' tools
//! ([`Recording::tools_of`]) replays any recording: [`Recording::replay`] runs the recorded
//! history and input through it, with no thread (memory neither loads nor saves), the model
//! answering each call with the recorded answer of the call made as far into its run (so a
//! retry or a cached answer shifts nothing) and each tool with its recorded result. [`Replay::changes`] lists what differs from the recording: what the model
//! was sent, the answer's text, the tool calls, a trip wire, the number of calls.
//!
//! The replayed run has no memory of its own: memory's recorded history comes in before the
//! recorded input, as input messages, so an input processor that reads every input message
//! (not only the newest) sees the history as input, and memory's own processors
//! (`ChatCompression`, `SemanticRecall`, `WorkingMemory`) see no thread. Tools are never run
//! again: a call the recording has no result for is the tool's error, and the results are
//! replayed as the recorded run's tool-result processors left them. A processor that picks
//! another model for a step (`ModelSelection`) calls that model. A run paused for approval
//! and resumed is recorded from its resume.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::chat_recording::{Change, ChatRecording, Recording, Recordings, ReplayModel};
//! use processors::builtins::RegexFilter;
//! use processors::builtins::regex_filter::Preset;
//! use processors::prelude::*;
//!
//! // Yesterday: an agent that records.
//! let recordings = Recordings::new();
//! let recorder = ChatRecording::new(recordings.clone());
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([Turn::text("Your card 4111 1111 1111 1111 is on file.")]))
//!     .input(recorder.clone())
//!     .output(recorder)
//!     .build()?;
//! agent.generate("Which card do you have?").await?;
//!
//! // Today: the same traffic through a pipeline with a new guard.
//! let guarded = Agent::builder()
//!     .model(ReplayModel::new())
//!     .output(RegexFilter::builder().preset(Preset::Pii).build()?)
//!     .build()?;
//! let recording: Recording = recordings.all().remove(0);
//! let replay = recording.replay(&guarded).await?;
//! assert!(matches!(&replay.changes[0], Change::Text { replayed, .. } if !replayed.contains("4111")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use futures::future::BoxFuture;
use processors_macros::processor;
use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
use processors_runtime::context::RequestContext;
use processors_runtime::memory::{Memory, MemoryStore, WorkingMemoryScope, working_memory_key};
use processors_runtime::message::{Message, MessageList, ToolCall, new_id, now_millis};
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest, ModelStream};
use processors_runtime::processor::Abort;
use processors_runtime::processor::Pipeline;
use processors_runtime::processor::extract::{FromCache, StepNumber};
use processors_runtime::processor::{LlmResponse, ProcessorError};
use processors_runtime::step::{RunSummary, StepResult};
use processors_runtime::tool::{Tool, ToolContext};
use processors_runtime::tripwire::TripWire;
use processors_runtime::{Agent, AgentError, BoxError, GenerateOptions, GenerateResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// One recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recording {
    /// The recording's own id.
    pub id: String,
    /// When the run ended, in milliseconds since the Unix epoch.
    pub recorded_at: u64,
    /// The run's thread, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The run's resource, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// What memory loaded before the input (empty without memory, or when the recorder was
    /// not in `input`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// The run's input.
    pub input: Vec<Message>,
    /// Whether [`input`](Self::input) is as the caller gave it (the recorder was in `input`
    /// before the processors that change it), or as the input processors left it.
    pub input_as_given: bool,
    /// Each model call: the request as sent and the model's answer.
    pub calls: Vec<RecordedCall>,
    /// Every step, rejected ones included.
    pub steps: Vec<StepResult>,
    /// The conversation at the end of the run, as the output processors left it.
    pub messages: Vec<Message>,
    /// The answer's text.
    pub text: String,
    /// The run's usage.
    pub usage: Usage,
    /// Why the run finished.
    pub finish_reason: FinishReason,
}

/// One model call of a recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedCall {
    /// The step it was made in.
    pub step_number: u32,
    /// The request as the model received it.
    pub request: ModelRequest,
    /// The model's chunks, as it produced them.
    pub response: Vec<ChunkKind>,
    /// Whether the answer came from a cache, not the model.
    pub from_cache: bool,
}

/// Where recordings go.
pub trait RecordingSink: Send + Sync + 'static {
    /// Keeps one recording.
    fn record<'a>(&'a self, recording: &'a Recording) -> BoxFuture<'a, Result<(), BoxError>>;
}

/// Recordings kept in memory, shared by its clones: for tests, and for replaying in the same
/// process.
#[derive(Debug, Clone, Default)]
pub struct Recordings(Arc<Mutex<Vec<Recording>>>);

impl Recordings {
    /// None yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every recording so far, oldest first.
    pub fn all(&self) -> Vec<Recording> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl RecordingSink for Recordings {
    fn record<'a>(&'a self, recording: &'a Recording) -> BoxFuture<'a, Result<(), BoxError>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(recording.clone());
        Box::pin(async { Ok(()) })
    }
}

/// Recordings kept in a memory store (the agent's, say), per thread: as JSON lines under the
/// key `recordings:` and the thread's working-memory key
/// ([`working_memory_key`]) in the store's
/// key-value space, where working memory is kept, so every store that keeps working memory
/// (`InMemoryStore`, `SqliteStore`, `PostgresStore`) keeps recordings. The newest
/// [`keep`](StoreRecordings::keep) recordings of a thread are kept (100 by default); a run
/// without a thread and resource is not recorded (a warning says so). Writes of one
/// `StoreRecordings` (and its clones) to one thread are made one at a time.
#[derive(Clone)]
pub struct StoreRecordings {
    store: Arc<dyn MemoryStore>,
    keep: usize,
    lock: Arc<futures::lock::Mutex<()>>,
}

impl fmt::Debug for StoreRecordings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreRecordings")
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

impl StoreRecordings {
    /// Recordings in `memory`'s store.
    pub fn new(memory: &Memory) -> Self {
        Self::shared(memory.store().clone())
    }

    /// Recordings in `store`.
    pub fn shared(store: Arc<dyn MemoryStore>) -> Self {
        StoreRecordings {
            store,
            keep: 100,
            lock: Arc::default(),
        }
    }

    /// How many recordings of a thread are kept, the newest (at least 1).
    #[must_use]
    pub fn keep(mut self, recordings: usize) -> Self {
        self.keep = recordings.max(1);
        self
    }

    /// The key of a thread's recordings.
    fn key(resource_id: &str, thread_id: &str) -> String {
        format!(
            "recordings:{}",
            working_memory_key(WorkingMemoryScope::Thread, resource_id, thread_id)
        )
    }

    /// The recordings of a thread, oldest first.
    pub async fn read(
        &self,
        resource_id: &str,
        thread_id: &str,
    ) -> Result<Vec<Recording>, BoxError> {
        let key = Self::key(resource_id, thread_id);
        let text = self
            .store
            .get_working_memory(&key)
            .await?
            .unwrap_or_default();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(n, l)| {
                serde_json::from_str(l).map_err(|e| {
                    format!("recording {} of the thread is not a recording ({e})", n + 1).into()
                })
            })
            .collect()
    }
}

impl RecordingSink for StoreRecordings {
    fn record<'a>(&'a self, recording: &'a Recording) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let (Some(thread), Some(resource)) = (&recording.thread_id, &recording.resource_id)
            else {
                return Err(
                    "the run has no thread and resource, so the memory store has no place for it"
                        .into(),
                );
            };
            let key = Self::key(resource, thread);
            let line = serde_json::to_string(recording)?;
            let _one_at_a_time = self.lock.lock().await;
            let old = self
                .store
                .get_working_memory(&key)
                .await?
                .unwrap_or_default();
            let mut lines: Vec<&str> = old.lines().filter(|l| !l.trim().is_empty()).collect();
            lines.push(&line);
            let skip = lines.len().saturating_sub(self.keep);
            let mut text = lines[skip..].join("\n");
            text.push('\n');
            self.store.set_working_memory(&key, text).await?;
            Ok(())
        })
    }
}

/// Recordings appended to a file, one JSON object per line; [`JsonLines::read`] reads them
/// back. Each run's line is written whole, in one write under a lock of the file's path, so
/// the lines of concurrent runs of the process never interleave, whichever recorder writes
/// them. The write is made on the calling thread: a line per run.
#[derive(Debug, Clone)]
pub struct JsonLines {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// The lock of each path written to.
static LOCKS: Mutex<BTreeMap<PathBuf, Arc<Mutex<()>>>> = Mutex::new(BTreeMap::new());

impl JsonLines {
    /// Appends to `path` (created at the first recording).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let lock = LOCKS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(path.clone())
            .or_default()
            .clone();
        JsonLines { path, lock }
    }

    /// The recordings of a file, in order. A line that is not a recording is an error naming
    /// its number.
    ///
    /// ```
    /// use processors::builtins::chat_recording::JsonLines;
    /// let dir = std::env::temp_dir().join(format!("jsonl-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("bad.jsonl");
    /// std::fs::write(&path, "{\"not\": \"a recording\"}\n").unwrap();
    /// let error = JsonLines::read(&path).unwrap_err();
    /// assert!(error.to_string().contains("line 1"), "{error}");
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<Vec<Recording>, BoxError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path)
            .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
        let mut out = Vec::new();
        for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let recording = serde_json::from_str(&line)
                .map_err(|e| format!("{} line {}: not a recording ({e})", path.display(), n + 1))?;
            out.push(recording);
        }
        Ok(out)
    }
}

impl RecordingSink for JsonLines {
    fn record<'a>(&'a self, recording: &'a Recording) -> BoxFuture<'a, Result<(), BoxError>> {
        let written = (|| -> Result<(), BoxError> {
            let mut line = serde_json::to_vec(recording)?;
            line.push(b'\n');
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| format!("{} cannot be opened: {e}", self.path.display()))?;
            file.write_all(&line)
                .map_err(|e| format!("{} cannot be written: {e}", self.path.display()))?;
            Ok(())
        })();
        Box::pin(async move { written })
    }
}

/// Records each run to a [`RecordingSink`]; see the [module docs](self).
#[derive(Clone)]
pub struct ChatRecording {
    sink: Arc<dyn RecordingSink>,
}

impl fmt::Debug for ChatRecording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatRecording").finish_non_exhaustive()
    }
}

/// The per-request state of a [`ChatRecording`]: the model calls so far, by recorder (two
/// recorders of one agent share the state of their id, each keeps its own calls).
#[derive(Debug, Default)]
pub struct ChatRecordingState {
    calls: Vec<(usize, RecordedCall)>,
}

/// What the recorder in `input` saw, for the recorder in `output`.
#[derive(Debug, Clone)]
struct Given {
    history: Vec<Message>,
    input: Vec<Message>,
}

impl ChatRecording {
    /// Records to `sink`.
    pub fn new(sink: impl RecordingSink) -> Self {
        ChatRecording {
            sink: Arc::new(sink),
        }
    }

    /// Records to a JSON-lines file ([`JsonLines`]).
    pub fn to_file(path: impl Into<PathBuf>) -> Self {
        Self::new(JsonLines::new(path))
    }

    /// This recorder's key in the shared state: its sink's address.
    fn key(&self) -> usize {
        Arc::as_ptr(&self.sink).cast::<()>() as usize
    }
}

#[processor(crate = processors_runtime, id = "chat-recording")]
impl ChatRecording {
    fn process_input(&self, list: &MessageList, cx: &mut RequestContext) {
        if cx.get::<Given>().is_none() {
            cx.insert(Given {
                history: list.remembered().cloned().collect(),
                input: list.input().cloned().collect(),
            });
        }
    }

    fn process_llm_response(
        &self,
        step: StepNumber,
        request: &ModelRequest,
        response: &LlmResponse,
        from_cache: FromCache,
        state: &mut ChatRecordingState,
    ) {
        let call = RecordedCall {
            step_number: step.0,
            request: request.clone(),
            response: response.chunks.clone(),
            from_cache: from_cache.0,
        };
        state.calls.push((self.key(), call));
    }

    async fn process_output_result(
        &self,
        list: &MessageList,
        summary: &RunSummary,
        cx: &RequestContext,
        state: &mut ChatRecordingState,
    ) -> Result<(), ProcessorError> {
        let given = cx.get::<Given>().cloned();
        let input_as_given = given.is_some();
        let (history, input) = match given {
            Some(g) => (g.history, g.input),
            None => (
                list.remembered().cloned().collect(),
                list.input().cloned().collect(),
            ),
        };
        let key = self.key();
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut state.calls)
            .into_iter()
            .partition(|(k, _)| *k == key);
        state.calls = others;
        let recording = Recording {
            id: new_id("rec"),
            recorded_at: now_millis(),
            thread_id: cx.thread_id().map(str::to_owned),
            resource_id: cx.resource_id().map(str::to_owned),
            history,
            input,
            input_as_given,
            calls: mine.into_iter().map(|(_, call)| call).collect(),
            steps: summary.steps.clone(),
            messages: list.to_prompt(),
            text: summary.text.to_string(),
            usage: summary.usage,
            finish_reason: summary.finish_reason,
        };
        if let Err(e) = self.sink.record(&recording).await {
            let reason = format!("the run could not be recorded: {e}");
            cx.report_warning(Abort::new().reason(reason).into_tripwire("chat-recording"));
        }
        Ok(())
    }
}

/// The recording a replay runs, for the [`ReplayModel`] and the replay tools, and what the
/// replay asked of them.
#[derive(Debug, Clone)]
struct Replaying {
    recording: Arc<Recording>,
    asked: Arc<Mutex<Asked>>,
}

/// What a replay asked for so far.
#[derive(Debug, Default)]
struct Asked {
    /// The conversation length of the replay's first call.
    base: Option<usize>,
    /// Each call: its request, and the recorded call that answered it (`None`: none could).
    calls: Vec<(ModelRequest, Option<usize>)>,
    /// How many results each tool call id was given.
    results: BTreeMap<String, usize>,
}

/// The number of non-system messages of a prompt.
fn conversation_len(prompt: &[Message]) -> usize {
    prompt
        .iter()
        .filter(|m| m.role != processors_runtime::message::Role::System)
        .count()
}

impl Replaying {
    /// The recorded call that answers a request whose conversation is `len` messages long:
    /// one made as far into its run (as many messages past the run's first call), the first
    /// of those not yet given, or the last of them again (a retry gets the answer its step
    /// got). `None` when the recording has none so far in.
    fn answer_for(&self, asked: &mut Asked, len: usize) -> Option<usize> {
        let base = *asked.base.get_or_insert(len);
        let calls = &self.recording.calls;
        let first = calls
            .first()
            .map_or(0, |c| conversation_len(&c.request.prompt));
        let at = |i: usize| conversation_len(&calls[i].request.prompt) as i64 - first as i64;
        let want = len as i64 - base as i64;
        let given: BTreeSet<usize> = asked.calls.iter().filter_map(|(_, i)| *i).collect();
        let matching: Vec<usize> = (0..calls.len()).filter(|&i| at(i) == want).collect();
        matching
            .iter()
            .copied()
            .find(|i| !given.contains(i))
            .or_else(|| matching.last().copied())
    }
}

/// A model that answers with the recorded answers of the run being replayed: the model of an
/// agent that replays recordings ([`Recording::replay`]). It never calls a provider.
///
/// A call gets the answer of the recorded call made as far into its run (as many messages
/// past the run's first call), so that a processor that adds or removes messages before the
/// first call, a retry (which gets its step's answer again) or a cached answer does not shift
/// the answers of the calls after it. A call the recording has no answer for gets an empty
/// answer, and the replay's [`changes`](Replay::changes) say so. Outside a replay it fails.
///
/// It is `replay/replay` unless it [imitates](ReplayModel::imitating) the recorded model,
/// for the processors that read the model's name (prices, tokenizers, provider rules).
#[derive(Debug, Clone)]
pub struct ReplayModel {
    provider: String,
    model_id: String,
}

impl Default for ReplayModel {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplayModel {
    /// The model, named `replay/replay`.
    pub fn new() -> Self {
        Self::imitating("replay", "replay")
    }

    /// The model, named as the recorded model was (`openai`, `gpt-4o-mini`).
    pub fn imitating(provider: impl Into<String>, model_id: impl Into<String>) -> Self {
        ReplayModel {
            provider: provider.into(),
            model_id: model_id.into(),
        }
    }
}

impl LanguageModel for ReplayModel {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn stream(&self, _: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        Box::pin(async {
            Err(ApiError::other(
                "a replay model answers only inside `Recording::replay`",
                false,
            ))
        })
    }

    fn stream_with_context(
        &self,
        request: ModelRequest,
        context: &RequestContext,
    ) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let Some(replaying) = context.get::<Replaying>().cloned() else {
            return self.stream(request);
        };
        Box::pin(async move {
            let len = conversation_len(&request.prompt);
            let answer = {
                let mut asked = replaying
                    .asked
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let answer = replaying.answer_for(&mut asked, len);
                asked.calls.push((request, answer));
                answer
            };
            let chunks: Vec<ChunkKind> = match answer {
                Some(i) => replaying.recording.calls[i].response.clone(),
                None => vec![ChunkKind::Finish {
                    finish_reason: FinishReason::Stop,
                    usage: Usage::default(),
                }],
            };
            let chunks: Vec<Result<ChunkKind, ApiError>> = chunks.into_iter().map(Ok).collect();
            Ok(Box::pin(futures::stream::iter(chunks)) as ModelStream)
        })
    }
}

/// A tool of a replaying agent: answers each call with the result recorded for its call id
/// (the n-th call of an id gets the n-th result recorded for it).
struct ReplayTool {
    name: String,
    description: String,
    parameters: Value,
}

impl Tool for ReplayTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn execute<'a>(
        &'a self,
        _args: Value,
        cx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        let found = match cx.request_context.get::<Replaying>() {
            None => Err(BoxError::from(
                "a replay tool answers only inside `Recording::replay`",
            )),
            Some(r) => {
                let nth = {
                    let mut asked = r.asked.lock().unwrap_or_else(PoisonError::into_inner);
                    let n = asked.results.entry(cx.tool_call_id.to_owned()).or_default();
                    *n += 1;
                    *n - 1
                };
                r.recording
                    .steps
                    .iter()
                    .flat_map(|s| &s.tool_results)
                    .filter(|t| t.tool_call_id == cx.tool_call_id && t.tool_name == self.name)
                    .nth(nth)
                    .map(|t| (t.result.clone(), t.is_error))
                    .ok_or_else(|| {
                        BoxError::from(format!(
                            "the recording has no result of `{}` for the call `{}`",
                            self.name, cx.tool_call_id
                        ))
                    })
            }
        };
        Box::pin(async move {
            match found? {
                (result, false) => Ok(result),
                (Value::String(error), true) => Err(error.into()),
                (error, true) => Err(error.to_string().into()),
            }
        })
    }
}

/// What a replay found different from the recording.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The model was sent another prompt in call `call` (from 0): the new input processors,
    /// or the new order, changed what it reads. Compared by role and content.
    Prompt {
        /// The call.
        call: usize,
        /// The recorded prompt.
        recorded: Vec<Message>,
        /// The replayed prompt.
        replayed: Vec<Message>,
    },
    /// The answer's text differs: an output processor changed it.
    Text {
        /// The recorded text.
        recorded: String,
        /// The replayed text.
        replayed: String,
    },
    /// The tool calls differ (by name and arguments).
    ToolCalls {
        /// The recorded calls.
        recorded: Vec<ToolCall>,
        /// The replayed calls.
        replayed: Vec<ToolCall>,
    },
    /// The replay ended in a trip wire: a new guard stopped the run.
    Blocked(TripWire),
    /// The replay made another number of model calls (a guard asked for a retry, or ended
    /// the run early).
    Calls {
        /// The recorded number.
        recorded: usize,
        /// The replayed number.
        replayed: usize,
    },
    /// The replay asked for an answer the recording does not have: call `call` (from 0) was
    /// further into its run than any recorded call, and got an empty answer.
    Unanswered {
        /// The call.
        call: usize,
    },
}

/// A replayed run: its result, and what differs from the recording.
#[derive(Debug)]
pub struct Replay {
    /// The replayed run's result.
    pub result: GenerateResult,
    /// What differs: the prompts and unanswered calls in the order of the calls, then the
    /// text, the tool calls, a trip wire and the number of calls; empty when nothing does.
    pub changes: Vec<Change>,
}

impl Recording {
    /// Replays the recording through `agent`, which must answer with a [`ReplayModel`] (and
    /// the recordings' tools, [`Recording::tools_of`], for runs that called tools): the
    /// recorded history and input go in as the run's input, with no thread, and each model
    /// call gets the recorded answer of the call made as far into its run. Fails as the agent
    /// does.
    pub async fn replay<I: Pipeline, O: Pipeline, E: Pipeline>(
        &self,
        agent: &Agent<I, O, E>,
    ) -> Result<Replay, AgentError> {
        let replaying = Replaying {
            recording: Arc::new(self.clone()),
            asked: Arc::default(),
        };
        let options =
            GenerateOptions::new().request_context(RequestContext::new().with(replaying.clone()));
        let input: Vec<Message> = self.history.iter().chain(&self.input).cloned().collect();
        let result = agent.generate_with(input, options).await?;
        let asked = std::mem::take(
            &mut *replaying
                .asked
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let changes = self.changes(&result, &asked.calls);
        Ok(Replay { result, changes })
    }

    /// The tools of an agent that replays `recordings`: one per tool name the recordings'
    /// calls offered, answering each call with the result recorded for its call id.
    pub fn tools_of(recordings: &[Recording]) -> Vec<Arc<dyn Tool>> {
        let mut specs = BTreeMap::new();
        for spec in recordings
            .iter()
            .flat_map(|r| &r.calls)
            .flat_map(|c| &c.request.tools)
        {
            specs
                .entry(spec.name.clone())
                .or_insert_with(|| spec.clone());
        }
        specs
            .into_values()
            .map(|s| {
                Arc::new(ReplayTool {
                    name: s.name,
                    description: s.description,
                    parameters: s.parameters,
                }) as Arc<dyn Tool>
            })
            .collect()
    }

    /// What the replayed `result` changed; `calls` are its model calls, each with the
    /// recorded call that answered it.
    fn changes(
        &self,
        result: &GenerateResult,
        calls: &[(ModelRequest, Option<usize>)],
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        for (call, (sent, answered_by)) in calls.iter().enumerate() {
            match answered_by {
                Some(i) if !same_messages(&self.calls[*i].request.prompt, &sent.prompt) => {
                    changes.push(Change::Prompt {
                        call,
                        recorded: self.calls[*i].request.prompt.clone(),
                        replayed: sent.prompt.clone(),
                    });
                }
                Some(_) => {}
                None => changes.push(Change::Unanswered { call }),
            }
        }
        // A run ended by a trip wire has no text and no tool calls: not changes of their own.
        if result.tripwire.is_none() {
            if *result.text != *self.text {
                changes.push(Change::Text {
                    recorded: self.text.clone(),
                    replayed: result.text.to_string(),
                });
            }
            let recorded: Vec<ToolCall> = self
                .steps
                .iter()
                .filter(|s| s.finish_reason != FinishReason::Retry && s.tripwire.is_none())
                .flat_map(|s| s.tool_calls.iter().cloned())
                .collect();
            let key = |c: &ToolCall| (c.tool_name.clone(), c.args.to_string());
            let sorted = |calls: &[ToolCall]| {
                let mut keys: Vec<_> = calls.iter().map(key).collect();
                keys.sort();
                keys
            };
            if sorted(&recorded) != sorted(&result.tool_calls) {
                changes.push(Change::ToolCalls {
                    recorded,
                    replayed: result.tool_calls.clone(),
                });
            }
        }
        if let Some(tripwire) = &result.tripwire {
            changes.push(Change::Blocked(tripwire.clone()));
        }
        if calls.len() != self.calls.len() {
            changes.push(Change::Calls {
                recorded: self.calls.len(),
                replayed: calls.len(),
            });
        }
        changes
    }
}

/// Whether two prompts say the same things (ids and times aside).
fn same_messages(a: &[Message], b: &[Message]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.role == y.role && x.content == y.content)
}
