//! What a hook call of a [`Harness`](super::Harness) comes to: the [`Report`], and what each
//! hook's report carries besides the list.

use crate::chunk::{Chunk, ChunkKind, FinishReason, Usage};
use crate::message::{Message, Text, ToolCall};
use crate::model::ModelRequest;
use crate::processor::{LlmResponse, ToolCallAction, Violation};
use crate::tripwire::TripWire;

/// What one hook call came to: what the hook did (`outcome`, one type per hook), the trip wire
/// when it aborted, the warnings it reported, and the message list after it.
///
/// A hook that failed or panicked is not a report but the call's error
/// ([`HookError`](crate::processor::HookError)), with the processor's id, the hook and the
/// message.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
/// use processors_runtime::testing::Harness;
///
/// let lower = input_fn("lower", |a: &mut InputArgs<'_, ()>| {
///     let mut m = a.messages[0].clone();
///     m.set_text(m.text().to_lowercase());
///     vec![m]
/// });
/// let mut h = Harness::new(lower).with_system("Be brief.");
/// let report = h.input("HELLO").await.unwrap();
/// assert_eq!(report.texts(), ["hello"]);
/// assert_eq!(report.system_texts(), ["Be brief."]);
/// assert!(report.tripwire.is_none() && report.warnings.is_empty());
/// # });
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Report<T> {
    /// What the hook did, as the run sees it once the dispatcher applied it: the list's
    /// messages for `process_input` (`()` here, the list is below), the step's settings for
    /// `process_input_step`, the request and any answer for `process_llm_request`, the step's
    /// messages for `process_output_step`, the chunks that came out for
    /// `process_output_stream`, the call and the action for `process_tool_call`, the result
    /// for `process_tool_result`, the run's summary for `process_output_result`, the action
    /// for `process_api_error`. After an abort, what it was before the hook.
    pub outcome: T,
    /// The trip wire, when the hook aborted: its reason, retry flag, metadata and the id of
    /// the processor that aborted (inside a workflow, the inner processor's).
    pub tripwire: Option<TripWire>,
    /// The warnings the hook reported (`abort.warn()`, or
    /// [`RequestContext::report_warning`](crate::context::RequestContext::report_warning)),
    /// as `on_violation` would see them.
    pub warnings: Vec<Violation>,
    /// The conversation after the hook, system messages apart, in order.
    pub messages: Vec<Message>,
    /// The system messages after the hook: the untagged ones, then the tagged ones.
    pub system_messages: Vec<Message>,
}

impl<T> Report<T> {
    /// The text of each message of the conversation after the hook, in order.
    pub fn texts(&self) -> Vec<String> {
        self.messages.iter().map(Message::text).collect()
    }

    /// The text of each system message after the hook.
    pub fn system_texts(&self) -> Vec<String> {
        self.system_messages.iter().map(Message::text).collect()
    }

    /// The reasons of the warnings, in the order they were reported.
    pub fn warning_reasons(&self) -> Vec<&str> {
        self.warnings.iter().map(|w| w.reason.as_str()).collect()
    }
}

impl Report<Streamed> {
    /// The text that came out: every text delta, in order, held-back text included.
    pub fn text(&self) -> String {
        self.outcome.text()
    }

    /// Each text delta that came out.
    pub fn deltas(&self) -> Vec<&str> {
        self.outcome.deltas()
    }

    /// Every chunk that came out, in order.
    pub fn chunks(&self) -> &[Chunk] {
        &self.outcome.chunks
    }
}

/// What came out of the stream chain ([`Harness::output_stream`](super::Harness::output_stream)):
/// every chunk that reached the client, in order, and the text that came out only once the
/// step or the run ended.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Streamed {
    /// Every chunk that came out, in order: those the processor let through or replaced,
    /// the several of a `StreamAction::Many`, the data chunks it wrote (each after the chunk
    /// its writer was on), the framing (`start`, `step-start`, `step-finish`, `finish`) when
    /// the harness sent it.
    pub chunks: Vec<Chunk>,
    /// The text that came out only on the step's `step-finish` or the run's `finish`: text
    /// the processor held back to the end (an agent keeps it with the answer it ends).
    pub released: String,
}

impl Streamed {
    /// The text that came out: every text delta, in order, held-back text included.
    pub fn text(&self) -> String {
        self.deltas().concat()
    }

    /// Each text delta that came out.
    pub fn deltas(&self) -> Vec<&str> {
        self.chunks.iter().filter_map(Chunk::text_delta).collect()
    }

    /// The type of each chunk that came out (`text-delta`, `step-finish`, `data-progress`, …).
    pub fn types(&self) -> Vec<String> {
        self.chunks
            .iter()
            .map(|c| c.kind.type_name().into_owned())
            .collect()
    }

    /// The finish reason of each `step-finish` and `finish` that came out, in order.
    pub fn finish_reasons(&self) -> Vec<FinishReason> {
        let reason = |c: &Chunk| match &c.kind {
            ChunkKind::StepFinish { finish_reason, .. }
            | ChunkKind::Finish { finish_reason, .. } => Some(*finish_reason),
            _ => None,
        };
        self.chunks.iter().filter_map(reason).collect()
    }
}

/// What `process_llm_request` came to
/// ([`Harness::llm_request`](super::Harness::llm_request)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Requested {
    /// The request as the model would be sent it: its prompt is the one a processor returned
    /// (for this call only), or the one it was given.
    pub request: ModelRequest,
    /// The response a processor returned instead of the call (a cache hit): the model would
    /// not be called.
    pub response: Option<LlmResponse>,
}

impl Requested {
    /// The text of each message of the prompt, system messages included.
    pub fn prompt_texts(&self) -> Vec<String> {
        self.request.prompt.iter().map(Message::text).collect()
    }
}

/// What `process_tool_call` came to ([`Harness::tool_call`](super::Harness::tool_call)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCalled {
    /// The call as it would run: with the arguments a processor rewrote it with.
    pub call: ToolCall,
    /// What the processor decided: `Continue`, `Rewrite` with the new arguments, or the
    /// decision it returned (`Respond`, `Refuse`, `RequireApproval`).
    pub action: ToolCallAction,
}

/// A model step's answer, for [`Harness::output_step`](super::Harness::output_step) and
/// [`Harness::add_answer`](super::Harness::add_answer): its text, and the tool calls, usage
/// and finish reason of the step (a text alone converts into one).
///
/// ```
/// use processors_runtime::chunk::Usage;
/// use processors_runtime::testing::Answer;
/// let answer = Answer::new("Let me look.")
///     .tool_call("call-1", "search", serde_json::json!({ "q": "rust" }))
///     .usage(Usage::new(120, 8));
/// # let _ = answer;
/// ```
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub(super) text: Text,
    pub(super) tool_calls: Vec<ToolCall>,
    pub(super) usage: Usage,
    pub(super) finish_reason: Option<FinishReason>,
}

impl Answer {
    /// An answer of `text`, which ends the step (finish reason `stop`).
    pub fn new(text: impl Into<Text>) -> Self {
        Answer {
            text: text.into(),
            ..Answer::default()
        }
    }

    /// The answer with a call of `tool_name`; a step with calls finishes with reason
    /// `tool-calls` unless [`finish_reason`](Answer::finish_reason) says otherwise.
    pub fn tool_call(
        mut self,
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        args: serde_json::Value,
    ) -> Self {
        self.tool_calls.push(ToolCall {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            args,
        });
        self
    }

    /// The step's token usage.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Why the step finished.
    pub fn finish_reason(mut self, reason: FinishReason) -> Self {
        self.finish_reason = Some(reason);
        self
    }

    /// Why the step finished: as set, else `tool-calls` with calls and `stop` without.
    pub(super) fn reason(&self) -> FinishReason {
        self.finish_reason
            .unwrap_or(match self.tool_calls.is_empty() {
                true => FinishReason::Stop,
                false => FinishReason::ToolCalls,
            })
    }
}

impl From<&str> for Answer {
    fn from(text: &str) -> Self {
        Answer::new(text)
    }
}

impl From<String> for Answer {
    fn from(text: String) -> Self {
        Answer::new(text)
    }
}

impl From<Text> for Answer {
    fn from(text: Text) -> Self {
        Answer::new(text)
    }
}
