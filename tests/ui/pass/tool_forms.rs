//! Every form `#[tool]` takes: plain parameters (with docs, an `Option`, a `ToolContext`),
//! one `#[args]` type, no parameters; results plain, in a `Result`, and none; each in
//! `agent!`'s `tools:`.
use processors::prelude::*;
use processors::tool::ToolContext;

/// Adds two numbers.
#[tool]
async fn add(
    /// The first.
    a: i64,
    /// The second; 0 when left out.
    b: Option<i64>,
    cx: ToolContext<'_>,
) -> Result<i64, std::io::Error> {
    let _ = cx.tool_call_id;
    Ok(a + b.unwrap_or(0))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    /// The order's id.
    id: String,
}

/// Cancels an order.
#[tool(name = "cancel-order")]
pub async fn cancel(#[args] order: Order) -> Result<String, String> {
    Ok(order.id)
}

/// Rings.
#[tool]
async fn ring() {}

fn main() {
    let agent = agent! {
        model: ScriptedModel::new([
            Turn::empty().tool_call("c1", AddTool::NAME, json!({ "a": 2, "b": 3 })),
            Turn::text("5"),
        ]),
        tools: [AddTool, CancelTool, RingTool],
    };
    let result = futures::executor::block_on(agent.generate("2 + 3?")).unwrap();
    assert_eq!(result.tool_results[0].result, json!(5));
    assert_eq!(CancelTool::NAME, "cancel-order");
}
