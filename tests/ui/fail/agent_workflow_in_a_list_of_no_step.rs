// A workflow whose steps' processors have output hooks alone, in `input`.
use processors::prelude::*;
include!("../common.rs");

fn main() {
    let guard = Workflow::new("guard").then(Shout).then(Shout);
    let _agent = agent! {
        model: ScriptedModel::new([]),
        input: [Trim, guard],
    };
}
