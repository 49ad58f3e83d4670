//! Approvals: a run paused on tool calls that wait for a person, kept in a store, and the
//! answer that resumes it.
//!
//! A `process_tool_call` processor that returns
//! [`ToolCallAction::RequireApproval`](crate::processor::ToolCallAction::RequireApproval) pauses
//! the run once the step's calls are decided: no tool of the step runs, the stream sends a
//! `tool-approval-request` chunk per waiting call and a `finish` that says
//! `awaiting-approval`, and the result lists the [`pending_approvals`](crate::GenerateResult).
//! The paused run is kept in the agent's memory store (an in-process one when the agent has
//! no memory) until [`Agent::resume`](crate::Agent::resume) continues it, once, in this
//! process or another.

use crate::agent::tools::Gate;
pub use crate::chunk::ApprovalRequest;
use crate::chunk::{FinishReason, Usage};
use crate::memory::{MemoryError, PausedRunRecord};
use crate::message::{Message, MessageList, Part, Text, ToolCall};
use crate::step::StepResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a person decided about one waiting call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run the call as it is.
    Approve,
    /// Run the call with these arguments instead (they are what is recorded).
    ApproveWith(Value),
    /// Do not run the call: the model reads this reason as the tool's error.
    Deny(String),
}

/// The answer to a paused run: a decision for each of its waiting calls.
///
/// ```
/// use processors_runtime::agent::Approval;
/// let answer = Approval::new("run-42")
///     .approve("call-1")
///     .deny("call-2", "not on a Friday");
/// assert_eq!(answer.run_id(), "run-42");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Approval {
    run_id: String,
    decisions: BTreeMap<String, Decision>,
}

impl Approval {
    /// An answer to the paused run `run_id` (its [`GenerateResult::run_id`](crate::GenerateResult),
    /// also in each [`ApprovalRequest`]).
    pub fn new(run_id: impl Into<String>) -> Self {
        Approval {
            run_id: run_id.into(),
            decisions: BTreeMap::new(),
        }
    }

    /// Approves the call `tool_call_id` as it is.
    pub fn approve(self, tool_call_id: impl Into<String>) -> Self {
        self.decide(tool_call_id, Decision::Approve)
    }

    /// Approves the call `tool_call_id` with these arguments instead.
    pub fn approve_with(self, tool_call_id: impl Into<String>, args: Value) -> Self {
        self.decide(tool_call_id, Decision::ApproveWith(args))
    }

    /// Denies the call `tool_call_id`; the model reads `reason` as the tool's error.
    pub fn deny(self, tool_call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        self.decide(tool_call_id, Decision::Deny(reason.into()))
    }

    /// Sets the decision for the call `tool_call_id` (the last one set counts).
    pub fn decide(mut self, tool_call_id: impl Into<String>, decision: Decision) -> Self {
        self.decisions.insert(tool_call_id.into(), decision);
        self
    }

    /// The paused run this answers.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The decisions, by call id.
    pub fn decisions(&self) -> &BTreeMap<String, Decision> {
        &self.decisions
    }
}

/// A run waiting for approval, as [`Agent::waiting_runs`](crate::Agent::waiting_runs) lists
/// it: what a person is asked to decide, and where the run belongs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WaitingRun {
    /// The run's id, to answer with [`Approval::new`].
    pub run_id: String,
    /// Its thread, when it had one.
    pub thread_id: Option<String>,
    /// Its resource, when it had one.
    pub resource_id: Option<String>,
    /// When it expires (the agent's `approval_timeout` after it paused), in milliseconds since
    /// the Unix epoch.
    pub expires_at: u64,
    /// The calls that wait, in the order the model made them.
    pub requests: Vec<ApprovalRequest>,
}

/// Why a paused run could not be resumed. The paused run is kept unless it is gone or
/// expired: an answer that misses a call, or names one the run does not wait for, can be
/// given again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No paused run has this id: it never paused, it was resumed already, or it was kept
    /// in another store.
    #[error(
        "no paused run `{run_id}`: it was resumed already, never paused, or is kept in another store"
    )]
    Unknown {
        /// The run's id.
        run_id: String,
    },
    /// The paused run waited longer than the agent's `approval_timeout`; it was removed.
    #[error(
        "the paused run `{run_id}` expired at {expired_at} ms after the Unix epoch; start a new run"
    )]
    Expired {
        /// The run's id.
        run_id: String,
        /// When it expired, in milliseconds since the Unix epoch.
        expired_at: u64,
    },
    /// The answer has no decision for a waiting call.
    #[error("the answer to run `{run_id}` has no decision for the call `{tool_call_id}`")]
    Undecided {
        /// The run's id.
        run_id: String,
        /// The call without a decision.
        tool_call_id: String,
    },
    /// The answer decides a call the run does not wait for.
    #[error(
        "the answer to run `{run_id}` decides the call `{tool_call_id}`, which does not wait for approval; it waits for: {waiting}"
    )]
    NotWaiting {
        /// The run's id.
        run_id: String,
        /// The call named.
        tool_call_id: String,
        /// The calls that wait, comma-separated.
        waiting: String,
    },
    /// The paused run was made by another agent (by name).
    #[error("the paused run `{run_id}` belongs to agent `{owner}`, not `{agent}`")]
    OtherAgent {
        /// The run's id.
        run_id: String,
        /// The agent that paused it.
        owner: String,
        /// The agent asked to resume it.
        agent: String,
    },
    /// The store failed while keeping or taking the paused run.
    #[error("the paused run `{run_id}` could not be kept or taken: {source}")]
    Store {
        /// The run's id.
        run_id: String,
        /// What the store said.
        #[source]
        source: MemoryError,
    },
    /// The store failed while listing the paused runs.
    #[error("the paused runs could not be listed: {source}")]
    List {
        /// What the store said.
        #[source]
        source: MemoryError,
    },
    /// What the store kept cannot be read back (written by an incompatible version, or
    /// damaged).
    #[error("the paused run `{run_id}` cannot be read back: {reason}")]
    Corrupt {
        /// The run's id.
        run_id: String,
        /// Why.
        reason: String,
    },
}

/// The step a run paused in: accepted, its calls decided, none run yet.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PausedStep {
    pub(crate) step_number: u32,
    pub(crate) finish_reason: FinishReason,
    pub(crate) usage: Usage,
    pub(crate) text: Text,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) gates: Vec<Gate>,
    /// Data written in the step, saved with its tool message.
    pub(crate) data: Vec<Part>,
}

/// A paused run as the store keeps it (JSON): everything the run needs to go on, bar the
/// processors' per-request states, which start afresh.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PausedRun {
    /// The format's version.
    pub(crate) version: u32,
    pub(crate) run_id: String,
    pub(crate) agent: String,
    pub(crate) thread_id: Option<String>,
    pub(crate) resource_id: Option<String>,
    pub(crate) list: MessageList,
    /// The system messages as the input processors left them (every step starts from them).
    pub(crate) originals: Vec<Message>,
    pub(crate) steps: Vec<StepResult>,
    /// Steps accepted before the paused one (`max_steps` counts them).
    pub(crate) accepted: u32,
    pub(crate) usage: Usage,
    pub(crate) warnings: Vec<String>,
    /// Data written outside a step, to be saved with the next answer.
    pub(crate) carried: Vec<Part>,
    pub(crate) step: PausedStep,
}

/// The version of [`PausedRun`]'s format this build writes and reads.
pub(crate) const PAUSED_RUN_VERSION: u32 = 1;

impl PausedRun {
    /// The calls that wait for approval, as requests.
    pub(crate) fn requests(&self) -> Vec<ApprovalRequest> {
        self.step
            .calls
            .iter()
            .zip(&self.step.gates)
            .filter_map(|(call, gate)| match gate {
                Gate::Approval { processor, reason } => Some(ApprovalRequest {
                    run_id: self.run_id.clone(),
                    tool_call_id: call.tool_call_id.clone(),
                    tool_name: call.tool_name.clone(),
                    args: call.args.clone(),
                    processor_id: processor.clone(),
                    reason: reason.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The record the store keeps, expiring at `expires_at`.
    pub(crate) fn record(&self, expires_at: u64) -> Result<PausedRunRecord, ApprovalError> {
        let data = serde_json::to_string(self).map_err(|e| ApprovalError::Corrupt {
            run_id: self.run_id.clone(),
            reason: e.to_string(),
        })?;
        Ok(PausedRunRecord {
            run_id: self.run_id.clone(),
            thread_id: self.thread_id.clone(),
            resource_id: self.resource_id.clone(),
            expires_at,
            data,
        })
    }

    /// The paused run a record keeps.
    pub(crate) fn from_record(record: &PausedRunRecord) -> Result<Self, ApprovalError> {
        let corrupt = |reason: String| ApprovalError::Corrupt {
            run_id: record.run_id.clone(),
            reason,
        };
        let run: PausedRun =
            serde_json::from_str(&record.data).map_err(|e| corrupt(e.to_string()))?;
        if run.version != PAUSED_RUN_VERSION {
            return Err(corrupt(format!(
                "format version {} (this build reads {PAUSED_RUN_VERSION})",
                run.version
            )));
        }
        Ok(run)
    }

    /// Applies `answer`'s decisions to the waiting calls (rewriting approved-with calls in
    /// the list too): every waiting call needs one, and none may name another call.
    pub(crate) fn decide(&mut self, answer: &Approval) -> Result<(), ApprovalError> {
        let waiting: Vec<&str> = self
            .step
            .calls
            .iter()
            .zip(&self.step.gates)
            .filter(|(_, g)| matches!(g, Gate::Approval { .. }))
            .map(|(c, _)| c.tool_call_id.as_str())
            .collect();
        if let Some(other) = answer
            .decisions
            .keys()
            .find(|id| !waiting.contains(&id.as_str()))
        {
            return Err(ApprovalError::NotWaiting {
                run_id: self.run_id.clone(),
                tool_call_id: other.clone(),
                waiting: waiting.join(", "),
            });
        }
        if let Some(undecided) = waiting
            .iter()
            .find(|id| !answer.decisions.contains_key(**id))
        {
            return Err(ApprovalError::Undecided {
                run_id: self.run_id.clone(),
                tool_call_id: (*undecided).to_owned(),
            });
        }
        for (call, gate) in self.step.calls.iter_mut().zip(&mut self.step.gates) {
            let Some(decision) = answer.decisions.get(&call.tool_call_id) else {
                continue;
            };
            *gate = match decision {
                Decision::Approve => Gate::Approved,
                Decision::ApproveWith(args) => {
                    call.args = args.clone();
                    if let Some(recorded) = self.list.response_tool_call_mut(&call.tool_call_id) {
                        recorded.args = args.clone();
                    }
                    Gate::Approved
                }
                Decision::Deny(reason) => Gate::Refuse {
                    message: reason.clone(),
                },
            };
        }
        Ok(())
    }
}
