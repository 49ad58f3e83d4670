//! Every type a hook signature needs comes with the prelude: a tool-result hook names `Value`.

use processors::prelude::*;

/// Hides the tool's result when the call asked for a secret.
#[processor(tool_result)]
fn hide_secrets(call: &ToolCall, result: &Value) -> Option<Value> {
    match call.tool_name.contains("secret") {
        true => Some(Value::String("[hidden]".to_owned())),
        false => Some(result.clone()),
    }
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([Turn::text("ok")]),
        output: [HideSecrets],
    };
}
