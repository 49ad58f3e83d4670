//! A test kit for processors: one hook of one processor, called without an agent, and what it
//! did.
//!
//! A [`Harness`] holds one processor and what one request gives it: its state, a message
//! list, a request context, the step's settings. Each of its methods builds a hook's
//! arguments from what a test hands it (messages, text deltas or chunks, an answer, a tool
//! call or result, a provider error), runs the hook, and returns a [`Report`]: what the hook
//! came to, its trip wire if it aborted, the warnings it reported and the list after it. A
//! hook that fails or panics is the call's error ([`HookError`]), with its message.
//!
//! The harness calls the hook the way an agent does, through the runtime's own dispatcher and
//! stream chain: returned messages are reconciled with the list, warnings reported, panics
//! caught, aborts turned into trip wires, `data-*` chunks given only to a processor that opts
//! in, data a processor writes sent on after it. What a test sees is what an agent built
//! with [`Agent::builder`](crate::agent::Agent::builder) would do with the processor at that
//! hook (the agent's loop around the hooks, retries and memory, is not run). The hooks are
//! async: the harness works on any executor, `futures::executor::block_on` and
//! `#[tokio::test]` alike.
//!
//! # Input hooks
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_runtime::prelude::*;
//! use processors_runtime::testing::Harness;
//!
//! // `process_input`: returned messages replace the input by id.
//! let trim = input_fn("trim", |a: &mut InputArgs<'_, ()>| {
//!     let mut m = a.messages[0].clone();
//!     m.set_text(m.text().trim().to_owned());
//!     vec![m]
//! });
//! let report = Harness::new(trim).input("  hello  ").await.unwrap();
//! assert_eq!(report.texts(), ["hello"]);
//!
//! // `process_input_step`: the step's settings after the processor.
//! let no_tools = input_step_fn("no-tools", |_: &mut InputStepArgs<'_, ()>| {
//!     StepOverrides::new().tool_choice(ToolChoice::None)
//! });
//! let report = Harness::new(no_tools).input_step().await.unwrap();
//! assert_eq!(report.outcome.tool_choice, ToolChoice::None);
//!
//! // `process_llm_request`: the request as it would be sent.
//! let last_only = llm_request_fn("last-only", |a: &mut LlmRequestArgs<'_, ()>| {
//!     LlmRequestAction::Prompt(a.request.prompt.last().cloned().into_iter().collect())
//! });
//! let mut h = Harness::new(last_only).with_history([Message::user("earlier")]);
//! h.add_input("now");
//! let report = h.llm_request().await.unwrap();
//! assert_eq!(report.outcome.prompt_texts(), ["now"]);
//! // For this call only: the list keeps both.
//! assert_eq!(report.texts(), ["earlier", "now"]);
//! # });
//! ```
//!
//! # The stream
//!
//! [`output_stream`](Harness::output_stream) streams text deltas as a model step does
//! (`step-start`, `text-start`, the deltas, `text-end`), then ends the step and the run as an
//! agent does (`step-finish`, `finish`), so text a processor holds back and lets go at the
//! end comes out too; [`Streamed::released`] says which.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_runtime::prelude::*;
//! use processors_runtime::testing::Harness;
//!
//! /// Holds every delta back, and lets the whole text go when the step ends.
//! let hold = output_stream_fn("hold", |a: &mut OutputStreamArgs<'_, String>| {
//!     match &a.chunk.kind {
//!         ChunkKind::TextDelta { text, .. } => {
//!             a.state.push_str(text);
//!             StreamAction::Drop
//!         }
//!         ChunkKind::StepFinish { .. } if !a.state.is_empty() => {
//!             let delta = ChunkKind::TextDelta { id: "held".into(), text: std::mem::take(a.state) };
//!             StreamAction::Many(vec![Chunk::new(a.chunk.run_id.clone(), delta), a.chunk.clone()])
//!         }
//!         _ => StreamAction::Pass,
//!     }
//! });
//! let mut h = Harness::new(hold);
//! let report = h.output_stream(["Hel", "lo"]).await.unwrap();
//! assert_eq!(report.text(), "Hello");
//! assert_eq!(report.outcome.released, "Hello");
//! assert_eq!(report.deltas(), ["Hello"]);
//! assert!(h.state().is_empty());
//! # });
//! ```
//!
//! [`output_stream_chunks`](Harness::output_stream_chunks) takes the model's chunks
//! themselves (tool calls, reasoning, data), framed the same way, and
//! [`output_stream_raw`](Harness::output_stream_raw) sends exactly the chunks it is given.
//!
//! # The model's response
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_runtime::prelude::*;
//! use processors_runtime::testing::Harness;
//!
//! // `process_llm_response`: the request an agent would send now, and the response to it.
//! let log = llm_response_fn("log", |a: &mut LlmResponseArgs<'_, Vec<(usize, bool)>>| {
//!     let seen = (a.response.chunks.len(), a.from_cache);
//!     a.state.push(seen);
//! });
//! let mut h = Harness::new(log);
//! h.add_input("hi");
//! let finish = ChunkKind::Finish { finish_reason: FinishReason::Stop, usage: Usage::default() };
//! h.llm_response(LlmResponse { chunks: vec![finish] }, true).await.unwrap();
//! assert_eq!(*h.state(), [(1, true)]);
//! # });
//! ```
//!
//! # Output step and output result
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_runtime::prelude::*;
//! use processors_runtime::testing::Harness;
//!
//! // `process_output_step`: the answer is the step's message; an abort is a trip wire.
//! let no_apologies = output_step_fn("no-apologies", |a: &mut OutputStepArgs<'_, ()>| {
//!     match a.text.contains("Sorry") {
//!         true => Err(a.abort().reason("answer without apologising").retry(true)),
//!         false => Ok(()),
//!     }
//! });
//! let mut h = Harness::new(no_apologies);
//! let tw = h.output_step("Sorry, it is 4.").await.unwrap().tripwire.unwrap();
//! assert_eq!((tw.reason.as_str(), tw.retry), ("answer without apologising", true));
//! assert!(h.output_step("It is 4.").await.unwrap().tripwire.is_none());
//!
//! // `process_output_result`: the response, and the summary's text, after the processor.
//! let sign = output_result_fn("sign", |a: &mut OutputResultArgs<'_, ()>| {
//!     let mut m = a.messages[0].clone();
//!     m.set_text(format!("{} (bot)", m.text()));
//!     vec![m]
//! });
//! let mut h = Harness::new(sign);
//! h.add_answer("It is 4.");
//! let report = h.output_result().await.unwrap();
//! assert_eq!(report.outcome.text, "It is 4. (bot)");
//! # });
//! ```
//!
//! # Tool calls and results
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_runtime::prelude::*;
//! use processors_runtime::testing::Harness;
//!
//! let no_shell = tool_call_fn("no-shell", |a: &mut ToolCallArgs<'_, ()>| {
//!     match a.tool_call.tool_name.as_str() {
//!         "shell" => ToolCallAction::Refuse("no shell here".into()),
//!         _ => ToolCallAction::Continue,
//!     }
//! });
//! let mut h = Harness::new(no_shell);
//! let call = ToolCall { tool_call_id: "c1".into(), tool_name: "shell".into(), args: json!({}) };
//! let report = h.tool_call(call).await.unwrap();
//! assert_eq!(report.outcome.action, ToolCallAction::Refuse("no shell here".into()));
//!
//! // `process_tool_result`: the result after the processor, and the model's copy.
//! let short = tool_result_fn("short", |_: &mut ToolResultArgs<'_, ()>| {
//!     ToolResultAction::ForModel(json!("(long result cut)"))
//! });
//! let mut h = Harness::new(short);
//! let report = h.tool_result(ToolResult::new("c1", "search", json!("a long result"))).await.unwrap();
//! assert_eq!(report.outcome.result, json!("a long result"));
//! assert_eq!(report.outcome.for_model(), &json!("(long result cut)"));
//! # });
//! ```
//!
//! A call finds its tool among the harness's tools ([`with_tools`](Harness::with_tools)),
//! as a step's tools are found by name, so a processor that reads the tool's schema sees it.
//!
//! # Provider errors
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_runtime::prelude::*;
//! use processors_runtime::testing::Harness;
//!
//! let keep_newest = api_error_fn("keep-newest", |a: &mut ApiErrorArgs<'_, ()>| {
//!     let ids: Vec<String> = a.message_list.input().map(|m| m.id.clone()).collect();
//!     match ids.split_last() {
//!         Some((_, older)) if !older.is_empty() => {
//!             a.message_list.remove(&older.iter().map(String::as_str).collect::<Vec<_>>());
//!             ApiErrorAction::Retry
//!         }
//!         _ => ApiErrorAction::Unhandled,
//!     }
//! });
//! let mut h = Harness::new(keep_newest);
//! h.add_input(vec![Message::user("a long document"), Message::user("the question")]);
//! let report = h.api_error(ApiError::new(400, "prompt too long")).await.unwrap();
//! assert_eq!(report.outcome, ApiErrorAction::Retry);
//! assert_eq!(report.texts(), ["the question"]);
//! # });
//! ```
//!
//! # State, warnings and failures
//!
//! One harness is one request: the processor's state carries from call to call (read it with
//! [`state`](Harness::state)), an accepted [`output_step`](Harness::output_step) makes the
//! next call the next step, and a new harness starts afresh.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_runtime::prelude::*;
//! use processors_runtime::processor::HookError;
//! use processors_runtime::testing::Harness;
//!
//! let count = output_step_fn("count", |a: &mut OutputStepArgs<'_, u32>| {
//!     *a.state += 1;
//!     match *a.state {
//!         2 => Err(a.abort().reason("a second answer").warn()),
//!         3 => panic!("a third answer"),
//!         _ => Ok(()),
//!     }
//! });
//! let mut h = Harness::new(count);
//! assert!(h.output_step("one").await.unwrap().warnings.is_empty());
//! assert_eq!(h.output_step("two").await.unwrap().warning_reasons(), ["a second answer"]);
//! assert_eq!(*h.state(), 2);
//! match h.output_step("three").await {
//!     Err(HookError::Panicked { id, message, .. }) => {
//!         assert_eq!((id.as_str(), message.as_str()), ("count", "a third answer"));
//!     }
//!     other => panic!("expected the panic, got {other:?}"),
//! }
//! # });
//! ```

mod report;
mod stream;
#[cfg(test)]
mod tests;
mod tool;

pub use report::{Answer, Report, Requested, Streamed, ToolCalled};
pub use tool::{ToolRun, run_tool, run_tool_with};

use crate::agent::AgentInput;
use crate::chunk::{Chunk, FinishReason, Usage};
use crate::context::RequestContext;
use crate::message::{Message, MessageList, MessageSource, Part, Role, ToolCall, ToolResult};
use crate::model::{ApiError, LanguageModel, ModelRequest, ModelSettings, ScriptedModel};
use crate::processor::future_slot::FutureSlot;
use crate::processor::report::Reporter;
use crate::processor::state::StateMap;
use crate::processor::{
    ApiErrorAction, DynPipeline, DynProcessor, LlmResponse, Processor, ProcessorRef, StepConfig,
    ToolCallAction, Violation, boxed,
};
use crate::runner::hooks::{self, Response, Step};
use crate::runner::{Asked, Chain, Entry, Halt, HookError, Scope};
use crate::step::{RunSummary, StepResult};
use crate::tool::Tool;
use crate::tripwire::TripWire;
use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

/// One processor and one request's worth of what its hooks are given, to call its hooks one
/// at a time; see [the module](self).
///
/// `Harness<P>` is made from a processor of type `P` ([`Harness::new`]) and reads its state
/// as `P::State` ([`state`](Harness::state)); `Harness` alone is made from a shared
/// `Arc<dyn DynProcessor>` ([`Harness::shared`]) and reads its state by type
/// ([`state_as`](Harness::state_as)).
pub struct Harness<P: ?Sized = dyn DynProcessor> {
    one: One,
    scope: Scope,
    /// The violations `scope.report` was given since the last report.
    violations: Arc<Mutex<Vec<Violation>>>,
    /// The settings every step starts from.
    config: StepConfig,
    /// The chunks the processor received, when it keeps its stream history.
    histories: Vec<Vec<Chunk>>,
    /// Whether the run's `start` chunk was sent.
    started: bool,
    run_id: String,
    /// The calls `process_tool_call` saw, as they left it: a result of one is that call's.
    calls: Vec<ToolCall>,
    /// `process_api_error` retries asked for in this step.
    api_retries: u32,
    /// The processor's type, whose state [`state`](Harness::state) reads.
    typed: PhantomData<fn() -> Box<P>>,
}

/// The harness's processor, as the runner binds it: its list of one, its state slot and what
/// was asked of it.
struct One {
    processor: ProcessorRef,
    /// The processor as a list, for the stream chain.
    pipeline: DynPipeline,
    /// Its state slot, as the stream chain's slots.
    slots: [usize; 1],
    asked: Asked,
}

impl One {
    /// The processor as an entry of a list, for a hook's chain.
    fn entry(&self) -> Entry<'_> {
        Entry {
            p: &*self.processor,
            id: self.processor.dyn_id(),
            slot: self.slots[0],
            asked: self.asked,
        }
    }
}

impl<P: Processor> Harness<P> {
    /// A harness for `processor`, with an empty list, an empty request context and a step
    /// whose model is a [`ScriptedModel`] without turns and which offers no tools.
    pub fn new(processor: P) -> Self {
        Harness::with_processor(boxed(processor))
    }

    /// The processor's state for the request.
    pub fn state(&self) -> &P::State {
        match self.state_as::<P::State>() {
            Some(state) => state,
            None => unreachable!("a harness's slot holds its processor's state type"),
        }
    }

    /// The processor's state, to set it up before a call.
    pub fn state_mut(&mut self) -> &mut P::State {
        let slot = self.one.slots[0];
        match self.scope.states.get_mut(slot).downcast_mut::<P::State>() {
            Some(state) => state,
            None => unreachable!("a harness's slot holds its processor's state type"),
        }
    }
}

impl Harness {
    /// A harness for a shared processor (as a [`DynPipeline`] holds it); see
    /// [`Harness::new`].
    pub fn shared(processor: ProcessorRef) -> Self {
        Harness::with_processor(processor)
    }
}

impl<P: ?Sized> Harness<P> {
    fn with_processor(processor: ProcessorRef) -> Self {
        let mut states = StateMap::default();
        // The only processor of an empty map: it cannot share an id with another.
        let slot = states.slot_for(&*processor).unwrap_or_default();
        let pipeline = DynPipeline::from(vec![processor.clone()]);
        let violations = Arc::new(Mutex::new(Vec::new()));
        let mut cx = RequestContext::new();
        let report = Reporter::new(Some(sink(&violations)), Some(cx.begin_run()));
        Harness {
            one: One {
                asked: Asked::of(&*processor),
                processor,
                pipeline,
                slots: [slot],
            },
            scope: Scope {
                states,
                list: MessageList::new(),
                cx,
                report,
                steps: Vec::new(),
                retry_count: 0,
                hooks: FutureSlot::new(),
            },
            violations,
            config: StepConfig {
                model: Arc::new(ScriptedModel::new([])),
                tools: Vec::new(),
                tool_choice: Default::default(),
                active_tools: None,
                provider_options: serde_json::Value::Null,
                model_settings: ModelSettings::default(),
            },
            histories: vec![Vec::new()],
            started: false,
            run_id: crate::message::new_id("run"),
            calls: Vec::new(),
            api_retries: 0,
            typed: PhantomData,
        }
    }

    /// The harness with an untagged system message (as an agent's instructions are) after
    /// those it has.
    pub fn with_system(mut self, text: impl Into<crate::message::Text>) -> Self {
        self.scope.list.add_system(Message::system(text), None);
        self
    }

    /// The harness with `messages` in its list as history loaded from memory, before the
    /// input.
    pub fn with_history(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.scope.list.add_remembered(messages);
        self
    }

    /// The harness with `cx` as its request context (a thread, typed values, …).
    pub fn with_context(mut self, mut cx: RequestContext) -> Self {
        self.scope.report = Reporter::new(Some(sink(&self.violations)), Some(cx.begin_run()));
        self.scope.cx = cx;
        self
    }

    /// The harness with `model` as the step's model (what `process_input_step` and
    /// `process_llm_request` see).
    pub fn with_model(mut self, model: impl LanguageModel) -> Self {
        self.config.model = Arc::new(model);
        self
    }

    /// The harness with `tools` as the step's tools: what `process_input_step` sees, what
    /// the request offers, and where a tool call finds its tool by name.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.config.tools = tools.into_iter().collect();
        self
    }

    /// The harness with the settings every step starts from (what `process_input_step`
    /// is given).
    pub fn with_step_config(mut self, config: StepConfig) -> Self {
        self.config = config;
        self
    }

    /// The harness with `n` as the retry count its hooks see (the step is being tried again
    /// for the `n`th time).
    pub fn with_retry_count(mut self, n: u32) -> Self {
        self.scope.retry_count = n;
        self
    }

    /// Adds `input` to the list as new input, without running a hook (what
    /// [`input`](Harness::input) does before it runs `process_input`).
    pub fn add_input(&mut self, input: impl Into<AgentInput>) -> &mut Self {
        self.scope
            .list
            .add_all(input.into().0, MessageSource::Input);
        self
    }

    /// Adds `answer` to the list as the response's next assistant message, without running
    /// a hook and without recording a step (what a model step leaves for
    /// `process_output_result`).
    pub fn add_answer(&mut self, answer: impl Into<Answer>) -> &mut Self {
        self.push_answer(&answer.into());
        self
    }

    /// The processor's state, when it is a `T`.
    pub fn state_as<T: Any>(&self) -> Option<&T> {
        self.scope.states.get(self.one.slots[0])?.downcast_ref()
    }

    /// The message list.
    pub fn list(&self) -> &MessageList {
        &self.scope.list
    }

    /// The message list, to set it up before a call.
    pub fn list_mut(&mut self) -> &mut MessageList {
        &mut self.scope.list
    }

    /// The request context.
    pub fn context(&self) -> &RequestContext {
        &self.scope.cx
    }

    /// The request context, to set values before a call.
    pub fn context_mut(&mut self) -> &mut RequestContext {
        &mut self.scope.cx
    }

    /// The steps recorded so far: each accepted [`output_step`](Harness::output_step).
    pub fn steps(&self) -> &[StepResult] {
        &self.scope.steps
    }

    /// What the processor reported its own model calls used
    /// ([`RequestContext::record_usage`]), per processor id.
    pub fn processor_usage(&self) -> BTreeMap<String, Usage> {
        self.scope.cx.processor_usage()
    }

    /// The request an agent would send the model now: the list as a prompt, the offered
    /// tools, the step's settings.
    pub fn request(&self) -> ModelRequest {
        ModelRequest {
            prompt: self.scope.list.to_prompt(),
            tools: self.offered().map(|t| t.spec()).collect(),
            tool_choice: self.config.tool_choice.clone(),
            provider_options: self.config.provider_options.clone(),
            settings: self.config.model_settings.clone(),
        }
    }

    /// Adds `input` to the list as new input, then runs `process_input`. The report's
    /// messages are the list after it.
    pub async fn input(&mut self, input: impl Into<AgentInput>) -> Result<Report<()>, HookError> {
        self.add_input(input);
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let ran = hooks::input(&chain, &mut self.scope).await;
        let (_, tripwire) = self.settle(ran)?;
        Ok(self.report((), tripwire))
    }

    /// Runs `process_input_step` on the list and the step's settings (those of
    /// [`with_tools`](Harness::with_tools), [`with_model`](Harness::with_model), …; each
    /// call starts from them). The report's outcome is the settings after it; messages it
    /// returned are in the list.
    pub async fn input_step(&mut self) -> Result<Report<StepConfig>, HookError> {
        let mut config = self.config.clone();
        let step_number = self.step_number();
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let ran = hooks::input_step(&chain, &mut self.scope, step_number, &mut config).await;
        let (_, tripwire) = self.settle(ran)?;
        Ok(self.report(config, tripwire))
    }

    /// Runs `process_llm_request` on the request an agent would send now
    /// ([`request`](Harness::request)).
    pub async fn llm_request(&mut self) -> Result<Report<Requested>, HookError> {
        let request = self.request();
        self.llm_request_with(request).await
    }

    /// Runs `process_llm_request` on `request`.
    pub async fn llm_request_with(
        &mut self,
        mut request: ModelRequest,
    ) -> Result<Report<Requested>, HookError> {
        let model = self.config.model.clone();
        let step_number = self.step_number();
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let ran = hooks::llm_request(&chain, &mut self.scope, step_number, &mut request, &*model);
        let ran = ran.await;
        let (response, tripwire) = self.settle(ran)?;
        let outcome = Requested {
            request,
            response: response.flatten(),
        };
        Ok(self.report(outcome, tripwire))
    }

    /// Runs `process_llm_response` on `response`, the answer to the request an agent would
    /// send now ([`request`](Harness::request)), as the client received it; `from_cache`: it
    /// was replayed from a cache rather than streamed by the model.
    pub async fn llm_response(
        &mut self,
        response: LlmResponse,
        from_cache: bool,
    ) -> Result<Report<()>, HookError> {
        let request = self.request();
        let step_number = self.step_number();
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let seen = Response {
            step_number,
            request: &request,
            response: &response,
            delivered: &response,
            from_cache,
        };
        let ran = hooks::llm_response(&chain, &mut self.scope, seen).await;
        let (_, tripwire) = self.settle(ran)?;
        Ok(self.report((), tripwire))
    }

    /// Adds `answer` to the list as the step's message (its text and tool calls), then runs
    /// `process_output_step` on it. The report's outcome is the step's messages after it.
    /// A step the processor accepts (no abort) is recorded, and the next call is the next
    /// step; an abort leaves the list as the hook left it (an agent would roll a rejected
    /// step back, and run it again with the reason as feedback).
    pub async fn output_step(
        &mut self,
        answer: impl Into<Answer>,
    ) -> Result<Report<Vec<Message>>, HookError> {
        let answer = answer.into();
        let mut step_ids = self.push_answer(&answer);
        let mut run_usage = self.run_usage();
        run_usage += answer.usage;
        let step = Step {
            step_number: self.step_number(),
            text: &answer.text,
            finish_reason: answer.reason(),
            usage: answer.usage,
            run_usage,
            tool_calls: &answer.tool_calls,
        };
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let ran = hooks::output_step(&chain, &mut self.scope, step, &mut step_ids).await;
        let (accepted, tripwire) = self.settle(ran)?;
        let messages: Vec<Message> = (step_ids.iter())
            .filter_map(|id| self.scope.list.get(id).cloned())
            .collect();
        if accepted.is_some() {
            let text = crate::message::concat_texts(
                (messages.iter())
                    .filter(|m| m.role == Role::Assistant)
                    .flat_map(|m| &m.content.parts),
            );
            self.scope.steps.push(StepResult {
                step_number: self.step_number(),
                text,
                finish_reason: answer.reason(),
                usage: answer.usage,
                tool_calls: answer.tool_calls,
                tool_results: Vec::new(),
                tripwire: None,
            });
            self.api_retries = 0;
        }
        Ok(self.report(messages, tripwire))
    }

    /// Runs `process_tool_call` on `call`, with the tool of its name among the step's tools
    /// ([`with_tools`](Harness::with_tools)), if there is one. The report's outcome is the
    /// call as it would run and what the processor decided; a result of the call
    /// ([`tool_result`](Harness::tool_result)) is then this call's.
    pub async fn tool_call(&mut self, call: ToolCall) -> Result<Report<ToolCalled>, HookError> {
        let mut call = call;
        let tool = self.offered().find(|t| t.name() == call.tool_name).cloned();
        let step_number = self.step_number();
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let ran = hooks::tool_call(
            &chain,
            &mut self.scope,
            &mut call,
            tool.as_deref(),
            step_number,
        )
        .await;
        let (decision, tripwire) = self.settle(ran)?;
        let action = match decision {
            Some(d) => match d.decided {
                Some((action, _)) => action,
                None if d.rewritten => ToolCallAction::Rewrite(call.args.clone()),
                None => ToolCallAction::Continue,
            },
            None => ToolCallAction::Continue,
        };
        self.calls.retain(|c| c.tool_call_id != call.tool_call_id);
        self.calls.push(call.clone());
        Ok(self.report(ToolCalled { call, action }, tripwire))
    }

    /// Runs `process_tool_result` on `result` (a failure when `is_error`, as
    /// [`ToolResult::error`] makes it), the result of the call of its id that
    /// [`tool_call`](Harness::tool_call) saw, or else of a call with no arguments. The
    /// report's outcome is the result after it, with the model's copy when one was set.
    pub async fn tool_result(
        &mut self,
        result: ToolResult,
    ) -> Result<Report<ToolResult>, HookError> {
        let ToolResult {
            tool_call_id,
            tool_name,
            result: mut value,
            is_error,
            ..
        } = result;
        let call = (self.calls.iter())
            .find(|c| c.tool_call_id == tool_call_id)
            .cloned()
            .unwrap_or_else(|| ToolCall {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                args: serde_json::Value::Null,
            });
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let ran = hooks::tool_result(&chain, &mut self.scope, &call, &mut value, is_error).await;
        let (model_output, tripwire) = self.settle(ran)?;
        let outcome = ToolResult {
            tool_call_id,
            tool_name,
            result: value,
            is_error,
            model_output: model_output.flatten(),
        };
        Ok(self.report(outcome, tripwire))
    }

    /// Runs `process_output_result` on the response (the answers
    /// [`output_step`](Harness::output_step) and [`add_answer`](Harness::add_answer) added)
    /// and the run's summary (its text, the steps recorded, their usage, the last one's
    /// finish reason). The report's outcome is the summary after it: its text follows a
    /// changed response.
    pub async fn output_result(&mut self) -> Result<Report<RunSummary>, HookError> {
        let finish_reason =
            (self.scope.steps.last()).map_or(FinishReason::Stop, |s| s.finish_reason);
        let mut summary = RunSummary {
            text: hooks::response_text(&self.scope.list),
            usage: self.run_usage(),
            finish_reason,
            // Lent to the summary, as an agent does.
            steps: std::mem::take(&mut self.scope.steps),
        };
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let ran = hooks::output_result(&chain, &mut self.scope, &mut summary).await;
        self.scope.steps = std::mem::take(&mut summary.steps);
        let (_, tripwire) = self.settle(ran)?;
        summary.steps = self.scope.steps.clone();
        Ok(self.report(summary, tripwire))
    }

    /// Runs `process_api_error` on `error`, with the retries the processor asked for in this
    /// step so far. The report's outcome says whether it asked for the call again; the list
    /// is as it fixed it.
    pub async fn api_error(
        &mut self,
        error: ApiError,
    ) -> Result<Report<ApiErrorAction>, HookError> {
        let step_number = self.step_number();
        let entry = self.one.entry();
        let chain = Chain::new(std::slice::from_ref(&entry));
        let none = Chain::new(&[]);
        let chains = [&chain, &none, &none];
        let retries = self.api_retries;
        let ran = hooks::api_error(chains, &mut self.scope, &error, step_number, retries).await;
        let (asker, tripwire) = self.settle(ran)?;
        let action = match asker.flatten() {
            Some(_) => {
                self.api_retries += 1;
                ApiErrorAction::Retry
            }
            None => ApiErrorAction::Unhandled,
        };
        Ok(self.report(action, tripwire))
    }

    /// The number of the step the next hook call is in: the steps recorded so far.
    fn step_number(&self) -> u32 {
        u32::try_from(self.scope.steps.len()).unwrap_or(u32::MAX)
    }

    /// The usage of the steps recorded so far.
    fn run_usage(&self) -> Usage {
        let mut usage = Usage::default();
        for step in &self.scope.steps {
            usage += step.usage;
        }
        usage
    }

    /// The tools a step offers: its tools, those named active when some are.
    fn offered(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        let active = self.config.active_tools.as_ref();
        (self.config.tools.iter())
            .filter(move |t| active.is_none_or(|a| a.iter().any(|n| n == t.name())))
    }

    /// Adds `answer` to the response as an assistant message (its text, then its calls);
    /// the ids of the step's messages (none for an answer with neither).
    fn push_answer(&mut self, answer: &Answer) -> Vec<String> {
        let text = (!answer.text.is_empty()).then(|| Part::Text {
            text: answer.text.clone(),
        });
        let calls = answer.tool_calls.iter().cloned().map(Part::ToolCall);
        let parts: Vec<Part> = text.into_iter().chain(calls).collect();
        if parts.is_empty() {
            return Vec::new();
        }
        let m = Message::new(Role::Assistant, parts);
        let ids = vec![m.id.clone()];
        self.scope.list.add(m, MessageSource::Response);
        ids
    }

    /// A hook's run, as a report's parts: what it returned, or the trip wire it aborted
    /// with; a failure is the call's error (and the warnings before it are dropped with it).
    fn settle<T>(
        &mut self,
        ran: Result<T, Halt>,
    ) -> Result<(Option<T>, Option<TripWire>), HookError> {
        match ran {
            Ok(v) => Ok((Some(v), None)),
            Err(Halt::Abort(tw)) => Ok((None, Some(tw))),
            Err(Halt::Failed(e)) => {
                self.take_warnings();
                Err(e)
            }
        }
    }

    /// The report of a hook call that came to `outcome`.
    fn report<T>(&mut self, outcome: T, tripwire: Option<TripWire>) -> Report<T> {
        Report {
            outcome,
            tripwire,
            warnings: self.take_warnings(),
            messages: self.scope.list.all().cloned().collect(),
            system_messages: self.scope.list.all_system_messages().cloned().collect(),
        }
    }

    /// The violations reported since the last report.
    fn take_warnings(&mut self) -> Vec<Violation> {
        std::mem::take(
            &mut *self
                .violations
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

/// An `on_violation` handler that keeps what it is given in `into`.
fn sink(into: &Arc<Mutex<Vec<Violation>>>) -> crate::processor::report::ViolationHandler {
    let into = into.clone();
    Arc::new(move |v: &Violation| {
        into.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(v.clone());
    })
}
