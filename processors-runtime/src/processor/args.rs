//! What each hook receives and what it may return.

use super::Abort;
use super::report::Reporter;
use super::table::for_each_hook;
use crate::chunk::{Chunk, ChunkKind, DataWriter, FinishReason, Usage};
use crate::context::RequestContext;
use crate::message::{Message, MessageList, ToolCall};
use crate::model::{ApiError, LanguageModel, ModelRequest, ModelSettings, ToolChoice};
use crate::step::{RunSummary, StepResult};
use crate::tool::Tool;
use serde_json::Value;
use std::sync::Arc;

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
    /// Whether it overrides nothing.
    pub fn is_empty(&self) -> bool {
        self.model.is_none()
            && self.tools.is_none()
            && self.tool_choice.is_none()
            && self.active_tools.is_none()
            && self.messages.is_none()
            && self.system_messages.is_none()
            && self.provider_options.is_none()
            && self.model_settings.is_none()
    }

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
    /// Send this request instead: its prompt, tools, tool choice, provider options and
    /// sampling settings (for this call only; never persisted). For what a prompt cannot
    /// change, such as a setting a model refuses.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::model::ModelSettings;
    /// use processors_runtime::prelude::*;
    ///
    /// let no_temperature = llm_request_fn("no-temperature", |a: &mut LlmRequestArgs<'_, ()>| {
    ///     let mut request = a.request.clone();
    ///     request.settings.temperature = None;
    ///     LlmRequestAction::Request(Box::new(request))
    /// });
    /// let model = ScriptedModel::new([Turn::text("Hi.")]);
    /// let settings = ModelSettings { temperature: Some(0.2), ..ModelSettings::default() };
    /// let agent = Agent::builder()
    ///     .model(model.clone())
    ///     .model_settings(settings)
    ///     .input(no_temperature)
    ///     .build()
    ///     .unwrap();
    /// agent.generate("hi").await.unwrap();
    /// assert_eq!(model.requests()[0].settings.temperature, None);
    /// # });
    /// ```
    Request(Box<crate::model::ModelRequest>),
    /// Do not call the model: use this response.
    Respond(LlmResponse),
}

impl From<()> for LlmRequestAction {
    fn from(_: ()) -> Self {
        LlmRequestAction::Continue
    }
}

/// What `process_output_stream` returns for a chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum StreamAction {
    /// Pass the chunk on unchanged.
    #[default]
    Pass,
    /// Pass this chunk on instead.
    Replace(Chunk),
    /// Drop this chunk (only this one). A processor that holds chunks back (to redact across
    /// deltas, or to batch them) drops them here and emits them later with
    /// [`Many`](StreamAction::Many), at the latest on the `text-end` or `step-finish` that ends
    /// what it holds.
    Drop,
    /// Pass these chunks on instead, in order: zero (like `Drop`), one, or several. Each goes
    /// through the processors after this one, the first at once and the others after it.
    Many(Vec<Chunk>),
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

impl From<Vec<Chunk>> for StreamAction {
    fn from(chunks: Vec<Chunk>) -> Self {
        StreamAction::Many(chunks)
    }
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

/// What `process_tool_call` returns for a call the model made.
///
/// The processors of the list see the call in order, each as the ones before it left it; any
/// outcome but `Continue` and `Rewrite` decides the call, and the processors after it are not
/// asked. A processor stops the run (or, with `retry`, asks for the step again with feedback)
/// by returning an [`Abort`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum ToolCallAction {
    /// Let the call run as it is.
    #[default]
    Continue,
    /// Run the call with these arguments instead: the rewritten call is what runs, what the
    /// processors after this one see, and what the step and the history record.
    Rewrite(Value),
    /// Do not run the tool: this is its result, as the model reads it.
    Respond(Value),
    /// Do not run the tool: the model reads this as the tool's error, and the loop goes on.
    Refuse(String),
    /// Do not run the tool until a person approves the call: the run pauses (see
    /// `Agent::resume`). Made with [`ToolCallAction::approval`].
    RequireApproval {
        /// Why, for whoever decides.
        reason: String,
        /// The processor that asked, when it is not the one returning this: a workflow
        /// passes on the decision of a processor inside it. `None`: the one returning it.
        asked_by: Option<String>,
    },
}

impl ToolCallAction {
    /// Asks a person to approve the call first, saying why.
    pub fn approval(reason: impl Into<String>) -> Self {
        ToolCallAction::RequireApproval {
            reason: reason.into(),
            asked_by: None,
        }
    }

    /// Whether the action decides the call (the processors after it are not asked).
    pub fn decides(&self) -> bool {
        !matches!(self, ToolCallAction::Continue | ToolCallAction::Rewrite(_))
    }
}

impl From<()> for ToolCallAction {
    fn from(_: ()) -> Self {
        ToolCallAction::Continue
    }
}

/// What `process_tool_result` returns for a tool's result.
///
/// The history keeps a tool's result and the model reads it; a processor may change both
/// ([`Replace`](ToolResultAction::Replace)) or only what the model reads
/// ([`ForModel`](ToolResultAction::ForModel)), as for a large result the model needs only a
/// part of.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum ToolResultAction {
    /// Nothing changes.
    #[default]
    Keep,
    /// This is the result now, kept and read by the model. A copy for the model that an
    /// earlier processor set is dropped: it was made from the result this one replaces.
    Replace(Value),
    /// The model reads this; the history keeps the result as it is
    /// ([`ToolResult::model_output`](crate::message::ToolResult::model_output)).
    ForModel(Value),
    /// Both: this is the result now, and the model reads `for_model` instead.
    ReplaceWithCopy {
        /// The result, as kept.
        result: Value,
        /// What the model reads.
        for_model: Value,
    },
}

impl From<()> for ToolResultAction {
    fn from(_: ()) -> Self {
        ToolResultAction::Keep
    }
}

impl From<Option<Value>> for ToolResultAction {
    fn from(v: Option<Value>) -> Self {
        v.map_or(ToolResultAction::Keep, ToolResultAction::Replace)
    }
}

impl From<Value> for ToolResultAction {
    fn from(v: Value) -> Self {
        ToolResultAction::Replace(v)
    }
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

/// Generates each hook's argument struct from the hook table.
macro_rules! args_types {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty, context: $context:ident,
            doc: $doc:literal,
            example: $example:literal,
            fields { $( $(#[$fdoc:meta])* $f:ident : $fty:ty, )* }
            message: $message:literal, note: $note:literal,
            provide { $( $pty:ty => |$p:ident| $e:expr; )* }
        }
    )*) => { $(
        #[doc = $doc]
        #[doc = ""]
        #[doc = "# Example"]
        #[doc = ""]
        #[doc = $example]
        #[non_exhaustive]
        pub struct $args<$a, S: ?Sized> {
            $( $(#[$fdoc])* pub $f: $fty, )*
            /// This processor's state for the request.
            pub state: &$a mut S,
            /// Where the warnings of processors run inside this one go.
            pub(crate) report: &$a Reporter,
        }

        impl<$a, S: ?Sized> $args<$a, S> {
            /// Starts an abort; return it as `Err(args.abort().reason("…").into())`.
            pub fn abort(&self) -> Abort {
                Abort::new()
            }

            /// The same arguments with the state seen through `f` (`None` when it fails).
            #[doc(hidden)]
            pub fn __map_state<T: ?Sized>(
                self,
                f: impl FnOnce(&$a mut S) -> Option<&$a mut T>,
            ) -> Option<$args<$a, T>> {
                Some($args { state: f(self.state)?, report: self.report, $($f: self.$f),* })
            }
        }
    )* };
}

for_each_hook!(args_types);
