//! The [`Processor`] trait, its hooks, and the lists processors are put in.
//!
//! A processor implements any of ten hooks; [`Processor::HOOKS`] says which. The hooks are
//! declared once, in the hook table (`table.rs`), from which their argument types, the
//! parameters `#[processor]` functions may ask for, and the erased call of each hook behind
//! `dyn` are generated. Statically typed lists (tuples) call the hooks directly, with no boxing
//! or virtual call per chunk; lists built at run time hold `Arc<dyn DynProcessor>`. Both go
//! through one runner (`crate::runner`).

mod args;
pub(crate) mod call;
pub(crate) mod chain;
mod dynamic;
pub(crate) mod erased;
pub(crate) mod error;
pub mod extract;
mod from_fn;
// The module with unsafe code (besides one call in `runner::stream::outbox`'s
// `Outbox::stage`): see its SAFETY comments and tests. CI runs them, the runtime's other unit
// tests and `tests/workflows.rs` under Miri (`.ci/run`).
#[allow(unsafe_code)]
pub(crate) mod future_slot;
mod hooks;
pub(crate) mod known;
pub(crate) mod pipeline;
pub(crate) mod report;
mod shared;
pub(crate) mod state;
pub(crate) mod table;
pub(crate) mod tuples;

pub use crate::chunk::DataWriter;
pub use crate::shadow::{Shadow, ShadowState, shadow};
pub use args::*;
pub use dynamic::{DynProcessor, ProcessorRef, boxed};
pub use error::{Abort, HookError, ProcessorError};
pub use from_fn::{
    ApiErrorFn, InputFn, InputStepFn, LlmRequestFn, LlmResponseFn, OutputResultFn, OutputStepFn,
    OutputStreamFn, ToolCallFn, ToolResultFn, api_error_fn, input_fn, input_step_fn,
    llm_request_fn, llm_response_fn, output_result_fn, output_step_fn, output_stream_fn,
    tool_call_fn, tool_result_fn,
};
pub use hooks::{Hook, Hooks};
pub use pipeline::{DynPipeline, Pipeline};
pub use report::{ShadowAction, ShadowDecision, Violation, ViolationKind};

use std::future::Future;

/// A unit that plugs into the agent loop at one or more hooks.
///
/// Every hook defaults to "not present"; [`HOOKS`](Processor::HOOKS) lists the ones the type
/// implements, and the runner calls only those. `#[processor]` writes this impl for you; by
/// hand it reads:
///
/// ```
/// use processors_runtime::prelude::*;
///
/// /// Upper-cases streamed text and counts the chunks it saw.
/// struct Shout;
///
/// impl Processor for Shout {
///     type State = usize;
///     const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
///     fn id(&self) -> &str {
///         "shout"
///     }
///     async fn process_output_stream(
///         &self,
///         args: OutputStreamArgs<'_, usize>,
///     ) -> Result<StreamAction, ProcessorError> {
///         *args.state += 1;
///         Ok(args.chunk.clone().map_text(|t| t.to_uppercase()).into())
///     }
/// }
/// impl OutputProcessor for Shout {}
/// ```
pub trait Processor: Send + Sync + 'static {
    /// Per-request state: one value per processor id per request, shared by all of this
    /// processor's hooks within the request, fresh for every request.
    type State: Default + Send + 'static;

    /// The hooks this type implements.
    const HOOKS: Hooks;

    /// The id, when it is the same for every value of the type (as `#[processor]` declares
    /// it). `agent!` uses it to refuse two processors with one id at compile time.
    const STATIC_ID: Option<&'static str> = None;

    /// The processor's id: names it in errors, trip wires and traces, and keys its state.
    fn id(&self) -> &str;

    /// The hooks this value has: [`HOOKS`](Processor::HOOKS) for a type whose hooks are
    /// known statically. A processor made of others at run time (a
    /// [`Workflow`](crate::workflow::Workflow)) declares every hook in `HOOKS` and narrows it
    /// here to what its parts have; the runner calls only these, and an agent refuses it in a
    /// list it has none for.
    #[inline(always)]
    fn hooks(&self) -> Hooks {
        Self::HOOKS
    }

    /// The type whose hooks run: `Self`, and for a pointer (`Arc<P>`, `&'static P`) the
    /// pointee's. Lets the runtime recognise a processor of its own (the agent's memory)
    /// behind a pointer. Not meant to be overridden.
    #[doc(hidden)]
    fn __type_id(&self) -> std::any::TypeId {
        std::any::TypeId::of::<Self>()
    }

    /// Whether `data-*` chunks reach `process_output_stream` (they do not by default).
    fn process_data_parts(&self) -> bool {
        false
    }

    /// Whether the runner keeps the chunks this processor received, for
    /// [`OutputStreamArgs::stream_history`]. Costs a clone per chunk; off by default.
    fn keeps_stream_history(&self) -> bool {
        false
    }

    /// Once, before the loop, on the new input messages.
    ///
    /// What it receives, with an example: [`InputArgs`].
    fn process_input(
        &self,
        args: InputArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<InputOutcome, ProcessorError>> + Send {
        let _ = args;
        async { Ok(InputOutcome::Unchanged) }
    }

    /// Before every model call, including tool continuations.
    ///
    /// What it receives, with an example: [`InputStepArgs`].
    fn process_input_step(
        &self,
        args: InputStepArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<StepOverrides, ProcessorError>> + Send {
        let _ = args;
        async { Ok(StepOverrides::default()) }
    }

    /// On the provider request, before the call: rewrite it, or answer it.
    ///
    /// What it receives, with an example: [`LlmRequestArgs`].
    fn process_llm_request(
        &self,
        args: LlmRequestArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<LlmRequestAction, ProcessorError>> + Send {
        let _ = args;
        async { Ok(LlmRequestAction::Continue) }
    }

    /// After a step's model chunks are collected (or replayed from a cache).
    ///
    /// What it receives, with an example: [`LlmResponseArgs`].
    fn process_llm_response(
        &self,
        args: LlmResponseArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<(), ProcessorError>> + Send {
        let _ = args;
        async { Ok(()) }
    }

    /// The hooks whose `messages` and `system_messages` arguments this processor reads. The
    /// runner copies the conversation into those arguments only for these hooks, and passes
    /// empty vectors to the others. The default is every hook; `#[processor]` declares the
    /// hooks with a parameter that takes them (`Vec<Message>`, `SystemMessages`).
    const READS_MESSAGES: Hooks = Hooks::ALL;

    /// On every streamed chunk.
    ///
    /// What it receives, with an example: [`OutputStreamArgs`].
    fn process_output_stream(
        &self,
        args: OutputStreamArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<StreamAction, ProcessorError>> + Send {
        let _ = args;
        async { Ok(StreamAction::Pass) }
    }

    /// After each model response, before tools run: the place for guardrails that retry.
    ///
    /// What it receives, with an example: [`OutputStepArgs`].
    fn process_output_step(
        &self,
        args: OutputStepArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<OutputOutcome, ProcessorError>> + Send {
        let _ = args;
        async { Ok(OutputOutcome::Unchanged) }
    }

    /// Before each tool call the model made runs: let it run, rewrite its arguments, answer
    /// or refuse in the tool's place, ask for a person's approval, or abort.
    ///
    /// What it receives, with an example: [`ToolCallArgs`].
    fn process_tool_call(
        &self,
        args: ToolCallArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<ToolCallAction, ProcessorError>> + Send {
        let _ = args;
        async { Ok(ToolCallAction::Continue) }
    }

    /// After a tool call ran or failed, before its result enters history: replace the result,
    /// or only the model's copy of it.
    ///
    /// What it receives, with an example: [`ToolResultArgs`].
    fn process_tool_result(
        &self,
        args: ToolResultArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<ToolResultAction, ProcessorError>> + Send {
        let _ = args;
        async { Ok(ToolResultAction::Keep) }
    }

    /// Once at the end, on the response messages.
    ///
    /// What it receives, with an example: [`OutputResultArgs`].
    fn process_output_result(
        &self,
        args: OutputResultArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<OutputOutcome, ProcessorError>> + Send {
        let _ = args;
        async { Ok(OutputOutcome::Unchanged) }
    }

    /// When the provider rejects a request.
    ///
    /// What it receives, with an example: [`ApiErrorArgs`].
    fn process_api_error(
        &self,
        args: ApiErrorArgs<'_, Self::State>,
    ) -> impl Future<Output = Result<ApiErrorAction, ProcessorError>> + Send {
        let _ = args;
        async { Ok(ApiErrorAction::Unhandled) }
    }

    /// The hooks that never wait: their future is ready at its first poll. The runner polls
    /// such a hook's future once, where it calls it (behind `dyn` too), instead of keeping it
    /// in memory to await: a stream hook listed here costs no future per chunk. `#[processor]`
    /// lists its plain `fn` hooks, and the closures of `output_stream_fn` and the like are
    /// listed too. A hook listed here whose future is not ready at once fails its call with an
    /// error that says so.
    const SYNC_HOOKS: Hooks = Hooks::NONE;
}

/// A processor that belongs in an agent's `input` list.
///
/// `#[processor]` implements it for a processor with an input hook; a processor without one
/// gets an impl that can never hold, so that putting it in `input` is an error that says
/// where it belongs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input processor",
    label = "this processor has no input hook",
    note = "an input processor implements `process_input`, `process_input_step` or `process_llm_request`; a processor goes in the lists of the hooks it has: `output` for output hooks, `error` for `process_api_error`"
)]
pub trait InputProcessor: Processor {
    /// The processor, checked to belong in `input` (`agent!` calls it on each entry).
    #[doc(hidden)]
    #[inline(always)]
    fn __in_input(self) -> Self
    where
        Self: Sized,
    {
        self
    }
}

/// A processor that belongs in an agent's `output` list.
///
/// `#[processor]` implements it as [`InputProcessor`] describes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an output processor",
    label = "this processor has no output hook",
    note = "an output processor implements `process_output_stream`, `process_output_step`, `process_tool_call`, `process_tool_result`, `process_output_result` or `process_llm_response`; a processor goes in the lists of the hooks it has: `input` for input hooks, `error` for `process_api_error`"
)]
pub trait OutputProcessor: Processor {
    /// The processor, checked to belong in `output` (`agent!` calls it on each entry).
    #[doc(hidden)]
    #[inline(always)]
    fn __in_output(self) -> Self
    where
        Self: Sized,
    {
        self
    }
}

/// A processor that belongs in an agent's `error` list.
///
/// `#[processor]` implements it as [`InputProcessor`] describes. An error processor has
/// [`process_api_error`](Processor::process_api_error): when the provider rejects a request
/// (an [`ApiError`](crate::model::ApiError), such as a 400 for a prompt that is too long), it
/// may fix the message list and ask for the call again. Here, by hand, one that keeps only the
/// newest input message:
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
///
/// struct KeepNewest;
///
/// impl Processor for KeepNewest {
///     type State = ();
///     const HOOKS: Hooks = Hooks::API_ERROR;
///     fn id(&self) -> &str {
///         "keep-newest"
///     }
///     async fn process_api_error(
///         &self,
///         args: ApiErrorArgs<'_, ()>,
///     ) -> Result<ApiErrorAction, ProcessorError> {
///         if args.error.status != Some(400) || !args.error.message.contains("too long") {
///             return Ok(ApiErrorAction::Unhandled);
///         }
///         let ids: Vec<String> = args.message_list.input().map(|m| m.id.clone()).collect();
///         let Some((_, older)) = ids.split_last() else {
///             return Ok(ApiErrorAction::Unhandled);
///         };
///         let older: Vec<&str> = older.iter().map(String::as_str).collect();
///         args.message_list.remove(&older);
///         Ok(ApiErrorAction::Retry)
///     }
/// }
/// impl ErrorProcessor for KeepNewest {}
///
/// let model = ScriptedModel::new([
///     Turn::error(ApiError::new(400, "prompt too long")),
///     Turn::text("Paris."),
/// ]);
/// let agent = Agent::builder().model(model.clone()).error(KeepNewest).build().unwrap();
/// let input = vec![Message::user("(a very long document)"), Message::user("Capital of France?")];
/// let result = agent.generate(input).await.unwrap();
/// assert_eq!(result.text, "Paris.");
/// // The retried call was sent the newest message only.
/// let retried = &model.requests()[1].prompt;
/// assert_eq!(retried.len(), 1);
/// assert_eq!(retried[0].text(), "Capital of France?");
/// # });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an error processor",
    label = "this processor has no `process_api_error` hook",
    note = "an error processor implements `process_api_error`; a processor goes in the lists of the hooks it has: `input` for input hooks, `output` for output hooks"
)]
pub trait ErrorProcessor: Processor {
    /// The processor, checked to belong in `error` (`agent!` calls it on each entry).
    #[doc(hidden)]
    #[inline(always)]
    fn __in_error(self) -> Self
    where
        Self: Sized,
    {
        self
    }
}

/// Where a processor belongs, by the hooks it has: for a processor made by `#[processor]`, the
/// marker trait of each list it does not belong in depends on one of these traits (for
/// `&'_ P`, which never implements it), so that putting it in that list is an error that
/// says where it belongs instead.
pub mod placement {
    /// Declares the traits, one per set of lists.
    macro_rules! homes {
        ($($(#[$doc:meta])* $name:ident: $message:literal, $label:literal;)*) => { $(
            $(#[$doc])*
            #[diagnostic::on_unimplemented(
                message = $message,
                label = $label,
                note = "a processor goes in the lists of the hooks it has: `input` for `process_input`, `process_input_step` and `process_llm_request`; `output` for `process_output_stream`, `process_output_step`, `process_tool_call`, `process_tool_result`, `process_output_result` and `process_llm_response`; `error` for `process_api_error`"
            )]
            pub trait $name<P: ?Sized> {}
        )* };
    }

    /// An `agent!` list entry that is a value: a processor, if it is in a list it belongs in.
    #[derive(Debug, Clone, Copy)]
    pub struct IsValue;

    /// An `agent!` list entry that is a `Memory` value rather than the word `memory`: it
    /// needs the agent's `memory:` key, and in `output` it comes last.
    #[derive(Debug, Clone, Copy)]
    pub struct IsMemory;

    /// An `agent!` list entry that is a function: the function `#[processor]` was put on,
    /// where the type it generated belongs.
    #[derive(Debug, Clone, Copy)]
    pub struct IsFunction;

    homes! {
        /// Only input hooks.
        BelongsInInput: "`{P}` belongs in `input`: it has only input hooks", "move it to `input`";
        /// Only output hooks.
        BelongsInOutput: "`{P}` belongs in `output`: it has only output hooks", "move it to `output`";
        /// Only `process_api_error`.
        BelongsInError: "`{P}` belongs in `error`: its only hook is `process_api_error`", "move it to `error`";
        /// Input and output hooks, no `process_api_error`.
        BelongsInInputAndOutput: "`{P}` belongs in `input` and `output`: it has no `process_api_error`", "remove it from `error`";
        /// Input hooks and `process_api_error`, no output hook.
        BelongsInInputAndError: "`{P}` belongs in `input` and `error`: it has no output hook", "remove it from `output`";
        /// Output hooks and `process_api_error`, no input hook.
        BelongsInOutputAndError: "`{P}` belongs in `output` and `error`: it has no input hook", "remove it from `input`";
    }
}
