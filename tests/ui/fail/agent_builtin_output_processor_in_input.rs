use processors::builtins::BatchParts;
use processors::prelude::*;

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        input: [BatchParts::new()],
    };
}
