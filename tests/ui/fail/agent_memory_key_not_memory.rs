use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        memory: "agent.db",
        output: [Shout],
    };
}
