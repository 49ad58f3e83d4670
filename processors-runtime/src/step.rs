//! What a run records of its steps: plain data, shared by the processor hooks that read it
//! and the results that report it.

use crate::chunk::{FinishReason, Usage};
use crate::message::{Text, ToolCall, ToolResult};
use crate::tripwire::TripWire;
use serde::{Deserialize, Serialize};

/// One step (one model call) of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// The step's number (retries of a step share it).
    pub step_number: u32,
    /// The text, as the step's messages have it once output-step processors ran (the
    /// streamed text unless one changed it; empty for a rejected step).
    pub text: Text,
    /// Why the step finished (`tripwire` for a rejected step).
    pub finish_reason: FinishReason,
    /// Token usage of the call.
    pub usage: Usage,
    /// The tool calls the model asked for.
    pub tool_calls: Vec<ToolCall>,
    /// The tool results.
    pub tool_results: Vec<ToolResult>,
    /// Set when a processor rejected the step.
    pub tripwire: Option<TripWire>,
}

/// What `process_output_result` sees of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The response text.
    pub text: Text,
    /// Total usage.
    pub usage: Usage,
    /// Why the run finished.
    pub finish_reason: FinishReason,
    /// Every step, rejected ones included.
    pub steps: Vec<StepResult>,
}
