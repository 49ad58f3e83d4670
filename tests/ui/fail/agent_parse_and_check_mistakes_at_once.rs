use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model ScriptedModel::new([]),
        output: [Shout, Shout],
        max_steps: 0,
    };
}
