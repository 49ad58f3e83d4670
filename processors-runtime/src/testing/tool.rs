//! A tool called without an agent: [`run_tool`].

use crate::chunk::{ChunkKind, DataWriter};
use crate::context::RequestContext;
use crate::error::BoxError;
use crate::message::MessageList;
use crate::tool::{Tool, ToolContext};
use serde_json::Value;

/// What a tool's call came to: its result (the error the model would read, when it failed)
/// and the `data-*` chunks it wrote.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolRun {
    /// The result, or the error.
    pub result: Result<Value, BoxError>,
    /// The data chunks the tool wrote, in order.
    pub data: Vec<ChunkKind>,
}

/// Calls `tool` with `args` as an agent's run would (call id `call-0`, an empty request
/// context and message list), outside a run.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
/// use processors_runtime::testing::run_tool;
///
/// let echo = tool("echo", "Echoes", json!({ "type": "object" }), |args| async move {
///     Ok(args)
/// });
/// let run = run_tool(&*echo, json!({ "a": 1 })).await;
/// assert_eq!(run.result.unwrap(), json!({ "a": 1 }));
/// # });
/// ```
pub async fn run_tool(tool: &dyn Tool, args: Value) -> ToolRun {
    run_tool_with(tool, args, &RequestContext::new(), &MessageList::new()).await
}

/// [`run_tool`] with a request context and a message list of the test's.
pub async fn run_tool_with(
    tool: &dyn Tool,
    args: Value,
    request_context: &RequestContext,
    message_list: &MessageList,
) -> ToolRun {
    let mut data = Vec::new();
    let cx = ToolContext {
        tool_call_id: "call-0",
        request_context,
        message_list,
        writer: DataWriter { buf: &mut data },
    };
    let result = tool.execute(args, cx).await;
    ToolRun { result, data }
}
