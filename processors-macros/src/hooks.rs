//! The ten hooks as the macros see them: one variant each, and everything generated code
//! names for a hook derived from it.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// Which agent list a hook's processor belongs in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    Input,
    Output,
    Error,
}

impl Side {
    pub const ALL: [Side; 3] = [Side::Input, Side::Output, Side::Error];

    /// The marker trait of the side's list (`InputProcessor`, …).
    pub fn marker(self) -> Ident {
        let name = match self {
            Side::Input => "InputProcessor",
            Side::Output => "OutputProcessor",
            Side::Error => "ErrorProcessor",
        };
        format_ident!("{name}")
    }

    /// The runtime's trait that says where a processor with hooks on the sides `present`
    /// belongs; `None` when it belongs everywhere.
    pub fn home(present: &[Side]) -> Option<Ident> {
        let has = |side| present.contains(&side);
        let name = match (has(Side::Input), has(Side::Output), has(Side::Error)) {
            (true, false, false) => "BelongsInInput",
            (false, true, false) => "BelongsInOutput",
            (false, false, true) => "BelongsInError",
            (true, true, false) => "BelongsInInputAndOutput",
            (true, false, true) => "BelongsInInputAndError",
            (false, true, true) => "BelongsInOutputAndError",
            (true, true, true) | (false, false, false) => return None,
        };
        Some(format_ident!("{name}"))
    }
}

/// A hook, in the order of the agent loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Hook {
    Input,
    InputStep,
    LlmRequest,
    LlmResponse,
    OutputStream,
    OutputStep,
    ToolCall,
    ToolResult,
    OutputResult,
    ApiError,
}

impl Hook {
    pub const ALL: [Hook; 10] = [
        Hook::Input,
        Hook::InputStep,
        Hook::LlmRequest,
        Hook::LlmResponse,
        Hook::OutputStream,
        Hook::OutputStep,
        Hook::ToolCall,
        Hook::ToolResult,
        Hook::OutputResult,
        Hook::ApiError,
    ];

    /// The name in `#[processor(output_stream)]`.
    pub fn short(self) -> &'static str {
        match self {
            Hook::Input => "input",
            Hook::InputStep => "input_step",
            Hook::LlmRequest => "llm_request",
            Hook::LlmResponse => "llm_response",
            Hook::OutputStream => "output_stream",
            Hook::OutputStep => "output_step",
            Hook::ToolCall => "tool_call",
            Hook::ToolResult => "tool_result",
            Hook::OutputResult => "output_result",
            Hook::ApiError => "api_error",
        }
    }

    /// The method name of the `Processor` trait (`process_output_stream`).
    pub fn method(self) -> &'static str {
        match self {
            Hook::Input => "process_input",
            Hook::InputStep => "process_input_step",
            Hook::LlmRequest => "process_llm_request",
            Hook::LlmResponse => "process_llm_response",
            Hook::OutputStream => "process_output_stream",
            Hook::OutputStep => "process_output_step",
            Hook::ToolCall => "process_tool_call",
            Hook::ToolResult => "process_tool_result",
            Hook::OutputResult => "process_output_result",
            Hook::ApiError => "process_api_error",
        }
    }

    pub fn side(self) -> Side {
        match self {
            Hook::Input | Hook::InputStep | Hook::LlmRequest => Side::Input,
            Hook::LlmResponse
            | Hook::OutputStream
            | Hook::OutputStep
            | Hook::ToolCall
            | Hook::ToolResult
            | Hook::OutputResult => Side::Output,
            Hook::ApiError => Side::Error,
        }
    }

    /// The hook by its short name (`output_stream`).
    pub fn from_short(name: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| h.short() == name)
    }

    /// The hook by its method name (`process_output_stream`).
    pub fn from_method(name: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| h.method() == name)
    }

    /// The hook's name in the runtime's type names: `OutputStream` in `OutputStreamArgs`,
    /// `OutputStreamParts` and `FromOutputStream`.
    fn type_stem(self) -> &'static str {
        match self {
            Hook::Input => "Input",
            Hook::InputStep => "InputStep",
            Hook::LlmRequest => "LlmRequest",
            Hook::LlmResponse => "LlmResponse",
            Hook::OutputStream => "OutputStream",
            Hook::OutputStep => "OutputStep",
            Hook::ToolCall => "ToolCall",
            Hook::ToolResult => "ToolResult",
            Hook::OutputResult => "OutputResult",
            Hook::ApiError => "ApiError",
        }
    }

    /// The method as an identifier.
    pub fn method_ident(self) -> Ident {
        format_ident!("{}", self.method())
    }

    /// The arguments type (`OutputStreamArgs`).
    pub fn args(self) -> Ident {
        format_ident!("{}Args", self.type_stem())
    }

    /// The arguments split into parts (`OutputStreamParts`).
    pub fn parts(self) -> Ident {
        format_ident!("{}Parts", self.type_stem())
    }

    /// The extractor trait of the hook's parameters (`FromOutputStream`).
    pub fn extractor(self) -> Ident {
        format_ident!("From{}", self.type_stem())
    }

    /// The `Hooks` constant (`OUTPUT_STREAM`).
    pub fn constant(self) -> Ident {
        format_ident!("{}", self.short().to_ascii_uppercase())
    }

    /// The hook's outcome type; `private` is the path of `__private`.
    pub fn outcome(self, private: &TokenStream) -> TokenStream {
        let p = private;
        match self {
            Hook::Input => quote!(#p::InputOutcome),
            Hook::InputStep => quote!(#p::StepOverrides),
            Hook::LlmRequest => quote!(#p::LlmRequestAction),
            Hook::LlmResponse => quote!(()),
            Hook::OutputStream => quote!(#p::StreamAction),
            Hook::OutputStep | Hook::OutputResult => quote!(#p::OutputOutcome),
            Hook::ToolCall => quote!(#p::ToolCallAction),
            Hook::ToolResult => quote!(#p::ToolResultAction),
            Hook::ApiError => quote!(#p::ApiErrorAction),
        }
    }

    /// The short names, for error messages: `input, input_step, …`.
    pub fn list_short() -> String {
        Hook::ALL.map(Hook::short).join(", ")
    }

    /// The method names, for error messages: `process_input, process_input_step, …`.
    pub fn list_methods() -> String {
        Hook::ALL.map(Hook::method).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_to_their_hook() {
        for hook in Hook::ALL {
            assert_eq!(Hook::from_short(hook.short()), Some(hook));
            assert_eq!(Hook::from_method(hook.method()), Some(hook));
            assert_eq!(hook.method(), format!("process_{}", hook.short()));
        }
        assert_eq!(Hook::from_short("process_input"), None);
        assert_eq!(Hook::from_method("input"), None);
    }

    #[test]
    fn runtime_names_follow_the_hook() {
        assert_eq!(Hook::OutputStream.args(), "OutputStreamArgs");
        assert_eq!(Hook::OutputStream.parts(), "OutputStreamParts");
        assert_eq!(Hook::LlmRequest.extractor(), "FromLlmRequest");
        assert_eq!(Hook::ApiError.constant(), "API_ERROR");
        assert_eq!(Hook::ToolResult.side(), Side::Output);
    }

    #[test]
    fn a_processor_belongs_in_the_lists_of_its_sides() {
        assert_eq!(Side::home(&[Side::Error]).unwrap(), "BelongsInError");
        assert_eq!(
            Side::home(&[Side::Output, Side::Input]).unwrap(),
            "BelongsInInputAndOutput"
        );
        assert!(Side::home(&Side::ALL).is_none());
    }
}
