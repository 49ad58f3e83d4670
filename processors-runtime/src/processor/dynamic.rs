use super::*;
use futures::future::BoxFuture;
use std::any::{Any, TypeId};
use std::sync::Arc;

/// A processor behind a pointer, for lists built at run time and per-call overrides.
///
/// Implemented for every [`Processor`]; each hook call returns a boxed future.
pub trait DynProcessor: Send + Sync + 'static {
    /// [`Processor::id`].
    fn dyn_id(&self) -> &str;
    /// [`Processor::HOOKS`].
    fn dyn_hooks(&self) -> Hooks;
    /// [`Processor::process_data_parts`].
    fn dyn_process_data_parts(&self) -> bool;
    /// [`Processor::keeps_stream_history`].
    fn dyn_keeps_stream_history(&self) -> bool;
    /// A fresh state value.
    fn dyn_new_state(&self) -> Box<dyn Any + Send>;
    /// The state's type and its name.
    fn dyn_state_type(&self) -> (TypeId, &'static str);
    /// [`Processor::process_input`].
    fn dyn_process_input<'a>(
        &'a self,
        args: InputArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<InputOutcome, ProcessorError>>;
    /// [`Processor::process_input_step`].
    fn dyn_process_input_step<'a>(
        &'a self,
        args: InputStepArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<StepOverrides, ProcessorError>>;
    /// [`Processor::process_llm_request`].
    fn dyn_process_llm_request<'a>(
        &'a self,
        args: LlmRequestArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<LlmRequestAction, ProcessorError>>;
    /// [`Processor::process_llm_response`].
    fn dyn_process_llm_response<'a>(
        &'a self,
        args: LlmResponseArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<(), ProcessorError>>;
    /// [`Processor::OUTPUT_STREAM_IS_SYNC`].
    fn dyn_output_stream_is_sync(&self) -> bool;
    /// [`Processor::process_output_stream_now`].
    fn dyn_process_output_stream_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError>;
    /// [`Processor::process_output_stream`].
    fn dyn_process_output_stream<'a>(
        &'a self,
        args: OutputStreamArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<StreamAction, ProcessorError>>;
    /// [`Processor::process_output_step`].
    fn dyn_process_output_step<'a>(
        &'a self,
        args: OutputStepArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<OutputOutcome, ProcessorError>>;
    /// [`Processor::process_tool_result`].
    fn dyn_process_tool_result<'a>(
        &'a self,
        args: ToolResultArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, ProcessorError>>;
    /// [`Processor::process_output_result`].
    fn dyn_process_output_result<'a>(
        &'a self,
        args: OutputResultArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<OutputOutcome, ProcessorError>>;
    /// [`Processor::process_api_error`].
    fn dyn_process_api_error<'a>(
        &'a self,
        args: ApiErrorArgs<'a, dyn Any + Send>,
    ) -> BoxFuture<'a, Result<ApiErrorAction, ProcessorError>>;
}

/// A shared, dynamically dispatched processor.
pub type ProcessorRef = Arc<dyn DynProcessor>;

/// Puts a processor behind an `Arc<dyn DynProcessor>`.
pub fn boxed(processor: impl Processor) -> ProcessorRef {
    Arc::new(processor)
}

pub(crate) fn state_mismatch<P: Processor>(p: &P) -> ProcessorError {
    ProcessorError::msg(format!(
        "processor `{}` got a state of another type than `{}`",
        p.id(),
        std::any::type_name::<P::State>()
    ))
}

macro_rules! erase {
    ($name:ident, $hook:ident, $args:ident, $out:ty) => {
        fn $name<'a>(
            &'a self,
            args: $args<'a, dyn Any + Send>,
        ) -> BoxFuture<'a, Result<$out, ProcessorError>> {
            Box::pin(async move {
                match args.__map_state(|s| s.downcast_mut::<P::State>()) {
                    Some(args) => self.$hook(args).await,
                    None => Err(state_mismatch(self)),
                }
            })
        }
    };
}

impl<P: Processor> DynProcessor for P {
    fn dyn_id(&self) -> &str {
        self.id()
    }
    fn dyn_hooks(&self) -> Hooks {
        P::HOOKS
    }
    fn dyn_process_data_parts(&self) -> bool {
        self.process_data_parts()
    }
    fn dyn_keeps_stream_history(&self) -> bool {
        self.keeps_stream_history()
    }
    fn dyn_new_state(&self) -> Box<dyn Any + Send> {
        Box::new(P::State::default())
    }
    fn dyn_state_type(&self) -> (TypeId, &'static str) {
        (TypeId::of::<P::State>(), std::any::type_name::<P::State>())
    }
    fn dyn_output_stream_is_sync(&self) -> bool {
        P::OUTPUT_STREAM_IS_SYNC
    }
    fn dyn_process_output_stream_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError> {
        match args.__map_state(|s| s.downcast_mut::<P::State>()) {
            Some(args) => self.process_output_stream_now(args),
            None => Err(state_mismatch(self)),
        }
    }
    erase!(dyn_process_input, process_input, InputArgs, InputOutcome);
    erase!(
        dyn_process_input_step,
        process_input_step,
        InputStepArgs,
        StepOverrides
    );
    erase!(
        dyn_process_llm_request,
        process_llm_request,
        LlmRequestArgs,
        LlmRequestAction
    );
    erase!(
        dyn_process_llm_response,
        process_llm_response,
        LlmResponseArgs,
        ()
    );
    erase!(
        dyn_process_output_stream,
        process_output_stream,
        OutputStreamArgs,
        StreamAction
    );
    erase!(
        dyn_process_output_step,
        process_output_step,
        OutputStepArgs,
        OutputOutcome
    );
    erase!(
        dyn_process_tool_result,
        process_tool_result,
        ToolResultArgs,
        Option<serde_json::Value>
    );
    erase!(
        dyn_process_output_result,
        process_output_result,
        OutputResultArgs,
        OutputOutcome
    );
    erase!(
        dyn_process_api_error,
        process_api_error,
        ApiErrorArgs,
        ApiErrorAction
    );
}
