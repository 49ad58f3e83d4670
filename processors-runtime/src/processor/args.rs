//! What each hook receives and what it may return.

use crate::agent::{RunSummary, StepResult, ToolCallInfo};
use crate::chunk::{Chunk, ChunkKind, FinishReason};
use crate::context::RequestContext;
use crate::message::{Message, MessageList};
use crate::model::{ApiError, LanguageModel, ModelRequest, ModelSettings, ToolChoice};
use crate::tool::Tool;
use crate::tripwire::Abort;
use serde_json::Value;
use std::sync::Arc;

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
    /// A writer into the same stream, for a nested call.
    pub(crate) fn reborrow(&mut self) -> DataWriter<'_> {
        DataWriter {
            buf: &mut *self.buf,
        }
    }

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

macro_rules! abort_method {
    () => {
        /// Starts an abort; return it as `Err(args.abort().reason("…").into())`.
        pub fn abort(&self) -> Abort {
            Abort::new()
        }
    };
}

/// Arguments of `process_input`.
#[non_exhaustive]
pub struct InputArgs<'a, S: ?Sized> {
    /// The new input messages of this run (a copy; return it changed to change the list).
    pub messages: Vec<Message>,
    /// The untagged system messages (the agent's instructions).
    pub system_messages: Vec<Message>,
    /// The run's message list, for direct edits.
    pub message_list: &'a mut MessageList,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
    /// Consecutive processor retries so far (0 for `process_input`).
    pub retry_count: u32,
}

impl<S: ?Sized> InputArgs<'_, S> {
    abort_method!();
}

/// What `process_input` returns.
#[derive(Debug, Clone, Default)]
pub enum InputOutcome {
    /// Nothing changes.
    #[default]
    Unchanged,
    /// These are the input messages now (reconciled by id with the list).
    Messages(Vec<Message>),
    /// These are the input messages and the untagged system messages now.
    MessagesAndSystem {
        /// The input messages.
        messages: Vec<Message>,
        /// The untagged system messages.
        system: Vec<Message>,
    },
}

impl From<()> for InputOutcome {
    fn from(_: ()) -> Self {
        InputOutcome::Unchanged
    }
}

impl From<Vec<Message>> for InputOutcome {
    fn from(m: Vec<Message>) -> Self {
        InputOutcome::Messages(m)
    }
}

/// The settings of the step about to run, as earlier processors left them.
#[derive(Clone)]
pub struct StepConfig {
    /// The model to call.
    pub model: Arc<dyn LanguageModel>,
    /// The tools offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// How the model may use tools.
    pub tool_choice: ToolChoice,
    /// When set, only these tools (by name) are offered.
    pub active_tools: Option<Vec<String>>,
    /// Provider-specific options, passed through.
    pub provider_options: Value,
    /// Sampling settings.
    pub model_settings: ModelSettings,
}

impl std::fmt::Debug for StepConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepConfig")
            .field("model", &self.model.model_id())
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("tool_choice", &self.tool_choice)
            .field("active_tools", &self.active_tools)
            .field("provider_options", &self.provider_options)
            .field("model_settings", &self.model_settings)
            .finish()
    }
}

/// Arguments of `process_input_step`.
#[non_exhaustive]
pub struct InputStepArgs<'a, S: ?Sized> {
    /// The step about to run, from 0.
    pub step_number: u32,
    /// The steps finished so far.
    pub steps: &'a [StepResult],
    /// Every non-system message of the conversation (a copy).
    pub messages: Vec<Message>,
    /// The system messages the step will send (untagged, then tagged).
    pub system_messages: Vec<Message>,
    /// The step's settings as the earlier processors left them.
    pub config: &'a StepConfig,
    /// The run's message list, for direct edits.
    pub message_list: &'a mut MessageList,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
    /// Consecutive processor retries so far.
    pub retry_count: u32,
}

impl<S: ?Sized> InputStepArgs<'_, S> {
    abort_method!();
}

/// What `process_input_step` returns: each field set overrides that setting for this step.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct StepOverrides {
    /// Use this model.
    pub model: Option<Arc<dyn LanguageModel>>,
    /// Offer exactly these tools.
    pub tools: Option<Vec<Arc<dyn Tool>>>,
    /// Use this tool choice.
    pub tool_choice: Option<ToolChoice>,
    /// Offer only these tools (by name).
    pub active_tools: Option<Vec<String>>,
    /// These are the non-system messages now (reconciled by id).
    pub messages: Option<Vec<Message>>,
    /// These are the untagged system messages for this step.
    pub system_messages: Option<Vec<Message>>,
    /// Use these provider options.
    pub provider_options: Option<Value>,
    /// Use these sampling settings.
    pub model_settings: Option<ModelSettings>,
}

impl StepOverrides {
    /// Changes nothing.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the model.
    pub fn model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.model = Some(model);
        self
    }
    /// Sets the tools.
    pub fn tools(mut self, tools: Vec<Arc<dyn Tool>>) -> Self {
        self.tools = Some(tools);
        self
    }
    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }
    /// Sets the active tools.
    pub fn active_tools<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.active_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }
    /// Sets the messages.
    pub fn messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = Some(messages);
        self
    }
    /// Sets the untagged system messages.
    pub fn system_messages(mut self, messages: Vec<Message>) -> Self {
        self.system_messages = Some(messages);
        self
    }
    /// Sets the provider options.
    pub fn provider_options(mut self, options: Value) -> Self {
        self.provider_options = Some(options);
        self
    }
    /// Sets the model settings.
    pub fn model_settings(mut self, settings: ModelSettings) -> Self {
        self.model_settings = Some(settings);
        self
    }
}

impl From<()> for StepOverrides {
    fn from(_: ()) -> Self {
        StepOverrides::default()
    }
}

/// Arguments of `process_llm_request`.
#[non_exhaustive]
pub struct LlmRequestArgs<'a, S: ?Sized> {
    /// The step, from 0.
    pub step_number: u32,
    /// The request about to be sent (possibly rewritten by earlier processors).
    pub request: &'a ModelRequest,
    /// The model it goes to.
    pub model: &'a dyn LanguageModel,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
}

impl<S: ?Sized> LlmRequestArgs<'_, S> {
    abort_method!();
}

/// A complete model response, as a cache replays it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmResponse {
    /// The model chunks, in order (ending with a `finish`).
    pub chunks: Vec<ChunkKind>,
}

/// What `process_llm_request` returns.
#[derive(Debug, Clone, Default)]
pub enum LlmRequestAction {
    /// Send the request as it is.
    #[default]
    Continue,
    /// Send this prompt instead (for this call only; never persisted).
    Prompt(Vec<Message>),
    /// Do not call the model: use this response.
    Respond(LlmResponse),
}

impl From<()> for LlmRequestAction {
    fn from(_: ()) -> Self {
        LlmRequestAction::Continue
    }
}

/// Arguments of `process_llm_response`.
#[non_exhaustive]
pub struct LlmResponseArgs<'a, S: ?Sized> {
    /// The step, from 0.
    pub step_number: u32,
    /// The request that was sent (or answered from cache).
    pub request: &'a ModelRequest,
    /// The model chunks of the step, as the model produced them.
    pub response: &'a LlmResponse,
    /// The chunks of the step as they reached the client, after the stream processors (model
    /// chunks again: the step's finish as `finish`). A response cache stores these, so that a
    /// replay, which skips the stream processors, streams what they let through.
    pub delivered: &'a LlmResponse,
    /// Whether the response was replayed by a `process_llm_request` processor.
    pub from_cache: bool,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
}

/// Arguments of `process_output_stream`.
#[non_exhaustive]
pub struct OutputStreamArgs<'a, S: ?Sized> {
    /// The chunk.
    pub chunk: &'a Chunk,
    /// The chunks this processor received before, when it keeps a stream history.
    pub stream_history: &'a [Chunk],
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The run's message list (read-only while streaming).
    pub message_list: &'a MessageList,
    /// The request's context.
    pub request_context: &'a RequestContext,
    /// Consecutive processor retries so far.
    pub retry_count: u32,
    /// Emits `data-*` chunks after this one.
    pub writer: DataWriter<'a>,
}

impl<S: ?Sized> OutputStreamArgs<'_, S> {
    abort_method!();
}

/// What `process_output_stream` returns for a chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum StreamAction {
    /// Pass the chunk on unchanged.
    #[default]
    Pass,
    /// Pass this chunk on instead.
    Replace(Chunk),
    /// Drop this chunk (only this one).
    Drop,
}

impl From<Chunk> for StreamAction {
    fn from(c: Chunk) -> Self {
        StreamAction::Replace(c)
    }
}

impl From<Option<Chunk>> for StreamAction {
    fn from(c: Option<Chunk>) -> Self {
        c.map_or(StreamAction::Drop, StreamAction::Replace)
    }
}

impl From<()> for StreamAction {
    fn from(_: ()) -> Self {
        StreamAction::Pass
    }
}

/// Arguments of `process_output_step`.
#[non_exhaustive]
pub struct OutputStepArgs<'a, S: ?Sized> {
    /// The step, from 0.
    pub step_number: u32,
    /// The messages this step added (a copy; return it changed to change the list).
    pub messages: Vec<Message>,
    /// The step's text, as streamed.
    pub text: &'a str,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// The tool calls the model asked for.
    pub tool_calls: &'a [ToolCallInfo],
    /// The steps finished before this one.
    pub steps: &'a [StepResult],
    /// The system messages the step was sent.
    pub system_messages: Vec<Message>,
    /// The run's message list.
    pub message_list: &'a mut MessageList,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
    /// Consecutive processor retries so far.
    pub retry_count: u32,
}

impl<S: ?Sized> OutputStepArgs<'_, S> {
    abort_method!();
}

/// What `process_output_step` and `process_output_result` return.
#[derive(Debug, Clone, Default)]
pub enum OutputOutcome {
    /// Nothing changes.
    #[default]
    Unchanged,
    /// These are the response messages now (reconciled by id with the list).
    Messages(Vec<Message>),
}

impl From<()> for OutputOutcome {
    fn from(_: ()) -> Self {
        OutputOutcome::Unchanged
    }
}

impl From<Vec<Message>> for OutputOutcome {
    fn from(m: Vec<Message>) -> Self {
        OutputOutcome::Messages(m)
    }
}

/// Arguments of `process_tool_result`.
#[non_exhaustive]
pub struct ToolResultArgs<'a, S: ?Sized> {
    /// The call.
    pub tool_call: &'a ToolCallInfo,
    /// The tool's result (as earlier processors left it).
    pub result: &'a Value,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
}

impl<S: ?Sized> ToolResultArgs<'_, S> {
    abort_method!();
}

/// Arguments of `process_output_result`.
#[non_exhaustive]
pub struct OutputResultArgs<'a, S: ?Sized> {
    /// The response messages of the run (a copy; return it changed to change the list).
    pub messages: Vec<Message>,
    /// Text, usage, finish reason and steps of the run.
    pub result: &'a RunSummary,
    /// The run's message list.
    pub message_list: &'a mut MessageList,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
    /// Consecutive processor retries so far.
    pub retry_count: u32,
}

impl<S: ?Sized> OutputResultArgs<'_, S> {
    abort_method!();
}

/// Arguments of `process_api_error`.
#[non_exhaustive]
pub struct ApiErrorArgs<'a, S: ?Sized> {
    /// The provider's error.
    pub error: &'a ApiError,
    /// The step, from 0.
    pub step_number: u32,
    /// The steps finished so far.
    pub steps: &'a [StepResult],
    /// The run's message list: mutate it, then ask for a retry.
    pub message_list: &'a mut MessageList,
    /// This processor's state for the request.
    pub state: &'a mut S,
    /// The request's context.
    pub request_context: &'a RequestContext,
    /// API-error retries of this step so far.
    pub retry_count: u32,
}

impl<S: ?Sized> ApiErrorArgs<'_, S> {
    abort_method!();
}

/// What `process_api_error` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApiErrorAction {
    /// This processor does not handle the error.
    #[default]
    Unhandled,
    /// Call the model again (the processor fixed the list).
    Retry,
}

impl From<()> for ApiErrorAction {
    fn from(_: ()) -> Self {
        ApiErrorAction::Unhandled
    }
}

macro_rules! retype {
    ($ty:ident { $($field:ident),* }) => {
        impl<'a, S: ?Sized> $ty<'a, S> {
            #[doc(hidden)]
            pub fn __map_state<T: ?Sized>(
                self,
                f: impl FnOnce(&'a mut S) -> Option<&'a mut T>,
            ) -> Option<$ty<'a, T>> {
                Some($ty { state: f(self.state)?, $($field: self.$field),* })
            }
        }
    };
}

retype!(InputArgs {
    messages,
    system_messages,
    message_list,
    request_context,
    retry_count
});
retype!(InputStepArgs {
    step_number,
    steps,
    messages,
    system_messages,
    config,
    message_list,
    request_context,
    retry_count
});
retype!(LlmRequestArgs {
    step_number,
    request,
    model,
    request_context
});
retype!(LlmResponseArgs {
    step_number,
    request,
    response,
    delivered,
    from_cache,
    request_context
});
retype!(OutputStreamArgs {
    chunk,
    stream_history,
    message_list,
    request_context,
    retry_count,
    writer
});
retype!(OutputStepArgs {
    step_number,
    messages,
    text,
    finish_reason,
    tool_calls,
    steps,
    system_messages,
    message_list,
    request_context,
    retry_count
});
retype!(ToolResultArgs {
    tool_call,
    result,
    request_context
});
retype!(OutputResultArgs {
    messages,
    result,
    message_list,
    request_context,
    retry_count
});
retype!(ApiErrorArgs {
    error,
    step_number,
    steps,
    message_list,
    request_context,
    retry_count
});
