//! The agent: a model, tools, memory and processor lists, run step by step.

mod answer;
mod approval;
mod call;
mod options;
pub(crate) mod processed;
mod result;
mod run;
mod stream;
mod tools;

pub use crate::processor::HookError;
pub use crate::processor::{Violation, ViolationKind};
pub use crate::step::{RunSummary, StepResult};
pub use answer::{AnswerText, TextChange};
pub use approval::{Approval, ApprovalError, ApprovalRequest, Decision, WaitingRun};
pub use options::{GenerateOptions, PrepareStep, PrepareStepInfo};
pub use result::{AgentError, GenerateResult};
pub use run::FEEDBACK_TAG;
pub use stream::AgentStream;

use crate::context::RequestContext;
use crate::memory::{IntoMemory, Memory, is_memory};
use crate::message::Message;
use crate::model::{LanguageModel, ModelSettings, ToolChoice};
use crate::processor::report::ViolationHandler;
use crate::processor::{
    DynPipeline, DynProcessor, ErrorProcessor, Hooks, InputProcessor, OutputProcessor, Pipeline,
    ProcessorRef, boxed,
};
use crate::shadow::is_shadowed_memory;
use crate::tool::Tool;
use futures::future::BoxFuture;
use std::sync::Arc;

/// The default step limit of a run.
pub const DEFAULT_MAX_STEPS: u32 = 5;

/// What an agent is asked: text, one message, or several.
#[derive(Debug, Clone)]
pub struct AgentInput(pub Vec<Message>);

impl From<&str> for AgentInput {
    fn from(s: &str) -> Self {
        AgentInput(vec![Message::user(s)])
    }
}
impl From<String> for AgentInput {
    fn from(s: String) -> Self {
        AgentInput(vec![Message::user(s)])
    }
}
impl From<Message> for AgentInput {
    fn from(m: Message) -> Self {
        AgentInput(vec![m])
    }
}
impl From<Vec<Message>> for AgentInput {
    fn from(m: Vec<Message>) -> Self {
        AgentInput(m)
    }
}

pub(crate) struct AgentInner<I, O, E> {
    pub name: String,
    pub instructions: Vec<Message>,
    pub model: Arc<dyn LanguageModel>,
    pub tools: Vec<Arc<dyn Tool>>,
    pub memory: Option<Memory>,
    pub input: I,
    pub output: O,
    pub error: E,
    pub max_processor_retries: Option<u32>,
    pub max_steps: Option<u32>,
    pub tool_choice: ToolChoice,
    pub model_settings: ModelSettings,
    pub provider_options: serde_json::Value,
    pub on_violation: Option<ViolationHandler>,
    pub resolvers: Resolvers,
    /// Where runs paused for approval are kept: the memory's store, or one of the agent's own.
    pub paused: Arc<dyn crate::memory::MemoryStore>,
    /// How long a paused run waits for its answer.
    pub approval_timeout: std::time::Duration,
    /// Where the agent's own lists' processors keep their states, found on the first call
    /// that runs them.
    pub layout: std::sync::OnceLock<Option<call::Layout>>,
    /// How checking the agent's own lists went, on the first call that runs them (the same
    /// lists give the same answer on every call).
    pub checked: std::sync::OnceLock<Result<(), BuildError>>,
}

/// Builds a processor list from a request's context.
pub type ListResolver = Arc<dyn Fn(&RequestContext) -> DynPipeline + Send + Sync>;

/// The per-request list builders of an agent.
#[derive(Clone, Default)]
pub(crate) struct Resolvers {
    input: Option<ListResolver>,
    output: Option<ListResolver>,
    error: Option<ListResolver>,
}

impl Resolvers {
    /// Fills the lists a call does not give from the agent's builders (in place: the options
    /// are a few hundred bytes, and most agents have no builder).
    fn apply(&self, options: &mut GenerateOptions) {
        let build = |slot: &mut Option<DynPipeline>, f: &Option<ListResolver>, cx| {
            if let (None, Some(f)) = (&*slot, f) {
                *slot = Some(f(cx));
            }
        };
        let cx = &options.request_context;
        build(&mut options.input, &self.input, cx);
        build(&mut options.output, &self.output, cx);
        build(&mut options.error, &self.error, cx);
    }
}

/// An agent. `I`, `O` and `E` are its input, output and error processor lists: tuples of
/// processors (statically dispatched, as `agent!` builds them) or [`DynPipeline`]s (built at
/// run time). Cloning is cheap.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
/// let agent = Agent::builder()
///     .instructions("You are terse.")
///     .model(ScriptedModel::new([Turn::deltas(["Hi", " there"])]))
///     .build()
///     .unwrap();
/// let result = agent.generate("hello").await.unwrap();
/// assert_eq!(result.text, "Hi there");
/// # });
/// ```
pub struct Agent<I = DynPipeline, O = DynPipeline, E = DynPipeline> {
    inner: Arc<AgentInner<I, O, E>>,
}

impl<I, O, E> Clone for Agent<I, O, E> {
    fn clone(&self) -> Self {
        Agent {
            inner: self.inner.clone(),
        }
    }
}

impl Agent {
    /// Starts building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder {
            settings: Settings {
                name: "agent".to_owned(),
                instructions: Vec::new(),
                model: None,
                tools: Vec::new(),
                memory: None,
                max_processor_retries: None,
                max_steps: None,
                tool_choice: ToolChoice::Auto,
                model_settings: ModelSettings::default(),
                provider_options: serde_json::Value::Null,
                on_violation: None,
                resolvers: Resolvers::default(),
                approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            },
            input: DynPipeline::new(),
            output: DynPipeline::new(),
            error: DynPipeline::new(),
        }
    }
}

impl<I: Pipeline, O: Pipeline, E: Pipeline> Agent<I, O, E> {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Runs to the end and returns the result. As with
    /// [`generate_with`](Self::generate_with), the call's lists are resolved when this is
    /// called.
    pub fn generate(
        &self,
        input: impl Into<AgentInput>,
    ) -> impl Future<Output = Result<GenerateResult, AgentError>> {
        self.generate_with(input, GenerateOptions::default())
    }

    /// Runs to the end with per-call options.
    ///
    /// The call's lists are resolved (see [`AgentBuilder::input_from`]) when this is called;
    /// the run starts when the future is first polled.
    pub fn generate_with(
        &self,
        input: impl Into<AgentInput>,
        mut options: GenerateOptions,
    ) -> impl Future<Output = Result<GenerateResult, AgentError>> {
        self.inner.resolvers.apply(&mut options);
        run::run(self.inner.clone(), input.into().0, options, None)
    }

    /// Runs as a stream of chunks; [`AgentStream::finish`] gives the result.
    pub fn stream(&self, input: impl Into<AgentInput>) -> AgentStream {
        self.stream_with(input, GenerateOptions::default())
    }

    /// Runs as a stream with per-call options.
    pub fn stream_with(
        &self,
        input: impl Into<AgentInput>,
        mut options: GenerateOptions,
    ) -> AgentStream {
        let inner = self.inner.clone();
        let input = input.into().0;
        inner.resolvers.apply(&mut options);
        AgentStream::new(move |slot| run::run(inner, input, options, Some(slot)))
    }

    /// Continues a run paused for approval, with a decision for each waiting call, and runs
    /// it to the end (or to its next pause).
    ///
    /// The paused run is taken from the store it was kept in (the agent's memory store, or
    /// the agent's own when it has no memory), so an agent with a shared store resumes runs
    /// paused in another process; a run is resumed once. The waiting calls run as decided
    /// (an approved call with the arguments given, a denied one as the tool's error with the
    /// reason), then the loop goes on. The processors' per-request states start afresh; the
    /// request context is the call's, with the paused run's thread when it names none.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::agent::Approval;
    /// use processors_runtime::prelude::*;
    /// use serde_json::json;
    ///
    /// let refund = tool("refund", "Refunds an order", json!({ "type": "object" }), |_| async {
    ///     Ok(json!("refunded"))
    /// });
    /// let ask = tool_call_fn("ask-first", |a: &mut ToolCallArgs<'_, ()>| {
    ///     ToolCallAction::approval(format!("`{}` moves money", a.tool_call.tool_name))
    /// });
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([
    ///         Turn::empty().tool_call("call-1", "refund", json!({ "order": 7 })),
    ///         Turn::text("Refunded."),
    ///     ]))
    ///     .tool(refund)
    ///     .output(ask)
    ///     .build()
    ///     .unwrap();
    /// let paused = agent.generate("Refund order 7").await.unwrap();
    /// assert_eq!(paused.finish_reason, FinishReason::AwaitingApproval);
    /// let request = &paused.pending_approvals[0];
    /// assert_eq!(request.reason, "`refund` moves money");
    ///
    /// let answer = Approval::new(&paused.run_id).approve(&request.tool_call_id);
    /// let done = agent.resume(answer).await.unwrap();
    /// assert_eq!(done.text, "Refunded.");
    /// assert_eq!(done.tool_results[0].result, json!("refunded"));
    /// # });
    /// ```
    pub fn resume(
        &self,
        answer: Approval,
    ) -> impl Future<Output = Result<GenerateResult, AgentError>> {
        self.resume_with(answer, GenerateOptions::default())
    }

    /// [`resume`](Self::resume) with per-call options.
    pub fn resume_with(
        &self,
        answer: Approval,
        mut options: GenerateOptions,
    ) -> impl Future<Output = Result<GenerateResult, AgentError>> {
        self.inner.resolvers.apply(&mut options);
        run::resume(self.inner.clone(), answer, options, None)
    }

    /// [`resume_with`](Self::resume_with) as a stream of chunks: a `start`, the waiting
    /// calls' results, the paused step's `step-finish`, then the run as it goes on.
    pub fn resume_stream_with(
        &self,
        answer: Approval,
        mut options: GenerateOptions,
    ) -> AgentStream {
        let inner = self.inner.clone();
        inner.resolvers.apply(&mut options);
        AgentStream::new(move |slot| run::resume(inner, answer, options, Some(slot)))
    }

    /// The runs of this agent that wait for approval, in a thread and a resource (`None`
    /// matches every one), each with its waiting calls, the oldest first. Runs that expired
    /// and runs of other agents sharing the store are left out, and one that cannot be read
    /// back is logged and left out; nothing is taken, so each can be answered with
    /// [`resume`](Self::resume), here or in another process.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::agent::Approval;
    /// use processors_runtime::prelude::*;
    ///
    /// let ask = tool_call_fn("ask", |_: &mut ToolCallArgs<'_, ()>| {
    ///     ToolCallAction::approval("refunds move money")
    /// });
    /// let refund = tool("refund", "Refunds an order", json!({ "type": "object" }), |_| async {
    ///     Ok(json!("refunded"))
    /// });
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([
    ///         Turn::empty().tool_call("call-1", "refund", json!({ "order": 7 })),
    ///         Turn::text("Refunded."),
    ///     ]))
    ///     .tool(refund)
    ///     .output(ask)
    ///     .build()
    ///     .unwrap();
    /// let cx = RequestContext::new().with_thread("t-1", "ann");
    /// agent.generate_with("Refund order 7", GenerateOptions::new().request_context(cx)).await.unwrap();
    ///
    /// // Later, somewhere else: what waits in Ann's conversations.
    /// let waiting = agent.waiting_runs(None, Some("ann")).await.unwrap();
    /// let run = &waiting[0];
    /// assert_eq!(run.thread_id.as_deref(), Some("t-1"));
    /// assert_eq!(run.requests[0].tool_name, "refund");
    /// let answer = Approval::new(&run.run_id).approve(&run.requests[0].tool_call_id);
    /// assert_eq!(agent.resume(answer).await.unwrap().text, "Refunded.");
    /// assert!(agent.waiting_runs(None, Some("ann")).await.unwrap().is_empty());
    /// # });
    /// ```
    pub async fn waiting_runs(
        &self,
        thread_id: Option<&str>,
        resource_id: Option<&str>,
    ) -> Result<Vec<WaitingRun>, ApprovalError> {
        let records = (self.inner.paused)
            .list_paused_runs(thread_id, resource_id)
            .await
            .map_err(|source| ApprovalError::List { source })?;
        let now = crate::message::now_millis();
        let mut waiting = Vec::with_capacity(records.len());
        for record in records.iter().filter(|r| r.expires_at > now) {
            let run = match approval::PausedRun::from_record(record) {
                Ok(run) => run,
                Err(e) => {
                    tracing::warn!(run = %record.run_id, error = %e, "a paused run cannot be read back; not listed");
                    continue;
                }
            };
            if run.agent != self.inner.name {
                continue;
            }
            waiting.push(WaitingRun {
                requests: run.requests(),
                run_id: run.run_id,
                thread_id: run.thread_id,
                resource_id: run.resource_id,
                expires_at: record.expires_at,
            });
        }
        Ok(waiting)
    }
}

impl<I: Pipeline, O: Pipeline, E: Pipeline> Agent<I, O, E> {
    /// A model call of this agent's lists on `request`, its chunks handed to `slot`: what a
    /// [`Processed`](crate::model::Processed) model runs.
    pub(crate) fn model_call(
        &self,
        request: crate::model::ModelRequest,
        tools: Vec<Arc<dyn Tool>>,
        cx: crate::context::RequestContext,
        slot: Arc<crate::runner::stream::outbox::Handoff>,
    ) -> impl Future<Output = Result<crate::chunk::ChunkKind, AgentError>> + use<I, O, E> {
        run::model_call(self.inner.clone(), request, tools, cx, slot)
    }

    /// Every processor of the agent's lists, in order: input, output, error.
    pub(crate) fn processors(&self) -> Vec<&dyn DynProcessor> {
        let mut all = Vec::new();
        self.inner.input.collect(&mut all);
        self.inner.output.collect(&mut all);
        self.inner.error.collect(&mut all);
        all
    }
}

/// An agent with its processor types erased, to keep agents of different types together.
pub trait AnyAgent: Send + Sync {
    /// [`Agent::name`].
    fn name(&self) -> &str;
    /// [`Agent::generate_with`] (the call's lists resolved when this is called).
    fn generate_with(
        &self,
        input: AgentInput,
        options: GenerateOptions,
    ) -> BoxFuture<'_, Result<GenerateResult, AgentError>>;
    /// [`Agent::stream_with`].
    fn stream_with(&self, input: AgentInput, options: GenerateOptions) -> AgentStream;
    /// [`Agent::resume_with`].
    fn resume_with(
        &self,
        answer: Approval,
        options: GenerateOptions,
    ) -> BoxFuture<'_, Result<GenerateResult, AgentError>>;
    /// [`Agent::resume_stream_with`].
    fn resume_stream_with(&self, answer: Approval, options: GenerateOptions) -> AgentStream;
}

impl<I: Pipeline, O: Pipeline, E: Pipeline> AnyAgent for Agent<I, O, E> {
    fn name(&self) -> &str {
        Agent::name(self)
    }
    fn generate_with(
        &self,
        input: AgentInput,
        options: GenerateOptions,
    ) -> BoxFuture<'_, Result<GenerateResult, AgentError>> {
        Box::pin(Agent::generate_with(self, input, options))
    }
    fn stream_with(&self, input: AgentInput, options: GenerateOptions) -> AgentStream {
        Agent::stream_with(self, input, options)
    }
    fn resume_with(
        &self,
        answer: Approval,
        options: GenerateOptions,
    ) -> BoxFuture<'_, Result<GenerateResult, AgentError>> {
        Box::pin(Agent::resume_with(self, answer, options))
    }
    fn resume_stream_with(&self, answer: Approval, options: GenerateOptions) -> AgentStream {
        Agent::resume_stream_with(self, answer, options)
    }
}

/// Why an agent could not be built (or a run's per-call lists cannot work).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No model was given.
    #[error("the agent has no model; call `.model(...)`")]
    MissingModel,
    /// Memory is in a list, but the agent has no memory.
    #[error("memory is in the {0} list but the agent has no memory; call `.memory(...)`")]
    MemoryWithoutMemory(&'static str),
    /// Memory in shadow, in the given list.
    #[error(
        "memory is in shadow in the {0} list: memory loads and saves the conversation, which is not a decision to record; put `memory` there as it is"
    )]
    ShadowedMemory(&'static str),
    /// `max_steps(0)`: a run needs at least one step.
    #[error("max_steps is 0: a run needs at least one step")]
    ZeroMaxSteps,
    /// Memory is placed in the output list with processors after it.
    #[error(
        "memory must be the last output processor: processors after it would change what streams but not what is saved"
    )]
    MemoryNotLast,
    /// A processor of a wrapped model ([`Processed`](crate::model::Processed)) has no hook
    /// that runs around a model call.
    #[error(
        "processor `{id}` has no hook that runs around a model call (its hooks: {hooks:?}); a wrapped model runs process_input, process_input_step, process_llm_request, process_output_stream, process_llm_response, process_output_result and process_api_error: give it to an agent instead"
    )]
    NotAroundAModel {
        /// The processor's id.
        id: String,
        /// The hooks it has.
        hooks: Hooks,
    },
    /// A processor is in a list it has no hook for.
    #[error(
        "processor `{id}` is in the {list} list but has no {list} hook (its hooks: {hooks:?}); {hint}"
    )]
    Misplaced {
        /// The processor's id.
        id: String,
        /// The list: `input`, `output` or `error`.
        list: &'static str,
        /// The hooks it has.
        hooks: Hooks,
        /// Where it belongs.
        hint: &'static str,
    },
}

pub(crate) struct Settings {
    name: String,
    instructions: Vec<Message>,
    model: Option<Arc<dyn LanguageModel>>,
    tools: Vec<Arc<dyn Tool>>,
    memory: Option<Memory>,
    max_processor_retries: Option<u32>,
    max_steps: Option<u32>,
    tool_choice: ToolChoice,
    model_settings: ModelSettings,
    provider_options: serde_json::Value,
    on_violation: Option<ViolationHandler>,
    resolvers: Resolvers,
    approval_timeout: std::time::Duration,
}

/// How long a run paused for approval waits for its answer, unless the agent says otherwise.
pub const DEFAULT_APPROVAL_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(24 * 60 * 60);

/// Builds an [`Agent`]; see [`Agent::builder`].
#[must_use]
pub struct AgentBuilder<I = DynPipeline, O = DynPipeline, E = DynPipeline> {
    settings: Settings,
    input: I,
    output: O,
    error: E,
}

impl<I, O, E> AgentBuilder<I, O, E> {
    /// Names the agent.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.settings.name = name.into();
        self
    }

    /// Adds a system instruction (kept as an untagged system message, restored every step).
    pub fn instructions(mut self, text: impl Into<crate::message::Text>) -> Self {
        self.settings.instructions.push(Message::system(text));
        self
    }

    /// Sets the model.
    pub fn model(self, model: impl LanguageModel) -> Self {
        self.shared_model(Arc::new(model))
    }

    /// Sets a shared model.
    pub fn shared_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.settings.model = Some(model);
        self
    }

    /// Adds a tool: a `#[tool]` function's type, any [`Tool`], or a shared one
    /// ([`IntoTool`](crate::tool::IntoTool)).
    pub fn tool(mut self, tool: impl crate::tool::IntoTool) -> Self {
        self.settings.tools.push(tool.into_tool());
        self
    }

    /// Adds several tools, in order.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.settings.tools.extend(tools);
        self
    }

    /// Gives the agent memory: it loads history first on input and saves last on output,
    /// unless placed explicitly in a list. Takes a [`Memory`] or an `Arc<Memory>`.
    pub fn memory(mut self, memory: impl IntoMemory) -> Self {
        self.settings.memory = Some(memory.into_memory());
        self
    }

    /// Lets processors retry a step up to `n` times in a row (and provider errors `n` times).
    pub fn max_processor_retries(mut self, n: u32) -> Self {
        self.settings.max_processor_retries = Some(n);
        self
    }

    /// How long a run paused for approval waits for its answer ([`Agent::resume`]); after
    /// that, resuming it fails with [`ApprovalError::Expired`]. A day by default
    /// ([`DEFAULT_APPROVAL_TIMEOUT`]).
    pub fn approval_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.settings.approval_timeout = timeout;
        self
    }

    /// Limits the steps (model calls, retries not counted) of a run; 5 by default.
    pub fn max_steps(mut self, n: u32) -> Self {
        self.settings.max_steps = Some(n);
        self
    }

    /// Sets the default tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.settings.tool_choice = choice;
        self
    }

    /// Sets the default sampling settings.
    pub fn model_settings(mut self, settings: ModelSettings) -> Self {
        self.settings.model_settings = settings;
        self
    }

    /// Sets default provider options.
    pub fn provider_options(mut self, options: serde_json::Value) -> Self {
        self.settings.provider_options = options;
        self
    }

    /// Calls `f` for every abort (block) and warning a processor raises, and every
    /// decision of a processor in [`Shadow`](crate::processor::Shadow). A panicking callback is
    /// caught and logged.
    pub fn on_violation(mut self, f: impl Fn(&Violation) + Send + Sync + 'static) -> Self {
        self.settings.on_violation = Some(Arc::new(f));
        self
    }

    /// Builds the input processors of each request from its context (a tenant's settings, a
    /// feature flag), replacing the agent's list; a per-call list still wins.
    ///
    /// ```
    /// use processors_runtime::prelude::*;
    /// # struct Strict; impl Processor for Strict { type State = (); const HOOKS: Hooks = Hooks::INPUT; fn id(&self) -> &str { "strict" } }
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([]))
    ///     .input_from(|cx| match cx.value("tier").and_then(|v| v.as_str()) {
    ///         Some("free") => DynPipeline::new().with(Strict),
    ///         _ => DynPipeline::new(),
    ///     })
    ///     .build();
    /// assert!(agent.is_ok());
    /// ```
    pub fn input_from(
        mut self,
        f: impl Fn(&RequestContext) -> DynPipeline + Send + Sync + 'static,
    ) -> Self {
        self.settings.resolvers.input = Some(Arc::new(f));
        self
    }

    /// Builds the output processors of each request from its context; see
    /// [`input_from`](AgentBuilder::input_from).
    pub fn output_from(
        mut self,
        f: impl Fn(&RequestContext) -> DynPipeline + Send + Sync + 'static,
    ) -> Self {
        self.settings.resolvers.output = Some(Arc::new(f));
        self
    }

    /// Builds the error processors of each request from its context; see
    /// [`input_from`](AgentBuilder::input_from).
    pub fn error_from(
        mut self,
        f: impl Fn(&RequestContext) -> DynPipeline + Send + Sync + 'static,
    ) -> Self {
        self.settings.resolvers.error = Some(Arc::new(f));
        self
    }

    /// Sets the input processors as a statically typed list (a tuple).
    pub fn input_pipeline<I2: Pipeline>(self, input: I2) -> AgentBuilder<I2, O, E> {
        AgentBuilder {
            settings: self.settings,
            input,
            output: self.output,
            error: self.error,
        }
    }

    /// Sets the output processors as a statically typed list (a tuple).
    pub fn output_pipeline<O2: Pipeline>(self, output: O2) -> AgentBuilder<I, O2, E> {
        AgentBuilder {
            settings: self.settings,
            input: self.input,
            output,
            error: self.error,
        }
    }

    /// Sets the error processors as a statically typed list (a tuple).
    pub fn error_pipeline<E2: Pipeline>(self, error: E2) -> AgentBuilder<I, O, E2> {
        AgentBuilder {
            settings: self.settings,
            input: self.input,
            output: self.output,
            error,
        }
    }
}

impl<O, E> AgentBuilder<DynPipeline, O, E> {
    /// Appends an input processor.
    pub fn input(mut self, p: impl InputProcessor) -> Self {
        self.input.push(boxed(p));
        self
    }
    /// Appends a shared input processor; [`build`](AgentBuilder::build) checks that it has
    /// an input hook.
    pub fn input_ref(mut self, p: ProcessorRef) -> Self {
        self.input.push(p);
        self
    }
}

impl<I, E> AgentBuilder<I, DynPipeline, E> {
    /// Appends an output processor.
    pub fn output(mut self, p: impl OutputProcessor) -> Self {
        self.output.push(boxed(p));
        self
    }
    /// Appends a shared output processor; [`build`](AgentBuilder::build) checks that it has
    /// an output hook.
    pub fn output_ref(mut self, p: ProcessorRef) -> Self {
        self.output.push(p);
        self
    }
}

impl<I, O> AgentBuilder<I, O, DynPipeline> {
    /// Appends an error processor.
    pub fn error(mut self, p: impl ErrorProcessor) -> Self {
        self.error.push(boxed(p));
        self
    }
    /// Appends a shared error processor; [`build`](AgentBuilder::build) checks that it has
    /// `process_api_error`.
    pub fn error_ref(mut self, p: ProcessorRef) -> Self {
        self.error.push(p);
        self
    }
}

/// Checks the lists of an agent or a call: each processor has a hook of its list, and memory
/// is placed where it can work.
pub(crate) fn check_lists(
    has_memory: bool,
    input: &[&dyn DynProcessor],
    output: &[&dyn DynProcessor],
    error: &[&dyn DynProcessor],
) -> Result<(), BuildError> {
    type Belongs = fn(Hooks) -> bool;
    let lists: [(_, _, Belongs); 3] = [
        ("input", input, Hooks::is_input),
        ("output", output, Hooks::is_output),
        ("error", error, Hooks::is_error),
    ];
    for (list, processors, belongs) in lists {
        for p in processors {
            if is_shadowed_memory(*p) {
                return Err(BuildError::ShadowedMemory(list));
            }
            if is_memory(*p) {
                if !has_memory {
                    return Err(BuildError::MemoryWithoutMemory(list));
                }
                continue;
            }
            let hooks = p.dyn_hooks();
            if !belongs(hooks) {
                return Err(BuildError::Misplaced {
                    id: p.dyn_id().to_owned(),
                    list,
                    hooks,
                    hint: hooks.home(),
                });
            }
        }
    }
    if error.iter().any(|p| is_memory(*p)) {
        return Err(BuildError::MemoryWithoutMemory("error"));
    }
    if let Some(i) = output.iter().position(|p| is_memory(*p))
        && i + 1 != output.len()
    {
        return Err(BuildError::MemoryNotLast);
    }
    Ok(())
}

impl<I: Pipeline, O: Pipeline, E: Pipeline> AgentBuilder<I, O, E> {
    /// Builds the agent.
    pub fn build(self) -> Result<Agent<I, O, E>, BuildError> {
        let model = self
            .settings
            .model
            .clone()
            .ok_or(BuildError::MissingModel)?;
        if self.settings.max_steps == Some(0) {
            return Err(BuildError::ZeroMaxSteps);
        }
        {
            let (mut input, mut output, mut error) = (Vec::new(), Vec::new(), Vec::new());
            self.input.collect(&mut input);
            self.output.collect(&mut output);
            self.error.collect(&mut error);
            check_lists(self.settings.memory.is_some(), &input, &output, &error)?;
        }
        Ok(self.assemble(model))
    }

    /// Builds an agent whose configuration `agent!` already checked at compile time.
    #[doc(hidden)]
    pub fn __build_checked(self, model: impl LanguageModel) -> Agent<I, O, E> {
        self.assemble(Arc::new(model))
    }

    fn assemble(self, model: Arc<dyn LanguageModel>) -> Agent<I, O, E> {
        let s = self.settings;
        let paused: Arc<dyn crate::memory::MemoryStore> = match &s.memory {
            Some(m) => m.store().clone(),
            None => Arc::new(crate::memory::InMemoryStore::new()),
        };
        Agent {
            inner: Arc::new(AgentInner {
                name: s.name,
                instructions: s.instructions,
                model,
                tools: s.tools,
                memory: s.memory,
                input: self.input,
                output: self.output,
                error: self.error,
                max_processor_retries: s.max_processor_retries,
                max_steps: s.max_steps,
                tool_choice: s.tool_choice,
                model_settings: s.model_settings,
                provider_options: s.provider_options,
                on_violation: s.on_violation,
                resolvers: s.resolvers,
                paused,
                approval_timeout: s.approval_timeout,
                layout: std::sync::OnceLock::new(),
                checked: std::sync::OnceLock::new(),
            }),
        }
    }
}
