//! Stream items: what a model emits and what an agent's stream yields.

use crate::message::{ToolCall, ToolResult};
use crate::tripwire::TripWire;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;

/// Why a step or a run finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The model hit its output token limit.
    Length,
    /// The model asked for tool calls.
    ToolCalls,
    /// The provider filtered the content.
    ContentFilter,
    /// The run failed.
    Error,
    /// A processor rejected the step (a step's reason only).
    Tripwire,
    /// The step is tried again: a processor rejected its answer and asked for another, or an
    /// error processor asked to call the model again (a step's reason only).
    Retry,
    /// Anything else; a run ended by a tripwire finishes with this.
    Other,
    /// The run paused: a tool call waits for a person's approval (a run's reason only; see
    /// `Agent::resume`).
    AwaitingApproval,
}

impl FinishReason {
    /// Its name on the wire: `stop`, `tool-calls`, …
    pub const fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool-calls",
            FinishReason::ContentFilter => "content-filter",
            FinishReason::Error => "error",
            FinishReason::Tripwire => "tripwire",
            FinishReason::Retry => "retry",
            FinishReason::Other => "other",
            FinishReason::AwaitingApproval => "awaiting-approval",
        }
    }
}

/// Token usage of a call or a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
}

impl Usage {
    /// The usage of `input_tokens` prompt and `output_tokens` completion tokens.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
            total_tokens: input_tokens.saturating_add(output_tokens),
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        // Providers report these numbers: never overflow on a bogus one.
        self.input_tokens = self.input_tokens.saturating_add(rhs.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(rhs.output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(rhs.total_tokens);
    }
}

/// Who emitted a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ChunkFrom {
    /// The agent loop (the usual case).
    Agent,
    /// A workflow of processors.
    Workflow,
    /// The user.
    User,
    /// The framework itself.
    System,
}

/// Why a step is tried again, as its `step-finish` chunk says (field names as Mastra's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRetry {
    /// The reason the processor gave (or the provider's error message).
    #[serde(rename = "retryReason")]
    pub reason: String,
    /// The metadata the processor attached.
    #[serde(
        rename = "retryMetadata",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub metadata: Option<Value>,
    /// The processor that asked for the retry.
    #[serde(rename = "retryProcessorId")]
    pub processor_id: String,
    /// Consecutive retries, this one included.
    #[serde(rename = "processorRetryCount")]
    pub retry_count: u32,
    /// The feedback the next attempt carries (none for a provider-error retry).
    #[serde(
        rename = "processorRetryFeedback",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub feedback: Option<String>,
}

/// What a chunk carries; its serde tag is the chunk's `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "kebab-case")]
#[serde(rename_all_fields = "camelCase")]
pub enum ChunkKind {
    /// The run started.
    Start,
    /// A step (one model call) started.
    StepStart {
        /// The step's number, from 0.
        step_number: u32,
    },
    /// A text block starts.
    TextStart {
        /// The block's id.
        id: Arc<str>,
    },
    /// A piece of text.
    TextDelta {
        /// The block's id.
        id: Arc<str>,
        /// The text.
        text: String,
    },
    /// A text block ends.
    TextEnd {
        /// The block's id.
        id: Arc<str>,
    },
    /// A reasoning block starts.
    ReasoningStart {
        /// The block's id.
        id: Arc<str>,
    },
    /// A piece of reasoning.
    ReasoningDelta {
        /// The block's id.
        id: Arc<str>,
        /// The text.
        text: String,
    },
    /// A reasoning block ends.
    ReasoningEnd {
        /// The block's id.
        id: Arc<str>,
    },
    /// A piece of a tool call's arguments, as the model streams them.
    ToolCallDelta {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The next piece of the JSON arguments.
        args_text_delta: String,
    },
    /// A complete tool call.
    ToolCall(ToolCall),
    /// A tool's result (boxed: chunks stay small on the per-chunk path).
    ToolResult(Box<ToolResult>),
    /// A tool failed.
    ToolError {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// What went wrong.
        error: String,
    },
    /// A step finished (the model's own `finish` becomes this), after its output-step
    /// processors and its tools.
    StepFinish {
        /// Why.
        finish_reason: FinishReason,
        /// The step's usage.
        usage: Usage,
        /// Whether another step follows (tool calls to answer, or a retry).
        is_continued: bool,
        /// Why the step is tried again, when it is (boxed: chunks stay small on the
        /// per-chunk path).
        #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
        retry: Option<Box<StepRetry>>,
    },
    /// The run finished (from a model: its call finished).
    Finish {
        /// Why.
        finish_reason: FinishReason,
        /// Usage of the call (model) or the run (agent).
        usage: Usage,
    },
    /// The run failed.
    Error {
        /// What went wrong.
        message: String,
    },
    /// A processor aborted the run.
    Tripwire(TripWire),
    /// A tool call waits for a person's approval: the run pauses after this (its `finish`
    /// says `awaiting-approval`) until `Agent::resume` continues it.
    ToolApprovalRequest(Box<ApprovalRequest>),
    /// A call a person approved runs now, in the resumed run (with the arguments it was
    /// approved with): before its data chunks and its `tool-result` or `tool-error`, so a
    /// client tells a resumed call from a new one.
    ToolCallResumed(Box<ToolCall>),
    /// A custom `data-<name>` chunk.
    Data {
        /// The name after `data-`.
        name: String,
        /// The payload.
        data: Value,
        /// Transient data streams but is not persisted.
        transient: bool,
    },
}

impl ChunkKind {
    /// The chunk's `type` tag (`text-delta`, `data-progress`, …).
    pub fn type_name(&self) -> std::borrow::Cow<'static, str> {
        use std::borrow::Cow::Borrowed;
        match self {
            ChunkKind::Start => Borrowed("start"),
            ChunkKind::StepStart { .. } => Borrowed("step-start"),
            ChunkKind::TextStart { .. } => Borrowed("text-start"),
            ChunkKind::TextDelta { .. } => Borrowed("text-delta"),
            ChunkKind::TextEnd { .. } => Borrowed("text-end"),
            ChunkKind::ReasoningStart { .. } => Borrowed("reasoning-start"),
            ChunkKind::ReasoningDelta { .. } => Borrowed("reasoning-delta"),
            ChunkKind::ReasoningEnd { .. } => Borrowed("reasoning-end"),
            ChunkKind::ToolCallDelta { .. } => Borrowed("tool-call-delta"),
            ChunkKind::ToolCall(_) => Borrowed("tool-call"),
            ChunkKind::ToolResult(_) => Borrowed("tool-result"),
            ChunkKind::ToolError { .. } => Borrowed("tool-error"),
            ChunkKind::StepFinish { .. } => Borrowed("step-finish"),
            ChunkKind::Finish { .. } => Borrowed("finish"),
            ChunkKind::Error { .. } => Borrowed("error"),
            ChunkKind::Tripwire(_) => Borrowed("tripwire"),
            ChunkKind::ToolApprovalRequest(_) => Borrowed("tool-approval-request"),
            ChunkKind::ToolCallResumed(_) => Borrowed("tool-call-resumed"),
            ChunkKind::Data { name, .. } => std::borrow::Cow::Owned(format!("data-{name}")),
        }
    }
}

/// The id of a run, as every chunk carries it.
///
/// Ids up to 23 bytes (the ones agents generate) are kept inline, so a chunk copies its run
/// id without an allocation or an atomic reference count; longer ones are shared.
///
/// ```
/// use processors_runtime::chunk::RunId;
/// let id = RunId::from("run-1");
/// assert_eq!(&*id, "run-1");
/// assert_eq!(id.to_string(), "run-1");
/// let long = RunId::from("a-run-id-that-is-longer-than-twenty-three-bytes");
/// assert_eq!(long.len(), 47);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RunId(RunIdRepr);

const INLINE_ID: usize = 23;

/// Four words: which variant, then either the id's bytes or the shared id. Each chunk copies
/// it, and a copy moves whole words (an inline id whose length and bytes sat beside a one-byte
/// variant was copied as pieces of 1 to 8 bytes, then read back as words, each read waiting
/// for the writes before it). It pays together with a chunk made where it waits for the
/// consumer (`Outbox::stage`), and not alone: BENCHMARKS.md, "Round 9".
#[derive(Clone, PartialEq, Eq, Hash)]
#[repr(u64)]
enum RunIdRepr {
    /// The id's bytes, zero-padded, then its length.
    Inline([u8; INLINE_ID + 1]),
    Shared(Arc<str>),
}

const _: () = assert!(std::mem::size_of::<RunId>() == 32);

impl RunId {
    /// Whether the id is kept inline (no allocation).
    #[cfg(test)]
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self.0, RunIdRepr::Inline(_))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Built from a `&str`, cut at its end: always valid UTF-8.
            RunIdRepr::Inline(bytes) => {
                let len = usize::from(bytes[INLINE_ID]).min(INLINE_ID);
                std::str::from_utf8(&bytes[..len]).unwrap_or_default()
            }
            RunIdRepr::Shared(s) => s,
        }
    }
}

impl From<&str> for RunId {
    fn from(s: &str) -> Self {
        if s.len() <= INLINE_ID {
            let mut bytes = [0u8; INLINE_ID + 1];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            bytes[INLINE_ID] = s.len() as u8;
            RunId(RunIdRepr::Inline(bytes))
        } else {
            RunId(RunIdRepr::Shared(Arc::from(s)))
        }
    }
}

impl From<String> for RunId {
    fn from(s: String) -> Self {
        RunId::from(s.as_str())
    }
}

impl std::ops::Deref for RunId {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for RunId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(RunId::from(String::deserialize(d)?))
    }
}

/// One item of an agent's stream.
///
/// Serialised as `{"type": …, "runId": …, "from": "AGENT", "payload": {…}}`.
///
/// ```
/// use processors_runtime::chunk::{Chunk, ChunkKind};
/// let c = Chunk::new("run-1".into(), ChunkKind::TextDelta { id: "t".into(), text: "hi".into() });
/// let json = serde_json::to_value(&c).unwrap();
/// assert_eq!(json["type"], "text-delta");
/// assert_eq!(json["payload"]["text"], "hi");
/// let back: Chunk = serde_json::from_value(json).unwrap();
/// assert_eq!(back, c);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// The run that emitted it.
    pub run_id: RunId,
    /// Who emitted it.
    pub from: ChunkFrom,
    /// What it carries.
    pub kind: ChunkKind,
}

impl Chunk {
    /// A chunk from the agent.
    pub fn new(run_id: RunId, kind: ChunkKind) -> Self {
        Chunk {
            run_id,
            from: ChunkFrom::Agent,
            kind,
        }
    }

    /// The text of a text delta.
    pub fn text_delta(&self) -> Option<&str> {
        match &self.kind {
            ChunkKind::TextDelta { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The same chunk with a text delta's text changed (other chunks are returned unchanged).
    pub fn map_text(mut self, f: impl FnOnce(&str) -> String) -> Self {
        if let ChunkKind::TextDelta { text, .. } = &mut self.kind {
            *text = f(text);
        }
        self
    }

    /// Whether this is a custom `data-*` chunk.
    pub fn is_data(&self) -> bool {
        matches!(self.kind, ChunkKind::Data { .. })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DataPayload {
    data: Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    transient: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a, T> {
    run_id: &'a str,
    from: ChunkFrom,
    #[serde(flatten)]
    body: T,
}

#[derive(Serialize)]
struct DataBody {
    #[serde(rename = "type")]
    ty: String,
    payload: DataPayload,
}

impl Serialize for Chunk {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let ChunkKind::Data {
            name,
            data,
            transient,
        } = &self.kind
        {
            return Envelope {
                run_id: self.run_id.as_str(),
                from: self.from,
                body: DataBody {
                    ty: format!("data-{name}"),
                    payload: DataPayload {
                        data: data.clone(),
                        transient: *transient,
                    },
                },
            }
            .serialize(s);
        }
        Envelope {
            run_id: self.run_id.as_str(),
            from: self.from,
            body: &self.kind,
        }
        .serialize(s)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawChunk {
    #[serde(rename = "type")]
    ty: String,
    run_id: RunId,
    #[serde(default = "agent")]
    from: ChunkFrom,
    #[serde(default)]
    payload: Value,
}

fn agent() -> ChunkFrom {
    ChunkFrom::Agent
}

impl<'de> Deserialize<'de> for Chunk {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawChunk::deserialize(d)?;
        let kind = if let Some(name) = raw.ty.strip_prefix("data-") {
            let p: DataPayload = serde_json::from_value(raw.payload).map_err(D::Error::custom)?;
            ChunkKind::Data {
                name: name.to_owned(),
                data: p.data,
                transient: p.transient,
            }
        } else {
            let mut obj = serde_json::Map::new();
            obj.insert("type".into(), Value::String(raw.ty));
            if !raw.payload.is_null() {
                obj.insert("payload".into(), raw.payload);
            }
            serde_json::from_value(Value::Object(obj)).map_err(D::Error::custom)?
        };
        Ok(Chunk {
            run_id: raw.run_id,
            from: raw.from,
            kind,
        })
    }
}

/// Emits custom `data-*` chunks into the agent's stream.
///
/// Data chunks go through the output stream processors that opt in (`process_data_parts`),
/// starting after the writer; non-transient ones that reach the client are saved as data parts
/// of the response (with the step's answer, or with the tool results they followed).
#[derive(Debug)]
pub struct DataWriter<'a> {
    pub(crate) buf: &'a mut Vec<ChunkKind>,
}

impl DataWriter<'_> {
    /// Emits a `data-<name>` chunk that is persisted with the response.
    pub fn write(&mut self, name: impl Into<String>, data: Value) {
        self.buf.push(ChunkKind::Data {
            name: name.into(),
            data,
            transient: false,
        });
    }

    /// Emits a `data-<name>` chunk that streams but is not persisted.
    pub fn write_transient(&mut self, name: impl Into<String>, data: Value) {
        self.buf.push(ChunkKind::Data {
            name: name.into(),
            data,
            transient: true,
        });
    }
}

/// A tool call that waits for a person's approval: the payload of a `tool-approval-request`
/// chunk and an entry of [`GenerateResult::pending_approvals`](crate::GenerateResult).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The paused run, to resume with [`Approval::new`](crate::agent::Approval::new).
    pub run_id: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The tool it calls.
    pub tool_name: String,
    /// Its arguments, as the processors left them.
    pub args: Value,
    /// The processor that asked for the approval.
    pub processor_id: String,
    /// Why it asked.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_inline_up_to_23_bytes_and_read_back_whole_either_way() {
        let ids = [
            String::new(),
            "r".to_owned(),
            "run-0123456789abcdefgh".to_owned(),
            "x".repeat(INLINE_ID),
            "y".repeat(INLINE_ID + 1),
            format!("{}x", "é".repeat(11)),
            "é".repeat(12),
            "é".repeat(20),
        ];
        for id in &ids {
            let run_id = RunId::from(id.as_str());
            assert_eq!(run_id.is_inline(), id.len() <= INLINE_ID, "{id:?}");
            assert_eq!(run_id.as_str(), id);
            let copy = run_id.clone();
            assert_eq!(copy, run_id);
            assert_eq!(copy.as_str(), id);
            let json = serde_json::to_string(&run_id).unwrap();
            assert_eq!(serde_json::from_str::<RunId>(&json).unwrap(), run_id);
        }
    }

    #[test]
    fn equal_run_ids_hash_alike_and_differing_ones_differ() {
        use std::collections::HashSet;
        let set: HashSet<RunId> = ["run-1", "run-1", "run-2", &"z".repeat(40), &"z".repeat(40)]
            .into_iter()
            .map(RunId::from)
            .collect();
        assert_eq!(set.len(), 3);
        assert_ne!(RunId::from("run-1"), RunId::from("run-12"));
        assert_ne!(RunId::from(""), RunId::from("\0"));
    }

    #[test]
    fn a_finish_reasons_name_is_its_wire_name() {
        for reason in [
            FinishReason::Stop,
            FinishReason::Length,
            FinishReason::ToolCalls,
            FinishReason::ContentFilter,
            FinishReason::Error,
            FinishReason::Tripwire,
            FinishReason::Retry,
            FinishReason::Other,
        ] {
            let wire = serde_json::to_value(reason).unwrap();
            assert_eq!(wire.as_str(), Some(reason.as_str()));
        }
    }
}
