use processors::prelude::*;

/// Refuses every call of `rm`.
#[processor(tool_call)]
fn no_rm(call: &ToolCall) -> ToolCallAction {
    match call.tool_name.as_str() {
        "rm" => ToolCallAction::Refuse("`rm` is not allowed".to_owned()),
        _ => ToolCallAction::Continue,
    }
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        input: [NoRm],
    };
}
