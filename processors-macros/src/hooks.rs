//! The nine hooks as the macros see them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    Input,
    Output,
    Error,
}

#[derive(Clone, Copy, Debug)]
pub struct Hook {
    /// The name in `#[processor(output_stream)]`.
    pub short: &'static str,
    /// The method name.
    pub method: &'static str,
    /// The `Hooks` constant.
    pub constant: &'static str,
    /// The args type (`OutputStreamArgs`); parts and extractor names derive from it.
    pub stem: &'static str,
    pub side: Side,
}

pub const HOOKS: [Hook; 9] = [
    Hook {
        short: "input",
        method: "process_input",
        constant: "INPUT",
        stem: "Input",
        side: Side::Input,
    },
    Hook {
        short: "input_step",
        method: "process_input_step",
        constant: "INPUT_STEP",
        stem: "InputStep",
        side: Side::Input,
    },
    Hook {
        short: "llm_request",
        method: "process_llm_request",
        constant: "LLM_REQUEST",
        stem: "LlmRequest",
        side: Side::Input,
    },
    Hook {
        short: "llm_response",
        method: "process_llm_response",
        constant: "LLM_RESPONSE",
        stem: "LlmResponse",
        side: Side::Output,
    },
    Hook {
        short: "output_stream",
        method: "process_output_stream",
        constant: "OUTPUT_STREAM",
        stem: "OutputStream",
        side: Side::Output,
    },
    Hook {
        short: "output_step",
        method: "process_output_step",
        constant: "OUTPUT_STEP",
        stem: "OutputStep",
        side: Side::Output,
    },
    Hook {
        short: "tool_result",
        method: "process_tool_result",
        constant: "TOOL_RESULT",
        stem: "ToolResult",
        side: Side::Output,
    },
    Hook {
        short: "output_result",
        method: "process_output_result",
        constant: "OUTPUT_RESULT",
        stem: "OutputResult",
        side: Side::Output,
    },
    Hook {
        short: "api_error",
        method: "process_api_error",
        constant: "API_ERROR",
        stem: "ApiError",
        side: Side::Error,
    },
];

pub fn by_short(name: &str) -> Option<Hook> {
    HOOKS.iter().copied().find(|h| h.short == name)
}

pub fn by_method(name: &str) -> Option<Hook> {
    HOOKS.iter().copied().find(|h| h.method == name)
}

impl Hook {
    /// The hook's outcome type; `p` is the path of `__private`.
    pub fn outcome(self, p: &TokenStream) -> TokenStream {
        match self.stem {
            "Input" => quote!(#p::InputOutcome),
            "InputStep" => quote!(#p::StepOverrides),
            "LlmRequest" => quote!(#p::LlmRequestAction),
            "LlmResponse" => quote!(()),
            "OutputStream" => quote!(#p::StreamAction),
            "OutputStep" | "OutputResult" => quote!(#p::OutputOutcome),
            "ToolResult" => quote!(::core::option::Option<#p::Value>),
            _ => quote!(#p::ApiErrorAction),
        }
    }

    pub fn args(self) -> syn::Ident {
        format_ident!("{}Args", self.stem)
    }

    pub fn parts(self) -> syn::Ident {
        format_ident!("{}Parts", self.stem)
    }

    pub fn extractor(self) -> syn::Ident {
        format_ident!("From{}", self.stem)
    }

    pub fn constant(self) -> syn::Ident {
        format_ident!("{}", self.constant)
    }
}
