//! Processors from closures, for lists built at run time: `output_stream_fn("upper", |a| …)`,
//! in the style of tower's `service_fn` and axum's `from_fn`.
//!
//! Each function makes a processor with one hook; see [`output_stream_fn`] for what the
//! closure gets and may return.

use super::extract::HookReturn;
use super::*;
use std::marker::PhantomData;

macro_rules! hook_fn {
    ($(
        $(#[$doc:meta])*
        $name:ident => $ty:ident, $hook:ident, $args:ident, $out:ty, $hooks:ident, $marker:ident;
    )*) => {$(
        #[doc = concat!("A processor whose `", stringify!($hook), "` is a closure; see [`", stringify!($name), "`].")]
        pub struct $ty<S, F> {
            id: String,
            f: F,
            state: PhantomData<fn() -> S>,
        }

        $(#[$doc])*
        pub fn $name<S, F, R>(id: impl Into<String>, f: F) -> $ty<S, F>
        where
            S: Default + Send + 'static,
            F: for<'a, 'b> Fn(&'b mut $args<'a, S>) -> R + Send + Sync + 'static,
            R: HookReturn<$out>,
        {
            $ty { id: id.into(), f, state: PhantomData }
        }

        impl<S, F, R> Processor for $ty<S, F>
        where
            S: Default + Send + 'static,
            F: for<'a, 'b> Fn(&'b mut $args<'a, S>) -> R + Send + Sync + 'static,
            R: HookReturn<$out>,
        {
            type State = S;
            const HOOKS: Hooks = Hooks::$hooks;
            // The closure never waits: the runner calls it without a future.
            const SYNC_HOOKS: Hooks = Hooks::$hooks;

            fn id(&self) -> &str {
                &self.id
            }

            #[inline]
            fn $hook(
                &self,
                mut args: $args<'_, S>,
            ) -> impl Future<Output = Result<$out, ProcessorError>> + Send {
                std::future::ready((self.f)(&mut args).into_hook_result())
            }
        }

        #[diagnostic::do_not_recommend]
        impl<S, F, R> $marker for $ty<S, F>
        where
            S: Default + Send + 'static,
            F: for<'a, 'b> Fn(&'b mut $args<'a, S>) -> R + Send + Sync + 'static,
            R: HookReturn<$out>,
        {
        }

        impl<S, F> crate::processor::known::Known for $ty<S, F> {
            const HOOKS: Hooks = Hooks::$hooks;
            const STATIC_ID: Option<&'static str> = None;
        }
    )*};
}

hook_fn! {
    /// A processor whose `process_input` is `f`; see [`output_stream_fn`].
    input_fn => InputFn, process_input, InputArgs, InputOutcome, INPUT, InputProcessor;
    /// A processor whose `process_input_step` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    input_step_fn => InputStepFn, process_input_step, InputStepArgs, StepOverrides, INPUT_STEP, InputProcessor;
    /// A processor whose `process_llm_request` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    llm_request_fn => LlmRequestFn, process_llm_request, LlmRequestArgs, LlmRequestAction, LLM_REQUEST, InputProcessor;
    /// A processor whose `process_llm_response` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    llm_response_fn => LlmResponseFn, process_llm_response, LlmResponseArgs, (), LLM_RESPONSE, OutputProcessor;
    /// A processor whose `process_output_step` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    output_step_fn => OutputStepFn, process_output_step, OutputStepArgs, OutputOutcome, OUTPUT_STEP, OutputProcessor;
    /// A processor whose `process_tool_call` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    tool_call_fn => ToolCallFn, process_tool_call, ToolCallArgs, ToolCallAction, TOOL_CALL, OutputProcessor;
    /// A processor whose `process_tool_result` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    tool_result_fn => ToolResultFn, process_tool_result, ToolResultArgs, ToolResultAction, TOOL_RESULT, OutputProcessor;
    /// A processor whose `process_output_result` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    output_result_fn => OutputResultFn, process_output_result, OutputResultArgs, OutputOutcome, OUTPUT_RESULT, OutputProcessor;
    /// A processor whose `process_api_error` is `f`; see [`output_stream_fn`] for
    /// what the closure gets and may return.
    api_error_fn => ApiErrorFn, process_api_error, ApiErrorArgs, ApiErrorAction, API_ERROR, ErrorProcessor;
}

/// A processor whose `process_output_stream` is `f`, called on every chunk without a future.
pub struct OutputStreamFn<S, F> {
    id: String,
    f: F,
    state: PhantomData<fn() -> S>,
}

/// A processor whose `process_output_stream` is `f`, called on every chunk without a future.
///
/// Each `*_fn` function makes a processor with one hook, whose closure gets the hook's arguments
/// (`&mut InputArgs<'_, S>`, `&mut OutputStreamArgs<'_, S>`, …, with `S` the processor's
/// per-request state) and returns what a `#[processor]` hook may return: the hook's outcome,
/// something that converts into it (`()` for "unchanged", a `Chunk`, `Option<Chunk>` or
/// `Vec<Chunk>` for a stream hook, …), or a `Result` of either. The closures never wait, and
/// run without a future: a stream closure on every chunk, the others once per call.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
///
/// // Counts the chunks it sees in its state, and upper-cases text.
/// let shout = output_stream_fn("shout", |a: &mut OutputStreamArgs<'_, usize>| {
///     *a.state += 1;
///     a.chunk.clone().map_text(|t| t.to_uppercase())
/// });
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([Turn::text("hello")]))
///     .output(shout)
///     .build()
///     .unwrap();
/// assert_eq!(agent.generate("hi").await.unwrap().text, "HELLO");
/// # });
/// ```
pub fn output_stream_fn<S, F, R>(id: impl Into<String>, f: F) -> OutputStreamFn<S, F>
where
    S: Default + Send + 'static,
    F: for<'a, 'b> Fn(&'b mut OutputStreamArgs<'a, S>) -> R + Send + Sync + 'static,
    R: HookReturn<StreamAction>,
{
    OutputStreamFn {
        id: id.into(),
        f,
        state: PhantomData,
    }
}

impl<S, F, R> Processor for OutputStreamFn<S, F>
where
    S: Default + Send + 'static,
    F: for<'a, 'b> Fn(&'b mut OutputStreamArgs<'a, S>) -> R + Send + Sync + 'static,
    R: HookReturn<StreamAction>,
{
    type State = S;
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    // The closure never waits: the runner calls it without a future.
    const SYNC_HOOKS: Hooks = Hooks::OUTPUT_STREAM;

    fn id(&self) -> &str {
        &self.id
    }

    #[inline]
    fn process_output_stream(
        &self,
        mut args: OutputStreamArgs<'_, S>,
    ) -> impl Future<Output = Result<StreamAction, ProcessorError>> + Send {
        std::future::ready((self.f)(&mut args).into_hook_result())
    }
}

impl<S, F> crate::processor::known::Known for OutputStreamFn<S, F> {
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    const STATIC_ID: Option<&'static str> = None;
}

#[diagnostic::do_not_recommend]
impl<S, F, R> OutputProcessor for OutputStreamFn<S, F>
where
    S: Default + Send + 'static,
    F: for<'a, 'b> Fn(&'b mut OutputStreamArgs<'a, S>) -> R + Send + Sync + 'static,
    R: HookReturn<StreamAction>,
{
}
