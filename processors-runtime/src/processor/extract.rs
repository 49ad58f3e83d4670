//! Hook parameters by type, for `#[processor]` functions: each hook's arguments split into
//! parts, and one extractor trait per hook saying which parameter types it provides.
//!
//! A `#[processor]` function asks for what it needs (`chunk: &Chunk`, `list: &mut MessageList`,
//! `step: StepNumber`, …); a type its hook does not provide is a compile error naming the hook
//! and listing what it provides.

use super::args::*;
use crate::agent::{RunSummary, StepResult, ToolCallInfo};
use crate::chunk::{Chunk, FinishReason};
use crate::context::RequestContext;
use crate::message::{Message, MessageList};
use crate::model::{ApiError, LanguageModel, ModelRequest};
use crate::tripwire::{Abort, ProcessorError};
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

/// The chunks of a step as they reached the client (what a response cache stores).
#[derive(Debug, Clone, Copy)]
pub struct Delivered<'a>(pub &'a LlmResponse);

/// The system messages a hook sees (a copy).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemMessages(pub Vec<Message>);

macro_rules! hook_parts {
    (
        $a:lifetime, $args:ident => $parts:ident, $trait:ident,
        message = $msg:literal, note = $note:literal;
        fields { $($f:ident : $fty:ty),* $(,)? }
        provide { $($pty:ty => |$p:ident| $e:expr;)* }
    ) => {
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

        #[doc = concat!("A parameter type that `", stringify!($args), "` provides to a `#[processor]` hook.")]
        #[diagnostic::on_unimplemented(message = $msg, label = "not provided by this hook", note = $note)]
        pub trait $trait<$a, S: ?Sized>: Sized {
            /// Takes this parameter out of the hook's arguments (`None` when already taken).
            fn extract(parts: &mut $parts<$a, S>) -> Option<Self>;
        }

        $(
            impl<$a, S: ?Sized> $trait<$a, S> for $pty {
                #[inline]
                fn extract($p: &mut $parts<$a, S>) -> Option<Self> {
                    $e
                }
            }
        )*
    };
}

hook_parts! {
    'a, InputArgs => InputParts, FromInput,
    message = "`{Self}` is not a parameter that `process_input` provides",
    note = "`process_input` provides: `Vec<Message>` (the new input), `SystemMessages`, `&mut MessageList` or `&MessageList`, `&RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`";
    fields {
        messages: Vec<Message>,
        system_messages: Vec<Message>,
        message_list: &'a mut MessageList,
        request_context: &'a RequestContext,
        retry_count: u32,
    }
    provide {
        Vec<Message> => |p| p.messages.take();
        SystemMessages => |p| p.system_messages.take().map(SystemMessages);
        &'a mut MessageList => |p| p.message_list.take();
        &'a MessageList => |p| p.message_list.take().map(|m| &*m);
        &'a RequestContext => |p| p.request_context;
        RetryCount => |p| p.retry_count.map(RetryCount);
        Abort => |_p| Some(Abort::new());
    }
}

hook_parts! {
    'a, InputStepArgs => InputStepParts, FromInputStep,
    message = "`{Self}` is not a parameter that `process_input_step` provides",
    note = "`process_input_step` provides: `StepNumber`, `&[StepResult]`, `Vec<Message>`, `SystemMessages`, `&StepConfig`, `&mut MessageList` or `&MessageList`, `&RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`";
    fields {
        step_number: u32,
        steps: &'a [StepResult],
        messages: Vec<Message>,
        system_messages: Vec<Message>,
        config: &'a StepConfig,
        message_list: &'a mut MessageList,
        request_context: &'a RequestContext,
        retry_count: u32,
    }
    provide {
        StepNumber => |p| p.step_number.map(StepNumber);
        &'a [StepResult] => |p| p.steps;
        Vec<Message> => |p| p.messages.take();
        SystemMessages => |p| p.system_messages.take().map(SystemMessages);
        &'a StepConfig => |p| p.config;
        &'a mut MessageList => |p| p.message_list.take();
        &'a MessageList => |p| p.message_list.take().map(|m| &*m);
        &'a RequestContext => |p| p.request_context;
        RetryCount => |p| p.retry_count.map(RetryCount);
        Abort => |_p| Some(Abort::new());
    }
}

hook_parts! {
    'a, LlmRequestArgs => LlmRequestParts, FromLlmRequest,
    message = "`{Self}` is not a parameter that `process_llm_request` provides",
    note = "`process_llm_request` provides: `StepNumber`, `&ModelRequest`, `&dyn LanguageModel`, `&RequestContext`, `Abort`, and `state: &mut YourState`";
    fields {
        step_number: u32,
        request: &'a ModelRequest,
        model: &'a dyn LanguageModel,
        request_context: &'a RequestContext,
    }
    provide {
        StepNumber => |p| p.step_number.map(StepNumber);
        &'a ModelRequest => |p| p.request;
        &'a dyn LanguageModel => |p| p.model;
        &'a RequestContext => |p| p.request_context;
        Abort => |_p| Some(Abort::new());
    }
}

hook_parts! {
    'a, LlmResponseArgs => LlmResponseParts, FromLlmResponse,
    message = "`{Self}` is not a parameter that `process_llm_response` provides",
    note = "`process_llm_response` provides: `StepNumber`, `&ModelRequest`, `&LlmResponse` (as the model produced it), `Delivered` (as it reached the client), `FromCache`, `&RequestContext`, and `state: &mut YourState`";
    fields {
        step_number: u32,
        request: &'a ModelRequest,
        response: &'a LlmResponse,
        delivered: &'a LlmResponse,
        from_cache: bool,
        request_context: &'a RequestContext,
    }
    provide {
        StepNumber => |p| p.step_number.map(StepNumber);
        &'a ModelRequest => |p| p.request;
        &'a LlmResponse => |p| p.response;
        Delivered<'a> => |p| p.delivered.map(Delivered);
        FromCache => |p| p.from_cache.map(FromCache);
        &'a RequestContext => |p| p.request_context;
    }
}

hook_parts! {
    'a, OutputStreamArgs => OutputStreamParts, FromOutputStream,
    message = "`{Self}` is not a parameter that `process_output_stream` provides",
    note = "`process_output_stream` provides: `&Chunk`, `&[Chunk]` (the stream history), `&MessageList`, `&RequestContext`, `RetryCount`, `DataWriter`, `Abort`, and `state: &mut YourState`";
    fields {
        chunk: &'a Chunk,
        stream_history: &'a [Chunk],
        message_list: &'a MessageList,
        request_context: &'a RequestContext,
        retry_count: u32,
        writer: DataWriter<'a>,
    }
    provide {
        &'a Chunk => |p| p.chunk;
        &'a [Chunk] => |p| p.stream_history;
        &'a MessageList => |p| p.message_list;
        &'a RequestContext => |p| p.request_context;
        RetryCount => |p| p.retry_count.map(RetryCount);
        DataWriter<'a> => |p| p.writer.take();
        Abort => |_p| Some(Abort::new());
    }
}

hook_parts! {
    'a, OutputStepArgs => OutputStepParts, FromOutputStep,
    message = "`{Self}` is not a parameter that `process_output_step` provides",
    note = "`process_output_step` provides: `StepNumber`, `Vec<Message>` (the step's messages), `&str` (its text), `FinishReason`, `&[ToolCallInfo]`, `&[StepResult]`, `SystemMessages`, `&mut MessageList` or `&MessageList`, `&RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`";
    fields {
        step_number: u32,
        messages: Vec<Message>,
        text: &'a str,
        finish_reason: FinishReason,
        tool_calls: &'a [ToolCallInfo],
        steps: &'a [StepResult],
        system_messages: Vec<Message>,
        message_list: &'a mut MessageList,
        request_context: &'a RequestContext,
        retry_count: u32,
    }
    provide {
        StepNumber => |p| p.step_number.map(StepNumber);
        Vec<Message> => |p| p.messages.take();
        &'a str => |p| p.text;
        FinishReason => |p| p.finish_reason;
        &'a [ToolCallInfo] => |p| p.tool_calls;
        &'a [StepResult] => |p| p.steps;
        SystemMessages => |p| p.system_messages.take().map(SystemMessages);
        &'a mut MessageList => |p| p.message_list.take();
        &'a MessageList => |p| p.message_list.take().map(|m| &*m);
        &'a RequestContext => |p| p.request_context;
        RetryCount => |p| p.retry_count.map(RetryCount);
        Abort => |_p| Some(Abort::new());
    }
}

hook_parts! {
    'a, ToolResultArgs => ToolResultParts, FromToolResult,
    message = "`{Self}` is not a parameter that `process_tool_result` provides",
    note = "`process_tool_result` provides: `&ToolCallInfo`, `&Value` (the result), `&RequestContext`, `Abort`, and `state: &mut YourState`";
    fields {
        tool_call: &'a ToolCallInfo,
        result: &'a Value,
        request_context: &'a RequestContext,
    }
    provide {
        &'a ToolCallInfo => |p| p.tool_call;
        &'a Value => |p| p.result;
        &'a RequestContext => |p| p.request_context;
        Abort => |_p| Some(Abort::new());
    }
}

hook_parts! {
    'a, OutputResultArgs => OutputResultParts, FromOutputResult,
    message = "`{Self}` is not a parameter that `process_output_result` provides",
    note = "`process_output_result` provides: `Vec<Message>` (the response), `&RunSummary`, `&mut MessageList` or `&MessageList`, `&RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`";
    fields {
        messages: Vec<Message>,
        result: &'a RunSummary,
        message_list: &'a mut MessageList,
        request_context: &'a RequestContext,
        retry_count: u32,
    }
    provide {
        Vec<Message> => |p| p.messages.take();
        &'a RunSummary => |p| p.result;
        &'a mut MessageList => |p| p.message_list.take();
        &'a MessageList => |p| p.message_list.take().map(|m| &*m);
        &'a RequestContext => |p| p.request_context;
        RetryCount => |p| p.retry_count.map(RetryCount);
        Abort => |_p| Some(Abort::new());
    }
}

hook_parts! {
    'a, ApiErrorArgs => ApiErrorParts, FromApiError,
    message = "`{Self}` is not a parameter that `process_api_error` provides",
    note = "`process_api_error` provides: `&ApiError`, `StepNumber`, `&[StepResult]`, `&mut MessageList` or `&MessageList`, `&RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`";
    fields {
        error: &'a ApiError,
        step_number: u32,
        steps: &'a [StepResult],
        message_list: &'a mut MessageList,
        request_context: &'a RequestContext,
        retry_count: u32,
    }
    provide {
        &'a ApiError => |p| p.error;
        StepNumber => |p| p.step_number.map(StepNumber);
        &'a [StepResult] => |p| p.steps;
        &'a mut MessageList => |p| p.message_list.take();
        &'a MessageList => |p| p.message_list.take().map(|m| &*m);
        &'a RequestContext => |p| p.request_context;
        RetryCount => |p| p.retry_count.map(RetryCount);
        Abort => |_p| Some(Abort::new());
    }
}

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
hook_return!(StreamAction: StreamAction, (), Chunk, Option<Chunk>);
hook_return!(OutputOutcome: OutputOutcome, (), Vec<Message>);
hook_return!(Option<Value>: Option<Value>, Value);
hook_return!(ApiErrorAction: ApiErrorAction, ());

#[diagnostic::do_not_recommend]
impl HookReturn<Option<Value>> for () {
    #[inline]
    fn into_hook_result(self) -> Result<Option<Value>, ProcessorError> {
        Ok(None)
    }
}

#[diagnostic::do_not_recommend]
impl<E: Into<ProcessorError>> HookReturn<Option<Value>> for Result<(), E> {
    #[inline]
    fn into_hook_result(self) -> Result<Option<Value>, ProcessorError> {
        self.map(|()| None).map_err(Into::into)
    }
}
