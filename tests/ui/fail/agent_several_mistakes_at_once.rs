use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        instructions: "Be brief.",
        instructions: "Be kind.",
        input: [memory],
        max_steps: 3,
        max_retries: 2,
    };
}
