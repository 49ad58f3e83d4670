//! Hook parameters by type, for `#[processor]` functions: each hook's arguments split into
//! parts, and one extractor trait per hook saying which parameter types it provides.
//!
//! A `#[processor]` function asks for what it needs (`chunk: &Chunk`, `list: &mut MessageList`,
//! `step: StepNumber`, …); a type its hook does not provide is a compile error naming the hook
//! and listing what it provides.

use super::args::*;
use super::table::for_each_hook;
use super::{Abort, ProcessorError};
use crate::chunk::{Chunk, DataWriter, FinishReason, Usage};
use crate::context::RequestContext;
use crate::message::{Message, MessageList, ToolCall};
use crate::model::{ApiError, LanguageModel, ModelRequest};
use crate::step::{RunSummary, StepResult};
use crate::tool::Tool;
use serde_json::Value;

/// The step's number, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StepNumber(pub u32);

/// Consecutive processor retries so far (API-error retries in `process_api_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RetryCount(pub u32);

/// Whether the step's response was replayed by a `process_llm_request` processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FromCache(pub bool);

/// Whether the tool call failed (its result is then the error's message), in
/// `process_tool_result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IsError(pub bool);

/// What the model reads of a tool's result instead of the result, when an earlier processor
/// set a copy for it, in `process_tool_result`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelOutput<'a>(pub Option<&'a Value>);

/// The chunks of a step as they reached the client (what a response cache stores).
#[derive(Debug, Clone, Copy)]
pub struct Delivered<'a>(pub &'a LlmResponse);

/// The run's token usage so far (a step's own usage is a plain [`Usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunUsage(pub Usage);

/// The system messages a hook sees (a copy).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemMessages(pub Vec<Message>);

/// Generates, from the hook table, each hook's parts (its arguments as options, taken one
/// parameter at a time) and its extractor trait with the parameter types it provides.
macro_rules! hook_parts {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident,
            args: $args:ident, parts: $parts:ident, extractor: $trait:ident,
            outcome: $outcome:ty, context: $context:ident,
            doc: $doc:literal,
            example: $example:literal,
            fields { $( $(#[$fdoc:meta])* $f:ident : $fty:ty, )* }
            message: $msg:literal, note: $note:literal,
            provide { $( $pty:ty => |$p:ident| $e:expr; )* }
        }
    )*) => { $(
        #[doc = concat!("The arguments of `", stringify!($method), "`, taken one parameter at a time.")]
        #[doc(hidden)]
        pub struct $parts<$a, S: ?Sized> {
            pub state: Option<&$a mut S>,
            $(pub $f: Option<$fty>,)*
        }

        impl<$a, S: ?Sized> From<$args<$a, S>> for $parts<$a, S> {
            fn from(a: $args<$a, S>) -> Self {
                $parts { state: Some(a.state), $($f: Some(a.$f),)* }
            }
        }

        #[doc = concat!("A parameter type that `", stringify!($method), "` provides to a `#[processor]` hook.")]
        #[diagnostic::on_unimplemented(message = $msg, label = "not provided by this hook", note = $note)]
        pub trait $trait<$a, S: ?Sized>: Sized {
            /// Takes this parameter out of the hook's arguments (`None` when already taken).
            fn extract(parts: &mut $parts<$a, S>) -> Option<Self>;
        }

        // Through `Provided`: an impl whose type is a parameter is not "similar" to a type
        // the hook does not provide, so the compiler's report stays the message above and
        // does not show this crate's source.
        #[diagnostic::do_not_recommend]
        impl<$a, S: ?Sized + $a, T: Provided<$parts<$a, S>>> $trait<$a, S> for T {
            #[inline(always)]
            fn extract(parts: &mut $parts<$a, S>) -> Option<Self> {
                T::take(parts)
            }
        }

        $(
            impl<$a, S: ?Sized> Provided<$parts<$a, S>> for $pty {
                #[inline]
                fn take($p: &mut $parts<$a, S>) -> Option<Self> {
                    $e
                }
            }
        )*
    )* };
}

/// A parameter type taken out of a hook's parts `P`: the extractor traits are implemented
/// through it.
#[doc(hidden)]
pub trait Provided<P>: Sized {
    /// Takes this parameter out of the parts (`None` when already taken).
    fn take(parts: &mut P) -> Option<Self>;
}

for_each_hook!(hook_parts);

/// What a `#[processor]` hook may return: its outcome type, something that converts into it,
/// or a `Result` of either whose error converts into [`ProcessorError`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a valid return type for this hook",
    label = "this hook must produce `{Out}`",
    note = "return `Result<{Out}, ProcessorError>`, `{Out}` itself, or a type that converts into it (`()` for \"unchanged\")"
)]
pub trait HookReturn<Out> {
    /// The hook's result.
    fn into_hook_result(self) -> Result<Out, ProcessorError>;
}

macro_rules! hook_return {
    ($out:ty: $($t:ty),*) => {
        $(
            #[diagnostic::do_not_recommend]
            impl HookReturn<$out> for $t {
                #[inline]
                fn into_hook_result(self) -> Result<$out, ProcessorError> {
                    Ok(into_outcome(self))
                }
            }

            #[diagnostic::do_not_recommend]
            impl<E: Into<ProcessorError>> HookReturn<$out> for Result<$t, E> {
                #[inline]
                fn into_hook_result(self) -> Result<$out, ProcessorError> {
                    self.map(into_outcome).map_err(Into::into)
                }
            }
        )*
    };
}

/// Converts a hook's value into its outcome; `()` means "unchanged" for every hook.
trait IntoOutcome<Out> {
    fn into_outcome(self) -> Out;
}

impl<T: Into<Out>, Out> IntoOutcome<Out> for T {
    #[inline]
    fn into_outcome(self) -> Out {
        self.into()
    }
}

#[inline]
fn into_outcome<T: IntoOutcome<Out>, Out>(t: T) -> Out {
    t.into_outcome()
}

hook_return!(InputOutcome: InputOutcome, (), Vec<Message>);
hook_return!(StepOverrides: StepOverrides, ());
hook_return!(LlmRequestAction: LlmRequestAction, ());
hook_return!((): ());
hook_return!(StreamAction: StreamAction, (), Chunk, Option<Chunk>, Vec<Chunk>);
hook_return!(OutputOutcome: OutputOutcome, (), Vec<Message>);
hook_return!(ToolCallAction: ToolCallAction, ());
hook_return!(ToolResultAction: ToolResultAction, (), Option<Value>, Value);
hook_return!(ApiErrorAction: ApiErrorAction, ());

/// The state type every hook of one processor shares. Implemented only for the state type
/// itself, so a hook whose `state` parameter names another type is an error at that type, and
/// two spellings of one type (`Vec<u8>`, `std::vec::Vec<u8>`) are the same type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the state type of this processor, `{S}`",
    label = "expected `{S}`",
    note = "a processor has one state type, shared by all its hooks: the attribute's `state = ...`, or else the type of the first hook's `state` parameter"
)]
pub trait StateType<S> {
    /// The processor's state as the hook's parameter.
    fn cast(state: &mut S) -> &mut Self;
}

impl<S> StateType<S> for S {
    #[inline(always)]
    fn cast(state: &mut S) -> &mut S {
        state
    }
}

/// A `#[config]` parameter taken by value: a copy of the processor's field, made for every call.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `Copy`, so a `#[config]` parameter cannot take it by value",
    label = "take it by reference: `&{Self}`",
    note = "a `#[config]` parameter `T` is a copy of the processor's field, made for every call; `&T` reads the field itself"
)]
pub trait ConfigValue: Sized {
    /// A copy of the field.
    fn copied(field: &Self) -> Self;
}

impl<T: Copy> ConfigValue for T {
    #[inline(always)]
    fn copied(field: &T) -> T {
        *field
    }
}
