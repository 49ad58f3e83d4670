//! Paths used by the code `#[processor]` and `agent!` generate. Not a stable API: anything
//! here may change in any release.
//!
//! The macros name `<crate>::__private::…` and `::core::…` only, where `<crate>` is
//! `::processors` unless the invocation says otherwise (`crate = processors_runtime`), so
//! generated code depends on nothing the user has imported.

pub use crate::agent::Agent;
pub use crate::memory::Memory;
pub use crate::processor::ProcessorError;
pub use crate::processor::extract::*;
pub use crate::processor::{
    ApiErrorAction, ApiErrorArgs, ErrorProcessor, Hooks, InputArgs, InputOutcome, InputProcessor,
    InputStepArgs, LlmRequestAction, LlmRequestArgs, LlmResponseArgs, OutputOutcome,
    OutputProcessor, OutputResultArgs, OutputStepArgs, OutputStreamArgs, Processor, StepOverrides,
    StreamAction, ToolResultArgs,
};
pub use serde_json::Value;

use crate::message::{Message, MessageList};
use crate::processor::DataWriter;
use std::marker::PhantomData;

/// Checks, at the processor's expression, that it belongs in an `input` list.
#[inline(always)]
pub fn assert_input<P: InputProcessor>(p: P) -> P {
    p
}

/// Checks, at the processor's expression, that it belongs in an `output` list.
#[inline(always)]
pub fn assert_output<P: OutputProcessor>(p: P) -> P {
    p
}

/// Checks, at the processor's expression, that it belongs in an `error` list.
#[inline(always)]
pub fn assert_error<P: ErrorProcessor>(p: P) -> P {
    p
}

/// Whether two static ids are known and equal.
pub const fn same_id(a: Option<&str>, b: Option<&str>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The error of a hook that asked for one parameter twice.
pub fn param_taken(id: &str, what: &str) -> ProcessorError {
    ProcessorError::msg(format!(
        "processor `{id}` asks for `{what}` more than once; its hook provides it once"
    ))
}

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

/// What a hook parameter of type `T` takes out of the hook's arguments, as bits of
/// `Takes::<T>::PARTS`, so that two parameters taking one part are a compile error at the
/// second (a type alias cannot hide them). Types that take nothing another parameter could
/// want get the constant of [`TakesNothing`], which generated code brings into scope.
pub struct Takes<T: ?Sized>(PhantomData<T>);

const MESSAGE_LIST: u8 = 1 << 0;
const MESSAGES: u8 = 1 << 1;
const SYSTEM_MESSAGES: u8 = 1 << 2;
const DATA_WRITER: u8 = 1 << 3;

impl Takes<&mut MessageList> {
    /// The message list.
    pub const PARTS: u8 = MESSAGE_LIST;
}

impl Takes<&MessageList> {
    /// The message list.
    pub const PARTS: u8 = MESSAGE_LIST;
}

impl Takes<Vec<Message>> {
    /// The hook's messages.
    pub const PARTS: u8 = MESSAGES;
}

impl Takes<SystemMessages> {
    /// The system messages.
    pub const PARTS: u8 = SYSTEM_MESSAGES;
}

impl Takes<DataWriter<'_>> {
    /// The data writer.
    pub const PARTS: u8 = DATA_WRITER;
}

/// `Takes::<T>::PARTS` for every type without an inherent constant above: nothing.
pub trait TakesNothing {
    /// No part.
    const PARTS: u8 = 0;
}

impl<T: ?Sized> TakesNothing for Takes<T> {}

/// Why a parameter taking `this` cannot follow parameters that took `earlier`, if it cannot.
pub const fn taken_twice(earlier: u8, this: u8) -> Option<&'static str> {
    let both = earlier & this;
    if both & MESSAGE_LIST != 0 {
        Some(
            "the message list is already a parameter of this hook; ask for it once (`&mut MessageList` also reads the list)",
        )
    } else if both & MESSAGES != 0 {
        Some(
            "the messages (`Vec<Message>`) are already a parameter of this hook; ask for them once",
        )
    } else if both & SYSTEM_MESSAGES != 0 {
        Some("the system messages are already a parameter of this hook; ask for them once")
    } else if both & DATA_WRITER != 0 {
        Some("the data writer is already a parameter of this hook; ask for it once")
    } else {
        None
    }
}

/// Implemented by `#[processor]` for a processor with an input hook; makes it an
/// [`InputProcessor`]. Generated code implements these instead of the marker traits because
/// the `#[diagnostic::do_not_recommend]` that keeps errors short must sit on the marker impl,
/// and the `diagnostic` namespace does not resolve in a crate without the prelude.
pub trait HasInputHook: Processor {}

/// Implemented by `#[processor]` for a processor with an output hook; makes it an
/// [`OutputProcessor`].
pub trait HasOutputHook: Processor {}

/// Implemented by `#[processor]` for a processor with `process_api_error`; makes it an
/// [`ErrorProcessor`].
pub trait HasErrorHook: Processor {}

#[diagnostic::do_not_recommend]
impl<P: HasInputHook> InputProcessor for P {}

#[diagnostic::do_not_recommend]
impl<P: HasOutputHook> OutputProcessor for P {}

#[diagnostic::do_not_recommend]
impl<P: HasErrorHook> ErrorProcessor for P {}
