use std::fmt;

/// One of the ten points where a processor can plug into the agent loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hook {
    /// `process_input`: once, before the loop.
    Input,
    /// `process_input_step`: before every model call.
    InputStep,
    /// `process_llm_request`: on the provider prompt, before the call.
    LlmRequest,
    /// `process_llm_response`: after a step's chunks are collected.
    LlmResponse,
    /// `process_output_stream`: on every chunk.
    OutputStream,
    /// `process_output_step`: after each model response, before tools run.
    OutputStep,
    /// `process_tool_call`: before each tool call the model made runs.
    ToolCall,
    /// `process_tool_result`: after a tool ran (or failed, or was answered for).
    ToolResult,
    /// `process_output_result`: once at the end.
    OutputResult,
    /// `process_api_error`: when the provider rejects a request.
    ApiError,
}

impl Hook {
    /// Every hook, in the order of the loop.
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

    /// The hook's method name (`process_input`, …).
    pub const fn name(self) -> &'static str {
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

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The set of hooks a processor implements; a processor is skipped at every other hook.
///
/// ```
/// use processors_runtime::{Hook, Hooks};
/// const H: Hooks = Hooks::OUTPUT_STREAM.with(Hooks::OUTPUT_RESULT);
/// assert!(H.contains(Hook::OutputStream));
/// assert!(!H.contains(Hook::Input));
/// assert!(H.is_output() && !H.is_input());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hooks(u16);

impl Hooks {
    /// No hook.
    pub const NONE: Hooks = Hooks(0);
    /// `process_input`.
    pub const INPUT: Hooks = Hooks(Hook::Input.bit());
    /// `process_input_step`.
    pub const INPUT_STEP: Hooks = Hooks(Hook::InputStep.bit());
    /// `process_llm_request`.
    pub const LLM_REQUEST: Hooks = Hooks(Hook::LlmRequest.bit());
    /// `process_llm_response`.
    pub const LLM_RESPONSE: Hooks = Hooks(Hook::LlmResponse.bit());
    /// `process_output_stream`.
    pub const OUTPUT_STREAM: Hooks = Hooks(Hook::OutputStream.bit());
    /// `process_output_step`.
    pub const OUTPUT_STEP: Hooks = Hooks(Hook::OutputStep.bit());
    /// `process_tool_call`.
    pub const TOOL_CALL: Hooks = Hooks(Hook::ToolCall.bit());
    /// `process_tool_result`.
    pub const TOOL_RESULT: Hooks = Hooks(Hook::ToolResult.bit());
    /// `process_output_result`.
    pub const OUTPUT_RESULT: Hooks = Hooks(Hook::OutputResult.bit());
    /// `process_api_error`.
    pub const API_ERROR: Hooks = Hooks(Hook::ApiError.bit());

    /// Every hook.
    pub const ALL: Hooks = Hooks(
        Self::INPUT.0
            | Self::INPUT_STEP.0
            | Self::LLM_REQUEST.0
            | Self::LLM_RESPONSE.0
            | Self::OUTPUT_STREAM.0
            | Self::OUTPUT_STEP.0
            | Self::TOOL_CALL.0
            | Self::TOOL_RESULT.0
            | Self::OUTPUT_RESULT.0
            | Self::API_ERROR.0,
    );

    const INPUT_SIDE: u16 = Self::INPUT.0 | Self::INPUT_STEP.0 | Self::LLM_REQUEST.0;
    const OUTPUT_SIDE: u16 = Self::LLM_RESPONSE.0
        | Self::OUTPUT_STREAM.0
        | Self::OUTPUT_STEP.0
        | Self::TOOL_CALL.0
        | Self::TOOL_RESULT.0
        | Self::OUTPUT_RESULT.0;

    /// The set with one hook.
    pub const fn of(hook: Hook) -> Hooks {
        Hooks(hook.bit())
    }

    /// Both sets together.
    pub const fn with(self, other: Hooks) -> Hooks {
        Hooks(self.0 | other.0)
    }

    /// Whether `hook` is in the set.
    pub const fn contains(self, hook: Hook) -> bool {
        self.0 & hook.bit() != 0
    }

    /// Whether the set has an input-side hook (`process_input`, `process_input_step`,
    /// `process_llm_request`): such a processor belongs in an `input` list.
    pub const fn is_input(self) -> bool {
        self.0 & Self::INPUT_SIDE != 0
    }

    /// Whether the set has an output-side hook: such a processor belongs in an `output` list.
    pub const fn is_output(self) -> bool {
        self.0 & Self::OUTPUT_SIDE != 0
    }

    /// Where a processor with these hooks belongs, as said in error messages:
    /// "it belongs in `output` and `error`".
    pub const fn home(self) -> &'static str {
        match (self.is_input(), self.is_output(), self.is_error()) {
            (true, true, true) => "it belongs in `input`, `output` and `error`",
            (true, true, false) => "it belongs in `input` and `output`",
            (true, false, true) => "it belongs in `input` and `error`",
            (false, true, true) => "it belongs in `output` and `error`",
            (true, false, false) => "it belongs in `input`",
            (false, true, false) => "it belongs in `output`",
            (false, false, true) => "it belongs in `error`",
            (false, false, false) => "it has no hook, so it belongs in no list",
        }
    }

    /// Whether the set has `process_api_error`: such a processor belongs in an `error` list.
    pub const fn is_error(self) -> bool {
        self.contains(Hook::ApiError)
    }

    /// Whether a processor with these hooks can ask for a retry (`process_input_step`,
    /// `process_output_step`, `process_tool_call` or `process_api_error`).
    pub const fn can_retry(self) -> bool {
        self.contains(Hook::InputStep)
            || self.contains(Hook::OutputStep)
            || self.contains(Hook::ToolCall)
            || self.contains(Hook::ApiError)
    }

    /// The hooks in the set, in loop order.
    pub fn iter(self) -> impl Iterator<Item = Hook> {
        Hook::ALL.into_iter().filter(move |h| self.contains(*h))
    }
}

impl std::ops::BitOr for Hooks {
    type Output = Hooks;
    fn bitor(self, rhs: Hooks) -> Hooks {
        self.with(rhs)
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(Hook::name)).finish()
    }
}
