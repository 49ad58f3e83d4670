use processors::builtins::ToolCallFilter;
use processors::prelude::*;

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [ToolCallFilter::all()],
    };
}
