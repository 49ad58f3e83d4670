//! Running the tools a step asked for.

use crate::chunk::{ChunkKind, DataWriter};
use crate::context::RequestContext;
use crate::message::{Message, MessageSource, Part, Role, ToolCall, ToolResult};
use crate::processor::Pipeline;
use crate::runner::stream::StreamDriver;
use crate::runner::stream::outbox::Outbox;
use crate::runner::{Chain, Halt, Scope, hooks, panic_message};
use crate::tool::{Tool, ToolContext};
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tracing::Instrument;

/// Runs a step's tool calls in order. What a tool writes streams first; its result goes
/// through `process_tool_result` and streams as a `tool-result` chunk (a failure as a
/// `tool-error` chunk); the results enter history as one tool message, with the data written
/// since the step's answer.
pub(crate) async fn execute<O: Pipeline>(
    calls: &[ToolCall],
    offered: &[Arc<dyn Tool>],
    output: &Chain<'_>,
    driver: &mut StreamDriver<'_, O>,
    s: &mut Scope,
    out: &mut Outbox,
) -> Result<Vec<ToolResult>, Halt> {
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        let mut writes = Vec::new();
        let outcome = invoke(call, offered, &s.cx, &mut writes).await;
        for kind in writes {
            driver.emit(s, out, kind, true).await?;
        }
        let id = || (call.tool_call_id.clone(), call.tool_name.clone());
        let (kind, result) = match outcome {
            Ok(value) => {
                let (tool_call_id, tool_name) = id();
                let result = ToolResult {
                    tool_call_id,
                    tool_name,
                    result: hooks::tool_result(output, s, call, value).await?,
                    is_error: false,
                };
                (ChunkKind::ToolResult(Box::new(result.clone())), result)
            }
            Err(error) => {
                let (tool_call_id, tool_name) = id();
                let kind = ChunkKind::ToolError {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    error: error.clone(),
                };
                let result = ToolResult {
                    tool_call_id,
                    tool_name,
                    result: Value::String(error),
                    is_error: true,
                };
                (kind, result)
            }
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
    request_context: &RequestContext,
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
