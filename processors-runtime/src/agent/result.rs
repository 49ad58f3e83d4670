use crate::chunk::{FinishReason, Usage};
use crate::message::Message;
use crate::model::ApiError;
use crate::processor::Hook;
use crate::tripwire::TripWire;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallInfo {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments.
    pub args: Value,
}

/// A tool's result, as it entered history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultInfo {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The result (or the error, when `is_error`).
    pub result: Value,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// One step (one model call) of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// The step's number (retries of a step share it).
    pub step_number: u32,
    /// The text, as streamed (empty for a rejected step).
    pub text: String,
    /// Why the step finished (`tripwire` for a rejected step).
    pub finish_reason: FinishReason,
    /// Token usage of the call.
    pub usage: Usage,
    /// The tool calls the model asked for.
    pub tool_calls: Vec<ToolCallInfo>,
    /// The tool results.
    pub tool_results: Vec<ToolResultInfo>,
    /// Set when a processor rejected the step.
    pub tripwire: Option<TripWire>,
}

/// What `process_output_result` sees of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The response text.
    pub text: String,
    /// Total usage.
    pub usage: Usage,
    /// Why the run finished.
    pub finish_reason: FinishReason,
    /// Every step, rejected ones included.
    pub steps: Vec<StepResult>,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateResult {
    /// The run's id (as in its chunks).
    pub run_id: String,
    /// The response text (empty when a trip wire ended the run).
    pub text: String,
    /// Every step, rejected ones included with their trip wire.
    pub steps: Vec<StepResult>,
    /// Why the run finished (`other` after a trip wire).
    pub finish_reason: FinishReason,
    /// Total usage, rejected steps included.
    pub usage: Usage,
    /// Every tool call of accepted steps.
    pub tool_calls: Vec<ToolCallInfo>,
    /// Every tool result.
    pub tool_results: Vec<ToolResultInfo>,
    /// Set when a processor ended the run.
    pub tripwire: Option<TripWire>,
    /// The messages the run produced (as output processors left them).
    pub response_messages: Vec<Message>,
    /// What the framework warned about during the run.
    pub warnings: Vec<String>,
}

/// Why a run failed (a trip wire is not a failure: it is reported in the result).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The provider failed and no processor recovered.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// A hook returned an error.
    #[error("processor `{id}` failed in {hook}: {source}")]
    Processor {
        /// The processor's id.
        id: String,
        /// The hook.
        hook: Hook,
        /// Its error.
        #[source]
        source: crate::tripwire::BoxError,
    },
    /// A hook panicked; the run stopped and saved nothing.
    #[error(
        "processor `{id}` panicked in {hook}: {message}; the run was stopped and nothing was saved"
    )]
    Panicked {
        /// The processor's id.
        id: String,
        /// The hook.
        hook: Hook,
        /// The panic message.
        message: String,
    },
    /// A hook returned a result the run cannot use.
    #[error("processor `{id}` returned an invalid result from {hook}: {reason}")]
    InvalidResult {
        /// The processor's id.
        id: String,
        /// The hook.
        hook: Hook,
        /// What is wrong.
        reason: String,
    },
    /// The run's configuration cannot work (per-call lists that misplace memory, a step
    /// limit of 0).
    #[error("invalid run configuration: {0}")]
    Config(String),
    /// Two processors share an id (and so their state) but not a state type.
    #[error(
        "processors share the id `{id}` but not a state type (`{first}` and `{second}`); give one of them another id"
    )]
    StateConflict {
        /// The shared id.
        id: String,
        /// The first state type.
        first: &'static str,
        /// The second.
        second: &'static str,
    },
}
