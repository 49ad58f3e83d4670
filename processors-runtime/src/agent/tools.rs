//! Running the tools a step asked for.

use crate::chunk::{ChunkKind, DataWriter};
use crate::context::RequestContext;
use crate::message::{Message, MessageList, MessageSource, Part, Role, ToolCall, ToolResult};
use crate::processor::{Hook, Pipeline, ToolCallAction};
use crate::runner::stream::StreamDriver;
use crate::runner::stream::outbox::Outbox;
use crate::runner::{Chain, Halt, Scope, hooks, panic_message};
use crate::tool::{Tool, ToolContext};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tracing::Instrument;

/// What happens to a call the model made, as the `process_tool_call` processors decided.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "gate", rename_all = "kebab-case")]
pub(crate) enum Gate {
    /// The tool runs.
    Run,
    /// The tool does not run: this is its result.
    Respond {
        /// The result.
        result: Value,
    },
    /// The tool does not run: the model reads this as its error.
    Refuse {
        /// The error's message.
        message: String,
    },
    /// The tool runs once a person approves the call.
    Approval {
        /// The processor that asked.
        processor: String,
        /// Why it asked.
        reason: String,
    },
    /// A person approved the call: the tool runs, after a `tool-call-resumed` chunk.
    Approved,
}

/// `process_tool_call` on each of a step's calls, in order. A rewritten call is rewritten in
/// place and in the step's answer in the message list, so that what runs is what is recorded.
pub(crate) async fn gate(
    calls: &mut [ToolCall],
    offered: &[Arc<dyn Tool>],
    output: &Chain<'_>,
    s: &mut Scope,
    step_number: u32,
) -> Result<Vec<Gate>, Halt> {
    let mut gates = Vec::with_capacity(calls.len());
    for call in calls {
        let tool = offered.iter().find(|t| t.name() == call.tool_name);
        let decision = hooks::tool_call(output, s, call, tool.map(|t| &**t), step_number).await?;
        if decision.rewritten
            && let Some(recorded) = s.list.response_tool_call_mut(&call.tool_call_id)
        {
            recorded.args = call.args.clone();
        }
        gates.push(match decision.decided {
            None => Gate::Run,
            Some((ToolCallAction::Respond(result), _)) => Gate::Respond { result },
            Some((ToolCallAction::Refuse(message), _)) => Gate::Refuse { message },
            Some((ToolCallAction::RequireApproval { reason, asked_by }, returned_by)) => {
                Gate::Approval {
                    processor: asked_by.unwrap_or(returned_by),
                    reason,
                }
            }
            // `Continue` and `Rewrite` do not decide a call.
            Some((ToolCallAction::Continue | ToolCallAction::Rewrite(_), _)) => Gate::Run,
        });
    }
    Ok(gates)
}

/// Runs a step's tool calls in order, each as its gate says (a call without one runs). What a
/// tool writes streams first; its result, or its failure, goes through `process_tool_result`
/// and streams as a `tool-result` chunk (a failure as a `tool-error` chunk); the results enter
/// history as one tool message, with the data written since the step's answer.
pub(crate) async fn execute<O: Pipeline>(
    calls: &[ToolCall],
    gates: &[Gate],
    offered: &[Arc<dyn Tool>],
    output: &Chain<'_>,
    driver: &mut StreamDriver<'_, O>,
    s: &mut Scope,
    out: &mut Outbox,
) -> Result<Vec<ToolResult>, Halt> {
    let mut results = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        let mut writes = Vec::new();
        let outcome = match gates.get(i).unwrap_or(&Gate::Run) {
            Gate::Run => invoke(call, offered, (&s.cx, &s.list), &mut writes).await,
            Gate::Approved => {
                let resumed = ChunkKind::ToolCallResumed(Box::new(call.clone()));
                driver.emit(s, out, resumed, true).await?;
                invoke(call, offered, (&s.cx, &s.list), &mut writes).await
            }
            Gate::Respond { result } => Ok(result.clone()),
            Gate::Refuse { message } => Err(message.clone()),
            Gate::Approval { .. } => {
                Err(format!("the call of `{}` was not approved", call.tool_name))
            }
        };
        for kind in writes {
            driver.emit(s, out, kind, true).await?;
        }
        let (mut value, is_error) = match outcome {
            Ok(v) => (v, false),
            Err(e) => (Value::String(e), true),
        };
        let model_output = match output.has(Hook::ToolResult) {
            true => hooks::tool_result(output, s, call, &mut value, is_error).await?,
            false => None,
        };
        let result = ToolResult {
            model_output,
            is_error,
            ..ToolResult::new(call.tool_call_id.clone(), call.tool_name.clone(), value)
        };
        let kind = match is_error {
            false => ChunkKind::ToolResult(Box::new(result.clone())),
            true => ChunkKind::ToolError {
                tool_call_id: result.tool_call_id.clone(),
                tool_name: result.tool_name.clone(),
                error: match &result.result {
                    Value::String(e) => e.clone(),
                    other => other.to_string(),
                },
            },
        };
        driver.emit(s, out, kind, true).await?;
        results.push(result);
    }
    if !results.is_empty() {
        let mut parts: Vec<Part> = results.iter().cloned().map(Part::ToolResult).collect();
        // Data the tools (or processors on their chunks) wrote is saved with them.
        parts.append(&mut driver.acc.data);
        s.list
            .add(Message::new(Role::Tool, parts), MessageSource::Response);
    }
    Ok(results)
}

/// Calls the tool a call names, with its panic caught: its value, or what went wrong.
async fn invoke(
    call: &ToolCall,
    offered: &[Arc<dyn Tool>],
    (request_context, message_list): (&RequestContext, &MessageList),
    writes: &mut Vec<ChunkKind>,
) -> Result<Value, String> {
    let Some(tool) = offered.iter().find(|t| t.name() == call.tool_name) else {
        return Err(format!(
            "the model called `{}`, which is not an available tool",
            call.tool_name
        ));
    };
    let cx = ToolContext {
        tool_call_id: &call.tool_call_id,
        request_context,
        message_list,
        writer: DataWriter { buf: writes },
    };
    let span = tracing::debug_span!("tool", name = %call.tool_name);
    match AssertUnwindSafe(tool.execute(call.args.clone(), cx).instrument(span))
        .catch_unwind()
        .await
    {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(format!(
            "tool `{}` panicked: {}",
            call.tool_name,
            panic_message(&*panic)
        )),
    }
}
