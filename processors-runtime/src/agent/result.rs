use super::BuildError;
use crate::chunk::{FinishReason, Usage};
use crate::message::{Message, Text, ToolCall, ToolResult};
use crate::model::ApiError;
use crate::processor::HookError;
use crate::step::StepResult;
use crate::tripwire::TripWire;
use std::collections::BTreeMap;

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateResult {
    /// The run's id (as in its chunks).
    pub run_id: String,
    /// The response text (empty when a trip wire ended the run).
    pub text: Text,
    /// Every step, rejected ones included with their trip wire.
    pub steps: Vec<StepResult>,
    /// Why the run finished (`other` after a trip wire).
    pub finish_reason: FinishReason,
    /// Total usage of the agent's model, rejected steps included.
    pub usage: Usage,
    /// What processors' own model calls used (judging, embedding), per processor id, as they
    /// reported it with [`RequestContext::record_usage`](crate::RequestContext::record_usage);
    /// not part of [`usage`](Self::usage).
    pub processor_usage: BTreeMap<String, Usage>,
    /// Every tool call of accepted steps.
    pub tool_calls: Vec<ToolCall>,
    /// Every tool result.
    pub tool_results: Vec<ToolResult>,
    /// Set when a processor ended the run.
    pub tripwire: Option<TripWire>,
    /// The messages the run produced (as output processors left them).
    pub response_messages: Vec<Message>,
    /// What the framework warned about during the run.
    pub warnings: Vec<String>,
    /// What processors in [`Shadow`](crate::processor::Shadow) would have done, in the order
    /// they decided: recorded instead of applied.
    pub shadowed: Vec<crate::processor::ShadowDecision>,
    /// The tool calls the run waits on, when it paused for approval (its finish reason is
    /// then [`FinishReason::AwaitingApproval`]); resume it with
    /// [`Agent::resume`](crate::Agent::resume).
    pub pending_approvals: Vec<crate::agent::ApprovalRequest>,
}

/// Why a run failed (a trip wire is not a failure: it is reported in the result).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The provider failed and no processor recovered.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// A processor's hook failed, panicked or returned what the run cannot use.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// A paused run could not be resumed.
    #[error(transparent)]
    Approval(#[from] crate::agent::ApprovalError),
    /// The run's configuration cannot work (per-call lists that misplace memory or a
    /// processor, a step limit of 0).
    #[error("invalid run configuration: {0}")]
    Config(#[from] BuildError),
}
