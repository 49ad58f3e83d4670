//! A model wrapped with processors: [`Processed`], itself a [`LanguageModel`]. It lives with
//! the agent, whose loop it runs for one model call; `model` re-exports it beside the models.

use super::{Agent, AgentBuilder, AgentError, BuildError, Violation};
use crate::chunk::{Chunk, ChunkKind};
use crate::context::RequestContext;
use crate::error::BoxError;
use crate::model::{ApiError, LanguageModel, ModelRequest, ModelStream, ToolSpec};
use crate::processor::{
    DynPipeline, ErrorProcessor, Hooks, InputProcessor, OutputProcessor, Pipeline, ProcessorRef,
};
use crate::runner::stream::outbox::Handoff;
use crate::tool::{Tool, ToolContext};
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use serde_json::Value;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The hooks that run around one model call; the others belong to an agent's loop.
pub const AROUND_A_MODEL_CALL: Hooks = Hooks::INPUT
    .with(Hooks::INPUT_STEP)
    .with(Hooks::LLM_REQUEST)
    .with(Hooks::OUTPUT_STREAM)
    .with(Hooks::LLM_RESPONSE)
    .with(Hooks::OUTPUT_RESULT)
    .with(Hooks::API_ERROR);

/// A [`LanguageModel`] with processors around each of its calls, itself a `LanguageModel`:
/// it goes wherever a model goes (an agent, a judge of a built-in, another wrapper), and its
/// callers need not know of processors. [`LanguageModelExt::with_processors`] builds one.
///
/// Each call of [`stream`](LanguageModel::stream) runs, in this order, with one state per
/// processor for the call:
///
/// 1. `process_input` on the request's prompt: its system messages are the system set, the
///    rest is the input;
/// 2. `process_input_step` (step 0) on the request's settings: tool choice, provider options,
///    settings, messages and system messages, and the model (another model may answer the
///    call); the request's tools are offered as given;
/// 3. `process_llm_request` on the prompt the list gives, which may answer the call itself
///    (a cache hit: the model is not called, and no stream processor sees the answer);
/// 4. the model's call. A provider error asks `process_api_error` of the input, output and
///    error processors, in that order; a retry calls the model again, at most three times
///    unless [`max_api_retries`](ProcessedBuilder::max_api_retries) says otherwise. The
///    error that is not recovered is the call's error;
/// 5. `process_output_stream` on each chunk, then on a `step-finish` and on the `finish`
///    (what a processor held back is released there, as in an agent);
/// 6. `process_llm_response` with the call's request and chunks;
/// 7. after the step's end and before the `finish`, `process_output_result` on the call's one
///    step, as at the end of a run: memory ([`memory`](ProcessedBuilder::memory)) saves the
///    call there and a response cache keeps its answer. What it changes in the messages is
///    what is saved, not what the caller got: the answer has streamed.
///
/// The other hooks (`process_output_step`, `process_tool_call`, `process_tool_result`)
/// belong to an agent's loop and do not run: the wrapped model answers one call, and its
/// caller runs the tools. A processor with none of the hooks above is refused when the model
/// is built.
///
/// An abort ends the call with a [`ChunkKind::Tripwire`] chunk and a `finish` with reason
/// `other` (chunks that streamed before it stay streamed); an agent that calls the model ends
/// its run with that trip wire, as if one of its own processors had aborted. A hook that
/// fails or panics ends the call with an [`ApiError`] (not retryable) that says which
/// processor; a stream hook that fails passes its chunk on, as in an agent. Warnings go to
/// the log and to [`on_violation`](ProcessedBuilder::on_violation).
///
/// ```
/// # futures::executor::block_on(async {
/// use futures::StreamExt;
/// use processors_runtime::model::{LanguageModelExt, ModelRequest};
/// use processors_runtime::prelude::*;
///
/// let shout = output_stream_fn("shout", |a: &mut OutputStreamArgs<'_, ()>| {
///     a.chunk.clone().map_text(|t| t.to_uppercase())
/// });
/// let model = ScriptedModel::new([Turn::deltas(["hello ", "there"])])
///     .with_processors()
///     .output(shout)
///     .build()
///     .unwrap();
///
/// let request = ModelRequest { prompt: vec![Message::user("hi")], ..Default::default() };
/// let mut stream = model.stream(request).await.unwrap();
/// let mut text = String::new();
/// while let Some(chunk) = stream.next().await {
///     if let ChunkKind::TextDelta { text: t, .. } = chunk.unwrap() {
///         text.push_str(&t);
///     }
/// }
/// assert_eq!(text, "HELLO THERE");
///
/// // And it is a model like any other.
/// let agent = Agent::builder().model(model).build().unwrap();
/// # let _ = agent;
/// # });
/// ```
pub struct Processed<M, I = DynPipeline, O = DynPipeline, E = DynPipeline> {
    model: Arc<M>,
    /// The lists, the model and what a call needs of them, as an agent holds them.
    agent: Agent<I, O, E>,
}

impl<M, I, O, E> Clone for Processed<M, I, O, E> {
    fn clone(&self) -> Self {
        Processed {
            model: self.model.clone(),
            agent: self.agent.clone(),
        }
    }
}

impl<M: LanguageModel> Processed<M> {
    /// Starts wrapping `model`; [`LanguageModelExt::with_processors`] says the same.
    pub fn builder(model: M) -> ProcessedBuilder<M> {
        ProcessedBuilder {
            model,
            agent: Agent::builder(),
            max_api_retries: None,
        }
    }
}

impl<M, I, O, E> Processed<M, I, O, E> {
    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.model
    }
}

impl<M: LanguageModel, I: Pipeline, O: Pipeline, E: Pipeline> LanguageModel
    for Processed<M, I, O, E>
{
    fn provider(&self) -> &str {
        self.model.provider()
    }

    fn model_id(&self) -> &str {
        self.model.model_id()
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        self.stream_with_context(request, &RequestContext::default())
    }

    /// The call, its processors given `context`'s thread, resource and values (a copy: what
    /// they set in it stays in the call).
    fn stream_with_context(
        &self,
        request: ModelRequest,
        context: &RequestContext,
    ) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let tools = request
            .tools
            .iter()
            .map(|spec| Arc::new(Offered(spec.clone())) as Arc<dyn Tool>)
            .collect();
        let cx = context.clone();
        let stream = ProcessedStream::new(|slot| self.agent.model_call(request, tools, cx, slot));
        stream.started().boxed()
    }
}

/// Builds a [`Processed`] model; see [`LanguageModelExt::with_processors`].
///
/// The lists are an agent's: `input` takes processors with an input hook, `output` those
/// with an output hook, `error` those with `process_api_error`, and the compiler refuses the
/// others. [`build`](Self::build) refuses what an agent refuses, and a processor none of whose
/// hooks runs around a model call.
#[must_use]
pub struct ProcessedBuilder<M, I = DynPipeline, O = DynPipeline, E = DynPipeline> {
    model: M,
    agent: AgentBuilder<I, O, E>,
    max_api_retries: Option<u32>,
}

impl<M: LanguageModel, I: Pipeline, O: Pipeline, E: Pipeline> ProcessedBuilder<M, I, O, E> {
    /// How many times a call may be retried after provider errors, when a processor asks
    /// (default: 3 when a processor has `process_api_error`).
    pub fn max_api_retries(mut self, n: u32) -> Self {
        self.max_api_retries = Some(n);
        self
    }

    /// Gives the wrapped model memory: for a call whose request context names a thread and a
    /// resource ([`LanguageModel::stream_with_context`]; an agent passes its run's), the
    /// thread's history is loaded before the input processors run, and the call's input and
    /// answer, as the processors left them, are saved before its `finish`, unless it was
    /// aborted or failed.
    pub fn memory(mut self, memory: impl crate::memory::IntoMemory) -> Self {
        self.agent = self.agent.memory(memory);
        self
    }

    /// Called for every abort (block) and warning of a processor, and every decision of
    /// one in [`Shadow`](crate::processor::Shadow); a panicking callback is
    /// caught and logged.
    pub fn on_violation(mut self, f: impl Fn(&Violation) + Send + Sync + 'static) -> Self {
        self.agent = self.agent.on_violation(f);
        self
    }

    /// The input list as a tuple of processors (statically dispatched), in place of the
    /// processors added one by one.
    pub fn input_pipeline<I2: Pipeline>(self, input: I2) -> ProcessedBuilder<M, I2, O, E> {
        ProcessedBuilder {
            model: self.model,
            agent: self.agent.input_pipeline(input),
            max_api_retries: self.max_api_retries,
        }
    }

    /// The output list as a tuple of processors (statically dispatched).
    pub fn output_pipeline<O2: Pipeline>(self, output: O2) -> ProcessedBuilder<M, I, O2, E> {
        ProcessedBuilder {
            model: self.model,
            agent: self.agent.output_pipeline(output),
            max_api_retries: self.max_api_retries,
        }
    }

    /// The error list as a tuple of processors (statically dispatched).
    pub fn error_pipeline<E2: Pipeline>(self, error: E2) -> ProcessedBuilder<M, I, O, E2> {
        ProcessedBuilder {
            model: self.model,
            agent: self.agent.error_pipeline(error),
            max_api_retries: self.max_api_retries,
        }
    }

    /// Builds the wrapped model.
    pub fn build(self) -> Result<Processed<M, I, O, E>, BuildError> {
        let model = Arc::new(self.model);
        let mut agent = self
            .agent
            .name(format!("{}/{}", model.provider(), model.model_id()))
            .shared_model(model.clone() as Arc<dyn LanguageModel>);
        if let Some(n) = self.max_api_retries {
            agent = agent.max_processor_retries(n);
        }
        let agent = agent.build()?;
        if let Some((id, hooks)) = agent.processors().into_iter().find_map(|p| {
            let hooks = p.dyn_hooks();
            let runs = hooks.iter().any(|h| AROUND_A_MODEL_CALL.contains(h));
            (!runs).then(|| (p.dyn_id().to_owned(), hooks))
        }) {
            return Err(BuildError::NotAroundAModel { id, hooks });
        }
        Ok(Processed { model, agent })
    }
}

impl<M: LanguageModel, I: Pipeline, E: Pipeline> ProcessedBuilder<M, I, DynPipeline, E> {
    /// Adds an output processor.
    pub fn output(mut self, p: impl OutputProcessor) -> Self {
        self.agent = self.agent.output(p);
        self
    }

    /// Adds a shared output processor.
    pub fn output_ref(mut self, p: ProcessorRef) -> Self {
        self.agent = self.agent.output_ref(p);
        self
    }
}

impl<M: LanguageModel, O: Pipeline, E: Pipeline> ProcessedBuilder<M, DynPipeline, O, E> {
    /// Adds an input processor.
    pub fn input(mut self, p: impl InputProcessor) -> Self {
        self.agent = self.agent.input(p);
        self
    }

    /// Adds a shared input processor.
    pub fn input_ref(mut self, p: ProcessorRef) -> Self {
        self.agent = self.agent.input_ref(p);
        self
    }
}

impl<M: LanguageModel, I: Pipeline, O: Pipeline> ProcessedBuilder<M, I, O, DynPipeline> {
    /// Adds an error processor.
    pub fn error(mut self, p: impl ErrorProcessor) -> Self {
        self.agent = self.agent.error(p);
        self
    }

    /// Adds a shared error processor.
    pub fn error_ref(mut self, p: ProcessorRef) -> Self {
        self.agent = self.agent.error_ref(p);
        self
    }
}

/// [`with_processors`](LanguageModelExt::with_processors) for every model.
pub trait LanguageModelExt: LanguageModel + Sized {
    /// Starts wrapping this model with processors: a [`Processed`] model, which is itself a
    /// [`LanguageModel`].
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::model::LanguageModelExt;
    /// use processors_runtime::prelude::*;
    ///
    /// let no_secrets = input_fn("no-secrets", |a: &mut InputArgs<'_, ()>| -> Result<_, ProcessorError> {
    ///     if a.messages.iter().any(|m| m.text().contains("password")) {
    ///         return Err(a.abort().reason("do not send passwords").into());
    ///     }
    ///     Ok(InputOutcome::Unchanged)
    /// });
    /// let model = ScriptedModel::new([Turn::text("never seen")])
    ///     .with_processors()
    ///     .input(no_secrets)
    ///     .build()
    ///     .unwrap();
    /// // Inside an agent, the wrapped model's trip wire ends the run.
    /// let agent = Agent::builder().model(model).build().unwrap();
    /// let result = agent.generate("my password is hunter2").await.unwrap();
    /// assert_eq!(result.tripwire.unwrap().processor_id, "no-secrets");
    /// # });
    /// ```
    fn with_processors(self) -> ProcessedBuilder<Self> {
        Processed::builder(self)
    }
}

impl<M: LanguageModel> LanguageModelExt for M {}

/// A tool of a request, offered to the wrapped model as the caller gave it. The caller runs
/// the calls: this one is never asked to.
struct Offered(ToolSpec);

impl Tool for Offered {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn description(&self) -> &str {
        &self.0.description
    }

    fn parameters(&self) -> &Value {
        &self.0.parameters
    }

    fn execute<'a>(
        &'a self,
        _: Value,
        _: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        let message = format!(
            "`{}` is run by the caller of the wrapped model, not by the model",
            self.0.name
        );
        futures::future::ready(Err(BoxError::from(message))).boxed()
    }

    fn spec(&self) -> ToolSpec {
        self.0.clone()
    }
}

type CallFuture = Pin<Box<dyn Future<Output = Result<ChunkKind, AgentError>> + Send>>;

/// The chunks of a wrapped model's call: the model chunks the stream processors let through
/// (no step or run boundaries), ending with a `finish`, or with the call's error.
struct ProcessedStream {
    call: Option<CallFuture>,
    slot: Arc<Handoff>,
    ready: VecDeque<Chunk>,
    /// The first chunk, taken to see that the call started, and sent first.
    first: Option<ChunkKind>,
    /// Whether a `finish` was sent.
    finished: bool,
    /// How the call ended, once it has: sent after its chunks.
    end: Option<Result<ChunkKind, AgentError>>,
}

impl ProcessedStream {
    fn new<F, Fut>(start: F) -> Self
    where
        F: FnOnce(Arc<Handoff>) -> Fut,
        Fut: Future<Output = Result<ChunkKind, AgentError>> + Send + 'static,
    {
        let slot = Arc::new(Handoff::default());
        ProcessedStream {
            call: Some(Box::pin(start(slot.clone()))),
            slot,
            ready: VecDeque::new(),
            first: None,
            finished: false,
            end: None,
        }
    }

    /// The stream once the model has accepted the call (or the processors answered it, or
    /// ended it): a call the provider refused, unrecovered, is the error here, as a bare
    /// model's `stream` gives it.
    async fn started(mut self) -> Result<ModelStream, ApiError> {
        match self.next().await {
            Some(Err(e)) => Err(e),
            Some(Ok(first)) => {
                self.first = Some(first);
                Ok(Box::pin(self))
            }
            None => Ok(Box::pin(self)),
        }
    }
}

/// A call's failure as the model's error: the provider's as it was, a processor's as an
/// error that names it.
fn as_api_error(e: AgentError) -> ApiError {
    match e {
        AgentError::Api(e) => e,
        other => ApiError::other(other.to_string(), false),
    }
}

impl Stream for ProcessedStream {
    type Item = Result<ChunkKind, ApiError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        loop {
            while let Some(chunk) = this.ready.pop_front() {
                match chunk.kind {
                    // A step's and a run's boundaries are the agent's, not the model's.
                    ChunkKind::Start
                    | ChunkKind::StepStart { .. }
                    | ChunkKind::StepFinish { .. } => {}
                    kind => {
                        this.finished |= matches!(kind, ChunkKind::Finish { .. });
                        return Poll::Ready(Some(Ok(kind)));
                    }
                }
            }
            let Some(call) = this.call.as_mut() else {
                return Poll::Ready(match this.end.take() {
                    Some(Ok(finish)) if !this.finished => {
                        this.finished = true;
                        Some(Ok(finish))
                    }
                    Some(Err(e)) => Some(Err(as_api_error(e))),
                    Some(Ok(_)) | None => None,
                });
            };
            let polled = call.as_mut().poll(cx);
            if let Poll::Ready(end) = polled {
                this.call = None;
                this.end = Some(end);
            }
            this.slot.take_all(&mut this.ready);
            if this.ready.is_empty() && this.call.is_some() {
                return Poll::Pending;
            }
        }
    }
}
