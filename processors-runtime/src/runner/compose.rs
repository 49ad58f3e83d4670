//! Processors made of processors (a workflow): one driver for every hook.
//!
//! A [`Composite`] runs the processors inside through one generic
//! [`drive`](Composite::drive), on the context of the hook that called it, with the dispatcher
//! calling each processor exactly as it would in a list. What a hook's call gives the
//! composite (its arguments) becomes the hook's context, and what the processors inside did to
//! that context becomes the composite's outcome, in each context's entry (`compose`, below):
//! the one place per hook where this is written. The composite's hook methods are generated from
//! the hook table ([`composite_hooks!`]), so a hook the table has is a hook every composite
//! handles, or the crate does not compile.
//!
//! What a hook lends (the step's settings, the request, the tool call and result, the summary)
//! is copied into the context; what it lends mutably (the message list, the request context)
//! is the run's own, so the processors' results apply to the run as they return them.

use super::dispatch::{HookCx, Place};
use super::hooks::{
    ApiErrorCx, InputCx, InputStepCx, LlmRequestCx, LlmResponseCx, Named, OutputResultCx,
    OutputStepCx, StreamCx, ToolCallCx, ToolResultCx,
};
use super::{Halt, ids};
use crate::processor::report::Reporter;
use crate::processor::{
    ApiErrorAction, ApiErrorArgs, InputArgs, InputOutcome, InputStepArgs, LlmRequestAction,
    LlmRequestArgs, LlmResponseArgs, OutputOutcome, OutputResultArgs, OutputStepArgs,
    OutputStreamArgs, ProcessorError, StepOverrides, StreamAction, ToolCallAction, ToolCallArgs,
    ToolResultAction, ToolResultArgs,
};

/// A processor made of processors. Its `Processor` impl declares its id, state and hooks, and
/// writes `for_each_hook!(composite_hooks);` for the hook methods.
pub(crate) trait Composite: Sync {
    /// The composite's state.
    type State: Send;

    /// Runs the processors inside on `cx`, for every hook but the stream hook. `Ok(true)`: one
    /// of them ended the hook's run ([`HookCx::apply`]: an error processor asked for a retry).
    fn drive<H: HookCx>(
        &self,
        cx: &mut H,
        state: &mut Self::State,
        report: &Reporter,
    ) -> impl Future<Output = Result<bool, Halt>> + Send;

    /// Runs the processors inside on a streamed chunk, by the stream chain's rules.
    fn stream(
        &self,
        args: OutputStreamArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<StreamAction, ProcessorError>> + Send;
}

/// A [`Composite`]'s hook methods, one per hook of the table, each handing its arguments to
/// its context's entry (`compose`). Used inside the `Processor` impl:
/// `for_each_hook!(composite_hooks);`.
macro_rules! composite_hooks {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty, context: $context:ident,
            $($rest:tt)*
        }
    )*) => { $(
        async fn $method(
            &self,
            args: $crate::processor::$args<'_, Self::State>,
        ) -> Result<$outcome, $crate::processor::ProcessorError> {
            $crate::runner::hooks::$context::compose(self, args).await
        }
    )* };
}

pub(crate) use composite_hooks;

impl InputCx<'_> {
    /// `process_input` of a composite. The input is applied to the run's list as the
    /// processors inside return it; the composite returns the input as it now is (which
    /// applies again as it stands), so that its own call reads as the change it made.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: InputArgs<'_, C::State>,
    ) -> Result<InputOutcome, ProcessorError> {
        let mut cx = InputCx {
            list: Place::Run(args.message_list),
            cx: Place::Run(args.request_context),
            retry_count: args.retry_count,
            changed: false,
        };
        c.drive(&mut cx, args.state, args.report).await?;
        Ok(match cx.changed {
            true => InputOutcome::Messages(cx.list.input().cloned().collect()),
            false => InputOutcome::Unchanged,
        })
    }
}

impl InputStepCx<'_> {
    /// `process_input_step` of a composite: the step's settings the processors inside named,
    /// as overrides (messages and system messages are applied to the run's list).
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: InputStepArgs<'_, C::State>,
    ) -> Result<StepOverrides, ProcessorError> {
        let mut cx = InputStepCx {
            step_number: args.step_number,
            steps: args.steps,
            config: Place::copy(args.config.clone()),
            list: Place::Run(args.message_list),
            cx: Place::Run(args.request_context),
            retry_count: args.retry_count,
            named: Named::default(),
        };
        c.drive(&mut cx, args.state, args.report).await?;
        Ok(cx.named_overrides())
    }
}

impl LlmRequestCx<'_> {
    /// `process_llm_request` of a composite: what the processors inside chose, as one action.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: LlmRequestArgs<'_, C::State>,
    ) -> Result<LlmRequestAction, ProcessorError> {
        let mut cx = LlmRequestCx {
            step_number: args.step_number,
            request: Place::copy(args.request.clone()),
            model: args.model,
            cx: Place::Run(args.request_context),
            answer: None,
            prompt_changed: false,
            request_changed: false,
        };
        c.drive(&mut cx, args.state, args.report).await?;
        Ok(cx.action())
    }
}

impl LlmResponseCx<'_> {
    /// `process_llm_response` of a composite: the processors inside only read.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: LlmResponseArgs<'_, C::State>,
    ) -> Result<(), ProcessorError> {
        let mut cx = LlmResponseCx {
            step_number: args.step_number,
            request: args.request,
            response: args.response,
            delivered: args.delivered,
            from_cache: args.from_cache,
            cx: Place::Run(args.request_context),
        };
        c.drive(&mut cx, args.state, args.report).await?;
        Ok(())
    }
}

impl StreamCx<'_> {
    /// `process_output_stream` of a composite: its own run of the chunk
    /// ([`Composite::stream`]).
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: OutputStreamArgs<'_, C::State>,
    ) -> Result<StreamAction, ProcessorError> {
        c.stream(args).await
    }
}

impl OutputStepCx<'_> {
    /// `process_output_step` of a composite. The step's messages are applied to the run's
    /// list as the processors inside return them; the composite returns them as they now are
    /// (which applies again as it stands), so that the list around it follows their ids.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: OutputStepArgs<'_, C::State>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let mut step_ids = ids(args.messages.iter());
        let mut cx = OutputStepCx {
            step_number: args.step_number,
            text: args.text,
            finish_reason: args.finish_reason,
            usage: args.usage,
            run_usage: args.run_usage,
            tool_calls: args.tool_calls,
            steps: args.steps,
            step_ids: Place::Run(&mut step_ids),
            list: Place::Run(args.message_list),
            cx: Place::Run(args.request_context),
            retry_count: args.retry_count,
            changed: false,
        };
        c.drive(&mut cx, args.state, args.report).await?;
        Ok(match cx.changed {
            true => OutputOutcome::Messages(cx.messages()),
            false => OutputOutcome::Unchanged,
        })
    }
}

impl ToolCallCx<'_> {
    /// `process_tool_call` of a composite: a decision inside is the composite's (an approval
    /// names the processor inside that asked, as an abort does); a rewrite is returned as the
    /// arguments now are.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: ToolCallArgs<'_, C::State>,
    ) -> Result<ToolCallAction, ProcessorError> {
        let mut cx = ToolCallCx {
            call: Place::copy(args.tool_call.clone()),
            tool: args.tool,
            step_number: args.step_number,
            steps: args.steps,
            list: args.message_list,
            cx: Place::Run(args.request_context),
            retry_count: args.retry_count,
            rewritten: false,
            decided: None,
        };
        c.drive(&mut cx, args.state, args.report).await?;
        Ok(match (cx.decided, cx.rewritten) {
            (Some((ToolCallAction::RequireApproval { reason, asked_by }, id)), _) => {
                ToolCallAction::RequireApproval {
                    reason,
                    asked_by: Some(asked_by.unwrap_or(id)),
                }
            }
            (Some((decided, _)), _) => decided,
            (None, true) => ToolCallAction::Rewrite(cx.call.into_inner().args),
            (None, false) => ToolCallAction::Continue,
        })
    }
}

impl ToolResultCx<'_> {
    /// `process_tool_result` of a composite: the result and the model's copy as the
    /// processors inside left them.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: ToolResultArgs<'_, C::State>,
    ) -> Result<ToolResultAction, ProcessorError> {
        let mut cx = ToolResultCx {
            tool_call: args.tool_call,
            result: Place::copy(args.result.clone()),
            model_output: args.model_output.cloned(),
            is_error: args.is_error,
            cx: Place::Run(args.request_context),
            changed: false,
        };
        c.drive(&mut cx, args.state, args.report).await?;
        if !cx.changed {
            return Ok(ToolResultAction::Keep);
        }
        let replaced = *cx.result != *args.result;
        Ok(match (replaced, cx.model_output) {
            (true, Some(for_model)) => ToolResultAction::ReplaceWithCopy {
                result: cx.result.into_inner(),
                for_model,
            },
            (true, None) => ToolResultAction::Replace(cx.result.into_inner()),
            (false, Some(for_model)) => ToolResultAction::ForModel(for_model),
            // A replacement by an equal value dropped the model's copy.
            (false, None) => ToolResultAction::Replace(cx.result.into_inner()),
        })
    }
}

impl OutputResultCx<'_> {
    /// `process_output_result` of a composite. The response is applied to the run's list as
    /// the processors inside return it; the composite returns it, so that the summary's text
    /// follows.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: OutputResultArgs<'_, C::State>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let mut cx = OutputResultCx {
            summary: Place::copy(args.result.clone()),
            list: Place::Run(args.message_list),
            cx: Place::Run(args.request_context),
            retry_count: args.retry_count,
            changed: false,
        };
        c.drive(&mut cx, args.state, args.report).await?;
        Ok(match cx.changed {
            true => OutputOutcome::Messages(cx.list.response().cloned().collect()),
            false => OutputOutcome::Unchanged,
        })
    }
}

impl ApiErrorCx<'_> {
    /// `process_api_error` of a composite: a retry when a processor inside asked for one.
    pub(crate) async fn compose<C: Composite>(
        c: &C,
        args: ApiErrorArgs<'_, C::State>,
    ) -> Result<ApiErrorAction, ProcessorError> {
        let mut cx = ApiErrorCx {
            error: args.error,
            step_number: args.step_number,
            steps: args.steps,
            list: Place::Run(args.message_list),
            cx: Place::Run(args.request_context),
            retry_count: args.retry_count,
        };
        Ok(match c.drive(&mut cx, args.state, args.report).await? {
            true => ApiErrorAction::Retry,
            false => ApiErrorAction::Unhandled,
        })
    }
}
