//! Paths used by the code `#[processor]` and `agent!` generate. Not a stable API: anything
//! here may change in any release.
//!
//! The macros name `<crate>::__private::…` and `::core::…` only, where `<crate>` is
//! `::processors` unless the invocation says otherwise (`crate = processors_runtime`), so
//! generated code depends on nothing the user has imported.

pub use crate::agent::Agent;
pub use crate::memory::Memory;
pub use crate::processor::extract::*;
pub use crate::processor::{
    ApiErrorAction, ApiErrorArgs, ErrorProcessor, Hooks, InputArgs, InputOutcome, InputProcessor,
    InputStepArgs, LlmRequestAction, LlmRequestArgs, LlmResponseArgs, OutputOutcome,
    OutputProcessor, OutputResultArgs, OutputStepArgs, OutputStreamArgs, Processor, StepOverrides,
    StreamAction, ToolResultArgs,
};
pub use crate::tripwire::ProcessorError;
pub use serde_json::Value;

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
