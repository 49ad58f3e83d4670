use crate::context::RequestContext;
use crate::message::Message;
use crate::processor::ProcessorError;
use crate::processor::{DynPipeline, Hooks, InputStepArgs, Processor, StepOverrides};
use futures::future::BoxFuture;
use std::future::Future;
use std::sync::Arc;

/// What a `prepare_step` closure sees.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PrepareStepInfo {
    /// The step about to run, from 0.
    pub step_number: u32,
    /// Every non-system message of the conversation.
    pub messages: Vec<Message>,
    /// The id of the model the step will call.
    pub model_id: String,
    /// Consecutive processor retries so far.
    pub retry_count: u32,
}

type PrepareFn = dyn Fn(PrepareStepInfo) -> BoxFuture<'static, Result<StepOverrides, ProcessorError>>
    + Send
    + Sync;

/// A per-call closure run before every step, after the input processors, as a processor with
/// the id `prepare-step`.
#[derive(Clone)]
pub struct PrepareStep {
    f: Arc<PrepareFn>,
}

impl PrepareStep {
    /// The id it runs under.
    pub const ID: &'static str = "prepare-step";

    /// Wraps an async closure.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(PrepareStepInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<StepOverrides, ProcessorError>> + Send + 'static,
    {
        PrepareStep {
            f: Arc::new(move |info| Box::pin(f(info))),
        }
    }
}

impl Processor for PrepareStep {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT_STEP;

    fn id(&self) -> &str {
        Self::ID
    }

    async fn process_input_step(
        &self,
        args: InputStepArgs<'_, ()>,
    ) -> Result<StepOverrides, ProcessorError> {
        (self.f)(PrepareStepInfo {
            step_number: args.step_number,
            messages: args.messages,
            model_id: args.config.model.model_id().to_owned(),
            retry_count: args.retry_count,
        })
        .await
    }
}

/// Per-call options of `generate_with` and `stream_with`.
///
/// Processor lists given here replace the agent's for this call (memory still runs around
/// them); limits given here win over the agent's.
#[derive(Clone, Default)]
#[must_use]
pub struct GenerateOptions {
    pub(crate) input: Option<DynPipeline>,
    pub(crate) output: Option<DynPipeline>,
    pub(crate) error: Option<DynPipeline>,
    pub(crate) max_processor_retries: Option<u32>,
    pub(crate) max_steps: Option<u32>,
    pub(crate) prepare_step: Option<PrepareStep>,
    pub(crate) request_context: RequestContext,
}

impl GenerateOptions {
    /// No override.
    pub fn new() -> Self {
        Self::default()
    }
    /// Replaces the input processors for this call.
    pub fn input_processors(mut self, list: DynPipeline) -> Self {
        self.input = Some(list);
        self
    }
    /// Replaces the output processors for this call.
    pub fn output_processors(mut self, list: DynPipeline) -> Self {
        self.output = Some(list);
        self
    }
    /// Replaces the error processors for this call.
    pub fn error_processors(mut self, list: DynPipeline) -> Self {
        self.error = Some(list);
        self
    }
    /// Overrides the retry limit.
    pub fn max_processor_retries(mut self, n: u32) -> Self {
        self.max_processor_retries = Some(n);
        self
    }
    /// Overrides the step limit.
    pub fn max_steps(mut self, n: u32) -> Self {
        self.max_steps = Some(n);
        self
    }
    /// Runs `f` before every step, after the input processors.
    pub fn prepare_step(mut self, f: PrepareStep) -> Self {
        self.prepare_step = Some(f);
        self
    }
    /// Sets the request context.
    pub fn request_context(mut self, cx: RequestContext) -> Self {
        self.request_context = cx;
        self
    }
}
