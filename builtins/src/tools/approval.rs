//! [`ToolApproval`]: which calls wait for a person.

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::ToolCall;
use processors_runtime::processor::ToolCallAction;
use serde_json::Value;
use std::sync::Arc;

/// Says when a call needs a person.
type Predicate = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// Asks a person to approve tool calls before they run: every call of the named tools, or
/// those whose arguments a predicate picks. The run pauses when a call of its step needs
/// approval (no tool of the step runs), and [`Agent::resume`](processors_runtime::Agent::resume)
/// continues it with the person's answer; see the runtime's approvals
/// ([`ToolCallAction::RequireApproval`]).
///
/// Put it after the processors that rewrite or refuse calls
/// ([`ToolParameters`](super::ToolParameters), [`ToolValidation`](super::ToolValidation)), so
/// that the person approves the call as it will run, and is not asked about one that is
/// refused anyway.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::tools::ToolApproval;
/// use processors::agent::Approval;
/// use processors::prelude::*;
/// use serde_json::json;
///
/// let refund = tool("refund", "Refunds", json!({ "type": "object" }), |a| async move {
///     Ok(json!({ "refunded": a["amount"] }))
/// });
/// let ask = ToolApproval::builder()
///     .when("refund", |args| args["amount"].as_f64().unwrap_or(f64::INFINITY) > 100.0)
///     .reason("refunds over 100 need a person")
///     .build()?;
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([
///         Turn::empty()
///             .tool_call("c1", "refund", json!({ "amount": 20 }))
///             .tool_call("c2", "refund", json!({ "amount": 500 })),
///         Turn::text("Both refunded."),
///     ]))
///     .tool(refund)
///     .output(ask)
///     .build()?;
/// let paused = agent.generate("Refund both").await?;
/// assert_eq!(paused.pending_approvals.len(), 1);
/// assert_eq!(paused.pending_approvals[0].tool_call_id, "c2");
/// assert_eq!(paused.pending_approvals[0].reason, "refunds over 100 need a person");
/// let done = agent.resume(Approval::new(&paused.run_id).approve("c2")).await?;
/// assert_eq!(done.text, "Both refunded.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ToolApproval {
    rules: Vec<(String, Option<Predicate>)>,
    reason: Option<String>,
}

impl std::fmt::Debug for ToolApproval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolApproval")
            .field(
                "tools",
                &self.rules.iter().map(|(t, _)| t).collect::<Vec<_>>(),
            )
            .field("reason", &self.reason)
            .finish()
    }
}

/// Builds a [`ToolApproval`]; see [`ToolApproval::builder`].
#[derive(Clone, Default)]
#[must_use]
pub struct ToolApprovalBuilder {
    rules: Vec<(String, Option<Predicate>)>,
    reason: Option<String>,
}

impl ToolApproval {
    /// Starts configuring, with no tool.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::tools::ToolApproval;
    /// let err = ToolApproval::builder().build().unwrap_err();
    /// assert!(matches!(err, ConfigError::NothingToDo(_)));
    /// ```
    pub fn builder() -> ToolApprovalBuilder {
        ToolApprovalBuilder::default()
    }

    /// Whether `call` needs approval.
    fn needs(&self, call: &ToolCall) -> bool {
        self.rules.iter().any(|(tool, when)| {
            (tool == "*" || *tool == call.tool_name) && when.as_ref().is_none_or(|f| f(&call.args))
        })
    }
}

impl ToolApprovalBuilder {
    /// Every call of `tool` needs approval (`"*"`: of every tool).
    pub fn tool(mut self, tool: impl Into<String>) -> Self {
        self.rules.push((tool.into(), None));
        self
    }

    /// Every call of these tools needs approval.
    pub fn tools<I: IntoIterator<Item = S>, S: Into<String>>(self, tools: I) -> Self {
        tools.into_iter().fold(self, Self::tool)
    }

    /// A call of `tool` needs approval when `needs` says so of its arguments.
    pub fn when(
        mut self,
        tool: impl Into<String>,
        needs: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.rules.push((tool.into(), Some(Arc::new(needs))));
        self
    }

    /// The reason the person is given (by default, "`<tool>` needs a person's approval").
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Checks the configuration: at least one tool, each named.
    pub fn build(self) -> Result<ToolApproval, ConfigError> {
        if self.rules.is_empty() {
            return Err(ConfigError::NothingToDo("no tool needs approval"));
        }
        if self.rules.iter().any(|(t, _)| t.is_empty()) {
            return Err(ConfigError::Empty {
                what: "a tool name",
                why: "name each tool whose calls need approval, or `*` for every tool",
            });
        }
        if self.reason.as_deref().is_some_and(|r| r.trim().is_empty()) {
            return Err(ConfigError::Empty {
                what: "the reason",
                why: "say why a person must approve, or leave the default",
            });
        }
        Ok(ToolApproval {
            rules: self.rules,
            reason: self.reason,
        })
    }
}

#[processor(crate = processors_runtime, id = "tool-approval")]
impl ToolApproval {
    fn process_tool_call(&self, call: &ToolCall) -> ToolCallAction {
        if !self.needs(call) {
            return ToolCallAction::Continue;
        }
        ToolCallAction::approval(match &self.reason {
            Some(r) => r.clone(),
            None => format!("`{}` needs a person's approval", call.tool_name),
        })
    }
}
